//! How `zot serve` ends (docs/protocol.md §4): the `shutdown` request,
//! the end of input, SIGTERM, a request after `shutdown`, the bound on
//! shutdown and what it answers before its own response, and that no
//! extension process is left.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::json;
use serve_proc::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use zot_proc::{session_args, Zot, LINE_WAIT};

#[test]
fn shutdown_answers_then_stops_everything() {
    let t = TempDir::new("serve-shutdown");
    let a = ext(&t, "a", &["--tools", "echo"]);
    let b = ext(&t, "b", &["--grandchild"]);
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready_all();
    let pids = s.pids();
    assert_eq!(pids.len(), 2);
    assert_eq!(s.ok(json!({"id": "bye", "type": "shutdown"})), json!({}));
    // Stdin stays open: shutdown alone ends the process.
    assert_eq!(s.finish(), 0);
    assert_gone(&pids);
}

#[test]
fn end_of_input_is_shutdown() {
    let t = TempDir::new("serve-eof");
    let a = ext(&t, "a", &["--tools", "echo"]);
    let b = ext(&t, "b", &[]);
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready_all();
    let pids = s.pids();
    assert_eq!(pids.len(), 2);
    // A call in flight at the end of input is answered with its result
    // before the extensions stop; a last line without a newline still
    // counts.
    s.send(&json!({"id": "inflight", "type": "tool", "name": "echo", "args": {"n": 1}}));
    s.z.write(br#"{"id":"last","type":"ping"}"#);
    s.z.close_stdin();
    assert_eq!(s.response(&json!("last"))["result"], json!({"pong": true}));
    let r = s.response(&json!("inflight"));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(echoed(&r["result"])["args"], json!({"n": 1}), "{r}");
    assert_eq!(s.finish(), 0);
    assert_gone(&pids);
    let answers = s.frames.iter().filter(|f| f["id"] == "inflight").count();
    assert_eq!(answers, 1);
}

#[test]
fn request_after_shutdown_is_refused() {
    let t = TempDir::new("serve-stopping");
    let a = ext(&t, "a", &["--tools", "echo"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let pids = s.pids();
    // Both lines in one write: the second is read while the host stops.
    let two = format!(
        "{}\n{}\n",
        json!({"id": "s", "type": "shutdown"}),
        json!({"id": "late", "type": "tool", "name": "echo"})
    );
    s.z.write(two.as_bytes());
    assert_eq!(s.response(&json!("s"))["result"], json!({}));
    let late = s.response(&json!("late"));
    assert_eq!(late["error"]["code"], "shutting_down", "{late}");
    assert_eq!(s.finish(), 0);
    assert_gone(&pids);
}

#[test]
fn sigterm_stops_extensions_and_exits_143() {
    let t = TempDir::new("serve-sigterm");
    let a = ext(&t, "a", &["--tools", "sleep"]);
    let b = ext(&t, "b", &["--grandchild"]);
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready_all();
    let pids = s.pids();
    assert_eq!(pids.len(), 2);
    // A call in flight does not hold the exit up.
    s.send(&json!({"id": "slow", "type": "tool", "name": "sleep", "args": {"ms": 5000}}));
    s.z.signal(libc::SIGTERM);
    let status = s.z.wait_exit(LINE_WAIT);
    assert_eq!(status.code(), Some(143), "{status:?}\n{}", s.z.context());
    assert_gone(&pids);
}

#[test]
fn shutdown_is_bounded_and_answers_everything_before_its_own_response() {
    // docs/protocol.md §4, shutdown: a tool call that is never answered does not
    // hold the stop for its timeout (60 s by default); it is answered
    // `shutting_down` before the `shutdown` response, which comes last.
    let t = TempDir::new("serve-shut-hung");
    let a = ext(&t, "a", &["--tools", "silent,echo"]);
    let args = session_args(t.path(), Some("serve"), &[a], &["--tool-timeout", "60"]);
    let mut s = Serve { z: Zot::spawn(t.path(), &args, &[]), frames: Vec::new(), taken: Vec::new(), exts: 1 };
    s.ready_all();
    let pids = s.pids();
    s.send(&json!({"id": "hung", "type": "tool", "name": "silent"}));
    s.send(&json!({"id": "quick", "type": "tool", "name": "echo"}));
    assert_eq!(s.response(&json!("quick"))["ok"], true);
    let started = Instant::now();
    s.send(&json!({"id": "bye", "type": "shutdown"}));
    let bye = s.response_index(&json!("bye"));
    let stop_took = started.elapsed();
    let hung = s.frames.iter().position(|f| f["id"] == "hung").expect("the hung call is answered");
    assert!(hung < bye, "the hung call's answer comes before the shutdown response: {:?}", s.frames);
    assert_eq!(s.frames[hung]["error"]["code"], "shutting_down", "{}", s.frames[hung]);
    assert_eq!(s.frames[bye]["result"], json!({}));
    assert_eq!(bye, s.frames.len() - 1);
    assert_eq!(s.finish(), 0);
    assert!(s.frames.last().is_some_and(|f| f["id"] == "bye"), "the shutdown response is the last line: {:?}", s.frames);
    // Far below the 60 s tool timeout it would otherwise wait for.
    assert!(stop_took < Duration::from_secs(30), "{stop_took:?}");
    assert_gone(&pids);
}

#[test]
fn an_answer_written_just_before_exiting_is_kept() {
    // docs/protocol.md §3 rule 8: 12 extensions each answer and exit at once;
    // every answer counts (none comes back `extension_exited`).
    let t = TempDir::new("serve-last-words");
    const N: usize = 12;
    let exts: Vec<PathBuf> = (0..N).map(|i| ext(&t, &format!("x{i:02}"), &["--tools", &format!("answer_exit@{i}")])).collect();
    let mut s = Serve::start(&t, &exts, &["--hello-timeout", "60", "--ready-grace", "60"]);
    s.ready_all();
    let mut batch = String::new();
    for i in 0..N {
        batch.push_str(&json!({"id": i, "type": "tool", "name": format!("answer_exit@{i}")}).to_string());
        batch.push('\n');
    }
    s.z.write(batch.as_bytes());
    for i in 0..N {
        let r = s.response(&json!(i));
        assert_eq!(r["ok"], true, "call {i}: {r}");
        assert_eq!(r["result"]["content"][0]["text"], "last words", "{r}");
        let exited = s.wait_or_find(|f| f["type"] == "extension_exited" && f["extension"] == format!("x{i:02}").as_str());
        assert!(exited < s.frames.len());
    }
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn notes_sent_at_shutdown_come_before_its_response() {
    // docs/protocol.md §2.1: a note "any time", so also in answer to
    // `shutdown`; §4: the shutdown response is written last. What would
    // start something new (a submit) is logged and dropped.
    let t = TempDir::new("serve-note-shutdown");
    let a = ext(&t, "a", &["--note-on-shutdown"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    s.send(&json!({"id": "bye", "type": "shutdown"}));
    let resp = s.response_index(&json!("bye"));
    let note = s.frames.iter().position(|f| f["type"] == "notify" && f["message"] == "saving state").expect("the note");
    let cleared = s.frames.iter().position(|f| f["type"] == "clear_notes").expect("clear_notes");
    assert!(note < cleared && cleared < resp, "{:?}", s.frames);
    assert!(!s.frames.iter().any(|f| f["type"] == "submit"), "{:?}", s.frames);
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "a").contains("ignored submit while stopping"), "{}", read_log(&t, "a"));
}
