//! `zot mcp`'s rough edges: its stderr counts extensions and MCP servers
//! each as what they are. Real extensions and a real MCP server
//! (tests/fixtures/mcp_server.py).

use serde_json::json;
use std::process::{Command, Stdio};

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, TempDir};
use zot_proc::BIN;

/// The stderr of `zot mcp --no-ext args...` with stdin closed at once.
fn mcp_stderr(t: &TempDir, args: &[String]) -> String {
    let out = Command::new(BIN)
        .args(["mcp", "--no-ext"])
        .args(args)
        .current_dir(t.path())
        .env("ZOT_HOME", t.path().join("home"))
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("zot mcp");
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_ready_line_counts_extensions_and_mcp_servers_apart() {
    let t = TempDir::new("edges-mcp-ready");
    let exts = t.path().join("exts");
    let (a, b) = (py_ext(&exts, "a", "alpha", &[]), py_ext(&exts, "b", "beta", &[]));
    let cfg = t.path().join("mcp.json");
    let server = json!({"command": "python3", "args": [common::fixture("mcp_server.py").display().to_string()]});
    std::fs::write(&cfg, json!({"mcpServers": {"fx": server}}).to_string()).expect("config");
    let ext = |d: &std::path::Path| vec!["--ext".to_string(), d.display().to_string()];
    let both: Vec<String> = [ext(&a), ext(&b), vec!["--mcp-config".into(), cfg.display().to_string()]].concat();
    let err = mcp_stderr(&t, &both);
    assert!(err.lines().any(|l| l == "zot mcp: 2 extensions and 1 MCP server ready: alpha, beta, fx"), "{err}");
    let err = mcp_stderr(&t, &["--mcp-config".into(), cfg.display().to_string()]);
    assert!(err.lines().any(|l| l == "zot mcp: 1 MCP server ready: fx"), "{err}");
    let err = mcp_stderr(&t, &ext(&a));
    assert!(err.lines().any(|l| l == "zot mcp: 1 extension ready: alpha"), "{err}");
}
