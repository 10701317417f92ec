//! What a confined extension may reach of the host itself
//! (docs/protocol.md §9.1 `call`, `prompt`, `env` and `${DATA}`), through
//! the real binary (`zot serve`, where the agent is the test) and real
//! extensions (tests/fixtures/confine_calls.py keeps what reaches it and
//! answers it from its tool `seen_<name>`; tests/fixtures/mcp_server.py logs
//! every method it gets; tests/fixtures/probe.py tries files). Each rule
//! with its control: the same thing done by an unconfined extension, or
//! one that declared it, works.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, write_manifest, TempDir};
use serde_json::{json, Value};
use serve_proc::*;
use std::path::{Path, PathBuf};
use zot_proc::{session_args, Zot, FAST, LINE_WAIT};

/// An extension under `t/exts/<name>` running confine_calls.py with `cfg`,
/// confined by `confine` when given.
fn ext(t: &TempDir, name: &str, mut cfg: Value, confine: Option<Value>) -> PathBuf {
    cfg["name"] = json!(name);
    let mut m = json!({"name": name, "version": "1.0.0", "exec": "python3",
        "args": [fixture("confine_calls.py").display().to_string(), cfg.to_string()]});
    if let Some(c) = confine {
        m["confine"] = c;
    }
    write_manifest(&t.path().join("exts"), name, m)
}

/// `zot serve` with `exts`, `extra` flags and `env` added to its environment.
fn serve(t: &TempDir, exts: &[PathBuf], extra: &[&str], env: &[(&str, &str)]) -> Serve {
    let args = session_args(t.path(), Some("serve"), exts, extra);
    Serve { z: Zot::spawn(t.path(), &args, env), frames: Vec::new(), taken: Vec::new(), exts: exts.len() }
}

/// An MCP config file with the fixture server under each name, each with
/// its `confine` when given.
fn mcp_config(t: &TempDir, servers: &[(&str, Option<Value>)]) -> PathBuf {
    let mut all = serde_json::Map::new();
    for (name, confine) in servers {
        let mut s = json!({"command": "python3", "args": [fixture("mcp_server.py").display().to_string()]});
        if let Some(c) = confine {
            s["confine"] = c.clone();
        }
        all.insert(name.to_string(), s);
    }
    let p = t.path().join("mcp.json");
    std::fs::write(&p, json!({"mcpServers": all}).to_string()).expect("write mcp.json");
    p
}

/// The text of a `tool` response's first block.
fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {r}")).to_string()
}

/// What a `call...` tool got back for its `call_tool`: `is_error` and text.
fn called(s: &mut Serve, id: &str, tool: &str, to: &str, args: Value) -> (bool, String) {
    let r = s.request(json!({"id": id, "type": "tool", "name": tool, "args": {"to": to, "args": args}}));
    let got: Value = serde_json::from_str(&text(&r)).unwrap_or_else(|e| panic!("{e}: {r}"));
    (got["is_error"] == true, got["text"].as_str().unwrap_or_default().to_string())
}

/// What extension `name` noted so far.
fn seen(s: &mut Serve, name: &str) -> Vec<String> {
    let id = format!("seen-{}", s.frames.len());
    let r = s.request(json!({"id": id, "type": "tool", "name": format!("seen_{name}")}));
    serde_json::from_str(&text(&r)).unwrap_or_else(|e| panic!("{e}: {r}"))
}

fn refusal(tool: &str) -> String {
    format!("tool \"{tool}\" is not in this extension's confine.call")
}

/// The MCP server `name`'s log, as the host wrote it.
fn mcp_log(t: &TempDir, name: &str) -> String {
    std::fs::read_to_string(t.path().join("zot-home/logs").join(format!("mcp-{name}.log"))).unwrap_or_default()
}

