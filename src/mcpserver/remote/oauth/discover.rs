//! Finding where to log in (docs/protocol.md §8.5 rule 10): the
//! `WWW-Authenticate` challenge, the protected resource metadata (RFC
//! 9728), the authorization server's metadata (RFC 8414, then OpenID
//! Connect discovery), each checked as the rule says; and the few HTTP
//! exchanges OAuth needs (JSON by GET, a form or JSON by POST).

use super::super::address;
use super::super::proxy;
use serde_json::Value;
use std::time::Duration;

/// What a server answering 401 asked for.
#[derive(Debug, Default, Clone)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// The parameters of a `Bearer` challenge; none when the header names no
/// `Bearer` scheme.
pub fn challenge(header: &str) -> Option<Challenge> {
    let at = header.to_ascii_lowercase().find("bearer")?;
    let mut rest = &header[at + 6..];
    let mut c = Challenge::default();
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        rest = &rest[eq + 1..];
        let value;
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').unwrap_or(r.len());
            value = r[..end].to_string();
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_string();
            rest = &rest[end..];
        }
        match key.as_str() {
            "resource_metadata" => c.resource_metadata = Some(value),
            "scope" => c.scope = Some(value),
            "error" => c.error = Some(value),
            _ => {}
        }
    }
    Some(c)
}

/// What login needs to know of the authorization server.
#[derive(Debug, Clone)]
pub struct Found {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    /// From the challenge, else the resource metadata's `scopes_supported`.
    pub scope: Option<String>,
}

/// `url` as the HTTP client reads it, without a trailing `/`, its scheme
/// and host lower-cased, for comparing; none when it is not an http(s) url.
pub fn canonical(url: &str) -> Option<String> {
    let origin = address::origin(url)?;
    let path = address::path(url).unwrap_or_default();
    let query = address::query(url).map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("{origin}{}{query}", path.trim_end_matches('/')))
}

/// `origin/.well-known/WHAT` with the url's path after it (`inserted`),
/// or at the root.
fn well_known(url: &str, what: &str, inserted: bool) -> Result<String, String> {
    let origin = address::origin(url).ok_or_else(|| format!("{} is not an http:// or https:// url", address::shown(url)))?;
    let path = address::path(url).unwrap_or_default();
    if inserted {
        Ok(format!("{origin}/.well-known/{what}{}", path.trim_end_matches('/')))
    } else {
        Ok(format!("{origin}/.well-known/{what}"))
    }
}

fn has_path(url: &str) -> bool {
    !address::path(url).unwrap_or_default().trim_matches('/').is_empty()
}

/// OAuth over `http://` is for a loopback host only; the host judged is
/// the one the HTTP client connects to.
pub fn allowed(url: &str) -> Result<(), String> {
    let Some(u) = address::parse(url) else {
        return Err(format!("{} is not an http:// or https:// url", address::shown(url)));
    };
    if u.scheme_str().is_some_and(|s| s.eq_ignore_ascii_case("https")) {
        return Ok(());
    }
    if matches!(address::host(url).as_deref(), Some("localhost" | "127.0.0.1" | "[::1]")) {
        return Ok(());
    }
    Err(format!("OAuth over plain http:// is only for a loopback host, not {}", address::origin(url).unwrap_or_default()))
}

/// Discovery from a 401's `challenge` for the server at `url` (expanded),
/// `as_metadata`: `oauth.authServerMetadataUrl`.
pub fn discover(agent: &ureq::Agent, url: &str, challenge: &Challenge, as_metadata: Option<&str>) -> Result<Found, String> {
    let mut tries = Vec::new();
    if let Some(u) = &challenge.resource_metadata {
        tries.push(u.clone());
    } else {
        if has_path(url) {
            tries.push(well_known(url, "oauth-protected-resource", true)?);
        }
        tries.push(well_known(url, "oauth-protected-resource", false)?);
    }
    let prm = first_json(agent, &tries, |why| format!("no protected resource metadata ({why})"))?;
    let resource = prm.get("resource").and_then(Value::as_str).unwrap_or("");
    if canonical(resource).is_none() || canonical(resource) != canonical(url) {
        return Err(format!("the protected resource metadata names another resource ({})", address::shown(resource)));
    }
    let issuer = prm
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or("the protected resource metadata names no authorization server")?
        .to_string();
    allowed(&issuer)?;
    let tries: Vec<String> = match as_metadata {
        Some(m) => vec![m.to_string()],
        None if has_path(&issuer) => vec![
            well_known(&issuer, "oauth-authorization-server", true)?,
            well_known(&issuer, "openid-configuration", true)?,
            format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')),
        ],
        None => vec![well_known(&issuer, "oauth-authorization-server", false)?, well_known(&issuer, "openid-configuration", false)?],
    };
    let meta = first_json(agent, &tries, |why| format!("no authorization server metadata for {} ({why})", address::shown(&issuer)))?;
    let got = meta.get("issuer").and_then(Value::as_str).unwrap_or("");
    if canonical(got).is_none() || canonical(got) != canonical(&issuer) {
        return Err(format!("the authorization server's metadata names another issuer ({}, not {})", address::shown(got), address::shown(&issuer)));
    }
    let s256 = meta.get("code_challenge_methods_supported").and_then(Value::as_array).is_some_and(|a| a.iter().any(|m| m == "S256"));
    if !s256 {
        return Err("the authorization server does not offer PKCE".into());
    }
    let endpoint = |k: &str| -> Result<Option<String>, String> {
        match meta.get(k).and_then(Value::as_str) {
            Some(e) => allowed(e).map(|()| Some(e.to_string())).map_err(|why| format!("its {k}: {why}")),
            None => Ok(None),
        }
    };
    let scope = challenge.scope.clone().or_else(|| {
        let s: Vec<&str> = prm.get("scopes_supported").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        (!s.is_empty()).then(|| s.join(" "))
    });
    Ok(Found {
        issuer,
        authorization_endpoint: endpoint("authorization_endpoint")?.ok_or("the authorization server's metadata has no authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?.ok_or("the authorization server's metadata has no token_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint")?,
        scope,
    })
}

/// The JSON of the first of `tries` that answers with it, each checked by
/// [`allowed`] before it is asked; none: `none` of why each failed.
fn first_json(agent: &ureq::Agent, tries: &[String], none: impl FnOnce(String) -> String) -> Result<Value, String> {
    let mut why = Vec::new();
    for t in tries {
        allowed(t)?;
        match get_json(agent, t) {
            Ok(v) => return Ok(v),
            Err(e) => why.push(e),
        }
    }
    Err(none(why.join("; ")))
}

/// The first challenge of the server at `url`: what a request without a
/// token gets (an `initialize` POST, as a client opens).
pub fn ask(agent: &ureq::Agent, url: &str, headers: &[(String, String)]) -> Result<Challenge, String> {
    let body = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"zot","version":"0"}}}"#;
    let mut b = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    for (k, v) in headers.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("authorization")) {
        b = b.header(k.as_str(), v.as_str());
    }
    let req = b.body(body.to_vec()).map_err(|e| e.to_string())?;
    let resp = run(agent, req)?;
    let status = resp.status().as_u16();
    let header = resp.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    match challenge(&header) {
        Some(c) if status == 401 => Ok(c),
        // A server that asks for nothing still has metadata to find.
        _ => Ok(Challenge::default()),
    }
}

