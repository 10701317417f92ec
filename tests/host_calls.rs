//! docs/protocol.md §2 and §3.6: commands, tools, events, notes and panels, many
//! calls in flight answered out of order, timeouts and `tool_cancel`.

mod common;

use common::*;
use crossbeam_channel::unbounded;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use zot_host::host::{HostError, HostEvent, Request, Response};
use zot_host::protocol::Panel;

#[test]
fn command_actions_errors_and_trimmed_args() {
    let t = TempDir::new("calls-cmd");
    let cmds = "prompt,insert,display,panel,err,noop,explicit_noop,other";
    let d = py_ext(t.path(), "cmds", "cmds", &["--commands", cmds]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();

    let r = host.command("prompt", "  write a poem \t").unwrap();
    assert_eq!((r.extension.as_str(), r.action.as_str()), ("cmds", "prompt"));
    assert_eq!(r.prompt.as_deref(), Some("prompt:write a poem"), "args are trimmed");
    assert_eq!((r.insert.clone(), r.display.clone(), r.error.clone()), (None, None, None));

    let r = host.command("insert", "x y").unwrap();
    assert_eq!((r.action.as_str(), r.insert.as_deref()), ("insert", Some("insert:x y")));

    let r = host.command("display", "").unwrap();
    assert_eq!((r.action.as_str(), r.display.as_deref()), ("display", Some("display:")));

    let r = host.command("panel", "").unwrap();
    assert_eq!(r.action, "open_panel");
    let p = Panel { id: "p1".into(), title: "T".into(), lines: vec!["a".into(), "b".into()], footer: "f".into() };
    assert_eq!(r.open_panel, Some(p));

    // An error wins whatever the action says.
    let r = host.command("err", " boom ").unwrap();
    assert_eq!(r.error.as_deref(), Some("failed: boom"));
    assert_eq!(r.action, "display");

    // A missing action means noop.
    let r = host.command("noop", "").unwrap();
    assert_eq!(r.action, "noop");
    assert_eq!((r.prompt, r.insert, r.display, r.open_panel, r.error), (None, None, None, None, None));
    assert_eq!(host.command("explicit_noop", "").unwrap().action, "noop");

    assert_eq!(host.command("other", "  a  b  ").unwrap().display.as_deref(), Some("cmds:other:a  b"));
    assert!(matches!(host.command("nope", ""), Err(HostError::UnknownCommand(n)) if n == "nope"));
}

#[test]
fn tool_results_text_image_errors_and_args() {
    let t = TempDir::new("calls-tool");
    let d = py_ext(t.path(), "tools", "tools", &["--tools", "echo,image,fail,malformed"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();

    let r = host.tool("echo", Some(json!({"q": "weather", "n": [1, 2]}))).unwrap();
    assert_eq!(r.extension, "tools");
    assert!(!r.is_error);
    assert_eq!(r.content.len(), 1);
    assert_eq!(r.content[0]["type"], "text");
    assert_eq!(echo_of(&r.content), json!({"tool": "echo", "args": {"q": "weather", "n": [1, 2]}, "from": "tools"}));

    // Args default to {} (absent or null).
    assert_eq!(echo_of(&host.tool("echo", None).unwrap().content)["args"], json!({}));
    assert_eq!(echo_of(&host.tool("echo", Some(Value::Null)).unwrap().content)["args"], json!({}));

    let r = host.tool("image", None).unwrap();
    assert_eq!(
        r.content,
        vec![
            json!({"type": "text", "text": "a picture"}),
            json!({"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="}),
        ]
    );
    assert!(!r.is_error);

    let r = host.tool("fail", None).unwrap();
    assert!(r.is_error);
    assert_eq!(text_of(&r.content), "it failed");

    // A reply with mistyped fields fails that call, naming the extension.
    let r = host.tool("malformed", None).unwrap();
    assert!(r.is_error);
    assert!(text_of(&r.content).contains("malformed reply from extension \"tools\""), "{:?}", r.content);

    for bad in [json!([1, 2]), json!("text"), json!(5), json!(true)] {
        match host.tool("echo", Some(bad.clone())) {
            Err(HostError::BadRequest(m)) => assert!(m.contains("object"), "{m}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(matches!(host.tool("nope", None), Err(HostError::UnknownTool(n)) if n == "nope"));
    // Still alive and answering after all that.
    assert_eq!(echo_of(&host.tool("echo", None).unwrap().content)["from"], "tools");
}

#[test]
fn events_are_delivered_in_order_and_counted() {
    let t = TempDir::new("calls-events");
    let a = py_ext(t.path(), "a", "a", &["--events", "turn_start,turn_end,custom_thing", "--tools", "events@a"]);
    let b = py_ext(t.path(), "b", "b", &["--events", "turn_start", "--tools", "events@b"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a, b]));
    host.wait_ready().unwrap();

    let payload = |v: Value| v.as_object().unwrap().clone();
    assert_eq!(host.event("turn_start", payload(json!({"step": 1}))).unwrap(), 2);
    assert_eq!(host.event("turn_end", payload(json!({"stop": "end_turn"}))).unwrap(), 1);
    assert_eq!(host.event("custom_thing", payload(json!({"x": [1]}))).unwrap(), 1, "unknown names are routed too");
    assert_eq!(host.event("session_start", payload(json!({}))).unwrap(), 0);
    assert_eq!(host.event("turn_start", payload(json!({"step": 2}))).unwrap(), 2);

    let seen_a: Value = serde_json::from_str(&text_of(&host.tool("events@a", None).unwrap().content)).unwrap();
    assert_eq!(
        seen_a,
        json!([
            {"event": "turn_start", "step": 1},
            {"event": "turn_end", "stop": "end_turn"},
            {"event": "custom_thing", "x": [1]},
            {"event": "turn_start", "step": 2},
        ])
    );
    let seen_b: Value = serde_json::from_str(&text_of(&host.tool("events@b", None).unwrap().content)).unwrap();
    assert_eq!(seen_b, json!([{"event": "turn_start", "step": 1}, {"event": "turn_start", "step": 2}]));
    let info = ext_info(&host, "a");
    assert_eq!(info.events, vec!["turn_start", "turn_end", "custom_thing"]);
}

#[test]
fn notes_submit_and_panels_reach_the_host_attributed() {
    let t = TempDir::new("calls-notes");
    let d = py_ext(t.path(), "noter", "noter", &["--commands", "notify"]);
    let (host, ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    assert_eq!(host.command("notify", "hey").unwrap().action, "noop");

    let mut got = Vec::new();
    while got.len() < 6 {
        match wait_event(&ev, Duration::from_secs(30), |e| !matches!(e, HostEvent::Ready { .. } | HostEvent::ExtensionReady { .. })) {
            Some(e) => got.push(e),
            None => panic!("only {got:?}"),
        }
    }
    let ext = || "noter".to_string();
    assert_eq!(
        got,
        vec![
            HostEvent::Notify { extension: ext(), level: "warn".into(), message: "note:hey".into() },
            HostEvent::ClearNotes { extension: ext() },
            HostEvent::Submit { extension: ext(), text: "submit:hey".into() },
            HostEvent::OpenPanel {
                extension: ext(),
                panel: Panel { id: "p2".into(), title: "P".into(), lines: vec!["x".into()], footer: String::new() },
            },
            HostEvent::PanelRender {
                extension: ext(),
                panel_id: "p2".into(),
                title: "P2".into(),
                lines: vec!["y".into()],
                footer: "z".into(),
            },
            HostEvent::PanelClose { extension: ext(), panel_id: "p2".into() },
        ]
    );
}

#[test]
fn panel_keys_and_close_reach_the_extension() {
    let t = TempDir::new("calls-panel");
    let d = py_ext(t.path(), "paneler", "paneler", &["--tools", "events", "--commands", "panel"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    // Keys go only to an open panel.
    match host.panel_key("paneler", "p1", "down", None) {
        Err(HostError::BadRequest(m)) => assert_eq!(m, "extension \"paneler\" has no open panel \"p1\""),
        other => panic!("{other:?}"),
    }
    assert_eq!(host.command("panel", "").unwrap().open_panel.map(|p| p.id).as_deref(), Some("p1"));

    host.panel_key("paneler", "p1", "down", None).unwrap();
    host.panel_key("paneler", "p1", "rune", Some("q".into())).unwrap();
    host.panel_close("paneler", "p1").unwrap();
    let seen: Value = serde_json::from_str(&text_of(&host.tool("events", None).unwrap().content)).unwrap();
    assert_eq!(
        seen,
        json!([
            {"type": "panel_key", "panel_id": "p1", "key": "down"},
            {"type": "panel_key", "panel_id": "p1", "key": "rune", "text": "q"},
            {"type": "panel_close", "panel_id": "p1"},
        ])
    );

    assert!(matches!(host.panel_key("ghost", "p1", "up", None), Err(HostError::UnknownExtension(n)) if n == "ghost"));
    assert!(matches!(host.panel_close("ghost", "p1"), Err(HostError::UnknownExtension(n)) if n == "ghost"));
    match host.panel_key("paneler", "p1", "F13", None) {
        Err(HostError::BadRequest(m)) => assert!(m.contains("F13"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Closed by the host: no more keys.
    assert!(matches!(host.panel_key("paneler", "p1", "up", None), Err(HostError::BadRequest(_))));
}

#[test]
fn twelve_hundred_concurrent_calls_answered_out_of_order_are_all_correlated() {
    const N: usize = 1200;
    let t = TempDir::new("calls-many");
    let a = py_ext(t.path(), "ra", "ra", &["--reverse", "--tools", "echo@a"]);
    let b = py_ext(t.path(), "rb", "rb", &["--reverse", "--tools", "echo@b"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a, b]));
    host.wait_ready().unwrap();

    let (tx, rx) = unbounded();
    for n in 0..N {
        let (name, ext) = if n % 2 == 0 { ("echo@a", "ra") } else { ("echo@b", "rb") };
        let tx = tx.clone();
        let req = Request::Tool { name: name.into(), args: Some(json!({"n": n, "pad": "p".repeat(n % 50)})), tool_id: None };
        host.submit(req, move |r| {
            let _ = tx.send((n, ext, r));
        });
    }
    drop(tx);
    let mut done = HashSet::new();
    let mut order = Vec::new();
    for (n, ext, r) in rx.iter() {
        let Ok(Response::Tool(reply)) = r else { panic!("call {n}: {r:?}") };
        assert_eq!(reply.extension, ext);
        let echo = echo_of(&reply.content);
        assert_eq!(echo["args"]["n"], n, "call {n} got someone else's answer");
        assert_eq!(echo["args"]["pad"].as_str().map(str::len), Some(n % 50));
        assert!(done.insert(n), "call {n} answered twice");
        order.push(n);
    }
    assert_eq!(done.len(), N);
    // The fixture really did answer out of order.
    let a_order: Vec<usize> = order.iter().copied().filter(|n| n % 2 == 0).collect();
    assert!(a_order.windows(2).any(|w| w[0] > w[1]), "answers came in order; the test proves nothing");
}

#[test]
fn a_tool_timeout_cancels_the_call_in_the_extension() {
    let t = TempDir::new("calls-cancel");
    let d = py_ext(t.path(), "sleepy", "sleepy", &["--tools", "sleep,cancelled,echo"]);
    let mut cfg = host_config(t.path(), vec![d]);
    // The timeout is every call's: the fast calls below must be answered
    // within it on a loaded machine too.
    cfg.timeouts.tool = Duration::from_secs(3);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();

    let started = Instant::now();
    // Sleeps well past the timeout, then logs whether it was cancelled.
    match host.tool("sleep", Some(json!({"ms": 8000}))) {
        Err(HostError::Timeout { extension, what, after }) => {
            assert_eq!(extension, "sleepy");
            assert_eq!(what, "tool sleep");
            assert_eq!(after, Duration::from_secs(3));
        }
        other => panic!("{other:?}"),
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(20), "{took:?}");

    // The extension was told which call the host gave up on.
    let mut ids: Vec<String> = Vec::new();
    assert!(wait_until(Duration::from_secs(30), || {
        let r = host.tool("cancelled", None).unwrap();
        ids = serde_json::from_str(&text_of(&r.content)).unwrap();
        !ids.is_empty()
    }));
    assert_eq!(ids.len(), 1, "{ids:?}");
    // And its sleeping handler saw it was cancelled, for that very id.
    let needle = format!("tool call {} was cancelled", ids[0]);
    assert!(log_contains(t.path(), "sleepy", &needle, Duration::from_secs(30)), "{}", read_log(t.path(), "sleepy"));
    assert!(read_log(t.path(), "sleepy").contains("[zot] tool sleep (request"));
    // A fast call afterwards is fine.
    assert_eq!(echo_of(&host.tool("echo", None).unwrap().content)["from"], "sleepy");
}

#[test]
fn a_command_timeout_is_reported() {
    let t = TempDir::new("calls-cmd-timeout");
    let d = py_ext(t.path(), "mum", "mum", &["--commands", "silent"]);
    let mut cfg = host_config(t.path(), vec![d]);
    cfg.timeouts.command = Duration::from_millis(300);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let started = Instant::now();
    let r = host.command("silent", "");
    assert!(
        matches!(&r, Err(HostError::Timeout { extension, what, .. }) if extension == "mum" && what == "command /silent"),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(14), "a 300 ms timeout, not the others");
}
