//! `zot mcp` end to end through the real binary, with raw JSON-RPC lines
//! written to it and read back: every error path, version negotiation,
//! ping, batches, notification order and gating, intercept rewrites,
//! prompts, cancellation, reload, signals, the interactive refusal, the
//! current revision's tools and prompts, and that stdout carries JSON-RPC
//! messages only.

mod common;
#[path = "common/mcp_raw.rs"]
mod mcp_raw;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, TempDir};
use mcp_raw::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use zot_proc::{spawn_mcp as spawn, Zot, BIN, LINE_WAIT};

#[test]
fn raw_error_paths() {
    let t = TempDir::new("mcp-errors");
    let fx = py_ext(t.path(), "fx", "fx", &["--tools", "t1,sleep", "--commands", "c1"]).display().to_string();
    // The sleeping call below must neither end nor time out before its
    // cancel arrives, however loaded the machine.
    let mut z = spawn(t.path(), &[fx], &["--tool-timeout", "120"]);
    initialize(&mut z);

    // Not JSON: -32700 with id null.
    z.send("this is not json");
    let v = check_line(&z.wait_line("parse error", |l| l.contains("-32700")));
    assert_eq!((code_of(&v), &v["id"]), (-32700, &Value::Null));
    z.send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"");
    let v = check_line(&z.wait_line("parse error", |l| l.contains("-32700")));
    assert_eq!(v["id"], Value::Null, "a truncated request has no usable id");

    // Not a request object: -32600.
    for (text, id) in [
        ("42", Value::Null),
        ("\"ping\"", Value::Null),
        ("[]", Value::Null),
        (r#"{"jsonrpc":"2.0","id":"nm"}"#, json!("nm")),
        (r#"{"jsonrpc":"2.0","id":"mt","method":7}"#, json!("mt")),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null),
        (r#"{"id":"nv","method":"ping"}"#, json!("nv")),
        (r#"{"jsonrpc":"1.0","id":"ov","method":"ping"}"#, json!("ov")),
        (r#"{"jsonrpc":"2.0","id":"sp","method":"ping","params":"x"}"#, json!("sp")),
    ] {
        z.send(text);
        let v = check_line(&z.wait_line(&format!("-32600 for {text}"), |l| l.contains("-32600")));
        assert_eq!(code_of(&v), -32600, "{text}");
        assert_eq!(v["id"], id, "{text}");
    }

    // Unknown method: -32601.
    let v = rpc(&mut z, json!(1), "resources/subscribe", json!({"uri": "x://y"}));
    assert_eq!(code_of(&v), -32601);
    assert!(v["error"]["message"].as_str().unwrap_or("").contains("resources/subscribe"), "{v}");
    let v = rpc(&mut z, json!("disc"), "server/discover", json!({}));
    assert_eq!(code_of(&v), -32601, "the 2026 probe falls back to initialize on -32601");

    // Bad params: -32602.
    let v = rpc(&mut z, json!(2), "tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert_eq!(code_of(&v), -32602);
    assert!(v["error"]["message"].as_str().unwrap_or("").contains("no_such_tool"), "{v}");
    let bad = [
        ("tools/call", json!({})),
        ("tools/call", json!({"name": 5})),
        ("tools/call", json!({"name": "t1", "arguments": [1, 2]})),
        ("tools/call", json!({"name": "t1", "arguments": "x"})),
        ("prompts/get", json!({"name": "no_such_prompt"})),
        ("prompts/get", json!({})),
        ("prompts/get", json!({"name": "c1", "arguments": {"args": 5}})),
        ("logging/setLevel", json!({"level": "loud"})),
        ("logging/setLevel", json!({})),
        ("initialize", json!({"capabilities": {}})),
        ("tools/list", json!({"cursor": 5})),
    ];
    for (i, (method, params)) in bad.iter().enumerate() {
        let v = rpc(&mut z, json!(100 + i), method, params.clone());
        assert_eq!(code_of(&v), -32602, "{method} {params}: {v}");
    }
    send(&mut z, json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1]}));
    assert_eq!(code_of(&answer(&mut z, &json!(3))), -32602, "array params");

    // A request id already in flight is refused.
    let slow = json!({"name": "sleep", "arguments": {"ms": 60000}});
    send(&mut z, json!({"jsonrpc": "2.0", "id": "dup", "method": "tools/call", "params": slow}));
    let v = rpc(&mut z, json!("dup"), "ping", json!({}));
    assert_eq!(code_of(&v), -32600, "{v}");
    assert!(v["error"]["message"].as_str().unwrap_or("").contains("already in use"), "{v}");
    send(&mut z, json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "dup"}}));

    // Notifications and client responses get no answer; the server goes on.
    z.send(r#"{"jsonrpc":"2.0","method":"notifications/unknown","params":{}}"#);
    z.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never"}}"#);
    z.send(r#"{"jsonrpc":"2.0","id":"r1","result":{}}"#);
    z.send(r#"{"jsonrpc":"2.0","id":"r2","error":{"code":1,"message":"x"}}"#);
    z.send("   ");
    assert_eq!(rpc(&mut z, json!(4), "ping", json!({}))["result"], json!({}));

    // A batch is answered with an array (requests only); a batch of
    // notifications gets nothing.
    z.send(r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#);
    z.send(r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},1,{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b2","method":"nope"}]"#);
    let line = z.wait_line("batch answer", |l| l.starts_with('['));
    let arr = check_line(&line);
    let arr = arr.as_array().cloned().unwrap_or_default();
    assert_eq!(arr.len(), 3, "{line}");
    assert!(arr.iter().any(|m| m["id"] == json!("b1") && m["result"] == json!({})), "{line}");
    assert!(arr.iter().any(|m| m["id"].is_null() && code_of(m) == -32600), "{line}");
    assert!(arr.iter().any(|m| m["id"] == json!("b2") && code_of(m) == -32601), "{line}");

    let rest = finish(&mut z);
    assert!(rest.iter().all(|v| !v.is_array()), "the notification-only batch was answered: {rest:?}");
    let seen: Vec<Value> = z.seen.iter().map(|l| check_line(l)).collect();
    for id in ["r1", "r2", "never"] {
        assert!(seen.iter().all(|v| v["id"] != json!(id)), "answered {id}");
    }
    assert_eq!(seen.iter().filter(|v| v["id"] == json!("dup")).count(), 1, "the cancelled call was answered");
}

#[test]
fn raw_initialize_negotiates_the_version() {
    let t = TempDir::new("mcp-init");
    let mut z = spawn(t.path(), &[], &[]);
    // Requests before initialize are answered (lenient).
    assert_eq!(rpc(&mut z, json!("early"), "ping", json!({}))["result"], json!({}));
    assert_eq!(rpc(&mut z, json!("early-list"), "tools/list", json!({}))["result"], json!({"tools": []}));
    let mut asked: Vec<&str> = VERSIONS.to_vec();
    asked.extend(["1999-01-01", "2026-07-28", ""]);
    for (i, v) in asked.iter().enumerate() {
        let params = json!({"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}});
        let r = rpc(&mut z, json!(i), "initialize", params);
        let want = if VERSIONS.contains(v) { *v } else { VERSIONS[0] };
        let res = &r["result"];
        assert_eq!(res["protocolVersion"], json!(want), "asked {v}: {r}");
        assert_eq!(res["serverInfo"]["name"], json!("zot"));
        assert_eq!(res["serverInfo"]["version"], json!(env!("CARGO_PKG_VERSION")));
        assert_eq!(res["capabilities"]["tools"], json!({"listChanged": true}));
        assert_eq!(res["capabilities"]["prompts"], json!({"listChanged": true}));
        assert_eq!(res["capabilities"]["logging"], json!({}));
    }
    assert_eq!(rpc(&mut z, json!("p"), "ping", json!({})), json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    finish(&mut z);
}

#[test]
fn raw_notifications_wait_for_initialize_and_follow_the_level() {
    let t = TempDir::new("mcp-notes");
    // --echo-ack: a notify at load, before any client exists.
    let fx = py_ext(t.path(), "fx", "fx", &["--echo-ack", "--tools", "note", "--commands", "notify"]);
    let mut z = spawn(t.path(), &[fx.display().to_string(), example("python/notes")], &[]);
    assert_eq!(rpc(&mut z, json!(1), "ping", json!({}))["result"], json!({}));
    let init = initialize(&mut z);
    assert!(init["result"].is_object());
    let before: Vec<&String> = z.seen.iter().take_while(|l| !l.contains("protocolVersion")).collect();
    assert!(before.iter().all(|l| !l.contains("notifications/")), "a notification before initialize: {before:?}");
    assert!(common::wait_until(LINE_WAIT, || z.stderr_text().contains("ack:")), "the early note goes to stderr\n{}", z.context());

    // success → notice, written before the answer it came with.
    let n0 = z.seen.len();
    let r = rpc(&mut z, json!(2), "prompts/get", json!({"name": "note", "arguments": {"args": "buy milk"}}));
    assert_eq!(r["result"]["messages"][0]["content"], json!({"type": "text", "text": "noted: buy milk"}));
    let log = z.seen[n0..].iter().map(|l| check_line(l)).find(|v| v["method"] == json!("notifications/message"));
    assert_eq!(
        log.map(|v| v["params"].clone()),
        Some(json!({"level": "notice", "logger": "notes", "data": "1 note(s) kept"})),
        "{}",
        z.context()
    );
    // warn → warning; the fixture's other frames (clear_notes, submit,
    // panels) are not MCP's business.
    let n0 = z.seen.len();
    let r = rpc(&mut z, json!(3), "prompts/get", json!({"name": "notify", "arguments": {"args": "x"}}));
    assert_eq!(r["result"]["messages"], json!([]), "a noop command has no message: {r}");
    let logs: Vec<Value> = z.seen[n0..].iter().map(|l| check_line(l)).filter(|v| v.get("method").is_some()).collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["params"], json!({"level": "warning", "logger": "fx", "data": "note:x"}));

    // Below the level: dropped.
    assert_eq!(rpc(&mut z, json!(4), "logging/setLevel", json!({"level": "error"}))["result"], json!({}));
    let n0 = z.seen.len();
    rpc(&mut z, json!(5), "prompts/get", json!({"name": "note", "arguments": {"args": "quiet"}}));
    rpc(&mut z, json!(6), "tools/call", json!({"name": "note", "arguments": {"text": "info note"}}));
    assert_eq!(rpc(&mut z, json!(7), "ping", json!({}))["result"], json!({}));
    assert!(z.seen[n0..].iter().all(|l| !l.contains("notifications/message")), "{}", z.context());
    // debug shows the server's own messages.
    rpc(&mut z, json!(8), "logging/setLevel", json!({"level": "debug"}));
    let n0 = z.seen.len();
    rpc(&mut z, json!(9), "tools/call", json!({"name": "note", "arguments": {"text": "hi"}}));
    let msgs: Vec<Value> = z.seen[n0..].iter().map(|l| check_line(l)).filter(|v| v.get("method").is_some()).collect();
    assert!(msgs.iter().any(|v| v["params"]["logger"] == json!("zot")), "{msgs:?}");
    assert!(msgs.iter().any(|v| v["params"] == json!({"level": "info", "logger": "fx", "data": "hi"})), "{msgs:?}");
    finish(&mut z);
}

#[test]
fn raw_tool_calls_run_intercepts_then_the_event() {
    let t = TempDir::new("mcp-intercepts");
    let p = t.path();
    let rw = py_ext(p, "rw", "rw", &["--intercepts", "tool_call", "--intercept-mode", "rewrite"]);
    let fx = py_ext(p, "fx", "fx", &["--tools", "bash,events,image,fail,silent", "--events", "tool_call"]);
    let exts = [rw, fx, PathBuf::from(example("rust/guard"))].map(|d| d.display().to_string());
    // Every tool call's timeout: the Python tools that answer must do so
    // within it on a loaded machine too; only `silent` waits it out.
    let mut z = spawn(p, &exts, &["--tool-timeout", "3"]);
    initialize(&mut z);

    let list = rpc(&mut z, json!(1), "tools/list", json!({"cursor": "anything"}));
    let tools = list["result"]["tools"].as_array().cloned().unwrap_or_default();
    assert!(list["result"].get("nextCursor").is_none());
    let bash = tools.iter().find(|t| t["name"] == json!("bash")).unwrap_or_else(|| panic!("{list}"));
    assert_eq!(bash["description"], json!("bash from fx"));
    assert_eq!(bash["inputSchema"], json!({"type": "object", "properties": {}}));

    // rw rewrites the args; the tool gets the rewritten ones.
    let r = rpc(&mut z, json!(2), "tools/call", json!({"name": "bash", "arguments": {"command": "ls"}}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    let got: Value = serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap_or("")).unwrap_or_default();
    assert_eq!(got["args"], json!({"command": "ls", "by_rw": true}), "{r}");
    // ... and the tool_call event carried them, with a fresh tool_id.
    let r = rpc(&mut z, json!(3), "tools/call", json!({"name": "events"}));
    let seen: Value = serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap_or("")).unwrap_or_default();
    let ev = seen.as_array().and_then(|a| a.iter().find(|e| e["event"] == json!("tool_call") && e["tool_name"] == json!("bash")));
    let ev = ev.unwrap_or_else(|| panic!("no tool_call event: {seen}"));
    assert_eq!(ev["tool_args"], json!({"command": "ls", "by_rw": true}));
    assert!(ev["tool_id"].as_str().is_some_and(|id| id.starts_with("mcp-")), "{ev}");

    // The guard blocks: a tool result with isError and the reason.
    let r = rpc(&mut z, json!(4), "tools/call", json!({"name": "bash", "arguments": {"command": "rm -rf /"}}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("rm -rf") && text.contains("blocked"), "{r}");

    // Images, is_error, and a host error (timeout) as a tool result.
    let r = rpc(&mut z, json!(5), "tools/call", json!({"name": "image"}));
    assert_eq!(r["result"]["content"][1], json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}));
    let r = rpc(&mut z, json!(6), "tools/call", json!({"name": "fail"}));
    assert_eq!(r["result"], json!({"content": [{"type": "text", "text": "it failed"}], "isError": true}));
    let r = rpc(&mut z, json!(7), "tools/call", json!({"name": "silent"}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap_or("").contains("did not answer"), "{r}");
    finish(&mut z);
}

#[test]
fn raw_prompts() {
    let t = TempDir::new("mcp-prompts");
    let fx = py_ext(t.path(), "fx", "fx", &["--commands", "prompt,insert,display,err,panel"]);
    let mut z = spawn(t.path(), &[fx.display().to_string(), example("rust/weather")], &[]);
    initialize(&mut z);
    let l = rpc(&mut z, json!(1), "prompts/list", json!({}));
    let prompts = l["result"]["prompts"].as_array().cloned().unwrap_or_default();
    let p = prompts.iter().find(|p| p["name"] == json!("weather")).unwrap_or_else(|| panic!("{l}"));
    assert_eq!(p["description"], json!("current weather for a city"));
    assert_eq!(p["arguments"][0]["name"], json!("args"));
    assert_eq!(p["arguments"][0]["required"], json!(false));
    for (i, (name, want)) in
        [("prompt", "prompt:a b"), ("insert", "insert:a b"), ("display", "display:a b"), ("panel", "T\na\nb\nf")]
            .iter()
            .enumerate()
    {
        let r = rpc(&mut z, json!(10 + i), "prompts/get", json!({"name": name, "arguments": {"args": "  a b "}}));
        let m = &r["result"]["messages"];
        assert_eq!(m, &json!([{"role": "user", "content": {"type": "text", "text": want}}]), "{name}: {r}");
        assert!(r["result"]["description"].as_str().unwrap_or("").contains(name), "{r}");
    }
    let r = rpc(&mut z, json!(2), "prompts/get", json!({"name": "weather", "arguments": {"args": "berlin"}}));
    assert_eq!(r["result"]["messages"][0]["content"]["text"], json!("Tell me the weather for berlin"));
    let r = rpc(&mut z, json!(3), "prompts/get", json!({"name": "err", "arguments": {"args": "boom"}}));
    assert_eq!(code_of(&r), -32603, "{r}");
    assert_eq!(r["error"]["message"], json!("failed: boom"));
    assert_eq!(r["error"]["data"]["extension"], json!("fx"));
    finish(&mut z);
}

#[test]
fn raw_cancel_sends_tool_cancel_and_no_answer() {
    let t = TempDir::new("mcp-cancel");
    let mut z = spawn(t.path(), &[example("rust/echo")], &["--tool-timeout", "120"]);
    initialize(&mut z);
    rpc(&mut z, json!(1), "logging/setLevel", json!({"level": "debug"}));
    let started = Instant::now();
    send(&mut z, json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 60000}}}));
    z.wait_line("the slow call to start", |l| l.contains("calling the tool"));
    send(&mut z, json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}}));
    // The server keeps answering; the id can even be used again.
    assert_eq!(rpc(&mut z, json!(8), "ping", json!({}))["result"], json!({}));
    let r = rpc(&mut z, json!(9), "tools/call", json!({"name": "echo", "arguments": {"k": 1}}));
    assert_eq!(r["result"]["content"][0]["text"], json!("{\"k\":1}"));
    let home = z.zot_home.clone();
    let log = || std::fs::read_to_string(home.join("logs/ext-echo.log")).unwrap_or_default();
    assert!(common::wait_until(LINE_WAIT, || log().contains("dropped tool_result")), "{}", log());
    assert!(log().contains("cancelled by the caller; sending tool_cancel"), "{}", log());
    let r = rpc(&mut z, json!(10), "tools/call", json!({"name": "slow", "arguments": {"ms": 1}}));
    assert_eq!(r["result"]["content"][0]["text"], json!("slept 1 ms"));
    let answers_to_7 = z.seen.iter().map(|l| check_line(l)).filter(|v| v["id"] == json!(7)).count();
    assert_eq!(answers_to_7, 0, "the cancelled call was answered\n{}", z.context());
    finish(&mut z);
    // Far from the 60 s the call would take.
    assert!(started.elapsed() < Duration::from_secs(50), "the slow call was not cut short");
}

