//! `zot mcp` spoken to in raw JSON-RPC lines, for tests/mcp_raw.rs and
//! tests/mcp_sdk.rs: every stdout line checked to be JSON-RPC 2.0, requests
//! and their answers, the handshake, and the end of a session. Included
//! with `#[path]` beside `mod common` and `mod zot_proc`.
#![allow(dead_code)]

use super::zot_proc::{Zot, LINE_WAIT};
use serde_json::{json, Value};
use std::path::PathBuf;


pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// An example extension's folder; the Rust ones must be built.
pub fn example(rel: &str) -> String {
    let dir = root().join("examples").join(rel);
    if let Some(bin) = rel.strip_prefix("rust/") {
        let exe = root().join("target/debug/examples").join(bin);
        assert!(exe.exists(), "{} is missing: run `cargo build --examples` (make test does)", exe.display());
    }
    dir.display().to_string()
}

/// Panics unless `line` is one JSON-RPC 2.0 message (or a batch of them).
pub fn check_line(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
    let items = match &v {
        Value::Array(a) => {
            assert!(!a.is_empty(), "empty batch answer: {line}");
            a.clone()
        }
        _ => vec![v.clone()],
    };
    for m in items {
        let o = m.as_object().unwrap_or_else(|| panic!("not an object: {line}"));
        assert_eq!(o.get("jsonrpc"), Some(&json!("2.0")), "{line}");
        if o.contains_key("method") {
            assert!(o["method"].is_string() && !o.contains_key("id"), "server notification expected: {line}");
        } else {
            let id = &o["id"];
            assert!(id.is_string() || id.is_number() || id.is_null(), "bad id: {line}");
            assert!(o.contains_key("result") ^ o.contains_key("error"), "result xor error: {line}");
            if let Some(e) = o.get("error") {
                assert!(e["code"].is_i64() && e["message"].is_string(), "bad error: {line}");
            }
        }
    }
    v
}

pub fn send(z: &mut Zot, v: Value) {
    z.send(&v.to_string());
}

/// Sends a request and returns its answer; every line read is checked.
pub fn rpc(z: &mut Zot, id: Value, method: &str, params: Value) -> Value {
    send(z, json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    answer(z, &id)
}

/// Reads lines until the answer to `id`.
pub fn answer(z: &mut Zot, id: &Value) -> Value {
    let line = z.wait_line(&format!("answering {id}"), |l| {
        let v = check_line(l);
        v.get("id") == Some(id) && v.get("method").is_none()
    });
    serde_json::from_str(&line).unwrap_or(Value::Null)
}

pub fn initialize(z: &mut Zot) -> Value {
    let r = rpc(
        z,
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
    );
    send(z, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    r
}

pub fn code_of(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error code in {v}"))
}

/// Closes stdin, reads the rest of stdout (checked), expects exit 0.
pub fn finish(z: &mut Zot) -> Vec<Value> {
    z.close_stdin();
    let rest: Vec<Value> = z.read_to_end(LINE_WAIT).iter().map(|l| check_line(l)).collect();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    let raw = z.raw_stdout();
    for l in String::from_utf8_lossy(&raw).lines() {
        check_line(l);
    }
    assert!(raw.is_empty() || raw.ends_with(b"\n"), "stdout ends mid-line");
    rest
}
