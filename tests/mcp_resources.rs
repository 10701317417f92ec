//! Hosted servers' resources in every front end (docs/protocol.md §8.6),
//! with real servers: `server-everything` (static and template resources,
//! text and blob) read through serve; the fixture server for the rules
//! (the first server in load order wins a URI two list, templates route,
//! `unknown_resource`, a read cancelled or timed out at its server, a
//! server without `resources` never asked); an SDK server whose resources
//! change, reaching serve's `resources_changed`; the console's
//! `/resources` and `/read`; `zot mcp` read by the official Python SDK in
//! both eras; and `mcp-server-git` from a project's client files.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;

use common::{fixture, TempDir};
use mcp_serve::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zot_proc::{session_args, strings, Zot, FAST, LINE_WAIT};

fn skip(why: &str) {
    common::skip(why)
}

fn sdk_python() -> Option<PathBuf> {
    let py = root().join("target/mcp-venv/bin/python");
    let ok = Command::new(&py).args(["-c", "import mcp"]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        skip("no MCP Python SDK in target/mcp-venv (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp)");
        return None;
    }
    Some(py)
}

/// The fixture server offering resources that name `name`.
fn fx_resources(name: &str, more: Value) -> Value {
    fx(&["--resources", name], more)
}

fn sdk_server(py: &Path) -> Value {
    json!({"command": py.display().to_string(), "args": [fixture("sdk_resources.py").display().to_string()]})
}

fn uris(l: &Value) -> Vec<(String, String)> {
    let pair = |r: &Value| (r["server"].as_str().unwrap_or("").to_string(), r["uri"].as_str().unwrap_or("").to_string());
    l["resources"].as_array().map(|a| a.iter().map(pair).collect()).unwrap_or_default()
}

fn only_text(r: &Value) -> String {
    assert_eq!(r["contents"].as_array().map(Vec::len), Some(1), "{r}");
    r["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {r}")).to_string()
}

fn error_of(r: &Value) -> (String, String) {
    assert_eq!(r["ok"], false, "{r}");
    (r["error"]["code"].as_str().unwrap_or("").into(), r["error"]["message"].as_str().unwrap_or("").into())
}

