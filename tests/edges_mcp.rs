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

/// A raw legacy MCP server with one tool `t`: in mode `list` its
/// `tools/list` page, in mode `call` its `tools/call` answer, is one line
/// over zot's line bound (16 MiB).
const BIG_SERVER: &str = r#"
import json, sys
mode = sys.argv[1]
big = "x" * (17 * 1024 * 1024)
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "t", "description": big if mode == "list" else "t", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        r = {"content": [{"type": "text", "text": big}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"#;

#[test]
fn an_answer_over_the_line_bound_is_reported_as_what_it_is() {
    let t = TempDir::new("edges-mcp-big");
    let script = t.path().join("big.py");
    std::fs::write(&script, BIG_SERVER).expect("script");
    let server = |mode: &str| json!({"command": "python3", "args": [script.display().to_string(), mode]});
    let cfg = t.path().join("mcp.json");
    std::fs::write(&cfg, json!({"mcpServers": {"biglist": server("list"), "bigcall": server("call")}}).to_string()).expect("config");
    let mut args = zot_proc::session_args(t.path(), Some("serve"), &[], &[]);
    args.extend(["--mcp-config".to_string(), cfg.display().to_string()]);
    let mut z = zot_proc::Zot::spawn(t.path(), &args, &[]);
    // The listing fails the load, naming the method and the bound, not
    // the handshake's timeout.
    let failed = z.wait_line("biglist's error", |l| l.contains("\"extension_error\"") && l.contains("biglist"));
    let v: serde_json::Value = serde_json::from_str(&failed).expect("json");
    assert_eq!(v["message"], "tools/list did not end: a page of 17825912 bytes is over the limit of 16777216 bytes", "{failed}");
    z.wait_line("ready", |l| l.contains("\"type\":\"ready\""));
    // A call's answer over the bound fails that call, saying so, before
    // its deadline.
    z.send(r#"{"id":"c1","type":"tool","name":"mcp__bigcall__t","args":{}}"#);
    let answer = z.wait_line("the call's answer", |l| l.contains("\"id\":\"c1\""));
    assert!(answer.contains("over the limit of 16777216 bytes"), "{answer}");
}

#[test]
fn a_hosted_servers_prompts_listed_again_reach_the_client_as_prompts_list_changed() {
    // docs/protocol.md §8.4.2: a hosted server relisted pushes
    // `list_changed` to a legacy client, prompts as tools.
    let t = TempDir::new("edges-mcp-prompts-changed");
    let cfg = t.path().join("mcp.json");
    let server = json!({"command": "python3", "args": [common::fixture("mcp_server.py").display().to_string(), "--prompts"]});
    std::fs::write(&cfg, json!({"mcpServers": {"fx": server}}).to_string()).expect("config");
    let mut args = zot_proc::session_args(t.path(), Some("mcp"), &[], &[]);
    args.extend(["--mcp-config".to_string(), cfg.display().to_string()]);
    let mut z = zot_proc::Zot::spawn(t.path(), &args, &[]);
    z.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    z.wait_line("initialize's answer", |l| l.contains("\"id\":1"));
    z.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    z.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__fx__add","arguments":{"prompt":"wave"}}}"#);
    z.wait_line("the call's answer", |l| l.contains("\"id\":2"));
    z.wait_line("prompts/list_changed", |l| l.contains("notifications/prompts/list_changed"));
    // Sent once the change is in force: the list has it.
    z.send(r#"{"jsonrpc":"2.0","id":3,"method":"prompts/list"}"#);
    let list = z.wait_line("prompts/list's answer", |l| l.contains("\"id\":3"));
    assert!(list.contains("mcp__fx__wave"), "{list}");
}

#[test]
fn every_load_failure_line_names_its_server() {
    // A remote entry whose header uses an unset variable, and a stdio
    // server that exits before answering: each stderr line says which.
    let t = TempDir::new("edges-mcp-failed");
    let cfg = t.path().join("mcp.json");
    let remote = json!({"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${ZOT_TEST_UNSET_TOKEN}"}});
    let fails = json!({"command": "/bin/sh", "args": ["-c", "echo boom >&2; exit 3"]});
    std::fs::write(&cfg, json!({"mcpServers": {"remote": remote, "fails": fails}}).to_string()).expect("config");
    let err = mcp_stderr(&t, &["--mcp-config".into(), cfg.display().to_string()]);
    let want = "zot mcp: remote: failed to load: header Authorization: variable ZOT_TEST_UNSET_TOKEN is not set";
    assert!(err.lines().any(|l| l.starts_with(want)), "{err}");
    let fails = err.lines().find(|l| l.starts_with("zot mcp: fails: failed to load: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(fails.contains("exit code 3") && fails.ends_with("(see 'zot ext logs fails')"), "{err}");
    assert!(err.lines().filter(|l| l.contains("failed to load")).count() == 2, "{err}");
}

#[test]
fn the_ready_line_is_followed_by_the_servers_still_starting() {
    // docs/protocol.md §8.2: the load ends (ready grace) while the server
    // waits at a gate nobody opens; it is stopped when input ends.
    let t = TempDir::new("edges-mcp-starting");
    let gate = t.path().join("gate");
    let cfg = t.path().join("mcp.json");
    let server = json!({"command": "python3", "args": [common::fixture("mcp_server.py").display().to_string(), "--init-gate", gate.display().to_string()]});
    std::fs::write(&cfg, json!({"mcpServers": {"slowfx": server}}).to_string()).expect("config");
    let err = mcp_stderr(&t, &["--ready-grace".into(), "0.2".into(), "--mcp-config".into(), cfg.display().to_string()]);
    let lines: Vec<&str> = err.lines().collect();
    let ready = lines.iter().position(|l| *l == "zot mcp: 0 MCP servers ready: none").unwrap_or_else(|| panic!("{err}"));
    assert_eq!(lines.get(ready + 1), Some(&"zot mcp: still starting: slowfx (calls for their tools wait for them)"), "{err}");
}
