//! `Request::CancelTool` (`Host::submit_tool` / `Host::cancel_tool`): a
//! caller gives up on a tool call in flight; the call leaves the table,
//! the extension gets `tool_cancel` with the call's correlation id, and the
//! caller is answered `HostError::Cancelled`.

mod common;

use common::{calls_ext, host_config, py_ext, start_host, text_of, TempDir};
use serde_json::{json, Value};
use std::time::Duration;
use zot_host::host::{HostError, Response};

#[test]
fn cancel_tool_answers_the_caller_and_tells_the_extension() {
    let t = TempDir::new("host-cancel");
    let fx = py_ext(t.path(), "fx", "fx", &["--tools", "sleep,cancelled"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![fx]));
    host.wait_ready().expect("ready");

    let (tx, rx) = crossbeam_channel::bounded(1);
    host.submit_tool("sleep", Some(json!({"ms": 60000})), "k1", move |r| {
        let _ = tx.send(r);
    });
    assert_eq!(host.cancel_tool("k1"), Ok(()));
    match rx.recv_timeout(Duration::from_secs(10)).expect("an answer") {
        Err(HostError::Cancelled { extension, what }) => {
            assert_eq!((extension.as_str(), what.as_str()), ("fx", "tool sleep"));
            assert_eq!(HostError::Cancelled { extension, what }.code(), "cancelled");
        }
        other => panic!("expected Cancelled, got {other:?}"),
    }
    // The extension was told, under the call's correlation id.
    let r = host.tool("cancelled", None).expect("cancelled tool");
    let ids: Value = serde_json::from_str(&text_of(&r.content)).unwrap_or_default();
    assert_eq!(ids.as_array().map(Vec::len), Some(1), "{ids}");
    assert!(common::read_log(t.path(), "fx").contains("cancelled by the caller"));

    // Nothing in flight under that key (any more): BadRequest.
    assert!(matches!(host.cancel_tool("k1"), Err(HostError::BadRequest(_))));
    assert!(matches!(host.cancel_tool("never"), Err(HostError::BadRequest(_))));
    // Other calls are unaffected.
    let r = host.call(zot_host::host::Request::Tool { name: "sleep".into(), args: Some(json!({"ms": 1})), tool_id: Some("k2".into()) });
    assert!(matches!(r, Ok(Response::Tool(_))), "{r:?}");
}

#[test]
fn a_tool_id_never_cancels_a_call_the_host_made_for_an_extension_while_it_is_parked() {
    // docs/protocol.md §6.1: the embedder's `tool_id`s and the host's own ids
    // are separate namespaces. An extension's `call_tool` to a restarting
    // extension waits for it (§7.1), carrying its host-made `tool_id`
    // (`ext-call-N`); no `cancel_tool` of the embedder reaches it there.
    let t = TempDir::new("host-cancel-parked-ns");
    let once = t.path().join("once");
    let a = calls_ext(&t, "a", json!({"tools": ["call"]}), None);
    let cfg = json!({"tools": ["shared", "crash"], "once": once.display().to_string(), "later_hello_ms": 3000});
    let r = calls_ext(&t, "r", cfg, Some("on-failure"));
    let (host, events) = start_host(host_config(t.path(), vec![a, r]));
    host.wait_ready().expect("ready");
    assert!(host.tool("crash", None).is_err(), "r crashed");
    let restarting = common::wait_event(&events, Duration::from_secs(60), |e| {
        matches!(e, zot_host::host::HostEvent::ExtensionRestarting { extension, .. } if extension == "r")
    });
    assert!(restarting.is_some(), "r restarts");

    let (tx, rx) = crossbeam_channel::bounded(1);
    host.submit_tool("call", Some(json!({"to": "shared"})), "outer", move |r| {
        let _ = tx.send(r);
    });
    let seen = t.path().join("a.seen");
    let called = common::wait_until(Duration::from_secs(60), || {
        std::fs::read_to_string(&seen).unwrap_or_default().lines().any(|l| l == "tool_call call")
    });
    assert!(called, "a got its tool call");
    // Every spelling the host could have given the parked call.
    let mut hits = Vec::new();
    while rx.is_empty() {
        for n in 1..=300 {
            let id = format!("ext-call-{n}");
            if host.cancel_tool(&id).is_ok() {
                hits.push(id);
            }
        }
        if !hits.is_empty() {
            break;
        }
    }
    assert!(hits.is_empty(), "the embedder's tool_id cancelled the host's call: {hits:?}");
    // The restarted r answered the call, through a.
    match rx.recv_timeout(Duration::from_secs(60)).expect("an answer") {
        Ok(Response::Tool(reply)) => assert_eq!(common::echo_of(&reply.content)["by"], "r", "{reply:?}"),
        other => panic!("expected r's answer through a, got {other:?}"),
    }
}
