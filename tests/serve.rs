//! `zot serve` end to end through the real binary (docs/protocol.md §4): the
//! `ready` and `extension_error` notifications, every method, every error
//! code, pipelining and out-of-order answers, notifications and their
//! order, stdout hygiene, shutdown (request, end of input, SIGTERM) and
//! ids. Every run gets its own `ZOT_HOME`, `--cwd` and extension folders;
//! every frame read is checked to be a protocol line.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{process_alive, py_ext, write_manifest, TempDir};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use zot_proc::{assert_gone_within, session_args, Zot, LINE_WAIT};

const NOTIFICATIONS: [&str; 18] = [
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

const CODES: [&str; 12] = [
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
fn check_protocol_line(line: &str) -> Value {
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
struct Serve {
    z: Zot,
    /// Every frame read, in order of arrival.
    frames: Vec<Value>,
    /// Responses already handed to the test.
    taken: Vec<bool>,
    /// How many extensions were given.
    exts: usize,
}

impl Serve {
    /// `zot serve --no-ext --cwd T/cwd <FAST> <extra> --ext D...`.
    fn start(t: &TempDir, exts: &[PathBuf], extra: &[&str]) -> Serve {
        let args = session_args(t.path(), Some("serve"), exts, extra);
        Serve { z: Zot::spawn(t.path(), &args, &[]), frames: Vec::new(), taken: Vec::new(), exts: exts.len() }
    }

    /// Reads one frame, checking it; None at end of output or after `limit`.
    fn read_frame(&mut self, limit: Duration) -> Option<usize> {
        let line = self.z.next_line(limit)?;
        self.frames.push(check_protocol_line(&line));
        self.taken.push(false);
        Some(self.frames.len() - 1)
    }

    /// Reads frames until `pred` holds for a new one; returns its index.
    fn wait_frame(&mut self, what: &str, mut pred: impl FnMut(&Value) -> bool) -> usize {
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
    fn response_index(&mut self, id: &Value) -> usize {
        let is = |f: &Value| f["type"] == "response" && f["id"] == *id;
        let found = (0..self.frames.len()).find(|&i| !self.taken[i] && is(&self.frames[i]));
        let i = match found {
            Some(i) => i,
            None => self.wait_frame(&format!("response {id}"), is),
        };
        self.taken[i] = true;
        i
    }

    fn response(&mut self, id: &Value) -> Value {
        let i = self.response_index(id);
        self.frames[i].clone()
    }

    /// The next unclaimed response, whatever its id.
    fn next_response(&mut self) -> Value {
        let is = |f: &Value| f["type"] == "response";
        let found = (0..self.frames.len()).find(|&i| !self.taken[i] && is(&self.frames[i]));
        let i = match found {
            Some(i) => i,
            None => self.wait_frame("response", is),
        };
        self.taken[i] = true;
        self.frames[i].clone()
    }

    fn send(&mut self, v: &Value) {
        self.z.send(&v.to_string());
    }

    /// Sends a request and waits for its response.
    fn request(&mut self, v: Value) -> Value {
        self.send(&v);
        self.response(&v["id"])
    }

    /// A request that must succeed; its result.
    fn ok(&mut self, v: Value) -> Value {
        let r = self.request(v.clone());
        assert_eq!(r["ok"], true, "request {v} failed: {r}\n{}", self.z.context());
        r["result"].clone()
    }

    /// A request that must fail; its error code and message.
    fn err(&mut self, v: Value) -> (String, String) {
        let r = self.request(v.clone());
        assert_eq!(r["ok"], false, "request {v} succeeded: {r}\n{}", self.z.context());
        (r["error"]["code"].as_str().unwrap().to_string(), r["error"]["message"].as_str().unwrap().to_string())
    }

    /// The first notification of type `ty`, read already or to come.
    fn note(&mut self, ty: &str) -> Value {
        let i = match self.frames.iter().position(|f| f["type"] == ty) {
            Some(i) => i,
            None => self.wait_frame(ty, |f| f["type"] == ty),
        };
        self.frames[i].clone()
    }

    /// Like [`Serve::wait_or_find`], waiting up to `limit` for it.
    fn wait_or_find_within(&mut self, limit: Duration, mut pred: impl FnMut(&Value) -> bool) -> usize {
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
    fn wait_or_find(&mut self, mut pred: impl FnMut(&Value) -> bool) -> usize {
        match self.frames.iter().position(&mut pred) {
            Some(i) => i,
            None => self.wait_frame("matching", pred),
        }
    }

    /// Waits for the `ready` notification; returns its extension names.
    fn ready(&mut self) -> Vec<String> {
        let names = self.note("ready")["extensions"].as_array().expect("ready.extensions").clone();
        names.iter().map(|n| n.as_str().expect("name").to_string()).collect()
    }

    /// Waits for `ready` and checks every extension given made it.
    fn ready_all(&mut self) {
        let names = self.ready();
        if names.len() != self.exts || !self.notes("extension_error").is_empty() {
            panic!("not every extension is ready: {names:?}\n{}", self.z.context());
        }
    }

    /// Notifications of type `ty` read so far.
    fn notes(&self, ty: &str) -> Vec<Value> {
        self.frames.iter().filter(|f| f["type"] == ty).cloned().collect()
    }

    /// Pids of the extensions as `list` reports them.
    fn pids(&mut self) -> Vec<u32> {
        let l = self.ok(json!({"id": "pids", "type": "list"}));
        l["extensions"].as_array().unwrap().iter().filter_map(|e| e["pid"].as_u64()).map(|p| p as u32).collect()
    }

    /// Reads the rest of stdout (checking every line) and the exit code.
    fn finish(&mut self) -> i32 {
        for line in self.z.read_to_end(LINE_WAIT) {
            self.frames.push(check_protocol_line(&line));
            self.taken.push(false);
        }
        self.z.exit_code(LINE_WAIT)
    }
}

/// Polls until no process in `pids` (nor in their groups) is left.
fn assert_gone(pids: &[u32]) {
    assert_gone_within(pids, LINE_WAIT, "");
}

/// An extension folder under `t/exts/<name>` running the Python fixture.
fn ext(t: &TempDir, name: &str, flags: &[&str]) -> PathBuf {
    py_ext(&t.path().join("exts"), name, name, flags)
}

/// The JSON object the fixture's echoing tool answered with.
fn echoed(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text block: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("echo text is not JSON ({e}): {text}"))
}

// ----- start-up ------------------------------------------------------------

#[test]
fn ready_comes_first_and_failed_loads_are_reported() {
    let t = TempDir::new("serve-ready");
    let good = ext(&t, "good", &["--tools", "echo"]);
    let mute = ext(&t, "mute", &["--no-hello"]);
    let missing = write_manifest(&t.path().join("exts"), "missing", json!({"name": "missing", "exec": "./not-there"}));
    let broken = write_manifest(&t.path().join("exts"), "broken-dir", json!({"name": "none"}));
    // The mute extension holds the initial load for 10 s: long enough for
    // `list` to be answered while it is still starting, on a loaded machine.
    let mut s = Serve::start(&t, &[good, mute, missing, broken.clone()], &["--hello-timeout", "10"]);
    // docs/protocol.md §4 start-up: `ping` and `list` are answered during the
    // initial load; a tool call waits for its end.
    s.send(&json!({"id": "early", "type": "ping"}));
    s.send(&json!({"id": "early-list", "type": "list"}));
    s.send(&json!({"id": "early-tool", "type": "tool", "name": "echo", "args": {}}));
    let ping = s.response_index(&json!("early"));
    let list = s.response_index(&json!("early-list"));
    let tool = s.response_index(&json!("early-tool"));
    let ready = s.frames.iter().position(|f| f["type"] == "ready").expect("ready before the tool call's answer");
    assert!(ping < ready && list < ready, "ping and list wait for the load: {:?}", s.frames);
    assert!(ready < tool, "a tool call answered before `ready`: {:?}", s.frames);
    assert_eq!(s.frames[tool]["ok"], json!(true), "{:?}", s.frames[tool]);
    let mute_state = s.frames[list]["result"]["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "mute").unwrap()["state"].clone();
    assert_eq!(mute_state, json!("starting"), "list during the load shows `starting`");
    assert_eq!(s.frames[ready], json!({"type": "ready", "extensions": ["good"]}));
    let good_ready = s.frames.iter().position(|f| f["type"] == "extension_ready").expect("extension_ready");
    assert_eq!(s.frames[good_ready], json!({"type": "extension_ready", "extension": "good", "commands": [], "tools": ["echo"]}));
    assert!(good_ready < ready);

    let errors = s.notes("extension_error");
    assert_eq!(errors.len(), 3, "{errors:?}");
    for e in &errors {
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
        assert_eq!(e.as_object().unwrap().len(), 3, "extension_error has type, extension, message: {e}");
    }
    let by_name: HashMap<&str, &Value> = errors.iter().map(|e| (e["extension"].as_str().unwrap(), e)).collect();
    assert!(by_name["mute"]["message"].as_str().unwrap().contains("hello"), "{errors:?}");
    assert!(by_name["missing"]["message"].as_str().unwrap().contains("not-there"), "{errors:?}");
    assert!(by_name["broken-dir"]["message"].as_str().unwrap().contains("exec, theme, or skills is required"), "{errors:?}");
    // Load errors come before `ready`.
    let last_error = s.frames.iter().rposition(|f| f["type"] == "extension_error").unwrap();
    assert!(last_error < ready);

    let l = s.ok(json!({"id": 1, "type": "list"}));
    let states: Vec<(&str, &str)> = l["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["state"].as_str().unwrap()))
        .collect();
    // A manifest that could not be loaded is listed too, failed, by its folder.
    assert_eq!(states, [("good", "ready"), ("mute", "failed"), ("missing", "failed"), ("broken-dir", "failed")]);
    for e in l["extensions"].as_array().unwrap().iter().skip(1) {
        assert!(e["error"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
    }
    let b = &l["extensions"][3];
    assert_eq!((&b["dir"], &b["source"]), (&json!(broken.display().to_string()), &json!("ext")), "{b}");
    assert_eq!(l["extensions"][0]["version"], "1.0.0");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);

    // A manifest without a version: the one `hello` gave is listed.
    let t = TempDir::new("serve-version");
    let args = [common::fixture("ext.py").display().to_string(), "--name".into(), "nover".into()];
    let nover = write_manifest(&t.path().join("exts"), "nover", json!({"name": "nover", "exec": "python3", "args": args}));
    let mut s = Serve::start(&t, &[nover], &[]);
    s.ready_all();
    assert_eq!(s.ok(json!({"id": 1, "type": "list"}))["extensions"][0]["version"], "1.0.0");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn ready_with_no_extensions() {
    let t = TempDir::new("serve-none");
    let mut s = Serve::start(&t, &[], &[]);
    assert!(s.ready().is_empty());
    assert_eq!(s.ok(json!({"id": 1, "type": "ping"})), json!({"pong": true}));
    let l = s.ok(json!({"id": 2, "type": "list"}));
    assert_eq!(l, json!({"extensions": [], "commands": [], "tools": [], "orphans": 0}));
    // No subscribers: allowed, nothing changed; delivered to nobody.
    let v = s.ok(json!({"id": 3, "type": "intercept", "event": "tool_call", "tool_id": "t", "tool_name": "x", "tool_args": {"a": 1}}));
    assert_eq!(v, json!({"block": false}));
    assert_eq!(s.ok(json!({"id": 4, "type": "event", "event": "session_start"})), json!({"delivered": 0}));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

// ----- methods -------------------------------------------------------------

#[test]
fn ping_and_list_shapes() {
    let t = TempDir::new("serve-list");
    let a = ext(
        &t,
        "alpha",
        &[
            "--commands",
            "display,prompt",
            "--tools",
            "echo,image",
            "--events",
            "x,turn_end",
            "--intercepts",
            "tool_call",
        ],
    );
    let b = ext(&t, "beta", &["--tools", "echo,fail"]);
    let mut s = Serve::start(&t, &[a.clone(), b.clone()], &[]);
    s.ready_all();
    assert_eq!(s.ready(), ["alpha", "beta"]);
    assert_eq!(s.ok(json!({"id": "p", "type": "ping"})), json!({"pong": true}));

    let l = s.ok(json!({"id": "l", "type": "list"}));
    let exts = l["extensions"].as_array().unwrap();
    assert_eq!(exts.len(), 2);
    let alpha = &exts[0];
    assert_eq!(alpha["name"], "alpha");
    assert_eq!(alpha["version"], "1.0.0");
    assert_eq!(alpha["dir"], a.display().to_string());
    assert_eq!(alpha["source"], "ext");
    assert_eq!(alpha["state"], "ready");
    assert!(alpha["pid"].as_u64().is_some_and(|p| process_alive(p as u32)), "{alpha}");
    assert_eq!(alpha["commands"], json!(["display", "prompt"]));
    assert_eq!(alpha["tools"], json!(["echo", "image"]));
    assert_eq!(alpha["events"], json!(["x", "turn_end"]));
    assert_eq!(alpha["intercepts"], json!(["tool_call"]));
    assert!(alpha.get("error").is_none(), "{alpha}");
    let beta = &exts[1];
    assert_eq!(beta["name"], "beta");
    assert_eq!(beta["dir"], b.display().to_string());
    assert_eq!(beta["events"], json!([]));
    assert_eq!(beta["intercepts"], json!([]));

    assert_eq!(
        l["commands"],
        json!([
            {"name": "display", "description": "display from alpha", "extension": "alpha"},
            {"name": "prompt", "description": "prompt from alpha", "extension": "alpha"},
        ])
    );
    // First come, first served in load order: beta's echo is shadowed.
    let schema = json!({"type": "object", "properties": {}});
    assert_eq!(
        l["tools"],
        json!([
            {"name": "echo", "description": "echo from alpha", "schema": schema, "extension": "alpha", "exposure": "direct", "active": true, "interactive": false},
            {"name": "image", "description": "image from alpha", "schema": schema, "extension": "alpha", "exposure": "direct", "active": true, "interactive": false},
            {"name": "fail", "description": "fail from beta", "schema": schema, "extension": "beta", "exposure": "direct", "active": true, "interactive": false},
        ])
    );
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn command_actions_and_errors() {
    let t = TempDir::new("serve-command");
    let a = ext(&t, "a", &["--commands", "display,prompt,insert,panel,err,notify,other"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let cmd = |id: &str, name: &str, args: Option<&str>| {
        let mut v = json!({"id": id, "type": "command", "name": name});
        if let Some(a) = args {
            v["args"] = json!(a);
        }
        v
    };
    assert_eq!(
        s.ok(cmd("1", "display", Some("x"))),
        json!({"extension": "a", "action": "display", "display": "display:x"})
    );
    assert_eq!(
        s.ok(cmd("2", "prompt", Some("  spaced out  "))),
        json!({"extension": "a", "action": "prompt", "prompt": "prompt:spaced out"})
    );
    assert_eq!(
        s.ok(cmd("3", "insert", Some("y"))),
        json!({"extension": "a", "action": "insert", "insert": "insert:y"})
    );
    assert_eq!(
        s.ok(cmd("4", "panel", None)),
        json!({"extension": "a", "action": "open_panel",
               "open_panel": {"id": "p1", "title": "T", "lines": ["a", "b"], "footer": "f"}})
    );
    let e = s.ok(cmd("5", "err", Some("bad")));
    assert_eq!(e["extension"], "a");
    assert_eq!(e["error"], "failed: bad");
    // No action in the reply means noop.
    assert_eq!(s.ok(cmd("6", "notify", Some("n"))), json!({"extension": "a", "action": "noop"}));
    // Args default to "".
    assert_eq!(s.ok(cmd("7", "other", None)), json!({"extension": "a", "action": "display", "display": "a:other:"}));
    let (code, msg) = s.err(cmd("8", "nope", Some("x")));
    assert_eq!(code, "unknown_command");
    assert!(msg.contains("nope"), "{msg}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn tool_results() {
    let t = TempDir::new("serve-tool");
    let a = ext(&t, "a", &["--tools", "echo,image,fail"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let r = s.ok(json!({"id": 1, "type": "tool", "name": "echo", "args": {"a": 1, "s": "é"}}));
    assert_eq!(r["extension"], "a");
    assert_eq!(r["is_error"], false);
    assert_eq!(r["content"].as_array().unwrap().len(), 1);
    assert_eq!(r["content"][0]["type"], "text");
    assert_eq!(echoed(&r), json!({"tool": "echo", "args": {"a": 1, "s": "é"}, "from": "a"}));
    // Args default to {} (absent or null).
    let r = s.ok(json!({"id": 2, "type": "tool", "name": "echo"}));
    assert_eq!(echoed(&r)["args"], json!({}));
    let r = s.ok(json!({"id": 3, "type": "tool", "name": "echo", "args": null, "tool_id": "call-1"}));
    assert_eq!(echoed(&r)["args"], json!({}));
    let r = s.ok(json!({"id": 4, "type": "tool", "name": "echo", "args": {}, "tool_id": 17}));
    assert_eq!(echoed(&r)["args"], json!({}));

    let r = s.ok(json!({"id": 5, "type": "tool", "name": "image"}));
    assert_eq!(
        r,
        json!({"extension": "a", "is_error": false, "content": [
            {"type": "text", "text": "a picture"},
            {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="}]})
    );
    let r = s.ok(json!({"id": 6, "type": "tool", "name": "fail"}));
    assert_eq!(r, json!({"extension": "a", "is_error": true, "content": [{"type": "text", "text": "it failed"}]}));
    let (code, msg) = s.err(json!({"id": 7, "type": "tool", "name": "nope", "args": {}}));
    assert_eq!(code, "unknown_tool");
    assert!(msg.contains("nope"), "{msg}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn intercept_verdicts() {
    let t = TempDir::new("serve-intercept");
    let blocker = ext(&t, "blocker", &["--intercepts", "turn_start", "--intercept-mode", "block"]);
    let rw1 = ext(&t, "rw1", &["--intercepts", "tool_call", "--intercept-mode", "rewrite"]);
    let rw2 = ext(&t, "rw2", &["--intercepts", "tool_call", "--intercept-mode", "rewrite"]);
    let rp = ext(&t, "rp", &["--intercepts", "assistant_message", "--intercept-mode", "replace"]);
    let mut s = Serve::start(&t, &[blocker, rw1, rw2, rp], &[]);
    s.ready_all();
    assert_eq!(
        s.ok(json!({"id": 1, "type": "intercept", "event": "turn_start", "step": 1})),
        json!({"block": true, "reason": "blocked by blocker"})
    );
    // Rewrites chain in load order.
    assert_eq!(
        s.ok(json!({"id": 2, "type": "intercept", "event": "tool_call", "tool_id": "c1", "tool_name": "echo", "tool_args": {"a": 1}})),
        json!({"block": false, "modified_args": {"a": 1, "by_rw1": true, "by_rw2": true}})
    );
    assert_eq!(
        s.ok(json!({"id": 3, "type": "intercept", "event": "assistant_message", "text": "hi"})),
        json!({"block": false, "replace_text": "hi+rp"})
    );
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn events_are_delivered_to_subscribers() {
    let t = TempDir::new("serve-event");
    let a = ext(&t, "a", &["--events", "x,y", "--tools", "events@a"]);
    let b = ext(&t, "b", &["--events", "x", "--tools", "events@b"]);
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready_all();
    assert_eq!(s.ok(json!({"id": 1, "type": "event", "event": "x", "k": 1})), json!({"delivered": 2}));
    assert_eq!(s.ok(json!({"id": 2, "type": "event", "event": "y", "n": [1, 2]})), json!({"delivered": 1}));
    assert_eq!(s.ok(json!({"id": 3, "type": "event", "event": "z"})), json!({"delivered": 0}));
    // What the extensions saw, in order (a call to the same extension is
    // written after the events).
    let r = s.ok(json!({"id": 4, "type": "tool", "name": "events@a"}));
    let seen: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen, json!([{"event": "x", "k": 1}, {"event": "y", "n": [1, 2]}]));
    let r = s.ok(json!({"id": 5, "type": "tool", "name": "events@b"}));
    let seen: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen, json!([{"event": "x", "k": 1}]));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn panel_key_and_panel_close() {
    let t = TempDir::new("serve-panel");
    let a = ext(&t, "a", &["--tools", "events", "--commands", "panel"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    // A panel that is not open takes no keys, in serve as in the console.
    let (code, msg) = s.err(json!({"id": 0, "type": "panel_key", "extension": "a", "panel_id": "p1", "key": "up"}));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "extension \"a\" has no open panel \"p1\""));
    s.ok(json!({"id": "open", "type": "command", "name": "panel"}));
    let key = json!({"id": 1, "type": "panel_key", "extension": "a", "panel_id": "p1", "key": "rune", "text": "q"});
    assert_eq!(s.ok(key), json!({}));
    assert_eq!(
        s.ok(json!({"id": 2, "type": "panel_key", "extension": "a", "panel_id": "p1", "key": "enter"})),
        json!({})
    );
    assert_eq!(s.ok(json!({"id": 3, "type": "panel_close", "extension": "a", "panel_id": "p1"})), json!({}));
    let r = s.ok(json!({"id": 4, "type": "tool", "name": "events"}));
    let seen: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        seen,
        json!([
            {"type": "panel_key", "panel_id": "p1", "key": "rune", "text": "q"},
            {"type": "panel_key", "panel_id": "p1", "key": "enter"},
            {"type": "panel_close", "panel_id": "p1"},
        ])
    );
    let (code, msg) = s.err(json!({"id": 5, "type": "panel_key", "extension": "ghost", "panel_id": "p1", "key": "up"}));
    assert_eq!(code, "unknown_extension");
    assert!(msg.contains("ghost"), "{msg}");
    let (code, _) = s.err(json!({"id": 6, "type": "panel_close", "extension": "ghost", "panel_id": "p1"}));
    assert_eq!(code, "unknown_extension");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn reload_reports_counts() {
    let t = TempDir::new("serve-reload");
    let a = ext(&t, "a", &["--tools", "echo"]);
    let missing = write_manifest(&t.path().join("exts"), "missing", json!({"name": "missing", "exec": "./not-there"}));
    let mut s = Serve::start(&t, &[a, missing], &[]);
    assert_eq!(s.ready(), ["a"], "{}", s.z.context());
    let before = s.pids();
    assert_eq!(before.len(), 1);
    let r = s.ok(json!({"id": "r", "type": "reload"}));
    let obj = r.as_object().unwrap();
    assert_eq!(obj.len(), 4, "{r}");
    assert!(r["stopped"].is_u64(), "{r}");
    assert_eq!(r["loaded"], 2, "{r}");
    assert_eq!(r["ready"], 1, "{r}");
    let errors = r["errors"].as_array().expect("errors array");
    assert_eq!(errors.len(), 1, "{r}");
    assert!(errors[0].as_str().is_some_and(|e| e.contains("missing")), "{r}");
    // A new process answers; the old one is gone.
    let after = s.pids();
    assert_eq!(after.len(), 1);
    assert_ne!(before, after);
    assert_gone(&before);
    let r = s.ok(json!({"id": "t", "type": "tool", "name": "echo", "args": {"i": 1}}));
    assert_eq!(echoed(&r)["args"], json!({"i": 1}));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert_gone(&after);
}

// ----- shutdown --------------------------------------------------------------

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

// ----- errors --------------------------------------------------------------

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
    // Not UTF-8 inside a string: not JSON.
    s.z.write(b"{\"id\":\"u\",\"type\":\"ping\",\"x\":\"\xff\"}\n");
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

// ----- concurrency ---------------------------------------------------------

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

// ----- stdout and notifications -------------------------------------------

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

/// What the fixture's `call` tool got back from the host, as a JSON frame.
fn call_result(r: &Value) -> Value {
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {r}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn extensions_call_tools_through_the_host() {
    // docs/protocol.md §6.1 and §6.5, with frames as the current Go SDK writes them.
    let t = TempDir::new("serve-call-tool");
    let a = ext(&t, "a", &["--call-tool", "--tools", "call,call@again", "--echo-ack"]);
    let b = ext(&t, "b", &["--tools", "echo,events@b,call@b,hold", "--intercepts", "tool_call", "--events", "tool_call"]);
    let c = ext(&t, "c", &["--tools", "call@c"]);
    let mut s = Serve::start(&t, &[a, b, c], &[]);
    s.ready_all();
    let ack = s.wait_or_find(|f| f["type"] == "notify" && f["extension"] == "a");
    let ack: Value = serde_json::from_str(s.frames[ack]["message"].as_str().unwrap().trim_start_matches("ack:")).unwrap();
    assert!(ack["capabilities"].as_array().unwrap().contains(&json!("call_tool")), "{ack}");

    // A routed call: the answer names the tool, and B's interceptor and
    // subscriber saw `origin_extension`.
    let r = s.request(json!({"id": 1, "type": "tool", "name": "call", "args": {"to": "echo", "args": {"city": "Oslo"}}}));
    let got = call_result(&r);
    assert_eq!(got["type"], "tool_result", "{got}");
    assert_eq!(got["id"], "sdk-1");
    assert_eq!(got["name"], "echo");
    assert_eq!(got["is_error"], false, "{got}");
    assert_eq!(echoed(&got)["args"], json!({"city": "Oslo"}));
    let seen = s.ok(json!({"id": 2, "type": "tool", "name": "events@b"}));
    let seen: Value = serde_json::from_str(seen["content"][0]["text"].as_str().unwrap()).unwrap();
    let seen = seen.as_array().unwrap();
    assert!(seen.iter().any(|e| e["intercept"] == "tool_call" && e["origin_extension"] == "a" && e["tool_name"] == "echo"), "{seen:?}");
    assert!(seen.iter().any(|e| e["event"] == "tool_call" && e["origin_extension"] == "a"), "{seen:?}");

    // Every refusal text of §6.1.
    let refusal = |s: &mut Serve, id: i64, args: Value, tool: &str| {
        let r = s.request(json!({"id": id, "type": "tool", "name": tool, "args": args}));
        let got = call_result(&r);
        assert_eq!(got["is_error"], true, "{got}");
        got["content"][0]["text"].as_str().unwrap().to_string()
    };
    assert_eq!(refusal(&mut s, 3, json!({"to": "echo"}), "call@b"), "extension did not opt in to call_tool");
    assert_eq!(refusal(&mut s, 4, json!({"to": "echo", "parent": "999999"}), "call"), "unknown or expired parent tool call");
    assert_eq!(refusal(&mut s, 5, json!({"to": "echo", "no_parent": true}), "call"), "parent_id is required while an extension tool is active");
    assert_eq!(refusal(&mut s, 6, json!({"to": "call", "args": {"to": "echo"}}), "call"), "tool call cycle detected");
    assert_eq!(refusal(&mut s, 7, json!({"to": "nope"}), "call"), "unknown tool \"nope\"");
    assert_eq!(refusal(&mut s, 8, json!({"to": "echo", "args": [1]}), "call"), "call_tool requires a name and JSON object args");
    // Cancelled: the host still answers, saying so. The callee holds the
    // call, so its answer cannot overtake the cancel.
    let text = refusal(&mut s, 9, json!({"to": "hold", "cancel": true}), "call");
    assert!(text.contains("cancelled"), "{text}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn richer_tools_and_command_actions_of_the_current_revision() {
    let t = TempDir::new("serve-rich");
    let a = ext(&t, "a", &["--rich-tools", "--tools", "echo", "--commands", "tool_prompt,slash,bad_tool_prompt,nameless_tool_prompt"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let l = s.ok(json!({"id": 1, "type": "list"}));
    let tools: HashMap<&str, &Value> = l["tools"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap(), t)).collect();
    assert!(!tools.contains_key("nonsense"), "an unknown exposure is refused: {tools:?}");
    assert!(log_contains_text(&t, "a", "tool \"nonsense\" has unknown exposure \"nonsense\", skipped"));
    assert_eq!(tools["structured"]["output_schema"]["properties"]["ok"]["type"], "boolean");
    assert_eq!(tools["structured"]["replay"], "safe");
    assert_eq!(tools["structured"]["exposure"], "direct");
    assert_eq!(tools["structured"]["active"], true);
    assert_eq!(tools["later"]["active"], false, "deferred until activated");
    assert_eq!(tools["asks"]["interactive"], true);
    assert_eq!(tools["empty"]["replay"], "never", "an unknown replay counts as never");
    assert_eq!(tools["activate"]["namespace"], "ns");
    let caps = &l["extensions"][0]["capabilities"];
    assert!(caps.as_array().unwrap().contains(&json!("tool_cancel")), "{caps}");

    let r = s.ok(json!({"id": 2, "type": "tool", "name": "structured"}));
    assert_eq!(r["structured_content"], json!({"ok": true}));
    assert_eq!(r["content"][0]["format"], "markdown");
    s.send(&json!({"id": 3, "type": "tool", "name": "activate"}));
    let answered = s.response_index(&json!(3));
    assert_eq!(s.frames[answered]["result"]["activate_tools"], json!(["later"]));
    let changed = s.wait_or_find(|f| f["type"] == "tools_changed");
    assert!(answered < changed, "the answer, then what it changed: {:?}", s.frames);
    assert_eq!(s.frames[changed], json!({"type": "tools_changed", "extension": "a", "reason": "activated", "tools": ["later"]}));
    let l = s.ok(json!({"id": 4, "type": "list"}));
    assert!(l["tools"].as_array().unwrap().iter().any(|t| t["name"] == "later" && t["active"] == true));
    let r = s.ok(json!({"id": 5, "type": "tool", "name": "empty"}));
    assert_eq!(r["content"], json!([{"type": "text", "text": "(extension returned no content)"}]));
    // No interactive support without --interactive-tools: refused at once.
    let r = s.ok(json!({"id": 6, "type": "tool", "name": "asks"}));
    assert_eq!(r["is_error"], true);
    assert_eq!(r["content"][0]["text"], "interactive extension tools require an interactive host");

    let r = s.ok(json!({"id": 7, "type": "command", "name": "tool_prompt", "args": "x"}));
    assert_eq!(r, json!({"extension": "a", "action": "tool_prompt", "prompt": "now x", "tool_name": "echo", "tool_args": {"q": "x"}}));
    // tool_args that are not an object: the reply is an error, nothing runs.
    let r = s.ok(json!({"id": "7b", "type": "command", "name": "bad_tool_prompt"}));
    assert_eq!(r["action"], "noop", "{r}");
    assert_eq!(r["error"], "extension answered tool_prompt with tool_args that are not a JSON object", "{r}");
    assert!(r.get("tool_args").is_none(), "{r}");
    let r = s.ok(json!({"id": "7c", "type": "command", "name": "nameless_tool_prompt"}));
    assert_eq!((&r["action"], &r["error"]), (&json!("noop"), &json!("extension answered tool_prompt without a tool_name")), "{r}");
    s.ok(json!({"id": 8, "type": "command", "name": "slash", "args": "weather oslo"}));
    let slash = s.wait_or_find(|f| f["type"] == "submit_slash");
    assert_eq!(s.frames[slash], json!({"type": "submit_slash", "extension": "a", "text": "/weather oslo"}));
    assert!(log_contains_text(&t, "a", "refused submit_slash \"no slash\""));
    // operation_key and reconcile reach the extension as given.
    let r = s.ok(json!({"id": 9, "type": "tool", "name": "echo", "args": {}, "operation_key": "op-1", "reconcile": true}));
    assert_eq!(echoed(&r)["args"], json!({}));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert_eq!(s.notes("submit_slash").len(), 1);
}

fn read_log(t: &TempDir, name: &str) -> String {
    std::fs::read_to_string(t.path().join("zot-home/logs").join(format!("ext-{name}.log"))).unwrap_or_default()
}

fn log_contains_text(t: &TempDir, name: &str, needle: &str) -> bool {
    common::wait_until(LINE_WAIT, || read_log(t, name).contains(needle))
}

#[test]
fn a_chain_of_four_tool_calls_goes_no_deeper() {
    let t = TempDir::new("serve-depth");
    let exts: Vec<PathBuf> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| ext(&t, n, &["--call-tool", "--tools", &format!("call@{n}")]))
        .chain([ext(&t, "e", &["--tools", "echo"])])
        .collect();
    let mut s = Serve::start(&t, &exts, &[]);
    s.ready_all();
    // call@a → call@b → call@c → call@d: the fourth may not call again.
    let args = json!({"to": "call@b", "args": {"to": "call@c", "args": {"to": "call@d", "args": {"to": "echo"}}}});
    let r = s.request(json!({"id": 1, "type": "tool", "name": "call@a", "args": args}));
    let mut frame = call_result(&r);
    for _ in 0..3 {
        assert_eq!(frame["is_error"], false, "{frame}");
        frame = serde_json::from_str(frame["content"][0]["text"].as_str().unwrap()).unwrap();
    }
    assert_eq!(frame["is_error"], true, "{frame}");
    assert_eq!(frame["content"][0]["text"], "tool call depth limit reached");
    // One level less is fine.
    let args = json!({"to": "call@c", "args": {"to": "call@d", "args": {"to": "echo"}}});
    let r = s.request(json!({"id": 2, "type": "tool", "name": "call@b", "args": args}));
    let mut frame = call_result(&r);
    for _ in 0..2 {
        frame = serde_json::from_str(frame["content"][0]["text"].as_str().unwrap()).unwrap();
    }
    assert_eq!(frame["is_error"], false, "{frame}");
    assert_eq!(frame["name"], "echo");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

/// What the fixture's `events@NAME` tool says it saw.
fn seen_by(s: &mut Serve, name: &str, id: i64) -> Vec<Value> {
    let r = s.ok(json!({"id": id, "type": "tool", "name": format!("events@{name}")}));
    serde_json::from_str::<Value>(r["content"][0]["text"].as_str().unwrap()).unwrap().as_array().unwrap().clone()
}

#[test]
fn every_event_and_intercept_frame_carries_the_envelope() {
    // docs/protocol.md §6.4: the 14 events, routed with their payloads; the
    // envelope on every event and event_intercept frame; one host-wide
    // strictly increasing sequence; one session id per run unless the
    // agent gives one.
    let events = [
        "session_start", "session_end", "user_prompt_submit", "turn_start", "turn_end", "tool_call",
        "tool_confirmation_requested", "permission_decision", "tool_result", "assistant_message",
        "pre_compact", "post_compact", "subagent_start", "subagent_stop",
    ];
    let t = TempDir::new("serve-envelope");
    let a = ext(&t, "a", &["--keep-envelope", "--tools", "events@a", "--events", &events.join(","), "--intercepts", "tool_call,before_agent_start"]);
    let b = ext(&t, "b", &["--keep-envelope", "--tools", "events@b", "--events", "turn_start"]);
    let mut s = Serve::start(&t, &[a, b], &["--provider", "prov", "--model", "mod"]);
    s.ready_all();
    for (i, e) in events.iter().enumerate() {
        let r = s.ok(json!({"id": i, "type": "event", "event": e, "n": i}));
        let expect = if *e == "turn_start" { 2 } else { 1 };
        assert_eq!(r, json!({"delivered": expect}), "{e}");
    }
    s.ok(json!({"id": 100, "type": "intercept", "event": "tool_call", "tool_name": "x", "tool_args": {}}));
    s.ok(json!({"id": 101, "type": "event", "event": "turn_start", "session_id": "agent-s", "cwd": "/elsewhere"}));
    let big = "r".repeat(300 * 1024);
    s.ok(json!({"id": 102, "type": "event", "event": "tool_result", "tool_id": "t", "tool_name": "x", "tool_args": {},
        "status": "completed", "executed": true, "result": {"content": [{"type": "text", "text": big}], "is_error": false}}));
    let seen = seen_by(&mut s, "a", 200);
    assert_eq!(seen.len(), events.len() + 3, "{seen:?}");
    let cwd = t.path().join("cwd").display().to_string();
    let mut last = 0;
    let session = seen[0]["session_id"].as_str().unwrap().to_string();
    for (i, f) in seen.iter().enumerate() {
        let seq = f["sequence"].as_u64().unwrap_or_else(|| panic!("no sequence: {f}"));
        assert!(seq > last, "sequence not increasing at {i}: {seq} after {last}");
        last = seq;
        if i < events.len() + 1 {
            assert_eq!(f["session_id"], session.as_str(), "{f}");
            assert_eq!(f["cwd"], cwd.as_str(), "{f}");
        }
    }
    for (i, e) in events.iter().enumerate() {
        assert_eq!(seen[i]["event"], *e);
        assert_eq!(seen[i]["n"], i, "the payload is routed as given: {}", seen[i]);
    }
    assert_eq!(seen[events.len()]["intercept"], "tool_call");
    assert_eq!(seen[events.len() + 1]["session_id"], "agent-s", "the agent's own session id wins");
    assert_eq!(seen[events.len() + 1]["cwd"], "/elsewhere");
    let result = &seen[events.len() + 2]["result"];
    assert_eq!(result["truncated"], true, "a tool_result over 256 KiB is cut");
    assert_eq!(result["content"][0]["text"].as_str().unwrap().len(), 256 * 1024);
    // b's turn_start frames sit in the same host-wide order: the counter is
    // over frames, so b's frame for an event comes right after a's.
    let seen_b = seen_by(&mut s, "b", 201);
    assert_eq!(seen_b.len(), 2);
    let seq = |f: &Value| f["sequence"].as_u64().unwrap_or(0);
    assert_eq!(seq(&seen_b[0]), seq(&seen[3]) + 1, "a frame of its own, after a's: {seen_b:?}");
    assert_eq!(seq(&seen_b[1]), seq(&seen[events.len() + 1]) + 1, "{seen_b:?}");
    let mut all: Vec<u64> = seen.iter().chain(&seen_b).map(seq).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), seen.len() + seen_b.len(), "no two frames share a sequence");
    // before_agent_start: the host's provider and model unless the agent
    // gives its own.
    s.ok(json!({"id": 103, "type": "intercept", "event": "before_agent_start", "system_prompt": "p", "agent_run_id": "r"}));
    s.ok(json!({"id": 104, "type": "intercept", "event": "before_agent_start", "system_prompt": "p", "provider": "x", "model": "y"}));
    // Neither a prompt nor a run id: the interceptor still gets both.
    let r = s.ok(json!({"id": 105, "type": "intercept", "event": "before_agent_start"}));
    assert_eq!(r["system_prompt"], "+a", "{r}");
    let seen = seen_by(&mut s, "a", 202);
    let bas: Vec<&Value> = seen.iter().filter(|f| f["intercept"] == "before_agent_start").collect();
    assert_eq!(bas[2]["system_prompt"], "", "{bas:?}");
    let run = bas[2]["agent_run_id"].as_str().unwrap_or("");
    assert!(run.starts_with(&format!("{session}-run-")), "{run}");
    assert_eq!((&bas[0]["provider"], &bas[0]["model"], &bas[0]["agent_run_id"]), (&json!("prov"), &json!("mod"), &json!("r")), "{bas:?}");
    assert_eq!((&bas[1]["provider"], &bas[1]["model"]), (&json!("x"), &json!("y")), "{bas:?}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn before_agent_start_chains_the_system_prompt() {
    let t = TempDir::new("serve-bas");
    let mk = |name: &str, mode: &str| ext(&t, name, &["--intercepts", "before_agent_start", "--bas-mode", mode]);
    let exts = vec![mk("a1", "append"), mk("a2", "number"), mk("a3", "huge"), mk("a4", "block"), mk("a5", "slow"), mk("a6", "append")];
    // Long enough for every Python interceptor but a5 to answer in time on
    // a loaded machine; a5 never does.
    let mut s = Serve::start(&t, &exts, &["--fail-closed", "--intercept-timeout", "5"]);
    s.ready_all();
    let payload = json!({"id": 1, "type": "intercept", "event": "before_agent_start", "agent_run_id": "r1",
        "provider": "p", "model": "m", "system_prompt": "base"});
    let r = s.ok(payload);
    // a2, a3 and a4 are ignored with a warning each; a5 times out, which
    // keeps the prompt even fail-closed.
    assert_eq!(r, json!({"block": false, "system_prompt": "base+a1+a6"}));
    for (name, why) in [("a2", "not a string"), ("a3", "bytes (limit"), ("a4", "block without a system_prompt")] {
        let n = s.wait_or_find(|f| f["type"] == "notify" && f["extension"] == name);
        let msg = s.frames[n]["message"].as_str().unwrap();
        assert!(msg.contains(why) && s.frames[n]["level"] == "warn", "{name}: {msg}");
    }
    let t2 = TempDir::new("serve-bas-empty");
    let mut s2 = Serve::start(&t2, &[ext(&t2, "e", &["--intercepts", "before_agent_start", "--bas-mode", "empty"])], &[]);
    s2.ready_all();
    let r = s2.ok(json!({"id": 1, "type": "intercept", "event": "before_agent_start", "system_prompt": "base"}));
    assert_eq!(r["system_prompt"], "", "\"\" empties the prompt");
    let (code, msg) = s2.err(json!({"id": 2, "type": "intercept", "event": "before_agent_start", "system_prompt": 5}));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "param `system_prompt` must be a string"));
    s2.z.close_stdin();
    assert_eq!(s2.finish(), 0);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

/// `ext` with `restart` set in its manifest.
fn ext_restart(t: &TempDir, name: &str, restart: &str, flags: &[&str]) -> PathBuf {
    let d = ext(t, name, flags);
    let path = d.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["restart"] = json!(restart);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    d
}

#[test]
fn a_crashed_extension_comes_back_and_a_call_made_meanwhile_is_answered_by_it() {
    // docs/protocol.md §7.1.
    let t = TempDir::new("serve-restart");
    // Its frames up to ready leave in one write: on a busy machine a quiet
    // spell after hello_ack would have the host count the restarted `a`
    // ready before it registered `echo`, and the call made meanwhile would
    // rightly be unknown_tool (§7.1: it did not register the name again).
    let a = ext_restart(&t, "a", "on-failure", &["--tools", "crash,echo", "--burst"]);
    // The call made meanwhile waits for the restart and a Python start-up:
    // its deadline is not what this test is about, so it is long.
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60", "--hello-timeout", "60"]);
    s.ready_all();
    let before = s.pids();
    let crash = s.request(json!({"id": "c", "type": "tool", "name": "crash"}));
    assert_eq!(crash["error"]["code"], "extension_exited", "{crash}");
    // Sent while it restarts: waits for the new process.
    let r = s.request(json!({"id": "during", "type": "tool", "name": "echo", "args": {"k": 1}}));
    assert_eq!(r["ok"], true, "{r}\n{}", read_log(&t, "a"));
    assert_eq!(echoed(&r["result"])["args"], json!({"k": 1}));
    let order: Vec<&str> = s
        .frames
        .iter()
        .filter_map(|f| f["type"].as_str())
        .filter(|t| ["extension_exited", "extension_restarting", "extension_ready", "tools_changed"].contains(t))
        .collect();
    assert_eq!(order, ["extension_ready", "extension_exited", "extension_restarting", "extension_ready", "tools_changed"]);
    let restarting = s.note("extension_restarting");
    assert_eq!(restarting, json!({"type": "extension_restarting", "extension": "a", "attempt": 1, "delay_ms": 250, "code": 3}));
    let changed = s.note("tools_changed");
    assert_eq!(changed["reason"], "restarted");
    let after = s.pids();
    assert_eq!(after.len(), 1);
    assert_ne!(before, after, "a new process");
    let l = s.ok(json!({"id": "l", "type": "list"}));
    assert_eq!(l["extensions"][0]["restarts"], 1);
    assert_eq!(l["extensions"][0]["state"], "ready");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "a").contains("exit code 3; restart policy on-failure: restart 1 of 5 in 250ms"), "{}", read_log(&t, "a"));
}

#[test]
fn five_restarts_then_a_crash_loop() {
    let t = TempDir::new("serve-crashloop");
    let a = ext(&t, "a", &["--tools", "echo", "--exit-after-ready", "4"]);
    let mut s = Serve::start(&t, &[a], &["--restart", "always", "--hello-timeout", "30"]);
    // 250 + 500 + 1000 + 2000 + 4000 ms of delays, and five starts.
    let looped = s.wait_or_find_within(Duration::from_secs(90), |f| f["type"] == "extension_crash_loop");
    assert_eq!(s.frames[looped], json!({"type": "extension_crash_loop", "extension": "a", "restarts": 5}));
    let delays: Vec<u64> = s.notes("extension_restarting").iter().map(|f| f["delay_ms"].as_u64().unwrap()).collect();
    assert_eq!(delays, [250, 500, 1000, 2000, 4000], "250 ms doubling");
    let attempts: Vec<u64> = s.notes("extension_restarting").iter().map(|f| f["attempt"].as_u64().unwrap()).collect();
    assert_eq!(attempts, [1, 2, 3, 4, 5]);
    let l = s.ok(json!({"id": "l", "type": "list"}));
    assert_eq!(l["extensions"][0]["state"], "crash_loop");
    assert_eq!(l["extensions"][0]["restarts"], 5);
    let (code, _) = s.err(json!({"id": "t", "type": "tool", "name": "echo"}));
    assert_eq!(code, "unknown_tool");
    // A reload starts it again.
    let r = s.ok(json!({"id": "r", "type": "reload"}));
    assert_eq!(r["loaded"], 1);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_reload_announces_the_tools_that_went_and_came() {
    // docs/protocol.md §4: `tools_changed` names the tools whose state changed;
    // after a reload that is what an extension has now and what it lost,
    // and an extension that does not come back lost all of its tools.
    let t = TempDir::new("serve-reload-tools");
    // What `a` has after the reload is what it registered before it was
    // counted ready: its frames up to ready leave in one write, and the
    // reload waits for it however slowly Python starts on a busy machine.
    let a = ext(&t, "a", &["--tools", "keep,gone", "--burst"]);
    let b = ext(&t, "b", &["--tools", "only_b"]);
    let mut s = Serve::start(&t, &[a, b.clone()], &["--ready-grace", "60", "--hello-timeout", "60"]);
    s.ready_all();
    ext(&t, "a", &["--tools", "keep,new", "--burst"]);
    std::fs::write(b.join("extension.json"), r#"{"name":"b","exec":"./nope"}"#).unwrap();
    s.ok(json!({"id": 1, "type": "reload"}));
    let changed: Vec<Value> = s.notes("tools_changed");
    assert_eq!(
        changed,
        [
            json!({"type": "tools_changed", "extension": "a", "reason": "reloaded", "tools": ["keep", "new", "gone"]}),
            json!({"type": "tools_changed", "extension": "b", "reason": "reloaded", "tools": ["only_b"]}),
        ],
        "{changed:?}"
    );
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn restart_never_overrides_the_manifest_and_policies_judge_the_exit() {
    let t = TempDir::new("serve-restart-policy");
    // `always` in the manifest, `--restart never` for the run: no restart.
    let a = ext_restart(&t, "a", "always", &["--tools", "crash"]);
    let mut s = Serve::start(&t, &[a], &["--restart", "never"]);
    s.ready_all();
    s.request(json!({"id": 1, "type": "tool", "name": "crash"}));
    s.note("extension_exited");
    let gone = s.wait_or_find(|f| f["type"] == "tools_changed");
    assert_eq!(s.frames[gone], json!({"type": "tools_changed", "extension": "a", "reason": "exited", "tools": ["crash"]}));
    let l = s.ok(json!({"id": 2, "type": "list"}));
    assert_eq!(l["extensions"][0]["state"], "exited");
    // A reload brings it back, announced.
    s.ok(json!({"id": 3, "type": "reload"}));
    let back = s.wait_or_find(|f| f["type"] == "tools_changed" && f["reason"] == "reloaded");
    assert_eq!(s.frames[back]["tools"], json!(["crash"]));
    assert!(s.notes("extension_restarting").is_empty());
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);

    // A clean exit: `on-failure` leaves it down, `always` brings it back.
    let t = TempDir::new("serve-restart-clean");
    let calm = ext_restart(&t, "calm", "on-failure", &["--tools", "answer_exit@calm"]);
    let keen = ext_restart(&t, "keen", "always", &["--tools", "answer_exit@keen"]);
    let mut s = Serve::start(&t, &[calm, keen], &[]);
    s.ready_all();
    assert_eq!(s.request(json!({"id": 1, "type": "tool", "name": "answer_exit@calm"}))["ok"], true);
    assert_eq!(s.request(json!({"id": 2, "type": "tool", "name": "answer_exit@keen"}))["ok"], true);
    let back = s.wait_or_find(|f| f["type"] == "tools_changed" && f["extension"] == "keen");
    assert_eq!(s.frames[back]["reason"], "restarted");
    let l = s.ok(json!({"id": 3, "type": "list"}));
    let states: Vec<(&str, &str)> =
        l["extensions"].as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap(), e["state"].as_str().unwrap())).collect();
    assert_eq!(states, [("calm", "exited"), ("keen", "ready")]);
    assert!(s.notes("extension_restarting").iter().all(|f| f["extension"] == "keen" && f["code"] == 0));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn extensions_reach_the_agents_own_tools() {
    // docs/protocol.md §4 agent_tools / call_tool / call_tool_result, §6.1.
    let t = TempDir::new("serve-agent-tools");
    let a = ext(&t, "a", &["--call-tool", "--tools", "call"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    assert_eq!(s.ok(json!({"id": 1, "type": "agent_tools", "tools": [{"name": "bash", "description": "run"}]})), json!({}));
    s.send(&json!({"id": 2, "type": "tool", "name": "call", "tool_id": "model-7", "args": {"to": "bash", "args": {"cmd": "ls"}}}));
    let asked = s.wait_or_find(|f| f["type"] == "call_tool");
    let asked = s.frames[asked].clone();
    assert_eq!(asked["extension"], "a");
    assert_eq!(asked["name"], "bash");
    assert_eq!(asked["args"], json!({"cmd": "ls"}));
    assert_eq!(asked["parent_tool_id"], "model-7");
    let call_id = asked["call_id"].as_str().unwrap().to_string();
    // `content` is required (docs/protocol.md §4); the call still waits.
    let (code, msg) = s.err(json!({"id": "r0", "type": "call_tool_result", "call_id": call_id}));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "missing param `content`"));
    let r = s.ok(json!({"id": 3, "type": "call_tool_result", "call_id": call_id, "content": [{"type": "text", "text": "a b"}], "structured_content": {"n": 2}}));
    assert_eq!(r, json!({}));
    let got = call_result(&s.response(&json!(2)));
    assert_eq!(got["name"], "bash");
    assert_eq!(got["content"], json!([{"type": "text", "text": "a b"}]));
    assert_eq!(got["structured_content"], json!({"n": 2}));
    assert_eq!(got["is_error"], false);
    // That call no longer waits.
    let (code, _) = s.err(json!({"id": 4, "type": "call_tool_result", "call_id": call_id, "content": []}));
    assert_eq!(code, "unknown_call");
    // Cancelled by the extension: the agent is told.
    s.send(&json!({"id": 5, "type": "tool", "name": "call", "args": {"to": "bash", "args": {}, "cancel": true}}));
    let got = call_result(&s.response(&json!(5)));
    assert!(got["content"][0]["text"].as_str().unwrap().contains("cancelled"), "{got}");
    assert_eq!((&got["name"], &got["is_error"]), (&json!("bash"), &json!(true)), "the answer names the tool: {got}");
    let cancel = s.wait_or_find(|f| f["type"] == "call_tool_cancel");
    assert!(s.frames[cancel]["call_id"].is_string());
    // Made in a call the agent gave no tool_id: no parent_tool_id (the
    // host's own ids are never shown).
    let second: Vec<Value> = s.notes("call_tool");
    assert_eq!(second.len(), 2, "{second:?}");
    assert!(second[1].get("parent_tool_id").is_none(), "{}", second[1]);
    // A set replaced: bash is gone.
    s.ok(json!({"id": 6, "type": "agent_tools", "tools": []}));
    let got = call_result(&s.request(json!({"id": 7, "type": "tool", "name": "call", "args": {"to": "bash"}})));
    assert_eq!(got["content"][0]["text"], "unknown tool \"bash\"");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn command_names_are_matched_without_case() {
    // docs/protocol.md §6.3: first in load order wins; command_invoked.name
    // carries the spelling registered first.
    let t = TempDir::new("serve-case");
    let a = ext(&t, "a", &["--commands", "Weather"]);
    let b = ext(&t, "b", &["--commands", "weather"]);
    // Within one extension too: its second spelling is shadowed.
    let c = ext(&t, "c", &["--commands", "Tide,tide"]);
    let mut s = Serve::start(&t, &[a, b, c], &[]);
    s.ready_all();
    let r = s.ok(json!({"id": 1, "type": "command", "name": "TIDE"}));
    assert_eq!(r["display"], "c:Tide:");
    let r = s.ok(json!({"id": 1, "type": "command", "name": "WEATHER", "args": "oslo"}));
    assert_eq!(r["display"], "a:Weather:oslo");
    let l = s.ok(json!({"id": 2, "type": "list"}));
    assert_eq!(
        l["commands"],
        json!([{"name": "Weather", "description": "Weather from a", "extension": "a"}, {"name": "Tide", "description": "Tide from c", "extension": "c"}])
    );
    assert_eq!(l["extensions"][1]["shadowed_commands"], json!(["weather"]));
    assert_eq!(l["extensions"][2]["shadowed_commands"], json!(["tide"]));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "b").contains("command /weather is shadowed by extension \"a\""), "{}", read_log(&t, "b"));
    assert!(read_log(&t, "c").contains("command /tide is shadowed by /Tide, registered first by the same extension"), "{}", read_log(&t, "c"));
}

#[test]
fn a_callers_calls_are_cancelled_when_it_exits() {
    // docs/protocol.md §6.1: when the caller exits, its calls in flight are
    // cancelled the same way (the target gets tool_cancel).
    let t = TempDir::new("serve-caller-exit");
    let a = ext(&t, "a", &["--call-tool", "--tools", "call,crash"]);
    let b = ext(&t, "b", &["--tools", "hold@b,cancelled"]);
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready_all();
    s.send(&json!({"id": "outer", "type": "tool", "name": "call", "args": {"to": "hold@b"}}));
    let r = s.request(json!({"id": "bang", "type": "tool", "name": "crash"}));
    assert_eq!(r["error"]["code"], "extension_exited", "{r}");
    assert_eq!(s.response(&json!("outer"))["error"]["code"], "extension_exited");
    let got = s.ok(json!({"id": "c", "type": "tool", "name": "cancelled"}));
    let cancelled: Vec<Value> = serde_json::from_str(got["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(cancelled.len(), 1, "b was told to stop the call made for a: {got}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "b").contains("cancelled by its caller"), "{}", read_log(&t, "b"));
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

#[test]
fn frames_to_an_extension_are_at_most_four_mib() {
    // docs/protocol.md §3 rule 9: a call whose frame would be larger fails at
    // once with too_large; an event that large is not delivered (logged).
    let t = TempDir::new("serve-4mib");
    let a = ext(&t, "a", &["--tools", "echo", "--events", "big", "--commands", "panel,display"]);
    // A 4 MiB echo through Python (parse, dump, write) took more than the
    // 3 s of FAST on a loaded machine: what this test is about is the size.
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60", "--command-timeout", "60"]);
    s.ready_all();
    let big = "b".repeat(4 * 1024 * 1024);
    // Every call frame: a command's and a panel key's too.
    let (code, msg) = s.err(json!({"id": "c", "type": "command", "name": "display", "args": big}));
    assert_eq!(code, "too_large", "{msg}");
    assert!(msg.contains("a command_invoked frame of ") && msg.contains("over the limit of 4194304 bytes"), "{msg}");
    assert_eq!(s.ok(json!({"id": "p", "type": "command", "name": "panel"}))["action"], "open_panel");
    let (code, msg) = s.err(json!({"id": "k", "type": "panel_key", "extension": "a", "panel_id": "p1", "key": "rune", "text": big}));
    assert_eq!(code, "too_large", "{msg}");
    assert!(msg.contains("a panel_key frame of "), "{msg}");
    // Nothing of them reached the extension: it answers at once.
    assert_eq!(s.ok(json!({"id": "d", "type": "command", "name": "display", "args": "small"}))["display"], "display:small");
    let (code, msg) = s.err(json!({"id": 1, "type": "tool", "name": "echo", "args": {"x": big}}));
    assert_eq!(code, "too_large", "{msg}");
    assert!(msg.contains("over the limit of 4194304 bytes"), "{msg}");
    assert_eq!(s.ok(json!({"id": 2, "type": "event", "event": "big", "x": big})), json!({"delivered": 0}));
    // Just under the cap goes through.
    let fits = "f".repeat(4 * 1024 * 1024 - 200);
    let r = s.ok(json!({"id": 3, "type": "tool", "name": "echo", "args": {"x": fits}}));
    assert_eq!(echoed(&r)["args"]["x"].as_str().map(str::len), Some(4 * 1024 * 1024 - 200));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "a").contains("event big not delivered"), "{}", read_log(&t, "a"));
}
