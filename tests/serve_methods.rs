//! `zot serve` start-up and every method's answer, through the real binary
//! (docs/protocol.md §4): `ready` first and the load's `extension_error`s,
//! what `ping` and `list` answer during the load, and the shapes of
//! `list`, `command`, `tool`, `intercept`, `event`, the panel requests
//! and `reload`. Every frame read is checked to be a protocol line.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{process_alive, write_manifest, TempDir};
use serde_json::{json, Value};
use serve_proc::*;
use std::collections::HashMap;

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
