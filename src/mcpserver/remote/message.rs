//! A message to or from a remote server, as the link's threads handle
//! it: what the link needs to know of a message it posts ([`Peek`]), the
//! headers every request carries, an error of the HTTP client in words
//! that hold no secret, a request failed, and a message from the server
//! handed to the edge.

use super::oauth;
use super::shared::Shared;
use crate::child::Dialect;
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
    pub answer: bool,
}

#[derive(serde::Deserialize)]
struct Raw {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    params: Option<RawParams>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct RawParams {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    uri: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<serde_json::Map<String, Value>>,
}

impl Peek {
    pub fn of(msg: &[u8]) -> Peek {
        let Ok(r) = serde_json::from_slice::<Raw>(msg) else { return Peek::default() };
        let (mut pv, mut name) = (None, None);
        if let Some(p) = r.params {
            pv = p.meta.as_ref().and_then(|m| m.get(PV)).and_then(Value::as_str).map(str::to_string);
            name = p.name.or(p.uri).and_then(|v| v.as_str().map(str::to_string));
        }
        let answer = r.method.is_none() && (r.result.is_some() || r.error.is_some());
        Peek { method: r.method, id: r.id, pv, name, answer }
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

/// The message as logs name it.
pub(super) fn what(peek: &Peek) -> String {
    match (&peek.method, peek.answer) {
        (Some(m), _) => m.clone(),
        (None, true) => "an answer to the server".into(),
        _ => "a message".into(),
    }
}

/// The entry's headers, and the login's `Authorization` in place of any
/// other (refreshed first when about to expire).
pub(super) fn with_headers(sh: &Shared, mut b: ureq::http::request::Builder) -> Result<ureq::http::request::Builder, String> {
    for (k, v) in &sh.headers {
        if sh.tokens.is_none() || !k.eq_ignore_ascii_case("authorization") {
            b = b.header(k.as_str(), v.as_str());
        }
    }
    if let Some(t) = &sh.tokens {
        match t.header(&sh.agent) {
            Ok(h) => b = b.header("Authorization", h),
            Err(why) => {
                sh.log.line(&format!("the access token could not be refreshed: {why}"));
                return Err(oauth::needs_login(&sh.name));
            }
        }
    }
    Ok(b)
}

/// An error of the client in words that hold no header value; a TLS or
/// certificate error names the server's origin.
pub(super) fn describe(sh: &Shared, e: &ureq::Error) -> String {
    let text = match e {
        ureq::Error::Io(io) => format!("network error: {io}"),
        ureq::Error::Timeout(t) => format!("no answer in time ({t})"),
        other => format!("{}: {other}", sh.origin),
    };
    // Should a message of the client ever quote the url or a header, the
    // expanded values are taken out.
    let mut text = text.replace(sh.url.as_str(), &sh.shown);
    for (_, v) in &sh.headers {
        for secret in std::iter::once(v.as_str()).chain(v.split_whitespace().filter(|w| w.len() >= 8)) {
            if secret.len() >= 4 {
                text = text.replace(secret, "(header value)");
            }
        }
    }
    if let Some(t) = &sh.tokens {
        text = t.scrub(&text);
    }
    text
}

/// A request got no answer (`why`): the edge fails what asked.
pub(super) fn failed(sh: &Shared, peek: &Peek, why: &str) {
    if sh.closed() {
        return;
    }
    match (peek.request(), peek.id.as_ref().and_then(Value::as_u64)) {
        (true, Some(id)) => sh.edge.unanswered(id, why),
        _ => sh.log.line(&format!("{}: {why}", what(peek))),
    }
}

/// A message from the server, to the edge (the version `initialize`
/// settled on is kept for the headers of what follows).
pub(super) fn incoming(sh: &Shared, data: &[u8]) {
    let init = {
        let st = sh.state();
        st.init_id.filter(|_| st.version.is_none())
    };
    if let Some(id) = init {
        if let Some(v) = version_of(data, &Value::from(id)) {
            sh.state().version = Some(v);
        }
    }
    sh.edge.incoming(data);
}

/// The `protocolVersion` of an `initialize` answer with id `id`.
fn version_of(data: &[u8], id: &Value) -> Option<String> {
    let v: Value = serde_json::from_slice(data).ok()?;
    if v.get("id") != Some(id) {
        return None;
    }
    v.pointer("/result/protocolVersion").and_then(Value::as_str).map(str::to_string)
}
