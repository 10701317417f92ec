//! Lines to frames and back: the decoder that never panics and says
//! exactly what was wrong with a line, its fast path for the frames of
//! every call, the one-line encoding, and the `id` at the head of a line
//! too long to keep.

use super::*;
use serde::de;
use std::fmt;

/// Frames that can be decoded from a line.
pub trait Frame: DeserializeOwned + Serialize {
    /// True for the catch-all variant of an unknown `type`.
    fn is_unknown(&self) -> bool;

    /// The frames of every call (requests and replies), decoded straight
    /// into their fields: serde's tagged enums first copy the whole frame
    /// into a buffer of their own. `None` (another type, or anything wrong)
    /// leaves the line to the general decoder, which says what is wrong.
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
struct FastCommandResponse {
    #[serde(rename = "type")]
    _ty: de::IgnoredAny,
    #[serde(deserialize_with = "id_string")]
    id: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    action: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    insert: Option<String>,
    #[serde(default)]
    display: Option<String>,
    #[serde(default)]
    open_panel: Option<Panel>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    tool_args: Option<Value>,
    #[serde(default)]
    error: Option<String>,
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

#[derive(Deserialize)]
struct FastCommandInvoked {
    #[serde(rename = "type")]
    _ty: de::IgnoredAny,
    #[serde(deserialize_with = "id_string")]
    id: String,
    name: String,
    #[serde(default, deserialize_with = "lenient")]
    args: String,
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
            b"command_response" => {
                let f: FastCommandResponse = serde_json::from_slice(line).ok()?;
                ExtFrame::CommandResponse(CommandResponse {
                    id: f.id,
                    action: f.action,
                    prompt: f.prompt,
                    insert: f.insert,
                    display: f.display,
                    open_panel: f.open_panel,
                    error: f.error,
                    tool_name: f.tool_name,
                    tool_args: f.tool_args,
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
            b"command_invoked" => {
                let f: FastCommandInvoked = serde_json::from_slice(line).ok()?;
                HostFrame::CommandInvoked { id: f.id, name: f.name, args: f.args }
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
    // Serde's tagged enums also read a sequence (`["ready"]`, fields by
    // position); only a JSON object is a frame.
    if line.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) != Some(&b'{') {
        return classify(line, None);
    }
    if let Some(f) = F::decode_fast(line) {
        return Ok(f);
    }
    let err = match serde_json::from_slice::<F>(line) {
        Ok(f) if !f.is_unknown() => return Ok(f),
        Ok(_) => None,
        Err(e) => Some(e),
    };
    classify(line, err)
}

#[derive(Deserialize)]
struct Probe {
    #[serde(rename = "type")]
    ty: Option<Value>,
    id: Option<Value>,
}

#[cold]
fn classify<F>(line: &[u8], err: Option<serde_json::Error>) -> Result<F, DecodeError> {
    let v: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return Err(DecodeError::NotJson(e.to_string())),
    };
    if !v.is_object() {
        return Err(DecodeError::NotObject);
    }
    let probe: Probe = match serde_json::from_value(v) {
        Ok(p) => p,
        Err(_) => return Err(DecodeError::NotObject),
    };
    let Some(Value::String(ty)) = probe.ty else {
        return Err(DecodeError::NoType);
    };
    match err {
        None => Err(DecodeError::UnknownType(ty)),
        Some(e) => {
            let id = match probe.id {
                Some(Value::String(s)) => Some(s),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            };
            Err(DecodeError::BadFields { ty, id, msg: e.to_string() })
        }
    }
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
