//! docs/protocol.md §2: junk lines, unknown types and stray replies are logged
//! and skipped; long lines are accepted up to the limit and discarded whole
//! beyond it, with the stream recovering.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;
use zot_host::host::{HostEvent, State};

#[test]
fn junk_unknown_types_and_stray_replies_are_logged_and_skipped() {
    let t = TempDir::new("lines-junk");
    // --junk sends junk during registration, the `noise` tool mid-call.
    let d = py_ext(t.path(), "noisy", "noisy", &["--junk", "--tools", "noise,echo"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["noisy".to_string()], "junk before ready did not break the handshake");

    let r = host.tool("noise", None).unwrap();
    assert_eq!(text_of(&r.content), "still here");
    assert!(!r.is_error);
    let want = [
        "[zot] skipped a stdout line: not JSON",
        "[zot] skipped a stdout line: no string `type` field: {\"no_type\":1}",
        "[zot] skipped a stdout line: unknown frame type \"bogus_kind\"",
        "[zot] skipped a stdout line: unknown frame type \"bogus\"",
        "[zot] skipped a stdout line: not a JSON object: [1,2]",
        "[zot] dropped tool_result for unknown request id \"777777\"",
        "[zot] dropped tool_result for unknown request id \"999999\"",
    ];
    for w in want {
        assert!(log_contains(t.path(), "noisy", w, Duration::from_secs(30)), "missing {w:?} in:\n{}", read_log(t.path(), "noisy"));
    }
    // Invalid UTF-8 is junk too; every host line is a single line.
    let log = read_log(t.path(), "noisy");
    assert!(log.matches("[zot] skipped a stdout line: not JSON").count() >= 4, "{log}");
    assert_eq!(ext_info(&host, "noisy").state, State::Ready);
    assert_eq!(echo_of(&host.tool("echo", Some(json!({"after": "junk"}))).unwrap().content)["args"]["after"], "junk");
}

#[test]
fn refused_registrations_and_intercepts_are_logged() {
    let t = TempDir::new("lines-refused");
    let d = py_ext(t.path(), "picky", "picky", &["--bad-schema", "--tools", "fine", "--intercepts", "turn_end,tool_call"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    let info = ext_info(&host, "picky");
    assert_eq!(info.tools, vec!["fine"], "a tool whose schema is not an object is not registered");
    assert_eq!(info.intercepts, vec!["tool_call"]);
    let log = read_log(t.path(), "picky");
    assert!(log.contains("[zot] refused tool \"badschema\": its schema is not a JSON object"), "{log}");
    assert!(log.contains("[zot] ignored intercept \"turn_end\""), "{log}");
    assert!(matches!(host.tool("badschema", None), Err(zot_host::host::HostError::UnknownTool(_))));
    let l = host.list().unwrap();
    assert_eq!(l.tools.len(), 1);
    assert_eq!(l.tools[0].schema, json!({"type": "object", "properties": {}}));
}

#[test]
fn a_ten_mib_line_round_trips_intact() {
    let t = TempDir::new("lines-big");
    let d = py_ext(t.path(), "bulky", "bulky", &["--tools", "big,echo"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    const N: usize = 10 * 1024 * 1024;
    let r = host.tool("big", Some(json!({"bytes": N}))).unwrap();
    assert!(!r.is_error);
    let text = r.content[0]["text"].as_str().unwrap();
    assert_eq!(text.len(), N);
    assert!(text.bytes().all(|b| b == b'x'));
    assert!(!read_log(t.path(), "bulky").contains("discarded"));
    assert_eq!(echo_of(&host.tool("echo", None).unwrap().content)["from"], "bulky");
}

#[test]
fn a_twenty_mib_line_is_discarded_and_the_stream_recovers() {
    let t = TempDir::new("lines-huge");
    let d = py_ext(t.path(), "huge", "huge", &["--tools", "huge_line,echo"]);
    let (host, ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    const N: usize = 20 * 1024 * 1024;
    // The fixture writes a 20 MiB notify line, then the real result.
    let r = host.tool("huge_line", Some(json!({"bytes": N}))).unwrap();
    assert_eq!(text_of(&r.content), "after");
    assert!(!r.is_error);
    let line = N + r#"{"type":"notify","message":""}"#.len();
    // The reported size may or may not count the newline.
    let said = |n: usize| format!("[zot] discarded a line of {n} bytes from stdout (limit 16777216 bytes)");
    assert!(
        wait_until(Duration::from_secs(30), || {
            let log = read_log(t.path(), "huge");
            log.contains(&said(line)) || log.contains(&said(line + 1))
        }),
        "{}",
        read_log(t.path(), "huge")
    );
    // The discarded notify never reached the host.
    assert!(ev.try_iter().all(|e| !matches!(e, HostEvent::Notify { .. })));
    assert_eq!(ext_info(&host, "huge").state, State::Ready);
    assert_eq!(echo_of(&host.tool("echo", Some(json!({"n": 1}))).unwrap().content)["args"]["n"], 1);
}
