//! Every frame of docs/protocol.md §2 in both directions, as Rust types,
//! with the line limit and the protocol version: what the codec, the
//! repair and the members decoder all build on.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest line accepted from an extension, in bytes (without the `\n`
/// and a trailing `\r`): docs/protocol.md §2.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The protocol version sent in `hello_ack`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Payload fields of an event, beside `event` itself.
pub type Payload = Map<String, Value>;

/// A frame sent by an extension to the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtFrame {
    /// `hello`: must be the first frame.
    Hello {
        /// The name the extension gives itself; the manifest's name wins.
        #[serde(default, deserialize_with = "lenient")]
        name: String,
        /// The extension's version, display only.
        #[serde(default, deserialize_with = "lenient")]
        version: String,
        /// Advisory capabilities; `tool_cancel` and `call_tool` are opt-ins (docs/protocol.md §6.1).
        #[serde(default, deserialize_with = "lenient")]
        capabilities: Vec<String>,
    },
    /// `register_command`: a slash command `/name`.
    RegisterCommand {
        /// The command's name, without the `/`.
        name: String,
        /// One line shown in command listings.
        #[serde(default, deserialize_with = "lenient")]
        description: String,
    },
    /// `register_tool`: a tool the model may call.
    RegisterTool {
        /// The tool's name as the model sees it.
        name: String,
        /// What the tool does, for the model.
        #[serde(default, deserialize_with = "lenient")]
        description: String,
        /// JSON Schema of the tool's `args`; anything but an object is refused.
        #[serde(default)]
        schema: Value,
        /// The richer tool fields of the current revision (docs/protocol.md §6.2).
        #[serde(flatten)]
        more: ToolMore,
    },
    /// `subscribe`: events to observe and events to intercept.
    Subscribe {
        /// Names of the events to receive as `event` frames.
        #[serde(default, deserialize_with = "lenient")]
        events: Vec<String>,
        /// Names of the events to receive as `event_intercept` frames.
        #[serde(default, deserialize_with = "lenient")]
        intercept: Vec<String>,
    },
    /// `ready`: every initial registration has been sent.
    Ready,
    /// `command_response`: the reply to a `command_invoked`.
    CommandResponse(CommandResponse),
    /// `tool_result`: the reply to a `tool_call`.
    ToolResult(ToolResult),
    /// `event_intercept_response`: the reply to an `event_intercept`.
    EventInterceptResponse(InterceptResponse),
    /// `notify`: a note shown to the user, attributed to the extension.
    Notify {
        /// `info`, `success`, `warn` or `error`.
        #[serde(default, deserialize_with = "lenient")]
        level: String,
        /// The note's text.
        #[serde(default, deserialize_with = "lenient")]
        message: String,
    },
    /// `clear_notes`: retract every note this extension has shown.
    ClearNotes,
    /// `open_panel`: open a panel without a command.
    OpenPanel {
        /// The panel to open.
        panel: Panel,
    },
    /// `panel_render`: redraw an open panel.
    PanelRender {
        /// `id` of the panel to redraw.
        panel_id: String,
        /// The panel's new title.
        #[serde(default, deserialize_with = "lenient")]
        title: String,
        /// The panel's new body, one entry a line.
        #[serde(default, deserialize_with = "lenient")]
        lines: Vec<String>,
        /// The panel's new footer.
        #[serde(default, deserialize_with = "lenient")]
        footer: String,
    },
    /// `panel_close`: the extension closes one of its panels.
    PanelClose {
        /// `id` of the panel to close.
        panel_id: String,
    },
    /// `submit`: submit `text` as a user prompt.
    Submit {
        /// The prompt to submit.
        text: String,
    },
    /// Run a tool through the host (docs/protocol.md §6.1); `args` and `name`
    /// are checked by the host, which answers every such frame.
    CallTool {
        /// The extension's own id for this call; the host's `tool_result` carries it back.
        #[serde(default, deserialize_with = "lenient_id")]
        id: String,
        /// The tool to run; anything but a string is refused by the host.
        #[serde(default)]
        name: Value,
        /// The tool's arguments; anything but an object is refused by the host.
        #[serde(default)]
        args: Value,
        /// `id` of the `tool_call` in flight to this extension that this call serves; empty when none.
        #[serde(default, deserialize_with = "lenient_id", skip_serializing_if = "String::is_empty")]
        parent_id: String,
    },
    /// `call_tool_cancel`: cancel one of this extension's `call_tool` calls.
    CallToolCancel {
        /// `id` of the `call_tool` to cancel.
        #[serde(default, deserialize_with = "lenient_id")]
        id: String,
    },
    /// `submit_slash`: run `text` as if the user had typed it (docs/protocol.md §6.3).
    SubmitSlash {
        /// The slash command line; it must start with `/`.
        #[serde(default, deserialize_with = "lenient")]
        text: String,
    },
    /// `shutdown_ack`: the reply to `shutdown`; the extension exits right after.
    ShutdownAck,
    /// Any other `type`; decoded only to be reported, never sent.
    #[serde(other, skip_serializing)]
    Unknown,
}