#[test]
fn raw_lists_change_on_reload_and_exit() {
    let t = TempDir::new("mcp-changed");
    let fx = py_ext(t.path(), "fx", "fx", &["--tools", "crash,t1"]);
    let mut z = spawn(t.path(), &[fx.display().to_string()], &[]);
    initialize(&mut z);
    let r = rpc(&mut z, json!(1), "zot/reload", json!({}));
    assert_eq!(r["result"]["loaded"], json!(1), "{r}");
    for m in ["notifications/tools/list_changed", "notifications/prompts/list_changed"] {
        assert!(z.seen.iter().any(|l| l.contains(m)), "no {m} after reload\n{}", z.context());
    }
    let n0 = z.seen.len();
    let r = rpc(&mut z, json!(2), "tools/call", json!({"name": "crash"}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap_or("").contains("exited"), "{r}");
    // The notice comes before or after the failed call it explains.
    if !z.seen[n0..].iter().any(|l| l.contains("notifications/tools/list_changed")) {
        z.wait_line("tools/list_changed after the exit", |l| l.contains("notifications/tools/list_changed"));
    }
    assert!(z.seen[n0..].iter().any(|l| l.contains("\"warning\"") && l.contains("exited")), "{}", z.context());
    let l = rpc(&mut z, json!(3), "tools/list", json!({}));
    assert_eq!(l["result"]["tools"], json!([]), "{l}");
    finish(&mut z);
}

#[test]
fn raw_end_of_input_waits_for_calls_in_flight() {
    let t = TempDir::new("mcp-eof");
    let mut z = spawn(t.path(), &[example("rust/echo")], &[]);
    initialize(&mut z);
    send(&mut z, json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 300}}}));
    let rest = finish(&mut z);
    let a = rest.iter().find(|v| v["id"] == json!("s")).unwrap_or_else(|| panic!("{rest:?}"));
    assert_eq!(a["result"]["content"][0]["text"], json!("slept 300 ms"));
}