/// The servers' names in load order, as `list` gives them.
fn load_order(s: &mut Serve) -> Vec<String> {
    let l = s.ok("list", json!({}));
    l["extensions"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn server_everythings_resources_are_listed_and_read_through_serve_text_blob_and_template() {
    let Some(bin) = Some(root().join("target/mcp-node/node_modules/.bin/mcp-server-everything")).filter(|p| p.exists()) else {
        return skip("@modelcontextprotocol/server-everything is not installed (npm install --prefix target/mcp-node @modelcontextprotocol/server-everything)");
    };
    let t = TempDir::new("res-everything");
    let cfg = write_config(t.path(), "mcp.json", json!({"every": {"command": bin.display().to_string(), "args": ["stdio"]}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("every", "ready");
    let l = s.ok("resources", json!({}));
    let doc = l["resources"].as_array().unwrap().iter().find(|r| r["uri"] == "demo://resource/static/document/architecture.md").cloned();
    let doc = doc.unwrap_or_else(|| panic!("no static document in {l}"));
    assert_eq!((doc["server"].as_str(), doc["name"].as_str(), doc["mime_type"].as_str()), (Some("every"), Some("architecture.md"), Some("text/markdown")), "{doc}");
    let templates: Vec<&str> = l["templates"].as_array().unwrap().iter().filter_map(|t| t["uri_template"].as_str()).collect();
    assert!(templates.contains(&"demo://resource/dynamic/text/{resourceId}") && templates.contains(&"demo://resource/dynamic/blob/{resourceId}"), "{l}");
    assert!(l["templates"].as_array().unwrap().iter().all(|t| t["server"] == "every"), "{l}");

    // A listed resource: its text.
    let r = s.ok("read_resource", json!({"uri": "demo://resource/static/document/architecture.md"}));
    assert_eq!(r["server"], "every");
    assert!(only_text(&r).contains("Architecture"), "{r}");
    assert_eq!(r["contents"][0]["uri"], "demo://resource/static/document/architecture.md");
    // Through a template: text, and a blob (base64 as the server gave it).
    let r = s.ok("read_resource", json!({"uri": "demo://resource/dynamic/text/2"}));
    assert!(only_text(&r).starts_with("Resource 2:"), "{r}");
    let r = s.ok("read_resource", json!({"uri": "demo://resource/dynamic/blob/3"}));
    let blob = r["contents"][0]["blob"].as_str().unwrap_or_else(|| panic!("no blob in {r}"));
    let decoded = Command::new("base64").arg("-d").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
        use std::io::Write;
        c.stdin.take().unwrap().write_all(blob.as_bytes())?;
        c.wait_with_output()
    });
    let decoded = String::from_utf8_lossy(&decoded.unwrap().stdout).into_owned();
    assert!(decoded.starts_with("Resource 3:"), "{decoded:?} from {r}");
    assert!(r["contents"][0].get("text").is_none(), "{r}");

    assert_eq!(error_of(&s.req("read_resource", json!({"uri": "nowhere://x"}))).0, "unknown_resource");
    s.shutdown();
}

#[test]
fn the_first_server_in_load_order_wins_a_uri_templates_route_and_a_server_without_resources_is_never_asked() {
    let t = TempDir::new("res-rules");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({"a1": fx_resources("a1", json!({})), "b2": fx_resources("b2", json!({})), "c3": fx(&[], json!({}))}),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    for n in ["a1", "b2", "c3"] {
        s.wait_state(n, "ready");
    }
    let order: Vec<String> = load_order(&mut s).into_iter().filter(|n| n == "a1" || n == "b2").collect();
    let (first, second) = (order[0].clone(), order[1].clone());

    let l = s.ok("resources", json!({}));
    let listed = uris(&l);
    let shared: Vec<&(String, String)> = listed.iter().filter(|(_, u)| u == "fx://shared").collect();
    assert_eq!(shared, [&(first.clone(), "fx://shared".to_string())], "listed once, by the first: {l}");
    for n in ["a1", "b2"] {
        assert!(listed.contains(&(n.to_string(), format!("fx://{n}/static"))), "{l}");
    }
    assert!(!listed.iter().any(|(srv, _)| srv == "c3"), "{l}");
    let templates: Vec<(&str, &str)> =
        l["templates"].as_array().unwrap().iter().map(|t| (t["server"].as_str().unwrap(), t["uri_template"].as_str().unwrap())).collect();
    assert!(templates.contains(&("b2", "fx://b2/item/{id}")) && templates.contains(&("a1", "fx://any/{id}")), "{l}");

    // Listed by both: the first answers; the other's log says so.
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://shared"}))), format!("{first} read fx://shared"));
    s.wait_log(&second, &format!("resource \"fx://shared\" is also listed by {first}, earlier in load order, which answers it"));
    // Each server's own URI goes to it, listed or through its template.
    let r = s.ok("read_resource", json!({"uri": "fx://b2/static"}));
    assert_eq!((r["server"].as_str(), only_text(&r).as_str()), (Some("b2"), "b2 read fx://b2/static"));
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://b2/item/9"}))), "b2 read fx://b2/item/9");
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://a1/item/x%20y"}))), "a1 read fx://a1/item/x%20y");
    // A template both have: the first in load order.
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://any/5"}))), format!("{first} read fx://any/5"));
    // Not a level 1 expansion (a slash in the value), listed by nobody.
    let (code, msg) = error_of(&s.req("read_resource", json!({"uri": "fx://any/5/6"})));
    assert_eq!((code.as_str(), msg.as_str()), ("unknown_resource", "no server offers resource \"fx://any/5/6\""));
    // The server's own refusal is unknown_resource too, naming it.
    let (code, msg) = error_of(&s.req("read_resource", json!({"uri": "fx://a1/item/"})));
    assert_eq!((code.as_str(), msg.as_str()), ("unknown_resource", "server \"a1\" could not read resource \"fx://a1/item/\": no item in fx://a1/item/"));
    let (code, msg) = error_of(&s.req("read_resource", json!({})));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "missing param `uri`"));
    let (code, msg) = error_of(&s.req("read_resource", json!({"uri": 5})));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "param `uri` must be a string"));

    // c3 declared no resources: it was asked for tools, never for resources.
    let log = s.log("c3");
    assert!(log.contains("fixture: got tools/list"), "{log}");
    assert!(!log.contains("resources/"), "{log}");
    let log = s.log("a1");
    assert!(log.contains("fixture: got resources/list") && log.contains("fixture: got resources/templates/list"), "{log}");
    s.shutdown();
}

