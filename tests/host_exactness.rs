//! The host keeps its promises exactly (issue: core exactness): every
//! answer an extension wrote counts, every request gets one answer, a
//! responder cannot deadlock the host, and the line caps are exact.

mod common;

use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zot_host::host::{HostError, Request, Responder, Response};
use zot_host::protocol::Payload;

#[test]
fn a_responder_that_calls_back_into_the_host_is_refused_instead_of_deadlocking() {
    let t = TempDir::new("exact-reentrant");
    let a = py_ext(t.path(), "a", "a", &["--tools", "echo"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    let host = Arc::new(host);
    host.wait_ready().unwrap();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let inner = host.clone();
    host.submit(Request::List, move |_| {
        // On the dispatcher thread: a blocking call would wait for itself.
        let _ = tx.send(inner.list().map(|_| ()));
    });
    let got = rx.recv_timeout(Duration::from_secs(10)).expect("the responder ran and the host did not hang");
    assert!(matches!(&got, Err(HostError::Internal(m)) if m.contains("dispatcher thread")), "{got:?}");
    assert_eq!(got.unwrap_err().code(), "internal");
    // And the host goes on.
    assert_eq!(host.tool("echo", None).unwrap().extension, "a");
}

#[test]
fn a_panicking_responder_does_not_stop_the_host_and_a_dropped_one_answers_internal() {
    let t = TempDir::new("exact-panic");
    let a = py_ext(t.path(), "a", "a", &["--tools", "echo"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    host.wait_ready().unwrap();
    host.submit(Request::List, |_| panic!("a responder panics"));
    assert_eq!(host.tool("echo", None).unwrap().extension, "a");

    let got = Arc::new(Mutex::new(None));
    let g = got.clone();
    let r = Responder::new(move |res| *g.lock().unwrap() = Some(res));
    drop(r);
    let res = got.lock().unwrap().take().expect("a dropped responder answers");
    assert!(matches!(res, Err(HostError::Internal(_))), "{res:?}");
}

#[test]
fn a_sixteen_mib_reply_ending_in_crlf_is_accepted() {
    let t = TempDir::new("exact-crlf");
    let a = py_ext(t.path(), "a", "a", &["--tools", "raw_reply"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    host.wait_ready().unwrap();
    let cap = zot_host::protocol::MAX_LINE;
    let r = host.tool("raw_reply", Some(json!({"bytes": cap, "crlf": true}))).unwrap();
    let text = r.content[0]["text"].as_str().unwrap();
    assert!(text.len() > cap - 100 && text.bytes().all(|b| b == b'z'), "{} bytes", text.len());
    // One byte more is over the cap.
    let e = host.tool("raw_reply", Some(json!({"bytes": cap + 1, "crlf": true}))).unwrap_err();
    assert_eq!(e.code(), "too_large", "{e}");
}

#[test]
fn a_reply_over_the_cap_fails_its_call_at_once_with_too_large() {
    let t = TempDir::new("exact-toolarge");
    let a = py_ext(t.path(), "a", "a", &["--tools", "raw_reply,echo"]);
    let mut cfg = host_config(t.path(), vec![a]);
    cfg.timeouts.tool = Duration::from_secs(600);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let e = host.tool("raw_reply", Some(json!({"bytes": 20 * 1024 * 1024}))).unwrap_err();
    // Not the 600 s timeout: the id was read from the head of the line.
    assert!(matches!(&e, HostError::TooLarge { extension, .. } if extension == "a"), "{e:?}");
    assert_eq!(e.code(), "too_large");
    assert!(log_contains(t.path(), "a", "for request", Duration::from_secs(10)), "{}", read_log(t.path(), "a"));
    // The stream goes on.
    assert_eq!(host.tool("echo", None).unwrap().extension, "a");
}

#[test]
fn event_payloads_may_not_set_type_or_id() {
    let t = TempDir::new("exact-payload");
    let a = py_ext(t.path(), "a", "a", &["--events", "custom", "--intercepts", "tool_call"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    host.wait_ready().unwrap();
    for key in ["type", "id"] {
        let mut p = Payload::new();
        p.insert(key.into(), json!("x"));
        let e = host.event("custom", p.clone()).unwrap_err();
        assert_eq!(e.code(), "bad_request", "{e}");
        assert!(e.to_string().contains(&format!("`{key}`")), "{e}");
        let e = host.intercept("tool_call", p).unwrap_err();
        assert_eq!(e.code(), "bad_request", "{e}");
    }
    assert_eq!(host.event("custom", Payload::new()).unwrap(), 1);
}

#[test]
fn a_tool_registered_without_a_schema_takes_an_object() {
    let t = TempDir::new("exact-noschema");
    let a = py_ext(t.path(), "a", "a", &["--no-schema-tools", "bare"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    host.wait_ready().unwrap();
    let l = host.list().unwrap();
    let bare = l.tools.iter().find(|t| t.name == "bare").expect("registered");
    assert_eq!(bare.schema, json!({"type": "object"}));
    assert_eq!(host.tool("bare", None).unwrap().extension, "a");
}

#[test]
fn answers_written_at_shutdown_are_kept_through_a_reload() {
    // 30 calls held by the extension; the reload's `shutdown` makes it
    // answer them all and exit at once. Every answer counts.
    let t = TempDir::new("exact-reload");
    let a = py_ext(t.path(), "a", "a", &["--tools", "hold", "--answer-on-shutdown"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    host.wait_ready().unwrap();
    let answers = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..30 {
        let answers = answers.clone();
        host.submit(Request::Tool { name: "hold".into(), args: None, tool_id: None }, move |r| {
            answers.lock().unwrap().push(r);
        });
    }
    // The reload is handled after the calls, so `shutdown` follows them.
    let report = host.reload().unwrap();
    assert_eq!(report.ready, 1, "{report:?}");
    assert!(wait_until(Duration::from_secs(10), || answers.lock().unwrap().len() == 30));
    for r in answers.lock().unwrap().iter() {
        match r {
            Ok(Response::Tool(t)) => assert_eq!(text_of(&t.content), "answered at shutdown"),
            other => panic!("a held answer was lost: {other:?}"),
        }
    }
}

#[test]
fn absurd_durations_in_the_library_do_not_kill_the_dispatcher() {
    let t = TempDir::new("exact-durations");
    let a = py_ext(t.path(), "a", "a", &["--tools", "echo"]);
    let mut cfg = host_config(t.path(), vec![a]);
    cfg.timeouts.hello = Duration::MAX;
    cfg.timeouts.ready_grace = Duration::from_secs(u64::MAX / 2);
    cfg.timeouts.tool = Duration::MAX;
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["a".to_string()]);
    let r = host.tool("echo", Some(json!({"k": 1}))).unwrap();
    assert_eq!(echo_of(&r.content)["args"], json!({"k": 1}));
}

#[test]
fn last_words_before_an_exit_count_in_the_library_too() {
    let t = TempDir::new("exact-last-words");
    const N: usize = 20;
    let dirs = (0..N).map(|i| py_ext(t.path(), &format!("x{i:02}"), &format!("x{i:02}"), &["--tools", &format!("answer_exit@{i}")])).collect();
    let mut cfg = host_config(t.path(), dirs);
    cfg.timeouts.hello = Duration::from_secs(60);
    cfg.timeouts.ready_grace = Duration::from_secs(60);
    let (host, _ev) = start_host(cfg);
    assert_eq!(host.wait_ready().unwrap().ready.len(), N);
    let (tx, rx) = crossbeam_channel::unbounded();
    for i in 0..N {
        let tx = tx.clone();
        host.submit(Request::Tool { name: format!("answer_exit@{i}"), args: None, tool_id: None }, move |r| {
            let _ = tx.send((i, r));
        });
    }
    for _ in 0..N {
        let (i, r) = rx.recv_timeout(Duration::from_secs(30)).expect("every call is answered");
        match r {
            Ok(Response::Tool(t)) => assert_eq!(text_of(&t.content), "last words", "call {i}"),
            other => panic!("call {i}: the answer before the exit was lost: {other:?}"),
        }
    }
}
