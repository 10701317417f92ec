//! Restarts under `zot serve` (docs/protocol.md §4, `restart` in the
//! manifest): a crashed extension comes back and answers a call made
//! meanwhile, five restarts then a crash loop, a reload announcing the
//! tools that went and came, and the manifest's policy judging each exit.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::{json, Value};
use serve_proc::*;
use std::path::PathBuf;
use std::time::Duration;

/// `ext` with `restart` set in its manifest.
fn ext_restart(t: &TempDir, name: &str, restart: &str, flags: &[&str]) -> PathBuf {
    let d = ext(t, name, flags);
    let path = d.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["restart"] = json!(restart);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    d
}

#[test]
fn a_crashed_extension_comes_back_and_a_call_made_meanwhile_is_answered_by_it() {
    // docs/protocol.md §7.1.
    let t = TempDir::new("serve-restart");
    // Its frames up to ready leave in one write: on a busy machine a quiet
    // spell after hello_ack would have the host count the restarted `a`
    // ready before it registered `echo`, and the call made meanwhile would
    // rightly be unknown_tool (§7.1: it did not register the name again).
    let a = ext_restart(&t, "a", "on-failure", &["--tools", "crash,echo", "--burst"]);
    // The call made meanwhile waits for the restart and a Python start-up:
    // its deadline is not what this test is about, so it is long.
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60", "--hello-timeout", "60"]);
    s.ready_all();
    let before = s.pids();
    let crash = s.request(json!({"id": "c", "type": "tool", "name": "crash"}));
    assert_eq!(crash["error"]["code"], "extension_exited", "{crash}");
    // Sent while it restarts: waits for the new process.
    let r = s.request(json!({"id": "during", "type": "tool", "name": "echo", "args": {"k": 1}}));
    assert_eq!(r["ok"], true, "{r}\n{}", read_log(&t, "a"));
    assert_eq!(echoed(&r["result"])["args"], json!({"k": 1}));
    let order: Vec<&str> = s
        .frames
        .iter()
        .filter_map(|f| f["type"].as_str())
        .filter(|t| ["extension_exited", "extension_restarting", "extension_ready", "tools_changed"].contains(t))
        .collect();
    assert_eq!(order, ["extension_ready", "extension_exited", "extension_restarting", "extension_ready", "tools_changed"]);
    let restarting = s.note("extension_restarting");
    assert_eq!(restarting, json!({"type": "extension_restarting", "extension": "a", "attempt": 1, "delay_ms": 250, "code": 3}));
    let changed = s.note("tools_changed");
    assert_eq!(changed["reason"], "restarted");
    let after = s.pids();
    assert_eq!(after.len(), 1);
    assert_ne!(before, after, "a new process");
    let l = s.ok(json!({"id": "l", "type": "list"}));
    assert_eq!(l["extensions"][0]["restarts"], 1);
    assert_eq!(l["extensions"][0]["state"], "ready");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "a").contains("exit code 3; restart policy on-failure: restart 1 of 5 in 250ms"), "{}", read_log(&t, "a"));
}

