//! Lines to frames and back: the decoder that never panics and says
//! exactly what was wrong with a line, its fast path for the frames of
//! every call, the one-line encoding, and the `id` at the head of a line
//! too long to keep.

use super::members::{FromMembers, Members, MembersSeed, Val};
use serde::de::DeserializeSeed;
use super::frames::*;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde::de;
use std::fmt;

/// Frames that can be decoded from a line.
pub trait Frame: Serialize + Sized + FromMembers {
    /// True for the catch-all variant of an unknown `type`.
    fn is_unknown(&self) -> bool;

    /// The frames of the serve path's calls (`tool_call`, `tool_result`,
    /// `event_intercept_response`), decoded straight into their fields:
    /// about a third faster than the general decoder, which first collects
    /// every member. `None` (another type, or anything wrong) leaves the
    /// line to the general decoder, which says what is wrong.
    fn decode_fast(_line: &[u8]) -> Option<Self> {
        None
    }
}

/// The `type` of a frame that starts with it (`{"type":"...",`, spaces
/// allowed, no escapes): how the SDKs write frames. Looking costs next to
/// nothing; a full pass just to find the type would cost about as much as
/// what the fast path saves.
fn leading_type(line: &[u8]) -> Option<&[u8]> {
    let ws = |s: &[u8]| -> usize { s.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count() };
    let mut rest = line;
    for token in [&b"{"[..], b"\"type\"", b":", b"\""] {
        rest = rest[ws(rest)..].strip_prefix(token)?;
    }
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then_some(&rest[..end])
}

// The hot frames with their `type` as a field of their own, so that a
// second `type` key is an error here as it is for the tagged enum. Field
// rules as in the public structs (the tests compare both paths).

#[derive(Deserialize)]
struct FastToolResult {
    #[serde(rename = "type")]
    _ty: de::IgnoredAny,
    #[serde(deserialize_with = "id_string")]
    id: String,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    structured_content: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    activate_tools: Vec<String>,
}

#[derive(Deserialize)]
struct FastInterceptResponse {
    #[serde(rename = "type")]
    _ty: de::IgnoredAny,
    #[serde(deserialize_with = "id_string")]
    id: String,
    #[serde(default)]
    block: bool,
    #[serde(default, deserialize_with = "lenient")]
    reason: String,
    #[serde(default)]
    modified_args: Option<Value>,
    #[serde(default)]
    replace_text: Option<String>,
    #[serde(default)]
    system_prompt: Option<Value>,
}

#[derive(Deserialize)]
struct FastToolCall {
    #[serde(rename = "type")]
    _ty: de::IgnoredAny,
    #[serde(deserialize_with = "id_string")]
    id: String,
    name: String,
    #[serde(default = "empty_object")]
    args: Value,
    #[serde(default)]
    operation_key: Option<Value>,
    #[serde(default)]
    reconcile: Option<Value>,
}

impl Frame for ExtFrame {
    fn is_unknown(&self) -> bool {
        matches!(self, ExtFrame::Unknown)
    }

    fn decode_fast(line: &[u8]) -> Option<ExtFrame> {
        Some(match leading_type(line)? {
            b"tool_result" => {
                let f: FastToolResult = serde_json::from_slice(line).ok()?;
                ExtFrame::ToolResult(ToolResult {
                    id: f.id,
                    content: f.content,
                    is_error: f.is_error,
                    structured_content: f.structured_content,
                    activate_tools: f.activate_tools,
                })
            }
            b"event_intercept_response" => {
                let f: FastInterceptResponse = serde_json::from_slice(line).ok()?;
                ExtFrame::EventInterceptResponse(InterceptResponse {
                    id: f.id,
                    block: f.block,
                    reason: f.reason,
                    modified_args: f.modified_args,
                    replace_text: f.replace_text,
                    system_prompt: f.system_prompt,
                })
            }
            _ => return None,
        })
    }
}

impl Frame for HostFrame {
    fn is_unknown(&self) -> bool {
        matches!(self, HostFrame::Unknown)
    }

    fn decode_fast(line: &[u8]) -> Option<HostFrame> {
        Some(match leading_type(line)? {
            b"tool_call" => {
                let f: FastToolCall = serde_json::from_slice(line).ok()?;
                HostFrame::ToolCall { id: f.id, name: f.name, args: f.args, operation_key: f.operation_key, reconcile: f.reconcile }
            }
            _ => return None,
        })
    }
}

