//! Order on `zot serve`'s stdout (docs/protocol.md §4): pipelined requests
//! answered out of order, a slow tool that delays no fast request, stdout
//! carrying protocol lines only, notifications before (or after) the
//! response they belong to, and ids echoed exactly as given.

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
fn five_hundred_pipelined_requests() {
    let t = TempDir::new("serve-pipeline");
    let a = ext(&t, "a", &["--tools", "echo", "--reverse"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let mut all = String::new();
    for i in 0..500 {
        all.push_str(&json!({"id": i, "type": "tool", "name": "echo", "args": {"i": i}}).to_string());
        all.push('\n');
    }
    s.z.write(all.as_bytes());
    let mut seen = vec![0; 500];
    let mut order = Vec::new();
    while order.len() < 500 {
        let r = s.next_response();
        let i = r["id"].as_u64().unwrap_or_else(|| panic!("unexpected response {r}")) as usize;
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(echoed(&r["result"])["args"], json!({"i": i}), "payload of {i}");
        seen[i] += 1;
        order.push(i);
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    // Nothing more comes.
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert_eq!(s.frames.iter().filter(|f| f["type"] == "response").count(), 500);
}

#[test]
fn slow_tool_does_not_delay_fast_requests() {
    let t = TempDir::new("serve-slow");
    let a = ext(&t, "a", &["--tools", "sleep,echo"]);
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60"]);
    s.ready_all();
    let start = Instant::now();
    // Slow enough that the fast answers come first however loaded the
    // machine is.
    s.send(&json!({"id": "slow", "type": "tool", "name": "sleep", "args": {"ms": 8000}}));
    s.send(&json!({"id": "ping", "type": "ping"}));
    s.send(&json!({"id": "echo", "type": "tool", "name": "echo", "args": {"fast": true}}));
    let p = s.response_index(&json!("ping"));
    let e = s.response_index(&json!("echo"));
    let fast = start.elapsed();
    let slow = s.response_index(&json!("slow"));
    assert!(p < slow && e < slow, "{:?}", s.frames);
    let _ = fast;
    assert!(start.elapsed() >= Duration::from_millis(7900));
    assert_eq!(s.frames[slow]["ok"], true);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn stdout_carries_only_protocol_lines() {
    let t = TempDir::new("serve-junk");
    let a = ext(&t, "a", &["--junk", "--commands", "notify,display", "--tools", "stderr,noise,big"]);
    let b = ext(&t, "b", &["--junk", "--tools", "crash"]);
    // The 3 MB answer goes through Python: more than FAST's 3 s on a loaded
    // machine is possible, and not what this test is about.
    let mut s = Serve::start(&t, &[a, b], &["--tool-timeout", "60", "--command-timeout", "60"]);
    s.ready_all();
    let junk = "\u{1b}[31mred\u{1b}]0;title\u{7} not json {\"type\":\"response\"}";
    let r = s.ok(json!({"id": 1, "type": "tool", "name": "stderr", "args": {"text": junk}}));
    assert_eq!(r["content"][0]["text"], "written");
    let r = s.ok(json!({"id": 2, "type": "tool", "name": "noise"}));
    assert_eq!(r["content"][0]["text"], "still here");
    let r = s.ok(json!({"id": 3, "type": "tool", "name": "big", "args": {"bytes": 3_000_000}}));
    assert_eq!(r["content"][0]["text"].as_str().map(str::len), Some(3_000_000));
    s.ok(json!({"id": 4, "type": "command", "name": "notify", "args": junk}));
    s.ok(json!({"id": 5, "type": "command", "name": "display", "args": "line1\nline2"}));
    s.z.send("garbage");
    s.err(json!({"id": 6, "type": "tool", "name": "crash"}));
    s.note("extension_exited");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    // Every line was checked as it was read; the bytes are UTF-8 lines.
    let raw = s.z.raw_stdout();
    let text = String::from_utf8(raw).expect("stdout is UTF-8");
    assert!(text.ends_with('\n'));
    assert_eq!(text.lines().count(), s.frames.len());
    // JSON escapes every control character: no raw ESC reaches stdout.
    assert!(!text.contains('\u{1b}'));
    assert!(s.notes("extension_exited").len() == 1);
}

#[test]
fn notifications_come_before_the_response_they_caused() {
    let t = TempDir::new("serve-notes");
    let a = ext(&t, "a", &["--commands", "notify"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let start = s.frames.len();
    s.send(&json!({"id": "n", "type": "command", "name": "notify", "args": "hi"}));
    let resp = s.response_index(&json!("n"));
    let got: Vec<Value> = s.frames[start..resp].to_vec();
    assert_eq!(
        got,
        [
            json!({"type": "notify", "extension": "a", "level": "warn", "message": "note:hi"}),
            json!({"type": "clear_notes", "extension": "a"}),
            json!({"type": "submit", "extension": "a", "text": "submit:hi"}),
            json!({"type": "open_panel", "extension": "a", "panel": {"id": "p2", "title": "P", "lines": ["x"], "footer": ""}}),
            json!({"type": "panel_render", "extension": "a", "panel_id": "p2", "title": "P2", "lines": ["y"], "footer": "z"}),
            json!({"type": "panel_close", "extension": "a", "panel_id": "p2"}),
        ]
    );
    assert_eq!(s.frames[resp]["result"], json!({"extension": "a", "action": "noop"}));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn ids_are_echoed_as_given() {
    let t = TempDir::new("serve-ids");
    let mut s = Serve::start(&t, &[], &[]);
    s.ready_all();
    let ids = [
        json!("abc"),
        json!(""),
        json!("with \"quotes\" and \\ and é"),
        json!("7"),
        json!(7),
        json!(0),
        json!(-12),
        json!(1.5),
        json!(u64::MAX),
    ];
    for id in &ids {
        let r = s.request(json!({"id": id, "type": "ping"}));
        assert_eq!(&r["id"], id, "{r}");
        assert_eq!(r["ok"], true);
    }
    // Same for an error with an id.
    let r = s.request(json!({"id": "e1", "type": "command", "name": "x"}));
    assert_eq!(r["id"], "e1");
    // "7" and 7 are distinct ids; both answered, each once.
    let sevens: Vec<&Value> = s.frames.iter().filter(|f| f["id"] == json!(7) || f["id"] == json!("7")).collect();
    assert_eq!(sevens.len(), 2);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn notifications_sent_after_a_reply_come_after_its_response() {
    // docs/protocol.md §4, order of output: 20 pipelined commands whose
    // extension answers first and then sends a note and redraws the panel
    // the answer opened. Each response comes before its own note and redraw.
    let t = TempDir::new("serve-after");
    let a = ext(&t, "a", &["--commands", "note_after"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let mut batch = String::new();
    for i in 0..20 {
        batch.push_str(&json!({"id": i, "type": "command", "name": "note_after", "args": i.to_string()}).to_string());
        batch.push('\n');
    }
    s.z.write(batch.as_bytes());
    for i in 0..20 {
        let resp = s.response_index(&json!(i));
        assert_eq!(s.frames[resp]["result"]["open_panel"]["id"], format!("np{i}"), "{}", s.frames[resp]);
        let text = format!("after:{i}");
        let note = s.wait_or_find(|f| f["type"] == "notify" && f["message"] == text.as_str());
        let redraw = s.wait_or_find(|f| f["type"] == "panel_render" && f["panel_id"] == format!("np{i}").as_str());
        assert!(resp < note && note < redraw, "command {i}: response {resp}, note {note}, redraw {redraw}: {:?}", s.frames);
    }
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}
