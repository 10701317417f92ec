//! docs/protocol.md §3.8, §3.10: shutdown escalates shutdown → SIGTERM → SIGKILL
//! for every extension in parallel, within a bound, and leaves no process of
//! their groups behind; a leader that exits takes its group with it.

mod common;

use common::*;
use crossbeam_channel::unbounded;
use serde_json::json;
use std::time::{Duration, Instant};
use zot_host::host::{HostError, HostEvent, Request, Response, State};

/// Pids (= process groups) of every extension in the listing.
fn groups(host: &zot_host::host::Host) -> Vec<(String, u32)> {
    host.list().unwrap().extensions.iter().filter_map(|e| e.pid.map(|p| (e.name.clone(), p))).collect()
}

#[test]
fn stubborn_children_and_stdout_holding_grandchildren_are_gone_within_the_bound() {
    let t = TempDir::new("sd-stubborn");
    let dirs = vec![
        py_ext(t.path(), "stubborn1", "stubborn1", &["--ignore-term", "--ignore-shutdown", "--linger"]),
        py_ext(t.path(), "stubborn2", "stubborn2", &["--ignore-term", "--ignore-shutdown", "--linger", "--grandchild"]),
        py_ext(t.path(), "holder", "holder", &["--grandchild", "--linger"]),
        py_ext(t.path(), "lingerer", "lingerer", &["--grandchild", "--ignore-shutdown", "--linger"]),
        py_ext(t.path(), "polite", "polite", &[]),
    ];
    let mut cfg = host_config(t.path(), dirs);
    // Graces long enough that stopping the extensions one after another
    // (8 s at least) is far from stopping them in parallel (3 s and what a
    // loaded machine adds).
    cfg.timeouts.shutdown_grace = Duration::from_secs(2);
    cfg.timeouts.term_grace = Duration::from_secs(1);
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready.len(), 5, "{report:?}");
    let groups = groups(&host);
    assert_eq!(groups.len(), 5);
    for (name, pgid) in &groups {
        let want = if ["stubborn2", "holder", "lingerer"].contains(&name.as_str()) { 2 } else { 1 };
        assert!(
            wait_until(Duration::from_secs(30), || group_members(*pgid).len() >= want),
            "{name}: {:?}",
            group_members(*pgid)
        );
    }

    let started = Instant::now();
    host.shutdown();
    let took = started.elapsed();
    // The stubborn ones need SIGKILL: not before shutdown_grace + term_grace;
    // all in parallel, so well under the sum over extensions.
    assert!(took >= Duration::from_secs(3), "SIGKILL came early: {took:?}");
    // Stopped one after another, the two stubborn ones alone would take
    // twice that, and the lingering one 2 s more.
    assert!(took < Duration::from_secs(2 * 3 + 2), "shutdown took {took:?}");
    for (name, pgid) in &groups {
        assert!(
            wait_until(Duration::from_secs(30), || group_members(*pgid).is_empty()),
            "{name}: group {pgid} still has {:?}",
            group_members(*pgid)
        );
    }
    let log = read_log(t.path(), "stubborn1");
    assert!(log.contains("[zot] no exit 2s after shutdown; sending SIGTERM to its process group"), "{log}");
    assert!(log.contains("[zot] no exit 1s after SIGTERM; sending SIGKILL to its process group"), "{log}");
    assert!(log.contains("[zot] stopped (signal 9)"), "{log}");
    let log = read_log(t.path(), "polite");
    assert!(!log.contains("SIGTERM"), "{log}");
    assert!(log.contains("[zot] stopped (exit code 0)"), "{log}");
    // The holder's leader acknowledged and exited; its grandchild went with it.
    assert!(!read_log(t.path(), "holder").contains("SIGKILL"), "{}", read_log(t.path(), "holder"));
    // Lingering after stdin closes ends with SIGTERM.
    assert!(read_log(t.path(), "lingerer").contains("sending SIGTERM"));
    assert!(!read_log(t.path(), "lingerer").contains("sending SIGKILL"));
}

#[test]
fn cooperative_extensions_stop_quickly_and_shutdown_is_idempotent() {
    let t = TempDir::new("sd-polite");
    let dirs = (0..4).map(|i| py_ext(t.path(), &format!("p{i}"), &format!("p{i}"), &["--tools", &format!("t{i}")])).collect();
    let mut cfg = host_config(t.path(), dirs);
    cfg.timeouts.shutdown_grace = Duration::from_secs(5);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let groups = groups(&host);
    let started = Instant::now();
    host.shutdown();
    for (_, pgid) in &groups {
        assert!(wait_until(Duration::from_secs(30), || group_members(*pgid).is_empty()));
    }
    // They exited on `shutdown`, before the 5 s grace ran out.
    for i in 0..4 {
        let log = read_log(t.path(), &format!("p{i}"));
        assert!(log.contains("[zot] stopped (exit code 0)") && !log.contains("SIGTERM"), "{log}");
    }
    let _ = started;
    host.shutdown();
    assert_eq!(host.tool("t0", None), Err(HostError::ShuttingDown));
    assert_eq!(host.list().map(|_| ()), Err(HostError::ShuttingDown));
}

