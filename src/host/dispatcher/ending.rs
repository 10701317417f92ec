//! How a call ends without its answer. Each way is one function over the
//! call table: it takes the calls a [`Pick`] names, wherever they are
//! ([`CallTable::take`]), and [`Dispatcher::end`] ends each as its stage
//! needs, in one match over every stage and every reason, so a new stage
//! cannot be forgotten by one of them.
//!
//! | reason | function | picks |
//! |---|---|---|
//! | a cancel (docs/protocol.md §6.1) | [`Dispatcher::cancel`] | a key, a `tool_id` |
//! | the end of the front end's input (§6.2) | [`Dispatcher::cancel`] | the interactive calls |
//! | the caller's exit | `cancel_calls_of` | the calls made for its `call_tool` |
//! | a deadline | [`Dispatcher::time_out`] | one call, at its stage |
//! | the target's exit | [`Dispatcher::target_gone`], [`Dispatcher::route_parked`] | every call sent to it; every request parked for it, once it is ready again or not coming back |
//! | shutdown or reload | [`Dispatcher::shutdown_calls`] | every call not dispatched yet |
//!
//! | stage | cancelled | timed out | target gone | shutdown (reload) |
//! |---|---|---|---|---|
//! | waiting for a load | never runs | — | — | `shutting_down` (waits on) |
//! | parked for a restart | never runs | `timeout` | to it when it is ready and has the name again, else unknown (never to the name's next owner) | `shutting_down` (waits for the reload) |
//! | in its intercept chain | the step's reply is dropped: the tool is never called, no `tool_call` event | — | — | runs on; ends `shutting_down` unless an interceptor blocks first, or when an interceptor is left to ask |
//! | sent: a tool | `tool_cancel` (if it opted in) | `tool_cancel` (if it opted in), `timeout` | `extension_exited` (`shutting_down` at shutdown) | its answer, or at its exit |
//! | sent: a command | given up on | `timeout` | as a tool | as a tool |
//! | sent: an interceptor's step | with its chain | the interceptor failed: the chain goes on | the interceptor failed (at shutdown: its chain ends `shutting_down`) | as a tool |
//! | waiting on the agent | `call_tool_cancel` to the agent | `call_tool_cancel`, `timeout` | — | runs on; cancelled at its caller's exit |
//!
//! A dash is a pair no pick makes; the call is still answered, with the
//! reason's error. A cancelled call the host made for an extension's
//! `call_tool` is answered too; nobody waits for that answer any more,
//! since its caller was told or is gone.
//!
//! [`CallTable::take`]: super::table::CallTable::take

use super::calls::{Call, CallKind, ToolStage, Why};
use super::chain::Then;
pub(super) use super::table::Pick;
use super::table::{Parked, Taken};
use super::{Dispatcher, HostFrame, Phase, respond};
use crate::host::{HostError, HostEvent, Request, fmt_duration};
use crate::protocol::encode;
use std::sync::Arc;

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
        Request::ReadResource { uri } => format!("resource read {uri}"),
        _ => "request".into(),
    }
}

fn what_of_chain(then: &Then) -> String {
    match then {
        Then::Answer(_) => "intercept".into(),
        Then::Tool(m) => format!("tool {}", m.call.name),
    }
}

