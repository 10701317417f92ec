//! One extension as the dispatcher keeps it: its identity ([`ExtId`]),
//! where it is in its life ([`Life`], the lifecycle of docs/protocol.md §3),
//! the facts about its process, and what it registered; for an MCP server
//! also its eras ([`Eras`]) and where it is in its sleep ([`IdleState`]).

use super::limits::Bucket;
use super::supervisor::Supervisor;
use crate::child::{Bytes, Child, Log, SendError};
use crate::discovery::Found;
use crate::protocol::ToolMore;
use crate::host::{HostError, State};
use serde_json::Value;
use std::process::ExitStatus;
use crate::mcpserver::config::Protocol;
use crate::mcpserver::edge::Era;
use std::time::Instant;

/// An extension of one load: its slot in the table and the load it
/// belongs to, so that a message from a process of an earlier load never
/// reaches the extension now in that slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(in crate::host) struct ExtId {
    pub slot: usize,
    pub gen: u64,
}

/// Where an extension is in its life.
///
/// ```text
/// Spawned ──hello──▶ Registering ──ready / quiet──▶ Ready
///    │                   │                            │
///    └──── no hello, bad first frame, early exit ─────┼──▶ Failed
///                                                     └── exit ──▶ Exited
/// any running state ──stop (shutdown, reload)──▶ Stopping ──exit──▶ Stopped
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Life {
    /// Started; waiting for `hello`.
    Spawned,
    /// `hello` acknowledged; registering, waiting for `ready`.
    Registering,
    Ready,
    /// Being stopped by the host; only answers to calls in flight count.
    /// `failed`: it had failed to load before the stop began.
    Stopping { failed: bool },
    /// Ended on its own after loading (its process or its stdout).
    Exited,
    /// Failed to load.
    Failed,
    /// Ended after a stop.
    Stopped,
    /// Ended on its own; waiting to be started again (docs/protocol.md §7.1).
    Restarting,
    /// Restarted too often; down until a reload.
    CrashLoop,
    /// An MCP server stopped after its `idleTimeout`: its names stay
    /// offered, and the next call starts it again (docs/protocol.md §8.1).
    Idle,
}

impl Life {
    /// Frames are taken, names are in force and calls can be sent.
    pub fn running(self) -> bool {
        matches!(self, Life::Spawned | Life::Registering | Life::Ready)
    }

    pub fn starting(self) -> bool {
        matches!(self, Life::Spawned | Life::Registering)
    }

    /// What listings show.
    pub fn state(self) -> State {
        match self {
            Life::Spawned | Life::Registering => State::Starting,
            Life::Ready => State::Ready,
            Life::Failed | Life::Stopping { failed: true } => State::Failed,
            Life::Stopping { failed: false } | Life::Exited | Life::Stopped => State::Exited,
            Life::Restarting => State::Restarting,
            Life::CrashLoop => State::CrashLoop,
            Life::Idle => State::Idle,
        }
    }
}

/// What is known of the process.
pub(super) struct Proc {
    pub child: Child,
    /// An MCP server's edge: what listings show of it.
    pub edge: Option<std::sync::Arc<crate::mcpserver::edge::Edge>>,
    /// The exit was seen (the process is reaped then); its status, when
    /// it could be read.
    pub exit: Option<Option<ExitStatus>>,
    /// Its stdout was read to the end.
    pub eof: bool,
    /// Its end was handled: the calls in flight were answered or failed.
    pub ended: bool,
}

/// A tool as registered (docs/protocol.md §6.2).
pub(super) struct ToolEntry {
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub more: ToolMore,
    /// Offered: false for a deferred tool until a result activates it.
    pub active: bool,
}

