//! Resource bounds: what one extension can make the host hold is limited,
//! the excess is refused or dropped and reported, and the others carry on.
mod common;

use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zot_host::host::{HostError, HostEvent, Request};

#[test]
fn calls_in_flight_per_extension_are_bounded() {
    let t = TempDir::new("lim-flight");
    let a = py_ext(t.path(), "a", "slowpoke", &["--tools", "silent"]);
    let b = py_ext(t.path(), "b", "other", &["--tools", "echo"]);
    let mut cfg = host_config(t.path(), vec![a, b]);
    cfg.limits.in_flight = 5;
    let (host, _ev) = start_host(cfg);
    host.wait_ready().expect("ready");
    let answers = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..5 {
        let answers = answers.clone();
        let req = Request::Tool { name: "silent".into(), args: None, tool_id: None };
        host.submit(req, move |r| answers.lock().unwrap().push(r.map(drop)));
    }
    // Refused at once: not by waiting for a place (none of the five is
    // answered before their 15 s timeout, asserted below), and not by
    // timing out (that would be another error).
    let sixth = host.tool("silent", None);
    match sixth {
        Err(e @ HostError::TooManyCalls { .. }) => {
            assert_eq!(e.code(), "busy");
            assert!(e.to_string().contains("slowpoke") && e.to_string().contains("5 calls"), "{e}");
        }
        other => panic!("expected TooManyCalls, got {other:?}"),
    }
    assert!(answers.lock().unwrap().is_empty(), "the five are still waiting");
    assert!(host.tool("echo", None).is_ok(), "another extension is unaffected");
    host.shutdown();
    assert_eq!(answers.lock().unwrap().len(), 5, "every call got one answer");
}

#[test]
fn a_registration_flood_costs_bounded_memory_and_is_reported() {
    let t = TempDir::new("lim-reg");
    let a = py_ext(t.path(), "a", "flood", &["--tools", "flood_tools,echo"]);
    let b = py_ext(t.path(), "b", "calm", &["--tools", "echo2"]);
    let mut cfg = host_config(t.path(), vec![a, b]);
    cfg.limits.tools = 50;
    let (host, events) = start_host(cfg);
    host.wait_ready().expect("ready");
    let r = host.tool("flood_tools", Some(json!({"n": 20000}))).expect("flood answered");
    assert_eq!(text_of(&r.content), "flooded");
    let info = ext_info(&host, "flood");
    assert_eq!(info.tools.len(), 50, "capped at the limit");
    assert!(info.tools.contains(&"echo".to_string()), "registrations before the cap are kept");
    let warned = wait_event(&events, Duration::from_secs(30), |e| {
        matches!(e, HostEvent::Notify { extension, level, message } if extension == "flood" && level == "warn" && message.contains("over 50 tools"))
    });
    assert!(warned.is_some(), "the embedding program is told");
    assert!(log_contains(t.path(), "flood", "further refusals are counted", Duration::from_secs(30)));
    let log = read_log(t.path(), "flood");
    assert!(log.matches("refused").count() < 5, "refusals are not each logged: {} bytes of log", log.len());
    assert!(host.tool("echo", None).is_ok(), "the flooding extension still answers");
    assert!(host.tool("echo2", None).is_ok(), "the other extension still answers");
    host.shutdown();
}

#[test]
fn a_notification_flood_is_rate_limited_and_counted() {
    let t = TempDir::new("lim-notes");
    let a = py_ext(t.path(), "a", "chatty", &["--tools", "flood_notes,note"]);
    let mut cfg = host_config(t.path(), vec![a]);
    cfg.limits.notes_burst = 20;
    cfg.limits.notes_per_sec = 10;
    let (host, events) = start_host(cfg);
    host.wait_ready().expect("ready");
    let started = Instant::now();
    host.tool("flood_notes", Some(json!({"n": 5000}))).expect("flood answered");
    let elapsed = started.elapsed().as_secs_f64();
    let forwarded = events
        .try_iter()
        .filter(|e| matches!(e, HostEvent::Notify { extension, message, .. } if extension == "chatty" && message.starts_with('n')))
        .count();
    let bound = 20.0 + 10.0 * elapsed + 1.0;
    assert!(forwarded >= 20, "the burst goes through: {forwarded}");
    assert!((forwarded as f64) <= bound, "{forwarded} notes forwarded, at most {bound} allowed");
    // Once the rate allows again, the next note says how many were dropped.
    let seen = wait_until(Duration::from_secs(30), || {
        host.tool("note", Some(json!({"text": "later"}))).expect("note");
        events.try_iter().any(|e| matches!(e, HostEvent::Notify { message, .. } if message.contains("dropped") && message.contains("notes")))
    });
    assert!(seen, "the drop count is reported");
    assert!(log_contains(t.path(), "chatty", "dropping notes", Duration::from_secs(30)));
    host.shutdown();
}

#[test]
fn panels_are_cut_to_size() {
    let t = TempDir::new("lim-panel");
    let a = py_ext(t.path(), "a", "painter", &["--tools", "huge_panel"]);
    let mut cfg = host_config(t.path(), vec![a]);
    cfg.limits.panel_lines = 100;
    cfg.limits.text_bytes = 64;
    let (host, events) = start_host(cfg);
    host.wait_ready().expect("ready");
    host.tool("huge_panel", Some(json!({"lines": 2000, "width": 3000}))).expect("answered");
    let ev = wait_event(&events, Duration::from_secs(30), |e| matches!(e, HostEvent::OpenPanel { .. }));
    let Some(HostEvent::OpenPanel { panel, .. }) = ev else { panic!("no panel") };
    assert_eq!(panel.lines.len(), 100);
    assert!(panel.lines.iter().all(|l| l.len() <= 64), "lines cut");
    assert!(panel.title.len() <= 64 && panel.title.ends_with('…'));
    host.shutdown();
}

#[test]
fn a_log_past_its_limit_is_rotated() {
    let t = TempDir::new("lim-log");
    let a = py_ext(t.path(), "a", "loud", &["--tools", "stderr"]);
    let mut cfg = host_config(t.path(), vec![a]);
    cfg.limits.log_bytes = 20_000;
    let (host, _ev) = start_host(cfg);
    host.wait_ready().expect("ready");
    let line = "x".repeat(1000);
    for _ in 0..30 {
        host.tool("stderr", Some(json!({"text": line}))).expect("answered");
    }
    let logs = t.path().join("home/logs");
    let rotated = wait_until(Duration::from_secs(30), || logs.join("ext-loud.log.1").exists());
    assert!(rotated, "ext-loud.log.1 appears");
    let old = std::fs::metadata(logs.join("ext-loud.log.1")).expect("old log").len();
    assert!(old > 20_000, "the old log holds what was written: {old}");
    host.tool("stderr", Some(json!({"text": "after rotation"}))).expect("answered");
    assert!(log_contains(t.path(), "loud", "after rotation", Duration::from_secs(30)), "the child keeps writing into the log");
    let now = std::fs::metadata(logs.join("ext-loud.log")).expect("log").len();
    assert!(now < 20_000, "the live log started over: {now}");
    host.shutdown();
}
