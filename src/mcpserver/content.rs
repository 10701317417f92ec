//! An MCP tool result as the host's result (docs/protocol.md §8.3): text and
//! image blocks as they are (MCP's `mimeType` as zot's `mime_type`), audio,
//! `resource_link` and embedded `resource` as a text block describing them
//! (the resource's text included when it has one), `isError` and
//! `structuredContent` passed on.

use serde_json::{json, Value};

/// A tool result's parts: content blocks, `is_error`, `structured_content`.
pub struct Mapped {
    pub content: Vec<Value>,
    pub is_error: bool,
    pub structured: Option<Value>,
}

/// Maps the `result` of a `tools/call`; `Err` when it is not a result
/// object at all (a malformed reply).
pub fn tool_result(result: Value) -> Result<Mapped, String> {
    let Value::Object(mut r) = result else { return Err("the result is not a JSON object".into()) };
    let content = match r.remove("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(blocks)) => blocks.into_iter().map(owned_block).collect(),
        Some(_) => return Err("`content` is not an array".into()),
    };
    let is_error = r.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let structured = r.remove("structuredContent").filter(|v| !v.is_null());
    // A result with structured content only still says something to a
    // reader of text (as MCP asks servers to do themselves).
    let content = if content.is_empty() {
        match &structured {
            Some(s) => vec![json!({"type": "text", "text": s.to_string()})],
            None => content,
        }
    } else {
        content
    };
    Ok(Mapped { content, is_error, structured })
}

/// [`block`], keeping a text block as it is (no copy of its text).
fn owned_block(b: Value) -> Value {
    if str_of(&b, "type") == "text" && b.get("text").is_some_and(Value::is_string) {
        return b;
    }
    block(&b)
}

fn text(t: String) -> Value {
    json!({"type": "text", "text": t})
}

fn str_of<'a>(b: &'a Value, k: &str) -> &'a str {
    b.get(k).and_then(Value::as_str).unwrap_or("")
}

/// One MCP content block as a zot block.
pub fn block(b: &Value) -> Value {
    match str_of(b, "type") {
        "text" => text(str_of(b, "text").to_string()),
        "image" => json!({"type": "image", "mime_type": str_of(b, "mimeType"), "data": str_of(b, "data")}),
        "audio" => {
            let bytes = str_of(b, "data").len() / 4 * 3;
            text(format!("[audio {}, about {bytes} bytes]", str_of(b, "mimeType")))
        }
        "resource_link" => {
            let mut t = format!("[resource link {}", str_of(b, "uri"));
            for (k, label) in [("name", "name"), ("mimeType", "type"), ("description", "description")] {
                let v = str_of(b, k);
                if !v.is_empty() {
                    t.push_str(&format!(", {label}: {v}"));
                }
            }
            t.push(']');
            text(t)
        }
        "resource" => {
            let r = b.get("resource").unwrap_or(&Value::Null);
            let (uri, mime) = (str_of(r, "uri"), str_of(r, "mimeType"));
            let head = if mime.is_empty() { format!("[resource {uri}]") } else { format!("[resource {uri}, type: {mime}]") };
            match r.get("text").and_then(Value::as_str) {
                Some(t) => text(format!("{head}\n{t}")),
                None => text(format!("{head} (binary, {} bytes of base64)", str_of(r, "blob").len())),
            }
        }
        other => text(format!("[unsupported MCP content block {other:?}]")),
    }
}

/// The text of a `prompts/get` result: every message's text, in order.
pub fn prompt_text(result: &Value) -> Result<String, String> {
    let Some(Value::Array(messages)) = result.get("messages") else {
        return Err("the prompt result has no `messages` array".into());
    };
    let mut parts = Vec::new();
    for m in messages {
        let blocks: Vec<&Value> = match m.get("content") {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(c @ Value::Object(_)) => vec![c],
            _ => Vec::new(),
        };
        for c in blocks {
            let b = block(c);
            if let Some(t) = b.get("text").and_then(Value::as_str) {
                parts.push(t.to_string());
            }
        }
    }
    Ok(parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_map() {
        let r = json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "audio", "mimeType": "audio/wav", "data": "AAAAAAAA"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "text": "body"}}
        ], "isError": true, "structuredContent": {"ok": 1}});
        let m = tool_result(r).unwrap();
        assert!(m.is_error);
        assert_eq!(m.structured, Some(json!({"ok": 1})));
        assert_eq!(m.content[0], json!({"type": "text", "text": "hi"}));
        assert_eq!(m.content[1], json!({"type": "image", "mime_type": "image/png", "data": "AAAA"}));
        assert!(m.content[2]["text"].as_str().unwrap().starts_with("[audio audio/wav"));
        assert_eq!(m.content[3]["text"], "[resource link file:///a, name: a]");
        assert_eq!(m.content[4]["text"], "[resource file:///b, type: text/plain]\nbody");
        assert!(tool_result(json!([1])).is_err());
        let only = tool_result(json!({"content": [], "structuredContent": {"t": 2}})).unwrap();
        assert_eq!(only.content[0]["text"], "{\"t\":2}");
    }

    #[test]
    fn prompt_messages_join() {
        let r = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "one"}},
            {"role": "assistant", "content": [{"type": "text", "text": "two"}]}
        ]});
        assert_eq!(prompt_text(&r).unwrap(), "one\n\ntwo");
    }
}
