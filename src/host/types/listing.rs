//! What [`Request::List`](super::Request::List) answers: every extension
//! with its state, and the commands and tools in effect.

use serde::Serialize;
use serde_json::Value;

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
    /// Exited on its own; started again after a delay (docs/protocol.md §7.1).
    Restarting,
    /// Restarted too often; down until a reload.
    CrashLoop,
    /// An MCP server stopped after its `idleTimeout`; the next call starts it.
    Idle,
    /// A remote server that answered 401 with no usable login: a person
    /// must run `zot mcp login NAME` (docs/protocol.md §8.5 rule 11).
    NeedsLogin,
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
            State::Idle => "idle",
            State::NeedsLogin => "needs_login",
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
    /// `extension`, or `mcp` for an MCP server (docs/protocol.md §8).
    pub kind: &'static str,
    /// An MCP server's protocol version, once it answered `initialize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// An MCP server's `serverInfo`, once it answered `initialize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Value>,
    /// An MCP server's transport: `stdio`, `http` or `sse` (docs/protocol.md §8.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    /// A remote server's `url` as its entry wrote it (no expanded value,
    /// query string, fragment or user information).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A remote server's authentication: `none`, `headers` or `oauth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<&'static str>,
    /// For `auth` `oauth`: `logged_in` or `needs_login`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login: Option<&'static str>,
    /// Where it is in its life.
    pub state: State,
    /// Process id while it runs.
    pub pid: Option<u32>,
    /// What its `hello` declared.
    pub capabilities: Vec<String>,
    /// Restarts since the last reset (docs/protocol.md §7.1).
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
    /// What is enforced of its confinement (docs/protocol.md §9.3): `null` when
    /// it has none, or `{"enforced", "not_enforced", "landlock_abi"}`.
    pub confinement: Value,
    /// The console's mark for it: `confined`, `partly confined` or `full
    /// access` (`-` for an entry that could not be read).
    #[serde(skip)]
    pub confinement_mark: &'static str,
    /// An MCP server's configuration file, where it is listed. Not part of
    /// the wire frame.
    #[serde(skip)]
    pub config_file: Option<String>,
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
    /// As registered; `direct` when absent (docs/protocol.md §6.2).
    pub exposure: String,
    /// Offered now: false for a deferred tool until a result activates it.
    pub active: bool,
    /// Waits for the user: no reply deadline (docs/protocol.md §6.2).
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
    /// Its title (an MCP tool's), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its behaviour hints (an MCP tool's `annotations`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
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
    /// Descendants alive now that the host ended up parent of without
    /// being able to say whose they were (docs/protocol.md §3 rule 10: they
    /// shed the instance marker, their extension's group and its session;
    /// they are ended when the host exits). 0 normally.
    pub orphans: usize,
}
