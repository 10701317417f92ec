//! `zot serve` driven through the real binary, for tests/serve_*.rs: the
//! protocol-line check every frame read passes (docs/protocol.md §4: the
//! notification types and error codes), [`Serve`] (the child and every
//! frame it wrote), and the Python fixture's extension folders. Included
//! with `#[path]` beside `mod common` and `mod zot_proc`.
#![allow(dead_code)]

use super::common::{py_ext, TempDir};
use super::zot_proc::{assert_gone_within, session_args, Zot, LINE_WAIT};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const NOTIFICATIONS: [&str; 18] = [
    "ready",
    "tool_progress",
    "call_tool",
    "call_tool_cancel",
    "extension_restarting",
    "extension_crash_loop",
    "untrusted_project",
    "extension_ready",
    "tools_changed",
    "submit_slash",
    "notify",
    "clear_notes",
    "submit",
    "open_panel",
    "panel_render",
    "panel_close",
    "extension_exited",
    "extension_error",
];

pub const CODES: [&str; 12] = [
    "unknown_call",
    "internal",
    "too_large",
    "cancelled",
    "bad_request",
    "unknown_command",
    "unknown_tool",
    "unknown_extension",
    "timeout",
    "extension_exited",
    "busy",
    "shutting_down",
];

/// Panics unless `line` is a well-formed `zot serve` protocol line.
pub fn check_protocol_line(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
    let obj = v.as_object().unwrap_or_else(|| panic!("stdout line is not an object: {line}"));
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or_else(|| panic!("no string type: {line}"));
    if ty == "response" {
        assert!(obj.contains_key("id"), "response without id: {line}");
        let id = &obj["id"];
        assert!(id.is_string() || id.is_number() || id.is_null(), "bad id: {line}");
        match obj.get("ok") {
            Some(Value::Bool(true)) => {
                assert!(obj["result"].is_object(), "ok response without an object result: {line}");
                assert!(!obj.contains_key("error"), "{line}");
            }
            Some(Value::Bool(false)) => {
                let code = obj["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code: {line}"));
                assert!(CODES.contains(&code), "unknown error code {code}: {line}");
                assert!(obj["error"]["message"].is_string(), "no error message: {line}");
                assert!(!obj.contains_key("result"), "{line}");
            }
            _ => panic!("response without boolean ok: {line}"),
        }
    } else {
        assert!(NOTIFICATIONS.contains(&ty), "unknown frame type {ty}: {line}");
        assert!(!obj.contains_key("id"), "notification with an id: {line}");
        if !["ready", "untrusted_project", "call_tool_cancel"].contains(&ty) {
            assert!(obj["extension"].is_string(), "notification without extension: {line}");
        }
    }
    v
}

/// A `zot serve` child and what it said so far.
pub struct Serve {
    pub z: Zot,
    /// Every frame read, in order of arrival.
    pub frames: Vec<Value>,
    /// Responses already handed to the test.
    pub taken: Vec<bool>,
    /// How many extensions were given.
    pub exts: usize,
}

impl Serve {
    /// `zot serve --no-ext --cwd T/cwd <FAST> <extra> --ext D...`.
    pub fn start(t: &TempDir, exts: &[PathBuf], extra: &[&str]) -> Serve {
        let args = session_args(t.path(), Some("serve"), exts, extra);
        Serve { z: Zot::spawn(t.path(), &args, &[]), frames: Vec::new(), taken: Vec::new(), exts: exts.len() }
    }

    /// Reads one frame, checking it; None at end of output or after `limit`.
    pub fn read_frame(&mut self, limit: Duration) -> Option<usize> {
        let line = self.z.next_line(limit)?;
        self.frames.push(check_protocol_line(&line));
        self.taken.push(false);
        Some(self.frames.len() - 1)
    }