#[test]
fn a_read_is_cancelled_at_its_server_and_times_out_under_its_request_timeout() {
    let t = TempDir::new("res-cancel");
    let cfg = write_config(t.path(), "mcp.json", json!({"slow": fx_resources("slow", json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("slow", "ready");
    s.z.send(&json!({"id": "r1", "type": "read_resource", "uri": "fx://slow"}).to_string());
    s.wait_log("slow", "fixture: got resources/read");
    s.z.send(&json!({"id": "c1", "type": "cancel", "target": "r1"}).to_string());
    let c = s.wait("cancel response", |f| f["id"] == "c1");
    assert_eq!(c["result"], json!({"cancelled": true}), "{c}");
    let pos = |s: &Serve, id: &str| s.frames.iter().position(|f| f["type"] == "response" && f["id"] == id);
    let r = s.frames[pos(&s, "r1").expect("the read is answered")].clone();
    let (code, msg) = error_of(&r);
    assert_eq!(code, "cancelled", "{msg}");
    assert!(pos(&s, "r1") < pos(&s, "c1"), "the read's answer comes before the cancel's");
    // The server heard of it: it ended the read when told.
    s.wait_log("slow", "fixture: cancelled read");
    assert_eq!(s.ok("cancel", json!({"target": "r1"})), json!({"cancelled": false}));
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://slow/static"}))), "slow read fx://slow/static");
    s.shutdown();

    // Under the server's own requestTimeout: `timeout`, and the server told.
    let t = TempDir::new("res-timeout");
    let cfg = write_config(t.path(), "mcp.json", json!({"late": fx_resources("late", json!({"requestTimeout": 1}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("late", "ready");
    let (code, msg) = error_of(&s.req("read_resource", json!({"uri": "fx://slow"})));
    assert_eq!(code, "timeout", "{msg}");
    assert!(msg.contains("resource read fx://slow") && msg.contains("within 1s"), "{msg}");
    s.wait_log("late", "fixture: cancelled read");
    s.shutdown();
}

#[test]
fn a_relisting_after_list_changed_replaces_the_list_and_one_that_fails_keeps_it() {
    let t = TempDir::new("res-relist");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx_resources("fx", json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("fx", "ready");
    assert_eq!(text(&s.tool("mcp__fx__add", json!({"resource": "fx://new"}))), "added resource");
    assert_eq!(s.note("resources_changed"), json!({"type": "resources_changed", "extension": "fx"}));
    let before = s.ok("resources", json!({}));
    assert!(uris(&before).contains(&("fx".into(), "fx://new".into())), "{before}");
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://new"}))), "fx read fx://new");
    // From now on its listing never ends: the relisting fails, the list stays.
    assert_eq!(text(&s.tool("mcp__fx__add", json!({"resource": "!loop"}))), "added resource");
    s.wait_log("fx", "resources/list did not end: the cursor \"again\" came again; the previous list stays in force");
    assert_eq!(s.ok("resources", json!({})), before);
    assert_eq!(s.ext("fx")["state"], "ready");
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "fx://new"}))), "fx read fx://new");
    assert_eq!(s.frames.iter().filter(|f| f["type"] == "resources_changed").count(), 1, "{:?}", s.frames);
    s.shutdown();
}

#[test]
fn an_sdk_servers_new_resource_reaches_serve_as_resources_changed() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("res-sdk-serve");
    let cfg = write_config(t.path(), "mcp.json", json!({"sdk": sdk_server(&py)}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("sdk", "ready");
    let l = s.ok("resources", json!({}));
    assert_eq!(uris(&l), [("sdk".to_string(), "sdk://static/hello".to_string()), ("sdk".into(), "sdk://static/bytes".into())], "{l}");
    assert_eq!(l["resources"][0]["title"], "Hello");
    assert_eq!(l["templates"], json!([{"server": "sdk", "uri_template": "sdk://item/{id}", "name": "item", "mime_type": "text/plain"}]));
    let r = s.ok("read_resource", json!({"uri": "sdk://static/bytes"}));
    assert_eq!(r["contents"], json!([{"uri": "sdk://static/bytes", "mime_type": "application/octet-stream", "blob": "AAECA/8="}]));
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "sdk://item/42"}))), "item 42");
    // Nothing changed yet: no resources_changed so far.
    assert!(!s.frames.iter().any(|f| f["type"] == "resources_changed"), "{:?}", s.frames);

    assert_eq!(text(&s.tool("mcp__sdk__add_resource", json!({"name": "x"}))), "added");
    let n = s.note("resources_changed");
    assert_eq!(n, json!({"type": "resources_changed", "extension": "sdk"}));
    // Written once the new list is in force.
    let l = s.ok("resources", json!({}));
    assert!(uris(&l).contains(&("sdk".into(), "sdk://added/x".into())), "{l}");
    assert_eq!(only_text(&s.ok("read_resource", json!({"uri": "sdk://added/x"}))), "added x");
    s.shutdown();
}

/// Runs tests/mcp/resources_client.py in `mode` against `zot mcp` hosting
/// the SDK server and the fixture; its transcript.
fn sdk_client(py: &Path, mode: &str) -> Option<Value> {
    let t = TempDir::new(&format!("res-sdk-{mode}"));
    let cfg = write_config(t.path(), "mcp.json", json!({"sdk": sdk_server(py), "fx": fx_resources("fx", json!({}))}));
    let home = t.path().join("zot-home");
    let out = Command::new(py)
        .arg(root().join("tests/mcp/resources_client.py"))
        .args([mode, &home.join("logs/mcp-fx.log").display().to_string(), "--", zot_proc::BIN, "mcp", "--no-ext", "--cwd"])
        .arg(cwd_of(&t))
        .args(FAST)
        .args(SLOW_START)
        .arg("--mcp-config")
        .arg(&cfg)
        .env("ZOT_HOME", &home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() == Some(3) {
        skip(&format!("the mcp package cannot be imported: {stderr}"));
        return None;
    }
    assert!(out.status.success(), "{stdout}\n{stderr}");
    Some(serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}")))
}

fn step<'a>(t: &'a Value, name: &str) -> &'a Value {
    let s = t["steps"].as_array().and_then(|s| s.iter().find(|s| s["step"] == name));
    s.unwrap_or_else(|| panic!("no step {name:?} in {t:#}"))
}