/// Why a line is not a usable frame.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// Not valid JSON (or not UTF-8).
    NotJson(String),
    /// Valid JSON, but not an object.
    NotObject,
    /// No string `type`.
    NoType,
    /// A `type` this side does not know.
    UnknownType(String),
    /// A known `type` with missing or mistyped fields; `id` is set when the
    /// frame carried a usable one (a malformed reply to that request).
    BadFields {
        /// The frame's `type`.
        ty: String,
        /// The frame's `id`, when it had a usable one.
        id: Option<String>,
        /// What was missing or mistyped.
        msg: String,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotJson(e) => write!(f, "not JSON: {e}"),
            DecodeError::NotObject => write!(f, "not a JSON object"),
            DecodeError::NoType => write!(f, "no string `type` field"),
            DecodeError::UnknownType(t) => write!(f, "unknown frame type {t:?}"),
            DecodeError::BadFields { ty, msg, .. } => write!(f, "malformed {ty:?} frame: {msg}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one line (without its `\n`; a trailing `\r` is accepted).
pub fn decode<F: Frame>(line: &[u8]) -> Result<F, DecodeError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Only a JSON object is a frame (serde's derives read a sequence too,
    // fields by position: `["ready"]` is not a frame).
    if line.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) != Some(&b'{') {
        return Err(not_an_object(line));
    }
    if let Some(f) = F::decode_fast(line) {
        return Ok(f);
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let members = MembersSeed(F::reads).deserialize(&mut de).and_then(|m| de.end().map(|()| m));
    let Members(mut m) = members.map_err(|e| DecodeError::NotJson(e.to_string()))?;
    let (mut tags, mut last) = (0, 0);
    for (i, (k, _)) in m.iter().enumerate() {
        if k == "type" {
            tags += 1;
            last = i;
        }
    }
    // The last `type` and `id` name a malformed frame, as a `Value` keeps them.
    let id = m.iter().rev().find(|(k, _)| k == "id").and_then(|(_, v)| match v {
        Val::Json(Value::String(s)) => Some(s.clone()),
        Val::Json(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    });
    let ty = match (tags, m.get(last)) {
        (1.., Some((_, Val::Json(Value::String(ty))))) => ty.clone(),
        _ => return Err(DecodeError::NoType),
    };
    if tags > 1 {
        return Err(DecodeError::BadFields { ty, id, msg: tag_error(line) });
    }
    m.remove(last);
    match F::from_members(&ty, m) {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err(DecodeError::UnknownType(ty)),
        Err(msg) => Err(DecodeError::BadFields { ty, id, msg }),
    }
}

/// Why a line that does not start with `{` is not a frame.
#[cold]
fn not_an_object(line: &[u8]) -> DecodeError {
    match serde_json::from_slice::<Value>(line) {
        Ok(_) => DecodeError::NotObject,
        Err(e) => DecodeError::NotJson(e.to_string()),
    }
}

/// serde's words, with the position, for a frame with two `type`s or a
/// first `type` that is not a string: its tagged enums stop at that key.
#[cold]
fn tag_error(line: &[u8]) -> String {
    #[derive(Deserialize)]
    struct TagOnce {
        #[serde(rename = "type")]
        _ty: TagName,
    }
    struct TagName;
    impl<'de> Deserialize<'de> for TagName {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TagName, D::Error> {
            d.deserialize_identifier(TagName)
        }
    }
    impl<'de> de::Visitor<'de> for TagName {
        type Value = TagName;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("variant identifier")
        }
        fn visit_str<E>(self, _: &str) -> Result<TagName, E> {
            Ok(TagName)
        }
    }
    serde_json::from_slice::<TagOnce>(line).err().map(|e| e.to_string()).unwrap_or_default()
}

/// Encodes a frame as one line, `\n` included.
pub fn encode<F: Serialize>(frame: &F) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    // Serializing these types to a Vec cannot fail: every map key is a string.
    if serde_json::to_writer(&mut buf, frame).is_err() {
        buf.clear();
        buf.extend_from_slice(b"{}");
    }
    buf.push(b'\n');
    buf
}

/// The `id` of the top-level object that `head` begins, read from as much
/// of it as there is: for a reply line over the cap, of which only the head
/// was kept (docs/protocol.md §3 rule 9). A string id as is, a number as its
/// digits; `None` when the head holds no top-level `id`.
pub fn head_id(head: &[u8]) -> Option<String> {
    let mut s = Scan { b: head, i: 0 };
    s.ws();
    s.eat(b'{')?;
    loop {
        s.ws();
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        if key == b"id" {
            return match s.peek()? {
                b'"' => String::from_utf8(s.string()?.to_vec()).ok(),
                b'0'..=b'9' => {
                    let start = s.i;
                    while s.peek().is_some_and(|c| c.is_ascii_digit()) {
                        s.i += 1;
                    }
                    s.peek()?;
                    String::from_utf8(head[start..s.i].to_vec()).ok()
                }
                _ => None,
            };
        }
        s.skip_value()?;
        s.ws();
        s.eat(b',')?;
    }
}

/// A forward-only look at JSON bytes, enough to skip values.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string's raw bytes (escapes left as they are).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i - 1]);
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.i += 1;
                }
                b',' | b'}' | b']' if depth == 0 => return Some(()),
                _ => self.i += 1,
            }
            if depth == 0 && matches!(self.peek(), Some(b',' | b'}')) {
                return Some(());
            }
        }
    }
}

