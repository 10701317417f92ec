//! Hosted MCP servers of both eras (docs/protocol.md §8.4.3): a server of
//! 2026-07-28 alone written with the official Python SDK (its `Server`
//! serves both eras; a middleware refuses `initialize`), the same server
//! dual-era (legacy under `auto`, modern when pinned), a raw legacy server
//! that exits on any first frame but `initialize`, the `protocol` field,
//! and listings bounded against an endless `nextCursor` (§8.2) — through
//! `zot serve --mcp-config`, `zot mcp --mcp-config` and the console.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zot_proc::{strings, Zot, FAST, LINE_WAIT};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with the SDK 2.3 in it, or None (said) when there is none.
fn sdk_python() -> Option<PathBuf> {
    let py = std::env::var_os("ZOT_MCP_PYTHON").map(PathBuf::from).unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    let ok = Command::new(&py).args(["-c", "import mcp.server.mcpserver, mcp.client._probe"]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIP: no MCP Python SDK 2.3 at {} (the SDK-built servers need it)", py.display());
        return None;
    }
    Some(py)
}

/// An entry running tests/mcp/era_server.py with `py`, each start counted in `starts`.
fn sdk_server(py: &Path, modern_only: bool, starts: &Path, more: Value) -> Value {
    let mut args = vec![root().join("tests/mcp/era_server.py").display().to_string()];
    if modern_only {
        args.push("--modern-only".into());
    }
    let mut e = json!({"command": py.display().to_string(), "args": args, "env": {"ERA_STARTS": starts.display().to_string()}});
    for (k, v) in more.as_object().cloned().unwrap_or_default() {
        e[k] = v;
    }
    e
}

/// An entry running tests/mcp/legacy_strict.py.
fn strict_server(starts: &Path, more: Value) -> Value {
    let args = [root().join("tests/mcp/legacy_strict.py").display().to_string()];
    let mut e = json!({"command": "python3", "args": args, "env": {"ERA_STARTS": starts.display().to_string()}, "restart": "on-failure"});
    for (k, v) in more.as_object().cloned().unwrap_or_default() {
        e[k] = v;
    }
    e
}

fn write_config(dir: &Path, servers: Value) -> PathBuf {
    let p = dir.join("mcp.json");
    std::fs::write(&p, json!({ "mcpServers": servers }).to_string()).unwrap();
    p
}

fn starts(p: &Path) -> usize {
    std::fs::read_to_string(p).map(|s| s.lines().count()).unwrap_or(0)
}

const SLOW: [&str; 4] = ["--ready-grace", "90", "--tool-timeout", "60"];

/// `zot serve` with `config`.
struct Serve {
    z: Zot,
    frames: Vec<Value>,
    next: u64,
}

impl Serve {
    fn start(t: &TempDir, config: &Path) -> Serve {
        let mut args = strings(&["serve", "--no-ext"]);
        args.extend(strings(&FAST));
        args.extend(strings(&SLOW));
        args.extend(["--mcp-config".to_string(), config.display().to_string()]);
        Serve { z: Zot::spawn(t.path(), &args, &[]), frames: Vec::new(), next: 0 }
    }

    fn wait(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(f) = self.frames.iter().find(|f| pred(f)) {
            return f.clone();
        }
        loop {
            let line = self.z.next_line(LINE_WAIT * 3).unwrap_or_else(|| panic!("no frame {what}\n{}", self.z.context()));
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            self.frames.push(v.clone());
            if pred(&v) {
                return v;
            }
        }
    }

    fn req(&mut self, ty: &str, mut params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        params["id"] = json!(id.to_string());
        params["type"] = json!(ty);
        self.z.send(&params.to_string());
        self.wait(&format!("response {id}"), |f| f["type"] == "response" && f["id"] == json!(id.to_string()))
    }

