//! End-to-end tests of the Rust SDK (`zot_host::ext`) through its examples, and
//! of the script examples (Python, POSIX sh, Node): each test spawns the
//! real extension from its example folder's `extension.json` and drives it
//! over pipes, playing the host. The host itself is not used.

mod sdk_host;
#[path = "common/skip.rs"]
mod skip;

use sdk_host::*;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;

#[test]
fn handshake_follows_the_modern_order() {
    let mut e = Ext::start("rust/weather");
    let hello = e.next();
    // Upstream's current Go SDK declares the same list whatever is registered.
    let caps = json!(["commands", "tools", "events", "panels", "tool_cancel", "call_tool"]);
    assert_eq!(hello, json!({"type": "hello", "name": "weather", "version": "1.0.0", "capabilities": caps}));
    assert_eq!(e.next_fresh(Duration::from_millis(300)), None, "nothing may follow hello before hello_ack");
    e.send(hello_ack("/proj"));
    let mut frames = Vec::new();
    while frames.last().map(|f: &Value| f["type"] != "ready").unwrap_or(true) {
        frames.push(e.next());
    }
    assert_eq!(types(&frames), ["register_command", "register_command", "register_tool", "subscribe", "ready"]);
    assert_eq!(frames[0]["name"], "weather");
    assert_eq!(frames[1]["name"], "cwd");
    assert_eq!(
        frames[2]["schema"],
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    );
    assert_eq!(frames[3], json!({"type": "subscribe", "events": [], "intercept": []}));
    assert!(e.shutdown().success());
}

#[test]
fn frames_before_hello_ack_wait_for_ready() {
    let mut e = Ext::start("rust/echo");
    assert_eq!(e.next()["type"], "hello");
    e.send_raw("garbage before the handshake");
    e.send(json!({"type": "tool_call", "id": "early", "name": "echo", "args": {"n": 0}}));
    assert_eq!(e.next_fresh(Duration::from_millis(200)), None, "nothing may follow hello before hello_ack");
    e.send(hello_ack("/p"));
    let frames: Vec<Value> = (0..5).map(|_| e.next()).collect();
    assert_eq!(types(&frames), ["register_command", "register_tool", "register_tool", "register_tool", "register_tool"]);
    let rest: Vec<Value> = (0..3).map(|_| e.next()).collect();
    assert_eq!(types(&rest), ["subscribe", "ready", "tool_result"]);
    assert_eq!(rest[2]["id"], "early");
    assert!(e.shutdown().success());
}

#[test]
fn shutdown_before_hello_ack() {
    let mut e = Ext::start("rust/echo");
    assert_eq!(e.next()["type"], "hello");
    assert!(e.shutdown().success());
}

#[test]
fn weather_command_and_tool() {
    let mut e = Ext::start("rust/weather");
    e.handshake("");
    let r = e.command("a1", "weather", "berlin");
    assert_eq!(r, json!({"type": "command_response", "id": "a1", "action": "prompt", "prompt": "Tell me the weather for berlin"}));
    let r = e.tool("b2", "weather", json!({"city": "Berlin"}));
    assert_eq!(r, json!({"type": "tool_result", "id": "b2", "content": [{"type": "text", "text": "Berlin: sunny, 21°C (fake)"}], "is_error": false}));
    let r = e.tool("b3", "weather", json!({}));
    assert!(is_error(&r));
    assert_eq!(text(&r), "invalid args");
    // No cwd in hello_ack: no /cwd.
    let r = e.command("a4", "cwd", "");
    assert!(r["error"].as_str().unwrap_or("").contains("unknown command"), "{r}");
    assert!(e.shutdown().success());
}

#[test]
fn on_hello_registers_cwd_from_hello_ack() {
    let mut e = Ext::start("rust/hello");
    let (hello, frames) = e.handshake("/home/ada/project");
    assert_eq!(hello["capabilities"], json!(["commands", "tools", "events", "panels", "tool_cancel", "call_tool"]));
    let names: Vec<&Value> = frames.iter().filter(|f| f["type"] == "register_command").map(|f| &f["name"]).collect();
    assert_eq!(names, ["hello", "counter", "cwd"]);
    let r = e.command("1", "cwd", "");
    assert_eq!(r["display"], "/home/ada/project");
    let r = e.command("2", "hello", "zot");
    assert_eq!((r["action"].as_str(), r["display"].as_str()), (Some("display"), Some("hello, zot!")));
    assert!(e.shutdown().success());
}