fn run<B: ureq::AsSendBody>(agent: &ureq::Agent, req: ureq::http::Request<B>) -> Result<ureq::http::Response<ureq::Body>, String> {
    let req = proxy::configure(agent, req, Some(Duration::from_secs(30)));
    agent.run(req).map_err(|e| match e {
        ureq::Error::Io(io) => format!("network error: {io}"),
        ureq::Error::Timeout(t) => format!("no answer in time ({t})"),
        other => other.to_string(),
    })
}

/// A JSON object by GET; errors name the url (without its query) and status.
pub fn get_json(agent: &ureq::Agent, url: &str) -> Result<Value, String> {
    let req = ureq::http::Request::builder().method("GET").uri(url).header("Accept", "application/json").body(()).map_err(|e| e.to_string())?;
    let resp = run(agent, req).map_err(|e| format!("{}: {e}", address::shown(url)))?;
    body_json(resp).map_err(|e| format!("{}: {e}", address::shown(url)))
}

/// A POST of `body` (`ctype`); the answer as JSON with its status. Errors
/// name the url (without its query), never what was sent.
pub fn post(agent: &ureq::Agent, url: &str, ctype: &str, body: Vec<u8>, auth: Option<&str>) -> Result<(u16, Value), String> {
    let mut b = ureq::http::Request::builder().method("POST").uri(url).header("Content-Type", ctype).header("Accept", "application/json");
    if let Some(a) = auth {
        b = b.header("Authorization", a);
    }
    let req = b.body(body).map_err(|e| e.to_string())?;
    let resp = run(agent, req).map_err(|e| format!("{}: {e}", address::shown(url)))?;
    let status = resp.status().as_u16();
    let bytes = resp.into_body().into_with_config().limit(1024 * 1024).read_to_vec().unwrap_or_default();
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

fn body_json(resp: ureq::http::Response<ureq::Body>) -> Result<Value, String> {
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(format!("HTTP {status}"));
    }
    let bytes = resp.into_body().into_with_config().limit(1024 * 1024).read_to_vec().map_err(|e| e.to_string())?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err("not a JSON object".into()),
    }
}

/// `application/x-www-form-urlencoded` of `pairs` (and a query string).
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn dec(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(s.get(i + 1..i + 3).unwrap_or(""), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_urls_and_forms() {
        let c = challenge(r#"Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", scope="a b""#).unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("http://h/.well-known/oauth-protected-resource/mcp"));
        assert_eq!((c.scope.as_deref(), c.error.as_deref()), (Some("a b"), Some("invalid_token")));
        assert!(challenge("Basic realm=x").is_none());
        assert_eq!(well_known("http://h:1/mcp/", "oauth-protected-resource", true).unwrap(), "http://h:1/.well-known/oauth-protected-resource/mcp");
        assert_eq!(well_known("http://h:1/mcp", "oauth-protected-resource", false).unwrap(), "http://h:1/.well-known/oauth-protected-resource");
        assert_eq!(canonical("HTTP://H:1/mcp/").as_deref(), Some("http://h:1/mcp"));
        assert!(allowed("http://127.0.0.1:5/x").is_ok() && allowed("https://e/").is_ok() && allowed("http://example.com/").is_err());
        // The host the client would connect to is judged, not what follows `#` or `@`.
        assert!(allowed("http://127.0.0.2:9#@127.0.0.1/token").is_err());
        assert!(allowed("http://127.0.0.2:9?@127.0.0.1/token").is_err());
        assert!(allowed("http://127.0.0.1:9@127.0.0.2/token").is_err());
        assert!(allowed("http://[::1]:9/token").is_ok());
        assert_eq!(form(&[("a b", "c&d=é")]), "a%20b=c%26d%3D%C3%A9");
        assert_eq!(dec("a%20b+c%3"), "a b c%3");
    }
}
