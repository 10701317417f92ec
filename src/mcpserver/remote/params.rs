//! `x-mcp-header` (docs/protocol.md §8.5 rule 7; the 2026-07-28 transport,
//! SEP-2243): a tool's `inputSchema` may mark primitive properties, at any
//! depth, with `x-mcp-header: NAME`; each such argument of a `tools/call`
//! is mirrored as the header `Mcp-Param-NAME`. A tool whose marks break the
//! rules (a name that is not an HTTP token, twice the same name, a mark on
//! a property that is not a string, an integer or a boolean) is left out
//! of the list, saying why. Values that are not plain header text are sent
//! as `=?base64?...?=`, as `Mcp-Name` is.

use serde_json::Value;
use std::collections::HashMap;

/// The marks of one tool: (header name, path of the argument).
pub(super) type Marks = Vec<(String, Vec<String>)>;

/// The marks of every tool listed, by tool name.
#[derive(Default)]
pub(super) struct Known(HashMap<String, Marks>);

impl Known {
    /// Takes in a `tools/list` answer (a message with `result.tools`): the
    /// marks of its tools are kept; tools whose marks break the rules are
    /// taken out. The message to hand on (rewritten only when one was
    /// taken out), and a line for the log per tool taken out.
    pub fn listed(&mut self, msg: &[u8]) -> (Option<Vec<u8>>, Vec<String>) {
        if !msg.windows(7).any(|w| w == b"\"tools\"") {
            return (None, Vec::new());
        }
        let Ok(mut v) = serde_json::from_slice::<Value>(msg) else { return (None, Vec::new()) };
        let Some(tools) = v.pointer_mut("/result/tools").and_then(Value::as_array_mut) else { return (None, Vec::new()) };
        let mut said = Vec::new();
        let before = tools.len();
        tools.retain(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            match t.get("inputSchema").map(scan).unwrap_or(Ok(Vec::new())) {
                Ok(marks) => {
                    if marks.is_empty() {
                        self.0.remove(&name);
                    } else {
                        self.0.insert(name, marks);
                    }
                    true
                }
                Err(why) => {
                    said.push(format!("left out the tool {}: its x-mcp-header {why}", crate::text::one_line(&name)));
                    self.0.remove(&name);
                    false
                }
            }
        });
        if tools.len() == before {
            return (None, said);
        }
        (serde_json::to_vec(&v).ok(), said)
    }

    /// The `Mcp-Param-NAME` headers of a `tools/call` of `tool` with
    /// `arguments`; none for an absent or null argument.
    pub fn headers(&self, tool: &str, arguments: Option<&Value>) -> Vec<(String, String)> {
        let (Some(marks), Some(args)) = (self.0.get(tool), arguments) else { return Vec::new() };
        let mut out = Vec::new();
        for (name, path) in marks {
            let mut at = Some(args);
            for key in path {
                at = at.and_then(|v| v.get(key));
            }
            if let Some(value) = at.and_then(header_value) {
                out.push((format!("Mcp-Param-{name}"), value));
            }
        }
        out
    }
}

/// The marks of an `inputSchema`, or why they break the rules.
pub(super) fn scan(schema: &Value) -> Result<Marks, String> {
    let mut marks = Vec::new();
    walk(schema, &mut Vec::new(), &mut marks)?;
    Ok(marks)
}

fn walk(schema: &Value, path: &mut Vec<String>, marks: &mut Marks) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (key, sub) in props {
        path.push(key.clone());
        if let Some(mark) = sub.get("x-mcp-header") {
            let name = mark.as_str().ok_or_else(|| format!("on {} is not a string", path.join(".")))?;
            if name.is_empty() || !name.bytes().all(tchar) {
                return Err(format!("{:?} is not an HTTP header name", crate::text::one_line(name)));
            }
            if marks.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                return Err(format!("{name:?} is given twice"));
            }
            let ty = sub.get("type").and_then(Value::as_str).unwrap_or("");
            if !matches!(ty, "string" | "integer" | "boolean") {
                return Err(format!("{name:?} marks {}, which is not a string, an integer or a boolean", path.join(".")));
            }
            marks.push((name.to_string(), path.clone()));
        }
        walk(sub, path, marks)?;
        path.pop();
    }
    Ok(())
}

/// RFC 9110's `tchar`.
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// An argument as a header value: a string (encoded when it must be), an
/// integer within JavaScript's safe range, a boolean; anything else none.
fn header_value(v: &Value) -> Option<String> {
    const SAFE: u64 = (1 << 53) - 1;
    match v {
        Value::String(s) => Some(encode(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.as_u64().is_some_and(|u| u <= SAFE) || n.as_i64().is_some_and(|i| i.unsigned_abs() <= SAFE) => Some(n.to_string()),
        _ => None,
    }
}

/// `text` as a header value: as it is when it is plain printable ASCII
/// with no space at either end and does not look encoded, else
/// `=?base64?BASE64?=` of its UTF-8.
pub(super) fn encode(text: &str) -> String {
    let plain = text.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) && text.trim() == text && !(text.starts_with("=?base64?") && text.ends_with("?="));
    if plain {
        return text.to_string();
    }
    format!("=?base64?{}?=", base64(text.as_bytes()))
}

/// Base64 with padding (RFC 4648 §4).
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(if i <= chunk.len() { A[((n >> (18 - 6 * i)) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marks_values_and_encoding() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "Count"}}},
            "plain": {"type": "string"}}});
        let mut marks = scan(&schema).unwrap();
        marks.sort();
        assert_eq!(marks, vec![("Count".to_string(), vec!["opts".to_string(), "n".to_string()]), ("Region".to_string(), vec!["region".to_string()])]);
        assert!(scan(&json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}})).is_err());
        assert!(scan(&json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}})).is_err());
        assert!(scan(&json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}})).is_err());
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("日本"), "=?base64?5pel5pys?=");
        assert_eq!(encode(" x"), "=?base64?IHg=?=");
        assert_eq!(encode("=?base64?abc?="), "=?base64?PT9iYXNlNjQ/YWJjPz0=?=");
        assert_eq!(header_value(&json!(1.5)), None);
        assert_eq!(header_value(&json!(-42)).as_deref(), Some("-42"));
        assert_eq!(header_value(&json!(9007199254740993u64)), None);
    }
}
