//! A remote server's address: its url and headers with their variables
//! expanded, what of a url may be shown, and the one way urls are read
//! here: as the HTTP client reads them ([`ureq::http::Uri`]), so that a
//! check (an origin, a loopback host) judges the host that is connected to.

use super::super::config::Remote;
use ureq::http::Uri;

/// The url and headers with their variables expanded ([`Remote::expand`]).
pub(super) fn expand(remote: &Remote) -> Result<(String, Vec<(String, String)>), String> {
    remote.expand()
}

/// What must never be shown of one server: the expanded url, the values of
/// the variables its entry expands, its header values and its url's user
/// information. [`Secrets::scrub`] puts the entry's own words in their place.
#[derive(Default, Clone)]
pub struct Secrets {
    /// (secret, shown instead), longest first.
    pairs: Vec<(String, String)>,
}

impl Secrets {
    /// The secrets of `remote`, expanded as `url` and `headers`.
    pub(super) fn of(remote: &Remote, url: &str, headers: &[(String, String)]) -> Secrets {
        let mut pairs = vec![(url.to_string(), remote.shown_url())];
        if let Some(u) = url.parse::<Uri>().ok().and_then(|u| u.authority().map(|a| a.as_str().to_string())) {
            if let Some((info, _)) = u.rsplit_once('@') {
                pairs.push((format!("{info}@"), String::new()));
                pairs.extend(info.split(':').map(|p| (p.to_string(), "(user information)".to_string())));
            }
        }
        for var in remote.variables() {
            if let Some(v) = std::env::var_os(&var) {
                pairs.push((v.to_string_lossy().into_owned(), format!("${{{var}}}")));
            }
        }
        for (_, v) in headers {
            pairs.push((v.clone(), "(header value)".into()));
            pairs.extend(v.split_whitespace().filter(|w| w.len() >= 8).map(|w| (w.to_string(), "(header value)".into())));
        }
        // Short values would take words out of every message.
        pairs.retain(|(s, _)| s.len() >= 4);
        crate::order::sort_by(&mut pairs, |a, b| b.0.len().cmp(&a.0.len()));
        Secrets { pairs }
    }

    /// `text` with no secret in it.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (secret, instead) in &self.pairs {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), instead);
            }
        }
        out
    }
}

/// `url` read as the HTTP client reads it: an absolute `http://` or
/// `https://` url with a host.
pub fn parse(url: &str) -> Option<Uri> {
    let u = url.parse::<Uri>().ok()?;
    let scheme = u.scheme_str()?.to_ascii_lowercase();
    if (scheme != "http" && scheme != "https") || u.host().is_none_or(str::is_empty) {
        return None;
    }
    Some(u)
}

/// `scheme://host[:port]` of an http(s) url, lower-cased, without user
/// information, the default port left out.
pub fn origin(url: &str) -> Option<String> {
    let u = parse(url)?;
    Some(origin_of(&u))
}

fn origin_of(u: &Uri) -> String {
    let scheme = u.scheme_str().unwrap_or("").to_ascii_lowercase();
    let host = u.host().unwrap_or("").to_ascii_lowercase();
    let default = if scheme == "http" { 80 } else { 443 };
    match u.port_u16().filter(|&p| p != default) {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    }
}

/// The host of an http(s) url, lower-cased (an IPv6 address in brackets).
pub fn host(url: &str) -> Option<String> {
    parse(url).and_then(|u| u.host().map(str::to_ascii_lowercase))
}

/// The path of an http(s) url (`/` when it has none).
pub fn path(url: &str) -> Option<String> {
    parse(url).map(|u| u.path().to_string())
}

/// The query of an http(s) url, if any.
pub fn query(url: &str) -> Option<String> {
    parse(url).and_then(|u| u.query().map(str::to_string))
}

/// A url a server supplied (a `Location`, a metadata endpoint), fit to
/// show: its origin and path, never user information, a query or a
/// fragment; a relative reference up to its query; control characters out.
pub fn shown(url: &str) -> String {
    let text = match parse(url) {
        Some(u) => format!("{}{}", origin_of(&u), u.path()),
        None => {
            let mut text = url.split(['?', '#']).next().unwrap_or("").to_string();
            if let Some(at) = text.find("://").map(|i| i + 3) {
                let end = text[at..].find('/').map_or(text.len(), |i| at + i);
                if let Some(info) = text[at..end].rfind('@') {
                    text.replace_range(at..at + info + 1, "");
                }
            }
            text
        }
    };
    crate::text::one_line(&text)
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
        // The host the client connects to, whatever follows a `#`.
        assert_eq!(origin("http://127.0.0.2:9#@127.0.0.1/token").as_deref(), Some("http://127.0.0.2:9"));
        assert_eq!(host("http://[::1]:5/x").as_deref(), Some("[::1]"));
        assert_eq!(shown("http://bot:pw@h:1/a/b?k=secret#f"), "http://h:1/a/b");
        assert_eq!(shown("/elsewhere?k=secret"), "/elsewhere");
        assert_eq!(shown("http://u:p@h:1/a\x1b[2J/b?x"), "http://h:1/a/b");
        assert_eq!(resolve("http://h:1/sse", "/messages/?s=1"), "http://h:1/messages/?s=1");
        assert_eq!(resolve("http://h:1/a/sse?k=1", "msg?s=1"), "http://h:1/a/msg?s=1");
        assert_eq!(resolve("http://h:1", "msg"), "http://h:1/msg");
        assert_eq!(resolve("http://h:1/sse", "http://o/x"), "http://o/x");
    }
}