    fn ext(&mut self, name: &str) -> Value {
        let l = self.req("list", json!({}));
        l["result"]["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == name).cloned()).unwrap_or(Value::Null)
    }

    /// Polls the listing until `name` is in a state other than starting.
    fn settled(&mut self, name: &str) -> Value {
        let end = Instant::now() + LINE_WAIT * 3;
        loop {
            let e = self.ext(name);
            if e["state"] != "starting" && !e.is_null() {
                return e;
            }
            assert!(Instant::now() < end, "{name} never settled: {e}\n{}", self.z.context());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.z.zot_home.join("logs").join(format!("mcp-{name}.log"))).unwrap_or_default()
    }

    fn shutdown(&mut self) {
        self.req("shutdown", json!({}));
        assert_eq!(self.z.exit_code(LINE_WAIT), 0, "{}", self.z.context());
    }
}

#[test]
fn auto_hosts_a_modern_only_server_after_one_refused_initialize_and_no_try_is_a_crash() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("era-host-modern");
    let n = t.path().join("modern.starts");
    let cfg = write_config(t.path(), json!({"modern": sdk_server(&py, true, &n, json!({}))}));
    let mut s = Serve::start(&t, &cfg);
    let e = s.settled("modern");
    assert_eq!(e["state"], "ready", "{e}\n{}", s.log("modern"));
    assert_eq!(e["protocol_version"], "2026-07-28", "{e}");
    assert_eq!(e["server_info"]["name"], "era-fixture", "{e}");
    assert_eq!(e["restarts"], 0, "{e}");
    assert_eq!(starts(&n), 2, "one initialize try, one modern try in a fresh process");
    let r = s.req("tool", json!({"name": "mcp__modern__hi", "args": {"name": "zot"}}));
    assert_eq!(r["result"]["content"][0]["text"], "hi zot", "{r}");
    let r = s.req("tool", json!({"name": "mcp__modern__oops", "args": {}}));
    assert_eq!(r["result"]["is_error"], true, "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap_or("").contains("oops"), "{r}");
    // Neither try was a crash: no exit, restart or error was announced.
    for f in &s.frames {
        let about_it = f["extension"] == "modern";
        assert!(!(about_it && ["extension_exited", "extension_restarting", "extension_error", "extension_crash_loop"].contains(&f["type"].as_str().unwrap_or(""))), "{f}");
    }
    let log = s.log("modern");
    assert_eq!(log.matches("[zot] handshake: trying").count(), 2, "one log line per try: {log}");
    assert!(log.contains("[zot] handshake: trying 2025-11-25 (initialize)") && log.contains("[zot] handshake: trying 2026-07-28 (server/discover)"), "{log}");
    // The era is kept for the entry: a restart handshakes in it at once.
    let r = s.req("restart", json!({"name": "modern"}));
    assert_eq!(r["ok"], true, "{r}");
    let e = s.settled("modern");
    assert_eq!((e["state"].clone(), e["protocol_version"].clone()), (json!("ready"), json!("2026-07-28")), "{e}");
    assert_eq!(starts(&n), 3, "the restart tried the era found first, alone");
    s.shutdown();
}

#[test]
fn a_dual_era_server_stays_legacy_under_auto_and_is_modern_when_pinned() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("era-host-dual");
    let (a, m) = (t.path().join("auto.starts"), t.path().join("pinned.starts"));
    let cfg = write_config(
        t.path(),
        json!({
            "auto": sdk_server(&py, false, &a, json!({})),
            "pinned": sdk_server(&py, false, &m, json!({"protocol": "2026-07-28"})),
            "old": sdk_server(&py, false, &m, json!({"protocol": "2025-11-25", "disabled": true})),
        }),
    );
    let mut s = Serve::start(&t, &cfg);
    let e = s.settled("auto");
    assert_eq!((e["state"].clone(), e["protocol_version"].clone()), (json!("ready"), json!("2025-11-25")), "{e}");
    let e = s.settled("pinned");
    assert_eq!((e["state"].clone(), e["protocol_version"].clone()), (json!("ready"), json!("2026-07-28")), "{e}");
    assert_eq!(e["server_info"]["name"], "era-fixture");
    assert_eq!((starts(&a), starts(&m)), (1, 1), "one process each");
    let r = s.req("tool", json!({"name": "mcp__pinned__hi", "args": {}}));
    assert_eq!(r["result"]["content"][0]["text"], "hi you", "{r}");
    let r = s.req("tool", json!({"name": "mcp__auto__hi", "args": {}}));
    assert_eq!(r["result"]["content"][0]["text"], "hi you", "{r}");
    assert!(!s.log("auto").contains("server/discover"), "{}", s.log("auto"));
    s.shutdown();
}

