//! Running the extension for the check: a throw-away `ZOT_HOME`, the
//! process in its own process group with its stderr in a file, a reader
//! thread turning stdout into capped lines and a waiter thread for its
//! exit, both reporting on one channel; and who is left in its group.

use crate::child::{kill_group, MAX_LINE};
use crate::lines::{Line, LineBuf};
use crate::manifest::Manifest;
use crate::text::one_line;
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
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

pub(super) fn spawn(m: &Manifest, exec: &Path, sandbox: &Sandbox) -> io::Result<(u32, ChildStdin, Receiver<Ev>)> {
    let home = sandbox.home();
    fs::create_dir_all(&home)?;
    let stderr = File::create(sandbox.stderr_path())?;
    let mut cmd = Command::new(exec);
    cmd.args(&m.args)
        .current_dir(&m.dir)
        .env("ZOT_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    parent_death_signal(&mut cmd);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let guard = Group(pid);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("child pipes missing"));
    };
    let (tx, rx) = unbounded();
    let rtx = tx.clone();
    thread::Builder::new().name("zot-check-r".into()).spawn(move || read_lines(stdout, &rtx))?;
    thread::Builder::new().name("zot-check-x".into()).spawn(move || {
        let status = loop {
            match child.wait() {
                Ok(s) => break s,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break ExitStatus::from_raw(0),
            }
        };
        let _ = tx.send(Ev::Exited(Instant::now(), status));
    })?;
    std::mem::forget(guard);
    Ok((pid, stdin, rx))
}

#[cfg(target_os = "linux")]
fn parent_death_signal(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn parent_death_signal(_cmd: &mut Command) {}

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

/// `pid (comm)` of the processes in group `pgid`, from `/proc` (empty where
/// there is no `/proc`).
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
        if rest.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            out.push(format!("{pid} ({})", one_line(comm)));
        }
        if out.len() >= 5 {
            break;
        }
    }
    out
}