/// The answer to `req` when nobody it may run on has its name.
pub(super) fn unknown(req: Request) -> HostError {
    match req {
        Request::Command { name, .. } => HostError::UnknownCommand(name),
        Request::Tool { name, .. } => HostError::UnknownTool(name),
        Request::ToolCall(c) => HostError::UnknownTool(c.name),
        Request::ReadResource { uri } => HostError::UnknownResource(uri),
        _ => HostError::Internal("a parked request that names nothing".into()),
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
    /// to it when it is ready and has their name, else failed as unknown
    /// (the name's next owner is not who they asked for).
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
                // A model's call names the extension whose tool it asked for.
                let owner = match &then {
                    Then::Tool(m) => self.registry.tool_owner(&m.call.name).map(|s| self.exts[s].name().to_string()),
                    Then::Answer(_) => None,
                };
                let owner = owner.unwrap_or_default();
                let err = match end {
                    End::Cancel(_) => cancelled(&owner, what),
                    End::Timeout => HostError::Timeout { extension: owner, what, after: self.cfg.timeouts.intercept },
                    End::TargetGone(detail) => HostError::Exited { extension: String::new(), detail: detail.to_string() },
                    End::Shutdown { .. } => shutting_down(),
                };
                then.fail(err);
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

    fn end_parked(&mut self, mut p: Parked, end: End) {
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
            // docs/protocol.md §7.1: the caller asked for this owner's name; it
            // runs there or nowhere, never on whoever has the name now.
            End::TargetGone(_) if p.starting.is_some() => {
                let starting = p.starting.take().unwrap_or_default();
                self.servers_started(p, starting)
            }
            End::TargetGone(_) => match (p.req, p.origin) {
                (req, _) if !self.owns(p.slot, &req) => respond(p.done, Err(unknown(req))),
                (Request::ToolCall(call), Some(origin)) => self.start_tool(call, Some(origin), p.done),
                (req, _) => self.on_request(req, p.done),
            },
            End::Shutdown { exit: true } => respond(p.done, Err(HostError::ShuttingDown)),
            End::Shutdown { exit: false } => self.table.waiting.push((p.req, p.done)),
        }
    }

    /// Whether the extension in `slot` has the name `req` asks for.
    fn owns(&self, slot: usize, req: &Request) -> bool {
        let owner = match req {
            Request::Command { name, .. } => self.registry.command_owner(name),
            Request::Tool { name, .. } => self.registry.tool_owner(name),
            Request::ToolCall(c) => self.registry.tool_owner(&c.name),
            _ => return true,
        };
        owner == Some(slot)
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
                let note = match (opted_in, ext.found.mcp.is_some()) {
                    (true, true) => "; sending notifications/cancelled",
                    (true, false) => "; sending tool_cancel",
                    (false, _) => " (it takes no tool_cancel)",
                };
                (format!("tool {name}"), done, super::mcp::tool_timeout(ext, t.tool), note)
            }
            CallKind::Read { uri, done } => {
                if matches!(end, End::Cancel(_) | End::Timeout) {
                    let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                }
                (format!("resource read {uri}"), done, super::mcp::tool_timeout(ext, t.tool), "; sending notifications/cancelled")
            }
            CallKind::Intercept { chain } => {
                // The host stops and the interceptor ended without its
                // answer: the request is answered `shutting_down` (docs/protocol.md
                // §4), not with a failed interceptor's allow or block.
                if matches!(end, End::TargetGone(_)) && self.load.phase == (Phase::Stopping { exit: true }) {
                    return self.end_chain(chain, HostError::ShuttingDown);
                }
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
            End::TargetGone(_) if self.load.phase == (Phase::Stopping { exit: true }) => HostError::ShuttingDown,
            End::TargetGone(detail) => HostError::Exited { extension, detail: detail.to_string() },
            End::Shutdown { .. } => HostError::ShuttingDown,
        };
        respond(done, Err(err));
    }
}

#[cfg(test)]
mod tests {
    use super::super::calls::{Call, CallKind, ToolStage};
    use super::super::calls::AgentCall;
    use super::super::chain::{Chain, Then};
    use super::super::ext::{Ext, ExtId};
    use super::super::table::Parked;
    use super::super::{Dispatcher, Phase};
    use super::{End, Pick, Why};
    use crate::host::{CallKey, Config, HostError, HostEvent, Request, Responder, Response, ToolCall};
    use crate::protocol::Payload;
    use crossbeam_channel::{unbounded, Receiver, Sender};
    use std::time::{Duration, Instant};

    const EXT: ExtId = ExtId { slot: 0, gen: 1 };
    type Answer = Result<Response, HostError>;

    /// A dispatcher with one extension (slot 0) and nothing running.
    fn dispatcher() -> (Dispatcher, Receiver<HostEvent>) {
        let dir = std::env::temp_dir();
        let cfg = Config::new(crate::home::Home::at(dir.join("zot-ending-unit")), dir.clone());
        let (tx, _rx) = crate::wake::channel();
        let (etx, erx) = unbounded();
        let mut d = Dispatcher::new(cfg, tx, Box::new(move |e| drop(etx.send(e))), Box::new(|| ()));
        let manifest = crate::manifest::Manifest {
            name: "a".into(),
            version: String::new(),
            exec: "a".into(),
            args: Vec::new(),
            language: String::new(),
            description: String::new(),
            enabled: true,
            skills: Vec::new(),
            theme: None,
            env: Vec::new(),
            restart: Default::default(),
            dir: dir.clone(),
            confine: None,
            unknown: Vec::new(),
        };
        let found = crate::discovery::Found { manifest, source: crate::discovery::Source::Ext, mcp: None };
        d.exts.push(Ext::new(EXT, found, super::super::limits::Bucket::new(1)));
        (d, erx)
    }

