//! The frames as the SDK sends and reads them: the §2 frames plus the
//! fields and frames of the current revision (PROTOCOL.md §6). Decoding
//! goes through [`crate::protocol::decode`], so a line is judged by the
//! same rules as the host's (and a malformed request keeps its id).

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{Frame, HelloAck, Panel, Payload};

/// What the SDK declares in `hello`, as upstream's current Go SDK does.
pub(crate) const CAPABILITIES: [&str; 6] = ["commands", "tools", "events", "panels", "tool_cancel", "call_tool"];

/// A frame from the extension to the host.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Out {
    Hello { name: String, version: String, capabilities: Vec<String> },
    RegisterCommand { name: String, description: String },
    RegisterTool(RegisterTool),
    Subscribe { events: Vec<String>, intercept: Vec<String> },
    Ready,
    CommandResponse(CommandReply),
    ToolResult(ToolReply),
    EventInterceptResponse(InterceptReply),
    CallTool {
        id: String,
        name: String,
        args: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_id: Option<String>,
    },
    CallToolCancel { id: String },
    SubmitSlash { text: String },
    ShutdownAck,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RegisterTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) namespace_description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) namespace_instructions: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exposure: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) deferred: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) interactive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replay: Option<&'static str>,
}

/// `command_response` fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct CommandReply {
    pub(crate) id: String,
    pub(crate) action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) insert: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) display: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) open_panel: Option<Panel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// `tool_result` fields (extension to host).
#[derive(Debug, Serialize)]
pub(crate) struct ToolReply {
    pub(crate) id: String,
    pub(crate) content: Vec<Value>,
    pub(crate) is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) structured_content: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) activate_tools: Vec<String>,
}

/// `event_intercept_response` fields.
#[derive(Debug, Default, Serialize)]
pub(crate) struct InterceptReply {
    pub(crate) id: String,
    pub(crate) block: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) modified_args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replace_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<String>,
}

/// A frame from the host to the extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum In {
    HelloAck {
        #[serde(flatten)]
        info: HelloAck,
        #[serde(default)]
        capabilities: Value,
    },
    CommandInvoked {
        #[serde(deserialize_with = "id")]
        id: String,
        name: String,
        #[serde(default, deserialize_with = "string_or_empty")]
        args: String,
    },
    ToolCall {
        #[serde(deserialize_with = "id")]
        id: String,
        name: String,
        #[serde(default = "empty_object", deserialize_with = "object_or_empty")]
        args: Value,
        #[serde(default, deserialize_with = "opt_string")]
        operation_key: Option<String>,
        #[serde(default, deserialize_with = "bool_or_false")]
        reconcile: bool,
    },
    ToolCancel {
        #[serde(deserialize_with = "id")]
        id: String,
    },
    /// The answer to the extension's own `call_tool`.
    ToolResult {
        #[serde(deserialize_with = "id")]
        id: String,
        #[serde(flatten)]
        reply: Map<String, Value>,
    },
    Event {
        event: String,
        #[serde(flatten)]
        payload: Payload,
    },
    EventIntercept {
        #[serde(deserialize_with = "id")]
        id: String,
        event: String,
        #[serde(flatten)]
        payload: Payload,
    },
    PanelKey {
        panel_id: String,
        key: String,
        #[serde(default, deserialize_with = "string_or_empty")]
        text: String,
    },
    PanelClose { panel_id: String },
    Shutdown,
    #[serde(other, skip_serializing)]
    Unknown,
}

impl Frame for In {
    fn is_unknown(&self) -> bool {
        matches!(self, In::Unknown)
    }
}

/// The strings of a `capabilities` value; anything else counts as none.
pub(crate) fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Ids are strings on the wire; a number is accepted and turned into one.
fn id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!("id must be a string, got {other}"))),
    }
}

fn string_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Value::deserialize(d)?.as_str().map(String::from).unwrap_or_default())
}

fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Value::deserialize(d)?.as_str().filter(|s| !s.is_empty()).map(String::from))
}

fn bool_or_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)?.as_bool().unwrap_or(false))
}

/// Tool arguments are a JSON object; `null` means none.
fn object_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(empty_object()),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode, DecodeError};
    use serde_json::json;

    #[test]
    fn reads_the_current_revision() {
        let f: In = decode(br#"{"type":"tool_call","id":7,"name":"x","args":null,"operation_key":"op-1","reconcile":true}"#).unwrap();
        assert_eq!(
            f,
            In::ToolCall { id: "7".into(), name: "x".into(), args: json!({}), operation_key: Some("op-1".into()), reconcile: true }
        );
        let f: In = decode(br#"{"type":"hello_ack","protocol_version":1,"cwd":"/p","capabilities":["call_tool"]}"#).unwrap();
        let In::HelloAck { info, capabilities } = f else { panic!("{f:?}") };
        assert_eq!((info.cwd.as_str(), strings(&capabilities)), ("/p", vec!["call_tool".to_string()]));
        let f: In = decode(br#"{"type":"tool_result","id":"sdk-1","content":[],"truncated":true}"#).unwrap();
        assert!(matches!(f, In::ToolResult { ref id, ref reply } if id == "sdk-1" && reply["truncated"] == true));
        assert!(matches!(decode::<In>(br#"{"type":"tool_call","id":"9"}"#), Err(DecodeError::BadFields { id: Some(_), .. })));
        assert!(matches!(decode::<In>(br#"{"type":"later"}"#), Err(DecodeError::UnknownType(_))));
    }
}
