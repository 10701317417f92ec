//! `zot mcp` end to end through the real binary, driven by the official
//! MCP Python SDK (tests/mcp/client.py, run with `$ZOT_MCP_PYTHON` or
//! `target/mcp-venv/bin/python`, which .ci/run installs): tools of the
//! Rust, Python and shell examples, prompts, the guard, image blocks,
//! logging, an extension exiting, cancellation. The tests skip, saying so
//! on stderr, only when the `mcp` package cannot be imported.

mod common;
#[path = "common/mcp_raw.rs"]
mod mcp_raw;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, TempDir};
use crossbeam_channel::RecvTimeoutError;
use mcp_raw::*;
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zot_proc::BIN;

/// Says that the SDK-driven tests skip, and why (tests/common/skip.rs).
fn skip(why: &str) {
    common::skip(&format!(
        "{why}; skipping the SDK-driven zot mcp tests (set ZOT_MCP_PYTHON, or: python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp)"
    ));
}

/// The Python meant to have the `mcp` package: `$ZOT_MCP_PYTHON`, else
/// `target/mcp-venv/bin/python`; None (said) when there is none.
fn sdk_python() -> Option<PathBuf> {
    let py = std::env::var_os("ZOT_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    let runs = Command::new(&py).arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !runs {
        skip(&format!("no Python at {}", py.display()));
        return None;
    }
    Some(py)
}

/// Runs tests/mcp/client.py SCENARIO against `zot mcp`; its transcript,
/// or None (said) when the `mcp` package cannot be imported.
fn run_client(py: &Path, scenario: &str, home: &Path, exts: &[String]) -> Option<Value> {
    let mut cmd = Command::new(py);
    cmd.arg(root().join("tests/mcp/client.py"))
        .args([scenario, "--", BIN, "mcp", "--no-ext"])
        .env("ZOT_HOME", home.join("zot-home"))
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for e in exts {
        cmd.args(["--ext", e]);
    }
    let mut child = cmd.spawn().expect("run the MCP client");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let (mut out, mut err) = (String::new(), String::new());
        let e = std::thread::spawn(move || {
            let _ = stderr.read_to_string(&mut err);
            err
        });
        let _ = stdout.read_to_string(&mut out);
        let err = e.join().unwrap_or_default();
        let _ = tx.send((out, err));
    });
    let (out, err) = match rx.recv_timeout(Duration::from_secs(90)) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
            let _ = child.kill();
            panic!("the MCP client did not finish within 90 s");
        }
    };
    let status = child.wait().expect("wait for the client");
    if status.code() == Some(3) {
        skip(&format!("{} cannot import the mcp package ({})", py.display(), err.trim()));
        return None;
    }
    assert!(status.success(), "client {scenario} failed ({status})\n--- stdout ---\n{out}\n--- stderr ---\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("transcript is not JSON ({e}):\n{out}\n{err}"));
    for w in v["wire"].as_array().into_iter().flatten() {
        assert_eq!(w["msg"]["jsonrpc"], json!("2.0"), "not JSON-RPC on the wire: {w}");
    }
    Some(v)
}

fn step<'a>(t: &'a Value, name: &str) -> &'a Value {
    t["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == json!(name)))
        .unwrap_or_else(|| panic!("no step {name:?} in the transcript:\n{t:#}"))
}

fn text(step: &Value) -> &str {
    step["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {step}"))
}

