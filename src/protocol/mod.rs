//! The wire format: every frame of docs/protocol.md §2 in both directions, its
//! one-line encoding, and a decoder that never panics and says exactly what
//! was wrong with a line it cannot use.

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

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Deserializes `T`, falling back to its default when the value has the
/// wrong shape: display-only fields never make a whole frame unusable.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
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
fn id_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!("id must be a string, got {other}"))),
    }
}

mod codec;
pub use codec::{decode, encode, head_id, DecodeError, Frame};
mod members;
mod variants;
mod repair;
pub use repair::{decode_repaired, repair, repair_note};
#[cfg(test)]
mod differential;
mod wireid;
pub use wireid::{Element, IdField, Keyed, Message, WireId};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ext(s: &str) -> Result<ExtFrame, DecodeError> {
        decode(s.as_bytes())
    }

    #[test]
    fn the_id_of_a_cut_reply() {
        let big = "x".repeat(100);
        let line = format!(r#"{{"type":"tool_result","content":[{{"type":"text","text":"{big}","id":"inner"}}],"id":"42","is_error":false"#);
        assert_eq!(head_id(line.as_bytes()).as_deref(), Some("42"));
        assert_eq!(head_id(br#"{"id":17,"type":"tool_result","content":[{"#).as_deref(), Some("17"));
        assert_eq!(head_id(br#" { "a" : {"id":"no"}, "b":"q\"id\"", "id" : "7" "#).as_deref(), Some("7"));
        assert_eq!(head_id(br#"{"type":"tool_result","content":[{"type":"text","text":"aaaa"#), None);
        assert_eq!(head_id(b"not json"), None);
        assert_eq!(head_id(br#"{"id":12"#), None, "a number cut short is not an id");
    }

    #[test]
    fn decodes_every_ext_frame() {
        assert!(matches!(ext(r#"{"type":"hello","name":"w","version":"1","capabilities":["tools"]}"#), Ok(ExtFrame::Hello { .. })));
        assert_eq!(ext(r#"{"type":"ready","extra":1}"#), Ok(ExtFrame::Ready));
        assert_eq!(ext("{\"type\":\"clear_notes\"}\r"), Ok(ExtFrame::ClearNotes));
        assert_eq!(ext(r#"{"type":"shutdown_ack"}"#), Ok(ExtFrame::ShutdownAck));
        let r = ext(r#"{"type":"command_response","id":"7","action":"display","display":"hi"}"#).unwrap();
        let ExtFrame::CommandResponse(r) = r else { panic!() };
        assert_eq!((r.id.as_str(), r.display.as_deref()), ("7", Some("hi")));
        let r = ext(r#"{"type":"tool_result","id":8,"content":[{"type":"text","text":"x"}]}"#).unwrap();
        assert_eq!(r, ExtFrame::ToolResult(ToolResult { id: "8".into(), content: vec![json!({"type":"text","text":"x"})], ..Default::default() }));
        let h = ext(r#"{"type":"hello","name":5,"capabilities":{"x":1}}"#).unwrap();
        assert_eq!(h, ExtFrame::Hello { name: String::new(), version: String::new(), capabilities: vec![] });
    }

    #[test]
    fn classifies_bad_lines() {
        assert!(matches!(ext("nope"), Err(DecodeError::NotJson(_))));
        assert!(matches!(ext("\u{0}\u{1}"), Err(DecodeError::NotJson(_))));
        assert_eq!(ext("[1,2]"), Err(DecodeError::NotObject));
        assert_eq!(ext(r#"{"type":3}"#), Err(DecodeError::NoType));
        assert_eq!(ext(r#"{"x":1}"#), Err(DecodeError::NoType));
        assert_eq!(ext(r#"{"type":"bogus"}"#), Err(DecodeError::UnknownType("bogus".into())));
        match ext(r#"{"type":"event_intercept_response","id":"3","block":"yes"}"#) {
            Err(DecodeError::BadFields { ty, id, .. }) => assert_eq!((ty.as_str(), id.as_deref()), ("event_intercept_response", Some("3"))),
            other => panic!("{other:?}"),
        }
        let deep = "[".repeat(100_000);
        assert!(ext(&deep).is_err());
        let invalid = b"{\"type\":\"notify\",\"message\":\"\xff\"}";
        assert!(decode::<ExtFrame>(invalid).is_err());
    }

    #[test]
    fn fast_decoding_agrees_with_the_tagged_enum() {
        let ext_lines = [
            r#"{"type":"tool_result","id":"8","content":[{"type":"text","text":"x\n\u00e9"},{"n":1.5e3,"k":[null,true]}],"is_error":true}"#,
            r#"{ "type" : "tool_result", "id": 9, "content": [], "extra": {"a": 1}}"#,
            r#"{"type":"tool_result","id":"1"}"#,
            r#"{"type":"command_response","id":"7","action":"display","display":"hi","open_panel":{"id":"p","lines":["a"]}}"#,
            r#"{"type":"command_response","id":"7","error":""}"#,
            r#"{"type":"event_intercept_response","id":"3","block":true,"reason":5,"modified_args":{"c":"ls"},"replace_text":"t"}"#,
        ];
        for line in ext_lines {
            let slow: ExtFrame = serde_json::from_slice(line.as_bytes()).unwrap();
            if !line.contains("command_response") {
                assert_eq!(ExtFrame::decode_fast(line.as_bytes()), Some(slow.clone()), "{line}");
            }
            assert_eq!(decode::<ExtFrame>(line.as_bytes()), Ok(slow));
        }
        let host_lines = [
            r#"{"type":"tool_call","id":"1","name":"x","args":{"i":[1,2,{"j":"k"}]}}"#,
            r#"{"type": "tool_call", "name": "x", "id": 2}"#,
            r#"{"type":"tool_call","id":"1","name":"x","args":null}"#,
            r#"{"type":"command_invoked","id":"4","name":"echo","args":"a b"}"#,
            r#"{"type":"command_invoked","id":"4","name":"echo","args":7}"#,
        ];
        for line in host_lines {
            let slow: HostFrame = serde_json::from_slice(line.as_bytes()).unwrap();
            if line.contains("tool_call") {
                assert_eq!(HostFrame::decode_fast(line.as_bytes()), Some(slow.clone()), "{line}");
            }
            assert_eq!(decode::<HostFrame>(line.as_bytes()), Ok(slow));
        }
        // Anything off goes to the general decoder and its exact errors.
        for line in [
            r#"{"type":"tool_result","id":[1]}"#,
            r#"{"type":"tool_result","type":"tool_result","id":"1"}"#,
            r#"{"type":"tool_\u0072esult","id":"1"}"#,
            r#"{"type":"tool_result","id":"1"} x"#,
            r#"{"id":"1","type":"tool_result"}"#,
            r#"{"type":"tool_result","id":"1","type":"hello"}"#,
        ] {
            assert_eq!(ExtFrame::decode_fast(line.as_bytes()), None, "{line}");
        }
        assert!(matches!(
            decode::<ExtFrame>(br#"{"type":"tool_result","id":"1","is_error":"no"}"#),
            Err(DecodeError::BadFields { id: Some(_), .. })
        ));
        assert!(matches!(decode::<ExtFrame>(br#"{"type":"tool_\u0072esult","id":"1"}"#), Ok(ExtFrame::ToolResult(_))));
    }

    #[test]
    fn host_frames_round_trip() {
        let mut payload = Payload::new();
        payload.insert("step".into(), json!(1));
        let f = HostFrame::Event { event: "turn_start".into(), payload };
        let line = encode(&f);
        assert_eq!(line, b"{\"type\":\"event\",\"event\":\"turn_start\",\"step\":1}\n");
        assert_eq!(decode::<HostFrame>(&line[..line.len() - 1]), Ok(f));
        let t = decode::<HostFrame>(br#"{"type":"tool_call","id":"1","name":"x"}"#).unwrap();
        assert_eq!(t, HostFrame::ToolCall { id: "1".into(), name: "x".into(), args: json!({}), operation_key: None, reconcile: None });
        assert_eq!(encode(&HostFrame::Shutdown), b"{\"type\":\"shutdown\"}\n");
    }
}
