//! Running the extension for the check: a throw-away `ZOT_HOME`, and the
//! process run by the host's own [`Child`] (its own process group, the
//! parent-death signal, only fds 0 to 2 across exec, the manifest's
//! expanded `env`, the reader and waiter threads) with its stdout read as
//! lines, each report stamped with the time it was made, and its stderr in
//! a file; the process ended and reaped when the check is done with it;
//! and who is left in its group.

use crate::child::{Child, ChildMsg, Log};
use crate::manifest::Manifest;
use crate::text::one_line;
use crate::wake::Rx;
use crossbeam_channel::RecvTimeoutError;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

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
            match std::os::unix::fs::DirBuilderExt::mode(&mut fs::DirBuilder::new(), 0o700).create(&dir) {
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

/// What the extension's threads report, as the session sees it.
pub(super) enum Ev {
    Line(Instant, Vec<u8>),
    /// A line over [`crate::child::MAX_LINE`] bytes, discarded.
    TooLong(usize),
    Eof,
    Exited(Instant, ExitStatus),
}

/// How long the end of the check waits for a process it SIGKILLed to exit,
/// so that it can be reaped, before leaving it.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// The extension's process and what its threads report, each with the
/// time it was made. Dropped, it ends the process: SIGKILL to its group
/// (what is left of it too) while it is unreaped, then its exit awaited
/// for [`KILL_GRACE`] at most, and reaped.
pub(super) struct Proc {
    child: Child,
    /// `None` once every thread that reports has ended.
    rx: Option<Rx<(Instant, ChildMsg)>>,
    stdin_open: bool,
    exited: bool,
    /// Its confinement's data folder, as the host gives it.
    pub(super) data_dir: std::path::PathBuf,
}

/// Starts the extension with `env` (the manifest's, expanded) added to its
/// environment as the host adds it, then `ZOT_HOME` in the sandbox (so
/// that the check never touches a real home, whatever the manifest says),
/// and its stderr in the sandbox's file. The calling thread must outlive
/// the process ([`crate::child::spawn_from_this_thread`]): dropping the
/// [`Proc`] ends it.
pub(super) fn spawn(m: &Manifest, exec: &Path, env: &[(String, String)], sandbox: &Sandbox) -> io::Result<Proc> {
    let home = sandbox.home();
    crate::home::create_private_dir(&home)?;
    let stderr = Log::open(&sandbox.stderr_path())?;
    // Confined as the host would confine it, its folders in the sandbox.
    let who = crate::confine::Who { name: &m.name, dir: &m.dir, declared: m.confine.as_ref(), project_local: false, project_id: None, is_server: false, uses: crate::confine::placeholders_in(&m.args, &m.env) };
    let cwd = std::env::current_dir().unwrap_or_else(|_| m.dir.clone());
    let mode = crate::confine::Mode::from_env().unwrap_or_default();
    let plan = crate::confine::Plan::new(&who, mode, &home, &cwd).map_err(io::Error::other)?;
    let env: Vec<(OsString, OsString)> = plan
        .env()
        .iter()
        .chain(env)
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .chain([(OsString::from("ZOT_HOME"), home.into_os_string())])
        .collect();
    let full = crate::child::child_env("", &env);
    // Its stderr file holds what it writes alone: the host's lines on its
    // confinement are not its own.
    let jail = plan.jail(exec, &m.args, &full, &mut |_| {}).map_err(io::Error::other)?;
    let (tx, rx) = crate::wake::channel();
    let child = Child::spawn_lines(m, exec, &env, &stderr, jail.as_ref(), tx, |msg| (Instant::now(), msg))?;
    let data_dir = plan.data_dir().to_path_buf();
    child.hold(crate::confine::Remains::of(plan.tmp, jail));
    Ok(Proc { child, rx: Some(rx), stdin_open: true, exited: false, data_dir })
}

impl Proc {
    /// The process group (the pid of its leader).
    pub(super) fn pgid(&self) -> u32 {
        self.child.pid
    }

    /// Some thread may still report.
    pub(super) fn connected(&self) -> bool {
        self.rx.is_some()
    }

    pub(super) fn stdin_open(&self) -> bool {
        self.stdin_open
    }

    /// Writes `bytes` to its stdin; stdin is closed after an error.
    pub(super) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let written = self.child.send_wait(bytes);
        if written.is_err() {
            self.close_stdin();
        }
        written
    }

    pub(super) fn close_stdin(&mut self) {
        if std::mem::take(&mut self.stdin_open) {
            self.child.close_stdin();
        }
    }

    /// Sends `sig` to its group, unless it was reaped.
    pub(super) fn signal(&self, sig: i32) {
        self.child.signal_group(sig);
    }

    /// The next report until `deadline`; `Disconnected` once every thread
    /// that reports has ended.
    pub(super) fn next(&mut self, deadline: Instant) -> Result<Ev, RecvTimeoutError> {
        loop {
            let Some(rx) = &self.rx else { return Err(RecvTimeoutError::Disconnected) };
            let (at, msg) = match rx.recv_deadline(Some(deadline)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Disconnected) => {
                    self.rx = None;
                    return Err(RecvTimeoutError::Disconnected);
                }
                Err(e) => return Err(e),
            };
            return Ok(match msg {
                ChildMsg::Line(line) => Ev::Line(at, line),
                ChildMsg::TooLong { len, .. } => Ev::TooLong(len),
                ChildMsg::Eof => Ev::Eof,
                ChildMsg::Exited(status) => {
                    self.exited = true;
                    // A status that could not be read counts as a clean exit.
                    Ev::Exited(at, status.unwrap_or_else(|| ExitStatus::from_raw(0)))
                }
                // Not sent for a child read as lines.
                ChildMsg::Frame(_) | ChildMsg::BadReply { .. } => continue,
            });
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.close_stdin();
        self.signal(libc::SIGKILL);
        let deadline = Instant::now() + KILL_GRACE;
        while !self.exited && self.next(deadline).is_ok() {}
        if self.exited {
            self.child.reap();
        }
    }
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
