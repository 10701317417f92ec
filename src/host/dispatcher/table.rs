//! The call table: every call the host has, at the stage it is in.
//!
//! | stage | field | keyed by |
//! |---|---|---|
//! | waiting for a load or a reload to end | `waiting` | arrival order |
//! | parked for a restarting extension (docs/protocol.md §7.1) | `parked` | a host id |
//! | in its intercept chain (a serve `intercept`, or a tool call run as the model's) | `chains` | the chain's host id |
//! | sent to an extension (a command, a tool, one interceptor's step) | `sent` | the correlation id |
//! | waiting on the agent (`call_tool` of an agent tool) | `agent` | the `call_id` |
//!
//! [`CallTable::take`] is the one lookup over every stage: it takes out
//! the calls a [`Pick`] names, wherever they are, for the dispatcher to end
//! them as their stage needs (`ending.rs`). A new stage is a new field
//! here, a new arm of [`Taken`] and of `At`, which every pick and every
//! ending must then handle.

use super::calls::AgentCall;
use super::calls::{Call, CallKind, InFlight};
use super::chain::{Chains, Then};
use super::Origin;
use super::ext::ExtId;
use crate::host::{CallKey, Request, Responder};
use std::collections::HashMap;

/// A request parked for the restarting extension in `slot`, until it is
/// ready or `key`'s timer ends the wait.
pub(super) struct Parked {
    pub slot: usize,
    pub req: Request,
    /// The extension whose `call_tool` it is, when it is one.
    pub origin: Option<Origin>,
    pub done: Responder,
    pub key: u64,
    /// A name nobody had while these MCP servers were still starting
    /// (docs/protocol.md §8.2): it waits for them, not for `slot`'s restart.
    pub starting: Option<Vec<String>>,
}

/// Which calls to take. Each pick judges a call at every stage
/// ([`Pick::picks`] matches every pick against every stage), so a new
/// stage cannot be forgotten by one of them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pick<'a> {
    /// The one request submitted with this key.
    Key(CallKey),
    /// Every call the embedder started with this `tool_id` (never one the
    /// host made for an extension, whatever its id).
    ToolId(&'a str),
    /// Every interactive call waiting for its user.
    Interactive,
    /// The call sent with this correlation id (an interceptor's step too).
    Sent(u64),
    /// The request parked with this key.
    ParkedKey(u64),
    /// The agent's call with this number.
    AgentCall(u64),
    /// Every call sent to this extension (its interceptor steps too).
    SentTo(ExtId),
    /// Every request parked for the extension in this slot.
    ParkedOn(usize),
    /// Every call not yet dispatched: waiting for a load, or parked.
    Queued,
}

/// A call taken out of the table, with its stage.
pub(super) enum Taken {
    Waiting(Request, Responder),
    Parked(Parked),
    /// A chain, with the step sent to its interceptor (if one was).
    Chain { then: Then, asked: Vec<(u64, Call)> },
    Sent(u64, Call),
    Agent(String, AgentCall),
}

