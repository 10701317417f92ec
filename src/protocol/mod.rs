//! The wire format: every frame of PROTOCOL.md §2 in both directions, its
//! one-line encoding, and a decoder that never panics and says exactly what
//! was wrong with a line it cannot use.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest line accepted from an extension, in bytes (without the `\n`
/// and a trailing `\r`): PROTOCOL.md §2.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The protocol version sent in `hello_ack`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Payload fields of an event, beside `event` itself.
pub type Payload = Map<String, Value>;

/// A frame sent by an extension to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtFrame {
    Hello {
        #[serde(default, deserialize_with = "lenient")]
        name: String,
        #[serde(default, deserialize_with = "lenient")]
        version: String,
        #[serde(default, deserialize_with = "lenient")]
        capabilities: Vec<String>,
    },
    RegisterCommand {
        name: String,
        #[serde(default, deserialize_with = "lenient")]
        description: String,
    },
    RegisterTool {
        name: String,
        #[serde(default, deserialize_with = "lenient")]
        description: String,
        #[serde(default)]
        schema: Value,
        /// The richer tool fields of the current revision (PROTOCOL.md §6.2).
        #[serde(flatten)]
        more: ToolMore,
    },
    Subscribe {
        #[serde(default, deserialize_with = "lenient")]
        events: Vec<String>,
        #[serde(default, deserialize_with = "lenient")]
        intercept: Vec<String>,
    },
    Ready,
    CommandResponse(CommandResponse),
    ToolResult(ToolResult),
    EventInterceptResponse(InterceptResponse),
    Notify {
        #[serde(default, deserialize_with = "lenient")]
        level: String,
        #[serde(default, deserialize_with = "lenient")]
        message: String,
    },
    ClearNotes,
    OpenPanel { panel: Panel },
    PanelRender {
        panel_id: String,
        #[serde(default, deserialize_with = "lenient")]
        title: String,
        #[serde(default, deserialize_with = "lenient")]
        lines: Vec<String>,
        #[serde(default, deserialize_with = "lenient")]
        footer: String,
    },
    PanelClose { panel_id: String },
    Submit { text: String },
    /// Run a tool through the host (PROTOCOL.md §6.1); `args` and `name`
    /// are checked by the host, which answers every such frame.
    CallTool {
        #[serde(default, deserialize_with = "lenient_id")]
        id: String,
        #[serde(default)]
        name: Value,
        #[serde(default)]
        args: Value,
        #[serde(default, deserialize_with = "lenient_id", skip_serializing_if = "String::is_empty")]
        parent_id: String,
    },
    CallToolCancel {
        #[serde(default, deserialize_with = "lenient_id")]
        id: String,
    },
    SubmitSlash {
        #[serde(default, deserialize_with = "lenient")]
        text: String,
    },
    ShutdownAck,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolMore {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "lenient")]
    pub deferred: bool,
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub exposure: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "lenient")]
    pub interactive: bool,
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub namespace_description: String,
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub namespace_instructions: String,
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub replay: String,
}

/// Reply to `command_invoked`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandResponse {
    #[serde(deserialize_with = "id_string")]
    pub id: String,
    /// `prompt`, `insert`, `display`, `open_panel` or `noop`; empty = `noop`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<Panel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `tool_prompt` (PROTOCOL.md §6.3): the tool to run before the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
}

/// Reply to `tool_call`. `content` blocks are kept as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    #[serde(deserialize_with = "id_string")]
    pub id: String,
    #[serde(default)]
    pub content: Vec<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient")]
    pub activate_tools: Vec<String>,
}

/// Reply to `event_intercept`; every field defaults to allow/unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterceptResponse {
    #[serde(deserialize_with = "id_string")]
    pub id: String,
    #[serde(default)]
    pub block: bool,
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub reason: String,
    /// Only a JSON object counts; anything else is ignored by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
    /// `before_agent_start` (PROTOCOL.md §6.4): kept as sent, so that a
    /// value that is not a string can be refused by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<Value>,
}

/// An interactive panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    #[serde(default, deserialize_with = "lenient")]
    pub id: String,
    #[serde(default, deserialize_with = "lenient")]
    pub title: String,
    #[serde(default, deserialize_with = "lenient")]
    pub lines: Vec<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub footer: String,
}

/// `hello_ack` fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HelloAck {
    #[serde(default)]
    pub protocol_version: u32,
    #[serde(default, deserialize_with = "lenient")]
    pub zot_version: String,
    #[serde(default, deserialize_with = "lenient")]
    pub provider: String,
    #[serde(default, deserialize_with = "lenient")]
    pub model: String,
    #[serde(default, deserialize_with = "lenient")]
    pub cwd: String,
    #[serde(default, deserialize_with = "lenient")]
    pub extension_dir: String,
    #[serde(default, deserialize_with = "lenient")]
    pub data_dir: String,
    /// What the host supports (PROTOCOL.md §6.1): `call_tool` at least.
    #[serde(default, deserialize_with = "lenient")]
    pub capabilities: Vec<String>,
}

/// A frame sent by the host to an extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    HelloAck(HelloAck),
    CommandInvoked {
        #[serde(deserialize_with = "id_string")]
        id: String,
        name: String,
        #[serde(default, deserialize_with = "lenient")]
        args: String,
    },
    ToolCall {
        #[serde(deserialize_with = "id_string")]
        id: String,
        name: String,
        #[serde(default = "empty_object")]
        args: Value,
        /// Passed on when the agent gives them (PROTOCOL.md §6.2), never invented.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operation_key: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reconcile: Option<Value>,
    },
    /// The answer to an extension's `call_tool`; a field of the wrong
    /// shape reads as its default, so the waiting call still gets it.
    ToolResult {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default, deserialize_with = "lenient")]
        name: String,
        #[serde(default, deserialize_with = "lenient")]
        content: Vec<Value>,
        #[serde(default, deserialize_with = "lenient")]
        is_error: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "lenient")]
        truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_content: Option<Value>,
    },
    ToolCancel {
        #[serde(deserialize_with = "id_string")]
        id: String,
    },
    Event {
        event: String,
        #[serde(flatten)]
        payload: Payload,
    },
    EventIntercept {
        #[serde(deserialize_with = "id_string")]
        id: String,
        event: String,
        #[serde(flatten)]
        payload: Payload,
    },
    PanelKey {
        panel_id: String,
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
        text: Option<String>,
    },
    PanelClose { panel_id: String },
    Shutdown,
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
fn lenient_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    })
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
            assert_eq!(ExtFrame::decode_fast(line.as_bytes()), Some(slow.clone()), "{line}");
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
            assert_eq!(HostFrame::decode_fast(line.as_bytes()), Some(slow), "{line}");
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