#[test]
fn five_restarts_then_a_crash_loop() {
    let t = TempDir::new("serve-crashloop");
    let a = ext(&t, "a", &["--tools", "echo", "--exit-after-ready", "4"]);
    let mut s = Serve::start(&t, &[a], &["--restart", "always", "--hello-timeout", "30"]);
    // 250 + 500 + 1000 + 2000 + 4000 ms of delays, and five starts.
    let looped = s.wait_or_find_within(Duration::from_secs(90), |f| f["type"] == "extension_crash_loop");
    assert_eq!(s.frames[looped], json!({"type": "extension_crash_loop", "extension": "a", "restarts": 5}));
    let delays: Vec<u64> = s.notes("extension_restarting").iter().map(|f| f["delay_ms"].as_u64().unwrap()).collect();
    assert_eq!(delays, [250, 500, 1000, 2000, 4000], "250 ms doubling");
    let attempts: Vec<u64> = s.notes("extension_restarting").iter().map(|f| f["attempt"].as_u64().unwrap()).collect();
    assert_eq!(attempts, [1, 2, 3, 4, 5]);
    let l = s.ok(json!({"id": "l", "type": "list"}));
    assert_eq!(l["extensions"][0]["state"], "crash_loop");
    assert_eq!(l["extensions"][0]["restarts"], 5);
    let (code, _) = s.err(json!({"id": "t", "type": "tool", "name": "echo"}));
    assert_eq!(code, "unknown_tool");
    // A reload starts it again.
    let r = s.ok(json!({"id": "r", "type": "reload"}));
    assert_eq!(r["loaded"], 1);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_reload_announces_the_tools_that_went_and_came() {
    // docs/protocol.md §4: `tools_changed` names the tools whose state changed;
    // after a reload that is what an extension has now and what it lost,
    // and an extension that does not come back lost all of its tools.
    let t = TempDir::new("serve-reload-tools");
    // What `a` has after the reload is what it registered before it was
    // counted ready: its frames up to ready leave in one write, and the
    // reload waits for it however slowly Python starts on a busy machine.
    let a = ext(&t, "a", &["--tools", "keep,gone", "--burst"]);
    let b = ext(&t, "b", &["--tools", "only_b"]);
    let mut s = Serve::start(&t, &[a, b.clone()], &["--ready-grace", "60", "--hello-timeout", "60"]);
    s.ready_all();
    ext(&t, "a", &["--tools", "keep,new", "--burst"]);
    std::fs::write(b.join("extension.json"), r#"{"name":"b","exec":"./nope"}"#).unwrap();
    s.ok(json!({"id": 1, "type": "reload"}));
    let changed: Vec<Value> = s.notes("tools_changed");
    assert_eq!(
        changed,
        [
            json!({"type": "tools_changed", "extension": "a", "reason": "reloaded", "tools": ["keep", "new", "gone"]}),
            json!({"type": "tools_changed", "extension": "b", "reason": "reloaded", "tools": ["only_b"]}),
        ],
        "{changed:?}"
    );
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn restart_never_overrides_the_manifest_and_policies_judge_the_exit() {
    let t = TempDir::new("serve-restart-policy");
    // `always` in the manifest, `--restart never` for the run: no restart.
    let a = ext_restart(&t, "a", "always", &["--tools", "crash"]);
    let mut s = Serve::start(&t, &[a], &["--restart", "never"]);
    s.ready_all();
    s.request(json!({"id": 1, "type": "tool", "name": "crash"}));
    s.note("extension_exited");
    let gone = s.wait_or_find(|f| f["type"] == "tools_changed");
    assert_eq!(s.frames[gone], json!({"type": "tools_changed", "extension": "a", "reason": "exited", "tools": ["crash"]}));
    let l = s.ok(json!({"id": 2, "type": "list"}));
    assert_eq!(l["extensions"][0]["state"], "exited");
    // A reload brings it back, announced.
    s.ok(json!({"id": 3, "type": "reload"}));
    let back = s.wait_or_find(|f| f["type"] == "tools_changed" && f["reason"] == "reloaded");
    assert_eq!(s.frames[back]["tools"], json!(["crash"]));
    assert!(s.notes("extension_restarting").is_empty());
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);

    // A clean exit: `on-failure` leaves it down, `always` brings it back.
    let t = TempDir::new("serve-restart-clean");
    let calm = ext_restart(&t, "calm", "on-failure", &["--tools", "answer_exit@calm"]);
    let keen = ext_restart(&t, "keen", "always", &["--tools", "answer_exit@keen"]);
    let mut s = Serve::start(&t, &[calm, keen], &[]);
    s.ready_all();
    assert_eq!(s.request(json!({"id": 1, "type": "tool", "name": "answer_exit@calm"}))["ok"], true);
    assert_eq!(s.request(json!({"id": 2, "type": "tool", "name": "answer_exit@keen"}))["ok"], true);
    let back = s.wait_or_find(|f| f["type"] == "tools_changed" && f["extension"] == "keen");
    assert_eq!(s.frames[back]["reason"], "restarted");
    let l = s.ok(json!({"id": 3, "type": "list"}));
    let states: Vec<(&str, &str)> =
        l["extensions"].as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap(), e["state"].as_str().unwrap())).collect();
    assert_eq!(states, [("calm", "exited"), ("keen", "ready")]);
    assert!(s.notes("extension_restarting").iter().all(|f| f["extension"] == "keen" && f["code"] == 0));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}