    fn answer_to(tx: &Sender<(u64, Answer)>, key: u64) -> Responder {
        let tx = tx.clone();
        Responder::new(move |r| drop(tx.send((key, r)))).with_key(key)
    }

    fn tool_call(name: &str) -> ToolCall {
        ToolCall { name: name.into(), tool_id: Some(format!("id-{name}")), ..Default::default() }
    }

    fn sent(kind: CallKind) -> Call {
        Call { ext: EXT, kind, deadline: Instant::now() + Duration::from_secs(60) }
    }

    fn tool_stage(done: Responder) -> ToolStage {
        let parents = Vec::new();
        ToolStage { name: "t".into(), done, agent_tool_id: None, root_tool_id: None, parents, interactive: false, progress_key: None }
    }

    /// The stages, one call each, keyed 1..=7; what [`put`] puts where.
    const STAGES: [(u64, &str); 7] = [
        (1, "waiting"),
        (2, "parked"),
        (3, "chain"),
        (4, "sent tool"),
        (5, "sent command"),
        (6, "sent step"),
        (7, "agent"),
    ];

    /// Puts the call of stage `key` in the table; returns the pick that
    /// names it alone.
    fn put(d: &mut Dispatcher, key: u64, tx: &Sender<(u64, Answer)>) -> Pick<'static> {
        let done = answer_to(tx, key);
        let t = &mut d.table;
        match key {
            1 => {
                t.waiting.push((Request::ToolCall(tool_call("w")), done));
                Pick::Key(CallKey::Caller(1))
            }
            2 => {
                t.parked.push(Parked { slot: 0, req: Request::ToolCall(tool_call("p")), origin: None, done, key: 20, starting: None });
                Pick::ParkedKey(20)
            }
            3 => {
                t.chains.insert(30, Chain::new("turn_start".into(), Payload::new(), Then::Answer(done), 1, |_, _| true));
                t.sent.insert(300, sent(CallKind::Intercept { chain: 30 }));
                Pick::Key(CallKey::Caller(3))
            }
            4 => {
                t.sent.insert(40, sent(CallKind::Tool(tool_stage(done))));
                Pick::Sent(40)
            }
            5 => {
                t.sent.insert(50, sent(CallKind::Command { name: "c".into(), done }));
                Pick::Sent(50)
            }
            6 => {
                // A chain whose step is ended alone: the chain goes on.
                t.chains.insert(60, Chain::new("turn_start".into(), Payload::new(), Then::Answer(done), 1, |_, _| true));
                t.sent.insert(600, sent(CallKind::Intercept { chain: 60 }));
                Pick::Sent(600)
            }
            _ => {
                t.agent.insert("c70".into(), AgentCall { n: 70, name: "a".into(), done });
                Pick::AgentCall(70)
            }
        }
    }

    fn outcome(a: &Answer) -> String {
        match a {
            Ok(Response::Intercept(o)) => format!("intercept block={}", o.block),
            Ok(other) => format!("ok {other:?}"),
            Err(e) => e.code().to_string(),
        }
    }

    /// Every reason ends the call of every stage the way the module's
    /// table says, and answers it exactly once (or keeps it waiting).
    #[test]
    fn every_reason_ends_every_stage_once() {
        let reasons: [(&str, End); 6] = [
            ("cancel", End::Cancel(Why::Caller)),
            ("end of input", End::Cancel(Why::EndOfInput)),
            ("timeout", End::Timeout),
            ("target gone", End::TargetGone("exited (code 1)")),
            ("shutdown", End::Shutdown { exit: true }),
            ("reload", End::Shutdown { exit: false }),
        ];
        // Per reason, what each stage (in STAGES order) gets.
        let want: [[&str; 7]; 6] = [
            ["cancelled", "cancelled", "cancelled", "cancelled", "cancelled", "intercept block=false", "cancelled"],
            ["cancelled", "cancelled", "cancelled", "cancelled", "cancelled", "intercept block=false", "cancelled"],
            ["timeout", "timeout", "timeout", "timeout", "timeout", "intercept block=false", "timeout"],
            ["waits", "unknown_tool", "extension_exited", "extension_exited", "extension_exited", "intercept block=false", "extension_exited"],
            ["shutting_down", "shutting_down", "shutting_down", "shutting_down", "shutting_down", "intercept block=false", "shutting_down"],
            ["waits", "waits", "shutting_down", "shutting_down", "shutting_down", "intercept block=false", "shutting_down"],
        ];
        for ((label, end), want) in reasons.into_iter().zip(want) {
            for ((key, stage), want) in STAGES.into_iter().zip(want) {
                let (mut d, _events) = dispatcher();
                d.load.phase = Phase::Running;
                let (tx, rx) = unbounded();
                let pick = put(&mut d, key, &tx);
                drop(tx);
                assert_eq!(d.end(pick, end), 1, "{label} × {stage}: taken");
                let answers: Vec<(u64, Answer)> = rx.try_iter().collect();
                if want == "waits" {
                    assert!(answers.is_empty(), "{label} × {stage}: no answer while it waits");
                    assert_eq!(d.table.waiting.len(), 1, "{label} × {stage}: back waiting");
                    continue;
                }
                assert_eq!(answers.len(), 1, "{label} × {stage}: one answer, got {}", answers.len());
                assert_eq!(answers[0].0, key);
                assert_eq!(outcome(&answers[0].1), want, "{label} × {stage}");
                assert!(d.table.sent.get(&300).is_none() && d.table.sent.get(&600).is_none(), "{label} × {stage}: no step left");
                assert!(d.table.waiting.is_empty() && d.table.parked.is_empty() && d.table.agent.is_empty());
            }
        }
    }

    /// The picks each reason's function uses take what it says and leave
    /// the rest.
    #[test]
    fn each_reason_takes_its_stages_and_leaves_the_rest() {
        let taken_by = |f: &dyn Fn(&mut Dispatcher)| -> Vec<u64> {
            let (mut d, _events) = dispatcher();
            d.load.phase = Phase::Running;
            let (tx, rx) = unbounded();
            for (key, _) in STAGES {
                put(&mut d, key, &tx);
            }
            drop(tx);
            f(&mut d);
            let mut keys: Vec<u64> = rx.try_iter().map(|(k, _)| k).collect();
            keys.sort_unstable();
            keys
        };
        // Shutdown: only what is not dispatched; the rest runs on.
        assert_eq!(taken_by(&|d| d.shutdown_calls(true)), [1, 2]);
        // Reload: nothing answered, the parked request waits for the load.
        assert!(taken_by(&|d| d.shutdown_calls(false)).is_empty());
        // The target's exit: what was sent to it (the chain whose step was
        // at it goes on, and ends with nobody left to ask).
        assert_eq!(taken_by(&|d| d.target_gone(0, "exited")), [3, 4, 5, 6]);
        // Not coming back: the parked request is routed again.
        assert_eq!(taken_by(&|d| d.route_parked(0)), [2]);
        // The end of input: interactive calls only (none here).
        assert!(taken_by(&|d| {
            d.cancel(Pick::Interactive, Why::EndOfInput);
        })
        .is_empty());
    }

    /// An interceptor that ends without its answer while the host stops
    /// leaves no verdict: its chain is answered `shutting_down`.
    #[test]
    fn an_interceptor_gone_at_shutdown_ends_its_chain_shutting_down() {
        for (key, pick) in [(3, Pick::SentTo(EXT)), (6, Pick::Sent(600))] {
            let (mut d, _events) = dispatcher();
            d.load.phase = Phase::Stopping { exit: true };
            let (tx, rx) = unbounded();
            put(&mut d, key, &tx);
            drop(tx);
            d.end(pick, End::TargetGone("the host is shutting down"));
            let answers: Vec<(u64, Answer)> = rx.try_iter().collect();
            assert_eq!(answers.len(), 1, "stage {key}: one answer");
            assert_eq!(outcome(&answers[0].1), "shutting_down", "stage {key}");
            assert!(d.table.sent.get(&300).is_none() && d.table.sent.get(&600).is_none(), "no step left");
        }
    }

    /// A tool cancelled or timed out gets `tool_cancel` once it opted in;
    /// an agent's call tells the agent.
    #[test]
    fn the_agent_hears_of_a_call_given_up_on() {
        let (mut d, events) = dispatcher();
        let (tx, _rx) = unbounded();
        let pick = put(&mut d, 7, &tx);
        d.time_out(pick);
        let ev: Vec<HostEvent> = events.try_iter().collect();
        assert!(matches!(ev.as_slice(), [HostEvent::CallToolCancel { call_id }] if call_id == "c70"), "{ev:?}");
    }
}