#[test]
fn zot_mcp_serves_resources_to_the_python_sdk_in_both_eras() {
    let Some(py) = sdk_python() else { return };
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let Some(tr) = sdk_client(&py, mode) else { return };
        assert_eq!(tr["protocol_version"], version, "{tr:#}");
        let listed: Vec<&str> =
            step(&tr, "list_resources")["result"]["resources"].as_array().unwrap().iter().filter_map(|r| r["uri"].as_str()).collect();
        assert!(listed.contains(&"sdk://static/hello") && listed.contains(&"fx://shared"), "{mode}: {listed:?}");
        let templates = &step(&tr, "list_resource_templates")["result"]["resourceTemplates"];
        assert!(templates.as_array().unwrap().iter().any(|t| t["uriTemplate"] == "sdk://item/{id}"), "{mode}: {templates}");
        let text = &step(&tr, "read text")["result"]["contents"][0];
        assert_eq!((text["text"].as_str(), text["mimeType"].as_str()), (Some("hello from the SDK"), Some("text/plain")), "{mode}: {text}");
        assert_eq!(step(&tr, "read blob")["result"]["contents"][0]["blob"], "AAECA/8=", "{mode}");
        assert_eq!(step(&tr, "read template")["result"]["contents"][0]["text"], "item 7", "{mode}");
        assert_eq!(step(&tr, "read unknown")["error"]["code"], -32002, "{mode}: {tr:#}");
        if mode == "legacy" {
            assert_eq!(step(&tr, "list_changed")["result"], true, "{tr:#}");
        } else {
            let l = &step(&tr, "listen")["result"];
            assert_eq!(l["honoured"], json!({"resourcesListChanged": true}), "{tr:#}");
            assert_eq!(l["event"], "ResourcesListChanged", "{tr:#}");
            assert_eq!(step(&tr, "read text")["result"]["resultType"], "complete");
        }
        let added = if mode == "legacy" { "sdk://added/legacy" } else { "sdk://added/modern" };
        let after = &step(&tr, "list_resources after change")["result"]["resources"];
        assert!(after.as_array().unwrap().iter().any(|r| r["uri"] == added), "{mode}: {after}");
        // The cancelled read got no answer; the fixture ended it when told,
        // and the next read works.
        assert_eq!(step(&tr, "slow read cancelled")["result"], json!({"cancelled": true, "answer": null}), "{mode}");
        assert_eq!(step(&tr, "read after cancel")["result"]["contents"][0]["text"], "fx read fx://any/3", "{mode}");
    }
}