#[test]
fn panels_open_render_and_close() {
    let mut e = Ext::start("rust/hello");
    e.handshake("/p");
    let r = e.command("1", "counter", "");
    assert_eq!(r["action"], "open_panel");
    assert_eq!(r["open_panel"]["id"], "counter");
    assert_eq!(r["open_panel"]["lines"], json!(["value: 0"]));
    e.send(json!({"type": "panel_key", "panel_id": "counter", "key": "up"}));
    e.send(json!({"type": "panel_key", "panel_id": "counter", "key": "up"}));
    e.send(json!({"type": "panel_key", "panel_id": "counter", "key": "rune", "text": "x"}));
    e.send(json!({"type": "panel_key", "panel_id": "counter", "key": "down"}));
    let renders: Vec<Value> = (0..3).map(|_| e.wait_for("panel_render", |f| f["type"] == "panel_render")).collect();
    let lines: Vec<&Value> = renders.iter().map(|f| &f["lines"][0]).collect();
    assert_eq!(lines, ["value: 1", "value: 2", "value: 1"]);
    e.send(json!({"type": "panel_key", "panel_id": "counter", "key": "esc"}));
    assert_eq!(e.wait_for("panel_close", |f| f["type"] == "panel_close"), json!({"type": "panel_close", "panel_id": "counter"}));
    e.send(json!({"type": "panel_close", "panel_id": "counter"}));
    let n = e.wait_for("notify", |f| f["type"] == "notify");
    assert_eq!((n["level"].as_str(), n["message"].as_str()), (Some("info"), Some("counter closed")));
    assert!(e.shutdown().success());
}

#[test]
fn guard_blocks_dangerous_bash_and_allows_the_rest() {
    let mut e = Ext::start("rust/guard");
    let (hello, frames) = e.handshake("/p");
    assert_eq!(hello["capabilities"], json!(["commands", "tools", "events", "panels", "tool_cancel", "call_tool"]));
    let sub = frames.iter().find(|f| f["type"] == "subscribe").expect("a subscribe frame");
    assert_eq!(sub["intercept"], json!(["tool_call"]));
    assert_eq!(sub["events"], json!(["session_start", "turn_start", "turn_end", "tool_call", "assistant_message"]));

    let r = e.intercept("i1", "tool_call", json!({"tool_id": "t1", "tool_name": "bash", "tool_args": {"command": "rm -rf /tmp/foo"}}));
    assert_eq!(r, json!({"type": "event_intercept_response", "id": "i1", "block": true, "reason": "refused: command matches the danger pattern \"rm -rf\""}));
    for (n, cmd) in ["mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=x", ":(){ :|:& };:", "cat x > /dev/sda"].iter().enumerate() {
        let id = format!("d{n}");
        let r = e.intercept(&id, "tool_call", json!({"tool_name": "bash", "tool_args": {"command": cmd}}));
        assert_eq!(r["block"], true, "{cmd}: {r}");
    }
    let r = e.intercept("i2", "tool_call", json!({"tool_id": "t2", "tool_name": "bash", "tool_args": {"command": "ls -la"}}));
    assert_eq!(r, json!({"type": "event_intercept_response", "id": "i2", "block": false}), "allow, nothing rewritten");
    let r = e.intercept("i3", "tool_call", json!({"tool_name": "write", "tool_args": {"command": "rm -rf /"}}));
    assert_eq!(r["block"], false, "only bash is guarded");
    // An interceptor nobody registered answers allow.
    let r = e.intercept("i4", "turn_start", json!({"step": 1}));
    assert_eq!(r["block"], false);
    assert!(e.shutdown().success());
}

