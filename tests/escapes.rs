//! docs/protocol.md §3 rule 10, descendants that leave their extension's
//! process group and session (`setsid`): on Linux the host is a child
//! subreaper, so they become its children once their parent dies, and
//! when their extension stops (shutdown, a crash and its restart) they are
//! ended (SIGTERM, 1 s, SIGKILL) and reaped — those of another extension
//! are left alone, and none at all outlives the host. Through `zot serve`
//! and through the library.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zot_proc::{session_args, Zot};

/// Long enough for a stop, the orphans' SIGTERM and its second, and a
/// restart, on a loaded machine.
const WAIT: Duration = Duration::from_secs(20);

/// An extension running `escape.sh NAME PIDFILE MODES...`, with `extra`
/// manifest fields.
fn escape_ext(t: &TempDir, name: &str, modes: &[&str], extra: Value) -> (PathBuf, PathBuf) {
    let pidfile = t.path().join(format!("{name}.pids"));
    let mut args = vec![fixture("escape.sh").display().to_string(), name.to_string(), pidfile.display().to_string()];
    args.extend(modes.iter().map(|m| m.to_string()));
    let mut m = json!({"name": name, "exec": "sh", "args": args});
    if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    (write_manifest(&t.path().join("exts"), name, m), pidfile)
}

/// The pids the escaped descendants wrote, once there are `n`. A line
/// counts once its newline is there, so a pid read while it is being
/// written is not taken whole.
fn escapees(pidfile: &Path, n: usize) -> Vec<u32> {
    let read = || -> Vec<u32> {
        let text = std::fs::read_to_string(pidfile).unwrap_or_default();
        text.split_inclusive('\n').filter_map(|l| l.strip_suffix('\n')?.trim().parse().ok()).collect()
    };
    assert!(wait_until(WAIT, || read().len() >= n), "{} escaped descendants, not {n}", read().len());
    read()
}

/// Session id of `pid`.
fn sid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(3)?.parse().ok()
}

/// `pid` left its extension's group and session: it leads its own.
fn assert_escaped(pid: u32) {
    assert!(process_alive(pid), "{pid} is not running");
    assert_eq!((pgid_of(pid), sid_of(pid)), (Some(pid), Some(pid)), "{pid} did not leave its group and session");
}

fn json_line(l: &str) -> Value {
    serde_json::from_str(l).unwrap_or(Value::Null)
}

fn serve(t: &TempDir, exts: &[PathBuf]) -> Zot {
    let mut z = Zot::spawn(t.path(), &session_args(t.path(), Some("serve"), exts, &[]), &[]);
    z.wait_line("ready", |l| json_line(l)["type"] == "ready");
    z
}

