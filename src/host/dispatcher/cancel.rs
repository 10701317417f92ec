//! Giving up on calls (PROTOCOL.md §6.1: a call is cancellable wherever it
//! is). One function, [`Dispatcher::cancel`], looks for the calls a
//! [`Pick`] names at every stage a call can be in, and ends each the way
//! its stage needs:
//!
//! | stage | what the cancel does |
//! |---|---|
//! | waiting for a load or reload (`deferred`) | taken out; it never runs |
//! | parked for a restarting extension | taken out; it never runs |
//! | in its intercept chain | the chain is dropped with its interceptor's call; the tool is never called, no `tool_call` event |
//! | sent to an extension | a tool gets `tool_cancel` (if it opted in); a command is given up on |
//! | waiting on the agent | the agent gets `call_tool_cancel` |
//!
//! Each is answered [`HostError::Cancelled`] (a call the host made for an
//! extension's `call_tool` is answered too; nobody waits for that answer
//! any more, since its caller was told or is gone).

use super::calls::{CallKind, ToolStage};
use super::chain::Then;
use super::{respond, Dispatcher, HostFrame};
use crate::host::{CallKey, HostError, HostEvent, Request, Responder};
use crate::protocol::encode;
use std::sync::Arc;

/// Which calls to give up on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pick<'a> {
    /// The one request submitted with this key.
    Key(CallKey),
    /// Every call the embedder started with this `tool_id` (never one the
    /// host made for an extension, whatever its id).
    ToolId(&'a str),
    /// Every interactive call waiting for its user.
    Interactive,
}

/// Why, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// The caller (the embedder or the agent) gave up on it.
    Caller,
    /// The extension that made it cancelled it, or exited.
    CallerGone,
    /// The front end's input ended, nobody is left to answer it.
    EndOfInput,
}

impl Why {
    fn text(self) -> &'static str {
        match self {
            Why::Caller => "cancelled by the caller",
            Why::CallerGone => "cancelled by its caller",
            Why::EndOfInput => "cancelled at the end of the front end's input",
        }
    }
}

/// What a stage knows of a call, for a [`Pick`] to judge.
struct Seen<'a> {
    key: Option<CallKey>,
    /// The embedder's `tool_id`, for a call the embedder made.
    tool_id: Option<&'a str>,
    interactive: bool,
}

impl Pick<'_> {
    fn picks(&self, s: Seen) -> bool {
        match self {
            Pick::Key(k) => s.key == Some(*k),
            Pick::ToolId(t) => s.tool_id == Some(*t),
            Pick::Interactive => s.interactive,
        }
    }
}

fn request_tool_id(req: &Request) -> Option<&str> {
    match req {
        Request::Tool { tool_id, .. } => tool_id.as_deref(),
        Request::ToolCall(c) => c.tool_id.as_deref(),
        _ => None,
    }
}

fn what_of(req: &Request) -> String {
    match req {
        Request::Command { name, .. } => format!("command /{name}"),
        Request::Tool { name, .. } => format!("tool {name}"),
        Request::ToolCall(c) => format!("tool {}", c.name),
        Request::Intercept { event, .. } => format!("intercept of {event}"),
        _ => "request".into(),
    }
}

fn cancelled(extension: &str, what: String) -> HostError {
    HostError::Cancelled { extension: extension.to_string(), what }
}

impl Dispatcher {
    /// Gives up on every call `pick` names, wherever it is; returns how
    /// many there were. Each is answered before this returns.
    pub(super) fn cancel(&mut self, pick: Pick, why: Why) -> usize {
        let mut n = 0;
        let picks_request = |req: &Request, done: &Responder| {
            pick.picks(Seen { key: done.key(), tool_id: request_tool_id(req), interactive: false })
        };

        // Waiting for a load or a reload.
        let (gone, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.deferred).into_iter().partition(|(req, done)| picks_request(req, done));
        self.deferred = kept;
        for (req, done) in gone {
            n += 1;
            respond(done, Err(cancelled("", what_of(&req))));
        }

        // Parked for a restarting extension.
        for slot in 0..self.exts.len() {
            let ext = &mut self.exts[slot];
            let (gone, kept): (Vec<_>, Vec<_>) =
                std::mem::take(&mut ext.parked).into_iter().partition(|(req, done, _, _)| picks_request(req, done));
            ext.parked = kept;
            for (req, done, _, _) in gone {
                n += 1;
                let what = what_of(&req);
                ext.log(&format!("{what} (waiting for the restart) {}", why.text()));
                respond(done, Err(cancelled(ext.name(), what)));
            }
        }

        // In an intercept chain: dropped with its interceptor's call, so
        // what follows the chain (the tool, the event) never happens.
        let chain_picks = |then: &Then| match then {
            Then::Answer(done) => pick.picks(Seen { key: done.key(), tool_id: None, interactive: false }),
            Then::Tool(m) => {
                let tool_id = if m.origin.is_none() { m.call.tool_id.as_deref() } else { None };
                pick.picks(Seen { key: m.done.key(), tool_id, interactive: false })
            }
        };
        for id in self.chains.ids_where(chain_picks) {
            let Some((then, _)) = self.chains.remove(id) else { continue };
            n += 1;
            for cid in self.calls.ids_where(|c| matches!(c.kind, CallKind::Intercept { chain } if chain == id)) {
                if let Some(call) = self.calls.remove(&cid) {
                    let ext = &self.exts[call.ext.slot];
                    ext.log(&format!("intercept (request {cid}) given up on: its call was {}", why.text()));
                }
            }
            match then {
                Then::Answer(done) => respond(done, Err(cancelled("", "intercept".into()))),
                Then::Tool(m) => respond(m.done, Err(cancelled("", format!("tool {}", m.call.name)))),
            }
        }

        // Sent to an extension.
        let ids = self.calls.ids_where(|c| match &c.kind {
            CallKind::Command { done, .. } => pick.picks(Seen { key: done.key(), tool_id: None, interactive: false }),
            CallKind::Tool(t) => {
                pick.picks(Seen { key: t.done.key(), tool_id: t.agent_tool_id.as_deref(), interactive: t.interactive })
            }
            CallKind::Intercept { .. } => false,
        });
        let mut ids = ids;
        ids.sort_unstable();
        for id in ids {
            let Some(call) = self.calls.remove(&id) else { continue };
            n += 1;
            let ext = &self.exts[call.ext.slot];
            match call.kind {
                CallKind::Command { name, done } => {
                    ext.log(&format!("command /{name} (request {id}) {}", why.text()));
                    respond(done, Err(cancelled(ext.name(), format!("command /{name}"))));
                }
                CallKind::Tool(ToolStage { name, done, .. }) => {
                    if ext.can("tool_cancel") {
                        ext.log(&format!("tool {name} (request {id}) {}; sending tool_cancel", why.text()));
                        let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                    } else {
                        ext.log(&format!("tool {name} (request {id}) {} (it takes no tool_cancel)", why.text()));
                    }
                    respond(done, Err(cancelled(ext.name(), format!("tool {name}"))));
                }
                CallKind::Intercept { .. } => {}
            }
        }

        // Waiting on the agent.
        let mut ids: Vec<String> = self
            .agent_calls
            .iter()
            .filter(|(_, c)| pick.picks(Seen { key: c.done.key(), tool_id: None, interactive: false }))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort_unstable();
        for call_id in ids {
            let Some(c) = self.agent_calls.remove(&call_id) else { continue };
            n += 1;
            self.emit(HostEvent::CallToolCancel { call_id });
            respond(c.done, Err(cancelled("the agent", format!("tool {}", c.name))));
        }
        n
    }
}
