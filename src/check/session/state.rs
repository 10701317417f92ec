//! What a session waits for and everything seen of the extension under
//! check: the state the session's rooms share, each adding its own `impl`.

use crate::check::findings::Findings;
use crate::check::outcome::Deadlines;
use crate::check::run::Proc;
use crate::host::Limits;
use crate::manifest::Manifest;
use crate::protocol::ExtFrame;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::process::ExitStatus;
use std::time::Instant;

/// What waiting produced.
pub(super) enum Step {
    Frame(Box<ExtFrame>, Instant),
    Timeout,
    /// Stdout closed, or the process exited and its output is over:
    /// stdout read to its end, or [`EXIT_WAIT`](super::EXIT_WAIT) past the exit.
    Gone,
    /// A malformed reply to a request in flight (already reported).
    Malformed,
}

/// A reply the session is waiting for.
pub(super) enum Reply {
    Frame(Box<ExtFrame>, Instant),
    /// A reply with this id that could not be decoded (already reported).
    Malformed,
}

/// The extension under check and everything seen of it so far.
pub(crate) struct Session<'a> {
    pub(super) m: &'a Manifest,
    pub(super) d: &'a Deadlines,
    pub(super) f: &'a mut Findings,
    pub(super) limits: Limits,
    pub(super) start: Instant,
    /// The running extension; dropped (ended and reaped) at the end of [`Session::run`](Session::run).
    pub(super) proc: Option<Proc>,
    pub(super) exited: Option<(Instant, ExitStatus)>,
    pub(super) eof: bool,
    /// Once the exit is seen: until when stdout may still bring lines
    /// written before it (docs/protocol.md §3 rule 8).
    pub(super) exit_grace: Option<Instant>,
    /// The process exited and its output is over: nothing more is read.
    pub(super) output_over: bool,
    /// An `exited` finding was made.
    pub(super) gone_reported: bool,
    pub(super) hello_at: Option<Instant>,
    pub(super) ack_at: Option<Instant>,
    pub(super) ready_at: Option<Instant>,
    /// The host would count it as ready now (frame or auto-ready).
    pub(super) host_ready: bool,
    pub(super) last_frame: Instant,
    pub(super) commands: Vec<(String, String)>,
    pub(super) tools: Vec<(String, String, Value)>,
    pub(super) events: Vec<String>,
    pub(super) intercepts: Vec<String>,
    /// Frame types sent after hello but before hello_ack.
    pub(super) early: Vec<&'static str>,
    /// `hello.capabilities`.
    pub(super) caps: Vec<String>,
    /// Tools registered with `"interactive": true`: they wait for a user.
    pub(super) interactive: HashSet<String>,
    /// Tools the host refuses (an unknown `exposure`): not called.
    pub(super) refused: HashSet<String>,
    pub(super) shutdown_sent: bool,
    pub(super) shutdown_acked: bool,
    /// Ids asked and not yet answered, with the reply type expected.
    pub(super) asked: HashMap<String, &'static str>,
    /// Ids given up on (timed out).
    pub(super) late: HashSet<String>,
    pub(super) replies: HashMap<String, Reply>,
    pub(super) timeouts: usize,
    pub(super) write_failed: bool,
}
