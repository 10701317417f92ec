//! `zot ext doctor` shows each handshake try of an MCP server under
//! `auto` (docs/protocol.md §8.4.3 rule 12), with how it ended: a legacy
//! server's one `initialize`, a modern-only server's refused `initialize`
//! then its `server/discover`, and a server that dies at start, twice.

use serde_json::{json, Value};
use std::process::{Command, Stdio};

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use zot_proc::BIN;

#[test]
fn doctor_lists_each_auto_handshake_try_and_its_end() {
    let t = TempDir::new("edges-doctor-tries");
    let root = env!("CARGO_MANIFEST_DIR");
    let py = |file: &str| json!({"command": "python3", "args": [format!("{root}/tests/{file}")]});
    let servers = json!({
        "legacy": py("fixtures/mcp_server.py"),
        "modern": py("mcp/modern_raw.py"),
        "dead": {"command": "sh", "args": ["-c", "exit 3"]},
        "pinned": {"command": "python3", "args": [format!("{root}/tests/fixtures/mcp_server.py")], "protocol": "2025-11-25"},
    });
    let cfg = t.path().join("mcp.json");
    std::fs::write(&cfg, json!({"mcpServers": servers}).to_string()).expect("config");
    let run = |json: bool| {
        let mut c = Command::new(BIN);
        c.args(["ext", "doctor", "--no-ext", "--ready-grace", "60", "--mcp-config", &cfg.display().to_string()]);
        if json {
            c.arg("--json");
        }
        let out = c.current_dir(t.path()).env("ZOT_HOME", t.path().join("home")).stdin(Stdio::null()).output().expect("doctor");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = run(true);
    let d: Value = serde_json::from_str(&out).expect("json");
    let entry = |name: &str| d["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == name)).cloned().unwrap_or_default();
    let tries = |name: &str| entry(name)["tries"].clone();
    assert_eq!(
        tries("legacy"),
        json!([{"protocol": "2025-11-25", "method": "initialize", "outcome": "answered (protocol 2025-11-25, server \"fixture\" 9.9)"}]),
        "{d:#}"
    );
    let modern = tries("modern");
    assert_eq!(modern[0]["method"], "initialize", "{d:#}");
    assert_eq!(modern[0]["outcome"], "initialize failed: initialize is not supported", "{d:#}");
    assert_eq!((modern[1]["protocol"].as_str(), modern[1]["method"].as_str()), (Some("2026-07-28"), Some("server/discover")), "{d:#}");
    assert!(modern[1]["outcome"].as_str().unwrap_or_default().starts_with("answered (protocol 2026-07-28"), "{d:#}");
    let dead = tries("dead");
    assert_eq!(dead[0]["outcome"], "exited before answering initialize (exit code 3)", "{d:#}");
    assert_eq!(dead[1]["outcome"], "exited before answering server/discover (exit code 3)", "{d:#}");
    // A pinned era is one handshake, not a try among others.
    assert!(entry("pinned")["tries"].is_null(), "{d:#}");
    // The text form: one line per try, under the server's config line.
    let text = run(false);
    assert!(text.contains("  try 1    2025-11-25 (initialize): initialize failed: initialize is not supported\n  try 2    2026-07-28 (server/discover): answered"), "{text}");
}

/// A server between its two `auto` tries is still starting: the load waits
/// for its second try even when every other server is ready while its
/// first process is still on its way out.
#[test]
fn the_load_waits_for_a_server_between_its_two_tries() {
    let t = TempDir::new("edges-doctor-between");
    let root = env!("CARGO_MANIFEST_DIR");
    // The first process outlives its stdin by two seconds (TERM ignored),
    // while the legacy server gets ready.
    let slow = format!("trap '' TERM; python3 {root}/tests/mcp/modern_raw.py; sleep 2");
    let servers = json!({
        "legacy": {"command": "python3", "args": [format!("{root}/tests/fixtures/mcp_server.py")]},
        "slow": {"command": "sh", "args": ["-c", slow]},
    });
    let cfg = t.path().join("mcp.json");
    std::fs::write(&cfg, json!({"mcpServers": servers}).to_string()).expect("config");
    let out = Command::new(BIN)
        .args(["ext", "doctor", "--no-ext", "--json", "--ready-grace", "60", "--mcp-config", &cfg.display().to_string()])
        .current_dir(t.path())
        .env("ZOT_HOME", t.path().join("home"))
        .stdin(Stdio::null())
        .output()
        .expect("doctor");
    let d: Value = serde_json::from_slice(&out.stdout).expect("json");
    let entry = |name: &str| d["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == name)).cloned().unwrap_or_default();
    assert_eq!(entry("legacy")["state"], "ready", "{d:#}");
    let slow = entry("slow");
    assert_eq!(slow["state"], "ready", "{d:#}");
    assert!(slow["tries"][1]["outcome"].as_str().unwrap_or_default().starts_with("answered (protocol 2026-07-28"), "{d:#}");
}
