//! Each handshake try of an MCP server in `zot ext doctor` (docs/protocol.md
//! §8.4.3 rule 12: under `auto`, `initialize` first and one modern try in a
//! fresh process on refusal), read from the `[zot]` lines of the load: the
//! revision and first request of each try, and how it ended.

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
            out.push(HandshakeTry { protocol: protocol.into(), method: method.trim_end_matches(')').into(), outcome: String::new() });
            open = true;
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
}
