//! `zot serve`'s refusals and failures (docs/protocol.md §4, error codes):
//! malformed and unknown requests, unknown names, calls that time out,
//! an extension that crashes with calls in flight, and `busy` when an
//! extension stops reading its input.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::{json, Value};
use serve_proc::*;
use std::time::{Duration, Instant};

#[test]
fn bad_requests() {
    let t = TempDir::new("serve-bad");
    let a = ext(&t, "a", &["--commands", "display", "--tools", "echo"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let cases: [(&str, Value); 24] = [
        ("not json", Value::Null),
        ("{\"id\":1,", Value::Null),
        ("[1,2]", Value::Null),
        ("\"ping\"", Value::Null),
        ("42", Value::Null),
        ("null", Value::Null),
        (r#"{"type":"ping"}"#, Value::Null),
        (r#"{"id":{"x":1},"type":"ping"}"#, Value::Null),
        (r#"{"id":null,"type":"ping"}"#, Value::Null),
        (r#"{"id":"t1"}"#, json!("t1")),
        (r#"{"id":"t2","type":5}"#, json!("t2")),
        (r#"{"id":"t3","type":"frobnicate"}"#, json!("t3")),
        (r#"{"id":"t4","type":"command"}"#, json!("t4")),
        (r#"{"id":"t5","type":"command","name":5}"#, json!("t5")),
        (r#"{"id":"t6","type":"command","name":"display","args":[1]}"#, json!("t6")),
        (r#"{"id":"t7","type":"tool","name":"echo","args":[1]}"#, json!("t7")),
        (r#"{"id":"t8","type":"tool","name":"echo","args":"{}"}"#, json!("t8")),
        (r#"{"id":"t9","type":"tool","args":{}}"#, json!("t9")),
        (r#"{"id":"t10","type":"panel_key","extension":"a","panel_id":"p"}"#, json!("t10")),
        (r#"{"id":"t11","type":"panel_close","extension":"a"}"#, json!("t11")),
        (r#"{"id":"t12","type":"event"}"#, json!("t12")),
        (r#"{"id":"t13","type":"intercept","tool_name":"x"}"#, json!("t13")),
        (r#"{"id":"t14","type":"intercept","event":"session_start"}"#, json!("t14")),
        (r#"{"id":"t15","type":"panel_key","extension":"a","panel_id":"p","key":"nope"}"#, json!("t15")),
    ];
    for (line, id) in cases {
        s.z.send(line);
        let r = s.next_response();
        assert_eq!(r["id"], id, "{line} -> {r}");
        assert_eq!(r["ok"], false, "{line} -> {r}");
        assert_eq!(r["error"]["code"], "bad_request", "{line} -> {r}");
        assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{line} -> {r}");
        // The code says it is a bad request; the message does not say it again.
        assert!(!r["error"]["message"].as_str().is_some_and(|m| m.starts_with("bad request")), "{line} -> {r}");
    }
    // Not UTF-8, inside a string or outside one: not JSON (a client's
    // request is never repaired, docs/protocol.md §2).
    s.z.write(b"{\"id\":\"u\",\"type\":\"ping\",\"x\":\"\xff\"}\n");
    let r = s.next_response();
    assert_eq!((&r["id"], &r["error"]["code"]), (&Value::Null, &json!("bad_request")), "{r}");
    s.z.write(b"{\"id\":\"v\",\"type\":\"ping\",\"x\":\xff}\n");
    let r = s.next_response();
    assert_eq!((&r["id"], &r["error"]["code"]), (&Value::Null, &json!("bad_request")), "{r}");
    // Blank lines are skipped; CRLF is accepted; the host still works.
    s.z.write(b"\n   \n\r\n{\"id\":\"crlf\",\"type\":\"ping\"}\r\n");
    let r = s.next_response();
    assert_eq!(r, json!({"type": "response", "id": "crlf", "ok": true, "result": {"pong": true}}));
    let r = s.ok(json!({"id": "after", "type": "command", "name": "display", "args": "ok"}));
    assert_eq!(r["display"], "display:ok");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(s.notes("extension_exited").is_empty());
}

#[test]
fn unknown_names() {
    let t = TempDir::new("serve-unknown");
    let a = ext(&t, "a", &["--commands", "display", "--tools", "echo"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let (code, msg) = s.err(json!({"id": 1, "type": "command", "name": "echo"}));
    assert_eq!((code.as_str(), msg.contains("echo")), ("unknown_command", true), "{msg}");
    let (code, msg) = s.err(json!({"id": 2, "type": "tool", "name": "display"}));
    assert_eq!((code.as_str(), msg.contains("display")), ("unknown_tool", true), "{msg}");
    let (code, msg) = s.err(json!({"id": 3, "type": "panel_key", "extension": "b", "panel_id": "p", "key": "up"}));
    assert_eq!((code.as_str(), msg.contains('b')), ("unknown_extension", true), "{msg}");
    let (code, _) = s.err(json!({"id": 4, "type": "panel_close", "extension": "", "panel_id": "p"}));
    assert_eq!(code, "unknown_extension");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn silent_calls_time_out() {
    let t = TempDir::new("serve-timeout");
    let a = ext(&t, "a", &["--commands", "silent", "--tools", "silent,echo,cancelled"]);
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "1", "--command-timeout", "0.5"]);
    s.ready_all();
    let start = Instant::now();
    let (code, msg) = s.err(json!({"id": "tool", "type": "tool", "name": "silent"}));
    let took = start.elapsed();
    assert_eq!(code, "timeout");
    assert!(msg.contains("\"a\"") && msg.contains("1s"), "{msg}");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(20), "{took:?}");
    let start = Instant::now();
    let (code, msg) = s.err(json!({"id": "cmd", "type": "command", "name": "silent"}));
    let took = start.elapsed();
    assert_eq!(code, "timeout");
    assert!(msg.contains("silent"), "{msg}");
    assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(20), "{took:?}");
    // The extension was told to give the tool call up, and still answers.
    let r = s.ok(json!({"id": "c", "type": "tool", "name": "cancelled"}));
    let cancelled: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(cancelled.as_array().map(Vec::len), Some(1), "{r}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn crash_fails_calls_at_once_and_is_notified() {
    let t = TempDir::new("serve-crash");
    let a = ext(&t, "a", &["--tools", "crash,sleep"]);
    let b = ext(&t, "b", &["--tools", "echo"]);
    let mut s = Serve::start(&t, &[a, b], &["--tool-timeout", "30"]);
    s.ready_all();
    let start = Instant::now();
    s.send(&json!({"id": "inflight", "type": "tool", "name": "sleep", "args": {"ms": 20000}}));
    let (code, msg) = s.err(json!({"id": "boom", "type": "tool", "name": "crash"}));
    assert_eq!(code, "extension_exited");
    assert!(msg.contains("\"a\""), "{msg}");
    let r = s.response(&json!("inflight"));
    assert_eq!(r["error"]["code"], "extension_exited", "{r}");
    // Well before the 20 s the call sleeps and the 30 s tool timeout.
    assert!(start.elapsed() < Duration::from_secs(15), "calls waited: {:?}", start.elapsed());
    s.note("extension_exited");
    assert_eq!(s.notes("extension_exited"), [json!({"type": "extension_exited", "extension": "a", "code": 3})]);
    // Its tools are gone; the other extension is unaffected.
    let (code, _) = s.err(json!({"id": "again", "type": "tool", "name": "sleep", "args": {"ms": 1}}));
    assert_eq!(code, "unknown_tool");
    let r = s.ok(json!({"id": "b", "type": "tool", "name": "echo", "args": {"still": true}}));
    assert_eq!(echoed(&r)["from"], "b");
    let l = s.ok(json!({"id": "l", "type": "list"}));
    assert_eq!(l["extensions"][0]["state"], "exited");
    let effective: Vec<&Value> = l["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
    assert_eq!(effective, [&json!("echo")], "{l}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn busy_when_the_extension_stops_reading() {
    let t = TempDir::new("serve-busy");
    // Registers before hello_ack, then never reads stdin again.
    let stuck = ext(&t, "stuck", &["--legacy", "--ignore-stdin", "--tools", "echo"]);
    let ok = ext(&t, "ok", &["--tools", "ping"]);
    // No call times out during the test: an answer is busy or nothing.
    let mut s = Serve::start(&t, &[stuck, ok], &["--tool-timeout", "30"]);
    s.ready_all();
    // 1 KiB per frame: the pipe (64 KiB) fills after some 60 frames, then
    // the 1024-frame queue; the rest must fail at once.
    const N: usize = 1400;
    let pad = "x".repeat(1024);
    let mut all = String::new();
    for i in 0..N {
        all.push_str(&json!({"id": i, "type": "tool", "name": "echo", "args": {"i": i, "pad": pad}}).to_string());
        all.push('\n');
    }
    let start = Instant::now();
    s.z.write(all.as_bytes());
    // The last call is refused (the queue cannot have drained), and every
    // refusal is answered before it, in order.
    let last = s.response(&json!(N - 1));
    assert_eq!(last["error"]["code"], "busy", "{last}");
    assert!(last["error"]["message"].as_str().unwrap().contains("\"stuck\""), "{last}");
    // Well before the 30 s tool timeout a queued call would wait for.
    assert!(start.elapsed() < Duration::from_secs(20), "busy was not fast: {:?}", start.elapsed());
    let busy: Vec<u64> =
        s.frames.iter().filter(|f| f["error"]["code"] == "busy").map(|f| f["id"].as_u64().unwrap()).collect();
    let first = busy[0] as usize;
    assert!(first >= 1024, "busy before the queue could be full: call {first}");
    assert_eq!(busy, (first as u64..N as u64).collect::<Vec<_>>(), "refusals not contiguous");
    // Nothing else was answered: the accepted calls are still pending.
    assert_eq!(s.frames.iter().filter(|f| f["type"] == "response").count(), N - first);
    // The other extension is not held up.
    let r = s.ok(json!({"id": "other", "type": "tool", "name": "ping"}));
    assert_eq!(echoed(&r)["from"], "ok");
    // Accepted calls are answered before shutdown completes; the stuck
    // extension is killed so they fail at once rather than at their timeout.
    let list = s.ok(json!({"id": "list", "type": "list"}));
    let pid = list["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "stuck").unwrap()["pid"].as_i64().unwrap();
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    let mut count = vec![0; N];
    for f in s.frames.iter().filter(|f| f["type"] == "response" && f["id"] != "other" && f["id"] != "list") {
        let i = f["id"].as_u64().unwrap() as usize;
        count[i] += 1;
        let code = f["error"]["code"].as_str().unwrap();
        assert_eq!(code, if i < first { "extension_exited" } else { "busy" }, "{f}");
    }
    assert!(count.iter().all(|&n| n == 1), "ids not answered exactly once");
}
