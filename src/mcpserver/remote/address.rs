//! A remote server's address: its url and headers with their variables
//! expanded, the origin of a url, and a reference resolved against a url.

use super::super::config::Remote;

/// The url and headers with their variables expanded; `bearerTokenEnvVar`
/// as `Authorization`. Errors name the header and the variable.
pub(super) fn expand(remote: &Remote) -> Result<(String, Vec<(String, String)>), String> {
    let lookup = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    let why = |what: String, e: crate::envexpand::ExpandError| match e {
        crate::envexpand::ExpandError::Unset { var, .. } => format!("{what}: variable {var} is not set"),
        crate::envexpand::ExpandError::Syntax { msg, .. } => format!("{what}: {msg}"),
    };
    let url = crate::envexpand::expand("url", &remote.url, &lookup).map_err(|e| why("url".into(), e))?;
    let mut headers = Vec::new();
    for (k, v) in &remote.headers {
        let value = crate::envexpand::expand(k, v, &lookup).map_err(|e| why(format!("header {k}"), e))?;
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(format!("header {k}: its value holds a line break"));
        }
        headers.push((k.clone(), value));
    }
    if let Some(var) = &remote.bearer_env {
        let token = lookup(var).filter(|t| !t.is_empty()).ok_or_else(|| format!("bearerTokenEnvVar: variable {var} is not set"))?;
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".into(), format!("Bearer {token}")));
    }
    Ok((url, headers))
}

/// `scheme://host[:port]` of an http(s) url, lower-cased, without user
/// information.
pub(super) fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host = authority.rsplit('@').next()?.to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    let default = if scheme == "http" { ":80" } else { ":443" };
    let host = host.strip_suffix(default).unwrap_or(&host).to_string();
    Some(format!("{scheme}://{host}"))
}

/// `reference` resolved against `base` (absolute, `/path`, or relative to
/// the base's folder).
pub(super) fn resolve(base: &str, reference: &str) -> String {
    if reference.contains("://") {
        return reference.to_string();
    }
    let Some(origin_end) = base.find("://").map(|i| i + 3 + base[i + 3..].find('/').unwrap_or(base.len() - i - 3)) else {
        return reference.to_string();
    };
    if reference.starts_with('/') {
        return format!("{}{reference}", &base[..origin_end]);
    }
    let path = &base[..base[..base.find(['?', '#']).unwrap_or(base.len())].rfind('/').filter(|&i| i >= origin_end).map_or(base.len(), |i| i + 1)];
    if path.len() == origin_end {
        return format!("{path}/{reference}");
    }
    format!("{path}{reference}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_references() {
        assert_eq!(origin("HTTP://u:p@Example.com:80/mcp?x").as_deref(), Some("http://example.com"));
        assert_eq!(origin("https://h:8443").as_deref(), Some("https://h:8443"));
        assert_eq!(origin("ftp://h/"), None);
        assert_eq!(resolve("http://h:1/sse", "/messages/?s=1"), "http://h:1/messages/?s=1");
        assert_eq!(resolve("http://h:1/a/sse?k=1", "msg?s=1"), "http://h:1/a/msg?s=1");
        assert_eq!(resolve("http://h:1", "msg"), "http://h:1/msg");
        assert_eq!(resolve("http://h:1/sse", "http://o/x"), "http://o/x");
    }
}
