//! The process bound of a confined start and its `${TMP}` at the stop
//! (docs/protocol.md §9.1, §9.2) with real processes: a fork bomb in a
//! confined probe (tests/fixtures/probe.py, op `bomb`: processes and
//! threads without end, retrying when refused) is held to `limits.procs`
//! by a cgroup (a root host) or by `RLIMIT_NPROC` (the host run as an
//! ordinary user), while a sibling keeps answering and another extension
//! is restarted; the same bomb unconfined (capped, so that it cannot harm
//! the machine) grows past the bound. `procs` is listed as enforced, and
//! as not enforced by a root host that can make no cgroup. A `setsid`
//! grandchild alive at the stop does not keep `${TMP}`: it is gone when
//! `shutdown` is answered.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{host_config, probe_ext, start_host, TempDir};
use serde_json::{json, Value};
use serve_proc::Serve;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_host::host::{Host, Request, Response};
use zot_proc::{session_args, Zot, LINE_WAIT};

/// The bound the tests declare, and what the unconfined control may reach.
const PROCS: usize = 24;
const CONTROL_CAP: usize = 3 * PROCS;

/// `op` with `arg` in extension `name` of an in-process host.
fn run(host: &Host, name: &str, op: &str, arg: impl Into<Value>) -> String {
    let req = Request::Tool { name: format!("{name}_probe"), args: Some(json!({"op": op, "arg": arg.into()})), tool_id: None };
    match host.call(req) {
        Ok(Response::Tool(r)) => common::text_of(&r.content),
        other => panic!("{name} {op}: {other:?}; {:?}", common::ext_info(host, name)),
    }
}

