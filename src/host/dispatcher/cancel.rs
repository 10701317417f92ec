//! Giving up on calls (PROTOCOL.md §6.1: a call is cancellable wherever it
//! is). [`Dispatcher::cancel`] takes the calls a [`Pick`] names out of the
//! call table, whatever their stage ([`CallTable::take`]), and ends each
//! the way its stage needs:
//!
//! | stage | what the cancel does |
//! |---|---|
//! | waiting for a load or reload | it never runs |
//! | parked for a restarting extension | it never runs |
//! | in its intercept chain | dropped with its interceptor's step: the tool is never called, no `tool_call` event |
//! | sent to an extension | a tool gets `tool_cancel` (if it opted in); a command is given up on |
//! | waiting on the agent | the agent gets `call_tool_cancel` |
//!
//! Each is answered [`HostError::Cancelled`] (a call the host made for an
//! extension's `call_tool` is answered too; nobody waits for that answer
//! any more, since its caller was told or is gone). Why it was cancelled
//! ([`Why`]) changes only what the logs say.
//!
//! [`CallTable::take`]: super::table::CallTable::take

use super::calls::{CallKind, ToolStage};
use super::chain::Then;
pub(super) use super::table::Pick;
use super::table::Taken;
use super::{respond, Dispatcher, HostFrame};
use crate::host::{HostError, HostEvent, Request};
use crate::protocol::encode;
use std::sync::Arc;

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
        let taken = self.table.take(pick);
        let n = taken.len();
        for t in taken {
            self.end_cancelled(t, why);
        }
        n
    }

    fn end_cancelled(&mut self, taken: Taken, why: Why) {
        match taken {
            Taken::Waiting(req, done) => respond(done, Err(cancelled("", what_of(&req)))),
            Taken::Parked(p) => {
                let ext = &self.exts[p.slot];
                let what = what_of(&p.req);
                ext.log(&format!("{what} (waiting for the restart) {}", why.text()));
                respond(p.done, Err(cancelled(ext.name(), what)));
            }
            Taken::Chain { then, asked } => {
                for (cid, call) in asked {
                    let ext = &self.exts[call.ext.slot];
                    ext.log(&format!("intercept (request {cid}) given up on: its call was {}", why.text()));
                }
                match then {
                    Then::Answer(done) => respond(done, Err(cancelled("", "intercept".into()))),
                    Then::Tool(m) => respond(m.done, Err(cancelled("", format!("tool {}", m.call.name)))),
                }
            }
            Taken::Sent(id, call) => {
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
            Taken::Agent(call_id, c) => {
                self.emit(HostEvent::CallToolCancel { call_id });
                respond(c.done, Err(cancelled("the agent", format!("tool {}", c.name))));
            }
        }
    }
}
