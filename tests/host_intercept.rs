//! docs/protocol.md §3.7: intercept chains in load order, first block wins,
//! `modified_args` and `replace_text` chain, failures are fail-open unless
//! fail-closed.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use zot_host::host::{Config, Host, HostError, InterceptOutcome};
use zot_host::protocol::Payload;

/// Extensions `(name, mode)` given as `--ext` in this order, each
/// intercepting tool_call, turn_start and assistant_message and owning an
/// `events@<name>` tool that reports what it was asked.
fn chain_config(t: &TempDir, exts: &[(&str, &str)]) -> Config {
    let dirs: Vec<PathBuf> = exts
        .iter()
        .map(|(name, mode)| {
            let tool = format!("events@{name}");
            py_ext(
                t.path(),
                name,
                name,
                &["--intercepts", "tool_call,turn_start,assistant_message", "--intercept-mode", mode, "--tools", &tool],
            )
        })
        .collect();
    let mut cfg = host_config(t.path(), dirs);
    // Every interceptor's: the Python ones that do answer must do so within
    // it on a loaded machine too (the slow one never answers).
    cfg.timeouts.intercept = Duration::from_secs(3);
    cfg
}

/// What extension `name` was asked, in order.
fn asked(host: &Host, name: &str) -> Vec<Value> {
    let r = host.tool(&format!("events@{name}"), None).unwrap();
    serde_json::from_str(&text_of(&r.content)).unwrap()
}

fn tool_call(args: Value) -> Payload {
    json!({"tool_id": "t1", "tool_name": "bash", "tool_args": args}).as_object().unwrap().clone()
}

fn text(s: &str) -> Payload {
    json!({"text": s}).as_object().unwrap().clone()
}

#[test]
fn subscribers_are_asked_in_load_order_and_modified_args_chain() {
    let t = TempDir::new("ic-order");
    // Load order zeta, alpha, mid: not alphabetical, not arrival order.
    let cfg = chain_config(&t, &[("zeta", "rewrite"), ("alpha", "badargs"), ("mid", "rewrite")]);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();

    let out = host.intercept("tool_call", tool_call(json!({"cmd": "ls"}))).unwrap();
    assert!(!out.block);
    assert_eq!(out.reason, None);
    assert_eq!(out.modified_args, Some(json!({"cmd": "ls", "by_zeta": true, "by_mid": true})));
    assert_eq!(out.replace_text, None);

    // zeta saw the original, alpha zeta's output; alpha's non-object
    // rewrite did not count, so mid saw zeta's output too.
    let z = asked(&host, "zeta");
    let a = asked(&host, "alpha");
    let m = asked(&host, "mid");
    assert_eq!(z.len(), 1);
    assert_eq!(z[0]["intercept"], "tool_call");
    assert_eq!(z[0]["tool_name"], "bash");
    assert_eq!(z[0]["tool_id"], "t1");
    assert_eq!(z[0]["tool_args"], json!({"cmd": "ls"}));
    assert_eq!(a[0]["tool_args"], json!({"cmd": "ls", "by_zeta": true}));
    assert_eq!(m[0]["tool_args"], json!({"cmd": "ls", "by_zeta": true}));
    assert_eq!(
        ext_info(&host, "zeta").intercepts,
        vec!["tool_call", "turn_start", "assistant_message"]
    );
}

#[test]
fn the_first_block_wins_and_stops_the_chain() {
    let t = TempDir::new("ic-block");
    let cfg = chain_config(&t, &[("first", "rewrite"), ("second", "block"), ("third", "block"), ("fourth", "allow")]);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();

    let out = host.intercept("tool_call", tool_call(json!({"cmd": "rm -rf /"}))).unwrap();
    assert!(out.block);
    assert_eq!(out.reason.as_deref(), Some("blocked by second"));
    assert_eq!(out.modified_args, None, "a blocked call has no rewrite");
    assert_eq!(asked(&host, "first").len(), 1);
    assert_eq!(asked(&host, "second")[0]["tool_args"], json!({"cmd": "rm -rf /", "by_first": true}));
    assert!(asked(&host, "third").is_empty(), "asked after the block");
    assert!(asked(&host, "fourth").is_empty(), "asked after the block");

    // turn_start is interceptable as well.
    let step = json!({"step": 3}).as_object().unwrap().clone();
    let out = host.intercept("turn_start", step).unwrap();
    assert!(out.block);
    assert_eq!(asked(&host, "first")[1], json!({"intercept": "turn_start", "event": "turn_start", "step": 3}));
}

