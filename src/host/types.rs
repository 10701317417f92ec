//! The types that cross the host's boundary: configuration, requests and
//! their outcomes, host events, listings, and typed errors.

use crate::discovery::Sources;
use crate::home::Home;
use crate::protocol::{Panel, Payload};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Every deadline the host enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Spawn to `hello`, per extension.
    pub hello: Duration,
    /// Quiet time after the handshake that counts as `ready` for
    /// extensions that never send it.
    pub ready_idle: Duration,
    /// Start-up wait for `ready`, all extensions together.
    pub ready_grace: Duration,
    /// Per command: `command_invoked` to its `command_response`.
    pub command: Duration,
    /// Per tool call, `tool_call` to its `tool_result`.
    pub tool: Duration,
    /// Per interceptor in a chain.
    pub intercept: Duration,
    /// After `shutdown` and closing stdin, before SIGTERM.
    pub shutdown_grace: Duration,
    /// After SIGTERM, before SIGKILL.
    pub term_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            hello: Duration::from_secs(5),
            ready_idle: Duration::from_millis(250),
            ready_grace: Duration::from_secs(3),
            command: Duration::from_secs(30),
            tool: Duration::from_secs(60),
            intercept: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(1),
        }
    }
}

/// Default number of frames queued for one child before calls to it fail
/// with `busy`. With [`DEFAULT_QUEUE_BYTES`] it lets a burst of thousands
/// of small calls wait for a single-threaded extension that is merely
/// slower than the agent for a moment (5,000 calls of 100 bytes are half a
/// MiB); the count bounds the bookkeeping of tiny frames.
pub const DEFAULT_QUEUE_LIMIT: usize = 16 * 1024;

/// Default bytes queued for one child's writer thread (beyond the 64 KiB
/// in the pipe and up to 64 KiB being gathered for it) before calls to it
/// fail with `busy`: 1.25 MiB, some 1,200 calls of 1 KiB behind a child
/// that stopped reading, or 12,000 of 100 bytes behind one that is only
/// slow. A frame that finds its child's queue empty is always taken,
/// whatever its size (up to the 4 MiB frame limit).
pub const DEFAULT_QUEUE_BYTES: usize = 1280 * 1024;

/// Default bytes queued for all children of one host together: 16 MiB
/// (upstream's bound for a single child), so that many stalled children
/// cannot add up to more than that.
pub const DEFAULT_QUEUE_BUDGET: usize = 16 * 1024 * 1024;

/// Bounds on what one extension can make the host hold. Past each, the
/// extension is refused (and told in its log) and the others carry on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Calls in flight to one extension; more fail with `busy`. As many as
    /// the frames its queue holds ([`DEFAULT_QUEUE_LIMIT`]), so a burst
    /// the queue absorbs is not refused here.
    pub in_flight: usize,
    /// Commands one extension may register.
    pub commands: usize,
    /// Tools one extension may register.
    pub tools: usize,
    /// Event and intercept subscriptions of one extension, together.
    pub subscriptions: usize,
    /// Longest name of a command, tool or event, in bytes; longer is refused.
    pub name_bytes: usize,
    /// Longest description, panel title, footer or panel line, in bytes;
    /// longer is cut.
    pub text_bytes: usize,
    /// Largest tool schema, serialized, in bytes; larger is refused.
    pub schema_bytes: usize,
    /// Lines kept of a panel; more are cut.
    pub panel_lines: usize,
    /// Spontaneous frames (notify, clear_notes, submit, panels) forwarded
    /// in a burst; past it, the sustained rate below applies and the excess
    /// is dropped and counted.
    pub notes_burst: u32,
    /// Sustained spontaneous frames forwarded per second.
    pub notes_per_sec: u32,
    /// A log file past this size is copied to `ext-<name>.log.1` and
    /// truncated.
    pub log_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            in_flight: 16 * 1024,
            commands: 256,
            tools: 256,
            subscriptions: 64,
            name_bytes: 256,
            text_bytes: 4096,
            schema_bytes: 64 * 1024,
            panel_lines: 1000,
            notes_burst: 200,
            notes_per_sec: 100,
            log_bytes: 10 * 1024 * 1024,
        }
    }
}

