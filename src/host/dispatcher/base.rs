//! What every file of the dispatcher shares, at the bottom of the folder:
//! the messages of its inbox ([`Inbox`]), its deadlines ([`Timer`]), a
//! model's call and the extension a call came from ([`ModelCall`],
//! [`Origin`]), the protocol's fixed lists and bounds, and the two helpers
//! every handler uses, [`respond`] and [`after`].

use super::ext::ExtId;
use super::stop_stage::StopStage;
use crate::child::ChildMsg;
use crate::host::{HostError, Request, Responder, Response, ToolCall};
use crate::mcpserver::edge::McpMsg;
use std::time::{Duration, Instant};

/// Events an extension may intercept.
pub const INTERCEPTABLE: [&str; 4] = ["tool_call", "turn_start", "assistant_message", "before_agent_start"];

/// The longest `system_prompt` an interceptor may set, encoded.
pub const MAX_SYSTEM_PROMPT: usize = 1024 * 1024;

/// The levels of a `notify`; another is shown as `info` (and logged).
pub const NOTIFY_LEVELS: [&str; 4] = ["info", "success", "warn", "error"];

/// The actions of a `command_response`; another answers with an error.
pub const COMMAND_ACTIONS: [&str; 6] = ["prompt", "insert", "display", "open_panel", "noop", "tool_prompt"];

/// What the host tells extensions it supports, in `hello_ack`.
pub const HOST_CAPABILITIES: [&str; 1] = ["call_tool"];

/// Keys a panel may receive.
pub const PANEL_KEYS: [&str; 14] = [
    "up", "down", "left", "right", "enter", "esc", "tab", "pageup", "pagedown", "home", "end",
    "backspace", "delete", "rune",
];

/// How long after stdout closes to wait for the exit status before calls
/// in flight are failed without it.
pub(super) const EOF_GRACE: Duration = Duration::from_millis(50);

/// The largest frame written to an extension (docs/protocol.md §3 rule 9):
/// current upstream SDKs read at most 4 MiB a line.
pub const MAX_FRAME_OUT: usize = 4 * 1024 * 1024;

/// What the dispatcher thread is told: a request of the embedder, a message
/// of a child or of an MCP server's edge, the end of an extension's `call_tool`.
pub(in crate::host) enum Inbox {
    Request(Request, Responder),
    Child(ExtId, ChildMsg),
    /// From the edge of an MCP server (docs/protocol.md §8): what has no zot frame.
    Mcp(ExtId, McpMsg),
    /// The outcome of an extension's `call_tool`, to answer it with.
    CallToolDone { caller: ExtId, id: String, name: String, result: Result<Response, HostError> },
}

/// A deadline the dispatcher keeps on its clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    Hello(ExtId),
    ReadyIdle(ExtId),
    LoadGrace(u64),
    /// Stdout closed; the exit status has had its moment to arrive.
    Eof(ExtId),
    /// The exit was seen; stdout (held by a grandchild) has had its
    /// moment to reach its end.
    ExitGrace(ExtId),
    EofKill(ExtId),
    Stop(ExtId, StopStage),
    /// Start an extension again (docs/protocol.md §7.1).
    Restart(ExtId),
    /// A request waiting for a restart reaches its own timeout.
    Parked(u64),
    /// A call of an agent tool reaches the tool timeout.
    AgentCall(u64),
    /// An MCP server's `idleTimeout` may be over.
    Idle(ExtId),
}

/// A model's call waiting for its intercept chain.
pub(super) struct ModelCall {
    pub(super) call: ToolCall,
    pub(super) origin: Option<Origin>,
    pub(super) done: Responder,
}

/// The extension that made a call with `call_tool`, and the names of the
/// tool calls above it (the root first).
pub(super) struct Origin {
    pub name: String,
    pub parents: Vec<String>,
    /// For an agent tool: the `tool_id` of the call it was made inside.
    pub parent_tool_id: Option<String>,
}

pub(super) fn respond(done: Responder, r: Result<Response, HostError>) {
    done.answer(r);
}

/// `d` from now; a duration too long for the clock means "as good as never".
pub(super) fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86400)))
        .unwrap_or(now)
}
