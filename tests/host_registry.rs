//! docs/protocol.md §1 (discovery and precedence), §3.5 (load order, shadowed
//! names) and §3.11 (reload).

mod common;

use common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use zot_host::discovery::Sources;
use zot_host::host::{HostError, HostEvent, Request, Response, State};

#[test]
fn the_earlier_extension_in_load_order_wins_even_when_it_registers_later() {
    let t = TempDir::new("reg-shadow");
    // `first` is first in load order but registers only once the test opens
    // its gate, so `second`'s registrations arrive first.
    let gate = t.path().join("gate");
    let gate_arg = gate.display().to_string();
    let first = py_ext(t.path(), "first", "first", &["--gate", &gate_arg, "--tools", "dup,crash", "--commands", "dupc"]);
    let second = py_ext(t.path(), "second", "second", &["--tools", "dup,own", "--commands", "dupc"]);
    let mut cfg = host_config(t.path(), vec![first, second]);
    // Only a `ready` frame counts: `first` stays quiet, behind its gate, for
    // as long as `second` takes to start, and must not be auto-ready then.
    cfg.timeouts.ready_idle = Duration::from_secs(60);
    cfg.timeouts.ready_grace = Duration::from_secs(60);
    let (host, ev) = start_host(cfg);
    // `second` owns `dup` until `first` registers.
    assert!(wait_until(Duration::from_secs(60), || ext_info(&host, "second").state == State::Ready));
    let early = host.tool("dup", None).unwrap();
    assert!(ext_info(&host, "first").tools.is_empty(), "precondition: `first` registered too early");
    assert_eq!(early.extension, "second");
    std::fs::write(&gate, b"").unwrap();
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["first".to_string(), "second".to_string()]);

    assert_eq!(host.tool("dup", None).unwrap().extension, "first");
    assert_eq!(host.command("dupc", "").unwrap().display.as_deref(), Some("first:dupc:"));
    assert_eq!(host.tool("own", None).unwrap().extension, "second");

    let l = host.list().unwrap();
    let owners: Vec<(String, String)> = l.tools.iter().map(|t| (t.name.clone(), t.extension.clone())).collect();
    assert_eq!(owners.iter().filter(|(n, _)| n == "dup").count(), 1);
    assert!(owners.contains(&("dup".into(), "first".into())));
    assert_eq!(l.commands.iter().filter(|c| c.name == "dupc").map(|c| c.extension.as_str()).collect::<Vec<_>>(), vec!["first"]);
    let s = ext_info(&host, "second");
    assert_eq!(s.shadowed_tools, vec!["dup"]);
    assert_eq!(s.shadowed_commands, vec!["dupc"]);
    assert_eq!(s.tools, vec!["dup", "own"], "its own list still names what it registered");
    let f = ext_info(&host, "first");
    assert!(f.shadowed_tools.is_empty() && f.shadowed_commands.is_empty());
    let log = read_log(t.path(), "second");
    assert!(log.contains("[zot] tool dup is shadowed by extension \"first\" (earlier in load order)"), "{log}");
    assert!(log.contains("[zot] command /dupc is shadowed by extension \"first\""), "{log}");
    assert!(!read_log(t.path(), "first").contains("shadowed"));

    // The owner goes away: the shadowed registration takes over.
    assert!(matches!(host.tool("crash", None), Err(HostError::Exited { .. })));
    assert!(wait_event(&ev, Duration::from_secs(30), |e| matches!(e, HostEvent::Exited { .. })).is_some());
    assert_eq!(host.tool("dup", None).unwrap().extension, "second");
    assert_eq!(host.command("dupc", "").unwrap().display.as_deref(), Some("second:dupc:"));
    let s = ext_info(&host, "second");
    assert!(s.shadowed_tools.is_empty() && s.shadowed_commands.is_empty(), "{s:?}");
}

#[test]
fn host_built_ins_shadow_extension_commands() {
    let t = TempDir::new("reg-reserved");
    let d = py_ext(t.path(), "greedy", "greedy", &["--commands", "help,quit,mine"]);
    let mut cfg = host_config(t.path(), vec![d]);
    cfg.reserved_commands = vec!["help".into(), "quit".into()];
    let (host, _ev) = start_host(cfg);
    host.wait_ready().unwrap();
    assert!(matches!(host.command("help", ""), Err(HostError::UnknownCommand(_))));
    assert!(matches!(host.command("quit", ""), Err(HostError::UnknownCommand(_))));
    assert_eq!(host.command("mine", "").unwrap().extension, "greedy");
    let info = ext_info(&host, "greedy");
    assert_eq!(info.shadowed_commands, vec!["help", "quit"]);
    let l = host.list().unwrap();
    assert_eq!(l.commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["mine"]);
    let log = read_log(t.path(), "greedy");
    assert!(log.contains("[zot] command /help is shadowed by a host built-in"), "{log}");
    assert!(log.contains("[zot] command /quit is shadowed by a host built-in"), "{log}");
}