/// How to run a host.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where installed extensions, logs and trust live.
    pub home: Home,
    /// Where to discover extensions: `--ext` paths, project-local, global.
    pub sources: Sources,
    /// The project directory: project-local discovery and `cwd` in `hello_ack`.
    pub cwd: PathBuf,
    /// The model provider, passed on in `hello_ack`.
    pub provider: String,
    /// The model, passed on in `hello_ack`.
    pub model: String,
    /// The host's version, passed on in `hello_ack`.
    pub zot_version: String,
    /// Every deadline the host enforces.
    pub timeouts: Timeouts,
    /// A failed or late interceptor blocks instead of allowing.
    pub fail_closed: bool,
    /// Frames queued per child before calls to it fail with `busy`
    /// ([`DEFAULT_QUEUE_LIMIT`]).
    pub queue_limit: usize,
    /// Bytes queued per child before calls to it fail with `busy`
    /// ([`DEFAULT_QUEUE_BYTES`]).
    pub queue_bytes: usize,
    /// Bytes queued for all children together before calls to a child
    /// with something queued already fail with `busy`
    /// ([`DEFAULT_QUEUE_BUDGET`]).
    pub queue_budget: usize,
    /// Bounds on what one extension can make the host hold.
    pub limits: Limits,
    /// Command names owned by the embedding program (its built-ins); an
    /// extension registering one of them is shadowed.
    pub reserved_commands: Vec<String>,
    /// Requests about extensions (commands, tools, events, intercepts,
    /// panels) that arrive during the initial load wait for it to end, as
    /// `zot serve` promises (PROTOCOL.md §4, start-up); otherwise they run
    /// at once against what has registered so far. During a reload they
    /// always wait.
    pub hold_until_loaded: bool,
    /// `interactive` tools run with no reply deadline; without it they are
    /// refused at once (PROTOCOL.md §6.2).
    pub interactive_tools: bool,
    /// `--trace FILE`: every frame in and out, recorded where each child's
    /// lines are read and its frames sent ([`Tracer`](super::Tracer)); flushed by
    /// [`Host::shutdown`](super::Host::shutdown).
    pub trace: Option<std::sync::Arc<crate::trace::Tracer>>,
    /// `--trust-project`: load the project's extensions for this run even
    /// if the project is not trusted (`zot trust`).
    pub trust_project: bool,
    /// `--restart`: overrides every manifest's `restart` for this run.
    pub restart: Option<crate::manifest::RestartPolicy>,
}

impl Config {
    /// A config with defaults for everything but where to look.
    pub fn new(home: Home, cwd: PathBuf) -> Config {
        Config {
            home,
            sources: Sources::default(),
            cwd,
            provider: String::new(),
            model: String::new(),
            zot_version: env!("CARGO_PKG_VERSION").to_string(),
            timeouts: Timeouts::default(),
            fail_closed: false,
            queue_limit: DEFAULT_QUEUE_LIMIT,
            queue_bytes: DEFAULT_QUEUE_BYTES,
            queue_budget: DEFAULT_QUEUE_BUDGET,
            limits: Limits::default(),
            reserved_commands: Vec::new(),
            hold_until_loaded: false,
            interactive_tools: false,
            trace: None,
            trust_project: false,
            restart: None,
        }
    }
}

/// A request to the dispatcher.
#[derive(Debug, Clone)]
pub enum Request {
    /// Waits for the initial load to end; answers `Load`.
    WaitReady,
    /// Extensions, commands and tools; answers `List`.
    List,
    /// Runs `/name args`; answers `Command`.
    Command {
        /// The command's name, without the `/`.
        name: String,
        /// Text after the command name.
        args: String,
    },
    /// `tool_id` is the caller's own key for the call, for [`Request::CancelTool`].
    Tool {
        /// The tool's name.
        name: String,
        /// The tool's arguments, a JSON object.
        args: Option<Value>,
        /// The caller's own key for the call.
        tool_id: Option<String>,
    },
    /// Gives up on the tool calls in flight that were started with this
    /// `tool_id`: each leaves the calls in flight, its extension gets
    /// `tool_cancel`, and its caller is answered [`HostError::Cancelled`].
    /// Answers `Done`, or `BadRequest` when no such call is in flight.
    CancelTool {
        /// The caller's key given to the calls to give up on.
        tool_id: String,
    },
    /// A tool call with every option: see [`ToolCall`].
    ToolCall(ToolCall),
    /// The agent's own tools that extensions may reach with `call_tool`
    /// (PROTOCOL.md §6.1); replaces the previous set. Answers `Done`.
    AgentTools(Vec<AgentTool>),
    /// The agent's answer to a [`HostEvent::CallTool`]. Answers `Done`, or
    /// [`HostError::UnknownCall`] when that call no longer waits.
    CallToolResult {
        /// The `call_id` of the [`HostEvent::CallTool`] this answers.
        call_id: String,
        /// The result's content blocks.
        content: Vec<Value>,
        /// The agent's tool failed; `content` says why.
        is_error: bool,
        /// The tool's structured result, passed on.
        structured_content: Option<Value>,
    },
    /// Runs the intercept chain of `event`; answers `Intercept`.
    Intercept {
        /// The event's name.
        event: String,
        /// The event's payload.
        payload: Payload,
    },
    /// Sends `event` to its subscribers; answers `Delivered`.
    Event {
        /// The event's name.
        event: String,
        /// The event's payload.
        payload: Payload,
    },
    /// Sends a `panel_key` to the extension that owns the panel; answers `Done`.
    PanelKey {
        /// The extension that owns the panel.
        extension: String,
        /// `id` of the focused panel.
        panel_id: String,
        /// `up`, `down`, `enter`, `esc`, ... or `rune`.
        key: String,
        /// The character(s) typed, for `rune`.
        text: Option<String>,
    },
    /// Tells an extension the user closed its panel; answers `Done`.
    PanelClose {
        /// The extension that owns the panel.
        extension: String,
        /// `id` of the closed panel.
        panel_id: String,
    },
    /// Stops every extension, re-reads the manifests and loads again; answers `Reload`.
    Reload,
    /// Stops every extension; answers `Done`.
    Shutdown,
}

