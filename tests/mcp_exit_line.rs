//! `zot mcp`'s stderr line for an extension that exited says what
//! happens next: restarted when its restart policy brings it back, gone
//! only when it is not coming back (docs/mcp.md).

mod common;
#[path = "common/mcp_raw.rs"]
mod mcp_raw;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, wait_until, TempDir};
use mcp_raw::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use zot_proc::{spawn_mcp, Zot, LINE_WAIT};

/// The fixture extension with tools `crash` and `echo`, and `restart` in
/// its manifest.
fn crasher(t: &TempDir, restart: &str) -> PathBuf {
    let d = py_ext(t.path(), "a", "a", &["--tools", "crash,echo", "--burst"]);
    let path = d.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).expect("manifest")).expect("manifest JSON");
    m["restart"] = json!(restart);
    std::fs::write(&path, serde_json::to_vec(&m).expect("JSON")).expect("manifest");
    d
}

/// Crashes `a` with a call; returns once zot's stderr told of the exit.
fn crash(z: &mut Zot) -> String {
    initialize(z);
    let r = rpc(z, json!(1), "tools/call", json!({"name": "crash"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(wait_until(LINE_WAIT, || z.stderr_text().contains("extension a exited")), "{}", z.context());
    z.stderr_text()
}

#[test]
fn an_extension_that_is_restarted_is_not_called_gone() {
    let t = TempDir::new("mcp-exit-restart");
    let a = crasher(&t, "on-failure");
    let mut z = spawn_mcp(t.path(), &[a.display().to_string()], &["--tool-timeout", "60", "--hello-timeout", "60"]);
    let err = crash(&mut z);
    assert!(err.contains("zot mcp: extension a exited (exit code 3); restarting it, its tools and prompts are back when it is ready"), "{err}");
    assert!(!err.contains("are gone"), "{err}");
    // And back it is.
    let r = rpc(&mut z, json!(2), "tools/call", json!({"name": "echo", "arguments": {"k": 1}}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(!z.stderr_text().contains("are gone"), "{}", z.stderr_text());
    finish(&mut z);
}

#[test]
fn an_extension_that_is_not_restarted_is_gone() {
    let t = TempDir::new("mcp-exit-never");
    let a = crasher(&t, "never");
    let mut z = spawn_mcp(t.path(), &[a.display().to_string()], &[]);
    let err = crash(&mut z);
    assert!(err.contains("zot mcp: extension a exited (exit code 3); its tools and prompts are gone"), "{err}");
    assert!(!err.contains("restarting"), "{err}");
    finish(&mut z);
}

#[test]
fn a_crash_loop_says_restarting_until_it_gives_up() {
    let t = TempDir::new("mcp-exit-loop");
    let a = py_ext(t.path(), "a", "a", &["--tools", "echo", "--exit-after-ready", "4"]);
    let mut z = spawn_mcp(t.path(), &[a.display().to_string()], &["--restart", "always"]);
    // 250 + 500 + 1000 + 2000 + 4000 ms of delays, and six starts.
    let gave_up = || z.stderr_text().contains("extension a gave up after 5 restarts");
    assert!(wait_until(LINE_WAIT * 3, gave_up), "{}", z.context());
    let err = z.stderr_text();
    let exits: Vec<&str> = err.lines().filter(|l| l.starts_with("zot mcp: extension a ")).collect();
    let restarting = "zot mcp: extension a exited (exit code 4); restarting it, its tools and prompts are back when it is ready";
    let mut want = vec![restarting; 5];
    want.push("zot mcp: extension a exited (exit code 4); its tools and prompts are gone");
    assert_eq!(exits[..6], want[..], "{err}");
    assert!(exits[6].starts_with("zot mcp: extension a gave up after 5 restarts (crash loop)"), "{err}");
    finish(&mut z);
}