#[test]
fn replace_text_chains() {
    let t = TempDir::new("ic-text");
    let cfg = chain_config(&t, &[("one", "replace"), ("two", "allow"), ("three", "replace")]);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let out = host.intercept("assistant_message", text("hello")).unwrap();
    assert_eq!(
        out,
        InterceptOutcome { block: false, reason: None, modified_args: None, replace_text: Some("hello+one+three".into()), system_prompt: None }
    );
    assert_eq!(asked(&host, "two")[0]["text"], "hello+one");
    assert_eq!(asked(&host, "three")[0]["text"], "hello+one");
}

#[test]
fn nothing_to_ask_means_allow_unchanged() {
    let t = TempDir::new("ic-none");
    let d = py_ext(t.path(), "plain", "plain", &["--events", "tool_call"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    let out = host.intercept("tool_call", tool_call(json!({"a": 1}))).unwrap();
    assert_eq!(out, InterceptOutcome::default());
}

#[test]
fn non_interceptable_events_are_bad_requests() {
    let t = TempDir::new("ic-bad");
    let cfg = chain_config(&t, &[("x", "block")]);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    for ev in ["turn_end", "session_start", "custom"] {
        match host.intercept(ev, Payload::new()) {
            Err(HostError::BadRequest(m)) => assert!(m.contains(ev), "{m}"),
            other => panic!("{ev}: {other:?}"),
        }
    }
    assert!(asked(&host, "x").is_empty());
}

/// Runs a chain whose first interceptor fails in `mode`, fail-open then
/// fail-closed.
fn failing_first(mode: &str, tag: &str) {
    // Fail-open: counts as allow and the chain goes on.
    let t = TempDir::new(&format!("ic-{tag}-open"));
    let cfg = chain_config(&t, &[("bad", mode), ("next", "rewrite")]);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let started = Instant::now();
    let out = host.intercept("tool_call", tool_call(json!({"x": 1}))).unwrap();
    assert!(!out.block, "{mode}: {out:?}");
    assert_eq!(out.modified_args, Some(json!({"x": 1, "by_next": true})), "{mode}");
    assert_eq!(asked(&host, "next").len(), 1, "{mode}: the chain went on");
    assert!(started.elapsed() < Duration::from_secs(30), "{mode}: {:?}", started.elapsed());
    assert!(log_contains(t.path(), "bad", "[zot] intercept of tool_call failed", Duration::from_secs(30)), "{mode}");
    drop(host);

    // Fail-closed: counts as block, the reason names the extension.
    let t = TempDir::new(&format!("ic-{tag}-closed"));
    let mut cfg = chain_config(&t, &[("bad", mode), ("next", "rewrite")]);
    cfg.fail_closed = true;
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let out = host.intercept("tool_call", tool_call(json!({"x": 1}))).unwrap();
    assert!(out.block, "{mode}: {out:?}");
    let reason = out.reason.unwrap_or_default();
    assert!(reason.contains("\"bad\""), "{mode}: {reason}");
    assert!(reason.contains("fail-closed"), "{mode}: {reason}");
    assert_eq!(out.modified_args, None);
    assert!(asked(&host, "next").is_empty(), "{mode}: asked after a fail-closed block");
}

#[test]
fn a_late_interceptor_counts_as_allow_or_block_when_fail_closed() {
    failing_first("slow", "slow");
}

#[test]
fn a_crashing_interceptor_counts_as_allow_or_block_when_fail_closed() {
    failing_first("crash", "crash");
}

#[test]
fn a_malformed_intercept_reply_counts_as_allow_or_block_when_fail_closed() {
    failing_first("malformed", "malformed");
}

#[test]
fn a_late_interceptor_is_given_the_whole_intercept_timeout() {
    let t = TempDir::new("ic-late-time");
    let cfg = chain_config(&t, &[("late", "slow"), ("after", "allow")]);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let started = Instant::now();
    let out = host.intercept("assistant_message", text("x")).unwrap();
    let took = started.elapsed();
    assert!(!out.block);
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(30), "{took:?}");
    assert!(log_contains(t.path(), "late", "timed out after 3s", Duration::from_secs(30)), "{}", read_log(t.path(), "late"));
    // The late extension is still up and its later reply, if any, is dropped.
    assert_eq!(asked(&host, "late").len(), 1);
}