/// A tool of the agent's own, declared with [`Request::AgentTools`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentTool {
    /// The tool's name as extensions call it.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the tool's `args`.
    pub schema: Value,
}

/// A tool call as [`Request::ToolCall`] makes it.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// `{}` when `None`.
    pub args: Option<Value>,
    /// The caller's own key, for [`Request::CancelTool`].
    pub tool_id: Option<String>,
    /// Passed to the extension as given (PROTOCOL.md §6.2).
    pub operation_key: Option<Value>,
    /// Passed to the extension as given (PROTOCOL.md §6.2).
    pub reconcile: Option<Value>,
    /// Run it as the model's call would be: the `tool_call` intercept chain
    /// first (a block answers with [`ToolReply::blocked`]), then the
    /// `tool_call` event, then the tool with the arguments after the chain.
    pub as_model: bool,
}

impl Request {
    /// Whether the request is about the extensions' names and so waits for
    /// a load (or reload) under way to end, instead of failing as unknown.
    pub fn needs_extensions(&self) -> bool {
        !matches!(
            self,
            Request::WaitReady
                | Request::List
                | Request::CancelTool { .. }
                | Request::AgentTools(_)
                | Request::CallToolResult { .. }
                | Request::Reload
                | Request::Shutdown
        )
    }
}

/// The outcome of a request.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// Answer to [`Request::WaitReady`].
    Load(LoadReport),
    /// Answer to [`Request::List`].
    List(Listing),
    /// Answer to [`Request::Command`].
    Command(CommandReply),
    /// Answer to a tool call.
    Tool(ToolReply),
    /// Answer to [`Request::Intercept`].
    Intercept(InterceptOutcome),
    /// Answer to [`Request::Event`]: the number of extensions it was sent to.
    Delivered(usize),
    /// Answer to [`Request::Reload`].
    Reload(ReloadReport),
    /// The request was carried out; nothing to report.
    Done,
}

/// The answer to one request: called exactly once, on the dispatcher
/// thread, with its outcome. Answering consumes it; a responder dropped
/// without an answer (a request lost to a bug, or a panic on the way)
/// answers [`HostError::Internal`] by itself, so every request gets one
/// answer. It runs on the dispatcher thread, so it must be quick and must
/// not wait for the host: [`Host::call`](super::Host::call) and the other
/// blocking calls refuse to run there.
pub struct Responder(Option<AnswerFn>);

type AnswerFn = Box<dyn FnOnce(Result<Response, HostError>) + Send>;

impl Responder {
    /// A responder that calls `f` with the outcome.
    pub fn new(f: impl FnOnce(Result<Response, HostError>) + Send + 'static) -> Responder {
        Responder(Some(Box::new(f)))
    }

    /// Answers the request; a panic in the embedder's code stays there.
    pub fn answer(mut self, r: Result<Response, HostError>) {
        if let Some(f) = self.0.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(r)));
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            let e = HostError::Internal("the request was dropped without an answer".into());
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(Err(e))));
        }
    }
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Responder")
    }
}

