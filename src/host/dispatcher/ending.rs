//! How a call ends without its answer. Each way is one function over the
//! call table: it takes the calls a [`Pick`] names, wherever they are
//! ([`CallTable::take`]), and [`Dispatcher::end`] ends each as its stage
//! needs, in one match over every stage and every reason, so a new stage
//! cannot be forgotten by one of them.
//!
//! | reason | function | picks |
//! |---|---|---|
//! | a cancel (PROTOCOL.md §6.1) | [`Dispatcher::cancel`] | a key, a `tool_id` |
//! | the end of the front end's input (§6.2) | [`Dispatcher::cancel`] | the interactive calls |
//! | the caller's exit | `cancel_calls_of` | the calls made for its `call_tool` |
//! | a deadline | [`Dispatcher::time_out`] | one call, at its stage |
//! | the target's exit | [`Dispatcher::target_gone`], [`Dispatcher::route_parked`] | every call sent to it; every request parked for it, once it is ready again or not coming back |
//! | shutdown or reload | [`Dispatcher::shutdown_calls`] | every call not dispatched yet |
//!
//! | stage | cancelled | timed out | target gone | shutdown (reload) |
//! |---|---|---|---|---|
//! | waiting for a load | never runs | — | — | `shutting_down` (waits on) |
//! | parked for a restart | never runs | `timeout` | routed again: to it when ready, else the next owner of the name, or unknown | `shutting_down` (waits for the reload) |
//! | in its intercept chain | the step's reply is dropped: the tool is never called, no `tool_call` event | — | — | runs on; ends `shutting_down` unless blocked |
//! | sent: a tool | `tool_cancel` (if it opted in) | `tool_cancel` (if it opted in), `timeout` | `extension_exited` (`shutting_down` at shutdown) | its answer, or at its exit |
//! | sent: a command | given up on | `timeout` | as a tool | as a tool |
//! | sent: an interceptor's step | with its chain | the interceptor failed: the chain goes on | the interceptor failed | as a tool |
//! | waiting on the agent | `call_tool_cancel` to the agent | `call_tool_cancel`, `timeout` | — | runs on; cancelled at its caller's exit |
//!
//! A dash is a pair no pick makes; the call is still answered, with the
//! reason's error. A cancelled call the host made for an extension's
//! `call_tool` is answered too; nobody waits for that answer any more,
//! since its caller was told or is gone.
//!
//! [`CallTable::take`]: super::table::CallTable::take

use super::calls::{Call, CallKind, ToolStage};
use super::chain::Then;
pub(super) use super::table::Pick;
use super::table::{Parked, Taken};
use super::{Dispatcher, HostFrame, Phase, respond};
use crate::host::{HostError, HostEvent, Request, fmt_duration};
use crate::protocol::encode;
use std::sync::Arc;

/// Why a cancel came, for the log.
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

