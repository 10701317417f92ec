//! docs/protocol.md §3.2, §3.8, §3.9: extensions that fail to load, crash while
//! answering, or stop reading their stdin; none of it touches the others.

mod common;

use common::*;
use crossbeam_channel::unbounded;
use serde_json::json;
use std::time::{Duration, Instant};
use zot_host::host::{HostError, HostEvent, Request, Response, State};

#[test]
fn no_hello_fails_after_the_hello_timeout_without_delaying_the_others() {
    let t = TempDir::new("fail-nohello");
    let mute = py_ext(t.path(), "mute", "mute", &["--no-hello"]);
    let good = py_ext(t.path(), "good", "good", &["--tools", "g_tool"]);
    let mut cfg = host_config(t.path(), vec![mute, good]);
    // Long enough for the good one to start and answer before it runs out,
    // however loaded the machine is.
    cfg.timeouts.hello = Duration::from_secs(15);
    cfg.timeouts.ready_grace = Duration::from_secs(60);
    let started = Instant::now();
    let (host, ev) = start_host(cfg);

    // The good one is ready and answering while the mute one still starts.
    let ready = wait_until(Duration::from_secs(60), || ext_info(&host, "good").state == State::Ready);
    assert!(ready, "{:?}\n{}", ext_info(&host, "good"), read_log(t.path(), "good"));
    let r = host.tool("g_tool", None).unwrap();
    assert_eq!(r.extension, "good");
    // Answered while the mute one still starts: it delayed nothing (its
    // failure, at 15 s, is still to come).
    let usable = started.elapsed();
    assert_eq!(ext_info(&host, "mute").state, State::Starting, "usable at {usable:?}");

    let failed = wait_event(&ev, Duration::from_secs(60), |e| matches!(e, HostEvent::LoadFailed { .. }));
    let failed_at = started.elapsed();
    let Some(HostEvent::LoadFailed { extension, message, .. }) = failed else { panic!("no load failure") };
    assert_eq!(extension, "mute");
    // With the end of what it wrote to its stderr meanwhile.
    assert_eq!(message, "no hello within 15s; its stderr: [mute] not saying hello");
    assert!(failed_at >= Duration::from_secs(15), "{failed_at:?}");

    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["good".to_string()]);
    assert_eq!(report.errors, vec!["extension \"mute\" failed to load: no hello within 15s; its stderr: [mute] not saying hello".to_string()]);
    let info = ext_info(&host, "mute");
    assert_eq!(info.state, State::Failed);
    assert_eq!(info.error.as_deref(), Some("no hello within 15s; its stderr: [mute] not saying hello"));
    assert!(read_log(t.path(), "mute").contains("[zot] failed to load: no hello within 15s"));
    // Its process is gone.
    let pid_gone = |h: &zot_host::host::Host| ext_info(h, "mute").pid.is_none();
    assert!(wait_until(Duration::from_secs(30), || pid_gone(&host)));
}

#[test]
fn a_first_frame_that_is_not_hello_fails_the_load() {
    let t = TempDir::new("fail-first");
    let d = py_ext(t.path(), "rude", "rude", &["--bad-first"]);
    let good = py_ext(t.path(), "good", "good", &[]);
    let (host, _ev) = start_host(host_config(t.path(), vec![d, good]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["good".to_string()]);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(report.errors[0].contains("\"rude\""), "{:?}", report.errors);
    assert!(report.errors[0].contains("first frame was \"ready\", expected \"hello\""), "{:?}", report.errors);
    assert_eq!(ext_info(&host, "rude").state, State::Failed);
}

#[test]
fn an_early_exit_fails_the_load_with_the_exit_code() {
    let t = TempDir::new("fail-exit");
    // Several at once: the exit status must win over "stdout closed",
    // whichever the host hears of first.
    let codes = [7, 42, 3, 99, 12, 1];
    let dirs = codes
        .iter()
        .map(|c| {
            let name = format!("quitter{c}");
            py_ext(t.path(), &name, &name, &["--exit-now", "--exit-now-code", &c.to_string()])
        })
        .collect();
    let (host, _ev) = start_host(host_config(t.path(), dirs));
    let report = host.wait_ready().unwrap();
    assert!(report.ready.is_empty());
    assert_eq!(report.errors.len(), codes.len(), "{:?}", report.errors);
    for c in codes {
        let name = format!("quitter{c}");
        let info = ext_info(&host, &name);
        assert_eq!(info.state, State::Failed);
        let err = info.error.unwrap_or_default();
        assert!(err.contains(&format!("exit code {c}")), "{name}: {err}");
        assert!(
            report.errors.iter().any(|e| e.contains(&format!("\"{name}\"")) && e.contains(&format!("exit code {c}"))),
            "{:?}",
            report.errors
        );
    }
}

#[test]
fn a_missing_exec_fails_naming_the_path() {
    let t = TempDir::new("fail-exec");
    let d = write_manifest(t.path(), "ghost", json!({"name": "ghost", "exec": "./bin/not-there"}));
    let good = py_ext(t.path(), "good", "good", &[]);
    let (host, ev) = start_host(host_config(t.path(), vec![d.clone(), good]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["good".to_string()]);
    let dir = std::fs::canonicalize(&d).unwrap().display().to_string();
    let names_path = |m: &str| m.contains(&dir) && m.contains("bin/not-there") && m.contains("no such file");
    assert_eq!(report.errors.len(), 1);
    assert!(report.errors[0].contains("\"ghost\"") && names_path(&report.errors[0]), "{:?}", report.errors);
    let Some(HostEvent::LoadFailed { extension, message, .. }) =
        wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::LoadFailed { .. }))
    else {
        panic!("no event")
    };
    assert_eq!(extension, "ghost");
    assert!(names_path(&message), "{message}");
    let info = ext_info(&host, "ghost");
    assert_eq!((info.state, info.pid), (State::Failed, None));
    assert!(read_log(t.path(), "ghost").contains("[zot] failed to load"));
}

