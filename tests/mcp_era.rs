//! `zot mcp` in MCP's 2026-07-28 era beside the handshake era
//! (docs/protocol.md §8.4.1–8.4.2), through the real binary: raw JSON-RPC lines
//! for each numbered rule, and the official Python SDK's `Client` in its
//! `auto`, pinned-modern and legacy modes.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, py_ext, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zot_proc::{spawn_mcp as spawn, Zot, BIN, LINE_WAIT};

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn echo() -> String {
    let exe = root().join("target/debug/examples/echo");
    assert!(exe.exists(), "{} is missing: run `cargo build --examples` (make test does)", exe.display());
    root().join("examples/rust/echo").display().to_string()
}

/// The modern envelope, with `more` keys.
fn env(more: Value) -> Value {
    let mut m = json!({PV: "2026-07-28", CAPS: {}, "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"}});
    if let Value::Object(o) = more {
        for (k, v) in o {
            m[k] = v;
        }
    }
    m
}

fn send(z: &mut Zot, v: Value) {
    z.send(&v.to_string());
}

fn answer(z: &mut Zot, id: &Value) -> Value {
    let line = z.wait_line(&format!("answering {id}"), |l| {
        let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
        v.get("id") == Some(id) && v.get("method").is_none()
    });
    serde_json::from_str(&line).unwrap_or(Value::Null)
}