#[test]
fn setsid_descendants_are_gone_once_zot_serve_has_shut_down() {
    let t = TempDir::new("esc-serve-shutdown");
    let (held, held_pids) = escape_ext(&t, "held", &["hold"], json!({}));
    let (stub, stub_pids) = escape_ext(&t, "stub", &["stubborn"], json!({}));
    let (anon, anon_pids) = escape_ext(&t, "anon", &["anon", "hold"], json!({}));
    let mut z = serve(&t, &[held, stub, anon]);
    let pids: Vec<u32> = [&held_pids, &stub_pids, &anon_pids].iter().flat_map(|f| escapees(f, 1)).collect();
    for &p in &pids {
        assert_escaped(p);
    }
    z.send(r#"{"id":"s","type":"shutdown"}"#);
    z.wait_exit(WAIT);
    // Ended and reaped before zot exited: the one that ignores SIGTERM
    // (SIGKILL a second later), and the one that dropped the variable
    // marking it as the extension's (ended as zot exits).
    let left: Vec<u32> = pids.iter().copied().filter(|&p| process_alive(p)).collect();
    assert!(left.is_empty(), "still running after zot exited: {left:?}\n{}", z.context());
}

/// One that moves into zot's own process group (and ignores SIGTERM) still
/// carries its extension's marker: it is that extension's, and ended with
/// it, not taken for one of the host's own commands.
#[test]
fn a_descendant_that_joined_zots_own_group_is_gone_once_zot_serve_has_shut_down() {
    let t = TempDir::new("esc-serve-hostgroup");
    let (joiner, pids) = escape_ext(&t, "joiner", &["hostgroup", "stubborn"], json!({}));
    let mut z = serve(&t, &[joiner]);
    let p = escapees(&pids, 1)[0];
    assert!(process_alive(p), "{p} is not running");
    assert_eq!(pgid_of(p), pgid_of(z.pid), "{p} did not join zot's group");
    z.send(r#"{"id":"s","type":"shutdown"}"#);
    z.wait_line("the shutdown answer", |l| json_line(l)["id"] == "s");
    assert_eq!(z.exit_code(WAIT), 0, "{}", z.context());
    let alive = process_alive(p);
    if alive {
        // SAFETY: kill only signals; the test's own leftover.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    assert!(!alive, "{p} in zot's own group outlived zot\n{}", z.context());
}

/// One that shed the marker, the group and the session cannot be
/// attributed: `list` counts it as `orphans` while it lives, and it is
/// ended when zot exits.
#[test]
fn an_orphan_that_shed_marker_group_and_session_is_counted_in_list_and_ended_at_exit() {
    let t = TempDir::new("esc-serve-anon-count");
    let (anon, pids) = escape_ext(&t, "anon", &["anon", "stubborn", "crash"], json!({}));
    let mut z = serve(&t, &[anon]);
    let p = escapes_one(&pids);
    z.wait_line("the crash", |l| json_line(l)["type"] == "extension_exited");
    let mut n = 0;
    let counted = wait_until(WAIT, || {
        n += 1;
        z.send(&format!(r#"{{"id":"l{n}","type":"list"}}"#));
        let id = format!("l{n}");
        let l = z.wait_line("the list", |l| json_line(l)["id"] == id.as_str());
        json_line(&l)["result"]["orphans"] == json!(1)
    });
    assert!(counted, "list never counted the orphan\n{}", z.context());
    z.send(r#"{"id":"s","type":"shutdown"}"#);
    assert_eq!(z.exit_code(WAIT), 0, "{}", z.context());
    let alive = process_alive(p);
    if alive {
        // SAFETY: kill only signals; the test's own leftover.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    assert!(!alive, "{p} outlived zot\n{}", z.context());
}

/// The one pid an escape fixture's descendant wrote.
fn escapes_one(pidfile: &Path) -> u32 {
    escapees(pidfile, 1)[0]
}

#[test]
fn a_setsid_descendant_is_gone_after_its_extension_crashed_and_restarted_and_another_ones_stays() {
    let t = TempDir::new("esc-serve-restart");
    let (crash, crash_pids) = escape_ext(&t, "crasher", &["crash", "stubborn"], json!({"restart": "always"}));
    let (calm, calm_pids) = escape_ext(&t, "calm", &[], json!({}));
    let mut z = serve(&t, &[crash, calm]);
    let calm_pid = escapees(&calm_pids, 1)[0];
    assert_escaped(calm_pid);
    // The first one's descendant, and the next one's after the restart.
    let first = escapees(&crash_pids, 2)[0];
    let line = z.wait_line("extension_restarting", |l| json_line(l)["type"] == "extension_restarting");
    assert_eq!(json_line(&line)["extension"], "crasher", "{line}");
    assert!(wait_until(WAIT, || !process_alive(first)), "the crashed extension's descendant {first} still runs\n{}", z.context());
    assert!(process_alive(z.pid), "zot exited\n{}", z.context());
    assert!(process_alive(calm_pid), "the other extension's descendant {calm_pid} was ended too");
    z.send(r#"{"id":"s","type":"shutdown"}"#);
    z.wait_exit(WAIT);
    let left: Vec<u32> = escapees(&crash_pids, 2).into_iter().chain([calm_pid]).filter(|&p| process_alive(p)).collect();
    assert!(left.is_empty(), "still running after zot exited: {left:?}\n{}", z.context());
}

#[test]
fn through_the_library_a_setsid_descendant_is_gone_after_a_restart_and_after_shutdown() {
    let t = TempDir::new("esc-lib");
    let (crash, crash_pids) = escape_ext(&t, "lcrash", &["crash", "hold"], json!({"restart": "always"}));
    let (calm, calm_pids) = escape_ext(&t, "lcalm", &["hold", "stubborn"], json!({}));
    let (host, events) = start_host(host_config(t.path(), vec![crash, calm]));
    host.wait_ready().unwrap();
    let calm_pid = escapees(&calm_pids, 1)[0];
    assert_escaped(calm_pid);
    let first = escapees(&crash_pids, 2)[0];
    let restarting = wait_event(&events, WAIT, |e| matches!(e, zot_host::host::HostEvent::ExtensionRestarting { .. }));
    assert!(restarting.is_some(), "no restart");
    assert!(wait_until(WAIT, || !process_alive(first)), "the crashed extension's descendant {first} still runs");
    assert!(process_alive(calm_pid), "the other extension's descendant {calm_pid} was ended too");
    host.shutdown();
    let left: Vec<u32> = escapees(&crash_pids, 2).into_iter().chain([calm_pid]).filter(|&p| process_alive(p)).collect();
    assert!(left.is_empty(), "still running after shutdown returned: {left:?}");
}

#[test]
fn the_hosts_own_commands_keep_their_exit_status_while_the_reaper_works() {
    let t = TempDir::new("esc-commands");
    // Crashes, restarts and orphans keep the reaper busy meanwhile.
    let (storm, storm_pids) = escape_ext(&t, "storm", &["crash"], json!({"restart": "always"}));
    let (host, _events) = start_host(host_config(t.path(), vec![storm]));
    host.wait_ready().unwrap();
    for i in 0..40 {
        let code = i % 5 + 1;
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", &format!("exit {code}")]);
        if i % 2 == 1 {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let status = cmd.status().expect("the command's status is its owner's");
        assert_eq!(status.code(), Some(code), "command {i}");
    }
    assert!(!escapees(&storm_pids, 1).is_empty());
    host.shutdown();
}

#[test]
fn a_setsid_descendant_is_gone_once_zot_ext_check_has_exited() {
    let t = TempDir::new("esc-check");
    let (dir, pidfile) = escape_ext(&t, "checked", &["hold", "stubborn"], json!({}));
    let out = std::process::Command::new(zot_proc::BIN)
        .args(["ext", "check", &dir.display().to_string()])
        .env("ZOT_HOME", t.path().join("home"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("zot ext check runs");
    let pids = escapees(&pidfile, 1);
    let left: Vec<u32> = pids.iter().copied().filter(|&p| process_alive(p)).collect();
    assert!(left.is_empty(), "still running after the check exited: {left:?}\n{}", String::from_utf8_lossy(&out.stdout));
}
