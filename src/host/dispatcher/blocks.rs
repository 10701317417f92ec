//! Content blocks of tool results as the current revision treats them
//! (docs/protocol.md §6.2): empty text dropped, unknown types turned into a
//! note, images checked, empty content made explicit; and the bound on
//! what goes back to an extension that called a tool (§6.1).

use serde_json::{json, Value};

/// Text and base64 bytes that go back to an extension's `call_tool`.
pub(super) const RESULT_BYTES: usize = 256 * 1024;
/// Blocks that go back to an extension's `call_tool`.
pub(super) const RESULT_BLOCKS: usize = 128;

/// The blocks of a result as the host passes them on, and whether the
/// result is an error (an image with invalid base64 makes it one).
pub(super) fn normalize(content: Vec<Value>, mut is_error: bool) -> (Vec<Value>, bool) {
    let mut out = Vec::with_capacity(content.len());
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => match block.get("text").and_then(Value::as_str) {
                Some("") => {}
                Some(_) => out.push(block),
                None => out.push(json!({"type": "text", "text": "(a text block without text)"})),
            },
            Some("image") => {
                let data = block.get("data").and_then(Value::as_str).unwrap_or("");
                if base64_ok(data) {
                    out.push(block);
                } else {
                    let mime = block.get("mime_type").and_then(Value::as_str).unwrap_or("?");
                    is_error = true;
                    out.push(json!({"type": "text", "text": format!("image block ({mime}) has invalid base64 data")}));
                }
            }
            Some(other) => out.push(json!({"type": "text", "text": format!("(unsupported content block of type {other:?})")})),
            None => out.push(json!({"type": "text", "text": "(a content block without a type)"})),
        }
    }
    if out.is_empty() {
        out.push(json!({"type": "text", "text": "(extension returned no content)"}));
    }
    (out, is_error)
}

/// `content` cut to [`RESULT_BLOCKS`] blocks and [`RESULT_BYTES`] of text
/// and image data; true when something was cut.
pub(super) fn bound(content: Vec<Value>) -> (Vec<Value>, bool) {
    let mut left = RESULT_BYTES;
    let mut truncated = content.len() > RESULT_BLOCKS;
    let mut out = Vec::new();
    for mut block in content.into_iter().take(RESULT_BLOCKS) {
        let key = if block.get("type").and_then(Value::as_str) == Some("image") { "data" } else { "text" };
        let Some(text) = block.get(key).and_then(Value::as_str) else {
            out.push(block);
            continue;
        };
        if left == 0 {
            truncated = true;
            break;
        }
        if text.len() > left {
            if key == "data" {
                truncated = true;
                break;
            }
            let mut end = left;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let cut = text[..end].to_string();
            block[key] = Value::String(cut);
            truncated = true;
            out.push(block);
            break;
        }
        left -= text.len();
        out.push(block);
    }
    (out, truncated)
}

fn base64_ok(data: &str) -> bool {
    let b = data.as_bytes();
    if b.is_empty() || b.len() % 4 != 0 {
        return false;
    }
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    pad <= 2
        && b[..b.len() - pad].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

#[cfg(test)]
mod tests {
    use super::{bound, normalize, RESULT_BLOCKS, RESULT_BYTES};
    use serde_json::{json, Value};

    #[test]
    fn the_block_rules() {
        let (c, e) = normalize(vec![json!({"type": "text", "text": ""}), json!({"type": "text", "text": "a"})], false);
        assert_eq!((c, e), (vec![json!({"type": "text", "text": "a"})], false));
        let (c, _) = normalize(vec![], false);
        assert_eq!(c, vec![json!({"type": "text", "text": "(extension returned no content)"})]);
        let (c, e) = normalize(vec![json!({"type": "image", "mime_type": "image/png", "data": "@@@"})], false);
        assert!(e && c[0]["text"].as_str().unwrap().contains("invalid base64"));
        let (c, e) = normalize(vec![json!({"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="})], false);
        assert!(!e && c[0]["type"] == "image");
        let (c, _) = normalize(vec![json!({"type": "audio"})], false);
        assert!(c[0]["text"].as_str().unwrap().contains("audio"));
        let big: Vec<Value> = (0..200).map(|i| json!({"type": "text", "text": format!("{i}")})).collect();
        let (c, t) = bound(big);
        assert!(t && c.len() == RESULT_BLOCKS);
        let (c, t) = bound(vec![json!({"type": "text", "text": "x".repeat(RESULT_BYTES + 10)})]);
        assert!(t && c[0]["text"].as_str().unwrap().len() == RESULT_BYTES);
    }
}
