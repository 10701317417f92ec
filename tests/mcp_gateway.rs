//! MCP servers reached through other front ends: an extension's
//! `call_tool` to a server's tool, `zot mcp` as a gateway in front of
//! servers (the intercept chain, the official Python client), and real
//! servers nobody here wrote where they are installed.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;

use common::TempDir;
use mcp_serve::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use zot_proc::{strings, Zot, FAST, LINE_WAIT};

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
    let log = s.log("fs");
    assert_eq!(log.matches("[zot] starting fs").count(), 1, "a legacy server under auto: one process, one handshake: {log}");
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
    assert_eq!(log.matches("[zot] starting time").count(), 1, "a legacy server under auto: one process, one handshake: {log}");
    assert!(!log.contains("server/discover"), "{log}");
    s.shutdown();
}