/// A Python-fixture extension that creates `<marker>` when started.
fn marked(parent: &Path, dir: &str, name: &str, marker: &Path, extra: &[&str]) -> std::path::PathBuf {
    let m = marker.display().to_string();
    let mut flags = vec!["--touch", m.as_str()];
    flags.extend_from_slice(extra);
    py_ext(parent, dir, name, &flags)
}

fn set_enabled(dir: &Path, enabled: bool) {
    let p = dir.join("extension.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    v["enabled"] = json!(enabled);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn ext_beats_project_beats_global_for_the_same_name() {
    let t = TempDir::new("reg-prec");
    let project = t.path().join("proj");
    let proj_exts = project.join(".zot/extensions");
    let global = t.path().join("home/extensions");
    let m = |s: &str| t.path().join(format!("mark-{s}"));
    let ext_dir = marked(&t.path().join("cli"), "same-cli", "same", &m("ext"), &["--tools", "who"]);
    marked(&proj_exts, "same-proj", "same", &m("proj"), &[]);
    marked(&global, "same-glob", "same", &m("glob"), &[]);
    // A name only in project and global: project wins.
    marked(&proj_exts, "pg", "pg", &m("pg-proj"), &[]);
    marked(&global, "pg", "pg", &m("pg-glob"), &[]);

    let mut cfg = host_config(t.path(), vec![ext_dir.clone()]);
    cfg.cwd = project.clone();
    cfg.trust_project = true;
    cfg.sources = Sources { ext_paths: vec![ext_dir.clone()], no_ext: false };
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["same".to_string(), "pg".to_string()]);
    let l = host.list().unwrap();
    assert_eq!(l.extensions.len(), 2);
    let same = ext_info(&host, "same");
    assert_eq!(same.source, "ext");
    assert_eq!(same.dir, std::fs::canonicalize(&ext_dir).unwrap().display().to_string());
    let pg = ext_info(&host, "pg");
    assert_eq!(pg.source, "project");
    assert_eq!(pg.dir, std::fs::canonicalize(proj_exts.join("pg")).unwrap().display().to_string());
    host.shutdown();
    assert!(m("ext").exists() && m("pg-proj").exists());
    for lost in ["proj", "glob", "pg-glob"] {
        assert!(!m(lost).exists(), "{lost} was started");
    }
    let log = read_log(t.path(), "same");
    assert!(log.contains("[zot] skipped ") && log.contains("(project)") && log.contains("(global)"), "{log}");
}

#[test]
fn load_order_is_ext_then_project_then_global_sorted_by_folder_and_disabled_are_not_started() {
    let t = TempDir::new("reg-order");
    let project = t.path().join("proj");
    let proj_exts = project.join(".zot/extensions");
    let global = t.path().join("home/extensions");
    let m = |s: &str| t.path().join(format!("mark-{s}"));
    let cli = t.path().join("cli");
    let e1 = py_ext(&cli, "zz", "e-first", &[]);
    let e2 = py_ext(&cli, "aa", "e-second", &[]);
    // Sorted by folder name, not by extension name.
    py_ext(&proj_exts, "2-p", "p-a", &[]);
    py_ext(&proj_exts, "1-p", "p-b", &[]);
    py_ext(&global, "b-g", "g-a", &[]);
    py_ext(&global, "a-g", "g-b", &[]);
    py_ext(&global, "B-g", "g-c", &[]); // 'B' < 'a' in byte order
    std::fs::create_dir_all(global.join(".hidden")).unwrap();
    // Disabled: not started, and a disabled higher entry hides nothing: the
    // enabled global `hid` below it loads.
    let off = marked(&global, "c-off", "off", &m("off"), &[]);
    set_enabled(&off, false);
    let hid = marked(&proj_exts, "3-hid", "hid", &m("hid-proj"), &[]);
    set_enabled(&hid, false);
    marked(&global, "d-hid", "hid", &m("hid-glob"), &[]);

    let mut cfg = host_config(t.path(), vec![]);
    cfg.cwd = project.clone();
    cfg.trust_project = true;
    cfg.sources = Sources { ext_paths: vec![e1.clone(), e2.clone()], no_ext: false };
    let (host, _ev) = start_host(cfg.clone());
    let report = host.wait_ready().unwrap();
    let want = ["e-first", "e-second", "p-b", "p-a", "g-c", "g-b", "g-a", "hid"];
    assert_eq!(report.ready, want.map(String::from).to_vec(), "{report:?}");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let l = host.list().unwrap();
    let names: Vec<&str> = l.extensions.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, want);
    let sources: Vec<&str> = l.extensions.iter().map(|e| e.source).collect();
    assert_eq!(sources, ["ext", "ext", "project", "project", "global", "global", "global", "global"]);
    host.shutdown();
    assert!(!m("off").exists() && !m("hid-proj").exists() && m("hid-glob").exists());

    // --no-ext: only the --ext paths.
    cfg.sources.no_ext = true;
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["e-first".to_string(), "e-second".to_string()]);
    assert_eq!(host.list().unwrap().extensions.len(), 2);
}