#[test]
fn raw_sigterm_stops_the_extensions() {
    let t = TempDir::new("mcp-term");
    let mut z = spawn(t.path(), &[example("rust/echo")], &[]);
    initialize(&mut z);
    let kids = zot_proc::children_of(z.pid);
    assert!(!kids.is_empty());
    z.signal(libc::SIGTERM);
    assert_eq!(z.exit_code(LINE_WAIT), 143, "{}", z.context());
    assert!(kids.iter().all(|k| !common::process_alive(*k)), "an extension outlived zot mcp");
}

#[test]
fn help_and_usage() {
    let out = Command::new(BIN).args(["mcp", "--help"]).output().expect("run zot");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Usage: zot mcp [OPTIONS]") && text.contains("mcpServers"), "{text}");
    let out = Command::new(BIN).arg("--help").output().expect("run zot");
    assert!(String::from_utf8_lossy(&out.stdout).contains("zot mcp [OPTIONS]"));
    let out = Command::new(BIN).args(["mcp", "--bogus"]).output().expect("run zot");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("zot mcp: unexpected argument '--bogus'"));
}

#[test]
fn raw_an_interactive_tool_is_refused_before_any_interceptor_or_event_sees_it() {
    // docs/protocol.md §6.2: zot mcp has no interactive support; the refusal
    // comes before the chain and the events, so a watcher sees no trace of
    // the call: no tool_call intercept or event, and no tool_result event.
    let t = TempDir::new("mcp-interactive-refusal");
    let rich = py_ext(t.path(), "rich", "rich", &["--rich-tools"]);
    let watch = py_ext(t.path(), "watch", "watch", &["--tools", "events", "--events", "tool_call,tool_result", "--intercepts", "tool_call"]);
    let mut z = spawn(t.path(), &[rich.display().to_string(), watch.display().to_string()], &[]);
    initialize(&mut z);
    let r = rpc(&mut z, json!(1), "tools/call", json!({"name": "asks", "arguments": {}}));
    assert_eq!(r["result"]["content"][0]["text"], "interactive extension tools require an interactive host", "{r}");
    // A call after it: its own events are seen, so the watcher is listening.
    let r = rpc(&mut z, json!(2), "tools/call", json!({"name": "events", "arguments": {}}));
    let seen: Value = serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap_or("")).unwrap_or_default();
    let seen = seen.as_array().cloned().unwrap_or_else(|| panic!("no events list: {r}"));
    assert!(seen.iter().any(|e| e["tool_name"] == "events"), "{seen:?}");
    assert!(!seen.iter().any(|e| e["tool_name"] == "asks"), "the refused call was seen: {seen:?}");
    finish(&mut z);
}

