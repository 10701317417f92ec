//! MCP servers as extensions (docs/protocol.md §8), end to end through the
//! real binary: configuration files and their fields, the handshake and
//! its failures, tools and prompts with their names, results, progress,
//! live tool lists, cancellation, crashes and restarts, trust, and `zot
//! mcp` as a gateway in front of them. The servers are a raw JSON-RPC
//! fixture (tests/fixtures/mcp_server.py) for precise behaviour, and real
//! ones nobody here wrote (`@modelcontextprotocol/server-filesystem`,
//! `mcp-server-time`) where they are installed.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, process_alive, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_proc::{assert_gone_within, strings, Zot, FAST, LINE_WAIT};

/// A call that wakes an idle server, or waits for one that restarts, waits
/// for a Python start-up and the MCP handshake, bounded by the call's own
/// timeout: on a loaded machine that can take seconds, and a Python
/// interceptor's answer can take more than a second. The tests that are
/// about a deadline set the server's own `requestTimeout`.
const SLOW_START: [&str; 8] = ["--ready-grace", "60", "--tool-timeout", "60", "--command-timeout", "60", "--intercept-timeout", "10"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A server entry running the fixture with `flags`, plus `more` fields.
fn fx(flags: &[&str], more: Value) -> Value {
    let mut args = vec![fixture("mcp_server.py").display().to_string()];
    args.extend(flags.iter().map(|s| s.to_string()));
    let mut e = json!({"command": "python3", "args": args});
    if let Value::Object(m) = more {
        for (k, v) in m {
            e[k] = v;
        }
    }
    e
}

/// Writes `{"mcpServers": servers}` to `<dir>/<file>`; returns its path.
fn write_config(dir: &Path, file: &str, servers: Value) -> PathBuf {
    let p = dir.join(file);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, serde_json::to_vec_pretty(&json!({"mcpServers": servers})).unwrap()).unwrap();
    p
}

/// `zot serve` (or another front end) with a `--cwd` of its own.
struct Serve {
    z: Zot,
    frames: Vec<Value>,
    next: u64,
}

fn cwd_of(t: &TempDir) -> PathBuf {
    let c = t.path().join("cwd");
    std::fs::create_dir_all(&c).unwrap();
    c
}

impl Serve {
    /// `zot serve --no-ext --cwd <t>/cwd FAST SLOW_START --mcp-config C... extra`.
    fn start(t: &TempDir, configs: &[PathBuf], extra: &[&str]) -> Serve {
        Serve::start_env(t, configs, extra, &[])
    }

    fn start_env(t: &TempDir, configs: &[PathBuf], extra: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut args = strings(&["serve", "--cwd"]);
        args.push(cwd_of(t).display().to_string());
        args.extend(strings(&FAST));
        args.extend(strings(&SLOW_START));
        for c in configs {
            args.push("--mcp-config".into());
            args.push(c.display().to_string());
        }
        args.extend(strings(extra));
        Serve { z: Zot::spawn(t.path(), &args, env), frames: Vec::new(), next: 100 }
    }

    fn read(&mut self, limit: Duration) -> Option<Value> {
        let line = self.z.next_line(limit)?;
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.frames.push(v.clone());
        Some(v)
    }

    /// The first frame (read already or to come) that `pred` picks.
    fn wait(&mut self, what: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
        if let Some(f) = self.frames.iter().find(|f| pred(f)) {
            return f.clone();
        }
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.read(left) {
                Some(f) if pred(&f) => return f,
                Some(_) => {}
                None => panic!("no frame {what}\n{}", self.z.context()),
            }
        }
    }

    fn note(&mut self, ty: &str) -> Value {
        self.wait(ty, |f| f["type"] == ty)
    }

    /// Sends a request of `ty` with `params`; its response.
    fn req(&mut self, ty: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut v = params;
        v["id"] = json!(id);
        v["type"] = json!(ty);
        self.z.send(&v.to_string());
        self.wait(&format!("response {id}"), |f| f["type"] == "response" && f["id"] == id)
    }

    fn ok(&mut self, ty: &str, params: Value) -> Value {
        let r = self.req(ty, params.clone());
        assert_eq!(r["ok"], true, "{ty} {params} failed: {r}\n{}", self.z.context());
        r["result"].clone()
    }

    fn tool(&mut self, name: &str, args: Value) -> Value {
        self.ok("tool", json!({"name": name, "args": args}))
    }

    fn ext(&mut self, name: &str) -> Value {
        let l = self.ok("list", json!({}));
        l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap_or(Value::Null)
    }

    /// Polls the listing until extension `name` is in `state`.
    fn wait_state(&mut self, name: &str, state: &str) -> Value {
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let e = self.ext(name);
            if e["state"] == state {
                return e;
            }
            assert!(Instant::now() < end, "{name} never {state}: {e}\n{}", self.z.context());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.z.zot_home.join("logs").join(format!("mcp-{name}.log"))).unwrap_or_default()
    }

    fn wait_log(&self, name: &str, needle: &str) -> String {
        let ok = common::wait_until(LINE_WAIT, || self.log(name).contains(needle));
        let log = self.log(name);
        assert!(ok, "log of {name} never had {needle:?}:\n{log}");
        log
    }

    fn shutdown(&mut self) {
        self.ok("shutdown", json!({}));
        assert_eq!(self.z.exit_code(LINE_WAIT), 0, "{}", self.z.context());
    }
}