#[test]
fn guard_audits_events_in_order() {
    let mut e = Ext::start("rust/guard");
    e.handshake("/p");
    let events = [
        json!({"type": "event", "event": "session_start"}),
        json!({"type": "event", "event": "turn_start", "step": 1}),
        json!({"type": "event", "event": "tool_call", "tool_id": "t1", "tool_name": "ls", "tool_args": {}}),
        json!({"type": "event", "event": "not_subscribed", "x": 1}),
        json!({"type": "event", "event": "assistant_message", "text": "done"}),
        json!({"type": "event", "event": "turn_end", "stop": "end_turn"}),
    ];
    for ev in events {
        e.send(ev);
    }
    let expected = [
        "event session_start {}",
        "event turn_start {\"step\":1}",
        "event tool_call {\"tool_args\":{},\"tool_id\":\"t1\",\"tool_name\":\"ls\"}",
        "event assistant_message {\"text\":\"done\"}",
        "event turn_end {\"stop\":\"end_turn\"}",
    ]
    .join("\n");
    // Events run before the next frame is read: the first call sees them all.
    let r = e.tool("a0", "audit_log", json!({}));
    assert_eq!(text(&r), expected);
    assert!(e.shutdown().success());
}

#[test]
fn a_panicking_handler_answers_with_an_error() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    for n in 0..3 {
        let r = e.tool(&format!("p{n}"), "panic", json!({}));
        assert!(is_error(&r), "{r}");
        assert!(text(&r).contains("asked to panic"), "{r}");
    }
    // An event handler's panic stops neither reading nor the next call.
    e.send(json!({"type": "event", "event": "panic"}));
    let r = e.tool("e1", "echo", json!({"still": "here"}));
    assert_eq!(text(&r), r#"{"still":"here"}"#);
    let r = e.command("c1", "echo", "alive");
    assert_eq!(r["display"], "alive");
    assert!(e.shutdown().success());
}

#[test]
fn slow_tools_do_not_block_fast_ones() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    // More slow calls than the pool keeps workers for; slow enough that
    // the fast call and the cancels come first however loaded the machine.
    for n in 0..8 {
        e.send(json!({"type": "tool_call", "id": format!("s{n}"), "name": "slow", "args": {"ms": 30000}}));
    }
    e.send(json!({"type": "tool_call", "id": "fast", "name": "echo", "args": {"n": 1}}));
    let first = e.next();
    assert_eq!((first["type"].as_str(), first["id"].as_str()), (Some("tool_result"), Some("fast")), "the fast call overtakes the slow ones");
    let r = e.command("c", "echo", "quick");
    assert_eq!(r["display"], "quick");
    for n in 0..8 {
        e.send(json!({"type": "tool_cancel", "id": format!("s{n}")}));
    }
    // Every slow call ends by its cancel: none has slept its 30 s.
    for n in 0..8 {
        let r = e.reply("tool_result", &format!("s{n}"));
        assert_eq!(text(&r), "cancelled", "{r}");
    }
    assert!(e.shutdown().success());
}

#[test]
fn tool_cancel_reaches_the_handler() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    // The call is running once its `started` note is out; a 120 s sleep
    // that ends well inside the 30 s wait ended by its cancel.
    e.send(json!({"type": "tool_call", "id": "s1", "name": "slow", "args": {"ms": 120000, "note": true}}));
    e.wait_for("the slow call's start note", |f| f["type"] == "notify" && f["message"] == "slow 120000 ms started");
    e.send(json!({"type": "tool_cancel", "id": "s1"}));
    e.send(json!({"type": "tool_cancel", "id": "no-such-call"}));
    let r = e.reply("tool_result", "s1");
    assert!(is_error(&r) && text(&r) == "cancelled", "{r}");
    let r = e.tool("s2", "slow", json!({"ms": 10}));
    assert_eq!(text(&r), "slept 10 ms");
    assert!(e.shutdown().success());
}

