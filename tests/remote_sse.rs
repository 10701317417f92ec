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

#[test]
fn the_sse_transport_and_the_fallback_of_a_bare_url() {
    let t = TempDir::new("remote-sse");
    let peer = match Peer::python("sse", 0, &t.path().join("seen.jsonl")) {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
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
