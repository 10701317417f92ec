//! Running the extension for the check: a throw-away `ZOT_HOME`, the
//! process started as the host starts extensions ([`start_bare`]: its own
//! process group, the parent-death signal, only fds 0 to 2 across exec)
//! with its stderr in a file, a reader thread turning stdout into capped
//! lines and a waiter thread for its exit, both reporting on one channel;
//! and who is left in its group.

use crate::child::{child_env, kill_group, start_bare, Log, Started, MAX_LINE};
use crate::lines::{Line, LineBuf};
use crate::manifest::Manifest;
use crate::text::one_line;
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::thread;
use std::time::Instant;

/// A temporary `ZOT_HOME`, removed when dropped.
pub(super) struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    pub(super) fn new() -> Result<Sandbox, String> {
        let base = std::env::temp_dir();
        for n in 0..1000u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("zot-check-{}-{nanos}-{n}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(Sandbox { dir }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("cannot create a temporary directory in {}: {e}", base.display())),
            }
        }
        Err(format!("cannot create a temporary directory in {}", base.display()))
    }
    pub(super) fn stderr_path(&self) -> PathBuf {
        self.dir.join("stderr.log")
    }
    pub(super) fn home(&self) -> PathBuf {
        self.dir.join("home")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// What the reader and waiter threads report.
pub(super) enum Ev {
    Line(Instant, Vec<u8>),
    /// A line over [`MAX_LINE`] bytes, discarded.
    TooLong(usize),
    Eof,
    Exited(Instant, ExitStatus),
}

/// Kills the process group when dropped, whatever happened.
pub(super) struct Group(pub(super) u32);

impl Drop for Group {
    fn drop(&mut self) {
        kill_group(self.0, libc::SIGKILL);
    }
}

pub(super) fn spawn(m: &Manifest, exec: &Path, sandbox: &Sandbox) -> io::Result<(u32, File, Receiver<Ev>)> {
    let home = sandbox.home();
    fs::create_dir_all(&home)?;
    let stderr = Log::open(&sandbox.stderr_path())?;
    let mut env = child_env(&[]);
    env.retain(|(k, _)| k != "ZOT_HOME");
    env.push((OsString::from("ZOT_HOME"), home.into_os_string()));
    // This thread outlives the process: the session ends it (Group) before
    // it returns.
    crate::child::spawn_from_this_thread();
    let Started { pid, stdin, stdout } = start_bare(m, exec, &env, &stderr)?;
    let guard = Group(pid);
    let (tx, rx) = unbounded();
    let rtx = tx.clone();
    thread::Builder::new().name("zot-check-r".into()).spawn(move || read_lines(stdout, &rtx))?;
    thread::Builder::new().name("zot-check-x".into()).spawn(move || {
        let status = wait_and_reap(pid);
        let _ = tx.send(Ev::Exited(Instant::now(), status));
    })?;
    std::mem::forget(guard);
    Ok((pid, stdin, rx))
}

/// Waits for our child `pid` to exit and reaps it.
fn wait_and_reap(pid: u32) -> ExitStatus {
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if r == pid as libc::pid_t {
            return ExitStatus::from_raw(status);
        }
        if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return ExitStatus::from_raw(0);
    }
}

fn read_lines<R: Read>(input: R, tx: &Sender<Ev>) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut lines = LineBuf::new(MAX_LINE);
    while let Ok(Some(line)) = lines.next(&mut reader) {
        let ev = match line {
            Line::Text(l) => Ev::Line(Instant::now(), l.to_vec()),
            Line::TooLong(len) => Ev::TooLong(len),
        };
        if tx.send(ev).is_err() {
            return;
        }
    }
    let _ = tx.send(Ev::Eof);
}

/// Some process of group `pgid` has not exited (zombies do not count where
/// `/proc` tells them apart).
pub(super) fn group_running(pgid: u32) -> bool {
    crate::child::group_alive(pgid) && (!Path::new("/proc/self").exists() || !group_members(pgid).is_empty())
}

/// `pid (comm)` of the live processes in group `pgid`, from `/proc` (empty
/// where there is no `/proc`).
pub(super) fn group_members(pgid: u32) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().filter(|s| s.bytes().all(|b| b.is_ascii_digit())) else { continue };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = &stat[open + 1..close];
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // A zombie has exited; only its reaping is late (an init that does
        // not reap orphans).
        if rest.first() == Some(&"Z") {
            continue;
        }
        if rest.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            out.push(format!("{pid} ({})", one_line(comm)));
        }
        if out.len() >= 5 {
            break;
        }
    }
    out
}
