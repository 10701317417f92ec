//! docs/protocol.md §3.1–3.4: spawning, the handshake in both registration
//! orders, `ready` and the auto-ready path, `hello_ack`, the log file.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use zot_host::host::{HostEvent, State};

#[test]
fn modern_and_legacy_registration_orders_both_work() {
    let t = TempDir::new("hs-orders");
    // modern: registers only after reading hello_ack; legacy: before.
    let modern = py_ext(t.path(), "modern", "modern", &["--tools", "m_tool", "--commands", "m_cmd"]);
    let legacy = py_ext(t.path(), "legacy", "legacy", &["--legacy", "--tools", "l_tool", "--commands", "l_cmd"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![modern, legacy]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.loaded, 2);
    assert_eq!(report.ready, vec!["modern".to_string(), "legacy".to_string()], "ready in load order");
    assert!(report.errors.is_empty(), "{:?}", report.errors);

    let r = host.tool("m_tool", Some(json!({"k": 1}))).unwrap();
    assert_eq!(r.extension, "modern");
    assert_eq!(echo_of(&r.content), json!({"tool": "m_tool", "args": {"k": 1}, "from": "modern"}));
    let r = host.tool("l_tool", None).unwrap();
    assert_eq!(r.extension, "legacy");
    assert_eq!(echo_of(&r.content)["from"], "legacy");
    assert_eq!(host.command("m_cmd", "").unwrap().display.as_deref(), Some("modern:m_cmd:"));
    assert_eq!(host.command("l_cmd", "").unwrap().display.as_deref(), Some("legacy:l_cmd:"));

    for name in ["modern", "legacy"] {
        let info = ext_info(&host, name);
        assert_eq!(info.state, State::Ready);
        assert!(info.pid.is_some());
        assert!(read_log(t.path(), name).contains("[zot] ready (ready frame)"), "{}", read_log(t.path(), name));
    }
}

#[test]
fn no_ready_frame_means_ready_after_a_quiet_spell() {
    let t = TempDir::new("hs-autoready");
    let quiet = py_ext(t.path(), "quiet", "quiet", &["--no-ready", "--tools", "q_tool"]);
    let mut cfg = host_config(t.path(), vec![quiet]);
    cfg.timeouts.ready_idle = Duration::from_millis(250);
    cfg.timeouts.ready_grace = Duration::from_secs(60);
    let started = Instant::now();
    let (host, ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    let took = started.elapsed();
    // Ready, so not by the grace running out (that leaves it out of
    // `ready`), and the log says how.
    assert_eq!(report.ready, vec!["quiet".to_string()]);
    assert!(took >= Duration::from_millis(250), "ready before the quiet spell: {took:?}");
    assert!(took < Duration::from_secs(60), "the ready grace ran out instead: {took:?}");
    assert!(matches!(
        wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::Ready { .. })),
        Some(HostEvent::Ready { extensions }) if extensions == vec!["quiet".to_string()]
    ));
    assert!(read_log(t.path(), "quiet").contains("[zot] ready (no ready frame; quiet after the handshake)"));
    assert_eq!(echo_of(&host.tool("q_tool", None).unwrap().content)["from"], "quiet");
}