fn rpc(z: &mut Zot, id: Value, method: &str, params: Value) -> Value {
    send(z, json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    answer(z, &id)
}

/// A modern request: `params` with the envelope (and `meta` in it).
fn modern(z: &mut Zot, id: Value, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = env(meta);
    rpc(z, id, method, params)
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error code in {v}"))
}

fn lines(z: &Zot) -> Vec<Value> {
    z.seen.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[test]
fn modern_requests_are_checked_in_order_each_failure_with_its_code() {
    let t = TempDir::new("era-checks");
    let mut z = spawn(t.path(), &[echo()], &[]);
    // The first request decides: modern.
    let r = modern(&mut z, json!(1), "tools/list", json!({}), json!({}));
    assert!(r["result"]["tools"].is_array(), "{r}");
    // a. not a valid request; a batch is one -32600 with id null.
    send(&mut z, json!({"jsonrpc": "1.0", "id": 2, "method": "tools/list", "params": {"_meta": env(json!({}))}}));
    assert_eq!(code(&answer(&mut z, &json!(2))), -32600);
    let batch = json!([{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": env(json!({}))}}]);
    send(&mut z, batch);
    let r = answer(&mut z, &Value::Null);
    assert_eq!(code(&r), -32600, "{r}");
    // b. the envelope's shape, naming the key; before c, d and e.
    let r = rpc(&mut z, json!(4), "tools/list", json!({"_meta": 7}));
    assert_eq!(code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("_meta"), "{r}");
    let r = rpc(&mut z, json!(5), "tools/list", json!({"_meta": {PV: 2026, CAPS: {}}}));
    assert_eq!(code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains(PV), "{r}");
    let r = rpc(&mut z, json!(6), "ping", json!({"_meta": {PV: "2099-01-01", CAPS: [], "io.modelcontextprotocol/logLevel": "loud"}}));
    assert_eq!(code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains(CAPS), "{r}");
    let r = rpc(&mut z, json!(7), "tools/list", json!({"_meta": {PV: "2026-07-28"}}));
    assert!(code(&r) == -32602 && r["error"]["message"].as_str().unwrap().contains(CAPS), "{r}");
    // c. another version: -32022 with supported and requested; before d and e.
    let r = modern(&mut z, json!(8), "ping", json!({}), json!({PV: "2099-01-01", "io.modelcontextprotocol/logLevel": "loud"}));
    assert_eq!(code(&r), -32022, "{r}");
    assert_eq!(r["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}));
    let r = modern(&mut z, json!(9), "tools/list", json!({}), json!({PV: "2025-11-25"}));
    assert_eq!(r["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}), "{r}");
    // d. a bad log level; before e.
    let r = modern(&mut z, json!(10), "ping", json!({}), json!({"io.modelcontextprotocol/logLevel": "loud"}));
    assert_eq!(code(&r), -32602, "{r}");
    // e. removed and unserved methods.
    for (i, m) in ["ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "completion/complete", "nope"].iter().enumerate() {
        let r = modern(&mut z, json!(20 + i), m, json!({"level": "info"}), json!({}));
        assert_eq!(code(&r), -32601, "{m}: {r}");
    }
    // f. the method's own params, and an unknown tool.
    let r = modern(&mut z, json!(30), "tools/call", json!({}), json!({}));
    assert_eq!(code(&r), -32602, "{r}");
    let r = modern(&mut z, json!(31), "tools/call", json!({"name": "no_such"}), json!({}));
    assert_eq!(code(&r), -32602, "{r}");
    // Every result is stamped, the answer to a good request as well.
    let r = modern(&mut z, json!(32), "tools/call", json!({"name": "echo", "arguments": {"a": 1}}), json!({}));
    assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], json!("zot"), "{r}");
    assert_eq!(r["result"]["content"][0]["text"], json!("{\"a\":1}"));
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
}

#[test]
fn discover_and_lists_say_how_long_to_cache_and_every_result_is_stamped() {
    let t = TempDir::new("era-discover");
    let mut z = spawn(t.path(), &[echo()], &[]);
    let d = modern(&mut z, json!("d"), "server/discover", json!({}), json!({}));
    let r = &d["result"];
    assert_eq!(r["supportedVersions"], json!(["2026-07-28"]), "{d}");
    assert_eq!(r["capabilities"], json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true}, "resources": {"listChanged": true}, "logging": {}}));
    assert_eq!((r["ttlMs"].clone(), r["cacheScope"].clone()), (json!(3600000), json!("public")));
    assert!(r["instructions"].as_str().is_some_and(|s| s.contains("zot extensions")));
    assert_eq!(r["resultType"], json!("complete"));
    assert_eq!(r["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], json!(env!("CARGO_PKG_VERSION")));
    for (id, m) in [(1, "tools/list"), (2, "prompts/list")] {
        let l = modern(&mut z, json!(id), m, json!({"cursor": "x"}), json!({}));
        assert_eq!((l["result"]["ttlMs"].clone(), l["result"]["cacheScope"].clone()), (json!(0), json!("private")), "{l}");
        assert_eq!(l["result"]["resultType"], json!("complete"));
        assert!(l["result"].get("nextCursor").is_none());
    }
    let p = modern(&mut z, json!(3), "prompts/get", json!({"name": "echo", "arguments": {"args": "hi"}}), json!({}));
    assert_eq!(p["result"]["resultType"], json!("complete"), "{p}");
    let r = modern(&mut z, json!(4), "zot/reload", json!({}), json!({}));
    assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    let err = z.stderr_text();
    assert!(err.contains("zot mcp: 2026-07-28 from raw-modern"), "{err}");
    assert!(!err.contains("initialize from"), "{err}");
}

#[test]
fn the_first_request_decides_the_era_and_the_eras_are_never_mixed() {
    let t = TempDir::new("era-decide");
    // Modern: initialize is refused with the versions served.
    let mut z = spawn(t.path(), &[echo()], &[]);
    send(&mut z, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(&mut z, json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
    let r = modern(&mut z, json!(1), "server/discover", json!({}), json!({}));
    assert!(r["result"]["supportedVersions"].is_array(), "notifications and responses decided nothing: {r}");
    let i = rpc(&mut z, json!(2), "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}}));
    assert_eq!(code(&i), -32022, "{i}");
    assert_eq!(i["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}));
    let r = modern(&mut z, json!(3), "tools/list", json!({}), json!({}));
    assert!(r["result"]["tools"].is_array(), "still modern: {r}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    assert!(z.stderr_text().contains("zot mcp: 2026-07-28 from raw-modern"));

    // A probe without the version decides nothing; initialize then opens
    // the handshake era, on which an enveloped request is refused.
    let mut z = spawn(t.path(), &[echo()], &[]);
    let r = rpc(&mut z, json!(1), "server/discover", json!({}));
    assert_eq!(code(&r), -32601, "{r}");
    let i = rpc(&mut z, json!(2), "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old"}}));
    assert_eq!(i["result"]["protocolVersion"], json!("2025-11-25"), "{i}");
    assert!(i["result"].get("resultType").is_none() && i["result"].get("_meta").is_none(), "legacy as before: {i}");
    let r = modern(&mut z, json!(3), "tools/list", json!({}), json!({}));
    assert_eq!(code(&r), -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("handshake era"), "{r}");
    let r = rpc(&mut z, json!(4), "server/discover", json!({}));
    assert_eq!(code(&r), -32601, "{r}");
    let r = rpc(&mut z, json!(5), "tools/list", json!({}));
    assert!(r["result"]["tools"].is_array() && r["result"].get("ttlMs").is_none(), "{r}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);

    // initialize carrying the version is the handshake era all the same.
    let mut z = spawn(t.path(), &[echo()], &[]);
    let i = rpc(&mut z, json!(1), "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "_meta": env(json!({}))}));
    assert_eq!(i["result"]["protocolVersion"], json!("2025-06-18"), "{i}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);

    // A first request without the version (here ping) is legacy: requests
    // before initialize are answered as before.
    let mut z = spawn(t.path(), &[echo()], &[]);
    assert_eq!(rpc(&mut z, json!(1), "ping", json!({}))["result"], json!({}));
    assert_eq!(code(&modern(&mut z, json!(2), "server/discover", json!({}), json!({}))), -32600);
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
}

/// A config with the fixture MCP server `fx`.
fn fx_config(dir: &Path) -> PathBuf {
    let p = dir.join("mcp.json");
    let args = [fixture("mcp_server.py").display().to_string()];
    std::fs::write(&p, json!({"mcpServers": {"fx": {"command": "python3", "args": args}}}).to_string()).unwrap();
    p
}

#[test]
fn no_notification_reaches_a_legacy_client_before_its_initialize_answer() {
    let t = TempDir::new("era-early-progress");
    let cfg = fx_config(t.path());
    let mut z = spawn(t.path(), &[], &["--mcp-config", cfg.to_str().unwrap()]);
    let r = rpc(&mut z, json!(1), "tools/call", json!({"name": "mcp__fx__progress", "_meta": {"progressToken": "p"}}));
    assert_eq!(r["result"]["content"][0]["text"], json!("done"), "{r}");
    let early: Vec<Value> = lines(&z).into_iter().filter(|v| v.get("method").is_some()).collect();
    assert!(early.is_empty(), "notifications before initialize: {early:?}");
    // After the answer to initialize, progress flows as before.
    rpc(&mut z, json!(2), "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}}));
    rpc(&mut z, json!(3), "tools/call", json!({"name": "mcp__fx__progress", "_meta": {"progressToken": "q"}}));
    let n = lines(&z).iter().filter(|v| v["method"] == json!("notifications/progress")).count();
    assert_eq!(n, 3, "{:?}", z.seen);
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
}

#[test]
fn progress_and_notes_stay_inside_their_request_on_a_modern_connection() {
    let t = TempDir::new("era-notes");
    let cfg = fx_config(t.path());
    let notes = root().join("examples/python/notes").display().to_string();
    let mut z = spawn(t.path(), &[notes], &["--mcp-config", cfg.to_str().unwrap()]);
    let r = modern(&mut z, json!(1), "tools/call", json!({"name": "mcp__fx__progress"}), json!({"progressToken": "tok"}));
    assert_eq!(r["result"]["content"][0]["text"], json!("done"), "{r}");
    let at = z.seen.len() - 1;
    let progress: Vec<Value> = lines(&z).into_iter().filter(|v| v["method"] == json!("notifications/progress")).collect();
    assert_eq!(progress.iter().map(|v| v["params"]["progress"].as_f64().unwrap_or(0.0)).collect::<Vec<_>>(), vec![1.0, 2.0, 3.0]);
    assert!(progress.iter().all(|v| v["params"]["progressToken"] == json!("tok")));
    assert!(z.seen[..at].iter().filter(|l| l.contains("notifications/progress")).count() == 3, "each before the response");
    // A note without logLevel goes to stderr; with it, into the request.
    let r = modern(&mut z, json!(2), "prompts/get", json!({"name": "note", "arguments": {"args": "first"}}), json!({}));
    assert!(r["result"]["messages"].is_array(), "{r}");
    let r = modern(&mut z, json!(3), "prompts/get", json!({"name": "note", "arguments": {"args": "quiet"}}), json!({"io.modelcontextprotocol/logLevel": "warning"}));
    assert!(r["result"].is_object(), "{r}");
    let r = modern(&mut z, json!(4), "prompts/get", json!({"name": "note", "arguments": {"args": "loud"}}), json!({"io.modelcontextprotocol/logLevel": "info"}));
    assert!(r["result"].is_object(), "{r}");
    let answer_at = z.seen.len() - 1;
    let msgs: Vec<(usize, Value)> =
        z.seen.iter().enumerate().filter_map(|(i, l)| serde_json::from_str::<Value>(l).ok().map(|v| (i, v))).filter(|(_, v)| v["method"] == json!("notifications/message")).collect();
    assert_eq!(msgs.len(), 1, "{:?}", z.seen);
    assert_eq!(msgs[0].1["params"], json!({"level": "notice", "logger": "notes", "data": "3 note(s) kept"}));
    assert!(msgs[0].0 < answer_at);
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    let err = z.stderr_text();
    assert!(err.contains("zot mcp: notes: 1 note(s) kept") && err.contains("zot mcp: notes: 2 note(s) kept"), "{err}");
}

#[test]
fn subscriptions_are_acknowledged_first_then_get_their_tagged_changes_until_cancelled() {
    let t = TempDir::new("era-listen");
    let crashy = py_ext(t.path(), "crashy", "crashy", &["--tools", "crash"]);
    let mut z = spawn(t.path(), &[echo(), crashy.display().to_string()], &[]);
    // No push outside a subscription: an exit changes the tools.
    let r = modern(&mut z, json!(1), "tools/call", json!({"name": "crash"}), json!({}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let r = modern(&mut z, json!(2), "tools/list", json!({}), json!({}));
    assert!(!r.to_string().contains("\"crash\""), "{r}");
    let mut l = json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": ["x"]}});
    l["_meta"] = env(json!({}));
    send(&mut z, json!({"jsonrpc": "2.0", "id": "a", "method": "subscriptions/listen", "params": l}));
    let ack = z.wait_line("the first ack", |l| l.contains("acknowledged"));
    let ack: Value = serde_json::from_str(&ack).unwrap();
    assert_eq!(ack["params"], json!({"_meta": {SUB: "a"}, "notifications": {"toolsListChanged": true, "resourcesListChanged": true}}));
    let mut l = json!({"notifications": {"promptsListChanged": true, "toolsListChanged": true}});
    l["_meta"] = env(json!({}));
    send(&mut z, json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": l}));
    z.wait_line("the second ack", |l| l.contains("acknowledged") && l.contains(&format!("\"{SUB}\":7")));
    let seen_before = z.seen.iter().filter(|l| l.contains("list_changed")).count();
    assert_eq!(seen_before, 0, "{:?}", z.seen);
    // A reload changes both lists: each subscription gets what it asked for.
    let r = modern(&mut z, json!(3), "zot/reload", json!({}), json!({}));
    assert!(r["result"].is_object(), "{r}");
    let changes: Vec<Value> = lines(&z).into_iter().filter(|v| v["method"].as_str().is_some_and(|m| m.ends_with("list_changed"))).collect();
    let tagged = |m: &str, id: Value| changes.iter().filter(|v| v["method"] == json!(m) && v["params"] == json!({"_meta": {SUB: id}})).count();
    assert!(tagged("notifications/tools/list_changed", json!("a")) >= 1, "{changes:?}");
    assert!(tagged("notifications/tools/list_changed", json!(7)) >= 1, "{changes:?}");
    assert!(tagged("notifications/prompts/list_changed", json!(7)) >= 1, "{changes:?}");
    assert_eq!(tagged("notifications/prompts/list_changed", json!("a")), 0, "{changes:?}");
    // The change is in force when it is written: the list has crash again.
    let r = modern(&mut z, json!(4), "tools/list", json!({}), json!({}));
    assert!(r.to_string().contains("\"crash\""), "{r}");
    // The client cancels "a": nothing more for it, 7 still gets changes.
    send(&mut z, json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}}));
    let mark = z.seen.len();
    modern(&mut z, json!(5), "tools/call", json!({"name": "crash"}), json!({}));
    modern(&mut z, json!(6), "tools/list", json!({}), json!({}));
    let for7 = z.seen[mark..].iter().filter(|l| l.contains("tools/list_changed") && l.contains(&format!("\"{SUB}\":7"))).count();
    assert!(for7 >= 1, "the change after the cancel: {:?}", &z.seen[mark..]);
    assert!(!z.seen[mark..].iter().any(|l| l.contains(&format!("\"{SUB}\":\"a\""))), "{:?}", &z.seen[mark..]);
    // SIGTERM: the open subscription is answered, then zot exits.
    z.signal(libc::SIGTERM);
    assert_eq!(z.exit_code(LINE_WAIT), 143, "{}", z.context());
    z.read_to_end(LINE_WAIT);
    let end = lines(&z).into_iter().find(|v| v["id"] == json!(7)).unwrap_or_else(|| panic!("7 not answered: {:?}", z.seen));
    let info = json!({"name": "zot", "version": env!("CARGO_PKG_VERSION")});
    assert_eq!(end["result"], json!({"resultType": "complete", "_meta": {SUB: 7, "io.modelcontextprotocol/serverInfo": info}}));
    assert!(lines(&z).iter().all(|v| v["id"] != json!("a")), "a cancelled subscription is not answered");
    assert!(lines(&z).iter().all(|v| v["method"] != json!("notifications/cancelled")));
}

#[test]
fn an_open_subscriptions_id_stays_in_use_and_a_reused_id_is_refused_before_the_envelope_checks() {
    let t = TempDir::new("era-listen-id");
    let mut z = spawn(t.path(), &[echo()], &[]);
    let mut l = json!({"notifications": {"toolsListChanged": true}});
    l["_meta"] = env(json!({}));
    send(&mut z, json!({"jsonrpc": "2.0", "id": "s", "method": "subscriptions/listen", "params": l}));
    z.wait_line("the ack", |l| l.contains("acknowledged"));
    // The listen request is open: its id is in use. A request reusing it is
    // not a valid request (4a), answered before its bad version (4c)...
    let r = modern(&mut z, json!("s"), "tools/list", json!({}), json!({PV: "2099-01-01"}));
    assert_eq!(code(&r), -32600, "{r}");
    // ...and a good one too: a result with that id would read as the end
    // of the subscription.
    let r = modern(&mut z, json!("s"), "tools/list", json!({}), json!({}));
    assert_eq!(code(&r), -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("already in use"), "{r}");
    // Cancelled, the subscription ends and its id is free again.
    send(&mut z, json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "s"}}));
    let r = modern(&mut z, json!("s"), "tools/list", json!({}), json!({}));
    assert!(r["result"]["tools"].is_array(), "{r}");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
}

#[test]
fn the_answer_that_ends_a_subscription_on_a_signal_is_stamped_like_every_result() {
    for (sig, rc) in [(libc::SIGHUP, 129), (libc::SIGINT, 130)] {
        let t = TempDir::new("era-listen-end");
        let mut z = spawn(t.path(), &[echo()], &[]);
        let mut l = json!({"notifications": {"promptsListChanged": true}});
        l["_meta"] = env(json!({}));
        send(&mut z, json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": l}));
        z.wait_line("the ack", |l| l.contains("acknowledged"));
        z.signal(sig);
        assert_eq!(z.exit_code(LINE_WAIT), rc, "{}", z.context());
        z.read_to_end(LINE_WAIT);
        let end = lines(&z).into_iter().find(|v| v["id"] == json!(3)).unwrap_or_else(|| panic!("3 not answered: {:?}", z.seen));
        let info = json!({"name": "zot", "version": env!("CARGO_PKG_VERSION")});
        assert_eq!(end["result"], json!({"resultType": "complete", "_meta": {SUB: 3, "io.modelcontextprotocol/serverInfo": info}}), "{sig}");
    }
}

// ---------------------------------------------------------------------------
// The official Python SDK's Client in each mode

fn sdk_python() -> Option<PathBuf> {
    let py = std::env::var_os("ZOT_MCP_PYTHON").map(PathBuf::from).unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    let ok = Command::new(&py).args(["-c", "import mcp.client._probe"]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIP: no MCP Python SDK 2.3 at {} (the era client tests need its Client modes)", py.display());
        return None;
    }
    Some(py)
}

fn step<'a>(t: &'a Value, name: &str) -> &'a Value {
    t["steps"].as_array().and_then(|s| s.iter().find(|s| s["step"] == json!(name))).unwrap_or_else(|| panic!("no step {name:?}:\n{t:#}"))
}

#[test]
fn the_python_sdk_client_in_auto_pinned_and_legacy_modes() {
    let Some(py) = sdk_python() else { return };
    for mode in ["auto", "2026-07-28", "legacy"] {
        let t = TempDir::new("era-sdk");
        let cfg = fx_config(t.path());
        let crashy = py_ext(t.path(), "crashy", "crashy", &["--tools", "crash"]);
        let home = t.path().join("zot-home");
        let out = Command::new(&py)
            .arg(root().join("tests/mcp/era_client.py"))
            .args([mode, home.join("logs/mcp-fx.log").to_str().unwrap(), "--", BIN, "mcp", "--no-ext", "--ext", &echo(), "--ext"])
            .arg(&crashy)
            .args(["--mcp-config", cfg.to_str().unwrap()])
            .env("ZOT_HOME", &home)
            .current_dir(t.path())
            .stdin(Stdio::null())
            .output()
            .expect("run the client");
        let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{mode}: {}\n{o}\n{e}", out.status);
        let tr: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
        let want = if mode == "legacy" { "2025-11-25" } else { "2026-07-28" };
        assert_eq!(tr["protocol_version"], json!(want), "{mode}");
        let names = step(&tr, "list_tools")["result"]["tools"].to_string();
        assert!(names.contains("\"echo\"") && names.contains("mcp__fx__progress"), "{mode}: {names}");
        assert_eq!(step(&tr, "call echo")["result"]["content"][0]["text"], json!("{\"a\":1}"), "{mode}");
        let fail = step(&tr, "call fail");
        assert_eq!((fail["result"]["isError"].clone(), fail["result"]["content"][0]["text"].clone()), (json!(true), json!("it went wrong")), "{mode}");
        let seen = step(&tr, "progress seen")["result"].as_array().cloned().unwrap_or_default();
        assert_eq!(seen.iter().map(|p| p["progress"].as_f64().unwrap_or(0.0)).collect::<Vec<_>>(), vec![1.0, 2.0, 3.0], "{mode}");
        assert_eq!(step(&tr, "slow cancelled")["result"], json!({"cancelled": true, "answer": null}), "{mode}");
        assert_eq!(step(&tr, "call echo after cancel")["result"]["content"][0]["text"], json!("{\"after\":\"cancel\"}"));
        let log = std::fs::read_to_string(home.join("logs/mcp-fx.log")).unwrap_or_default();
        assert!(log.contains("fixture: cancelled"), "{mode}: {log}");
        if mode == "legacy" {
            continue;
        }
        assert_eq!(step(&tr, "call echo")["result"]["resultType"], json!("complete"));
        let listen = step(&tr, "listen");
        assert_eq!(listen["result"], json!({"honoured": {"toolsListChanged": true}, "event": "ToolsListChanged"}), "{mode}: {tr:#}");
        let v = step(&tr, "discover at 2099-01-01");
        assert_eq!(v["error"]["code"], json!(-32022), "{v}");
        assert_eq!(v["error"]["data"]["supported"], json!(["2026-07-28"]), "{v}");
    }
}