#[test]
fn zot_mcp_declares_resources_in_both_eras_and_refuses_per_resource_subscriptions() {
    let t = TempDir::new("res-mcp-raw");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx_resources("fx", json!({}))}));
    let mut args = strings(&["mcp", "--no-ext", "--mcp-config"]);
    args.push(cfg.display().to_string());
    args.extend(strings(&FAST));
    let rpc = |z: &mut Zot, id: u64, method: &str, params: Value| -> Value {
        z.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        let line = z.wait_line(&format!("answer {id}"), |l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["id"] == id));
        serde_json::from_str(&line).unwrap()
    };
    let mut z = Zot::spawn(t.path(), &args, &[]);
    let init = rpc(&mut z, 1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}));
    assert_eq!(init["result"]["capabilities"]["resources"], json!({"listChanged": true}), "{init}");
    let r = rpc(&mut z, 2, "resources/read", json!({"uri": "fx://fx/static"}));
    assert_eq!(r["result"]["contents"], json!([{"uri": "fx://fx/static", "mimeType": "text/plain", "text": "fx read fx://fx/static"}]), "{r}");
    assert_eq!(rpc(&mut z, 3, "resources/read", json!({}))["error"]["code"], -32602);
    drop(z);

    let envelope = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let mut z = Zot::spawn(t.path(), &args, &[]);
    let d = rpc(&mut z, 1, "server/discover", json!({"_meta": envelope}));
    assert_eq!(d["result"]["capabilities"]["resources"], json!({"listChanged": true}), "{d}");
    for (id, method) in [(2, "resources/subscribe"), (3, "resources/unsubscribe")] {
        let r = rpc(&mut z, id, method, json!({"uri": "fx://shared", "_meta": envelope}));
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    let l = rpc(&mut z, 4, "resources/list", json!({"_meta": envelope}));
    assert_eq!(l["result"]["resultType"], "complete", "{l}");
    assert_eq!(l["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "zot", "{l}");
    assert!(l["result"]["resources"].as_array().unwrap().iter().any(|r| r["uri"] == "fx://shared"), "{l}");
    let l = rpc(&mut z, 5, "resources/templates/list", json!({"_meta": envelope}));
    assert!(l["result"]["resourceTemplates"].as_array().unwrap().iter().any(|r| r["uriTemplate"] == "fx://any/{id}"), "{l}");
}

#[test]
fn the_console_lists_resources_reads_text_and_describes_a_blob() {
    let t = TempDir::new("res-console");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx_resources("fx", json!({}))}));
    let mut extra = strings(&["--mcp-config", &cfg.display().to_string()]);
    extra.extend(strings(&SLOW_START));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut z = Zot::spawn(t.path(), &session_args(t.path(), None, &[], &extra), &[]);
    z.send("/resources");
    z.send("/read fx://fx/static");
    z.send("/read fx://blob");
    z.send("/read fx://nope");
    z.send("/read");
    z.send("/help");
    z.close_stdin();
    z.read_to_end(LINE_WAIT);
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    let out = String::from_utf8(z.raw_stdout()).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| *l == "[fx]").unwrap_or_else(|| panic!("no [fx] heading:\n{out}"));
    assert_eq!(lines[at + 1], "  fx://shared  shared, text/plain", "{out}");
    assert!(lines.contains(&"  fx://any/{id}  fx://any/{id}, template"), "{out}");
    assert!(lines.contains(&"[fx] fx read fx://fx/static"), "{out}");
    assert!(lines.contains(&"[fx] [blob fx://blob: application/octet-stream, 4 bytes]"), "{out}");
    assert!(!out.contains("AAECAw=="), "a blob is never printed:\n{out}");
    assert!(lines.contains(&"error: no server offers resource \"fx://nope\""), "{out}");
    assert!(lines.contains(&"error: usage: /read URI"), "{out}");
    assert!(out.contains("/resources") && lines.iter().any(|l| l.trim_start().starts_with("/read URI")), "{out}");
}