/// An extension's answer to a command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandReply {
    /// The extension that answered.
    pub extension: String,
    /// `prompt`, `insert`, `display`, `open_panel` or `noop`.
    pub action: String,
    /// For `prompt` and `tool_prompt`: the text to submit as a user prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// For `insert`: the text to put in the user's input line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    /// For `display`: the text to show the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// For `open_panel`: the panel to open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<Panel>,
    /// `tool_prompt`: the tool the front end runs before the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// `tool_prompt`: the arguments of `tool_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    /// A non-empty error, to show as an error whatever the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An extension's answer to a tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolReply {
    /// The extension that answered.
    pub extension: String,
    /// The result's content blocks, as the extension sent them.
    pub content: Vec<Value>,
    /// The tool failed; `content` says why.
    pub is_error: bool,
    /// The tool's structured result, passed on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The deferred tools this answer activated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub activate_tools: Vec<String>,
    /// A call run as the model's ([`ToolCall::as_model`]) that the intercept
    /// chain blocked: the reason. The tool did not run.
    #[serde(skip)]
    pub blocked: Option<String>,
}

/// The verdict of an intercept chain.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InterceptOutcome {
    /// Some interceptor blocked the event.
    pub block: bool,
    /// Why it was blocked, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments after every rewrite, when any interceptor rewrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    /// The text after every replacement, when any interceptor replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
    /// `before_agent_start`: the system prompt after the whole chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// The initial load.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadReport {
    /// Extensions started.
    pub loaded: usize,
    /// Names of the extensions ready when the load ended, in load order.
    pub ready: Vec<String>,
    /// One line per extension that failed to load.
    pub errors: Vec<String>,
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReloadReport {
    /// Extensions stopped.
    pub stopped: usize,
    /// Extensions started again.
    pub loaded: usize,
    /// Extensions ready when the reload ended.
    pub ready: usize,
    /// One line per extension that failed to load.
    pub errors: Vec<String>,
}

/// An extension's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Spawned, not ready yet.
    Starting,
    /// Ready: sent `ready`, or went quiet after the handshake.
    Ready,
    /// Exited or stopped after it had loaded.
    Exited,
    /// Failed to load, or stopped after a failure.
    Failed,
    /// Project-local, in a project that is not trusted: never started.
    Untrusted,
    /// Exited on its own; started again after a delay (PROTOCOL.md §7.1).
    Restarting,
    /// Restarted too often; down until a reload.
    CrashLoop,
}

impl State {
    /// The state as listings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Exited => "exited",
            State::Failed => "failed",
            State::Untrusted => "untrusted",
            State::Restarting => "restarting",
            State::CrashLoop => "crash_loop",
        }
    }
}

/// One extension in a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtInfo {
    /// The manifest's name.
    pub name: String,
    /// The manifest's version.
    pub version: String,
    /// The manifest's directory.
    pub dir: String,
    /// `ext`, `project` or `global`.
    pub source: &'static str,
    /// Where it is in its life.
    pub state: State,
    /// Process id while it runs.
    pub pid: Option<u32>,
    /// What its `hello` declared.
    pub capabilities: Vec<String>,
    /// Restarts since the last reset (PROTOCOL.md §7.1).
    pub restarts: u32,
    /// Commands it registered, shadowed ones included.
    pub commands: Vec<String>,
    /// Tools it registered, shadowed ones included.
    pub tools: Vec<String>,
    /// Events it subscribed to.
    pub events: Vec<String>,
    /// Events it intercepts.
    pub intercepts: Vec<String>,
    /// What went wrong (a failed load, an exit, an untrusted project), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Commands this extension registered that another one (or the host) owns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shadowed_commands: Vec<String>,
    /// Tools this extension registered that another one owns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shadowed_tools: Vec<String>,
    /// A static extension (no process: skills or a theme).
    #[serde(rename = "static", skip_serializing_if = "std::ops::Not::not")]
    pub is_static: bool,
    /// Absolute paths of a static extension's skills.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Absolute path of a static extension's theme.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

/// A command in effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandInfo {
    /// The command's name, without the `/`.
    pub name: String,
    /// One line shown in command listings.
    pub description: String,
    /// The extension that owns it.
    pub extension: String,
}

/// A tool in effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The tool's name as registered.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the tool's `args`.
    pub schema: Value,
    /// The extension that owns it.
    pub extension: String,
    /// As registered; `direct` when absent (PROTOCOL.md §6.2).
    pub exposure: String,
    /// Offered now: false for a deferred tool until a result activates it.
    pub active: bool,
    /// Waits for the user: no reply deadline (PROTOCOL.md §6.2).
    pub interactive: bool,
    /// JSON Schema of its `structured_content`, when registered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Its `replay` as registered, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// Namespace the tool belongs to, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Description of the namespace, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_description: Option<String>,
    /// Instructions for the namespace, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_instructions: Option<String>,
}