/// `op` with `arg` in extension `name` of a `zot serve`.
fn serve_run(s: &mut Serve, name: &str, op: &str, arg: impl Into<Value>) -> String {
    let r = s.ok(json!({"id": format!("{name}-{op}"), "type": "tool", "name": format!("{name}_probe"), "args": {"op": op, "arg": arg.into()}}));
    r["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

fn ok(answer: String) -> String {
    answer.strip_prefix("ok ").unwrap_or_else(|| panic!("not ok: {answer}")).to_string()
}

/// Tasks (threads included) of the processes whose environment carries
/// the instance marker `marker`: one start and all its descendants.
fn tasks_of(marker: &str) -> usize {
    let want = format!("ZOT_EXT_INSTANCE={marker}");
    let mut n = 0;
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if !e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else { continue };
        if !env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else { continue };
        if status.lines().any(|l| l.starts_with("State:") && l.contains('Z')) {
            continue;
        }
        n += status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(1);
    }
    n
}

/// Waits until `cond` holds, observing it; panics with `what` after a long while.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + LINE_WAIT * 2;
    while !cond() {
        assert!(Instant::now() < end, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is alive (not a zombie) and still carries `marker`.
fn alive(pid: u32, marker: &str) -> bool {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
    !zombie && env.split(|&b| b == 0).any(|v| v == format!("ZOT_EXT_INSTANCE={marker}").as_bytes())
}

/// Ends the bomb of `marker` whatever happens to the test, so that a
/// failed assertion never leaves it running.
struct Reap(Vec<String>);
impl Drop for Reap {
    fn drop(&mut self) {
        for _ in 0..50 {
            let mut left = false;
            for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
                let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
                if self.0.iter().any(|m| env.split(|&b| b == 0).any(|v| v == format!("ZOT_EXT_INSTANCE={m}").as_bytes())) {
                    // SAFETY: kill(2) of one process.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    left = true;
                }
            }
            if !left {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn bounded(procs: usize) -> Value {
    json!({"limits": {"procs": procs}})
}

/// The pids cgroup `pid` is in, as a folder.
fn pids_cgroup(pid: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
        ctl.split(',').any(|c| c == "pids").then(|| path.to_string())
    })?;
    let dir = PathBuf::from("/sys/fs/cgroup/pids").join(path.trim_start_matches('/'));
    dir.file_name()?.to_string_lossy().starts_with("zot.").then_some(dir)
}

// SAFETY (both): no preconditions.
fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_confined_fork_bomb_is_held_by_its_cgroup_while_a_sibling_answers_and_another_restarts() {
    if !is_root() {
        return common::skip("the cgroup path needs a root host here (cgroup v1 pids)");
    }
    let t = TempDir::new("procs-cgroup");
    let exts = vec![
        probe_ext(t.path(), "bomb", Some(bounded(PROCS))),
        probe_ext(t.path(), "sib", Some(json!({}))),
        probe_ext(t.path(), "phoenix", Some(json!({}))),
        probe_ext(t.path(), "ctl", None),
    ];
    let mut cfg = host_config(t.path(), exts);
    cfg.cwd = t.path().to_path_buf();
    let (h, _rx) = start_host(cfg);
    h.call(Request::WaitReady).expect("ready");
    let marker = ok(run(&h, "bomb", "env", "ZOT_EXT_INSTANCE"));
    let ctl_marker = ok(run(&h, "ctl", "env", "ZOT_EXT_INSTANCE"));
    let _reap = Reap(vec![marker.clone(), ctl_marker.clone()]);
    // Where a root host may write the v1 pids hierarchy, the start must be
    // in a cgroup of its own; elsewhere this path cannot be shown here.
    let writable = std::ffi::CString::new("/sys/fs/cgroup/pids").is_ok_and(|p| unsafe { libc::access(p.as_ptr(), libc::W_OK) } == 0);
    let cg = pids_cgroup(&ok(run(&h, "bomb", "pid", "")));
    let Some(cg) = cg.filter(|_| writable) else {
        assert!(!writable, "a root host with a writable pids hierarchy made no cgroup for the start");
        h.shutdown();
        return common::skip("no pids cgroup can be made here (no writable cgroup v1 pids hierarchy)");
    };
    assert_eq!(std::fs::read_to_string(cg.join("pids.max")).expect("pids.max").trim(), PROCS.to_string());
    let info = common::ext_info(&h, "bomb");
    assert!(info.confinement["enforced"].as_array().unwrap().contains(&json!("procs")), "{:?}", info.confinement);
    assert_eq!(common::ext_info(&h, "ctl").confinement, Value::Null);

    let tmp = PathBuf::from(ok(run(&h, "bomb", "env", "TMPDIR")));
    let old_phoenix_tmp = PathBuf::from(ok(run(&h, "phoenix", "env", "TMPDIR")));
    ok(run(&h, "bomb", "bomb", json!({"dir": tmp.display().to_string()})));
    wait_until("the bomb is refused a fork or a thread", || tmp.join("refused").exists());
    let n = tasks_of(&marker);
    assert!((2..=PROCS).contains(&n), "{n} tasks of the bomb's start, bound {PROCS}");

    // The host and the others carry on.
    for _ in 0..5 {
        assert!(run(&h, "sib", "pid", "").starts_with("ok "));
    }
    let before = ok(run(&h, "phoenix", "pid", ""));
    match h.call(Request::Restart { name: "phoenix".into() }) {
        Ok(Response::Restarted { .. }) => {}
        other => panic!("restart: {other:?}"),
    }
    assert_ne!(ok(run(&h, "phoenix", "pid", "")), before);
    wait_until("the restarted start's ${TMP} is removed", || !old_phoenix_tmp.exists());

    // Still trying, still refused, still bounded.
    std::fs::remove_file(tmp.join("refused")).expect("rm");
    wait_until("the bomb is refused again", || tmp.join("refused").exists());
    let n = tasks_of(&marker);
    assert!(n <= PROCS, "{n} tasks of the bomb's start, bound {PROCS}");

    // Control: unconfined, the same bomb grows past the bound (to its cap).
    let ctl_dir = t.path().join("ctl-out");
    std::fs::create_dir_all(&ctl_dir).expect("mkdir");
    ok(run(&h, "ctl", "bomb", json!({"dir": ctl_dir.display().to_string(), "cap": CONTROL_CAP})));
    wait_until("the unconfined bomb reaches its cap", || ctl_dir.join("capped").exists());
    wait_until("the unconfined bomb's tasks exceed the bound", || tasks_of(&ctl_marker) > PROCS);
    assert!(!ctl_dir.join("refused").exists(), "the unconfined bomb was refused");

    h.shutdown();
    assert_eq!(tasks_of(&marker), 0, "the bomb outlived the shutdown");
    assert!(!cg.exists(), "its cgroup {} outlived the shutdown", cg.display());
    assert!(!tmp.exists(), "its ${{TMP}} outlived the shutdown");
}

/// A uid of its own for this run, so that no other test's processes share
/// its `RLIMIT_NPROC` count.
fn lone_uid() -> u32 {
    61000 + std::process::id() % 3000
}

/// `setpriv` running the binary as `uid`, when this machine can.
fn as_user(uid: u32) -> Option<Vec<String>> {
    let ok = is_root() && std::process::Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    ok.then(|| ["setpriv", &format!("--reuid={uid}"), &format!("--regid={uid}"), "--clear-groups", "--"].map(String::from).to_vec())
}

fn chown_tree(p: &Path, uid: u32) {
    let _ = std::os::unix::fs::lchown(p, Some(uid), Some(uid));
    if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(p).expect("read").flatten() {
            chown_tree(&e.path(), uid);
        }
    }
}

fn confinement_of(s: &mut Serve, name: &str) -> Value {
    let l = s.ok(json!({"id": format!("list-{name}"), "type": "list"}));
    l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("no {name}: {l}"))["confinement"].clone()
}

#[test]
fn as_an_ordinary_user_the_fork_bomb_is_held_by_rlimit_nproc_while_a_sibling_answers() {
    let uid = lone_uid();
    let Some(via) = as_user(uid) else {
        return common::skip("cannot run the host as an ordinary user here (not root, or no setpriv)");
    };
    let t = TempDir::new("procs-rlimit");
    let exts = vec![
        probe_ext(t.path(), "bomb", Some(bounded(PROCS))),
        probe_ext(t.path(), "sib", Some(json!({}))),
        probe_ext(t.path(), "phoenix", Some(json!({}))),
        probe_ext(t.path(), "ctl", None),
    ];
    let args = session_args(t.path(), Some("serve"), &exts, &[]);
    chown_tree(t.path(), uid);
    let home = t.path().display().to_string();
    let z = Zot::spawn_via(&via, t.path(), &args, &[("HOME", home.as_str())]);
    let mut s = Serve { z, frames: Vec::new(), taken: Vec::new(), exts: exts.len() };
    s.ready_all();
    let marker = ok(serve_run(&mut s, "bomb", "env", "ZOT_EXT_INSTANCE"));
    let ctl_marker = ok(serve_run(&mut s, "ctl", "env", "ZOT_EXT_INSTANCE"));
    let _reap = Reap(vec![marker.clone(), ctl_marker.clone()]);
    let pid = ok(serve_run(&mut s, "bomb", "pid", ""));
    // Not in a cgroup of its own (v1 is root's), but under RLIMIT_NPROC.
    assert_eq!(pids_cgroup(&pid), None);
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let line = limits.lines().find(|l| l.starts_with("Max processes")).expect("Max processes").to_string();
    let v: Vec<&str> = line.split_whitespace().collect();
    assert!(v[2] == v[3] && v[2].parse::<u64>().is_ok(), "{line}");
    let c = confinement_of(&mut s, "bomb");
    assert!(c["enforced"].as_array().unwrap().contains(&json!("procs")), "{c}");

    let tmp = PathBuf::from(ok(serve_run(&mut s, "bomb", "env", "TMPDIR")));
    ok(serve_run(&mut s, "bomb", "bomb", json!({"dir": tmp.display().to_string()})));
    wait_until("the bomb is refused a fork or a thread", || tmp.join("refused").exists());
    // Tasks of the user that ended since its start (none expected but a
    // thread of the host) leave it that much more room.
    let slack = 16;
    let n = tasks_of(&marker);
    assert!((2..=PROCS + slack).contains(&n), "{n} tasks of the bomb's start, bound {PROCS}");
    for _ in 0..5 {
        assert!(serve_run(&mut s, "sib", "pid", "").starts_with("ok "));
    }
    let before = ok(serve_run(&mut s, "phoenix", "pid", ""));
    s.ok(json!({"id": "restart", "type": "restart", "name": "phoenix"}));
    assert_ne!(ok(serve_run(&mut s, "phoenix", "pid", "")), before);
    std::fs::remove_file(tmp.join("refused")).expect("rm");
    wait_until("the bomb is refused again", || tmp.join("refused").exists());
    let n = tasks_of(&marker);
    assert!(n <= PROCS + slack, "{n} tasks of the bomb's start, bound {PROCS}");

    // Control: unconfined, as the same user, the bomb grows past the bound.
    let ctl_dir = t.path().join("ctl-out");
    std::fs::create_dir_all(&ctl_dir).expect("mkdir");
    chown_tree(&ctl_dir, uid);
    ok(serve_run(&mut s, "ctl", "bomb", json!({"dir": ctl_dir.display().to_string(), "cap": CONTROL_CAP})));
    wait_until("the unconfined bomb reaches its cap", || ctl_dir.join("capped").exists());
    wait_until("the unconfined bomb's tasks exceed the bound", || tasks_of(&ctl_marker) > PROCS + slack);

    s.ok(json!({"id": "bye", "type": "shutdown"}));
    assert_eq!(tasks_of(&marker), 0, "the bomb outlived the shutdown's answer");
    assert!(!tmp.exists(), "its ${{TMP}} outlived the shutdown's answer");
    s.finish();
}

#[test]
fn a_root_host_that_can_make_no_cgroup_lists_procs_as_not_enforced() {
    // A mount namespace where /sys/fs/cgroup is an empty tmpfs: no cgroup.
    let hide = "mount -t tmpfs none /sys/fs/cgroup && exec \"$0\" \"$@\"";
    let can = is_root()
        && std::process::Command::new("unshare").args(["-m", "sh", "-c", hide, "true"]).output().is_ok_and(|o| o.status.success());
    if !can {
        return common::skip("cannot hide the cgroups from a root host here (not root, or no unshare -m)");
    }
    let t = TempDir::new("procs-nocg");
    let exts = vec![probe_ext(t.path(), "boxed", Some(json!({})))];
    let listed = |via: &[String]| {
        let args = session_args(t.path(), Some("serve"), &exts, &[]);
        let mut s = Serve { z: Zot::spawn_via(via, t.path(), &args, &[]), frames: Vec::new(), taken: Vec::new(), exts: 1 };
        s.ready_all();
        let c = confinement_of(&mut s, "boxed");
        s.ok(json!({"id": "bye", "type": "shutdown"}));
        s.finish();
        c
    };
    let hidden = listed(&["unshare", "-m", "sh", "-c", hide].map(String::from));
    assert!(hidden["not_enforced"].as_array().unwrap().contains(&json!("procs")), "{hidden}");
    assert!(!hidden["enforced"].as_array().unwrap().contains(&json!("procs")), "{hidden}");
    // Control: the same root host with its cgroups enforces it.
    let shown = listed(&[]);
    assert!(shown["enforced"].as_array().unwrap().contains(&json!("procs")), "{shown}");
}

/// A busy loop for load, killed when dropped.
struct Busy(std::process::Child);
impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn tmp_is_gone_when_shutdown_is_answered_though_a_setsid_grandchild_was_writing_in_it() {
    let _load: Vec<Busy> =
        (0..2).map(|_| Busy(std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("busy loop"))).collect();
    // Root's host ends the grandchild with its cgroup; an ordinary user's
    // (where setpriv can run one) by its instance marker, as an orphan.
    let uid = lone_uid() + 1;
    let user = as_user(uid);
    if user.is_none() {
        common::skip("the rounds as an ordinary user: cannot run the host as one here");
    }
    for round in 0..4 {
        let via = if round % 2 == 1 { user.clone() } else { None };
        let t = TempDir::new("procs-tmp");
        let exts = vec![probe_ext(t.path(), "w", Some(json!({})))];
        let args = session_args(t.path(), Some("serve"), &exts, &[]);
        let home = t.path().display().to_string();
        if via.is_some() {
            chown_tree(t.path(), uid);
        }
        let z = Zot::spawn_via(via.as_deref().unwrap_or_default(), t.path(), &args, &[("HOME", home.as_str())]);
        let mut s = Serve { z, frames: Vec::new(), taken: Vec::new(), exts: 1 };
        s.ready_all();
        let marker = ok(serve_run(&mut s, "w", "env", "ZOT_EXT_INSTANCE"));
        let _reap = Reap(vec![marker.clone()]);
        let tmp = PathBuf::from(ok(serve_run(&mut s, "w", "env", "TMPDIR")));
        let writer: u32 = ok(serve_run(&mut s, "w", "setsid_writer", "")).parse().expect("pid");
        ok(serve_run(&mut s, "w", "tmp_locked", ""));
        // Control: the grandchild is alive, in a session of its own, and
        // writing in ${TMP} as the shutdown begins.
        wait_until("the grandchild writes in ${TMP}", || tmp.join("w1").exists());
        assert!(alive(writer, &marker), "round {round}: the grandchild is not alive");
        let s_of = |p: u32| std::fs::read_to_string(format!("/proc/{p}/stat")).ok().and_then(|st| st.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(3).map(String::from)));
        assert_eq!(s_of(writer), Some(writer.to_string()), "round {round}: not a session leader");
        s.ok(json!({"id": "bye", "type": "shutdown"}));
        assert!(!tmp.exists(), "round {round}: ${{TMP}} {} outlived the shutdown's answer", tmp.display());
        assert!(!alive(writer, &marker), "round {round}: the setsid grandchild outlived the shutdown's answer");
        s.finish();
    }
}
