//! The end of a call run as the model's (docs/protocol.md §6.1, §8.3): whoever
//! asked (the console, `zot mcp`, an extension's `call_tool`), its answer
//! is followed by the `tool_result` event (§6.4), once, whatever ended it
//! (the tool's answer, a block, a cancel, a timeout, an exit). The chain,
//! the `tool_call` event and the call are `start_tool`'s; front ends only
//! choose where the answer goes.

use super::{Dispatcher, Inbox, Origin};
use crate::host::{HostError, Request, Responder, Response};
use crate::protocol::Payload;
use serde_json::{json, Value};

impl Dispatcher {
    /// `done`, followed by the call's `tool_result` event. A call refused
    /// before anything saw it (§6.2) gets none. The event goes through the
    /// inbox ahead of the answer, so that it reaches the subscribers before
    /// anything the caller does next.
    pub(super) fn reporting(&self, tool_id: &str, name: &str, args: &Value, origin: Option<&Origin>, done: Responder) -> Responder {
        if done.is_observed() {
            return done;
        }
        let mut payload = Payload::new();
        payload.insert("tool_id".into(), json!(tool_id));
        payload.insert("tool_name".into(), json!(name));
        if let Some(o) = origin {
            payload.insert("origin_extension".into(), json!(o.name));
        }
        let (asked, inbox) = (args.clone(), self.inbox.clone());
        done.observed(move |r, chain_args, ran| {
            if matches!(r, Ok(Response::Tool(t)) if t.refused) {
                return;
            }
            payload.insert("tool_args".into(), chain_args.unwrap_or(asked));
            let (status, executed, result) = outcome(r, ran);
            payload.insert("status".into(), json!(status));
            payload.insert("executed".into(), json!(executed));
            payload.insert("result".into(), result);
            let event = Request::Event { event: "tool_result".into(), payload };
            let _ = inbox.send(Inbox::Request(event, Responder::new(|_| {})));
        })
    }
}

/// The `status`, `executed` and `result` of the event for answer `r`;
/// `ran`: the call reached its tool (§6.4: `executed` says whether the tool
/// ran, so a call cancelled or timed out while parked for a restart or a
/// wake was not executed, even though its chain let it through).
fn outcome(r: &Result<Response, HostError>, ran: bool) -> (&'static str, bool, Value) {
    let error = |e: &dyn std::fmt::Display| json!({"content": [{"type": "text", "text": e.to_string()}], "is_error": true});
    match r {
        Ok(Response::Tool(t)) => {
            let result = json!({"content": t.content, "is_error": t.is_error || t.blocked.is_some()});
            match (&t.blocked, t.is_error) {
                (Some(_), _) => ("blocked", false, result),
                (None, true) => ("failed", true, result),
                (None, false) => ("completed", true, result),
            }
        }
        Ok(other) => ("failed", false, error(&format!("unexpected response {other:?}"))),
        Err(e @ HostError::Cancelled { .. }) => ("cancelled", ran, error(e)),
        Err(e @ HostError::Timeout { .. }) => ("timed_out", ran, error(e)),
        Err(e @ HostError::UnknownTool(_)) => ("failed", false, error(e)),
        Err(e) => ("failed", ran, error(e)),
    }
}
