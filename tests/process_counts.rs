//! docs/protocol.md §3 rule 10: nothing the host keeps per process (reader and
//! writer threads, pipe ends, the exit watch) outlives the process, even
//! when a descendant that nothing marks as the extension's any more holds
//! its stdout open; and no zombie is left behind. Counted from this
//! process's /proc/self/task and /proc/self/fd across 20 restarts (reloads)
//! of such an extension through the library, and from zot's children
//! across 20 reloads through `zot serve`. The tests of this binary run one
//! at a time ([`ALONE`]): the other one's threads would be counted.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zot_proc::{session_args, Zot};

const WAIT: Duration = Duration::from_secs(20);

static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn escape_ext(t: &TempDir, name: &str, modes: &[&str]) -> (PathBuf, PathBuf) {
    let pidfile = t.path().join(format!("{name}.pids"));
    let mut args = vec![fixture("escape.sh").display().to_string(), name.to_string(), pidfile.display().to_string()];
    args.extend(modes.iter().map(|m| m.to_string()));
    (write_manifest(&t.path().join("exts"), name, json!({"name": name, "exec": "sh", "args": args})), pidfile)
}

/// The pids the descendants wrote so far: a line counts once its newline
/// is there, so a pid read while it is being written is not taken whole.
fn pids(pidfile: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(pidfile).unwrap_or_default();
    text.split_inclusive('\n').filter_map(|l| l.strip_suffix('\n')?.trim().parse().ok()).collect()
}

fn task_count() -> usize {
    std::fs::read_dir("/proc/self/task").expect("/proc/self/task").count()
}

#[test]
fn threads_and_fds_are_back_after_20_restarts_while_descendants_hold_stdout() {
    let _alone = alone();
    let t = TempDir::new("counts-lib");
    // `anon`: the descendant drops the variable that marks it, so it is
    // not ended when its extension stops (only when the host exits) and
    // keeps the extension's stdout open throughout.
    let (dir, pidfile) = escape_ext(&t, "holder", &["anon", "hold"]);
    let (host, _events) = start_host(host_config(t.path(), vec![dir]));
    host.wait_ready().unwrap();
    assert!(wait_until(WAIT, || pids(&pidfile).len() == 1), "no descendant");
    let (threads, fds) = (task_count(), open_fd_count());
    for i in 0..20 {
        let r = host.reload().unwrap();
        assert_eq!(r.ready, 1, "reload {i}: {r:?}");
    }
    assert!(wait_until(WAIT, || pids(&pidfile).len() == 21), "{} descendants", pids(&pidfile).len());
    let holders = pids(&pidfile);
    assert!(holders.iter().all(|&p| process_alive(p)), "every descendant still holds a stdout");
    let back = wait_until(WAIT, || task_count() <= threads && open_fd_count() <= fds);
    assert!(back, "threads {threads} → {}, fds {fds} → {} after 20 restarts", task_count(), open_fd_count());
    host.shutdown();
    let left: Vec<u32> = holders.into_iter().filter(|&p| process_alive(p)).collect();
    assert!(left.is_empty(), "descendants left after shutdown: {left:?}");
}

#[test]
fn no_zombie_after_20_reloads_of_zot_serve() {
    let _alone = alone();
    let t = TempDir::new("counts-zombie");
    let (a, a_pids) = escape_ext(&t, "za", &["hold"]);
    let (b, _) = escape_ext(&t, "zb", &["stubborn"]);
    let mut z = Zot::spawn(t.path(), &session_args(t.path(), Some("serve"), &[a, b], &[]), &[]);
    let json_line = |l: &str| serde_json::from_str::<Value>(l).unwrap_or(Value::Null);
    z.wait_line("ready", |l| json_line(l)["type"] == "ready");
    for i in 0..20 {
        let id = format!("r{i}");
        z.send(&json!({"id": id, "type": "reload"}).to_string());
        let l = z.wait_line(&format!("reload {i}"), |l| json_line(l)["type"] == "response" && json_line(l)["id"] == json!(id));
        assert_eq!(json_line(&l)["result"]["ready"], 2, "{l}");
    }
    assert!(wait_until(WAIT, || pids(&a_pids).len() == 21));
    // Every stopped extension and every one of its descendants is reaped
    // (the stubborn ones a second after their SIGTERM).
    let clean = wait_until(WAIT, || zombie_children(z.pid).is_empty());
    assert!(clean, "zombies of zot: {:?}\n{}", zombie_children(z.pid), z.context());
    let ended = wait_until(WAIT, || pids(&a_pids)[..20].iter().all(|&p| !process_alive(p)));
    assert!(ended, "descendants of stopped extensions still run\n{}", z.context());
    z.send(r#"{"id":"s","type":"shutdown"}"#);
    z.wait_exit(WAIT);
}