#[test]
fn auto_never_probes_a_strict_legacy_server_and_pinned_modern_fails_it_once() {
    let t = TempDir::new("era-host-strict");
    let (a, m) = (t.path().join("auto.starts"), t.path().join("pinned.starts"));
    let cfg = write_config(
        t.path(),
        json!({
            "strict": strict_server(&a, json!({})),
            "pinned": strict_server(&m, json!({"protocol": "2026-07-28"})),
            "odd": {"command": "python3", "protocol": "2025-06-18"},
        }),
    );
    let mut s = Serve::start(&t, &cfg);
    let e = s.settled("strict");
    assert_eq!((e["state"].clone(), e["protocol_version"].clone()), (json!("ready"), json!("2025-06-18")), "{e}");
    let r = s.req("tool", json!({"name": "mcp__strict__ping_me", "args": {}}));
    assert_eq!(r["result"]["content"][0]["text"], "pong", "{r}");
    assert!(!s.log("strict").contains("strict: got server/discover"), "{}", s.log("strict"));
    let e = s.settled("pinned");
    assert_eq!(e["state"], "failed", "{e}");
    assert_eq!(e["restarts"], 0, "{e}");
    assert!(e["error"].as_str().unwrap_or("").starts_with("exited before answering server/discover (exit code 1)"), "{e}");
    let e = s.ext("odd");
    assert_eq!(e["state"], "failed");
    assert_eq!(e["error"], "protocol \"2025-06-18\" is not supported (auto, 2026-07-28, 2025-11-25)");
    assert_eq!(e["pid"], Value::Null, "nothing is spawned");
    // Still failed, never restarted, spawned once: a try is not a crash.
    let e = s.ext("pinned");
    assert_eq!((e["state"].clone(), e["restarts"].clone()), (json!("failed"), json!(0)), "{e}");
    assert_eq!((starts(&a), starts(&m)), (1, 1));
    assert!(!s.frames.iter().any(|f| f["extension"] == "pinned" && f["type"] == "extension_restarting"));
    s.shutdown();
}

#[test]
fn zot_mcp_serves_tools_of_hosted_servers_of_both_eras() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("era-host-gateway");
    let (a, b) = (t.path().join("a.starts"), t.path().join("b.starts"));
    let cfg = write_config(t.path(), json!({"modern": sdk_server(&py, true, &a, json!({})), "strict": strict_server(&b, json!({}))}));
    let mut args = strings(&["mcp", "--no-ext"]);
    args.extend(strings(&FAST));
    args.extend(strings(&SLOW));
    args.extend(["--mcp-config".to_string(), cfg.display().to_string()]);
    let mut z = Zot::spawn(t.path(), &args, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
    z.send(&init.to_string());
    z.wait_line("initialize answered", |l| l.contains("\"id\":1"));
    let call = |z: &mut Zot, id: u64, name: &str| {
        let c = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
        z.send(&c.to_string());
        let line = z.wait_line("the call's answer", |l| l.contains(&format!("\"id\":{id}")));
        serde_json::from_str::<Value>(&line).unwrap_or(Value::Null)
    };
    let r = call(&mut z, 2, "mcp__modern__hi");
    assert_eq!(r["result"]["content"][0]["text"], "hi you", "{r}");
    let r = call(&mut z, 3, "mcp__strict__ping_me");
    assert_eq!(r["result"]["content"][0]["text"], "pong", "{r}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    assert_eq!((starts(&a), starts(&b)), (2, 1));
}

#[test]
fn the_console_lists_each_servers_era() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("era-host-console");
    let (a, b) = (t.path().join("a.starts"), t.path().join("b.starts"));
    let cfg = write_config(t.path(), json!({"modern": sdk_server(&py, true, &a, json!({})), "strict": strict_server(&b, json!({}))}));
    let home = t.path().join("zot-home");
    let mut extra = vec!["--mcp-config", cfg.to_str().unwrap()];
    extra.extend(SLOW);
    let args = zot_proc::session_args(t.path(), None, &[], &extra);
    let mut z = Zot::spawn(t.path(), &args, &[]);
    let ok = common::wait_until(LINE_WAIT * 3, || starts(&a) == 2 && std::fs::read_to_string(home.join("logs/mcp-modern.log")).unwrap_or_default().contains("discovered: protocol 2026-07-28"));
    assert!(ok, "{}", z.context());
    z.send("/extensions");
    z.wait_line("the modern server in its era", |l| l.contains("modern") && l.contains("(MCP server 2026-07-28)"));
    z.wait_line("the legacy server in its era", |l| l.contains("strict") && l.contains("(MCP server 2025-06-18)"));
    z.close_stdin();
    z.exit_code(LINE_WAIT);
}

/// A raw server whose listing never ends: `mode` `endless` (a new cursor
/// on every page) or `repeat` (the same cursor again).
fn endless_server(dir: &Path, mode: &str, what: &str) -> Value {
    let script = dir.join(format!("endless-{mode}-{what}.py"));
    let src = format!(
        r#"import json, sys
n = 0
for line in sys.stdin:
    m = json.loads(line)
    meth, rid = m.get("method"), m.get("id")
    if rid is None:
        continue
    if meth == "initialize":
        r = {{"protocolVersion": "2025-11-25", "capabilities": {{"{what}": {{}}}}, "serverInfo": {{"name": "endless"}}}}
    elif meth == "{what}/list":
        n += 1
        cur = "c%d" % n if "{mode}" == "endless" else "same"
        item = {{"name": "t%d" % n, "inputSchema": {{"type": "object"}}}}
        r = {{"{what}": [item], "nextCursor": cur}}
    else:
        r = {{}}
    print(json.dumps({{"jsonrpc": "2.0", "id": rid, "result": r}}), flush=True)
"#
    );
    std::fs::write(&script, src).unwrap();
    json!({"command": "python3", "args": [script.display().to_string()], "restart": "never"})
}