#[test]
fn sdk_tour() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("mcp-sdk-tour");
    let p = t.path();
    let fx = py_ext(p, "fx", "fx", &["--tools", "bash,image"]);
    let crashy = py_ext(p, "crashy", "crashy", &["--tools", "crash"]);
    let mut exts: Vec<String> =
        ["rust/echo", "rust/weather", "rust/guard", "python/notes", "shell/greet"].iter().map(|e| example(e)).collect();
    exts.extend([fx, crashy].map(|d| d.display().to_string()));
    let Some(tr) = run_client(&py, "tour", p, &exts) else { return };

    assert_eq!(tr["init"]["protocolVersion"], json!("2025-11-25"), "the SDK's newest handshake revision");
    assert_eq!(tr["init"]["serverInfo"]["name"], json!("zot"));

    let tools: Vec<&str> = step(&tr, "list_tools")["result"]["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    for want in ["echo", "slow", "weather", "audit_log", "read_notes", "uptime", "bash", "image", "crash"] {
        assert!(tools.contains(&want), "tool {want} missing: {tools:?}");
    }
    assert_eq!(text(step(&tr, "call weather")), "Oslo: sunny, 21°C (fake)");
    assert_eq!(serde_json::from_str::<Value>(text(step(&tr, "call echo"))).ok(), Some(json!({"a": 1, "b": "two"})));
    assert_eq!(text(step(&tr, "call read_notes (python)")), "(no notes yet)");
    assert!(!text(step(&tr, "call uptime (shell)")).is_empty());
    let blocked = step(&tr, "call bash rm (guard)");
    assert_eq!(blocked["result"]["isError"], json!(true), "{blocked}");
    assert!(text(blocked).contains("danger pattern \"rm -rf\""), "{blocked}");
    let ls = step(&tr, "call bash ls (guard)");
    assert_eq!(ls["result"]["isError"], json!(false), "{ls}");
    let got: Value = serde_json::from_str(text(ls)).unwrap_or_default();
    assert_eq!(got["args"], json!({"command": "ls"}), "the guard rewrote nothing: {ls}");
    let img = step(&tr, "call image");
    assert_eq!(img["result"]["content"][1], json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}));
    let unknown = step(&tr, "call unknown tool");
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap_or("").contains("no_such_tool"));

    let prompts = step(&tr, "list_prompts")["result"]["prompts"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
    for want in ["echo", "weather", "note", "greet"] {
        assert!(names.contains(&want), "prompt {want} missing: {names:?}");
    }
    let msg = |s: &str| step(&tr, s)["result"]["messages"][0].clone();
    assert_eq!(
        msg("get prompt weather"),
        json!({"role": "user", "content": {"type": "text", "text": "Tell me the weather for berlin"}})
    );
    assert_eq!(msg("get prompt greet")["content"]["text"], json!("hello, you"));
    assert_eq!(msg("get prompt note")["content"]["text"], json!("noted: buy milk"));
    assert_eq!(step(&tr, "get prompt note without args")["error"], json!({"code": -32603, "message": "usage: /note TEXT"}));
    assert_eq!(step(&tr, "get unknown prompt")["error"]["code"], json!(-32602));

    // Logging: notice for the first note, nothing while at warning, then
    // notice again; each written before the answer it came with.
    let logs = tr["logs"].as_array().cloned().unwrap_or_default();
    let notes: Vec<&Value> = logs.iter().filter(|l| l["logger"] == json!("notes")).collect();
    assert_eq!(notes.len(), 2, "{logs:?}");
    assert_eq!(notes[0], &json!({"level": "notice", "logger": "notes", "data": "1 note(s) kept"}));
    assert_eq!(notes[1], &json!({"level": "notice", "logger": "notes", "data": "3 note(s) kept"}));
    assert_eq!(text(step(&tr, "read_notes after notes")), "buy milk\nquiet one\nloud one");
    let wire = tr["wire"].as_array().cloned().unwrap_or_default();
    let pos = |pred: &dyn Fn(&Value) -> bool| wire.iter().position(|w| pred(&w["msg"]));
    let log_at = pos(&|m| m["params"]["data"] == json!("1 note(s) kept"));
    let note_req = pos(&|m| m["method"] == json!("prompts/get") && m["params"]["arguments"]["args"] == json!("buy milk"));
    let note_id = note_req.map(|i| wire[i]["msg"]["id"].clone());
    let answer_at = pos(&|m| Some(&m["id"]) == note_id.as_ref() && m.get("result").is_some());
    assert!(log_at.is_some() && log_at < answer_at, "log {log_at:?} before its answer {answer_at:?}");

    // The crash: an error result, a warning, the lists change, the tool is gone.
    let crash = step(&tr, "call crash");
    assert_eq!(crash["result"]["isError"], json!(true));
    assert!(text(crash).contains("crashy") && text(crash).contains("exited"), "{crash}");
    step(&tr, "tools list_changed received");
    assert!(wire.iter().any(|w| w["msg"]["method"] == json!("notifications/prompts/list_changed")));
    assert!(logs.iter().any(|l| l["logger"] == json!("crashy") && l["level"] == json!("warning")), "{logs:?}");
    let after = step(&tr, "list_tools after crash")["result"]["tools"].to_string();
    assert!(!after.contains("\"crash\"") && after.contains("\"weather\""), "{after}");
    assert_eq!(step(&tr, "ping")["result"], json!({}));
}

#[test]
fn sdk_cancel() {
    let Some(py) = sdk_python() else { return };
    let t = TempDir::new("mcp-sdk-cancel");
    let started = Instant::now();
    let Some(tr) = run_client(&py, "cancel", t.path(), &[example("rust/echo")]) else { return };
    let c = step(&tr, "slow call cancelled");
    assert_eq!(c["cancelled"], json!(true), "{c}");
    assert!(c["result"].is_null(), "{c}");
    let wire = tr["wire"].as_array().cloned().unwrap_or_default();
    let slow_id = wire
        .iter()
        .find(|w| w["dir"] == json!("out") && w["msg"]["params"]["name"] == json!("slow"))
        .map(|w| w["msg"]["id"].clone())
        .unwrap_or_else(|| panic!("no slow call on the wire: {tr:#}"));
    assert!(
        wire.iter().any(|w| w["dir"] == json!("out")
            && w["msg"]["method"] == json!("notifications/cancelled")
            && w["msg"]["params"]["requestId"] == slow_id),
        "the SDK sent no notifications/cancelled: {tr:#}"
    );
    let answers = wire.iter().filter(|w| w["dir"] == json!("in") && w["msg"]["id"] == slow_id).count();
    assert_eq!(answers, 0, "the cancelled call was answered: {tr:#}");
    assert_eq!(text(step(&tr, "call echo after cancel")), "{\"after\":\"cancel\"}");
    assert_eq!(step(&tr, "ping after cancel")["result"], json!({}));
    assert_eq!(text(step(&tr, "call slow short")), "slept 10 ms");
    let log = std::fs::read_to_string(t.path().join("zot-home/logs/ext-echo.log")).unwrap_or_default();
    assert!(log.contains("cancelled by the caller; sending tool_cancel"), "{log}");
    assert!(started.elapsed() < Duration::from_secs(50), "the 60 s call was not cut short");
}