#[test]
fn mcp_server_git_runs_from_a_projects_client_files_and_lists_no_resources_without_failing() {
    let bin = root().join("target/mcp-venv/bin/mcp-server-git");
    if !bin.exists() {
        return skip("mcp-server-git is not installed (target/mcp-venv/bin/pip install mcp-server-git)");
    }
    let t = TempDir::new("res-git");
    let cwd = cwd_of(&t);
    let git = |args: &[&str]| {
        let ok = Command::new("git").args(args).current_dir(&cwd).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"]);
    let b = bin.display().to_string();
    // Claude Code's file, and VS Code's (`servers`, `${workspaceFolder}`).
    write_config(&cwd, ".mcp.json", json!({"git": {"command": b, "args": ["--repository", "."]}}));
    std::fs::create_dir_all(cwd.join(".vscode")).unwrap();
    let vs = format!("{{\n  // VS Code's\n  \"servers\": {{\"vgit\": {{\"type\": \"stdio\", \"command\": {b:?}, \"args\": [\"--repository\", \"${{workspaceFolder}}\"],}}}},\n}}\n");
    std::fs::write(cwd.join(".vscode/mcp.json"), vs).unwrap();
    let d = std::fs::canonicalize(&cwd).unwrap().display().to_string();
    let (code, _, err) = zot(&t, &["trust", &d]);
    assert_eq!(code, 0, "{err}");

    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    for name in ["git", "vgit"] {
        let e = s.wait_state(name, "ready");
        assert!(e["tools"].as_array().unwrap().contains(&json!(format!("mcp__{name}__git_status"))), "{e}");
        let r = s.tool(&format!("mcp__{name}__git_log"), json!({"repo_path": d}));
        assert!(text(&r).contains("first"), "{r}");
    }
    // It declares resources and lists none: asked, nothing offered, nothing failed.
    let l = s.ok("resources", json!({}));
    assert_eq!(l, json!({"resources": [], "templates": []}));
    let log = s.log("git");
    assert!(!log.contains("failed"), "{log}");
    assert_eq!(error_of(&s.req("read_resource", json!({"uri": "git://x"}))).0, "unknown_resource");
    s.shutdown();
}