#[test]
fn call_tool_reaches_only_the_tools_in_confine_call() {
    let t = TempDir::new("confine-calls-call");
    // `tgt` notes every call it gets.
    let tgt = ext(&t, "tgt", json!({"tools": ["listed", "unlisted"]}), None);
    let c = ext(&t, "c", json!({"tools": ["call_c"]}), Some(json!({"call": ["listed", "mcp__fx__ec*", "agent_ok"]})));
    let u = ext(&t, "u", json!({"tools": ["call_u"]}), None);
    let cfg = mcp_config(&t, &[("fx", None)]);
    let mut s = serve(&t, &[tgt, c, u], &["--mcp-config", cfg.to_str().unwrap()], &[]);
    s.ready();
    s.ok(json!({"id": "at", "type": "agent_tools", "tools": [{"name": "bash", "description": "run"}, {"name": "agent_ok", "description": "ok"}]}));

    // Refused, with the exact text, and nothing ran: an extension's tool,
    // an MCP server's, the agent's.
    for (i, to) in ["unlisted", "mcp__fx__env", "bash"].into_iter().enumerate() {
        let (is_error, got) = called(&mut s, &format!("r{i}"), "call_c", to, json!({"name": "SECRET"}));
        assert!(is_error, "{to}: {got}");
        assert_eq!(got, refusal(to));
    }
    assert!(s.notes("call_tool").is_empty(), "the agent was asked: {:?}", s.notes("call_tool"));
    assert!(!seen(&mut s, "tgt").iter().any(|l| l.starts_with("tool_call unlisted")), "tgt ran the refused call");

    // Listed ones (and one through a prefix) run.
    let (is_error, got) = called(&mut s, "l1", "call_c", "listed", json!({"n": 1}));
    assert!(!is_error, "{got}");
    assert_eq!(serde_json::from_str::<Value>(&got).unwrap(), json!({"by": "tgt", "args": {"n": 1}}));
    let (is_error, got) = called(&mut s, "l2", "call_c", "mcp__fx__echo", json!({"text": "hi"}));
    assert!(!is_error && got.contains("hi"), "{got}");
    s.send(&json!({"id": "l3", "type": "tool", "name": "call_c", "args": {"to": "agent_ok", "args": {}}}));
    let asked = s.wait_or_find(|f| f["type"] == "call_tool");
    let asked = s.frames[asked].clone();
    assert_eq!((&asked["extension"], &asked["name"]), (&json!("c"), &json!("agent_ok")), "{asked}");
    s.ok(json!({"id": "a1", "type": "call_tool_result", "call_id": asked["call_id"], "content": [{"type": "text", "text": "done"}]}));
    let got: Value = serde_json::from_str(&text(&s.response(&json!("l3")))).unwrap();
    assert_eq!(got, json!({"is_error": false, "text": "done"}));
    assert_eq!(s.notes("call_tool").len(), 1, "{:?}", s.notes("call_tool"));

    // The MCP server got echo, never env (it handles calls in order and
    // logs each as it reads it).
    assert!(common::wait_until(LINE_WAIT, || mcp_log(&t, "fx").contains("\"name\": \"echo\"")), "{}", mcp_log(&t, "fx"));
    assert!(!mcp_log(&t, "fx").contains("\"name\": \"env\""), "the refused call reached the server:\n{}", mcp_log(&t, "fx"));

    // The control: an unconfined caller reaches all three.
    let (is_error, got) = called(&mut s, "u1", "call_u", "unlisted", json!({}));
    assert!(!is_error, "{got}");
    let (is_error, got) = called(&mut s, "u2", "call_u", "mcp__fx__env", json!({"name": "NOPE"}));
    assert_eq!((is_error, got.as_str()), (false, "<unset>"));
    s.send(&json!({"id": "u3", "type": "tool", "name": "call_u", "args": {"to": "bash", "args": {}}}));
    let asked = s.wait_or_find(|f| f["type"] == "call_tool" && f["name"] == "bash");
    let call_id = s.frames[asked]["call_id"].clone();
    s.ok(json!({"id": "a2", "type": "call_tool_result", "call_id": call_id, "content": [{"type": "text", "text": "ran"}]}));
    assert!(text(&s.response(&json!("u3"))).contains("ran"));
    assert!(seen(&mut s, "tgt").iter().any(|l| l.starts_with("tool_call unlisted")));

    // Its log says why.
    assert!(log_contains_text(&t, "c", &refusal("bash")), "{}", read_log(&t, "c"));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_tool_prompt_may_name_only_a_listed_tool() {
    let t = TempDir::new("confine-calls-tool-prompt");
    let tp = |tool: &str| json!({"commands": [format!("tp_{tool}")], "tool_prompt": {"tool_name": tool, "tool_args": {"q": 1}}});
    let a = ext(&t, "a", tp("unlisted"), Some(json!({"call": ["listed"]})));
    let b = ext(&t, "b", tp("listed"), Some(json!({"call": ["listed"]})));
    let u = ext(&t, "u", tp("other"), None);
    let mut s = serve(&t, &[a, b, u], &[], &[]);
    s.ready();
    let r = s.ok(json!({"id": 1, "type": "command", "name": "tp_unlisted"}));
    assert_eq!((&r["action"], &r["error"]), (&json!("noop"), &json!(refusal("unlisted"))), "{r}");
    assert!(r.get("tool_args").is_none(), "{r}");
    let r = s.ok(json!({"id": 2, "type": "command", "name": "tp_listed"}));
    assert_eq!((&r["action"], &r["tool_name"], &r["tool_args"]), (&json!("tool_prompt"), &json!("listed"), &json!({"q": 1})), "{r}");
    assert!(r.get("error").is_none(), "{r}");
    // Unconfined: any tool.
    let r = s.ok(json!({"id": 3, "type": "command", "name": "tp_other"}));
    assert_eq!((&r["action"], &r["tool_name"]), (&json!("tool_prompt"), &json!("other")), "{r}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn intercepts_modified_args_and_events_only_for_listed_tools() {
    let t = TempDir::new("confine-calls-intercepts");
    // `i` is confined to `listed` and rewrites
    // every call it intercepts; `w` watches unconfined.
    let events = ["tool_call", "tool_result", "tool_confirmation_requested", "permission_decision"];
    let i = ext(&t, "i", json!({"intercepts": ["tool_call"], "events": events, "modify": {"by_i": true}}), Some(json!({"call": ["listed"]})));
    let w = ext(&t, "w", json!({"events": events}), None);
    let tgt = ext(&t, "tgt", json!({"tools": ["listed", "unlisted"]}), None);
    let u = ext(&t, "u", json!({"tools": ["call_u"]}), None);
    let mut s = serve(&t, &[i, w, tgt, u], &[], &[]);
    s.ready();

    // The agent's own chain: i is not asked about an unlisted tool, so its
    // rewrite does not count there; it counts for a listed one.
    let r = s.ok(json!({"id": 1, "type": "intercept", "event": "tool_call", "tool_id": "t1", "tool_name": "unlisted", "tool_args": {"a": 1}}));
    assert_eq!(r["block"], false, "{r}");
    assert!(r.get("modified_args").is_none_or(Value::is_null), "{r}");
    let r = s.ok(json!({"id": 2, "type": "intercept", "event": "tool_call", "tool_id": "t2", "tool_name": "listed", "tool_args": {"a": 1}}));
    assert_eq!(r["modified_args"], json!({"by_i": true}), "{r}");

    // The agent's events: w hears of both tools, i of the listed one only.
    // Every event about one tool: its confirmation and the permission
    // decision too carry a preview of the call.
    for ev in events {
        let r = s.ok(json!({"id": format!("{ev}-u"), "type": "event", "event": ev, "tool_id": "t1", "tool_name": "unlisted", "tool_args": {}}));
        assert_eq!(r, json!({"delivered": 1}), "{ev}");
        let r = s.ok(json!({"id": format!("{ev}-l"), "type": "event", "event": ev, "tool_id": "t2", "tool_name": "listed", "tool_args": {}}));
        assert_eq!(r, json!({"delivered": 2}), "{ev}");
    }

    // A call an extension makes runs as the model's: the chain, the events,
    // the tool. The unlisted tool gets its arguments as they were.
    let (is_error, got) = called(&mut s, "c1", "call_u", "unlisted", json!({"a": 1}));
    assert!(!is_error, "{got}");
    assert_eq!(serde_json::from_str::<Value>(&got).unwrap(), json!({"by": "tgt", "args": {"a": 1}}));
    let (is_error, got) = called(&mut s, "c2", "call_u", "listed", json!({"a": 1}));
    assert!(!is_error, "{got}");
    assert_eq!(serde_json::from_str::<Value>(&got).unwrap(), json!({"by": "tgt", "args": {"by_i": true}}));

    let w_saw = seen(&mut s, "w");
    for want in ["event tool_call unlisted", "event tool_result unlisted", "event tool_call listed", "event tool_confirmation_requested unlisted", "event permission_decision unlisted"] {
        assert!(w_saw.iter().any(|l| l == want), "{want}: {w_saw:#?}");
    }
    let i_saw = seen(&mut s, "i");
    assert!(i_saw.iter().all(|l| !l.contains("unlisted")), "i heard of the unlisted tool: {i_saw:#?}");
    for want in ["intercept tool_call listed", "event tool_call listed", "event tool_result listed", "event tool_confirmation_requested listed", "event permission_decision listed"] {
        assert!(i_saw.iter().any(|l| l == want), "{want}: {i_saw:#?}");
    }
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn steering_the_model_needs_confine_prompt() {
    let t = TempDir::new("confine-calls-prompt");
    // `loud` declares prompt and comes first in the chain; `quiet` does
    // not: its system_prompt, had it counted, would be the last word.
    let loud = ext(&t, "loud", json!({"tools": ["submit_l"], "intercepts": ["before_agent_start", "assistant_message"], "system_prompt": "loud says", "replace_text": "LOUD"}), Some(json!({"prompt": true})));
    let quiet = ext(&t, "quiet", json!({"tools": ["submit_q"], "intercepts": ["before_agent_start", "assistant_message"], "system_prompt": "quiet says", "replace_text": "QUIET", "commands": ["ask"], "prompt_tool": "bash"}), Some(json!({})));
    let mut s = serve(&t, &[loud, quiet], &[], &[]);
    s.ready();
    // The answer comes after whatever its submits made (one ordered stream).
    assert_eq!(text(&s.request(json!({"id": 1, "type": "tool", "name": "submit_q"}))), "sent");
    assert!(s.notes("submit").is_empty() && s.notes("submit_slash").is_empty(), "{:?}", s.frames);
    assert_eq!(text(&s.request(json!({"id": 2, "type": "tool", "name": "submit_l"}))), "sent");
    let submits: Vec<Value> = s.notes("submit");
    assert_eq!(submits.len(), 1, "{submits:?}");
    assert_eq!((&submits[0]["extension"], &submits[0]["text"]), (&json!("loud"), &json!("steered by loud")));
    assert_eq!(s.notes("submit_slash").len(), 1);

    let r = s.ok(json!({"id": 3, "type": "intercept", "event": "before_agent_start", "system_prompt": "base"}));
    assert_eq!(r["system_prompt"], "loud says", "{r}");
    // Rewriting the model's words is steering: quiet's (the last word) does
    // not count, loud's does.
    let r = s.ok(json!({"id": 5, "type": "intercept", "event": "assistant_message", "text": "hello"}));
    assert_eq!(r["replace_text"], "LOUD", "{r}");
    // The answer to the user's own command is not steering; a tool it names
    // beside it, which it may not call, is not handed on.
    let r = s.ok(json!({"id": 4, "type": "command", "name": "ask"}));
    assert_eq!((&r["action"], &r["prompt"]), (&json!("prompt"), &json!("asked by quiet")), "{r}");
    assert!(r.get("tool_name").is_none_or(Value::is_null) && r.get("tool_args").is_none_or(Value::is_null), "{r}");
    for want in ["dropped submit: confine.prompt is not true", "dropped submit_slash: confine.prompt is not true", "dropped its system_prompt", "dropped its replace_text of assistant_message"] {
        assert!(log_contains_text(&t, "quiet", want), "{want}: {}", read_log(&t, "quiet"));
    }
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_confined_process_gets_a_small_environment() {
    let t = TempDir::new("confine-calls-env");
    let sealed = ext(&t, "sealed", json!({"tools": ["env_s"]}), Some(json!({})));
    let named = ext(&t, "named", json!({"tools": ["env_n"]}), Some(json!({"env": ["SECRET_API_KEY"]})));
    let open = ext(&t, "open", json!({"tools": ["env_o"]}), None);
    // The manifest's own env, always.
    let mut m: Value = serde_json::from_slice(&std::fs::read(sealed.join("extension.json")).unwrap()).unwrap();
    m["env"] = json!({"OWN_SETTING": "mine"});
    std::fs::write(sealed.join("extension.json"), m.to_string()).unwrap();
    let cfg = mcp_config(&t, &[("boxed", Some(json!({}))), ("free", None)]);
    let env = [("SECRET_API_KEY", "sk-123"), ("LC_TIME", "C"), ("LD_LIBRARY_PATH", "/nowhere")];
    let mut s = serve(&t, &[sealed, named, open], &["--mcp-config", cfg.to_str().unwrap()], &env);
    s.ready();
    let var = |s: &mut Serve, tool: &str, v: &str| {
        let args = if tool.starts_with("mcp__") { json!({"name": v}) } else { json!({"var": v}) };
        text(&s.request(json!({"id": format!("{tool}-{v}"), "type": "tool", "name": tool, "args": args})))
    };
    for tool in ["env_s", "mcp__boxed__env"] {
        assert_eq!(var(&mut s, tool, "SECRET_API_KEY"), "<unset>", "{tool}");
        assert_eq!(var(&mut s, tool, "LD_LIBRARY_PATH"), "<unset>", "{tool}");
        assert_eq!(var(&mut s, tool, "LC_TIME"), "C", "{tool}");
        assert_eq!(var(&mut s, tool, "ZOT_AGENT"), "1", "{tool}");
        assert_ne!(var(&mut s, tool, "PATH"), "<unset>", "{tool}");
        assert!(var(&mut s, tool, "TMPDIR").contains("zot-home/tmp/"), "{tool}");
    }
    assert_eq!(var(&mut s, "env_s", "OWN_SETTING"), "mine");
    // Named in confine.env, or not confined: there.
    for tool in ["env_n", "env_o", "mcp__free__env"] {
        assert_eq!(var(&mut s, tool, "SECRET_API_KEY"), "sk-123", "{tool}");
    }
    assert_eq!(var(&mut s, "env_n", "LD_LIBRARY_PATH"), "<unset>");
    assert_eq!(var(&mut s, "env_o", "LD_LIBRARY_PATH"), "/nowhere");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn under_confine_off_call_prompt_and_env_are_not_enforced() {
    let t = TempDir::new("confine-calls-off");
    let c = ext(&t, "c", json!({"tools": ["call_c", "submit_c", "env_c"]}), Some(json!({"call": []})));
    let tgt = ext(&t, "tgt", json!({"tools": ["unlisted"]}), None);
    let mut s = serve(&t, &[c, tgt], &["--confine", "off"], &[("SECRET_API_KEY", "sk-off")]);
    s.ready();
    let (is_error, got) = called(&mut s, "1", "call_c", "unlisted", json!({}));
    assert!(!is_error, "{got}");
    assert_eq!(text(&s.request(json!({"id": 2, "type": "tool", "name": "submit_c"}))), "sent");
    assert_eq!(s.notes("submit").len(), 1, "{:?}", s.frames);
    let r = s.request(json!({"id": 3, "type": "tool", "name": "env_c", "args": {"var": "SECRET_API_KEY"}}));
    assert_eq!(text(&r), "sk-off");
    let l = s.ok(json!({"id": 4, "type": "list"}));
    let c = l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "c").cloned().unwrap();
    let not = c["confinement"]["not_enforced"].as_array().cloned().unwrap_or_default();
    assert!(not.contains(&json!("calls")), "{c}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn calls_is_always_enforced_for_a_confined_extension() {
    let t = TempDir::new("confine-calls-kind");
    let c = ext(&t, "c", json!({}), Some(json!({})));
    let u = ext(&t, "u", json!({}), None);
    let mut s = serve(&t, &[c, u], &[], &[]);
    s.ready();
    let l = s.ok(json!({"id": 1, "type": "list"}));
    let of = |n: &str| l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == n).cloned().unwrap();
    assert!(of("c")["confinement"]["enforced"].as_array().unwrap().contains(&json!("calls")), "{}", of("c"));
    assert_eq!(of("u")["confinement"], Value::Null);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

/// A `weather` running probe.py, confined, in `parent/weather`.
fn weather(parent: &Path) -> PathBuf {
    let m = json!({"name": "weather", "exec": "python3", "args": [fixture("probe.py").display().to_string(), "weather"], "confine": {}});
    write_manifest(parent, "weather", m)
}

/// One session in `cwd` (its project and the global extensions): what
/// `weather_probe` answers to each `(op, arg)`.
fn probe_weather(t: &TempDir, cwd: &Path, ops: &[(&str, &str)]) -> Vec<String> {
    let mut args = vec!["serve".to_string(), "--cwd".into(), cwd.display().to_string()];
    args.extend(FAST.iter().map(|s| s.to_string()));
    let mut s = Serve { z: Zot::spawn(t.path(), &args, &[]), frames: Vec::new(), taken: Vec::new(), exts: 1 };
    assert_eq!(s.ready(), ["weather"], "{}", s.z.context());
    let out = ops
        .iter()
        .enumerate()
        .map(|(i, (op, arg))| text(&s.request(json!({"id": i, "type": "tool", "name": "weather_probe", "args": {"op": op, "arg": arg}}))))
        .collect();
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    out
}

#[test]
fn a_projects_extension_has_its_own_data_folder() {
    let t = TempDir::new("confine-calls-data");
    let zot_home = t.path().join("zot-home");
    let (proj, elsewhere) = (t.path().join("proj"), t.path().join("elsewhere"));
    std::fs::create_dir_all(&elsewhere).unwrap();
    weather(&zot_home.join("extensions"));
    weather(&proj.join(".zot/extensions"));
    let global_data = zot_home.join("data/weather");
    let project_data = zot_home.join("data/project").join(common::project_id(&proj)).join("weather");

    // The user's own weather, in a folder with no project.
    let got = probe_weather(&t, &elsewhere, &[("data_dir", ""), ("data", "g.txt")]);
    assert_eq!(got[0], format!("ok {}", global_data.display()));
    assert!(got[1].starts_with("ok "), "{got:?}");

    // The project's weather, once trusted.
    let r = common::run_zot(env!("CARGO_BIN_EXE_zot"), &proj, Some(&zot_home), &["trust"], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let theirs = global_data.join("g.txt").display().to_string();
    let got = probe_weather(&t, &proj, &[("data_dir", ""), ("data", "p.txt"), ("read", &theirs)]);
    assert_eq!(got[0], format!("ok {}", project_data.display()));
    assert!(got[1].starts_with("ok "), "{got:?}");
    assert_eq!(got[2], format!("errno {}", libc::EACCES), "the project's weather read the user's weather's data");

    // On disk: each in its own folder, 0700.
    use std::os::unix::fs::PermissionsExt;
    assert!(global_data.join("g.txt").is_file() && !global_data.join("p.txt").exists());
    assert!(project_data.join("p.txt").is_file() && !project_data.join("g.txt").exists());
    assert_eq!(std::fs::metadata(&project_data).unwrap().permissions().mode() & 0o777, 0o700);
    // The old folder is named, left as it is.
    let left = format!("{} is left as it is", global_data.display());
    assert!(log_contains_text(&t, "weather", &left), "{}", read_log(&t, "weather"));

    // The control: the user's weather still reads its own.
    let got = probe_weather(&t, &elsewhere, &[("read", &theirs)]);
    assert_eq!(got[0], "ok 1");
}

#[test]
fn the_trust_line_names_calls_env_and_prompt() {
    let t = TempDir::new("confine-calls-trust");
    let (zot_home, proj) = (t.path().join("zot-home"), t.path().join("proj"));
    let confine = json!({"call": ["weather", "mcp__gh__*"], "env": ["API_KEY"], "prompt": true});
    let m = json!({"name": "steer", "exec": "python3", "args": [fixture("probe.py").display().to_string()], "confine": confine});
    write_manifest(&proj.join(".zot/extensions"), "steer", m);
    let plain = json!({"name": "plain", "exec": "python3", "args": [fixture("probe.py").display().to_string()], "confine": {}});
    write_manifest(&proj.join(".zot/extensions"), "plain", plain);
    let r = common::run_zot(env!("CARGO_BIN_EXE_zot"), &proj, Some(&zot_home), &["trust"], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    let line = |name: &str| all.lines().find(|l| l.starts_with(&format!("  {name}: "))).unwrap_or_else(|| panic!("no line for {name}: {all}")).to_string();
    assert!(line("steer").ends_with("; calls: weather, mcp__gh__*; env: API_KEY; steers the model"), "{all}");
    assert!(line("plain").ends_with("network: none"), "{all}");
}

#[test]
fn a_manifests_own_env_cannot_hand_over_a_variable_confine_env_withholds() {
    let t = TempDir::new("confine-calls-env-expand");
    let with_env = |name: &str, tool: &str, confine: Option<Value>| {
        let dir = ext(&t, name, json!({"tools": [tool]}), confine);
        let mut m: Value = serde_json::from_slice(&std::fs::read(dir.join("extension.json")).unwrap()).unwrap();
        m["env"] = json!({"K": "${SECRET_API_KEY}", "D": "${SECRET_API_KEY:-none}"});
        std::fs::write(dir.join("extension.json"), m.to_string()).unwrap();
        dir
    };
    let leaky = with_env("leaky", "env_l", Some(json!({})));
    let named = with_env("named", "env_n", Some(json!({"env": ["SECRET_API_KEY"]})));
    let open = with_env("open", "env_o", None);
    let mut s = serve(&t, &[leaky, named, open], &[], &[("SECRET_API_KEY", "sk-123")]);
    s.ready();
    // Confined, without the name in confine.env: it does not start, and
    // says why; nothing of the value is said.
    let errors = s.notes("extension_error");
    let e = errors.iter().find(|e| e["extension"] == "leaky").unwrap_or_else(|| panic!("{errors:?}"));
    let msg = e["message"].as_str().unwrap_or_default();
    assert!(msg.contains("env K: ${SECRET_API_KEY} is a variable of your environment that its confine.env does not pass on"), "{msg}");
    assert!(!msg.contains("sk-123"), "{msg}");
    // Named in confine.env, or not confined: expanded.
    for tool in ["env_n", "env_o"] {
        let r = s.request(json!({"id": tool, "type": "tool", "name": tool, "args": {"var": "K"}}));
        assert_eq!(text(&r), "sk-123", "{tool}");
    }
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}
