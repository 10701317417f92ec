//! `--trace` and `ZOT_TRACE` on a known `zot serve` session, end to end
//! through the `zot` binary: one line per frame in each direction, and big
//! frames truncated.

use serde_json::{json, Value};
use std::path::Path;

mod common;
#[path = "common/author.rs"]
mod author;
use author::*;
use common::TempDir;

/// (dir, type) of each trace line of extension `ext`, checking the shape of
/// every line on the way.
fn trace_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("trace file");
    let mut last = 0.0;
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let t = v["t"].as_f64().expect("t");
            assert!(t >= last, "time went backwards: {l}");
            last = t;
            assert!(v["dir"] == "in" || v["dir"] == "out", "{l}");
            assert!(v["ext"].is_string() && v["frame"].is_object(), "{l}");
            v
        })
        .collect()
}

#[test]
fn trace_of_a_session() {
    let t = TempDir::new("trace");
    let ext = broken_ext(t.path(), "ext", &[]);
    let file = t.path().join("trace.jsonl");
    let f = file.display().to_string();
    let mut s = Serve::start(&t, &ext, &["--trace", &f], &[]);
    let r = s.request(json!({"id": 1, "type": "command", "name": "ping"}));
    assert_eq!(r["result"]["display"], "pong", "{r}");
    let r = s.request(json!({"id": 2, "type": "tool", "name": "echo", "args": {"text": "hi"}}));
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    s.shutdown();

    let lines = trace_lines(&file);
    let seq: Vec<(String, String)> = lines
        .iter()
        .map(|v| (v["dir"].as_str().unwrap_or("").to_string(), v["frame"]["type"].as_str().unwrap_or("").to_string()))
        .collect();
    let want = [
        ("in", "hello"),
        ("out", "hello_ack"),
        ("in", "register_command"),
        ("in", "register_tool"),
        ("in", "ready"),
        ("out", "command_invoked"),
        ("in", "command_response"),
        ("out", "tool_call"),
        ("in", "tool_result"),
        ("out", "shutdown"),
        ("in", "shutdown_ack"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(d, t)| (d.to_string(), t.to_string())).collect();
    assert_eq!(seq, want, "{lines:#?}");
    assert!(lines.iter().all(|v| v["ext"] == "broken"));
    // Requests and replies carry the same ids; frames are as sent.
    assert_eq!(lines[5]["frame"]["id"], lines[6]["frame"]["id"]);
    assert_eq!(lines[5]["frame"]["name"], "ping");
    assert_eq!(lines[7]["frame"]["id"], lines[8]["frame"]["id"]);
    assert_eq!(lines[7]["frame"]["args"], json!({"text": "hi"}));
    assert_eq!(lines[1]["frame"]["protocol_version"], 1);
}

#[test]
fn trace_from_the_environment_truncates_big_frames() {
    let t = TempDir::new("trace-env");
    let ext = broken_ext(t.path(), "ext", &[]);
    let file = t.path().join("env-trace.jsonl");
    let mut s = Serve::start(&t, &ext, &[], &[("ZOT_TRACE", &file)]);
    let big = "x".repeat(70 * 1024);
    let r = s.request(json!({"id": 1, "type": "tool", "name": "echo", "args": {"text": big}}));
    assert_eq!(r["result"]["content"][0]["text"].as_str().map(str::len), Some(big.len()));
    s.shutdown();

    let lines = trace_lines(&file);
    let big_ones: Vec<&Value> = lines.iter().filter(|v| v["frame"]["truncated"] == true).collect();
    assert_eq!(big_ones.len(), 2, "{lines:#?}");
    for (v, dir, ty) in [(big_ones[0], "out", "tool_call"), (big_ones[1], "in", "tool_result")] {
        assert_eq!(v["dir"], dir);
        let bytes = v["frame"]["bytes"].as_u64().expect("bytes");
        assert!(bytes > 70 * 1024, "{v}");
        let head = v["frame"]["head"].as_str().expect("head");
        assert_eq!(head.len(), 1024);
        assert!(head.contains(&format!("\"type\":\"{ty}\"")) || head.contains(&format!("\"type\": \"{ty}\"")), "{head}");
    }
    // Small frames are kept whole.
    assert!(lines.iter().any(|v| v["frame"]["type"] == "hello"));

    // An unwritable trace file is a runtime error.
    let r = run(zot_cmd(t.path(), &["serve", "--no-ext", "--trace", &t.path().join("no/such/dir/t").display().to_string()]));
    assert_eq!(r.code, 1);
    assert!(r.stderr.starts_with("zot: trace file "), "{}", r.stderr);
}