#[test]
fn a_listing_that_never_ends_fails_that_server_within_its_bounds() {
    let t = TempDir::new("era-endless");
    let cfg = write_config(
        t.path(),
        json!({
            "pages": endless_server(t.path(), "endless", "tools"),
            "again": endless_server(t.path(), "repeat", "tools"),
            "prompts": endless_server(t.path(), "endless", "prompts"),
        }),
    );
    let mut s = Serve::start(&t, &cfg);
    let e = s.settled("pages");
    assert_eq!(e["state"], "failed", "{e}");
    assert!(e["error"].as_str().unwrap_or("").starts_with("tools/list did not end: more than 100 pages"), "{e}");
    let e = s.settled("again");
    assert!(e["error"].as_str().unwrap_or("").starts_with("tools/list did not end: the cursor \"same\" came again"), "{e}");
    let e = s.settled("prompts");
    assert!(e["error"].as_str().unwrap_or("").starts_with("prompts/list did not end: more than 100 pages"), "{e}");
    let log = s.log("pages");
    assert!(log.contains("tools/list did not end"), "logged: {log}");
    s.shutdown();
}

#[test]
fn a_slow_listing_is_bounded_by_connect_timeout() {
    let t = TempDir::new("era-slow-list");
    let script = t.path().join("slow.py");
    let src = r#"import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
    # tools/list: never answered
"#;
    std::fs::write(&script, src).unwrap();
    let cfg = write_config(t.path(), json!({"slow": {"command": "python3", "args": [script.display().to_string()], "connectTimeout": 1, "restart": "never"}}));
    let mut s = Serve::start(&t, &cfg);
    let e = s.settled("slow");
    assert_eq!(e["state"], "failed", "{e}");
    assert!(e["error"].as_str().unwrap_or("").contains("connectTimeout"), "{e}");
    s.shutdown();
}

#[test]
fn each_input_required_round_echoes_only_its_own_state_and_answers() {
    let t = TempDir::new("era-host-rounds");
    let counted = t.path().join("m.starts");
    let args = [root().join("tests/mcp/modern_raw.py").display().to_string(), "--retry".to_string()];
    let cfg = write_config(t.path(), json!({"m": {"command": "python3", "args": args, "roots": true, "env": {"ERA_STARTS": counted.display().to_string()}}}));
    let mut s = Serve::start(&t, &cfg);
    let e = s.settled("m");
    // auto: initialize refused, then server/discover in a fresh process,
    // retried once after a -32022 that names 2026-07-28.
    assert_eq!((e["state"].clone(), e["protocol_version"].clone()), (json!("ready"), json!("2026-07-28")), "{e}");
    assert_eq!(e["server_info"], json!({"name": "raw-modern", "version": "9"}), "{e}");
    assert_eq!((starts(&counted), e["restarts"].clone()), (2, json!(0)));
    let text = |r: &Value| r["result"]["content"][0]["text"].as_str().unwrap_or("").to_string();
    // One round: the roots asked for, the state echoed.
    let r = s.req("tool", json!({"name": "mcp__m__rounds", "args": {}}));
    let got: Value = serde_json::from_str(&text(&r)).unwrap_or_else(|_| panic!("{r}"));
    assert_eq!(got["requestState"], "s1", "{r}");
    assert!(got["inputResponses"]["r1"]["roots"][0]["uri"].as_str().is_some_and(|u| u.starts_with("file://")), "{r}");
    // A second round that asks nothing and keeps no state is retried with
    // neither: the first round's answers and state are not sent again.
    let r = s.req("tool", json!({"name": "mcp__m__nostate", "args": {}}));
    let got: Value = serde_json::from_str(&text(&r)).unwrap_or_else(|_| panic!("{r}"));
    assert_eq!(got, json!({"requestState": null, "inputResponses": null}), "{r}");
    let r = s.req("tool", json!({"name": "mcp__m__forever", "args": {}}));
    assert_eq!(text(&r), "too many input_required rounds", "{r}");
    let r = s.req("tool", json!({"name": "mcp__m__odd", "args": {}}));
    assert_eq!(text(&r), "unknown resultType \"weird\"", "{r}");
    let log = s.log("m");
    assert_eq!(log.matches("\"method\": \"server/discover\"").count(), 2, "{log}");
    assert_eq!(log.matches("\"method\": \"initialize\"").count(), 1, "{log}");
    s.shutdown();
}
