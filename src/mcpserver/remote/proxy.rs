//! The proxy each request goes through, chosen for the request's own url
//! (a login's requests to an authorization server on another origin get
//! that origin's), from the environment as curl reads it (docs/protocol.md
//! §8.5 rule 8): `https_proxy` or
//! `HTTPS_PROXY` for an `https://` url, `http_proxy` or `HTTP_PROXY` for an
//! `http://` one, else `all_proxy` or `ALL_PROXY`; none for a host that
//! `no_proxy` or `NO_PROXY` names (`*`, a host, or a domain with or
//! without a leading `.` or `*.`, which covers its subdomains; a `:port`
//! on an entry is ignored). An empty variable is an unset one. ureq's own
//! reading takes the first of these variables set whatever the url's
//! scheme, so an `HTTPS_PROXY` would carry plain `http://` traffic too.

/// `req` as `agent` sends it: through the proxy for its url, within `timeout`.
pub(super) fn configure<B: ureq::AsSendBody>(agent: &ureq::Agent, req: ureq::http::Request<B>, timeout: Option<std::time::Duration>) -> ureq::http::Request<B> {
    let proxy = for_url(&req.uri().to_string());
    agent.configure_request(req).proxy(proxy).timeout_global(timeout).build()
}

/// The proxy for `url` (expanded), if the environment names one for it.
fn for_url(url: &str) -> Option<ureq::Proxy> {
    let var = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()));
    let scheme = if url.starts_with("https://") { ["https_proxy", "HTTPS_PROXY"] } else { ["http_proxy", "HTTP_PROXY"] };
    let proxy = var(&scheme).or_else(|| var(&["all_proxy", "ALL_PROXY"]))?;
    if var(&["no_proxy", "NO_PROXY"]).is_some_and(|list| exempt(&list, &host_of(url))) {
        return None;
    }
    ureq::Proxy::new(proxy.trim()).ok()
}

/// The host of `url`, lower-cased, without brackets or port.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.to_ascii_lowercase()
}

/// Whether `no_proxy` (comma or space separated) covers `host`.
fn exempt(no_proxy: &str, host: &str) -> bool {
    no_proxy.split([',', ' ']).map(str::trim).filter(|e| !e.is_empty()).any(|entry| {
        if entry == "*" {
            return true;
        }
        let entry = entry.strip_prefix('[').map_or(entry, |v6| v6.split(']').next().unwrap_or(""));
        // An IPv6 address has colons of its own; only a name or IPv4 entry has a port.
        let entry = if entry.matches(':').count() == 1 { entry.split(':').next().unwrap_or("") } else { entry };
        let domain = entry.trim_start_matches('*').trim_start_matches('.').to_ascii_lowercase();
        !domain.is_empty() && (host == domain || host.ends_with(&format!(".{domain}")))
    })
}

#[cfg(test)]
mod tests {
    use super::{exempt, host_of};

    #[test]
    fn no_proxy_covers_hosts_and_their_subdomains() {
        assert_eq!(host_of("https://user:pw@API.Example.com:8443/mcp?x=1"), "api.example.com");
        assert_eq!(host_of("http://[::1]:9/mcp"), "::1");
        for (list, host, want) in [
            ("example.com", "api.example.com", true),
            (".example.com", "example.com", true),
            ("*.example.com", "a.b.example.com", true),
            ("example.com", "notexample.com", false),
            ("localhost, 127.0.0.1:8080", "127.0.0.1", true),
            ("::1", "::1", true),
            ("[::1]", "::1", true),
            ("*", "anything", true),
            ("other.org", "example.com", false),
        ] {
            assert_eq!(exempt(list, host), want, "{list:?} {host:?}");
        }
    }
}