fn text(r: &Value) -> String {
    r["content"][0]["text"].as_str().unwrap_or("").to_string()
}

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_server_is_listed_with_its_kind_version_info_and_tools_across_pages() {
    let t = TempDir::new("mcp-list");
    let cfg = write_config(t.path(), "conf/mcp.json", json!({"fx": fx(&["--page", "3", "--prompts"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let l = s.ok("list", json!({}));
    let e = &l["extensions"][0];
    assert_eq!((e["name"].as_str(), e["kind"].as_str(), e["state"].as_str()), (Some("fx"), Some("mcp"), Some("ready")), "{l}");
    assert_eq!(e["protocol_version"], "2025-11-25");
    assert_eq!(e["server_info"], json!({"name": "fixture", "version": "9.9"}));
    assert_eq!(e["source"], "ext");
    let names = tool_names(&l);
    assert_eq!(names.len(), 11, "every page of tools/list is followed: {names:?}");
    let echo = l["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__fx__echo").unwrap();
    assert_eq!(echo["extension"], "fx");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(echo["schema"]["properties"]["text"]["type"], "string");
    let st = l["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__fx__structured").unwrap();
    assert_eq!(st["output_schema"]["properties"]["n"]["type"], "number");
    assert_eq!(l["commands"][0]["name"], "mcp__fx__greet");
    let log = s.log("fx");
    assert!(log.contains(r#"got tools/list {"cursor": "9"}"#), "{log}");
    assert!(log.contains(r#""clientInfo": {"name": "zot""#) && log.contains(r#""capabilities": {}"#), "{log}");
    s.shutdown();
}

#[test]
fn without_the_prompts_capability_no_prompts_list_is_sent() {
    let t = TempDir::new("mcp-noprompts");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let l = s.ok("list", json!({}));
    assert_eq!(l["commands"], json!([]));
    s.shutdown();
    let log = s.log("fx");
    assert!(log.contains("got tools/list") && !log.contains("prompts/list"), "{log}");
}

#[test]
fn results_map_content_structured_content_and_errors() {
    let t = TempDir::new("mcp-results");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--junk"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__fx__echo", json!({"text": "hi"}));
    assert_eq!((text(&r), r["is_error"].clone(), r["extension"].clone()), (r#"{"text": "hi"}"#.to_string(), json!(false), json!("fx")));
    let r = s.tool("mcp__fx__structured", json!({}));
    assert_eq!(r["structured_content"], json!({"n": 7}));
    let r = s.tool("mcp__fx__fail", json!({}));
    assert_eq!((text(&r), r["is_error"].clone()), ("it went wrong".to_string(), json!(true)));
    let r = s.tool("mcp__fx__bad", json!({}));
    assert_eq!(r["is_error"], true);
    assert!(text(&r).contains("malformed"), "{r}");
    let (code, _) = {
        let r = s.req("tool", json!({"name": "mcp__fx__nope"}));
        (r["error"]["code"].clone(), r)
    };
    assert_eq!(code, "unknown_tool");
    s.shutdown();
    let log = s.log("fx");
    assert!(log.contains("skipped a stdout line (not JSON): this is not JSON"), "junk is logged: {log}");
    assert!(log.contains("more junk"), "{log}");
}

#[test]
fn prompts_are_commands_with_arguments_in_declared_order() {
    let t = TempDir::new("mcp-prompts");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--prompts"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.ok("command", json!({"name": "mcp__fx__greet", "args": "bob very  loudly"}));
    assert_eq!((r["action"].as_str(), r["prompt"].as_str()), (Some("prompt"), Some("greet bob very  loudly")), "{r}");
    let r = s.ok("command", json!({"name": "mcp__fx__greet", "args": ""}));
    assert_eq!(r["error"], "missing required argument \"who\"", "{r}");
    s.shutdown();
}

#[test]
fn progress_is_passed_on_with_the_request_id() {
    let t = TempDir::new("mcp-progress");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.z.send(r#"{"id":"p1","type":"tool","name":"mcp__fx__progress","tool_id":"T9"}"#);
    let resp = s.wait("the answer", |f| f["type"] == "response" && f["id"] == "p1");
    assert_eq!(text(&resp["result"]), "done");
    let notes: Vec<Value> = s.frames.iter().filter(|f| f["type"] == "tool_progress").cloned().collect();
    assert_eq!(notes.len(), 3, "{:?}", s.frames);
    // Exactly the fields docs/protocol.md §4 lists for it.
    assert_eq!(notes[0], json!({"type": "tool_progress", "id": "p1", "tool_id": "T9", "progress": 1, "total": 3, "message": "step 1"}));
    assert_eq!((notes[2]["progress"].clone(), notes[2]["total"].clone(), notes[2]["message"].clone()), (json!(3), json!(3), json!("step 3")));
    let log = s.log("fx");
    assert!(log.contains("progressToken"), "{log}");
    s.shutdown();
}

#[test]
fn list_changed_adds_and_removes_tools_live() {
    let t = TempDir::new("mcp-listchanged");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--page", "4"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.tool("mcp__fx__add", json!({"name": "newt"}));
    let n = s.wait("tools_changed", |f| f["type"] == "tools_changed" && f["reason"] == "listed");
    assert_eq!(n["tools"], json!(["mcp__fx__newt"]));
    assert_eq!(n["extension"], "fx");
    assert_eq!(text(&s.tool("mcp__fx__newt", json!({}))), "ran newt");
    s.tool("mcp__fx__remove", json!({"name": "echo"}));
    let n = s.wait("a second tools_changed", |f| f["type"] == "tools_changed" && f["tools"] == json!(["mcp__fx__echo"]));
    assert_eq!(n["reason"], "listed");
    let l = s.ok("list", json!({}));
    assert!(!tool_names(&l).contains(&"mcp__fx__echo".to_string()) && tool_names(&l).contains(&"mcp__fx__newt".to_string()));
    let r = s.req("tool", json!({"name": "mcp__fx__echo"}));
    assert_eq!(r["error"]["code"], "unknown_tool");
    s.shutdown();
}

#[test]
fn prompts_list_changed_updates_the_commands_live() {
    // docs/protocol.md §8.3: prompts are commands; a server's new prompt list
    // is in force at once, as its tools' is (no event names commands).
    let t = TempDir::new("mcp-prompts-changed");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--prompts"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let commands = |s: &mut Serve| -> Vec<String> {
        let l = s.ok("list", json!({}));
        l["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(commands(&mut s), ["mcp__fx__greet"]);
    s.tool("mcp__fx__add", json!({"prompt": "wave"}));
    s.wait_log("fx", "prompts listed again; changed commands: mcp__fx__wave");
    let r = s.ok("command", json!({"name": "mcp__fx__wave"}));
    assert_eq!((r["action"].as_str(), r["prompt"].as_str()), (Some("prompt"), Some("prompt wave")), "{r}");
    assert_eq!(s.ext("fx")["commands"], json!(["mcp__fx__greet", "mcp__fx__wave"]));
    s.tool("mcp__fx__remove", json!({"prompt": "greet"}));
    s.wait_log("fx", "prompts listed again; changed commands: mcp__fx__greet");
    assert_eq!(commands(&mut s), ["mcp__fx__wave"]);
    let r = s.req("command", json!({"name": "mcp__fx__greet", "args": "ann"}));
    assert_eq!(r["error"]["code"], "unknown_command", "{r}");
    s.shutdown();
}

#[test]
fn a_call_past_its_request_timeout_is_cancelled_at_the_server() {
    let t = TempDir::new("mcp-cancel");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({"requestTimeout": 0.5}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.req("tool", json!({"name": "mcp__fx__slow", "args": {"secs": 30}}));
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    // The message names the server's deadline, not the host's tool timeout.
    assert!(r["error"]["message"].as_str().unwrap_or("").ends_with("within 500ms"), "{r}");
    let log = s.wait_log("fx", "fixture: cancelled");
    assert!(log.contains("notifications/cancelled"), "{log}");
    // Still serving.
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({}))), "{}");
    s.shutdown();
}

#[test]
fn a_crash_mid_call_fails_it_at_once_and_the_server_restarts() {
    let t = TempDir::new("mcp-crash");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--tool-timeout", "60"]);
    s.note("ready");
    let pid = s.ext("fx")["pid"].as_u64().unwrap();
    let started = Instant::now();
    let r = s.req("tool", json!({"name": "mcp__fx__crash"}));
    assert_eq!(r["error"]["code"], "extension_exited", "{r}");
    assert!(started.elapsed() < Duration::from_secs(30), "failed at the exit, not the 60 s deadline");
    s.note("extension_restarting");
    let e = s.wait_state("fx", "ready");
    assert_ne!(e["pid"].as_u64().unwrap(), pid);
    assert_eq!(e["restarts"], 1);
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({"a": 1}))), r#"{"a": 1}"#);
    s.shutdown();
}

#[test]
fn a_crash_looped_server_is_listed_as_a_crash_looped_extension_is() {
    // docs/protocol.md §7.1 and §8.2: a server is supervised as an extension
    // is; crash-looped, it gives its names up for good (none in force, a
    // call is unknown_tool), and its own entry reads as an extension's.
    let t = TempDir::new("mcp-crashloop");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--exit-after-list", "3"], json!({}))}));
    let ext = common::py_ext(t.path(), "exts/a", "a", &["--tools", "echo", "--exit-after-ready", "4"]);
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--ext", ext.to_str().unwrap(), "--restart", "always"]);
    for name in ["fx", "a"] {
        let end = Instant::now() + Duration::from_secs(90);
        while !s.frames.iter().any(|f| f["type"] == "extension_crash_loop" && f["extension"] == name) {
            assert!(s.read(end.saturating_duration_since(Instant::now())).is_some(), "{name} never crash-looped\n{}", s.z.context());
        }
    }
    let l = s.ok("list", json!({}));
    assert!(tool_names(&l).is_empty(), "no name is in force for either: {l}");
    let (fx, a) = (s.ext("fx"), s.ext("a"));
    for e in [&fx, &a] {
        assert_eq!((e["state"].as_str(), e["restarts"].as_u64(), e["pid"].as_u64()), (Some("crash_loop"), Some(5), None), "{e}");
    }
    assert_eq!(a["tools"], json!(["echo"]), "an extension's entry names what it last registered: {a}");
    assert!(fx["tools"].as_array().unwrap().contains(&json!("mcp__fx__echo")), "and so does a server's: {fx}");
    let gone = s.wait("fx's tools gone", |f| f["type"] == "tools_changed" && f["extension"] == "fx" && f["reason"] == "exited");
    assert!(gone["tools"].as_array().unwrap().contains(&json!("mcp__fx__echo")), "{gone}");
    let r = s.req("tool", json!({"name": "mcp__fx__echo"}));
    assert_eq!(r["error"]["code"], "unknown_tool", "{r}");
    s.shutdown();
}

#[test]
fn handshake_failures_fail_that_server_only() {
    let t = TempDir::new("mcp-handshake");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "mute": fx(&["--never-init"], json!({"connectTimeout": 0.5, "restart": "never"})),
            "old": fx(&["--version", "1999-01-01"], json!({"restart": "never"})),
            "web": {"url": "https://example.com/mcp"},
            "sse": {"transport": "sse", "command": "x"},
            "ok": fx(&[], json!({})),
            "gone": {"command": "python3", "args": ["-c", "import sys; sys.exit(4)"], "restart": "never"},
        }),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    // A server is named by what it failed to do: answer initialize, and
    // (under auto, PROTOCOL.md §8.4.3 rule 12b) server/discover after it.
    let gone = s.wait_state("gone", "failed");
    let want = "initialize: exited before answering initialize (exit code 4); server/discover: exited before answering server/discover (exit code 4)";
    assert!(gone["error"].as_str().unwrap_or("").starts_with(want), "{gone}");
    let mute = s.wait_state("mute", "failed");
    // What the server wrote on stderr may follow, as for any failed start.
    assert!(mute["error"].as_str().unwrap_or("").starts_with("no answer to initialize within 500ms (connectTimeout)"), "{mute}");
    let old = s.wait_state("old", "failed");
    assert!(old["error"].as_str().unwrap().contains("\"1999-01-01\""), "the version is named: {old}");
    assert_eq!(s.ext("web")["error"], "transport streamable-http is not supported (stdio only)");
    assert_eq!(s.ext("sse")["error"], "transport sse is not supported (stdio only)");
    assert_eq!(s.ext("sse")["state"], "failed");
    assert_eq!(s.ext("ok")["state"], "ready");
    s.shutdown();
}

#[test]
fn requests_from_the_server_are_answered_or_refused_at_once() {
    let t = TempDir::new("mcp-requests");
    let roots = t.path().join("r1");
    std::fs::create_dir_all(&roots).unwrap();
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({"fx": fx(&[], json!({})), "rooted": fx(&[], json!({"roots": ["r1"]})), "proj": fx(&[], json!({"roots": true}))}),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__fx__ask", json!({"method": "sampling/createMessage"}));
    let a: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(a["error"], json!({"code": -32601, "message": "not supported by this host"}));
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__fx__ask", json!({"method": "elicitation/create"})))).unwrap();
    assert_eq!(a["error"]["code"], -32601);
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__fx__ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(a["error"]["code"], -32601, "no roots unless the entry asks: {a}");
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__fx__ask", json!({"method": "ping"})))).unwrap();
    assert_eq!(a["result"], json!({}));
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__rooted__ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(a["result"]["roots"], json!([{"uri": format!("file://{}", roots.display())}]));
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__proj__ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(a["result"]["roots"], json!([{"uri": format!("file://{}", cwd_of(&t).display())}]));
    s.shutdown();
    assert!(s.log("rooted").contains(r#""capabilities": {"roots": {"listChanged": false}}"#), "{}", s.log("rooted"));
    assert!(s.log("fx").contains(r#""capabilities": {}"#));
}

#[test]
fn enabled_and_disabled_tools_filter_what_is_offered() {
    let t = TempDir::new("mcp-filter");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "only": fx(&[], json!({"enabledTools": ["echo", "env"], "alwaysAllow": ["echo"]})),
            "but": fx(&[], json!({"disabledTools": ["crash"]})),
            "off": fx(&[], json!({"disabled": true})),
        }),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let only = s.ext("only");
    assert_eq!(only["tools"], json!(["mcp__only__echo", "mcp__only__env"]));
    let but = s.ext("but");
    let tools: Vec<&str> = but["tools"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(tools.contains(&"mcp__but__echo") && !tools.contains(&"mcp__but__crash"), "{tools:?}");
    assert_eq!(s.ext("off"), Value::Null, "a disabled server is not started");
    s.shutdown();
    let log = s.log("only");
    assert_eq!(log.matches("ignored unknown fields of its entry").count(), 1, "{log}");
    assert!(log.contains("mcp.json: alwaysAllow"), "{log}");
}

#[test]
fn env_is_expanded_and_an_unset_variable_fails_that_server() {
    let t = TempDir::new("mcp-env");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "fx": fx(&[], json!({"env": {"GREETING": "${ZOT_TEST_WORD}-${ZOT_TEST_UNSET:-dflt}-$$"}})),
            "bad": fx(&[], json!({"env": {"X": "${ZOT_TEST_UNSET}"}})),
        }),
    );
    let mut s = Serve::start_env(&t, &[cfg], &["--no-ext"], &[("ZOT_TEST_WORD", "hello")]);
    s.note("ready");
    assert_eq!(text(&s.tool("mcp__fx__env", json!({"name": "GREETING"}))), "hello-dflt-$");
    assert_eq!(text(&s.tool("mcp__fx__env", json!({"name": "ZOT_AGENT"}))), "1");
    let bad = s.wait_state("bad", "failed");
    assert!(bad["error"].as_str().unwrap().contains("ZOT_TEST_UNSET"), "{bad}");
    s.shutdown();
    assert!(!s.log("fx").contains("hello-dflt"), "values never reach the log");
}

#[test]
fn a_project_mcp_json_runs_only_in_a_trusted_project() {
    let t = TempDir::new("mcp-trust");
    let cwd = cwd_of(&t);
    write_config(&cwd, ".zot/mcp.json", json!({"proj": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[], &[]);
    let n = s.note("untrusted_project");
    assert_eq!(n["extensions"], json!(["proj"]));
    s.note("ready");
    let e = s.ext("proj");
    assert_eq!((e["state"].as_str(), e["kind"].as_str(), e["pid"].clone()), (Some("untrusted"), Some("mcp"), Value::Null), "{e}");
    s.shutdown();
    assert!(s.log("proj").is_empty(), "never started");

    let mut s = Serve::start(&t, &[], &["--trust-project"]);
    s.note("ready");
    assert_eq!(s.ext("proj")["state"], "ready");
    s.shutdown();

    let trust = std::process::Command::new(zot_proc::BIN)
        .args(["trust", &cwd.display().to_string()])
        .env("ZOT_HOME", t.path().join("zot-home"))
        .output()
        .unwrap();
    assert!(trust.status.success(), "{}", String::from_utf8_lossy(&trust.stderr));
    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    assert_eq!(s.ext("proj")["state"], "ready", "trusted now");
    // --no-ext skips the project and global files.
    s.shutdown();
    let mut s = Serve::start(&t, &[], &["--no-ext"]);
    s.note("ready");
    assert_eq!(s.ext("proj"), Value::Null);
    s.shutdown();
}

#[test]
fn a_missing_mcp_config_is_an_error_at_start_in_every_front_end() {
    let t = TempDir::new("mcp-missing");
    let bad = t.path().join("broken.json");
    std::fs::write(&bad, "{nope").unwrap();
    for sub in [&["serve"][..], &["mcp"], &["ext", "doctor"], &[]] {
        for (file, why) in [("/nonexistent/mcp.json", "no such file or directory"), (bad.to_str().unwrap(), "invalid JSON")] {
            let mut args: Vec<&str> = sub.to_vec();
            args.extend(["--no-ext", "--mcp-config", file]);
            let out = std::process::Command::new(zot_proc::BIN)
                .args(&args)
                .env("ZOT_HOME", t.path().join("zot-home"))
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.starts_with(&format!("zot: --mcp-config {file}: {why}")), "{args:?}: {err}");
        }
    }
}

#[test]
fn names_follow_the_rule_and_an_extension_of_the_same_name_wins() {
    let t = TempDir::new("mcp-names");
    let ext = common::py_ext(t.path(), "exts/fx", "fx", &[]);
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({})), "b c": fx(&[], json!({})), "srv.2": fx(&[], json!({}))}));
    let mut args = vec!["--no-ext".to_string(), "--ext".into(), ext.display().to_string()];
    args.push("--restart".into());
    args.push("never".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = Serve::start(&t, &[cfg], &args);
    s.note("ready");
    let l = s.ok("list", json!({}));
    let fxs: Vec<&Value> = l["extensions"].as_array().unwrap().iter().filter(|e| e["name"] == "fx").collect();
    assert_eq!(fxs.len(), 1, "{l}");
    assert_eq!(fxs[0]["kind"], "extension", "the extension comes first in load order");
    let srv = s.ext("srv.2");
    assert!(srv["tools"].as_array().unwrap().contains(&json!("mcp__srv_2__echo")), "{srv}");
    let broken = l["extensions"].as_array().unwrap().iter().find(|e| e["error"].as_str().is_some_and(|m| m.contains("\"b c\""))).cloned();
    assert!(broken.is_some_and(|b| b["state"] == "failed"), "{l}");
    s.shutdown();
}

#[test]
fn an_idle_server_is_stopped_keeps_its_tools_and_wakes_on_the_next_call() {
    let t = TempDir::new("mcp-idle");
    // Long enough that the listing right after the call that woke it still
    // finds it awake, on a loaded machine too.
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--prompts"], json!({"idleTimeout": 3, "autoApprove": []}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let pid = s.ext("fx")["pid"].as_u64().unwrap() as u32;
    let idle = s.wait_state("fx", "idle");
    assert_eq!(idle["pid"], Value::Null);
    assert_gone_within(&[pid], LINE_WAIT, &s.z.context());
    let l = s.ok("list", json!({}));
    assert!(tool_names(&l).contains(&"mcp__fx__echo".to_string()), "its tools stay offered while idle: {l}");
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({"w": 1}))), r#"{"w": 1}"#, "the call wakes it");
    // Announced before the answer, had the listing changed.
    assert!(!s.frames.iter().any(|f| f["type"] == "tools_changed"), "the same tools listed again change nothing: {:?}", s.frames);
    let e = s.ext("fx");
    assert_eq!(e["state"], "ready");
    assert_ne!(e["pid"].as_u64().unwrap() as u32, pid);
    assert_eq!(e["restarts"], 0, "a wake is not a restart");
    s.wait_state("fx", "idle");
    let r = s.ok("command", json!({"name": "mcp__fx__greet", "args": "ann"}));
    assert_eq!(r["prompt"], "greet ann -", "a command wakes it too");
    s.shutdown();
    let log = s.log("fx");
    assert!(log.contains("(idleTimeout): stopping") && log.contains("called while idle"), "{log}");
    assert_eq!(log.matches("ignored unknown fields of its entry").count(), 1, "logged once, not at each wake: {log}");
}

#[test]
fn a_woken_server_offers_what_it_lists_then() {
    // docs/protocol.md §8.1 idleTimeout: a call starts the server again as a
    // restart would; what it lists then replaces what it offered asleep,
    // the difference announced as for a list_changed (§8.3).
    let t = TempDir::new("mcp-idle-relist");
    let change = t.path().join("change.json");
    let flags = ["--tools-file", change.to_str().unwrap()];
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&flags, json!({"idleTimeout": 0.5}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("fx", "idle");
    let gate = t.path().join("gate");
    std::fs::write(&change, json!({"drop": ["slow"], "add": ["newt"], "wait_for": gate}).to_string()).unwrap();
    s.z.send(r#"{"id":"wake","type":"tool","name":"mcp__fx__echo","args":{"w":1}}"#);
    // While it starts, what it offered asleep stays offered.
    let l = s.ok("list", json!({}));
    let e = l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "fx").unwrap();
    assert_eq!(e["state"], "starting", "{e}");
    assert!(tool_names(&l).contains(&"mcp__fx__slow".to_string()) && e["tools"].as_array().unwrap().contains(&json!("mcp__fx__slow")), "{l}");
    std::fs::write(&gate, "").unwrap();
    let r = s.wait("the call that woke it", |f| f["type"] == "response" && f["id"] == "wake");
    assert_eq!(text(&r["result"]), r#"{"w": 1}"#, "{r}");
    let answered = s.frames.iter().position(|f| f["id"] == "wake").unwrap();
    let n = s.note("tools_changed");
    assert_eq!((n["reason"].clone(), n["tools"].clone()), (json!("listed"), json!(["mcp__fx__newt", "mcp__fx__slow"])), "{n}");
    let at = s.frames.iter().position(|f| f["type"] == "tools_changed");
    assert!(at < Some(answered), "announced before the answer to the call that woke it");
    let l = s.ok("list", json!({}));
    assert!(tool_names(&l).contains(&"mcp__fx__newt".to_string()) && !tool_names(&l).contains(&"mcp__fx__slow".to_string()), "{l}");
    let r = s.req("tool", json!({"name": "mcp__fx__slow"}));
    assert_eq!(r["error"]["code"], "unknown_tool", "a tool it no longer lists is gone: {r}");
    assert_eq!(text(&s.tool("mcp__fx__newt", json!({}))), "ran newt");
    s.shutdown();
    assert!(s.log("fx").contains("tools listed on waking; changed: mcp__fx__newt, mcp__fx__slow"), "{}", s.log("fx"));
}

#[test]
fn restarting_an_idle_server_is_announced_as_a_restart() {
    // docs/protocol.md §4 `restart` of a server that sleeps: its tools were
    // offered all along, so its return is a restart, not a new listing.
    let t = TempDir::new("mcp-idle-restart");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({"idleTimeout": 0.5}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("fx", "idle");
    let r = s.ok("restart", json!({"name": "fx"}));
    assert_eq!(r["extension"], "fx", "{r}");
    let n = s.note("tools_changed");
    assert_eq!(n["reason"], "restarted", "{n}");
    assert!(n["tools"].as_array().is_some_and(|a| a.contains(&json!("mcp__fx__echo"))), "{n}");
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({"w": 2}))), r#"{"w": 2}"#);
    s.shutdown();
}

#[test]
fn tool_names_are_sanitised_bounded_and_duplicates_shadowed() {
    let t = TempDir::new("mcp-dupes");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--dupes"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let e = s.ext("fx");
    let tools: Vec<String> = e["tools"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(tools.iter().filter(|n| *n == "mcp__fx__a_b").count(), 1, "{tools:?}");
    let long = tools.iter().find(|n| n.starts_with("mcp__fx__xxx")).unwrap();
    assert_eq!(long.len(), 64);
    assert!(long[55..].starts_with('_') && long[56..].chars().all(|c| c.is_ascii_hexdigit()), "{long}");
    // The first in the server's order wins (tools/list order: a.b, then a_b).
    assert_eq!(text(&s.tool("mcp__fx__a_b", json!({}))), "ran a.b");
    assert_eq!(text(&s.tool(long, json!({}))), format!("ran {}", "x".repeat(70)));
    s.shutdown();
    assert!(s.log("fx").contains(r#"tool "a_b" is shadowed by tool "a.b" of the same server"#), "{}", s.log("fx"));
}

#[test]
fn a_server_that_stays_up_after_stdin_closes_is_terminated() {
    let t = TempDir::new("mcp-stop");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--ignore-eof"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let pid = s.ext("fx")["pid"].as_u64().unwrap() as u32;
    s.shutdown();
    assert_gone_within(&[pid], LINE_WAIT, &s.z.context());
    let log = s.log("fx");
    assert!(log.contains("stdin closed; staying up") && log.contains("sending SIGTERM"), "{log}");
}

#[test]
fn shutdown_leaves_no_server_process() {
    let t = TempDir::new("mcp-shutdown");
    let cfg = write_config(t.path(), "mcp.json", json!({"a": fx(&[], json!({})), "b": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let pids: Vec<u32> = ["a", "b"].iter().map(|n| s.ext(n)["pid"].as_u64().unwrap() as u32).collect();
    assert!(pids.iter().all(|&p| process_alive(p)));
    s.shutdown();
    assert_gone_within(&pids, LINE_WAIT, &s.z.context());
}

fn zot(t: &TempDir, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(zot_proc::BIN)
        .args(args)
        .env("ZOT_HOME", t.path().join("zot-home"))
        .current_dir(cwd_of(t))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn management_commands_show_servers_and_refuse_to_edit_them() {
    let t = TempDir::new("mcp-manage");
    let global = write_config(&t.path().join("zot-home"), "mcp.json", json!({"gsrv": fx(&[], json!({}))}));
    let (code, out, err) = zot(&t, &["ext", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = rows.as_array().unwrap().iter().find(|r| r["name"] == "gsrv").cloned().unwrap();
    assert_eq!((row["kind"].as_str(), row["scope"].as_str(), row["state"].as_str()), (Some("mcp"), Some("global"), Some("enabled")), "{row}");
    let (_, table, _) = zot(&t, &["ext", "list"]);
    let line = table.lines().find(|l| l.contains("gsrv")).unwrap_or_else(|| panic!("{table}"));
    assert_eq!(line.split_whitespace().nth(5), Some("mcp"), "the language column names the kind: {table}");
    for verb in ["enable", "disable"] {
        let (code, _, err) = zot(&t, &["ext", verb, "gsrv"]);
        assert_eq!(code, 1);
        assert!(err.contains(&format!("gsrv is an MCP server from {}: edit that file to {verb} it", global.display())), "{err}");
    }
    let (code, _, err) = zot(&t, &["ext", "remove", "--yes", "gsrv"]);
    assert_eq!(code, 1);
    assert!(err.contains("edit that file to remove it"), "{err}");
    let (code, _, err) = zot(&t, &["ext", "install", global.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("holds MCP servers, not an extension"), "{err}");
    assert!(global.exists(), "nothing was changed");

    // A load writes its log, which `zot ext logs` shows by the server's name.
    let (code, out, err) = zot(&t, &["ext", "doctor", "--json", "--ready-grace", "60"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(code, 0, "{report}");
    let e = report["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "gsrv").cloned().unwrap();
    assert_eq!((e["kind"].as_str(), e["state"].as_str(), e["protocol_version"].as_str()), (Some("mcp"), Some("ready"), Some("2025-11-25")), "{e}");
    assert!(e["log"].as_str().unwrap().ends_with("logs/mcp-gsrv.log"));
    let (code, out, _) = zot(&t, &["ext", "logs", "gsrv"]);
    assert_eq!(code, 0);
    assert!(out.contains("initialized: protocol 2025-11-25"), "{out}");
}

#[test]
fn ext_logs_finds_the_log_of_a_server_given_with_mcp_config() {
    // Every error's hint says `see 'zot ext logs NAME'` (docs/protocol.md §8.3).
    let t = TempDir::new("mcp-logs-given");
    let cfg = write_config(t.path(), "given.json", json!({"gfx": fx(&[], json!({})), "quiet": fx(&[], json!({"disabled": true}))}));
    let c = cfg.display().to_string();
    let (code, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--ready-grace", "60", "--mcp-config", &c]);
    assert_eq!(code, 0, "{out}{err}");
    for args in [&["ext", "logs", "gfx"][..], &["ext", "logs", "gfx", "--mcp-config", &c], &["--mcp-config", &c, "ext", "logs", "gfx"]] {
        let (code, out, err) = zot(&t, args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("initialized: protocol 2025-11-25"), "{args:?}: {out}");
    }
    // A given server that never ran: its log is named, not "no extension".
    let (code, out, err) = zot(&t, &["ext", "logs", "quiet", "--mcp-config", &c]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("no log for quiet yet (") && out.trim_end().ends_with("logs/mcp-quiet.log)"), "{out}");
    let (code, _, err) = zot(&t, &["ext", "logs", "quiet"]);
    assert_eq!((code, err.trim()), (1, "zot: no extension named quiet (see 'zot ext list')"));
    // The other session options still do not apply.
    let (code, _, err) = zot(&t, &["ext", "logs", "gfx", "--no-ext"]);
    assert_eq!(code, 2, "{err}");
    let (_, help, _) = zot(&t, &["ext", "logs", "--help"]);
    assert!(help.contains("logs/ext-<name>.log") && help.contains("logs/mcp-<name>.log") && help.contains("--mcp-config FILE"), "{help}");
}

#[test]
fn doctor_checks_a_servers_handshake_with_a_fix() {
    let t = TempDir::new("mcp-doctor");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({"mute": fx(&["--never-init"], json!({"connectTimeout": 0.3, "restart": "never"})), "web": {"url": "https://x/mcp"}}),
    );
    let (code, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let f: Vec<&Value> = report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "mcp_handshake").collect();
    assert_eq!(f.len(), 2, "{report}");
    let mute = f.iter().find(|f| f["extension"] == "mute").unwrap();
    assert!(mute["hint"].as_str().unwrap().contains("connectTimeout") && mute["hint"].as_str().unwrap().contains("mcp_server.py --never-init"), "{mute}");
    let web = f.iter().find(|f| f["extension"] == "web").unwrap();
    assert!(web["message"].as_str().unwrap().contains("not supported (stdio only)"), "{web}");
    // Each entry is shown with its own error, not as an exec not found.
    let cfg = write_config(t.path(), "alone.json", json!({"nocmd": {}, "web": {"url": "https://x/mcp"}}));
    let (_, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert!(out.contains("web (MCP server) [failed: transport streamable-http is not supported (stdio only)]"), "{out}{err}");
    assert!(out.contains("nocmd (MCP server) [failed: field `command` is required]"), "{out}{err}");
    assert!(!out.contains("(no command)"), "{out}");
}

#[test]
fn doctor_flags_a_cut_tool_name_and_unknown_fields_of_a_server_that_never_started() {
    // docs/protocol.md §8.3: doctor checks a server's names; §8.1: unknown
    // fields are logged, also for an entry that fails before it runs.
    let t = TempDir::new("mcp-doctor-names");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "fx": fx(&["--dupes"], json!({})),
            "gone": {"command": "./no-such-server", "enviroment": {"A": "1"}, "timeout": 3},
        }),
    );
    let (code, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let findings = |ext: &str, code: &str| -> Vec<Value> {
        report["findings"].as_array().unwrap().iter().filter(|f| f["extension"] == ext && f["code"] == code).cloned().collect()
    };
    let long = "x".repeat(70);
    let cut = findings("fx", "mcp_name");
    let cut: Vec<&Value> = cut.iter().filter(|f| f["message"].as_str().unwrap().contains("cut the name of tool")).collect();
    assert_eq!(cut.len(), 1, "{report}");
    let msg = cut[0]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("mcp__fx__{long} is offered as mcp__fx__xxx")), "the full name and the one used: {msg}");
    let used = msg.rsplit(' ').next().unwrap();
    assert_eq!(used.len(), 64, "{msg}");
    let fx = report["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "fx").unwrap();
    assert!(fx["tools"].as_array().unwrap().iter().any(|n| n["name"] == used), "the name used is the one offered: {fx}");
    let unknown = findings("gone", "mcp_unknown_field");
    assert_eq!(unknown.len(), 1, "{report}");
    assert!(unknown[0]["message"].as_str().unwrap().ends_with("enviroment, timeout"), "{}", unknown[0]);
    assert_eq!(findings("gone", "mcp_handshake").len(), 1, "it failed before it was spawned: {report}");
    let log = std::fs::read_to_string(t.path().join("zot-home/logs/mcp-gone.log")).unwrap();
    assert!(log.contains("ignored unknown fields of its entry in") && log.contains("failed to load"), "{log}");
}

#[test]
fn doctor_flags_a_server_tool_refused_for_its_schema() {
    // docs/protocol.md §8.3: doctor checks a server's schemas as an extension's;
    // a tool refused at registration is not listed, so the log says which.
    let t = TempDir::new("mcp-doctor-schema");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--bad-schema"], json!({}))}));
    // The server has to be listed to be checked: the default 3 s grace is
    // not what this is about.
    let (_, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--ready-grace", "60", "--mcp-config", cfg.to_str().unwrap()]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let f: Vec<&Value> = report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "mcp_schema").collect();
    assert_eq!(f.len(), 1, "{report}");
    assert!(f[0]["message"].as_str().unwrap().contains("mcp__fx__shapeless"), "{}", f[0]);
    assert_eq!(f[0]["extension"], "fx", "{}", f[0]);
}

#[test]
fn the_console_lists_servers_and_shows_progress_as_status_lines() {
    let t = TempDir::new("mcp-console");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut args = strings(&["--no-ext", "--cwd"]);
    args.push(cwd_of(&t).display().to_string());
    args.extend(strings(&FAST));
    args.extend(["--mcp-config".to_string(), cfg.display().to_string()]);
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.send("/extensions");
    z.send("/tools");
    z.send("/tool mcp__fx__progress {}");
    z.close_stdin();
    let out = z.read_to_end(LINE_WAIT * 2).join("\n");
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    assert!(out.lines().any(|l| l.contains("fx") && l.contains("ready") && l.contains("(MCP server 2025-11-25)")), "{out}");
    assert!(out.contains("mcp__fx__echo") && out.contains("echoes text [fx]"), "{out}");
    assert!(out.contains("[fx] progress 1/3: step 1") && out.contains("[fx] progress 3/3: step 3"), "{out}");
    assert!(out.contains("[fx] done"), "{out}");
}

#[test]
fn the_console_waits_for_a_server_still_starting_and_says_when_it_is_ready() {
    // PROTOCOL.md §8.2: the load ends (ready grace) while the server waits
    // at a gate the test opens once the console has listed it starting.
    let t = TempDir::new("mcp-console-starting");
    let gate = t.path().join("gate");
    let cfg = write_config(t.path(), "mcp.json", json!({"slowfx": fx(&["--init-gate", gate.to_str().unwrap()], json!({}))}));
    let mut args = strings(&["--no-ext", "--cwd"]);
    args.push(cwd_of(&t).display().to_string());
    args.extend(strings(&FAST));
    args.extend(strings(&["--ready-grace", "0.2", "--tool-timeout", "60", "--mcp-config"]));
    args.push(cfg.display().to_string());
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.send("/extensions");
    z.send(r#"/tool mcp__slowfx__echo {"text":"hi"}"#);
    z.send("/tool mcp__slowfx__nothing {}");
    z.close_stdin();
    z.wait_line("slowfx listed starting", |l| l.contains("slowfx") && l.contains("starting"));
    std::fs::write(&gate, "").unwrap();
    let out = z.read_to_end(LINE_WAIT * 2).join("\n");
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    let lines: Vec<&str> = out.lines().collect();
    let ready = lines.iter().position(|l| *l == "slowfx ready: 11 tools").unwrap_or_else(|| panic!("{out}"));
    let answer = lines.iter().position(|l| *l == r#"[slowfx] {"text": "hi"}"#).unwrap_or_else(|| panic!("{out}"));
    assert!(ready < answer, "{out}");
    assert!(lines.contains(&r#"error: unknown tool "mcp__slowfx__nothing""#), "{out}");
}

/// An extension that calls `mcp__fx__echo` with `call_tool` when its own
/// tool `relay` runs, and answers with what it got.
fn relay_ext(parent: &Path) -> PathBuf {
    let dir = parent.join("relay");
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"import json, sys
def out(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
out({"type": "hello", "name": "relay", "version": "1", "capabilities": ["tools", "call_tool"]})
out({"type": "register_tool", "name": "relay", "schema": {"type": "object"}})
out({"type": "ready"})
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "tool_call":
        out({"type": "call_tool", "id": "c1", "name": "mcp__fx__echo", "args": {"via": "relay"}, "parent_id": m["id"]})
        outer = m["id"]
    elif m.get("type") == "tool_result" and m.get("id") == "c1":
        out({"type": "tool_result", "id": outer, "content": [{"type": "text", "text": "relayed " + m["content"][0]["text"]}]})
    elif m.get("type") == "shutdown":
        out({"type": "shutdown_ack"}); break
"#;
    std::fs::write(dir.join("relay.py"), script).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        json!({"name": "relay", "exec": "python3", "args": [dir.join("relay.py").display().to_string()]}).to_string(),
    )
    .unwrap();
    dir
}

#[test]
fn an_extensions_call_tool_reaches_an_mcp_tool() {
    let t = TempDir::new("mcp-calltool");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let relay = relay_ext(t.path());
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--ext", relay.to_str().unwrap()]);
    s.note("ready");
    let r = s.tool("relay", json!({}));
    assert_eq!(text(&r), r#"relayed {"via": "relay"}"#, "{r}");
    s.shutdown();
}

// ----- zot mcp: a gateway in front of MCP servers ---------------------------

/// A guard extension: blocks `mcp__fx__crash`, adds `"guarded": true` to
/// the args of every other call.
fn guard_ext(parent: &Path) -> PathBuf {
    let dir = parent.join("guard");
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"import json, sys
def out(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
out({"type": "hello", "name": "guard", "version": "1"})
out({"type": "subscribe", "events": ["tool_call", "tool_result"], "intercept": ["tool_call"]})
out({"type": "ready"})
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "event_intercept":
        if m.get("tool_name") == "mcp__fx__crash":
            out({"type": "event_intercept_response", "id": m["id"], "block": True, "reason": "no crashing"})
        else:
            a = dict(m.get("tool_args") or {}); a["guarded"] = True
            out({"type": "event_intercept_response", "id": m["id"], "modified_args": a})
    elif m.get("type") == "event":
        args = json.dumps(m.get("tool_args"), sort_keys=True)
        sys.stderr.write("event " + m["event"] + " " + m.get("tool_name", "") + " " + str(m.get("status", "")) + " " + args + "\n"); sys.stderr.flush()
    elif m.get("type") == "shutdown":
        out({"type": "shutdown_ack"}); break
"#;
    std::fs::write(dir.join("guard.py"), script).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        json!({"name": "guard", "exec": "python3", "args": [dir.join("guard.py").display().to_string()]}).to_string(),
    )
    .unwrap();
    dir
}

fn mcp_frontend(t: &TempDir, cfg: &Path, exts: &[PathBuf]) -> Zot {
    let mut args = strings(&["mcp", "--no-ext", "--cwd"]);
    args.push(cwd_of(t).display().to_string());
    args.extend(strings(&FAST));
    args.extend(strings(&SLOW_START));
    args.push("--mcp-config".into());
    args.push(cfg.display().to_string());
    for e in exts {
        args.push("--ext".into());
        args.push(e.display().to_string());
    }
    Zot::spawn(t.path(), &args, &[])
}

fn rpc(z: &mut Zot, id: u64, method: &str, params: Value) -> Value {
    z.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
    let line = z.wait_line(&format!("answer {id}"), |l| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| v["id"] == id && v.get("method").is_none())
    });
    serde_json::from_str(&line).unwrap()
}

#[test]
fn zot_mcp_runs_the_intercept_chain_and_events_for_mcp_tools_and_forwards_progress() {
    let t = TempDir::new("mcp-gateway");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let guard = guard_ext(t.path());
    let mut z = mcp_frontend(&t, &cfg, &[guard]);
    rpc(&mut z, 1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}));
    z.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let tools = rpc(&mut z, 2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"mcp__fx__echo"), "{names:?}");
    let r = rpc(&mut z, 3, "tools/call", json!({"name": "mcp__fx__echo", "arguments": {"text": "x"}}));
    assert_eq!(r["result"]["content"][0]["text"], r#"{"guarded": true, "text": "x"}"#, "modified_args reach the server: {r}");
    let r = rpc(&mut z, 4, "tools/call", json!({"name": "mcp__fx__crash", "arguments": {}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("no crashing"), "{r}");
    let r = rpc(&mut z, 5, "tools/call", json!({"name": "mcp__fx__progress", "arguments": {}, "_meta": {"progressToken": "tok"}}));
    assert_eq!(r["result"]["content"][0]["text"], "done");
    let progress: Vec<Value> = z
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", z.seen);
    assert_eq!(progress[0]["params"], json!({"progressToken": "tok", "progress": 1, "total": 3, "message": "step 1"}));
    // A server's new tool reaches the client as its own list_changed.
    rpc(&mut z, 6, "tools/call", json!({"name": "mcp__fx__add", "arguments": {"name": "newt"}}));
    z.wait_line("list_changed", |l| l.contains("notifications/tools/list_changed"));
    let tools = rpc(&mut z, 7, "tools/list", json!({}));
    assert!(tools["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__fx__newt"), "{tools}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    let glog = std::fs::read_to_string(t.path().join("zot-home/logs/ext-guard.log")).unwrap();
    assert!(glog.contains("event tool_call mcp__fx__echo"), "{glog}");
    assert!(glog.contains(r#"event tool_call mcp__fx__echo  {"guarded": true, "text": "x"}"#), "{glog}");
    assert!(
        glog.contains(r#"event tool_result mcp__fx__echo completed {"guarded": true, "text": "x"}"#),
        "the tool_result event names the arguments the server got: {glog}"
    );
    assert!(glog.contains("event tool_result mcp__fx__crash blocked {}"), "{glog}");
    let flog = std::fs::read_to_string(t.path().join("zot-home/logs/mcp-fx.log")).unwrap();
    assert!(!flog.contains("\"name\": \"crash\""), "a blocked call never reaches the server: {flog}");
}

#[test]
fn zot_mcp_re_exports_a_server_to_the_official_python_client() {
    let py = root().join("target/mcp-venv/bin/python");
    let has_sdk = std::process::Command::new(&py).args(["-c", "import mcp"]).status().is_ok_and(|s| s.success());
    if !has_sdk {
        return skip("no MCP Python SDK in target/mcp-venv (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp)");
    }
    let t = TempDir::new("mcp-sdk-gateway");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let out = std::process::Command::new(&py)
        .arg(root().join("tests/mcp/gateway_client.py"))
        .args(["--", zot_proc::BIN, "mcp", "--no-ext", "--cwd"])
        .arg(cwd_of(&t))
        .args(FAST)
        .args(SLOW_START)
        .arg("--mcp-config")
        .arg(&cfg)
        .env("ZOT_HOME", t.path().join("zot-home"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let echo = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__fx__echo").cloned().unwrap();
    assert_eq!((echo["title"].as_str(), echo["annotations"]["readOnlyHint"].as_bool()), (Some("Echo"), Some(true)), "{echo}");
    assert_eq!(v["echo"]["content"][0]["text"], r#"{"text": "via the gateway"}"#);
    assert_eq!(v["structured"]["structuredContent"], json!({"n": 7}));
    assert_eq!(v["progress"]["content"][0]["text"], "done");
    assert_eq!(v["updates"].as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(v["updates"][2], json!({"progress": 3.0, "total": 3.0, "message": "step 3"}));
}

// ----- real servers ------------------------------------------------------------

fn skip(why: &str) {
    common::skip(why)
}

#[test]
fn real_server_filesystem_lists_a_folder_and_reads_a_file() {
    let bin = Some(root().join("target/mcp-node/node_modules/.bin/mcp-server-filesystem")).filter(|p| p.exists());
    let Some(bin) = bin else {
        return skip("@modelcontextprotocol/server-filesystem is not installed (npm install --prefix target/mcp-node @modelcontextprotocol/server-filesystem)");
    };
    let t = TempDir::new("mcp-realfs");
    let data = t.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("hello.txt"), "hello from the file\n").unwrap();
    let cfg = write_config(t.path(), "mcp.json", json!({"fs": {"command": bin.display().to_string(), "args": [data.display().to_string()]}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--ready-grace", "20"]);
    s.note("ready");
    let e = s.wait_state("fs", "ready");
    assert_eq!(e["kind"], "mcp");
    let tools = e["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__fs__list_directory")) && tools.contains(&json!("mcp__fs__read_text_file")), "{e}");
    let r = s.tool("mcp__fs__list_directory", json!({"path": data.display().to_string()}));
    assert!(text(&r).contains("hello.txt"), "{r}");
    let r = s.tool("mcp__fs__read_text_file", json!({"path": data.join("hello.txt").display().to_string()}));
    assert!(text(&r).contains("hello from the file"), "{r}");
    // A legacy server under auto: one process, one handshake (PROTOCOL.md
    // §8.4.3 rule 12a), listed in its era.
    assert_eq!(e["protocol_version"], "2025-11-25", "{e}");
    let log = s.log("fs");
    assert_eq!(log.matches("[zot] starting fs").count(), 1, "{log}");
    assert!(!log.contains("server/discover"), "{log}");
    s.shutdown();
}

#[test]
fn real_server_time_tells_the_time_in_utc() {
    let bin = Some(root().join("target/mcp-venv/bin/mcp-server-time")).filter(|p| p.exists());
    let Some(bin) = bin else {
        return skip("mcp-server-time is not installed (target/mcp-venv/bin/pip install mcp-server-time)");
    };
    let t = TempDir::new("mcp-realtime");
    let cfg = write_config(t.path(), "mcp.json", json!({"time": {"command": bin.display().to_string(), "args": ["--local-timezone", "UTC"]}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--ready-grace", "20"]);
    s.note("ready");
    s.wait_state("time", "ready");
    let r = s.tool("mcp__time__get_current_time", json!({"timezone": "UTC"}));
    assert_eq!(r["is_error"], false, "{r}");
    let v: Value = serde_json::from_str(&text(&r)).unwrap_or(Value::Null);
    assert_eq!(v["timezone"], "UTC", "{r}");
    let year = v["datetime"].as_str().unwrap_or("")[..4].parse::<u32>().unwrap_or(0);
    assert!(year >= 2024, "{r}");
    let log = s.log("time");
    assert_eq!(log.matches("[zot] starting time").count(), 1, "one process, one handshake: {log}");
    assert!(!log.contains("server/discover"), "{log}");
    s.shutdown();
}