#[test]
fn a_broken_manifest_is_a_load_error_that_does_not_stop_the_others() {
    let t = TempDir::new("reg-broken");
    let global = t.path().join("home/extensions");
    std::fs::create_dir_all(global.join("junk")).unwrap();
    std::fs::write(global.join("junk/extension.json"), b"{ not json").unwrap();
    std::fs::create_dir_all(global.join("empty")).unwrap();
    py_ext(&global, "fine", "fine", &[]);
    let mut cfg = host_config(t.path(), vec![]);
    cfg.sources.no_ext = false;
    let (host, _ev) = start_host(cfg);
    let report = host.wait_ready().unwrap();
    assert_eq!(report.ready, vec!["fine".to_string()]);
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    assert!(report.errors.iter().any(|e| e.contains("junk/extension.json") && e.contains("invalid manifest")));
    assert!(report.errors.iter().any(|e| e.contains("empty/extension.json") && e.contains("cannot read")));
}

#[test]
fn reload_stops_rereads_respawns_and_reports() {
    let t = TempDir::new("reg-reload");
    let project = t.path().join("proj");
    let proj_exts = project.join(".zot/extensions");
    let cli = py_ext(&t.path().join("cli"), "cli", "cli", &["--tools", "before"]);
    py_ext(&proj_exts, "a", "pa", &["--tools", "pa_tool"]);
    let doomed = py_ext(&proj_exts, "b", "pb", &[]);
    let mut cfg = host_config(t.path(), vec![]);
    cfg.cwd = project.clone();
    cfg.trust_project = true;
    cfg.sources = Sources { ext_paths: vec![cli.clone()], no_ext: false };
    let (host, ev) = start_host(cfg);
    assert_eq!(host.wait_ready().unwrap().ready.len(), 3);
    let old_pids: Vec<u32> = host.list().unwrap().extensions.iter().filter_map(|e| e.pid).collect();
    assert_eq!(old_pids.len(), 3);

    // Between the loads: an --ext manifest changes, one breaks, one appears.
    py_ext(&t.path().join("cli"), "cli", "cli", &["--tools", "after"]);
    std::fs::write(doomed.join("extension.json"), b"[]").unwrap();
    py_ext(&proj_exts, "c", "pc", &["--tools", "pc_tool"]);

    let r = host.reload().unwrap();
    assert_eq!(r.stopped, 3);
    assert_eq!(r.loaded, 3);
    assert_eq!(r.ready, 3);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(r.errors[0].contains("b/extension.json"), "{:?}", r.errors);

    let l = host.list().unwrap();
    let names: Vec<&str> = l.extensions.iter().map(|e| e.name.as_str()).collect();
    // The broken one is listed after the loaded ones, failed, by its folder.
    assert_eq!(names, ["cli", "pa", "pc", "b"]);
    assert!(l.extensions[..3].iter().all(|e| e.state == State::Ready));
    assert_eq!(l.extensions[3].state, State::Failed);
    assert!(l.extensions[3].error.as_deref().is_some_and(|e| e.contains("b/extension.json")), "{:?}", l.extensions[3]);
    assert_eq!(host.tool("after", None).unwrap().extension, "cli");
    assert!(matches!(host.tool("before", None), Err(HostError::UnknownTool(_))));
    assert_eq!(host.tool("pc_tool", None).unwrap().extension, "pc");
    // The old processes are gone and none of them was reported as a crash.
    for pid in old_pids {
        assert!(wait_until(Duration::from_secs(30), || group_members(pid).is_empty()), "{pid}");
    }
    assert!(ev.try_iter().all(|e| !matches!(e, HostEvent::Exited { .. })));
    let log = read_log(t.path(), "cli");
    assert_eq!(log.matches("[zot] starting cli").count(), 2, "{log}");
}

