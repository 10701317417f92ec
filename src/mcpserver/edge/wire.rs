//! The JSON-RPC lines the edge writes and reads, as plain helpers that
//! know nothing of its state: a line, an error reply and an error's text,
//! an empty params object, and a frame the edge makes of its own.

use crate::child::ChildMsg;
use crate::protocol::ExtFrame;
use serde_json::{json, Map, Value};


/// JSON-RPC's "method not found".
pub(super) const NOT_FOUND: i64 = -32601;

pub(super) fn error_reply(id: Value, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": NOT_FOUND, "message": message}})
}

/// A JSON-RPC error's message (its code when there is none).
pub(super) fn error_text(e: &Value) -> String {
    match e.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("error {}", e.get("code").map(Value::to_string).unwrap_or_else(|| e.to_string())),
    }
}

pub(super) fn line(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// An empty params object.
pub(super) fn no_params() -> Value {
    Value::Object(Map::new())
}

/// What a frame of the host becomes is in [`super::calls`]; these are the frames
/// the edge makes of its own.
pub(super) fn frame(f: ExtFrame) -> ChildMsg {
    ChildMsg::Frame(f)
}
