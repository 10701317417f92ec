//! Process lifetime guarantees through the real binary (issue 5,
//! reliability), for `zot serve` and the console (`zot` with stdin a pipe
//! kept open):
//!
//! - SIGINT, SIGTERM and SIGHUP shut every extension down cleanly (the
//!   `shutdown` frame is acknowledged, a stubborn one is escalated to
//!   SIGTERM/SIGKILL, grandchildren in the group go too) and zot exits
//!   130 / 143 / 129;
//! - SIGKILL to `zot serve` still takes its extensions with it (Linux
//!   parent-death signal);
//! - an extension that crashes or fails to load is reaped: no zombie child
//!   of zot persists;
//! - an extension sees only fds 0, 1 and 2, even with several loaded at
//!   once: none inherits another's pipes, the log files or zot's own.
//!
//! Every run has its own `ZOT_HOME`, `--cwd` and extension folders; every
//! wait is a poll with a deadline.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{group_members, proc_start_time, proc_state, process_alive, py_ext, wait_until, zombie_children, TempDir};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;
use zot_proc::{assert_gone_within, children_of, session_args, Zot, LINE_WAIT};

/// How long a clean stop may take: the shutdown grace (2 s), SIGTERM and
/// its grace (1 s), SIGKILL, on a loaded machine.
const STOP_WAIT: Duration = Duration::from_secs(15);

fn ext(t: &TempDir, name: &str, flags: &[&str]) -> PathBuf {
    py_ext(&t.path().join("exts"), name, name, flags)
}

/// `zot [serve] --no-ext --cwd T/cwd <FAST> --ext D...`, stdin a pipe.
fn start(t: &TempDir, serve: bool, exts: &[PathBuf]) -> Zot {
    let args = session_args(t.path(), serve.then_some("serve"), exts, &[]);
    Zot::spawn(t.path(), &args, &[])
}

fn json_line(l: &str) -> Value {
    serde_json::from_str(l).unwrap_or(Value::Null)
}

/// Waits for `ready`; returns the names it lists.
fn wait_ready(z: &mut Zot) -> Vec<String> {
    let l = z.wait_line("ready", |l| json_line(l)["type"] == "ready");
    json_line(&l)["extensions"].as_array().expect("names").iter().map(|n| n.as_str().unwrap_or("").to_string()).collect()
}

/// Sends a `zot serve` request and waits for its response.
fn request(z: &mut Zot, id: &str, mut req: Value) -> Value {
    req["id"] = json!(id);
    z.send(&req.to_string());
    let l = z.wait_line(&format!("response {id}"), |l| {
        let v = json_line(l);
        v["type"] == "response" && v["id"] == json!(id)
    });
    json_line(&l)
}

/// Pid of every extension, by name, from `list`.
fn serve_pids(z: &mut Zot) -> BTreeMap<String, u32> {
    let r = request(z, "pids", json!({"type": "list"}));
    let mut out = BTreeMap::new();
    for e in r["result"]["extensions"].as_array().expect("extensions") {
        if let Some(pid) = e["pid"].as_u64() {
            out.insert(e["name"].as_str().unwrap_or("").to_string(), pid as u32);
        }
    }
    out
}

/// Polls until no process in `pids`, nor any member of their groups, is left.
fn assert_gone(z: &Zot, pids: &[u32]) {
    assert_gone_within(pids, STOP_WAIT, &z.context());
}

fn log_of(z: &Zot, name: &str) -> String {
    std::fs::read_to_string(z.zot_home.join("logs").join(format!("ext-{name}.log"))).unwrap_or_default()
}

/// A grandchild in `pgid`'s group, other than the leader.
fn grandchildren(pgid: u32) -> Vec<u32> {
    group_members(pgid).into_iter().filter(|&p| p != pgid).collect()
}

/// Three extensions: `a` answers (and sleeps on request), `b` holds a
/// grandchild in its process group, `c` ignores `shutdown` and SIGTERM, so
/// only SIGKILL stops it.
fn signal_exts(t: &TempDir) -> Vec<PathBuf> {
    vec![
        ext(t, "a", &["--tools", "sleep,echo", "--commands", "display"]),
        ext(t, "b", &["--grandchild", "--tools", "echo_b"]),
        ext(t, "c", &["--ignore-shutdown", "--ignore-term", "--linger", "--tools", "echo_c"]),
    ]
}

/// Checks the logs say each extension was stopped the way it allows.
fn assert_clean_stop(z: &Zot) {
    let a = log_of(z, "a");
    assert!(a.contains("[zot] shutdown acknowledged") && a.contains("[zot] stopped (exit code 0)"), "a:\n{a}\n{}", z.context());
    let b = log_of(z, "b");
    assert!(b.contains("[zot] stopped ("), "b:\n{b}");
    let c = log_of(z, "c");
    assert!(c.contains("sending SIGTERM") && c.contains("sending SIGKILL") && c.contains("[zot] stopped (signal 9)"), "c:\n{c}");
}