#[test]
fn a_hostile_manifest_name_is_refused_and_never_spawned() {
    let t = TempDir::new("fail-hostile");
    let marker = t.path().join("spawned");
    let evil = sh_ext(t.path(), "evil", "../evil", "sh_ext.sh", &["evil", &marker.display().to_string()]);
    let good = py_ext(t.path(), "good", "good", &[]);
    let (host, ev) = start_host(host_config(t.path(), vec![evil, good]));
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["good".to_string()]);
    assert_eq!(report.loaded, 1);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(report.errors[0].contains("invalid name \"../evil\""), "{:?}", report.errors);
    let Some(HostEvent::LoadFailed { extension, .. }) =
        wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::LoadFailed { .. }))
    else {
        panic!("no event")
    };
    assert_eq!(extension, "evil", "attributed to its folder");
    // Listed as failed under its folder's name, never started.
    let l = host.list().unwrap();
    let listed: Vec<(&str, State)> = l.extensions.iter().map(|e| (e.name.as_str(), e.state)).collect();
    assert_eq!(listed, [("good", State::Ready), ("evil", State::Failed)]);
    assert_eq!(l.extensions[1].pid, None);
    host.shutdown();
    assert!(!marker.exists(), "the hostile extension was started");
    // No log anywhere but logs/ext-good.log.
    let logs: Vec<String> = std::fs::read_dir(t.path().join("home/logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(logs, vec!["ext-good.log".to_string()]);
    let home_entries: Vec<String> = std::fs::read_dir(t.path().join("home"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(home_entries, vec!["logs".to_string()]);
    assert!(!t.path().join("evil.log").exists() && !t.path().join("home/evil.log").exists());
}

#[test]
fn a_crash_mid_call_fails_it_at_once_and_leaves_the_others_alone() {
    let t = TempDir::new("fail-crash");
    let a = py_ext(t.path(), "crashy", "crashy", &["--tools", "crash,sleep,a_tool", "--commands", "a_cmd", "--events", "turn_start"]);
    let b = py_ext(t.path(), "steady", "steady", &["--tools", "b_tool", "--events", "turn_start"]);
    let mut cfg = host_config(t.path(), vec![a, b]);
    cfg.timeouts.tool = Duration::from_secs(30);
    cfg.timeouts.command = Duration::from_secs(30);
    let (host, ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let pid = ext_info(&host, "crashy").pid.unwrap();

    // A slow call in flight, then the crash.
    let (tx, rx) = unbounded();
    let req = Request::Tool { name: "sleep".into(), args: Some(json!({"ms": 20000})), tool_id: None };
    host.submit(req, move |r| {
        let _ = tx.send(r);
    });
    let started = Instant::now();
    let r = host.tool("crash", None);
    let took = started.elapsed();
    match r {
        Err(HostError::Exited { extension, .. }) => assert_eq!(extension, "crashy"),
        other => panic!("{other:?}"),
    }
    // Far from the 30 s tool timeout (and the 20 s the other call sleeps).
    assert!(took < Duration::from_secs(14), "waited for the timeout: {took:?}");
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Err(HostError::Exited { extension, .. })) => assert_eq!(extension, "crashy"),
        other => panic!("the in-flight call: {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(14), "the in-flight call waited: {:?}", started.elapsed());

    let exited = wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::Exited { .. }));
    assert_eq!(exited, Some(HostEvent::Exited { extension: "crashy".into(), code: Some(3), signal: None, restart_follows: false, not_by_policy: true }));

    // Unregistered, listed as exited, the other one unaffected.
    assert!(matches!(host.tool("a_tool", None), Err(HostError::UnknownTool(_))));
    assert!(matches!(host.command("a_cmd", ""), Err(HostError::UnknownCommand(_))));
    let l = host.list().unwrap();
    assert!(l.tools.iter().all(|t| t.extension != "crashy"), "{:?}", l.tools);
    assert!(l.commands.iter().all(|c| c.extension != "crashy"));
    let info = ext_info(&host, "crashy");
    assert_eq!(info.state, State::Exited);
    assert_eq!(info.pid, None);
    assert!(info.error.unwrap_or_default().contains("exit code 3"));
    assert_eq!(ext_info(&host, "steady").state, State::Ready);
    assert_eq!(host.tool("b_tool", None).unwrap().extension, "steady");
    assert_eq!(host.event("turn_start", Default::default()).unwrap(), 1, "events go to the living only");
    assert!(log_contains(t.path(), "crashy", "[zot] exited (exit code 3)", Duration::from_secs(30)));
    assert!(wait_until(Duration::from_secs(30), || !process_alive(pid)));
}

#[test]
fn a_crash_mid_command_fails_it_at_once() {
    let t = TempDir::new("fail-crash-cmd");
    let a = py_ext(t.path(), "cc", "cc", &["--commands", "crash"]);
    let mut cfg = host_config(t.path(), vec![a]);
    cfg.timeouts.command = Duration::from_secs(30);
    let (host, ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let started = Instant::now();
    let r = host.command("crash", "now");
    assert!(matches!(&r, Err(HostError::Exited { extension, .. }) if extension == "cc"), "{r:?}");
    // Far from the 30 s command timeout.
    assert!(started.elapsed() < Duration::from_secs(14), "{:?}", started.elapsed());
    let exited = wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::Exited { .. }));
    assert_eq!(exited, Some(HostEvent::Exited { extension: "cc".into(), code: Some(4), signal: None, restart_follows: false, not_by_policy: true }));
    assert_eq!(r.unwrap_err().code(), "extension_exited");
}

#[test]
fn a_child_that_stops_reading_stdin_gets_busy_and_blocks_nobody() {
    let t = TempDir::new("fail-busy");
    let deaf = py_ext(t.path(), "deaf", "deaf", &["--legacy", "--tools", "d_tool", "--intercepts", "tool_call", "--ignore-stdin"]);
    let ok = py_ext(t.path(), "ok", "ok", &["--tools", "o_tool"]);
    let mut cfg = host_config(t.path(), vec![deaf, ok]);
    cfg.queue_limit = 4;
    // Far above the bounds below: a call or interceptor that waited for a
    // timeout instead of failing at once would miss them by far.
    cfg.timeouts.tool = Duration::from_secs(60);
    cfg.timeouts.intercept = Duration::from_secs(60);
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["deaf".to_string(), "ok".to_string()]);

    // Each call carries 100 KiB: the 64 KiB pipe fills with the first, then
    // the queue of 4; later calls must fail at once.
    let big = "z".repeat(100 * 1024);
    let (tx, rx) = unbounded();
    let started = Instant::now();
    let mut busy_at = None;
    for i in 0..40 {
        let tx = tx.clone();
        let req = Request::Tool { name: "d_tool".into(), args: Some(json!({"i": i, "big": big})), tool_id: None };
        host.submit(req, move |r| {
            let _ = tx.send((i, r));
        });
        // Busy answers come back synchronously from the dispatcher.
        while let Ok((j, r)) = rx.try_recv() {
            match r {
                Err(HostError::Busy { extension }) => {
                    assert_eq!(extension, "deaf");
                    busy_at.get_or_insert((j, started.elapsed()));
                }
                other => panic!("call {j}: {other:?}"),
            }
        }
        // The other extension keeps answering meanwhile.
        if i % 10 == 9 {
            let t0 = Instant::now();
            assert_eq!(host.tool("o_tool", Some(json!({"i": i}))).unwrap().extension, "ok");
            assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
        }
        if busy_at.is_some() && i >= 12 {
            break;
        }
    }
    let (first_busy, when) = busy_at.expect("no call failed with busy");
    assert!(first_busy <= 8, "busy only at call {first_busy}");
    assert!(when < Duration::from_secs(30), "{when:?}");
    assert_eq!(HostError::Busy { extension: "deaf".into() }.code(), "busy");
    // Calls to it keep failing fast while it is stuck, the other still answers.
    let t0 = Instant::now();
    assert!(matches!(host.tool("d_tool", Some(json!({}))), Err(HostError::Busy { .. })));
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(host.tool("o_tool", None).unwrap().extension, "ok");
    assert_eq!(ext_info(&host, "deaf").state, State::Ready);
    // Its place in an intercept chain fails at once too (fail-open: allow),
    // rather than after the intercept timeout.
    let t0 = Instant::now();
    let payload = json!({"tool_name": "x", "tool_args": {}}).as_object().unwrap().clone();
    let out = host.intercept("tool_call", payload).unwrap();
    assert!(!out.block);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert!(log_contains(t.path(), "deaf", "[zot] intercept of tool_call failed: extension \"deaf\" is busy", Duration::from_secs(30)));
    drop(tx);
    // Shutdown is not blocked by the stuck writer either.
    let t0 = Instant::now();
    host.shutdown();
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    // The calls it never answered were failed by the shutdown.
    let rest: Vec<_> = rx.try_iter().collect();
    assert!(rest.iter().all(|(_, r)| matches!(r, Err(HostError::ShuttingDown) | Err(HostError::Busy { .. }))), "{rest:?}");
    assert!(!rest.is_empty());
    let _ = Response::Done;
}

