//! What the link needs to know of a message it posts: when the edge
//! writes it, its lane and what a cancel names ([`Kind`], read without
//! building its parameters); when it is posted, its method, id and the
//! parameters the transport's headers carry ([`Peek`]).

use serde_json::Value;

/// The `_meta` key of a 2026-07-28 request's protocol version.
const PV: &str = "io.modelcontextprotocol/protocolVersion";

/// What the link needs to know of a message it posts.
#[derive(Default)]
pub(super) struct Peek {
    pub method: Option<String>,
    pub id: Option<Value>,
    /// A 2026-07-28 request's protocol version.
    pub pv: Option<String>,
    /// `params.name` or `params.uri`, for `Mcp-Name`.
    pub name: Option<String>,
    /// A `tools/call`'s `params.arguments`, for `Mcp-Param-NAME`.
    pub arguments: Option<Value>,
    pub answer: bool,
}

/// A JSON-RPC message read for its envelope and the `params` of type `P`
/// alone (the rest is skipped unread).
#[derive(serde::Deserialize)]
struct Envelope<P> {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    // Absent, an `Option` field is `None` (no `P: Default` asked).
    params: Option<P>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

impl<P> Envelope<P> {
    /// An answer: a result or an error, and no method.
    fn answer(&self) -> bool {
        self.method.is_none() && (self.result.is_some() || self.error.is_some())
    }
}

#[derive(serde::Deserialize)]
struct RawParams {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    uri: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<serde_json::Map<String, Value>>,
}

impl Peek {
    pub fn of(msg: &[u8]) -> Peek {
        let Ok(r) = serde_json::from_slice::<Envelope<RawParams>>(msg) else { return Peek::default() };
        let answer = r.answer();
        let (mut pv, mut name, mut arguments) = (None, None, None);
        if let Some(p) = r.params {
            pv = p.meta.as_ref().and_then(|m| m.get(PV)).and_then(Value::as_str).map(str::to_string);
            name = p.name.or(p.uri).and_then(|v| v.as_str().map(str::to_string));
            arguments = p.arguments.filter(|_| r.method.as_deref() == Some("tools/call"));
        }
        Peek { method: r.method, id: r.id, pv, name, arguments, answer }
    }

    /// A request: an answer is owed to it.
    pub fn request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }

    pub(super) fn is(&self, method: &str) -> bool {
        self.method.as_deref() == Some(method)
    }

    /// Whether `data` (a message from the server) answers this request.
    pub fn answered_by(&self, data: &[u8]) -> bool {
        let p = Peek::of(data);
        p.answer && p.id.is_some() && p.id == self.id
    }
}

/// The key of a request's id among the calls in flight.
pub(super) fn key(id: &Value) -> String {
    id.to_string()
}

/// What the link's `send` needs of a message.
#[derive(Default)]
pub(super) struct Kind {
    /// Posted by the threads of notifications: a notification other than
    /// `notifications/initialized` (which the requests after it follow), or
    /// an answer to the server.
    pub note: bool,
    /// A request's id.
    pub request: Option<Value>,
    /// A `notifications/cancelled`'s `requestId`.
    pub cancels: Option<Value>,
}

#[derive(serde::Deserialize)]
struct KindParams {
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
}

impl Kind {
    pub fn of(msg: &[u8]) -> Kind {
        let Ok(r) = serde_json::from_slice::<Envelope<KindParams>>(msg) else { return Kind::default() };
        let answer = r.answer();
        let cancels = r.params.and_then(|p| p.request_id).filter(|_| r.method.as_deref() == Some("notifications/cancelled"));
        match (r.method, r.id) {
            (Some(_), Some(id)) => Kind { request: Some(id), ..Kind::default() },
            (Some(m), None) => Kind { note: m != "notifications/initialized", cancels, ..Kind::default() },
            (None, _) => Kind { note: answer, ..Kind::default() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn a_message_is_put_in_its_lane_and_a_cancel_names_its_request() {
        let k = Kind::of(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"requestId":1}}}"#);
        assert_eq!((k.note, k.request, k.cancels), (false, Some(7.into()), None));
        let k = Kind::of(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"r"}}"#);
        assert_eq!((k.note, k.request, k.cancels), (true, None, Some(7.into())));
        let k = Kind::of(br#"{"jsonrpc":"2.0","id":"p1","result":{}}"#);
        assert_eq!((k.note, k.request, k.cancels), (true, None, None));
        let k = Kind::of(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!((k.note, k.request, k.cancels), (false, None, None));
    }
}