impl ExtFrame {
    /// The frame's `type` on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            ExtFrame::Hello { .. } => "hello",
            ExtFrame::RegisterCommand { .. } => "register_command",
            ExtFrame::RegisterTool { .. } => "register_tool",
            ExtFrame::Subscribe { .. } => "subscribe",
            ExtFrame::Ready => "ready",
            ExtFrame::CommandResponse(_) => "command_response",
            ExtFrame::ToolResult(_) => "tool_result",
            ExtFrame::EventInterceptResponse(_) => "event_intercept_response",
            ExtFrame::Notify { .. } => "notify",
            ExtFrame::ClearNotes => "clear_notes",
            ExtFrame::OpenPanel { .. } => "open_panel",
            ExtFrame::PanelRender { .. } => "panel_render",
            ExtFrame::PanelClose { .. } => "panel_close",
            ExtFrame::Submit { .. } => "submit",
            ExtFrame::CallTool { .. } => "call_tool",
            ExtFrame::CallToolCancel { .. } => "call_tool_cancel",
            ExtFrame::SubmitSlash { .. } => "submit_slash",
            ExtFrame::ShutdownAck => "shutdown_ack",
            ExtFrame::Unknown => "unknown",
        }
    }
}

/// The optional fields of `register_tool` added by the current revision.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct ToolMore {
    /// JSON Schema of `structured_content`; passed on, not enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Registered but not offered until a `tool_result` activates it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "lenient")]
    pub deferred: bool,
    /// `""`/`direct`, `deferred`, `codemode` or `model-only`; another value refuses the tool.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub exposure: String,
    /// The tool waits for the user: no reply deadline, only cancellation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "lenient")]
    pub interactive: bool,
    /// Namespace the tool belongs to, passed on in listings.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub namespace: String,
    /// Description of the namespace, passed on in listings.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub namespace_description: String,
    /// Instructions for the namespace, passed on in listings.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub namespace_instructions: String,
    /// `""`/`never`, `safe`, `idempotent` or `reconcile`; passed on in listings.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub replay: String,
    /// A human-readable title (an MCP tool's `title`), passed on in listings.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub title: String,
    /// Behaviour hints (an MCP tool's `annotations`: `readOnlyHint`,
    /// `destructiveHint`, `idempotentHint`, `openWorldHint`), passed on in listings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// Reply to `command_invoked`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct CommandResponse {
    /// `id` of the `command_invoked` this answers.
    #[serde(deserialize_with = "id_string")]
    pub id: String,
    /// `prompt`, `insert`, `display`, `open_panel` or `noop`; empty (or
    /// `null`) = `noop`.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "null_as_empty")]
    pub action: String,
    /// For `prompt` and `tool_prompt`: the text to submit as a user prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// For `insert`: the text to put in the user's input line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    /// For `display`: the text to show the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// For `open_panel`: the panel to open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<Panel>,
    /// A non-empty error is shown as an error, whatever the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `tool_prompt` (docs/protocol.md §6.3): the tool to run before the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// `tool_prompt`: the arguments of `tool_name`, a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
}

/// Reply to `tool_call`. `content` blocks are kept as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct ToolResult {
    /// `id` of the `tool_call` this answers.
    #[serde(deserialize_with = "id_string")]
    pub id: String,
    /// Content blocks: `text` or `image` (base64 `data`, `mime_type`).
    #[serde(default)]
    pub content: Vec<Value>,
    /// The tool failed; `content` says why.
    #[serde(default)]
    pub is_error: bool,
    /// Any JSON, passed on as the call's structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Names of this extension's deferred tools to offer from now on.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient")]
    pub activate_tools: Vec<String>,
}

/// Reply to `event_intercept`; every field defaults to allow/unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct InterceptResponse {
    /// `id` of the `event_intercept` this answers.
    #[serde(deserialize_with = "id_string")]
    pub id: String,
    /// Stop the event; the first block wins and ends the chain.
    #[serde(default)]
    pub block: bool,
    /// Why the event was blocked, shown to the user.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub reason: String,
    /// Only a JSON object counts; anything else is ignored by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    /// Replacement for the event's text (`assistant_message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
    /// `before_agent_start` (docs/protocol.md §6.4): kept as sent, so that a
    /// value that is not a string can be refused by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<Value>,
}

/// An interactive panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct Panel {
    /// The panel's id, used by `panel_render`, `panel_key` and `panel_close`.
    #[serde(default, deserialize_with = "lenient")]
    pub id: String,
    /// Shown above the panel's lines.
    #[serde(default, deserialize_with = "lenient")]
    pub title: String,
    /// The panel's body, one entry a line.
    #[serde(default, deserialize_with = "lenient")]
    pub lines: Vec<String>,
    /// Shown below the panel's lines.
    #[serde(default, deserialize_with = "lenient")]
    pub footer: String,
}

