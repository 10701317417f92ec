//! What the host tells the embedding program without being asked:
//! [`HostEvent`], and where it goes ([`EventSink`], [`IdleHook`]).

#[cfg(doc)]
use super::Request;
use crate::protocol::Panel;
use serde::Serialize;
use serde_json::Value;

/// Something the host tells the embedding program without being asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostEvent {
    /// The initial load is over; names of the ready extensions.
    Ready {
        /// Names of the extensions ready, in load order.
        extensions: Vec<String>,
    },
    /// An extension's `notify`.
    Notify {
        /// The extension that sent it.
        extension: String,
        /// `info`, `success`, `warn` or `error`.
        level: String,
        /// The note's text.
        message: String,
    },
    /// An extension's `clear_notes`.
    ClearNotes {
        /// The extension whose notes to retract.
        extension: String,
    },
    /// An extension's `submit`: a prompt to submit as the user's.
    Submit {
        /// The extension that sent it.
        extension: String,
        /// The prompt to submit.
        text: String,
    },
    /// An extension asks to run a slash command as if typed (§6.3).
    SubmitSlash {
        /// The extension that sent it.
        extension: String,
        /// The slash command line, trimmed, starting with `/`.
        text: String,
    },
    /// Tools changed state: `reason` is `activated`, `exited`,
    /// `restarted` or `reloaded`; `tools` the names whose state changed.
    ToolsChanged {
        /// The extension whose tools changed.
        extension: String,
        /// `activated`, `exited`, `restarted` or `reloaded`.
        reason: String,
        /// Names of the tools whose state changed.
        tools: Vec<String>,
    },
    /// A hosted MCP server listed its prompts again and the commands it
    /// offers changed (§8.3): `zot mcp` sends
    /// `notifications/prompts/list_changed` (§8.4.2). `zot serve` has no
    /// notification for it and sends nothing.
    CommandsListed {
        /// The server whose commands changed.
        extension: String,
        /// Names of the commands added or gone.
        commands: Vec<String>,
    },
    /// A hosted MCP server listed its resources or templates again and they
    /// changed (§8.6): `zot serve` writes `resources_changed`, `zot mcp`
    /// sends `notifications/resources/list_changed`.
    ResourcesChanged {
        /// The server whose resources changed.
        extension: String,
    },
    /// Progress of a tool call (an MCP server's `notifications/progress`),
    /// for a call made with a [`ToolCall::progress_key`](super::ToolCall::progress_key).
    ToolProgress {
        /// The call's progress key, as the caller gave it.
        id: crate::protocol::WireId,
        /// The caller's `tool_id` for the call, when it gave one.
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_id: Option<String>,
        /// The server that runs the tool. Not part of the wire frame,
        /// whose fields docs/protocol.md §4 lists.
        #[serde(skip)]
        extension: String,
        /// How far along, as the server says.
        progress: Value,
        /// The total, when the server knows it.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<Value>,
        /// What it is doing, when it says.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// An extension's `open_panel`, or a command's `open_panel` action.
    OpenPanel {
        /// The extension that owns the panel.
        extension: String,
        /// The panel to open.
        panel: Panel,
    },
    /// An extension's `panel_render`.
    PanelRender {
        /// The extension that owns the panel.
        extension: String,
        /// `id` of the panel to redraw.
        panel_id: String,
        /// The panel's new title.
        title: String,
        /// The panel's new body, one entry a line.
        lines: Vec<String>,
        /// The panel's new footer.
        footer: String,
    },
    /// An extension's `panel_close`.
    PanelClose {
        /// The extension that owns the panel.
        extension: String,
        /// `id` of the panel to close.
        panel_id: String,
    },
    /// A running extension's process ended on its own (not by a stop).
    #[serde(rename = "extension_exited")]
    Exited {
        /// The extension that exited.
        extension: String,
        /// Its exit code, when it exited.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that ended it, when one did.
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
        /// An [`HostEvent::ExtensionRestarting`] for it follows at once (in
        /// the same step of the host), which says as much: a front end that
        /// prints that one need not print this one. Not part of the wire
        /// frame.
        #[serde(skip)]
        restart_follows: bool,
        /// It stays down because its restart policy does not bring it
        /// back (not a crash loop given up on): a front end may say how to
        /// bring it back. Not part of the wire frame.
        #[serde(skip)]
        not_by_policy: bool,
    },
    /// An extension became ready (initial load, restart, reload), with the
    /// commands and tools it registered.
    ExtensionReady {
        /// The extension that became ready.
        extension: String,
        /// Commands it registered.
        commands: Vec<String>,
        /// Tools it registered.
        tools: Vec<String>,
    },
    /// An extension exited on its own and is started again after
    /// `delay_ms` (docs/protocol.md §7.1); `attempt` counts from 1.
    ExtensionRestarting {
        /// The extension to be restarted.
        extension: String,
        /// Which restart this is, from 1.
        attempt: u32,
        /// Delay before the restart, in milliseconds.
        delay_ms: u64,
        /// Its exit code, when it exited.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that ended it, when one did.
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// Restarted `restarts` times without staying up: down until a reload.
    ExtensionCrashLoop {
        /// The extension given up on.
        extension: String,
        /// Restarts it had without a reset.
        restarts: u32,
    },
    /// An extension called one of the agent's tools: the agent answers
    /// with [`Request::CallToolResult`] under `call_id`.
    CallTool {
        /// The host's id for this call, for the agent's answer.
        call_id: String,
        /// The extension that called.
        extension: String,
        /// The agent tool called.
        name: String,
        /// The tool's arguments, a JSON object.
        args: Value,
        /// The caller's `tool_call` this call serves, when it gave one.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_id: Option<String>,
    },
    /// The extension gave up on that call (or exited).
    CallToolCancel {
        /// `call_id` of the call given up on.
        call_id: String,
    },
    /// An extension failed to load.
    #[serde(rename = "extension_error")]
    LoadFailed {
        /// The extension that failed.
        extension: String,
        /// Why it failed.
        message: String,
        /// Its log file, when it had one (it was started): where to look.
        #[serde(skip)]
        log: Option<std::path::PathBuf>,
    },
    /// The project's own extensions were not loaded: it is not trusted.
    UntrustedProject {
        /// The project directory.
        dir: String,
        /// Names of the project's extensions not loaded.
        extensions: Vec<String>,
        /// Why trust could not be checked at all (`trust.json` cannot be
        /// read), with the fix; `zot trust` would fail until it is fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The project was trusted, and its files changed since (§7.3).
        #[serde(skip)]
        changed: bool,
    },
}

/// Where [`Host::start_with`](crate::host::Host::start_with) hands host events, on the dispatcher thread.
pub type EventSink = Box<dyn Fn(HostEvent) + Send>;

/// Run on the dispatcher thread each time it has handled what its inbox
/// held (and every few dozen messages in a burst), after it wrote what it
/// gathered for extensions: where a front end that gathers its output on
/// that thread writes it (`stdio::Output::write_ready`).
pub type IdleHook = Box<dyn Fn() + Send>;