/// A call where it is, for a [`Pick`] to judge.
enum At<'a> {
    Waiting(&'a Request, &'a Responder),
    Parked(&'a Parked),
    Chain(&'a Then),
    Sent(u64, &'a Call),
    Agent(&'a AgentCall),
}

/// What the caller knows of a call: the key it was submitted with, and
/// the agent's `tool_id` when the embedder made it. A call the host made
/// (for an extension's `call_tool`) has no `tool_id` of the embedder's at
/// any stage, whatever its request spells.
fn caller_view<'a>(at: &At<'a>) -> (Option<CallKey>, Option<&'a str>) {
    let (key, tool_id) = match at {
        At::Waiting(req, done) => (done.key(), tool_id_of(req)),
        At::Parked(p) => (p.done.key(), tool_id_of(&p.req)),
        At::Chain(Then::Answer(done)) => (done.key(), None),
        At::Chain(Then::Tool(m)) => (m.done.key(), if m.origin.is_none() { m.call.tool_id.as_deref() } else { None }),
        At::Sent(_, call) => match &call.kind {
            CallKind::Command { done, .. } => (done.key(), None),
            CallKind::Tool(t) => (t.done.key(), t.agent_tool_id.as_deref()),
            CallKind::Read { done, .. } => (done.key(), None),
            // An interceptor's step is its chain's, never the caller's own.
            CallKind::Intercept { .. } => (None, None),
        },
        At::Agent(c) => (c.done.key(), None),
    };
    (key, tool_id.filter(|_| !matches!(key, Some(CallKey::Host(_)))))
}

fn tool_id_of(req: &Request) -> Option<&str> {
    match req {
        Request::Tool { tool_id, .. } => tool_id.as_deref(),
        Request::ToolCall(c) => c.tool_id.as_deref(),
        _ => None,
    }
}

impl Pick<'_> {
    fn picks(&self, at: &At) -> bool {
        match (self, at) {
            (Pick::Key(k), at) => caller_view(at).0 == Some(*k),
            (Pick::ToolId(t), at) => caller_view(at).1 == Some(*t),
            (Pick::Interactive, At::Sent(_, Call { kind: CallKind::Tool(t), .. })) => t.interactive,
            (Pick::Interactive, At::Waiting(..) | At::Parked(_) | At::Chain(_) | At::Sent(..) | At::Agent(_)) => false,
            (Pick::Sent(id), At::Sent(n, _)) => id == n,
            (Pick::SentTo(ext), At::Sent(_, call)) => call.ext == *ext,
            (Pick::Sent(_) | Pick::SentTo(_), At::Waiting(..) | At::Parked(_) | At::Chain(_) | At::Agent(_)) => false,
            (Pick::ParkedKey(key), At::Parked(p)) => p.key == *key,
            (Pick::ParkedOn(slot), At::Parked(p)) => p.slot == *slot,
            (Pick::ParkedKey(_) | Pick::ParkedOn(_), At::Waiting(..) | At::Chain(_) | At::Sent(..) | At::Agent(_)) => false,
            (Pick::AgentCall(n), At::Agent(c)) => c.n == *n,
            (Pick::AgentCall(_), At::Waiting(..) | At::Parked(_) | At::Chain(_) | At::Sent(..)) => false,
            (Pick::Queued, At::Waiting(..) | At::Parked(_)) => true,
            (Pick::Queued, At::Chain(_) | At::Sent(..) | At::Agent(_)) => false,
        }
    }
}

#[derive(Default)]
pub(super) struct CallTable {
    pub waiting: Vec<(Request, Responder)>,
    pub parked: Vec<Parked>,
    pub chains: Chains,
    pub sent: InFlight,
    pub agent: HashMap<String, AgentCall>,
    /// The front end's input ended: an interactive call is cancelled at
    /// once.
    pub input_ended: bool,
}

impl CallTable {
    /// Takes out every call `pick` names, at every stage, in the order
    /// they came (within a stage). A chain leaves with the step its
    /// interceptor has; a step picked alone leaves its chain behind.
    pub(super) fn take(&mut self, pick: Pick) -> Vec<Taken> {
        let mut out = Vec::new();
        let (gone, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.waiting).into_iter().partition(|(req, done)| pick.picks(&At::Waiting(req, done)));
        self.waiting = kept;
        out.extend(gone.into_iter().map(|(r, d)| Taken::Waiting(r, d)));

        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked).into_iter().partition(|p| pick.picks(&At::Parked(p)));
        self.parked = kept;
        out.extend(gone.into_iter().map(Taken::Parked));

        let mut ids = self.chains.ids_where(|then| pick.picks(&At::Chain(then)));
        crate::order::sort(&mut ids);
        for id in ids {
            let Some((then, _)) = self.chains.remove(id) else { continue };
            let mut asked = Vec::new();
            for cid in self.sent.ids_where(|c| matches!(c.kind, CallKind::Intercept { chain } if chain == id)) {
                if let Some(call) = self.sent.remove(&cid) {
                    asked.push((cid, call));
                }
            }
            out.push(Taken::Chain { then, asked });
        }

        let mut ids = self.sent.ids_where_id(|id, c| pick.picks(&At::Sent(id, c)));
        crate::order::sort(&mut ids);
        for id in ids {
            if let Some(call) = self.sent.remove(&id) {
                out.push(Taken::Sent(id, call));
            }
        }

        let mut ids: Vec<String> = self.agent.iter().filter(|(_, c)| pick.picks(&At::Agent(c))).map(|(id, _)| id.clone()).collect();
        crate::order::sort(&mut ids);
        for id in ids {
            if let Some(c) = self.agent.remove(&id) {
                out.push(Taken::Agent(id, c));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::calls::ToolStage;
    use super::super::chain::Chain;
    use super::super::ext::ExtId;
    use super::super::{ModelCall, Origin};
    use super::{AgentCall, Call, CallKey, CallKind, CallTable, Parked, Pick, Request, Responder, Taken, Then};
    use crate::host::ToolCall;
    use crate::protocol::Payload;
    use std::time::{Duration, Instant};

    const EXT: ExtId = ExtId { slot: 0, gen: 1 };

    fn done(key: Option<u64>) -> Responder {
        let r = Responder::new(|_| ());
        match key {
            Some(k) => r.with_key(k),
            None => r,
        }
    }

    fn host_done(key: u64) -> Responder {
        Responder::new(|_| ()).with_host_key(key)
    }

    fn tool_request(tool_id: &str) -> Request {
        Request::ToolCall(ToolCall { name: "t".into(), tool_id: Some(tool_id.into()), ..Default::default() })
    }

    fn sent_tool(done: Responder, agent_tool_id: Option<&str>, interactive: bool) -> Call {
        let stage = ToolStage {
            name: "t".into(),
            done,
            agent_tool_id: agent_tool_id.map(str::to_string),
            root_tool_id: agent_tool_id.map(str::to_string),
            parents: Vec::new(),
            interactive,
            progress_key: None,
        };
        Call { ext: EXT, kind: CallKind::Tool(stage), deadline: Instant::now() + Duration::from_secs(60) }
    }

    fn model_chain(done: Responder, tool_id: &str, made_by_extension: bool) -> Chain {
        let origin = made_by_extension.then(|| Origin { name: "a".into(), parents: Vec::new(), parent_tool_id: None });
        let call = ToolCall { name: "t".into(), tool_id: Some(tool_id.into()), as_model: true, ..Default::default() };
        let then = Then::Tool(Box::new(ModelCall { call, origin, done }));
        Chain::new("tool_call".into(), Payload::new(), then, 0, |_, _| true)
    }

    /// One call of each kind at each stage; the keys say where: 1x waiting,
    /// 2x parked, 3x in a chain, 4x sent, 5x on the agent. Tool ids `t-N`
    /// follow the same numbers; 99 is the host's own key everywhere.
    fn table() -> CallTable {
        let mut t = CallTable::default();
        t.waiting.push((tool_request("t-10"), done(Some(10))));
        t.waiting.push((Request::Command { name: "c".into(), args: String::new() }, done(Some(11))));
        t.parked.push(Parked { slot: 0, req: tool_request("t-20"), origin: None, done: done(Some(20)), key: 1, starting: None });
        t.parked.push(Parked { slot: 1, req: Request::Command { name: "c".into(), args: String::new() }, origin: None, done: done(Some(21)), key: 2, starting: None });
        t.chains.insert(30, model_chain(done(Some(30)), "t-30", false));
        // The host's call for an extension, with the agent's spelling of an id.
        t.chains.insert(31, model_chain(host_done(99), "t-31", true));
        t.chains.insert(32, Chain::new("turn_start".into(), Payload::new(), Then::Answer(done(Some(32))), 0, |_, _| true));
        let step = Call { ext: EXT, kind: CallKind::Intercept { chain: 30 }, deadline: Instant::now() };
        t.sent.insert(300, step);
        t.sent.insert(40, sent_tool(done(Some(40)), Some("t-40"), false));
        t.sent.insert(41, sent_tool(done(Some(41)), Some("t-41"), true));
        let cmd = CallKind::Command { name: "c".into(), done: done(Some(42)) };
        t.sent.insert(42, Call { ext: EXT, kind: cmd, deadline: Instant::now() });
        t.sent.insert(43, sent_tool(host_done(98), None, false));
        t.agent.insert("c50".into(), AgentCall { n: 50, name: "a".into(), done: host_done(97) });
        t
    }

    fn stage(t: &Taken) -> String {
        match t {
            Taken::Waiting(..) => "waiting".into(),
            Taken::Parked(p) => format!("parked {}", p.key),
            Taken::Chain { asked, .. } => format!("chain asked {:?}", asked.iter().map(|(id, _)| *id).collect::<Vec<_>>()),
            Taken::Sent(id, _) => format!("sent {id}"),
            Taken::Agent(id, _) => format!("agent {id}"),
        }
    }

    fn take(t: &mut CallTable, pick: Pick) -> Vec<String> {
        t.take(pick).iter().map(stage).collect()
    }

    #[test]
    fn a_key_finds_its_call_at_every_stage_and_only_it() {
        let cases: [(u64, &str); 9] = [
            (10, "waiting"),
            (11, "waiting"),
            (20, "parked 1"),
            (21, "parked 2"),
            (30, "chain asked [300]"),
            (32, "chain asked []"),
            (40, "sent 40"),
            (41, "sent 41"),
            (42, "sent 42"),
        ];
        for (key, want) in cases {
            let mut t = table();
            assert_eq!(take(&mut t, Pick::Key(CallKey::Caller(key))), [want], "key {key}");
            assert!(take(&mut t, Pick::Key(CallKey::Caller(key))).is_empty(), "taken once: {key}");
        }
        // The chain's step left with it.
        let mut t = table();
        take(&mut t, Pick::Key(CallKey::Caller(30)));
        assert!(t.sent.get(&300).is_none());
    }

    #[test]
    fn the_hosts_keys_are_another_namespace() {
        let mut t = table();
        assert!(take(&mut t, Pick::Key(CallKey::Caller(99))).is_empty());
        assert_eq!(take(&mut t, Pick::Key(CallKey::Host(99))), ["chain asked []"]);
        assert_eq!(take(&mut t, Pick::Key(CallKey::Host(98))), ["sent 43"]);
        assert_eq!(take(&mut t, Pick::Key(CallKey::Host(97))), ["agent c50"]);
        assert!(take(&mut t, Pick::Key(CallKey::Caller(97))).is_empty());
    }

    #[test]
    fn a_tool_id_finds_the_embedders_calls_never_the_hosts() {
        for (id, want) in [("t-10", "waiting"), ("t-20", "parked 1"), ("t-30", "chain asked [300]"), ("t-40", "sent 40")] {
            let mut t = table();
            assert_eq!(take(&mut t, Pick::ToolId(id)), [want], "{id}");
        }
        // t-31, t-22, t-23 and t-12 are ids of calls the host made for an
        // extension: in a chain; parked for a restart (with its origin, and
        // without it as an idle server's wake keeps it); back waiting for a
        // reload.
        let host_calls = |t: &mut CallTable| {
            let origin = Some(Origin { name: "a".into(), parents: Vec::new(), parent_tool_id: None });
            t.parked.push(Parked { slot: 0, req: tool_request("t-22"), origin, done: host_done(96), key: 3, starting: None });
            t.parked.push(Parked { slot: 0, req: tool_request("t-23"), origin: None, done: host_done(95), key: 4, starting: None });
            t.waiting.push((tool_request("t-12"), host_done(94)));
        };
        for id in ["t-31", "t-22", "t-23", "t-12"] {
            let mut t = table();
            host_calls(&mut t);
            assert!(take(&mut t, Pick::ToolId(id)).is_empty(), "{id}");
        }
        let mut t = table();
        assert!(take(&mut t, Pick::ToolId("nope")).is_empty());
    }

    #[test]
    fn interactive_takes_only_the_calls_waiting_for_their_user() {
        let mut t = table();
        assert_eq!(take(&mut t, Pick::Interactive), ["sent 41"]);
        assert!(take(&mut t, Pick::Interactive).is_empty());
    }
}