#[test]
fn a_thousand_concurrent_calls_are_each_answered_once() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    const N: usize = 1000;
    let mut batch = String::new();
    for n in 0..N {
        batch.push_str(&json!({"type": "tool_call", "id": format!("c{n}"), "name": "echo", "args": {"n": n}}).to_string());
        batch.push('\n');
    }
    e.send_raw(batch.trim_end());
    let mut seen = HashSet::new();
    for _ in 0..N {
        let r = e.next();
        assert_eq!(r["type"], "tool_result", "{r}");
        let id = r["id"].as_str().expect("string id").to_string();
        let n: usize = id[1..].parse().expect("an id we sent");
        assert_eq!(text(&r), format!("{{\"n\":{n}}}"));
        assert!(seen.insert(id), "answered twice: {r}");
    }
    assert_eq!(e.next_fresh(Duration::from_millis(200)), None, "no extra answers");
    assert!(e.shutdown().success());
}

#[test]
fn big_results_and_bad_lines() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    e.send_raw("this is not json");
    e.send_raw(r#"{"type":"from_the_future","id":"x"}"#);
    e.send_raw("[1,2,3]");
    e.send_raw("");
    // A malformed request with an id still gets its one answer.
    e.send_raw(r#"{"type":"tool_call","id":"bad"}"#);
    let r = e.reply("tool_result", "bad");
    assert!(is_error(&r), "{r}");
    let r = e.tool("u", "no_such_tool", json!({}));
    assert!(is_error(&r) && text(&r).contains("unknown tool"), "{r}");
    let r = e.tool("big", "big", json!({"bytes": 4 << 20}));
    assert_eq!(text(&r).len(), 4 << 20);
    let r = e.tool("e", "echo", json!({"ok": true}));
    assert_eq!(text(&r), r#"{"ok":true}"#);
    assert!(e.shutdown().success());
}

#[test]
fn end_of_input_exits_cleanly() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    assert!(e.exit_status().success());
    // Even before hello_ack the process ends (run() returns an error,
    // which the example logs).
    let mut e = Ext::start("rust/echo");
    assert_eq!(e.next()["type"], "hello");
    e.exit_status();
}

#[test]
fn python_notes() {
    if Command::new("python3").arg("--version").output().is_err() {
        skip::skip("python_notes: python3 is not on PATH");
        return;
    }
    let mut e = Ext::start("python/notes");
    let (hello, frames) = e.handshake("/p");
    assert_eq!(hello["name"], "notes");
    assert_eq!(types(&frames), ["register_command", "register_tool", "ready"]);
    let r = e.command("1", "note", "buy milk");
    assert_eq!(r["display"], "noted: buy milk");
    let n = e.wait_for("notify", |f| f["type"] == "notify");
    assert_eq!(n["level"], "success");
    e.command("2", "note", "call \"mom\"");
    let r = e.tool("3", "read_notes", json!({}));
    assert_eq!(text(&r), "buy milk\ncall \"mom\"");
    let r = e.command("4", "note", "");
    assert!(r["error"].is_string(), "{r}");
    assert!(e.shutdown().success());
}

#[test]
fn shell_greet() {
    let mut e = Ext::start("shell/greet");
    let (hello, frames) = e.handshake("/p");
    assert_eq!(hello["name"], "greet");
    assert_eq!(types(&frames), ["register_command", "register_tool", "ready"]);
    let r = e.command("c-1", "greet", "Ada \"the\" Lovelace");
    assert_eq!(r, json!({"type": "command_response", "id": "c-1", "action": "display", "display": "hello, Ada \"the\" Lovelace"}));
    let r = e.tool("t-1", "uptime", json!({"type": "nested"}));
    assert!(!is_error(&r) && !text(&r).trim().is_empty(), "{r}");
    assert!(e.shutdown().success());
}

#[test]
fn node_scratchpad() {
    if Command::new("node").arg("--version").output().is_err() {
        skip::skip("node_scratchpad: node is not on PATH");
        return;
    }
    let mut e = Ext::start("node/scratchpad");
    let (hello, frames) = e.handshake("/p");
    assert_eq!(hello["name"], "scratchpad");
    assert_eq!(types(&frames), ["register_command", "register_tool", "ready"]);
    let r = e.command("1", "note", "hi");
    assert_eq!(r["display"], "noted: hi");
    let r = e.tool("2", "read_notes", json!({}));
    assert_eq!(text(&r), "hi");
    assert!(e.shutdown().success());
}
