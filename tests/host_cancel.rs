//! `Request::CancelTool` (`Host::submit_tool` / `Host::cancel_tool`): a
//! caller gives up on a tool call in flight; the call leaves the table,
//! the extension gets `tool_cancel` with the call's correlation id, and the
//! caller is answered `HostError::Cancelled`.

mod common;

use common::{host_config, py_ext, start_host, text_of, TempDir};
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
