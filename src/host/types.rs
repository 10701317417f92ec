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
    pub command: Duration,
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
/// with `busy`.
pub const DEFAULT_QUEUE_LIMIT: usize = 1024;

/// Bounds on what one extension can make the host hold. Past each, the
/// extension is refused (and told in its log) and the others carry on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Calls in flight to one extension; more fail with `busy`.
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
            in_flight: 4096,
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
    pub home: Home,
    pub sources: Sources,
    /// The project directory: project-local discovery and `cwd` in `hello_ack`.
    pub cwd: PathBuf,
    pub provider: String,
    pub model: String,
    pub zot_version: String,
    pub timeouts: Timeouts,
    /// A failed or late interceptor blocks instead of allowing.
    pub fail_closed: bool,
    /// Frames queued per child before calls to it fail with `busy`.
    pub queue_limit: usize,
    pub limits: Limits,
    /// Command names owned by the embedding program (its built-ins); an
    /// extension registering one of them is shadowed.
    pub reserved_commands: Vec<String>,
    /// `--trace FILE`: every frame in and out, recorded where each child's
    /// lines are read and its frames sent ([`crate::trace`]); flushed by
    /// [`Host::shutdown`](super::Host::shutdown).
    pub trace: Option<std::sync::Arc<crate::trace::Tracer>>,
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
            limits: Limits::default(),
            reserved_commands: Vec::new(),
            trace: None,
        }
    }
}

/// A request to the dispatcher.
#[derive(Debug, Clone)]
pub enum Request {
    WaitReady,
    List,
    Command { name: String, args: String },
    /// `tool_id` is the caller's own key for the call, for [`Request::CancelTool`].
    Tool { name: String, args: Option<Value>, tool_id: Option<String> },
    /// Gives up on the tool calls in flight that were started with this
    /// `tool_id`: each leaves the calls in flight, its extension gets
    /// `tool_cancel`, and its caller is answered [`HostError::Cancelled`].
    /// Answers `Done`, or `BadRequest` when no such call is in flight.
    CancelTool { tool_id: String },
    Intercept { event: String, payload: Payload },
    Event { event: String, payload: Payload },
    PanelKey { extension: String, panel_id: String, key: String, text: Option<String> },
    PanelClose { extension: String, panel_id: String },
    Reload,
    Shutdown,
}

/// The outcome of a request.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Response {
    Load(LoadReport),
    List(Listing),
    Command(CommandReply),
    Tool(ToolReply),
    Intercept(InterceptOutcome),
    Delivered(usize),
    Reload(ReloadReport),
    Done,
}

/// Called once, on the dispatcher thread, with the outcome of a request.
pub type Responder = Box<dyn FnOnce(Result<Response, HostError>) + Send>;

/// An extension's answer to a command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandReply {
    pub extension: String,
    /// `prompt`, `insert`, `display`, `open_panel` or `noop`.
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<Panel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An extension's answer to a tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReply {
    pub extension: String,
    pub content: Vec<Value>,
    pub is_error: bool,
}

/// The verdict of an intercept chain.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InterceptOutcome {
    pub block: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments after every rewrite, when any interceptor rewrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    /// The text after every replacement, when any interceptor replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
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
    pub errors: Vec<String>,
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReloadReport {
    pub stopped: usize,
    pub loaded: usize,
    pub ready: usize,
    pub errors: Vec<String>,
}

/// An extension's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Starting,
    Ready,
    Exited,
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Exited => "exited",
            State::Failed => "failed",
        }
    }
}

/// One extension in a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtInfo {
    pub name: String,
    pub version: String,
    pub dir: String,
    /// `ext`, `project` or `global`.
    pub source: &'static str,
    pub state: State,
    pub pid: Option<u32>,
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Commands this extension registered that another one (or the host) owns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shadowed_commands: Vec<String>,
    /// Tools this extension registered that another one owns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shadowed_tools: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    pub extension: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub extension: String,
}

/// Extensions in load order, and the commands and tools in effect.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Listing {
    pub extensions: Vec<ExtInfo>,
    pub commands: Vec<CommandInfo>,
    pub tools: Vec<ToolInfo>,
}

/// Something the host tells the embedding program without being asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostEvent {
    /// The initial load is over; names of the ready extensions.
    Ready { extensions: Vec<String> },
    Notify { extension: String, level: String, message: String },
    ClearNotes { extension: String },
    Submit { extension: String, text: String },
    OpenPanel { extension: String, panel: Panel },
    PanelRender {
        extension: String,
        panel_id: String,
        title: String,
        lines: Vec<String>,
        footer: String,
    },
    PanelClose { extension: String, panel_id: String },
    /// A running extension's process ended on its own (not by a stop).
    #[serde(rename = "extension_exited")]
    Exited {
        extension: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// An extension failed to load.
    #[serde(rename = "extension_error")]
    LoadFailed { extension: String, message: String },
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum HostError {
    /// A malformed request.
    BadRequest(String),
    UnknownCommand(String),
    UnknownTool(String),
    UnknownExtension(String),
    /// No answer in time.
    Timeout { extension: String, what: String, after: Duration },
    /// The extension exited or closed its stdout before answering.
    Exited { extension: String, detail: String },
    /// The extension's write queue is full.
    Busy { extension: String },
    /// The extension already has as many calls in flight as allowed.
    TooManyCalls { extension: String, limit: usize },
    ShuttingDown,
    /// The caller gave up on the call ([`Request::CancelTool`]).
    Cancelled { extension: String, what: String },
    /// The host could not start (home, threads) or broke an invariant.
    Internal(String),
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
            HostError::BadRequest(_) | HostError::Internal(_) => "bad_request",
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