    /// Reads frames until `pred` holds for a new one; returns its index.
    pub fn wait_frame(&mut self, what: &str, mut pred: impl FnMut(&Value) -> bool) -> usize {
        let end = Instant::now() + LINE_WAIT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.read_frame(left) {
                Some(i) if pred(&self.frames[i]) => return i,
                Some(_) => {}
                None => panic!("no frame {what} within {LINE_WAIT:?}\n{}", self.z.context()),
            }
        }
    }

    /// The index of the first unclaimed response with `id` (read or to come).
    pub fn response_index(&mut self, id: &Value) -> usize {
        let is = |f: &Value| f["type"] == "response" && f["id"] == *id;
        let found = (0..self.frames.len()).find(|&i| !self.taken[i] && is(&self.frames[i]));
        let i = match found {
            Some(i) => i,
            None => self.wait_frame(&format!("response {id}"), is),
        };
        self.taken[i] = true;
        i
    }

    pub fn response(&mut self, id: &Value) -> Value {
        let i = self.response_index(id);
        self.frames[i].clone()
    }

    /// The next unclaimed response, whatever its id.
    pub fn next_response(&mut self) -> Value {
        let is = |f: &Value| f["type"] == "response";
        let found = (0..self.frames.len()).find(|&i| !self.taken[i] && is(&self.frames[i]));
        let i = match found {
            Some(i) => i,
            None => self.wait_frame("response", is),
        };
        self.taken[i] = true;
        self.frames[i].clone()
    }

    pub fn send(&mut self, v: &Value) {
        self.z.send(&v.to_string());
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, v: Value) -> Value {
        self.send(&v);
        self.response(&v["id"])
    }

    /// A request that must succeed; its result.
    pub fn ok(&mut self, v: Value) -> Value {
        let r = self.request(v.clone());
        assert_eq!(r["ok"], true, "request {v} failed: {r}\n{}", self.z.context());
        r["result"].clone()
    }

    /// A request that must fail; its error code and message.
    pub fn err(&mut self, v: Value) -> (String, String) {
        let r = self.request(v.clone());
        assert_eq!(r["ok"], false, "request {v} succeeded: {r}\n{}", self.z.context());
        (r["error"]["code"].as_str().unwrap().to_string(), r["error"]["message"].as_str().unwrap().to_string())
    }

    /// The first notification of type `ty`, read already or to come.
    pub fn note(&mut self, ty: &str) -> Value {
        let i = match self.frames.iter().position(|f| f["type"] == ty) {
            Some(i) => i,
            None => self.wait_frame(ty, |f| f["type"] == ty),
        };
        self.frames[i].clone()
    }

    /// Like [`Serve::wait_or_find`], waiting up to `limit` for it.
    pub fn wait_or_find_within(&mut self, limit: Duration, mut pred: impl FnMut(&Value) -> bool) -> usize {
        if let Some(i) = self.frames.iter().position(&mut pred) {
            return i;
        }
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.read_frame(left) {
                Some(i) if pred(&self.frames[i]) => return i,
                Some(_) => {}
                None => panic!("no matching frame within {limit:?}\n{}", self.z.context()),
            }
        }
    }

    /// The index of the first frame `pred` holds for, read already or to come.
    pub fn wait_or_find(&mut self, mut pred: impl FnMut(&Value) -> bool) -> usize {
        match self.frames.iter().position(&mut pred) {
            Some(i) => i,
            None => self.wait_frame("matching", pred),
        }
    }

    /// Waits for the `ready` notification; returns its extension names.
    pub fn ready(&mut self) -> Vec<String> {
        let names = self.note("ready")["extensions"].as_array().expect("ready.extensions").clone();
        names.iter().map(|n| n.as_str().expect("name").to_string()).collect()
    }

    /// Waits for `ready` and checks every extension given made it.
    pub fn ready_all(&mut self) {
        let names = self.ready();
        if names.len() != self.exts || !self.notes("extension_error").is_empty() {
            panic!("not every extension is ready: {names:?}\n{}", self.z.context());
        }
    }

    /// Notifications of type `ty` read so far.
    pub fn notes(&self, ty: &str) -> Vec<Value> {
        self.frames.iter().filter(|f| f["type"] == ty).cloned().collect()
    }

    /// Pids of the extensions as `list` reports them.
    pub fn pids(&mut self) -> Vec<u32> {
        let l = self.ok(json!({"id": "pids", "type": "list"}));
        l["extensions"].as_array().unwrap().iter().filter_map(|e| e["pid"].as_u64()).map(|p| p as u32).collect()
    }

    /// Reads the rest of stdout (checking every line) and the exit code.
    pub fn finish(&mut self) -> i32 {
        for line in self.z.read_to_end(LINE_WAIT) {
            self.frames.push(check_protocol_line(&line));
            self.taken.push(false);
        }
        self.z.exit_code(LINE_WAIT)
    }
}

/// Polls until no process in `pids` (nor in their groups) is left.
pub fn assert_gone(pids: &[u32]) {
    assert_gone_within(pids, LINE_WAIT, "");
}

/// An extension folder under `t/exts/<name>` running the Python fixture.
pub fn ext(t: &TempDir, name: &str, flags: &[&str]) -> PathBuf {
    py_ext(&t.path().join("exts"), name, name, flags)
}

/// The JSON object the fixture's echoing tool answered with.
pub fn echoed(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text block: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("echo text is not JSON ({e}): {text}"))
}

pub fn read_log(t: &TempDir, name: &str) -> String {
    std::fs::read_to_string(t.path().join("zot-home/logs").join(format!("ext-{name}.log"))).unwrap_or_default()
}

pub fn log_contains_text(t: &TempDir, name: &str, needle: &str) -> bool {
    super::common::wait_until(LINE_WAIT, || read_log(t, name).contains(needle))
}