fn serve_signal(sig: i32, code: i32) {
    let t = TempDir::new("life-serve-sig");
    let mut z = start(&t, true, &signal_exts(&t));
    assert_eq!(wait_ready(&mut z), ["a", "b", "c"], "{}", z.context());
    let pids = serve_pids(&mut z);
    assert_eq!(pids.len(), 3, "{pids:?}");
    let b = pids["b"];
    assert!(wait_until(LINE_WAIT, || !grandchildren(b).is_empty()), "b's grandchild never started");
    let grandchild = grandchildren(b);
    // A call in flight does not hold the exit up.
    z.send(r#"{"id":"slow","type":"tool","name":"sleep","args":{"ms":60000}}"#);
    z.signal(sig);
    let status = z.wait_exit(STOP_WAIT);
    assert_eq!(status.code(), Some(code), "signal {sig}: {status:?}\n{}", z.context());
    let pids: Vec<u32> = pids.values().copied().collect();
    assert_gone(&z, &pids);
    assert!(grandchild.iter().all(|&g| !process_alive(g)), "grandchild {grandchild:?} outlived zot");
    assert_clean_stop(&z);
}

fn console_signal(sig: i32, code: i32) {
    let t = TempDir::new("life-console-sig");
    let mut z = start(&t, false, &signal_exts(&t));
    // The first output marks the end of the load.
    z.send("/display up");
    z.wait_line("[a] display:up", |l| l == "[a] display:up");
    let pids = children_of(z.pid);
    assert_eq!(pids.len(), 3, "{pids:?}\n{}", z.context());
    let grandchild: Vec<u32> = pids.iter().flat_map(|&p| grandchildren(p)).collect();
    assert_eq!(grandchild.len(), 1, "{grandchild:?}");
    // The console waits on this call when the signal comes.
    z.send(r#"/tool sleep {"ms":60000}"#);
    z.signal(sig);
    let status = z.wait_exit(STOP_WAIT);
    assert_eq!(status.code(), Some(code), "signal {sig}: {status:?}\n{}", z.context());
    assert_gone(&z, &pids);
    assert!(grandchild.iter().all(|&g| !process_alive(g)), "grandchild {grandchild:?} outlived zot");
    assert_clean_stop(&z);
}

#[test]
fn serve_sigint_stops_extensions_and_exits_130() {
    serve_signal(libc::SIGINT, 130);
}

#[test]
fn serve_sigterm_stops_extensions_and_exits_143() {
    serve_signal(libc::SIGTERM, 143);
}

#[test]
fn serve_sighup_stops_extensions_and_exits_129() {
    serve_signal(libc::SIGHUP, 129);
}

#[test]
fn console_sigint_stops_extensions_and_exits_130() {
    console_signal(libc::SIGINT, 130);
}

#[test]
fn console_sigterm_stops_extensions_and_exits_143() {
    console_signal(libc::SIGTERM, 143);
}

#[test]
fn console_sighup_stops_extensions_and_exits_129() {
    console_signal(libc::SIGHUP, 129);
}

#[test]
fn sigkill_to_serve_takes_its_extensions_along() {
    let t = TempDir::new("life-sigkill");
    // `c` never reads stdin, so the end of its input cannot be what stops
    // it: only the parent-death signal can.
    let exts = [
        ext(&t, "a", &["--tools", "sleep,echo"]),
        ext(&t, "b", &["--grandchild", "--tools", "echo_b"]),
        ext(&t, "c", &["--legacy", "--ignore-stdin", "--tools", "echo_c"]),
    ];
    let mut z = start(&t, true, &exts);
    assert_eq!(wait_ready(&mut z), ["a", "b", "c"], "{}", z.context());
    let pids = serve_pids(&mut z);
    assert_eq!(pids.len(), 3, "{pids:?}");
    let b = pids["b"];
    assert!(wait_until(LINE_WAIT, || !grandchildren(b).is_empty()), "b's grandchild never started");
    // Pid and start time: what is killed below in the clean-up is exactly
    // what this test started, whatever pids were reused meanwhile.
    let grandchild: Vec<(u32, Option<u64>)> = grandchildren(b).into_iter().map(|g| (g, proc_start_time(g))).collect();
    let ext_procs: Vec<(u32, Option<u64>)> = pids.values().map(|&p| (p, proc_start_time(p))).collect();
    let same = |&(p, t): &(u32, Option<u64>)| process_alive(p) && proc_start_time(p) == t;
    z.send(r#"{"id":"slow","type":"tool","name":"sleep","args":{"ms":60000}}"#);
    z.signal(libc::SIGKILL);
    let status = z.wait_exit(LINE_WAIT);
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL), "{status:?}");
    // Nobody shut them down: the kernel's parent-death signal kills them.
    let gone = wait_until(LINE_WAIT, || !ext_procs.iter().any(same));
    let alive: Vec<u32> = ext_procs.iter().filter(|e| same(e)).map(|e| e.0).collect();
    // A grandchild is not zot's child: the parent-death signal does not
    // reach it. Report it, and clean up after it either way.
    let orphans: Vec<u32> = grandchild.iter().filter(|g| same(g)).map(|g| g.0).collect();
    for g in grandchild.iter().chain(&ext_procs).filter(|g| same(g)) {
        // SAFETY: killing a process this test started (same pid and start time).
        unsafe {
            libc::kill(g.0 as i32, libc::SIGKILL);
        }
    }
    if !orphans.is_empty() {
        eprintln!("note: after SIGKILL to zot, grandchild {orphans:?} of extension b outlived it (not in zot's reach)");
    }
    assert!(gone, "extensions {alive:?} outlived a SIGKILLed zot\n{}", z.context());
}

#[test]
fn crashed_and_failed_extensions_leave_no_zombie() {
    let t = TempDir::new("life-zombie");
    let exts = [
        ext(&t, "a", &["--tools", "crash,echo"]),
        ext(&t, "b", &["--grandchild", "--tools", "crash@b,echo@b"]),
        ext(&t, "c", &["--tools", "echo_c"]),
        // Exits at once, before hello: it fails to load.
        ext(&t, "d", &["--exit-now"]),
    ];
    let mut z = start(&t, true, &exts);
    assert_eq!(wait_ready(&mut z), ["a", "b", "c"], "{}", z.context());
    let pids = serve_pids(&mut z);
    let zot = z.pid;
    for (name, tool) in [("a", "crash"), ("b", "crash@b")] {
        let pid = pids[name];
        let r = request(&mut z, tool, json!({"type": "tool", "name": tool}));
        assert_eq!(r["error"]["code"], "extension_exited", "{r}");
        // Reaped: gone from /proc, not left a zombie of zot's.
        let reaped = wait_until(LINE_WAIT, || proc_state(pid).is_none_or(|(s, ppid)| !(s == 'Z' && ppid == zot)));
        assert!(reaped, "{name} ({pid}) is a zombie of zot: {:?}\n{}", proc_state(pid), z.context());
        assert!(wait_until(LINE_WAIT, || group_members(pid).is_empty()), "{name}'s group is still there: {:?}", group_members(pid));
    }
    assert!(wait_until(LINE_WAIT, || zombie_children(zot).is_empty()), "zombies of zot: {:?}", zombie_children(zot));
    // Nothing else changed: the healthy one answers, and still nothing is
    // left unreaped.
    let r = request(&mut z, "c", json!({"type": "tool", "name": "echo_c"}));
    assert_eq!(r["ok"], true, "{r}");
    assert!(zombie_children(zot).is_empty(), "zombies of zot: {:?}", zombie_children(zot));
    let c = pids["c"];
    z.close_stdin();
    assert_eq!(z.exit_code(STOP_WAIT), 0, "{}", z.context());
    assert_gone(&z, &[c]);
}

#[test]
fn extensions_see_only_stdin_stdout_and_stderr() {
    let t = TempDir::new("life-fds");
    let names: Vec<String> = (0..4).map(|i| format!("e{i}")).collect();
    let exts: Vec<PathBuf> = names.iter().map(|n| ext(&t, n, &["--tools", &format!("fds@{n}")])).collect();
    for serve in [true, false] {
        let mut z = start(&t, serve, &exts);
        let mut pipes = BTreeSet::new();
        for n in &names {
            let text = if serve {
                if n == &names[0] {
                    wait_ready(&mut z);
                }
                let r = request(&mut z, n, json!({"type": "tool", "name": format!("fds@{n}")}));
                r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
            } else {
                z.send(&format!("/tool fds@{n} {{}}"));
                let l = z.wait_line(&format!("fds of {n}"), |l| l.contains("\"0\""));
                l[l.find('{').expect("json")..].to_string()
            };
            let fds: BTreeMap<String, String> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            let keys: Vec<&str> = fds.keys().map(String::as_str).collect();
            assert_eq!(keys, ["0", "1", "2"], "extension {n} (serve: {serve}) has fds {fds:?}");
            // Stderr too is a pipe: the host alone writes the log.
            assert!(fds.values().all(|f| f.starts_with("pipe:")), "{n}: {fds:?}");
            // Each extension has pipes of its own.
            assert!(fds.values().all(|f| pipes.insert(f.clone())), "{n} shares a pipe: {fds:?}");
        }
        z.close_stdin();
        assert_eq!(z.exit_code(STOP_WAIT), 0, "{}", z.context());
    }
}
