//! Driving the `zot` binary through pipes (`zot serve` and the console):
//! a child process whose stdout lines arrive on a channel read by a
//! thread, so every wait has a deadline and a broken test fails instead of
//! hanging. Included with `#[path]` (beside `mod common`) by the tests
//! that run the binary (tests/serve_*.rs, tests/console_*.rs, tests/mcp*.rs
//! and more).
#![allow(dead_code)]

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_zot");

/// The longest wait for any one expected line or exit. Every wait ends as
/// soon as the line comes, so this costs nothing when all goes well; it is
/// long because on a loaded 2-core machine a Python extension can take
/// seconds to start, and a restart adds its backoff.
pub const LINE_WAIT: Duration = Duration::from_secs(30);

/// Short call timeouts for every run, so the suite stays fast. Hello and
/// ready grace cost nothing when every extension starts, so they leave
/// room for a loaded machine (a Python start can take seconds under load,
/// several at once longer): an extension that misses them would be left
/// out of `ready`, which is not what the tests using FAST are about.
pub const FAST: [&str; 10] = [
    "--hello-timeout",
    "30",
    "--ready-grace",
    "30",
    "--command-timeout",
    "3",
    "--tool-timeout",
    "3",
    "--intercept-timeout",
    "1",
];

/// A running `zot`. Dropping it kills it and every extension it started.
pub struct Zot {
    pub pid: u32,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    exit: Receiver<ExitStatus>,
    status: Option<ExitStatus>,
    /// Every stdout byte so far, as written.
    raw: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Signalled when zot's stderr is closed: all of it has been read.
    err_done: Receiver<()>,
    /// Every stdout line read so far, in order.
    pub seen: Vec<String>,
    /// `ZOT_HOME`.
    pub zot_home: PathBuf,
}

impl Zot {
    /// Runs `zot args...` with `ZOT_HOME=home`, in `home` as working
    /// directory, stdin/stdout/stderr piped.
    pub fn spawn(home: &Path, args: &[String], env: &[(&str, &str)]) -> Zot {
        Zot::spawn_via(&[], home, args, env)
    }

    /// As [`Zot::spawn`], the binary run by the command `via` (as another
    /// user with `setpriv`, in a namespace with `unshare`) when not empty.
    pub fn spawn_via(via: &[String], home: &Path, args: &[String], env: &[(&str, &str)]) -> Zot {
        let zot_home = home.join("zot-home");
        let mut cmd = match via.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(BIN);
                c
            }
            None => Command::new(BIN),
        };
        cmd.args(args)
            .env("ZOT_HOME", &zot_home)
            .env_remove("XDG_STATE_HOME")
            .env_remove("NO_COLOR")
            .current_dir(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn zot");
        let pid = child.id();
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut stderr = child.stderr.take().expect("stderr");
        let raw: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (tx, lines) = unbounded();
        {
            let raw = raw.clone();
            thread::spawn(move || {
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match stdout.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    raw.lock().unwrap().extend_from_slice(&buf);
                    let line = String::from_utf8_lossy(buf.strip_suffix(b"\n").unwrap_or(&buf)).into_owned();
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        let err_buf: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (err_tx, err_done) = unbounded::<()>();
        {
            let err_buf = err_buf.clone();
            thread::spawn(move || {
                let mut b = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut b) {
                    if n == 0 {
                        break;
                    }
                    err_buf.lock().unwrap().extend_from_slice(&b[..n]);
                }
                let _ = err_tx.send(());
            });
        }
        let (etx, exit) = unbounded();
        thread::spawn(move || {
            if let Ok(s) = child.wait() {
                let _ = etx.send(s);
            }
        });
        Zot { pid, stdin, lines, exit, status: None, raw, stderr: err_buf, err_done, seen: Vec::new(), zot_home }
    }

    /// Writes `bytes` to zot's stdin as they are.
    pub fn write(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin still open");
        w.write_all(bytes).expect("write to zot");
        w.flush().expect("flush to zot");
    }

    /// Writes one line (a newline is added).
    pub fn send(&mut self, line: &str) {
        let mut b = line.as_bytes().to_vec();
        b.push(b'\n');
        self.write(&b);
    }

    /// Closes zot's stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line, or None at end of output or after `limit`.
    pub fn next_line(&mut self, limit: Duration) -> Option<String> {
        match self.lines.recv_timeout(limit) {
            Ok(l) => {
                self.seen.push(l.clone());
                Some(l)
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Reads lines until one satisfies `pred`; panics after [`LINE_WAIT`].
    pub fn wait_line(&mut self, what: &str, pred: impl FnMut(&str) -> bool) -> String {
        self.wait_line_within(LINE_WAIT, what, pred)
    }

    /// Like [`Zot::wait_line`], waiting up to `limit`.
    pub fn wait_line_within(&mut self, limit: Duration, what: &str, mut pred: impl FnMut(&str) -> bool) -> String {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.next_line(left) {
                Some(l) if pred(&l) => return l,
                Some(_) => {}
                None => panic!("no stdout line {what} within {limit:?}\n{}", self.context()),
            }
        }
    }

    /// Reads the rest of stdout (until zot closes it); panics after `limit`.
    pub fn read_to_end(&mut self, limit: Duration) -> Vec<String> {
        let end = Instant::now() + limit;
        let mut out = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    out.push(l);
                }
                Err(RecvTimeoutError::Disconnected) => return out,
                Err(RecvTimeoutError::Timeout) => panic!("stdout still open after {limit:?}\n{}", self.context()),
            }
        }
    }

    /// Waits for zot to exit; panics after `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        if let Some(s) = self.status {
            return s;
        }
        match self.exit.recv_timeout(limit) {
            Ok(s) => {
                self.status = Some(s);
                // What zot wrote to stderr before it exited is all read.
                let _ = self.err_done.recv_timeout(limit);
                s
            }
            Err(_) => panic!("zot did not exit within {limit:?}\n{}", self.context()),
        }
    }

    /// Exit code after exiting; panics when it was ended by a signal.
    pub fn exit_code(&mut self, limit: Duration) -> i32 {
        let s = self.wait_exit(limit);
        s.code().unwrap_or_else(|| panic!("zot ended by a signal: {s:?}\n{}", self.context()))
    }

    /// Everything written to stdout so far, as bytes.
    pub fn raw_stdout(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Sends `sig` to zot itself.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid as i32, sig);
        }
    }

    /// Stdout and stderr so far, for failure messages.
    pub fn context(&self) -> String {
        let mut s = String::from("--- stdout lines seen ---\n");
        for l in self.seen.iter().rev().take(40).collect::<Vec<_>>().into_iter().rev() {
            let l: String = l.chars().take(400).collect();
            s.push_str(&l);
            s.push('\n');
        }
        s.push_str("--- stderr ---\n");
        s.push_str(&self.stderr_text());
        if let Ok(rd) = std::fs::read_dir(self.zot_home.join("logs")) {
            let mut logs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            logs.sort();
            for l in logs {
                s.push_str(&format!("--- {} ---\n", l.display()));
                s.push_str(&std::fs::read_to_string(&l).unwrap_or_default());
            }
        }
        s
    }
}