#[test]
fn raw_the_current_revisions_tools_and_prompts() {
    // docs/protocol.md §6 through zot mcp: outputSchema and structuredContent,
    // deferred tools hidden until activated (then list_changed), interactive
    // tools answered as tool errors, tool_prompt commands as their prompt,
    // and an extension's call_tool to another extension's tool.
    let t = TempDir::new("mcp-revision");
    let rich = py_ext(t.path(), "rich", "rich", &["--rich-tools", "--commands", "tool_prompt"]);
    let caller = py_ext(t.path(), "caller", "caller", &["--call-tool", "--tools", "call,echo"]);
    let mut z = spawn(t.path(), &[rich.display().to_string(), caller.display().to_string()], &[]);
    initialize(&mut z);
    let names = |z: &mut Zot, id: i64| -> Vec<Value> {
        rpc(z, json!(id), "tools/list", json!({}))["result"]["tools"].as_array().unwrap().clone()
    };
    let tools = names(&mut z, 1);
    let structured = tools.iter().find(|t| t["name"] == "structured").expect("structured listed");
    assert_eq!(structured["outputSchema"]["properties"]["ok"]["type"], "boolean");
    assert!(!tools.iter().any(|t| t["name"] == "later"), "a deferred tool is not offered yet");
    let r = rpc(&mut z, json!(2), "tools/call", json!({"name": "structured", "arguments": {}}));
    assert_eq!(r["result"]["structuredContent"], json!({"ok": true}));
    let n0 = z.seen.len();
    let r = rpc(&mut z, json!(3), "tools/call", json!({"name": "activate", "arguments": {}}));
    assert_eq!(r["result"]["isError"], false);
    // The answer first, then the list change it caused.
    assert!(!z.seen[n0..].iter().any(|l| l.contains("notifications/tools/list_changed")), "before the answer: {:?}", &z.seen[n0..]);
    z.wait_line("tools/list_changed", |l| l.contains("notifications/tools/list_changed"));
    assert!(names(&mut z, 4).iter().any(|t| t["name"] == "later"), "offered once activated");
    let r = rpc(&mut z, json!(5), "tools/call", json!({"name": "asks", "arguments": {}}));
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["content"][0]["text"], "interactive extension tools require an interactive host");
    let r = rpc(&mut z, json!(6), "prompts/get", json!({"name": "tool_prompt", "arguments": {"args": "x"}}));
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "now x");
    let r = rpc(&mut z, json!(7), "tools/call", json!({"name": "call", "arguments": {"to": "structured", "args": {}}}));
    let got: Value = serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got["name"], "structured");
    assert_eq!(got["structured_content"], json!({"ok": true}));
    finish(&mut z);
}
