//! The calls in flight: who waits for which correlation id, of what kind,
//! until when. Deadlines are kept in order beside the calls and leave with
//! them, so the dispatcher's wait is bounded by the nearest one and a busy
//! host holds nothing for calls already answered. Here too: a call of an
//! agent tool waiting for the agent ([`AgentCall`]), and why a call was
//! cancelled ([`Why`]).

use super::super::Responder;
use super::ext::ExtId;
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

pub(super) enum CallKind {
    Command { name: String, done: Responder },
    Tool(ToolStage),
    Intercept { chain: u64 },
    /// A `resources/read` sent to an MCP server (docs/protocol.md §8.6).
    Read { uri: String, done: Responder },
}

/// A tool call sent to its extension.
pub(super) struct ToolStage {
    pub name: String,
    pub done: Responder,
    /// The agent's `tool_id`, when the agent (not an extension) made it.
    pub agent_tool_id: Option<String>,
    /// The agent's `tool_id` at the root of its chain of calls: its own, or
    /// for a call an extension made, that of the call it was made inside.
    pub root_tool_id: Option<String>,
    /// The names of the tool calls above it, when an extension made it
    /// with `call_tool` (docs/protocol.md §6.1).
    pub parents: Vec<String>,
    /// An interactive tool with no reply deadline: only a cancel ends it.
    pub interactive: bool,
    /// The caller's key for the call's progress (docs/protocol.md §8.3), kept
    /// with the call and gone with it.
    pub progress_key: Option<crate::protocol::WireId>,
}

pub(super) struct Call {
    pub ext: ExtId,
    pub kind: CallKind,
    pub deadline: Instant,
}

/// The calls in flight, by correlation id, with their deadlines in order.
/// A call's deadline leaves with the call, so a busy host holds nothing
/// for calls already answered.
#[derive(Default)]
pub(super) struct InFlight {
    calls: HashMap<u64, Call>,
    deadlines: BTreeSet<(Instant, u64)>,
    per_slot: HashMap<usize, usize>,
}

impl InFlight {
    pub fn insert(&mut self, id: u64, call: Call) {
        self.deadlines.insert((call.deadline, id));
        *self.per_slot.entry(call.ext.slot).or_default() += 1;
        self.calls.insert(id, call);
    }

    pub fn remove(&mut self, id: &u64) -> Option<Call> {
        let call = self.calls.remove(id)?;
        self.deadlines.remove(&(call.deadline, *id));
        if let Some(n) = self.per_slot.get_mut(&call.ext.slot) {
            *n -= 1;
            if *n == 0 {
                self.per_slot.remove(&call.ext.slot);
            }
        }
        Some(call)
    }

    pub fn get(&self, id: &u64) -> Option<&Call> {
        self.calls.get(id)
    }

    pub fn count(&self, slot: usize) -> usize {
        self.per_slot.get(&slot).copied().unwrap_or(0)
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(t, _)| *t)
    }

    /// The id of a call whose deadline is at or before `now`.
    pub fn expired(&self, now: Instant) -> Option<u64> {
        self.deadlines.first().filter(|(t, _)| *t <= now).map(|(_, id)| *id)
    }

    /// The ids of the calls that `pred` picks.
    pub fn ids_where(&self, pred: impl Fn(&Call) -> bool) -> Vec<u64> {
        self.ids_where_id(|_, c| pred(c))
    }

    /// The ids of the calls that `pred` picks, by id and call.
    pub fn ids_where_id(&self, pred: impl Fn(u64, &Call) -> bool) -> Vec<u64> {
        self.calls.iter().filter(|(id, c)| pred(**id, c)).map(|(id, _)| *id).collect()
    }
}


/// A call of an agent tool waiting for the agent.
pub(super) struct AgentCall {
    pub(super) n: u64,
    pub(super) name: String,
    pub(super) done: Responder,
}

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
    pub(super) fn text(self) -> &'static str {
        match self {
            Why::Caller => "cancelled by the caller",
            Why::CallerGone => "cancelled by its caller",
            Why::EndOfInput => "cancelled at the end of the front end's input",
        }
    }
}