/// `hello_ack` fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct HelloAck {
    /// Always [`PROTOCOL_VERSION`].
    #[serde(default)]
    pub protocol_version: u32,
    /// Version of the host.
    #[serde(default, deserialize_with = "lenient")]
    pub zot_version: String,
    /// The model provider given to the host, or empty.
    #[serde(default, deserialize_with = "lenient")]
    pub provider: String,
    /// The model given to the host, or empty.
    #[serde(default, deserialize_with = "lenient")]
    pub model: String,
    /// The project directory.
    #[serde(default, deserialize_with = "lenient")]
    pub cwd: String,
    /// The manifest's directory.
    #[serde(default, deserialize_with = "lenient")]
    pub extension_dir: String,
    /// Where the extension keeps its own state: the manifest's directory too.
    #[serde(default, deserialize_with = "lenient")]
    pub data_dir: String,
    /// What the host supports (docs/protocol.md §6.1): `call_tool` at least.
    #[serde(default, deserialize_with = "lenient")]
    pub capabilities: Vec<String>,
}

/// A frame sent by the host to an extension.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    /// `hello_ack`: the answer to `hello`.
    HelloAck(HelloAck),
    /// `command_invoked`: the user ran `/name args`.
    CommandInvoked {
        /// The host's id for this call; the `command_response` carries it back.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// The command's name as registered first.
        name: String,
        /// Text after the command name, trimmed.
        #[serde(default, deserialize_with = "lenient")]
        args: String,
    },
    /// `tool_call`: the model (or an extension) called the tool.
    ToolCall {
        /// The host's id for this call; the `tool_result` carries it back.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// The tool's name as registered.
        name: String,
        /// The tool's arguments, a JSON object (`{}` when none).
        #[serde(default = "empty_object")]
        args: Value,
        /// Passed on when the agent gives them (docs/protocol.md §6.2), never invented.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operation_key: Option<Value>,
        /// Passed on when the agent gives it, never invented.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reconcile: Option<Value>,
    },
    /// The answer to an extension's `call_tool`; a field of the wrong
    /// shape reads as its default, so the waiting call still gets it.
    ToolResult {
        /// `id` of the extension's `call_tool` this answers.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// Name of the tool that was called.
        #[serde(default, deserialize_with = "lenient")]
        name: String,
        /// The result's content blocks, bounded to 256 KiB and 128 blocks.
        #[serde(default, deserialize_with = "lenient")]
        content: Vec<Value>,
        /// The call failed or was refused; `content` says why.
        #[serde(default, deserialize_with = "lenient")]
        is_error: bool,
        /// `content` was cut at its bounds.
        #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "lenient")]
        truncated: bool,
        /// The tool's structured result, as it sent it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_content: Option<Value>,
    },
    /// `tool_cancel`: the host gave up on a tool call.
    ToolCancel {
        /// `id` of the `tool_call` given up on.
        #[serde(deserialize_with = "id_string")]
        id: String,
    },
    /// `event`: a subscribed event happened.
    Event {
        /// The event's name.
        event: String,
        /// The event's payload and envelope (`session_id`, `cwd`, `sequence`).
        #[serde(flatten)]
        payload: Payload,
    },
    /// `event_intercept`: a subscribed interceptable event is about to happen.
    EventIntercept {
        /// The host's id for this intercept; the `event_intercept_response` carries it back.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// The event's name.
        event: String,
        /// The event's payload and envelope (`session_id`, `cwd`, `sequence`).
        #[serde(flatten)]
        payload: Payload,
    },
    /// `panel_key`: a key pressed while the extension's panel is focused.
    PanelKey {
        /// `id` of the focused panel.
        panel_id: String,
        /// `up`, `down`, `enter`, `esc`, ... or `rune` for a character.
        key: String,
        /// The character(s) typed, for `rune`.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
        text: Option<String>,
    },
    /// `panel_close`: the user closed the panel.
    PanelClose {
        /// `id` of the closed panel.
        panel_id: String,
    },
    /// `shutdown`: reply `shutdown_ack`, then exit.
    Shutdown,
    /// Any other `type`; decoded only to be reported, never sent.
    #[serde(other, skip_serializing)]
    Unknown,
}

pub(super) fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Deserializes `T`, falling back to its default when the value has the
/// wrong shape: display-only fields never make a whole frame unusable.
pub(super) fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}

/// An id that may be missing or of the wrong type: `""` then, which the
/// host refuses with a log line instead of dropping the whole frame.
#[cfg(test)]
fn lenient_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    })
}

/// A string that may be `null`: empty then.
#[cfg(test)]
fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// Ids are strings on the wire; a number is accepted and turned into one.
pub(super) fn id_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!("id must be a string, got {other}"))),
    }
}
