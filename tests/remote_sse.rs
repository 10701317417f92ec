//! Remote MCP servers over the 2024-11-05 HTTP+SSE transport
//! (docs/protocol.md §8.5 rule 6), against real servers on 127.0.0.1: the
//! Python SDK fixture (tests/fixtures/remote_server.py sse) and npm's
//! server-everything. `"type": "sse"` speaks it at once; a bare `url`
//! tries Streamable HTTP first and falls back to it when the `initialize`
//! POST is refused as such a server refuses it. Skipped, saying so, only
//! when the servers cannot be run (.ci/run installs them).
#![cfg(feature = "remote")]

mod common;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/remote_peer.rs"]
mod remote_peer;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use mcp_serve::*;
use remote_peer::Peer;
use serde_json::json;

/// The Python SDK fixture's `sse` server, or a `SKIP:` line.
fn sse_peer(t: &TempDir) -> Option<Peer> {
    Peer::python("sse", 0, &t.path().join("seen.jsonl")).map_err(|why| common::skip(&why)).ok()
}

#[test]
fn the_sse_transport_and_the_fallback_of_a_bare_url() {
    let t = TempDir::new("remote-sse");
    let Some(peer) = sse_peer(&t) else { return };
    let url = peer.url("/sse");
    let cfg = write_config(t.path(), "mcp.json", json!({"typed": {"type": "sse", "url": url}, "bare": {"url": url}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    for name in ["typed", "bare"] {
        let r = s.tool(&format!("mcp__{name}__echo"), json!({"text": name}));
        assert_eq!(text(&r), format!("echo: {name}"), "{r}");
        let e = s.ext(name);
        assert_eq!((&e["state"], &e["url"], &e["auth"]), (&json!("ready"), &json!(url), &json!("none")), "{e}");
    }
    assert_eq!(s.ext("typed")["transport"], "sse");
    // The bare url is listed as its entry says (Streamable HTTP first).
    assert_eq!(s.ext("bare")["transport"], "http");
    let bare = s.log("bare");
    assert!(bare.contains("initialize: HTTP 405 to Streamable HTTP; trying the sse transport (2024-11-05)"), "{bare}");
    let typed = s.log("typed");
    assert!(!typed.contains("Streamable HTTP"), "{typed}");
    // What the server saw: a POST to /sse only from the bare entry, and
    // every message posted to the endpoint its stream named.
    let seen = peer.requests();
    assert_eq!(seen.iter().filter(|r| r["method"] == "POST" && r["path"] == "/sse").count(), 1, "{seen:?}");
    assert!(seen.iter().filter(|r| r["method"] == "POST" && r["path"] == "/messages/").count() >= 6, "{seen:?}");
    s.shutdown();
}

#[test]
fn server_everything_over_sse() {
    let t = TempDir::new("remote-everything-sse");
    let peer = match Peer::everything("sse") {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    let cfg = write_config(t.path(), "mcp.json", json!({"every": {"type": "sse", "url": peer.url("/sse")}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__every__get-sum", json!({"a": 20, "b": 22}));
    assert!(text(&r).contains("42"), "{r}");
    s.shutdown();
}

#[test]
fn doctor_lists_each_transport_try_with_its_url_and_how_it_ended() {
    let t = TempDir::new("remote-sse-doctor");
    let Some(peer) = sse_peer(&t) else { return };
    let url = peer.url("/sse");
    let secret = "query-secret-4c1d";
    let gone = "http://127.0.0.1:9/mcp";
    let servers = json!({"bare": {"url": format!("{url}?key={secret}")}, "gone": {"url": gone}, "missing": {"type": "http", "url": peer.url("/nothere")}});
    let cfg = write_config(t.path(), "mcp.json", servers);
    let (_, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert!(!out.contains(secret) && !err.contains(secret), "{out}{err}");
    let tries = |name: &str| -> Vec<String> {
        let block = out.split("\n\n").find(|b| b.starts_with(&format!("{name} (MCP server)"))).unwrap_or("");
        block.lines().filter(|l| l.starts_with("  try ")).map(str::to_string).collect()
    };
    // A bare url: Streamable HTTP refused, then sse answered.
    assert_eq!(
        tries("bare"),
        [
            format!("  try 1    2025-11-25 (initialize) over http to {url}: HTTP 405"),
            format!("  try 2    2025-11-25 (initialize) over sse to {url}: answered (protocol 2025-11-25, server \"remote-fixture\" )"),
        ],
        "{out}"
    );
    assert_eq!(tries("missing"), [format!("  try 1    2025-11-25 (initialize) over http to {}: HTTP 404", peer.url("/nothere"))], "{out}");
    let g = tries("gone");
    assert!(g.len() == 1 && g[0].starts_with(&format!("  try 1    2025-11-25 (initialize) over http to {gone}: network error: Connection refused")), "{out}");
    // The same tries in the JSON report.
    let (_, json_out, _) = zot(&t, &["ext", "doctor", "--no-ext", "--json", "--mcp-config", cfg.to_str().unwrap()]);
    let d: serde_json::Value = serde_json::from_str(&json_out).unwrap();
    let bare = d["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "bare").unwrap();
    let each: Vec<(&str, &str, &str)> = bare["tries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["transport"].as_str().unwrap_or(""), t["url"].as_str().unwrap_or(""), t["outcome"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(&each[..1], [("http", url.as_str(), "HTTP 405")], "{bare}");
    assert_eq!((each.len(), each[1].0, each[1].1), (2, "sse", url.as_str()), "{bare}");
    assert!(!json_out.contains(secret));
}

#[test]
fn a_vscode_files_http_server_falls_back_to_sse_and_its_url_is_listed_as_written() {
    let t = TempDir::new("remote-sse-vscode");
    let Some(peer) = sse_peer(&t) else { return };
    let port = peer.url("").rsplit(':').next().unwrap_or("").trim_end_matches('/').to_string();
    let cwd = cwd_of(&t);
    std::fs::create_dir_all(cwd.join(".vscode")).unwrap();
    let servers = json!({"servers": {
        // VS Code reads "http" as a bare url: Streamable HTTP, then sse.
        "v": {"type": "http", "url": "http://127.0.0.1:${env:ZOT_TEST_PORT}/sse"},
        // An unset variable in a header fails that server, naming both.
        "h": {"type": "http", "url": "http://127.0.0.1:${env:ZOT_TEST_PORT}/sse", "headers": {"X-Key": "${env:ZOT_TEST_SURELY_UNSET}"}},
        // An invalid remote entry is listed as one.
        "bad": {"type": "http", "url": "http://127.0.0.1:1/mcp", "args": ["x"]},
    }});
    std::fs::write(cwd.join(".vscode/mcp.json"), servers.to_string()).unwrap();
    let mut s = Serve::start_env(&t, &[], &["--trust-project"], &[("ZOT_TEST_PORT", port.as_str())]);
    s.note("ready");
    let r = s.tool("mcp__v__echo", json!({"text": "v"}));
    assert_eq!(text(&r), "echo: v", "{r}");
    let e = s.ext("v");
    assert_eq!((&e["transport"], &e["url"]), (&json!("http"), &json!("http://127.0.0.1:${env:ZOT_TEST_PORT}/sse")), "{e}");
    assert!(s.log("v").contains("trying the sse transport (2024-11-05)"), "{}", s.log("v"));
    let h = s.wait_state("h", "failed");
    let why = h["error"].as_str().unwrap_or("");
    assert!(why.contains("X-Key") && why.contains("ZOT_TEST_SURELY_UNSET"), "{h}");
    let bad = s.wait_state("bad", "failed");
    assert_eq!((&bad["transport"], &bad["url"], &bad["auth"], &bad["error"]), (&json!("http"), &json!("http://127.0.0.1:1/mcp"), &json!("none"), &json!("args: a remote server runs no process here")), "{bad}");
    s.shutdown();
}
