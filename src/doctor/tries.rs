//! Each handshake try of an MCP server in `zot ext doctor` (docs/protocol.md
//! §8.4.3 rule 12: under `auto`, `initialize` first and one modern try in a
//! fresh process on refusal), read from the `[zot]` lines of the load: the
//! revision and first request of each try, and how it ended. For a remote
//! server (§8.5 rule 6) each transport tried is a try of its own: a `url`
//! with no `type` tries Streamable HTTP, then `sse` when refused; each
//! names its transport, the url as the entry wrote it (the log's
//! `connecting to` line, without query or user information) and its end
//! (the HTTP status, the network or TLS error).

use serde::Serialize;

/// One handshake try.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandshakeTry {
    /// The revision tried: `2025-11-25` or `2026-07-28`.
    pub protocol: String,
    /// Its first request: `initialize` or `server/discover`.
    pub method: String,
    /// How it ended: `answered (...)`, the refusal, or why it failed.
    pub outcome: String,
    /// A remote server's transport for this try: `http` or `sse`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// A remote server's url as the entry wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The line a remote link logs when it opens: `connecting to URL (T)`.
fn connecting(l: &str) -> Option<(&str, &str)> {
    let rest = l.strip_prefix("connecting to ")?.strip_suffix(')')?;
    let (url, transport) = rest.rsplit_once(" (")?;
    Some((url, transport))
}

/// `initialize: HTTP 405 to Streamable HTTP; trying the sse transport
/// (2024-11-05)`: the refusal (`HTTP 405`) that moves a bare `url` to `sse`.
fn to_sse(l: &str) -> Option<&str> {
    let (head, _) = l.split_once(" to Streamable HTTP; trying the sse transport")?;
    Some(head.split_once(": ").map_or(head, |(_, status)| status))
}

/// The tries in `lines` (a load's `[zot]` lines); `state` is the entry's
/// state after the load, for a try whose end the lines do not say.
pub fn tries(lines: &[String], state: &str) -> Vec<HandshakeTry> {
    let mut out: Vec<HandshakeTry> = Vec::new();
    let mut open = false;
    let mut failed: Option<&str> = None;
    for l in lines {
        if let Some(rest) = l.strip_prefix("handshake: trying ") {
            let (protocol, method) = rest.split_once(" (").unwrap_or((rest, ""));
            out.push(HandshakeTry { protocol: protocol.into(), method: method.trim_end_matches(')').into(), outcome: String::new(), transport: None, url: None });
            open = true;
        } else if let Some((url, transport)) = connecting(l) {
            match out.last_mut() {
                Some(t) if open && t.transport.is_none() => {
                    t.transport = Some(transport.into());
                    t.url = Some(url.into());
                }
                last => {
                    let (protocol, method) = last.filter(|_| open).map(|t| (t.protocol.clone(), t.method.clone())).unwrap_or_default();
                    out.push(HandshakeTry { protocol, method, outcome: String::new(), transport: Some(transport.into()), url: Some(url.into()) });
                    open = true;
                }
            }
        } else if let (true, Some(status)) = (open, to_sse(l)) {
            if let Some(t) = out.last_mut() {
                t.outcome = status.to_string();
                let next = HandshakeTry { outcome: String::new(), transport: Some("sse".into()), ..t.clone() };
                out.push(next);
            }
        } else if let Some(why) = l.strip_prefix("failed to load: ") {
            failed = Some(why);
        } else if let (true, Some(t)) = (open, out.last_mut()) {
            let answered = ["initialized: ", "discovered: "].iter().find_map(|p| l.strip_prefix(p));
            if let Some(a) = answered {
                t.outcome = format!("answered ({a})");
                open = false;
            } else if l.starts_with("initialize failed: ")
                || l.starts_with("server/discover")
                || l.starts_with("the server answered initialize")
            {
                t.outcome = l.clone();
                open = false;
            }
        }
    }
    let last = out.len();
    for (i, t) in out.iter_mut().enumerate().filter(|(_, t)| t.outcome.is_empty()) {
        // A failed load names each try's end (`initialize: ...;
        // server/discover: ...`), or the last one's alone.
        let own = failed.and_then(|f| f.split("; ").find_map(|p| p.strip_prefix(&format!("{}: ", t.method))));
        t.outcome = match (own, failed) {
            (Some(why), _) => why.to_string(),
            (None, Some(why)) if i + 1 == last => why.to_string(),
            _ if state == "ready" => "answered".into(),
            _ if i + 1 == last => "no answer yet (still connecting)".into(),
            _ => "ended".into(),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_try_with_its_end() {
        let refused = lines(&[
            "handshake: trying 2025-11-25 (initialize)",
            "initialize failed: initialize is not supported",
            "the initialize try failed; trying 2026-07-28 in a fresh process",
            "handshake: trying 2026-07-28 (server/discover)",
            "discovered: protocol 2026-07-28, server \"m\" 1",
        ]);
        let t = tries(&refused, "ready");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].outcome, "initialize failed: initialize is not supported");
        assert_eq!((t[1].protocol.as_str(), t[1].method.as_str()), ("2026-07-28", "server/discover"));
        assert_eq!(t[1].outcome, "answered (protocol 2026-07-28, server \"m\" 1)");
        let dead = lines(&[
            "handshake: trying 2025-11-25 (initialize)",
            "the initialize try failed; trying 2026-07-28 in a fresh process",
            "handshake: trying 2026-07-28 (server/discover)",
            "failed to load: initialize: exited before answering initialize (exit code 3); server/discover: exited (exit code 3)",
        ]);
        let t = tries(&dead, "failed");
        assert_eq!(t[0].outcome, "exited before answering initialize (exit code 3)");
        assert_eq!(t[1].outcome, "exited (exit code 3)");
    }

    #[test]
    fn a_bare_url_tries_streamable_http_then_sse() {
        let bare = lines(&[
            "handshake: trying 2025-11-25 (initialize)",
            "connecting to http://h:1/sse (http)",
            "initialize: HTTP 405 to Streamable HTTP; trying the sse transport (2024-11-05)",
            "sse stream: endpoint known",
            "initialized: protocol 2025-11-25, server \"s\" 1",
        ]);
        let t = tries(&bare, "ready");
        let each: Vec<(Option<&str>, Option<&str>, &str)> = t.iter().map(|t| (t.transport.as_deref(), t.url.as_deref(), t.outcome.as_str())).collect();
        assert_eq!(each, [(Some("http"), Some("http://h:1/sse"), "HTTP 405"), (Some("sse"), Some("http://h:1/sse"), "answered (protocol 2025-11-25, server \"s\" 1)")]);
    }
}