impl Drop for Zot {
    fn drop(&mut self) {
        if self.status.is_some() || self.exit.try_recv().is_ok() {
            return;
        }
        // A failed test: leave nothing behind.
        let kids = children_of(self.pid);
        self.signal(libc::SIGKILL);
        for k in kids {
            // SAFETY: killing the process group an extension leads.
            unsafe {
                libc::kill(-(k as i32), libc::SIGKILL);
            }
        }
        let _ = self.exit.recv_timeout(Duration::from_secs(5));
    }
}

/// Live (non-zombie) processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        let rest = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        // state ppid ...
        if f.len() > 1 && f[0] != "Z" && f[1].parse::<u32>().ok() == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// `args` as owned strings.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `zot [sub] --no-ext --cwd <dir>/cwd <FAST> <extra> --ext D...`; the
/// cwd is created.
pub fn session_args(dir: &Path, sub: Option<&str>, exts: &[PathBuf], extra: &[&str]) -> Vec<String> {
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let mut args: Vec<String> = sub.into_iter().map(str::to_string).collect();
    args.extend(strings(&["--no-ext", "--cwd"]));
    args.push(cwd.display().to_string());
    args.extend(strings(&FAST));
    args.extend(strings(extra));
    for e in exts {
        args.push("--ext".into());
        args.push(e.display().to_string());
    }
    args
}

/// `zot mcp --no-ext --ext E... <FAST> <extra>` in `home`.
pub fn spawn_mcp(home: &Path, exts: &[String], extra: &[&str]) -> Zot {
    let mut args = strings(&["mcp", "--no-ext"]);
    for e in exts {
        args.push("--ext".into());
        args.push(e.clone());
    }
    args.extend(strings(&FAST));
    args.extend(strings(extra));
    Zot::spawn(home, &args, &[])
}

/// Polls until no process in `pids`, nor in their process groups, is left;
/// `context` is shown when some are.
pub fn assert_gone_within(pids: &[u32], limit: Duration, context: &str) {
    use crate::common::{group_members, process_alive, wait_until};
    let gone = wait_until(limit, || pids.iter().all(|&p| !process_alive(p) && group_members(p).is_empty()));
    let left: Vec<(u32, Vec<u32>)> =
        pids.iter().map(|&p| (p, group_members(p))).filter(|(p, g)| process_alive(*p) || !g.is_empty()).collect();
    assert!(gone, "extension processes still running (pid, group): {left:?}\n{context}");
}