#[test]
fn a_reload_asked_for_during_the_initial_load_still_reloads() {
    let t = TempDir::new("reg-reload-early");
    let cli = py_ext(&t.path().join("cli"), "cli", "cli", &["--tools", "before"]);
    // `slow` keeps the initial load going until the test opens its gate
    // (and is not auto-ready meanwhile: only its `ready` frame counts).
    let gate = t.path().join("gate");
    let slow = py_ext(t.path(), "slow", "slow", &["--gate", &gate.display().to_string()]);
    let mut cfg = host_config(t.path(), vec![cli.clone(), slow]);
    cfg.timeouts.ready_idle = Duration::from_secs(60);
    cfg.timeouts.ready_grace = Duration::from_secs(60);
    let (host, _ev) = start_host(cfg);
    assert!(wait_until(Duration::from_secs(60), || ext_info(&host, "cli").state == State::Ready));
    assert_eq!(ext_info(&host, "slow").state, State::Starting, "precondition: still loading");
    let old_pid = ext_info(&host, "cli").pid.unwrap();
    // The manifest changes after the initial discovery, then a reload,
    // asked for while the gate is still shut; then the gate opens, for
    // whichever `slow` process is waiting at it.
    py_ext(&t.path().join("cli"), "cli", "cli", &["--tools", "after"]);
    let (tx, rx) = crossbeam_channel::unbounded();
    host.submit(Request::Reload, move |r| {
        let _ = tx.send(r);
    });
    // Requests are handled in order: the reload was taken while `slow` was
    // still loading.
    assert_eq!(ext_info(&host, "slow").state, State::Starting, "precondition: still loading");
    std::fs::write(&gate, b"").unwrap();
    let r = match rx.recv_timeout(Duration::from_secs(60)).expect("the reload is answered") {
        Ok(Response::Reload(r)) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!((r.stopped, r.loaded, r.ready), (2, 2, 2), "{r:?}");
    assert_eq!(host.tool("after", None).unwrap().extension, "cli");
    assert!(matches!(host.tool("before", None), Err(HostError::UnknownTool(_))));
    assert_ne!(ext_info(&host, "cli").pid, Some(old_pid));
}

#[test]
fn calls_made_during_a_reload_wait_for_it() {
    let t = TempDir::new("reg-during-reload");
    let a = py_ext(t.path(), "a", "alpha", &["--tools", "echo", "--commands", "hi"]);
    let (host, _ev) = start_host(host_config(t.path(), vec![a]));
    host.wait_ready().unwrap();
    let old_pid = ext_info(&host, "alpha").pid;
    let (tx, rx) = crossbeam_channel::unbounded();
    let send = |tag: &'static str, req: Request| {
        let tx = tx.clone();
        host.submit(req, move |r| {
            let _ = tx.send((tag, r));
        });
    };
    send("reload", Request::Reload);
    send("tool", Request::Tool { name: "echo".into(), args: Some(json!({"n": 1})), tool_id: None });
    send("command", Request::Command { name: "hi".into(), args: "there".into() });
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (tag, r) = rx.recv_timeout(Duration::from_secs(60)).expect("answered");
        match (tag, r) {
            ("reload", Ok(Response::Reload(r))) => assert_eq!((r.stopped, r.ready), (1, 1), "{r:?}"),
            ("tool", Ok(Response::Tool(r))) => assert_eq!(echo_of(&r.content)["args"], json!({"n": 1})),
            ("command", Ok(Response::Command(r))) => assert_eq!(r.display.as_deref(), Some("alpha:hi:there")),
            (tag, other) => panic!("{tag}: {other:?}"),
        }
        seen.push(tag);
    }
    assert_eq!(seen[0], "reload", "the calls ran after the reload: {seen:?}");
    assert_ne!(ext_info(&host, "alpha").pid, old_pid, "a new process answered");
    host.shutdown();
}