pub(super) struct Ext {
    pub id: ExtId,
    pub found: Found,
    pub life: Life,
    pub proc: Option<Proc>,
    pub log: Option<Log>,
    /// What its `hello` declared (docs/protocol.md §6.1).
    pub capabilities: Vec<String>,
    /// The version its `hello` gave, listed when the manifest has none.
    pub hello_version: String,
    pub commands: Vec<(String, String)>,
    pub tools: Vec<ToolEntry>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
    pub error: Option<String>,
    pub last_frame: Instant,
    /// Token bucket for spontaneous frames (notes, submits, panels).
    pub notes: Bucket,
    /// Registrations refused for being over a limit.
    pub refused: u64,
    /// Ids of its panels that are open: keys and closes go only to those.
    pub panels: Vec<String>,
    /// Its restart schedule (docs/protocol.md §7.1).
    pub supervisor: Supervisor,
    /// While a restart is under way: the commands and tools it had, whose
    /// requests wait for it.
    pub restart_names: Option<(Vec<String>, Vec<String>)>,
    /// A `restart` request under way (docs/protocol.md §4): stopped by the
    /// host, to be started again once it ended; answered once it is ready.
    pub restart_waiters: Vec<crate::host::Responder>,
    /// An MCP server's idle stop and wake (docs/protocol.md §8.1).
    pub idle: IdleState,
    /// An MCP server's unknown entry fields are logged, once a load.
    pub unknown_logged: bool,
    /// An MCP server's era: the one found, and its handshake tries.
    pub eras: Eras,
    /// `hello_ack`'s `data_dir` for its current start.
    pub data_dir: std::path::PathBuf,
    /// The confinement rules in force for its current start; `None`:
    /// not confined (docs/protocol.md §9.1: `call` and `prompt` are the host's).
    pub rules: Option<crate::confine::Declared>,
    /// An MCP server's resources and templates, as it last listed them
    /// (docs/protocol.md §8.6).
    pub resources: crate::host::resources::Offered,
    /// What listings show of its confinement while its current start runs:
    /// the grants as that start's enforcement resolved them, not resolved
    /// again (docs/protocol.md §9.1).
    pub confinement: Option<crate::confine::Report>,
}

impl Ext {
    pub fn new(id: ExtId, found: Found, notes: Bucket) -> Ext {
        Ext {
            id,
            found,
            life: Life::Spawned,
            proc: None,
            log: None,
            capabilities: Vec::new(),
            hello_version: String::new(),
            commands: Vec::new(),
            tools: Vec::new(),
            events: Vec::new(),
            intercepts: Vec::new(),
            error: None,
            last_frame: Instant::now(),
            notes,
            refused: 0,
            panels: Vec::new(),
            supervisor: Supervisor::default(),
            restart_names: None,
            restart_waiters: Vec::new(),
            idle: Default::default(),
            unknown_logged: false,
            eras: Default::default(),
            data_dir: std::path::PathBuf::new(),
            rules: None,
            resources: Default::default(),
            confinement: None,
        }
    }

    /// Still starting: spawned or registering, or between two handshake
    /// tries of an MCP server (docs/protocol.md §8.4.3 rule 12), its first
    /// process stopping before the next starts.
    pub fn starting(&self) -> bool {
        self.life.starting() || self.eras.retry_after_stop
    }

    /// Whether it may reach tool `name` (docs/protocol.md §9.1 `call`):
    /// always when not confined.
    pub fn may_call(&self, name: &str) -> bool {
        self.rules.as_ref().is_none_or(|d| d.may_call(name))
    }

    /// Whether it may steer the model (§9.1 `prompt`): always when not
    /// confined.
    pub fn may_prompt(&self) -> bool {
        self.rules.as_ref().is_none_or(|d| d.prompt)
    }

    pub fn can(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// Its command `name` as it registered it first (names match without
    /// case, docs/protocol.md §6.3).
    pub fn command_spelled(&self, name: &str) -> Option<&str> {
        let lower = name.to_lowercase();
        self.commands.iter().find(|c| c.0.to_lowercase() == lower).map(|c| c.0.as_str())
    }

    pub fn command_names(&self) -> Vec<String> {
        self.commands.iter().map(|c| c.0.clone()).collect()
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.iter().find(|t| t.name == name)
    }

    pub fn name(&self) -> &str {
        &self.found.manifest.name
    }

    pub fn log(&self, msg: &str) {
        if let Some(l) = &self.log {
            l.line(msg);
        }
    }

    pub fn child(&self) -> Option<&Child> {
        self.proc.as_ref().map(|p| &p.child)
    }

    /// The pid while the process is not reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child().filter(|c| !c.is_reaped() && c.pid != 0).map(|c| c.pid)
    }