/// Why a call ends without its answer.
#[derive(Debug, Clone, Copy)]
pub(super) enum End<'a> {
    Cancel(Why),
    Timeout,
    /// The extension it is for ended, for the reason given.
    TargetGone(&'a str),
    /// The host stops (`exit`) or reloads.
    Shutdown { exit: bool },
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

fn what_of_chain(then: &Then) -> String {
    match then {
        Then::Answer(_) => "intercept".into(),
        Then::Tool(m) => format!("tool {}", m.call.name),
    }
}

fn cancelled(extension: &str, what: String) -> HostError {
    HostError::Cancelled { extension: extension.to_string(), what }
}

impl Dispatcher {
    /// Gives up on every call `pick` names, wherever it is; returns how
    /// many there were. Each is answered before this returns.
    pub(super) fn cancel(&mut self, pick: Pick, why: Why) -> usize {
        self.end(pick, End::Cancel(why))
    }

    /// The call `pick` names passed its deadline.
    pub(super) fn time_out(&mut self, pick: Pick) {
        self.end(pick, End::Timeout);
    }

    /// The extension in `slot` ended (`detail` says how): the calls sent
    /// to it fail.
    pub(super) fn target_gone(&mut self, slot: usize, detail: &str) {
        let id = self.exts[slot].id;
        self.end(Pick::SentTo(id), End::TargetGone(detail));
    }

    /// The requests parked for the extension in `slot` are routed again:
    /// to it when it is ready, to the next owner of the name (or failed as
    /// unknown) when it is not coming back.
    pub(super) fn route_parked(&mut self, slot: usize) {
        self.end(Pick::ParkedOn(slot), End::TargetGone("not coming back"));
    }

    /// The host stops (`exit`) or reloads: what is not dispatched yet is
    /// answered `shutting_down`, or waits for the reload. Calls already
    /// dispatched run on: an extension that answers in order answers them
    /// before it exits, and what is unanswered at its exit fails then.
    pub(super) fn shutdown_calls(&mut self, exit: bool) {
        self.end(Pick::Queued, End::Shutdown { exit });
    }

    /// Ends every call `pick` names for `end`; returns how many.
    fn end(&mut self, pick: Pick, end: End) -> usize {
        let taken = self.table.take(pick);
        let n = taken.len();
        for t in taken {
            self.end_one(t, end);
        }
        n
    }

    fn end_one(&mut self, taken: Taken, end: End) {
        let shutting_down = || HostError::ShuttingDown;
        match taken {
            Taken::Waiting(req, done) => match end {
                End::Cancel(_) => respond(done, Err(cancelled("", what_of(&req)))),
                End::Timeout => {
                    let after = self.cfg.timeouts.tool;
                    respond(done, Err(HostError::Timeout { extension: String::new(), what: what_of(&req), after }))
                }
                End::TargetGone(_) | End::Shutdown { exit: false } => self.table.waiting.push((req, done)),
                End::Shutdown { exit: true } => respond(done, Err(shutting_down())),
            },
            Taken::Parked(p) => self.end_parked(p, end),
            Taken::Chain { then, asked } => {
                let why = match end {
                    End::Cancel(why) => why.text().to_string(),
                    End::Timeout => "timed out".into(),
                    End::TargetGone(detail) => format!("ended: {detail}"),
                    End::Shutdown { .. } => "ended: the host is shutting down".into(),
                };
                for (cid, call) in asked {
                    let ext = &self.exts[call.ext.slot];
                    ext.log(&format!("intercept (request {cid}) given up on: its call was {why}"));
                }
                let what = what_of_chain(&then);
                let err = match end {
                    End::Cancel(_) => cancelled("", what),
                    End::Timeout => HostError::Timeout { extension: String::new(), what, after: self.cfg.timeouts.intercept },
                    End::TargetGone(detail) => HostError::Exited { extension: String::new(), detail: detail.to_string() },
                    End::Shutdown { .. } => shutting_down(),
                };
                match then {
                    Then::Answer(done) => respond(done, Err(err)),
                    Then::Tool(m) => respond(m.done, Err(err)),
                }
            }
            Taken::Sent(id, call) => self.end_sent(id, call, end),
            Taken::Agent(call_id, c) => {
                self.emit(HostEvent::CallToolCancel { call_id });
                let (extension, what) = ("the agent".to_string(), format!("tool {}", c.name));
                let err = match end {
                    End::Cancel(_) => cancelled(&extension, what),
                    End::Timeout => HostError::Timeout { extension, what, after: self.cfg.timeouts.tool },
                    End::TargetGone(detail) => HostError::Exited { extension, detail: detail.to_string() },
                    End::Shutdown { .. } => shutting_down(),
                };
                respond(c.done, Err(err));
            }
        }
    }

    fn end_parked(&mut self, p: Parked, end: End) {
        let Some(ext) = self.exts.get(p.slot) else { return respond(p.done, Err(HostError::ShuttingDown)) };
        let what = what_of(&p.req);
        match end {
            End::Cancel(why) => {
                ext.log(&format!("{what} (waiting for the restart) {}", why.text()));
                respond(p.done, Err(cancelled(ext.name(), what)));
            }
            End::Timeout => {
                let after = match &p.req {
                    Request::Command { .. } => self.cfg.timeouts.command,
                    _ => super::mcp::tool_timeout(ext, self.cfg.timeouts.tool),
                };
                ext.log(&format!("{what} timed out waiting for the restart"));
                respond(p.done, Err(HostError::Timeout { extension: ext.name().to_string(), what, after }));
            }
            End::TargetGone(_) => self.on_request(p.req, p.done),
            End::Shutdown { exit: true } => respond(p.done, Err(HostError::ShuttingDown)),
            End::Shutdown { exit: false } => self.table.waiting.push((p.req, p.done)),
        }
    }

    fn end_sent(&mut self, id: u64, call: Call, end: End) {
        let slot = call.ext.slot;
        let ext = &self.exts[slot];
        let extension = ext.name().to_string();
        let t = self.cfg.timeouts;
        let (what, done, after, note) = match call.kind {
            CallKind::Command { name, done } => (format!("command /{name}"), done, t.command, ""),
            CallKind::Tool(ToolStage { name, done, .. }) => {
                let opted_in = ext.can("tool_cancel");
                if opted_in && matches!(end, End::Cancel(_) | End::Timeout) {
                    let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                }
                let note = if opted_in { "; sending tool_cancel" } else { " (it takes no tool_cancel)" };
                (format!("tool {name}"), done, super::mcp::tool_timeout(ext, t.tool), note)
            }
            CallKind::Intercept { chain } => {
                let why = match end {
                    End::Cancel(why) => why.text().to_string(),
                    End::Timeout => format!("timed out after {}", fmt_duration(t.intercept)),
                    End::TargetGone(detail) => format!("exited ({detail})"),
                    End::Shutdown { .. } => "the host is shutting down".into(),
                };
                return self.chain_failed(chain, slot, &why);
            }
        };
        let err = match end {
            End::Cancel(why) => {
                ext.log(&format!("{what} (request {id}) {}{note}", why.text()));
                cancelled(&extension, what)
            }
            End::Timeout => {
                ext.log(&format!("{what} (request {id}) timed out after {}", fmt_duration(after)));
                HostError::Timeout { extension, what, after }
            }
            End::TargetGone(_) if self.phase == (Phase::Stopping { exit: true }) => HostError::ShuttingDown,
            End::TargetGone(detail) => HostError::Exited { extension, detail: detail.to_string() },
            End::Shutdown { .. } => HostError::ShuttingDown,
        };
        respond(done, Err(err));
    }
}
