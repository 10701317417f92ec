//! A message to or from a remote server, as the link's threads handle
//! it: the headers every request carries, an error of the HTTP client in words
//! that hold no secret, a request failed, and a message from the server
//! handed to the edge.

use super::peek::Peek;
use super::shared::Shared;
use crate::child::Dialect;
use serde_json::Value;

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
        match t.header(&sh.oauth_agent) {
            Ok(h) => b = b.header("Authorization", h),
            Err(why) => {
                sh.say(&format!("the access token could not be refreshed: {why}"));
                return Err(crate::mcpserver::login::message(&sh.name));
            }
        }
    }
    Ok(b)
}

/// An error of the client in words that hold no secret; a TLS or
/// certificate error names the server's origin.
pub(super) fn describe(sh: &Shared, e: &ureq::Error) -> String {
    let text = match e {
        ureq::Error::Io(io) => format!("network error: {io}"),
        ureq::Error::Timeout(t) => format!("no answer in time ({t})"),
        other => format!("{}: {other}", sh.origin),
    };
    // Should a message of the client ever quote the url or a header, the
    // expanded values are taken out.
    sh.scrub(&text)
}

/// A request got no answer (`why`): the edge fails what asked.
pub(super) fn failed(sh: &Shared, peek: &Peek, why: &str) {
    if sh.closed() {
        return;
    }
    let why = sh.scrub(why);
    match (peek.request(), peek.id.as_ref().and_then(Value::as_u64)) {
        (true, Some(id)) => sh.edge.unanswered(id, &why),
        _ => sh.say(&format!("{}: {why}", what(peek))),
    }
}

/// A message from the server, to the edge (the version `initialize`
/// settled on is kept for the headers of what follows; a modern server's
/// tool list is checked for its `x-mcp-header` marks).
pub(super) fn incoming(sh: &Shared, data: &[u8]) {
    if sh.state().modern {
        let (rewritten, said) = sh.marks.lock().unwrap_or_else(|e| e.into_inner()).listed(data);
        for line in said {
            sh.say(&line);
        }
        if let Some(r) = rewritten {
            return sh.edge.incoming(&r);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::super::params::encode as header_value;

    #[test]
    fn a_header_value_is_plain_or_base64_as_the_transport_says() {
        assert_eq!(header_value("echo"), "echo");
        assert_eq!(header_value("grüße"), "=?base64?Z3LDvMOfZQ==?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(header_value("=?base64?eA==?="), "=?base64?PT9iYXNlNjQ/ZUE9PT89?=");
        assert_eq!(header_value("a\nb"), "=?base64?YQpi?=");
    }
}