/// Sends 100 KiB calls to `tool` until one fails with `busy`; how many
/// were sent then (at most 200). A busy answer is given while the call is
/// handled, so it is there once a later request (a listing) is answered.
type Answers = (String, Result<Response, HostError>);

fn calls_until_busy(host: &zot_host::host::Host, tool: &str, answers: &crossbeam_channel::Sender<Answers>, rx: &crossbeam_channel::Receiver<Answers>) -> Option<usize> {
    let big = "z".repeat(100 * 1024);
    for i in 1..=200 {
        let tx = answers.clone();
        let name = tool.to_string();
        let req = Request::Tool { name: tool.into(), args: Some(json!({"i": i, "big": big})), tool_id: None };
        host.submit(req, move |r| {
            let _ = tx.send((name, r));
        });
        host.list().unwrap();
        if let Ok((who, r)) = rx.try_recv() {
            match r {
                Err(HostError::Busy { .. }) if who == tool => return Some(i),
                other => panic!("{who} call {i}: {other:?}"),
            }
        }
    }
    None
}

#[test]
fn stalled_children_share_one_byte_budget() {
    let t = TempDir::new("fail-budget");
    let a = py_ext(t.path(), "deaf-a", "deaf-a", &["--legacy", "--tools", "a_tool", "--ignore-stdin"]);
    let b = py_ext(t.path(), "deaf-b", "deaf-b", &["--legacy", "--tools", "b_tool", "--ignore-stdin"]);
    let ok = py_ext(t.path(), "ok", "ok", &["--tools", "o_tool"]);
    let mut cfg = host_config(t.path(), vec![a, b, ok]);
    // Each child alone could queue 64 MiB; together they may queue 1 MiB.
    cfg.queue_bytes = 64 * 1024 * 1024;
    cfg.queue_budget = 1024 * 1024;
    cfg.timeouts.tool = Duration::from_secs(60);
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    let (tx, rx) = unbounded();
    // The pipe and the batch take a few calls, the budget some ten more.
    let n_a = calls_until_busy(&host, "a_tool", &tx, &rx).expect("the first stalled child never got busy");
    assert!(n_a <= 40, "busy only at call {n_a}");
    // The budget is spent: the second stalled child gets its pipe and batch
    // and one queued frame (its queue was empty), then busy.
    let n_b = calls_until_busy(&host, "b_tool", &tx, &rx).expect("the second stalled child never got busy");
    assert!(n_b < n_a, "the second child got {n_b} calls, the first {n_a}");
    // A child that reads is not touched by the budget.
    assert_eq!(host.tool("o_tool", None).unwrap().extension, "ok");
    drop(tx);
    host.shutdown();
    let rest: Vec<_> = rx.try_iter().collect();
    assert!(rest.iter().all(|(_, r)| matches!(r, Err(HostError::ShuttingDown) | Err(HostError::Busy { .. }))), "{rest:?}");
}