    /// The process ended and its end was handled (or it never ran).
    pub fn ended(&self) -> bool {
        self.proc.as_ref().is_none_or(|p| p.ended)
    }

    /// Signals the process group while the process is unreaped.
    pub fn signal(&self, sig: i32) {
        if let Some(c) = self.child() {
            c.signal_group(sig);
        }
    }

    /// Queues a frame for a running extension whose exit was not seen.
    pub fn send(&self, bytes: Bytes) -> Result<(), HostError> {
        self.queue(bytes, false)
    }

    /// Queues a line an MCP server's edge made, as it is (not a frame to
    /// translate).
    pub fn send_raw(&self, bytes: Bytes) -> Result<(), HostError> {
        self.queue(bytes, true)
    }

    fn queue(&self, bytes: Bytes, raw: bool) -> Result<(), HostError> {
        let gone = |detail: &str| HostError::Exited { extension: self.name().to_string(), detail: detail.into() };
        match self.life {
            Life::Stopping { .. } => return Err(gone("it is being stopped")),
            l if !l.running() => return Err(gone("not running")),
            _ => {}
        }
        let Some(p) = self.proc.as_ref().filter(|p| p.exit.is_none()) else {
            return Err(gone("its process exited"));
        };
        let sent = if raw { p.child.send_raw(bytes) } else { p.child.send(bytes) };
        match sent {
            Ok(()) => Ok(()),
            Err(SendError::Full) => Err(HostError::Busy { extension: self.name().to_string() }),
            Err(SendError::Closed) => Err(gone("its stdin is closed")),
        }
    }
}


/// A server's eras (docs/protocol.md §8.4.3 rules 11 and 12): the one found,
/// kept for the entry until a reload, and the handshake tries of a start.
#[derive(Default)]
pub(super) struct Eras {
    /// The era a handshake succeeded in.
    pub found: Option<Era>,
    /// The era of the process running now.
    pub current: Option<Era>,
    /// Under `auto`: the `initialize` try failed with this; the modern try
    /// starts once its process is gone.
    pub first: Option<String>,
    pub retry: bool,
    /// A try is being stopped; its end starts the next.
    pub retry_after_stop: bool,
}

impl Eras {
    /// The era of the next process.
    pub fn next(&mut self, protocol: Protocol) -> Era {
        let era = match protocol {
            Protocol::Legacy => Era::Legacy,
            Protocol::Modern => Era::Modern,
            Protocol::Auto if std::mem::take(&mut self.retry) => Era::Modern,
            Protocol::Auto => {
                self.first = None;
                self.found.unwrap_or(Era::Legacy)
            }
        };
        self.current = Some(era);
        era
    }
}

/// Where an MCP server with an `idleTimeout` is in its sleep.
#[derive(Default)]
pub(super) struct IdleState {
    /// Stopped for being idle; its end makes it [`Life::Idle`].
    pub stopping: bool,
    /// Started again by a call; the calls wait until it is ready.
    pub waking: bool,
    /// When it was last called.
    pub last_used: Option<Instant>,
    /// While it wakes: the commands and tools it offered asleep. They stay
    /// listed until it is ready, and what it lists then is compared with
    /// them.
    pub slept_with: Option<Offered>,
}

/// Commands (name, description) and tools, as an extension registered them.
pub(super) type Offered = (Vec<(String, String)>, Vec<ToolEntry>);

impl IdleState {
    /// Calls wait (and wake it): idle, going idle, or waking.
    pub fn asleep(&self, life: Life) -> bool {
        life == Life::Idle || self.stopping || self.waking
    }
}
