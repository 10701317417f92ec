//! Unit tests of the process layer: spawning, the reader and writer
//! threads, and the reaper, with real short-lived processes.

use super::*;
use crate::manifest::Manifest;

#[test]
fn the_group_is_never_signalled_after_the_reap() {
    spawn_from_this_thread();
    let dir = std::env::temp_dir().join(format!("zot-child-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = br#"{"name":"quick","exec":"/bin/sh","args":["-c","exit 3"]}"#;
    let m = Manifest::parse(json, dir.clone(), &dir.join("extension.json")).unwrap();
    let log = Log::open(&dir.join("quick.log")).unwrap();
    let refused = std::thread::spawn({
        let (m, log) = (m.clone(), log.clone());
        move || {
            let (tx, _rx) = crate::wake::channel();
            Child::spawn_lines(&m, Path::new("/bin/sh"), &[], &log, None, tx, |m| m).map(|_| ())
        }
    });
    let refused = refused.join().unwrap().unwrap_err();
    assert!(refused.to_string().contains("outlives"), "a thread not marked may not start a process: {refused}");
    let (tx, rx) = crate::wake::channel();
    let child = Child::spawn(&m, Path::new("/bin/sh"), &[], &log, &QueueBounds { frames: 8, bytes: 1 << 20, shared: Budget::new(1 << 24) }, None, None, tx, |m| m).unwrap();
    let status = loop {
        match rx.recv_deadline(Some(std::time::Instant::now() + std::time::Duration::from_secs(10))).expect("the exit is reported") {
            ChildMsg::Exited(s) => break s,
            _ => continue,
        }
    };
    assert_eq!(status.and_then(|s| s.code()), Some(3));
    // Seen but not reaped: the zombie still pins the pid and group id.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.pid)).unwrap();
    assert!(stat.rsplit(')').next().unwrap().trim_start().starts_with('Z'), "{stat}");
    assert!(child.signal_group(0), "signalled while the zombie pins the group");
    child.reap();
    assert!(!std::path::Path::new(&format!("/proc/{}", child.pid)).exists() || {
        // The pid may already be someone else's; it is not our zombie.
        let s = std::fs::read_to_string(format!("/proc/{}/stat", child.pid)).unwrap_or_default();
        !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z')
    });
    assert!(!child.signal_group(libc::SIGKILL), "no signal after the reap");
    let _ = std::fs::remove_dir_all(dir);
}

/// `/proc/PID/stat` fields after the command: state, ppid, and the
/// start time that tells this process from a later one with its pid.
fn stat_of(pid: u32) -> Option<(String, u32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    Some((f.first()?.to_string(), f.get(1)?.parse().ok()?, f.get(19)?.parse().ok()?))
}

#[test]
fn a_child_dropped_before_its_reap_is_killed_and_leaves_no_zombie() {
    spawn_from_this_thread();
    let dir = std::env::temp_dir().join(format!("zot-child-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = br#"{"name":"sleeper","exec":"/bin/sh","args":["-c","exec sleep 1000"]}"#;
    let m = Manifest::parse(json, dir.clone(), &dir.join("extension.json")).unwrap();
    let log = Log::open(&dir.join("sleeper.log")).unwrap();
    let (tx, rx) = crate::wake::channel();
    let bounds = QueueBounds { frames: 8, bytes: 1 << 20, shared: Budget::new(1 << 24) };
    let child = Child::spawn(&m, Path::new("/bin/sh"), &[], &log, &bounds, None, None, tx, |m| m).unwrap();
    let pid = child.pid;
    let (_, ppid, started) = stat_of(pid).expect("running");
    assert_eq!(ppid, std::process::id());
    drop(child);
    // Killed, then reaped by the reaper: no process of that pid and
    // start time is left, not even a zombie.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while stat_of(pid).is_some_and(|(_, _, t)| t == started) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let left = stat_of(pid).filter(|(_, _, t)| *t == started);
    assert!(left.is_none(), "still there: {left:?}");
    // Its threads are gone too: nothing reports any more.
    let done = loop {
        match rx.recv_deadline(Some(end)) {
            Ok(ChildMsg::Eof) => continue,
            other => break other,
        }
    };
    assert!(matches!(done, Err(crossbeam_channel::RecvTimeoutError::Disconnected)), "{done:?}");
    let _ = std::fs::remove_dir_all(dir);
}
