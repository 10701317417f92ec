//! The dispatcher's state: the one value its thread owns, holding the
//! extension table, the names, the calls at their stage, the clock, the
//! load and the embedder's hooks. What it does is in the files above it
//! (one per kind of event, each an `impl Dispatcher`); what it holds is
//! in the files below it.

use super::base::Inbox;
use super::clock::Clock;
use super::envelope::Envelope;
use super::ext::{Ext, ExtId};
use super::ext_calls::ExtCalls;
use super::hooks::Hooks;
use super::load::Load;
use super::table::CallTable;
use crate::child::Child;
use crate::host::registry::Registry;
use crate::host::Config;
use std::collections::HashMap;

/// The dispatcher thread's state.
pub(super) struct Dispatcher {
    pub(super) cfg: Config,
    pub(super) inbox: crate::wake::Tx<Inbox>,
    /// The embedder's event sink and idle hook.
    pub(super) hooks: Hooks,
    /// The bounds of every child's queue, with the budget they share.
    pub(super) queue: crate::child::QueueBounds,
    pub(super) exts: Vec<Ext>,
    pub(super) registry: Registry,
    /// Every call the host has, at its stage.
    pub(super) table: CallTable,
    /// Deadlines, and the one source of ids.
    pub(super) clock: Clock,
    /// The phase, the current load and who waits for it.
    pub(super) load: Load,
    /// The session id and the sequence of events' envelopes.
    pub(super) envelope: Envelope,
    /// Processes dropped from the table before they were reaped, by the id
    /// their exit will come with.
    pub(super) unreaped: HashMap<ExtId, Child>,
    /// Extensions' `call_tool`s under way, and the agent's tools they
    /// may call.
    pub(super) ext_calls: ExtCalls,
}