#[test]
fn calls_in_flight_at_shutdown_are_answered() {
    let t = TempDir::new("sd-inflight");
    let d = py_ext(t.path(), "busy", "busy", &["--tools", "sleep"]);
    let mut cfg = host_config(t.path(), vec![d]);
    cfg.timeouts.tool = Duration::from_secs(120);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let (tx, rx) = unbounded();
    for _ in 0..3 {
        let tx = tx.clone();
        let req = Request::Tool { name: "sleep".into(), args: Some(json!({"ms": 60000})), tool_id: None };
        host.submit(req, move |r| {
            let _ = tx.send(r);
        });
    }
    let started = Instant::now();
    host.shutdown();
    for _ in 0..3 {
        let r = rx.recv_timeout(Duration::from_secs(30)).expect("every call is answered");
        assert_eq!(r.map(|_| ()), Err(HostError::ShuttingDown));
    }
    // Not after the 60 s the calls would take.
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}

#[test]
fn a_leader_that_exits_on_its_own_takes_its_group_with_it() {
    let t = TempDir::new("sd-leader");
    // The grandchild holds the leader's stdout, so no EOF ever comes: the
    // exit status alone must fail the call and end the group.
    let d = py_ext(t.path(), "parent", "parent", &["--grandchild", "--tools", "crash"]);
    let other = py_ext(t.path(), "other", "other", &["--tools", "o"]);
    let mut cfg = host_config(t.path(), vec![d, other]);
    cfg.timeouts.tool = Duration::from_secs(30);
    let (host, ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let pgid = ext_info(&host, "parent").pid.unwrap();
    assert!(wait_until(Duration::from_secs(30), || group_members(pgid).len() >= 2), "{:?}", group_members(pgid));
    let grandchildren: Vec<u32> = group_members(pgid).into_iter().filter(|p| *p != pgid).collect();

    let started = Instant::now();
    let r = host.tool("crash", None);
    assert!(matches!(&r, Err(HostError::Exited { extension, .. }) if extension == "parent"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    let exited = wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::Exited { .. }));
    assert_eq!(exited, Some(HostEvent::Exited { extension: "parent".into(), code: Some(3), signal: None, restart_follows: false, not_by_policy: true }));
    assert!(
        wait_until(Duration::from_secs(30), || group_members(pgid).is_empty()),
        "left behind: {:?}",
        group_members(pgid)
    );
    for gc in grandchildren {
        assert!(!process_alive(gc), "grandchild {gc} survived");
    }
    assert_eq!(ext_info(&host, "parent").state, State::Exited);
    assert_eq!(host.tool("o", None).unwrap().extension, "other");
}

#[test]
fn closing_stdout_but_running_on_is_treated_as_an_exit() {
    let t = TempDir::new("sd-eof");
    // `exec 1>&-` after the handshake: stdout closes, the process lives on.
    let script = t.path().join("closer.sh");
    std::fs::write(
        &script,
        concat!(
            "printf '{\"type\":\"hello\",\"name\":\"closer\"}\\n'\n",
            "printf '{\"type\":\"register_tool\",\"name\":\"c\",\"schema\":{}}\\n'\n",
            "printf '{\"type\":\"ready\"}\\n'\n",
            "read -r ack\n",
            "read -r call\n",
            "exec 1>&-\n",
            "sleep 1000\n",
        ),
    )
    .unwrap();
    let d = write_manifest(t.path(), "closer", json!({"name": "closer", "exec": "sh", "args": [script.display().to_string()]}));
    let mut cfg = host_config(t.path(), vec![d]);
    cfg.timeouts.tool = Duration::from_secs(30);
    let (host, ev) = start_host(cfg);
    assert_eq!(host.wait_ready().unwrap().ready, vec!["closer".to_string()]);
    let pgid = ext_info(&host, "closer").pid.unwrap();
    let started = Instant::now();
    let r = host.tool("c", None);
    assert!(matches!(&r, Err(HostError::Exited { extension, .. }) if extension == "closer"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    // The host does not wait for the process to go by itself: it kills it.
    let exited = wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::Exited { .. }));
    assert!(matches!(exited, Some(HostEvent::Exited { ref extension, .. }) if extension == "closer"), "{exited:?}");
    assert!(wait_until(Duration::from_secs(30), || group_members(pgid).is_empty()), "{:?}", group_members(pgid));
    assert!(read_log(t.path(), "closer").contains("still running after closing stdout"));
    assert!(matches!(host.tool("c", None), Err(HostError::UnknownTool(_))));
}

#[test]
fn calls_written_before_a_stop_are_answered_before_the_extension_exits() {
    // Calls already written to an extension reach it before `shutdown`; one
    // that answers in order answers them, and those answers count, for a
    // reload as for a shutdown.
    let t = TempDir::new("sd-drain");
    let d = py_ext(t.path(), "orderly", "orderly", &["--tools", "echo"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d]));
    host.wait_ready().unwrap();
    for stop in ["reload", "shutdown"] {
        let (tx, rx) = unbounded();
        for i in 0..50 {
            let tx = tx.clone();
            let req = Request::Tool { name: "echo".into(), args: Some(json!({"i": i})), tool_id: None };
            host.submit(req, move |r| {
                let _ = tx.send((i, r));
            });
        }
        if stop == "reload" {
            let r = host.reload().unwrap();
            assert_eq!((r.stopped, r.ready), (1, 1), "{r:?}");
        } else {
            host.shutdown();
        }
        for _ in 0..50 {
            let (i, r) = rx.recv_timeout(Duration::from_secs(30)).expect("every call is answered");
            let reply = r.unwrap_or_else(|e| panic!("{stop}: call {i} failed: {e}"));
            let Response::Tool(reply) = reply else { panic!("{reply:?}") };
            assert_eq!(echo_of(&reply.content)["args"], json!({"i": i}), "{stop}");
        }
    }
}