#[test]
fn shell_extension_registering_before_the_ack_without_ready_and_with_crlf() {
    let t = TempDir::new("hs-sh");
    let d = sh_ext(t.path(), "sh", "shfix", "sh_ext.sh", &["shfix"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["shfix".to_string()], "{report:?}");
    let r = host.tool("sh_echo", None).unwrap();
    let text = text_of(&r.content);
    assert!(text.starts_with("sh:") && text.len() > 3, "{text}");
    // Two calls get two different ids (a counter).
    let r2 = host.tool("sh_echo", None).unwrap();
    assert_ne!(text, text_of(&r2.content));
}

#[test]
fn hello_ack_carries_every_field_and_the_child_runs_in_its_directory() {
    let t = TempDir::new("hs-ack");
    let dir = py_ext(t.path(), "acker", "acker", &["--echo-ack", "--tools", "cwd"]);
    let project = t.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut cfg = host_config(t.path(), vec![dir.clone()]);
    cfg.cwd = project.clone();
    cfg.provider = "prov-x".into();
    cfg.model = "model-y".into();
    cfg.zot_version = "9.9.9-test".into();
    let (host, ev) = start_host(cfg);
    // Spawn, a Python start-up and the handshake: seconds on a loaded machine.
    let note = wait_event(&ev, Duration::from_secs(60), |e| {
        matches!(e, HostEvent::Notify { message, .. } if message.starts_with("ack:"))
    })
    .expect("the fixture echoes hello_ack");
    let HostEvent::Notify { extension, message, .. } = note else { unreachable!() };
    assert_eq!(extension, "acker");
    let ack: Value = serde_json::from_str(&message["ack:".len()..]).unwrap();
    let canon = std::fs::canonicalize(&dir).unwrap().display().to_string();
    assert_eq!(ack["type"], "hello_ack");
    assert_eq!(ack["protocol_version"], 1);
    assert_eq!(ack["zot_version"], "9.9.9-test");
    assert_eq!(ack["provider"], "prov-x");
    assert_eq!(ack["model"], "model-y");
    assert_eq!(ack["cwd"], project.display().to_string());
    assert_eq!(ack["extension_dir"], canon);
    assert_eq!(ack["data_dir"], canon);

    host.wait_ready().unwrap();
    assert_eq!(text_of(&host.tool("cwd", None).unwrap().content), canon);
}

#[test]
fn child_runs_in_its_own_process_group() {
    let t = TempDir::new("hs-pgrp");
    let d = py_ext(t.path(), "grp", "grp", &[]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    let pid = ext_info(&host, "grp").pid.expect("pid");
    assert_eq!(pgid_of(pid), Some(pid), "the child leads its own process group");
    assert_ne!(pgid_of(std::process::id()), Some(pid));
}

#[test]
fn stderr_lands_in_the_log_and_host_lines_are_prefixed() {
    let t = TempDir::new("hs-log");
    let d = py_ext(t.path(), "logger", "logger", &["--tools", "stderr"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d.clone()]));
    host.wait_ready().unwrap();
    let r = host.tool("stderr", Some(json!({"text": "a line on stderr 4711"}))).unwrap();
    assert_eq!(text_of(&r.content), "written");
    assert!(log_contains(t.path(), "logger", "\na line on stderr 4711\n", Duration::from_secs(30)));
    let log = read_log(t.path(), "logger");
    let canon = std::fs::canonicalize(&d).unwrap();
    // The start of each run is dated (UTC, RFC 3339).
    let first = log.lines().next().unwrap_or("");
    let date = first.strip_prefix(&format!("[zot] starting logger from {} at ", canon.display())).unwrap_or_else(|| panic!("{log}"));
    assert!(date.len() == 24 && date.ends_with('Z') && date.as_bytes()[10] == b'T' && date.starts_with("20"), "{date}");
    // Every line is either the child's own stderr or a `[zot] ` host line.
    let host_lines = log.lines().filter(|l| l.starts_with("[zot] ")).count();
    assert!(host_lines >= 2, "{log}");
    assert!(log.lines().all(|l| l.starts_with("[zot] ") || l == "a line on stderr 4711"), "{log}");
    assert!(t.path().join("home/logs/ext-logger.log").is_file());
}

#[test]
fn a_hello_with_another_name_is_logged_not_fatal() {
    let t = TempDir::new("hs-name");
    let d = py_ext(t.path(), "real", "real", &["--hello-name", "impostor", "--tools", "r_tool"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["real".to_string()]);
    assert_eq!(host.tool("r_tool", None).unwrap().extension, "real");
    assert!(read_log(t.path(), "real").contains("hello names \"impostor\" but the manifest says \"real\""));
}

#[test]
fn startup_waits_at_most_the_ready_grace() {
    let t = TempDir::new("hs-grace");
    let mute = py_ext(t.path(), "mute", "mute", &["--no-hello"]);
    let good = py_ext(t.path(), "good", "good", &["--tools", "g_tool"]);
    let mut cfg = host_config(t.path(), vec![mute, good]);
    cfg.timeouts.hello = Duration::from_secs(60);
    cfg.timeouts.ready_grace = Duration::from_millis(1000);
    let started = Instant::now();
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1000), "{took:?}");
    // The grace, not the mute extension's 60 s hello timeout.
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert!(!report.ready.contains(&"mute".to_string()), "{report:?}");
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(ext_info(&host, "mute").state, State::Starting);
    // (On a loaded machine `good` may miss the grace too; it is still usable.)
    assert!(wait_until(Duration::from_secs(60), || ext_info(&host, "good").state == State::Ready));
    assert_eq!(host.tool("g_tool", None).unwrap().extension, "good");
}