/// Extensions in load order, and the commands and tools in effect.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Listing {
    /// Every extension discovered, in load order.
    pub extensions: Vec<ExtInfo>,
    /// Commands in effect.
    pub commands: Vec<CommandInfo>,
    /// Tools in effect.
    pub tools: Vec<ToolInfo>,
}

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
    /// `delay_ms` (PROTOCOL.md §7.1); `attempt` counts from 1.
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
    },
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum HostError {
    /// A malformed request.
    BadRequest(String),
    /// No command of that name is registered.
    UnknownCommand(String),
    /// No tool of that name is registered.
    UnknownTool(String),
    /// No extension of that name is loaded.
    UnknownExtension(String),
    /// No answer in time.
    Timeout {
        /// The extension that did not answer.
        extension: String,
        /// The call that timed out, e.g. `tool x`.
        what: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The extension exited or closed its stdout before answering.
    Exited {
        /// The extension that exited.
        extension: String,
        /// How it exited.
        detail: String,
    },
    /// The extension's write queue is full.
    Busy {
        /// The extension whose queue is full.
        extension: String,
    },
    /// The extension already has as many calls in flight as allowed.
    TooManyCalls {
        /// The extension with too many calls.
        extension: String,
        /// Calls in flight allowed to one extension.
        limit: usize,
    },
    /// The host is shutting down and takes no more requests.
    ShuttingDown,
    /// The caller gave up on the call ([`Request::CancelTool`]).
    Cancelled {
        /// The extension the call went to.
        extension: String,
        /// The call given up on, e.g. `tool x`.
        what: String,
    },
    /// The host could not start (home, threads) or broke an invariant.
    Internal(String),
    /// No such call waits for an answer.
    UnknownCall(String),
    /// A frame over the limits of PROTOCOL.md §3 rule 9: a call whose frame
    /// to the extension would be too big, or a reply line over the cap.
    TooLarge {
        /// The extension the frame was for or from.
        extension: String,
        /// The frame that was too large, and the limit.
        what: String,
    },
}

impl HostError {
    /// The message beside [`HostError::code`]: the text without the words the
    /// code already says (`bad request: `).
    pub fn message(&self) -> String {
        match self {
            HostError::BadRequest(m) => m.clone(),
            other => other.to_string(),
        }
    }

    /// The error code of the `zot serve` protocol.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::BadRequest(_) => "bad_request",
            HostError::Internal(_) => "internal",
            HostError::TooLarge { .. } => "too_large",
            HostError::UnknownCall(_) => "unknown_call",
            HostError::UnknownCommand(_) => "unknown_command",
            HostError::UnknownTool(_) => "unknown_tool",
            HostError::UnknownExtension(_) => "unknown_extension",
            HostError::Timeout { .. } => "timeout",
            HostError::Exited { .. } => "extension_exited",
            HostError::Busy { .. } | HostError::TooManyCalls { .. } => "busy",
            HostError::ShuttingDown => "shutting_down",
            HostError::Cancelled { .. } => "cancelled",
        }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::BadRequest(m) => write!(f, "bad request: {m}"),
            HostError::UnknownCommand(n) => write!(f, "unknown command /{n}"),
            HostError::UnknownTool(n) => write!(f, "unknown tool {n:?}"),
            HostError::UnknownExtension(n) => write!(f, "unknown extension {n:?}"),
            HostError::Timeout { extension, what, after } => write!(
                f,
                "extension {extension:?} did not answer {what} within {}",
                fmt_duration(*after)
            ),
            HostError::Exited { extension, detail } => {
                write!(f, "extension {extension:?} exited: {detail}")
            }
            HostError::Busy { extension } => write!(
                f,
                "extension {extension:?} is busy: its input queue is full (it is not reading stdin)"
            ),
            HostError::TooManyCalls { extension, limit } => write!(
                f,
                "extension {extension:?} is busy: {limit} calls already in flight"
            ),
            HostError::ShuttingDown => write!(f, "the host is shutting down"),
            HostError::Cancelled { extension, what } => {
                write!(f, "{what} of extension {extension:?} was cancelled by the caller")
            }
            HostError::Internal(m) => write!(f, "internal error: {m}"),
            HostError::TooLarge { extension, what } => write!(f, "extension {extension:?}: {what}"),
            HostError::UnknownCall(id) => write!(f, "no call {id:?} waits for an answer"),
        }
    }
}

impl std::error::Error for HostError {}

/// `1.5s`, `250ms`.
pub fn fmt_duration(d: Duration) -> String {
    if d.as_millis() % 1000 == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}
