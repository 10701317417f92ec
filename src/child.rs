//! One extension process: spawning it in its own process group with its
//! stderr in the log file, the reader thread (stdout lines → frames), the
//! writer thread (bounded queue → stdin), the waiter thread (exit status),
//! and signals to its group.

use crate::manifest::Manifest;
use crate::protocol::{decode, DecodeError, ExtFrame};
use crossbeam_channel::{bounded, Sender, TrySendError};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread;

/// Longest line accepted from an extension, in bytes (without the `\n`).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Stack size of the per-child threads. Frame decoding is the deepest work
/// they do and serde_json caps nesting at 128 levels.
pub const THREAD_STACK: usize = 256 * 1024;

/// An encoded frame, shared when the same bytes go to many children.
pub type Bytes = Arc<Vec<u8>>;

/// What a child's threads report to the dispatcher.
#[derive(Debug)]
pub enum ChildMsg {
    Frame(ExtFrame),
    /// A line that decoded to a known reply type with bad fields but a
    /// usable id: a malformed reply to that request.
    BadReply { id: String, error: DecodeError },
    /// Stdout closed.
    Eof,
    /// The process exited (and has been reaped).
    Exited(ExitStatus),
}

/// The extension's log file: stderr of the child and `[zot]` lines.
#[derive(Debug, Clone)]
pub struct Log(Arc<File>);

impl Log {
    /// Opens (creating, appending) the log file at `path`.
    pub fn open(path: &Path) -> io::Result<Log> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Log(Arc::new(f)))
    }

    /// Appends one host line, `[zot] ` prefixed, in a single write.
    pub fn line(&self, msg: &str) {
        let mut buf = Vec::with_capacity(msg.len() + 8);
        buf.extend_from_slice(b"[zot] ");
        for c in msg.chars() {
            // One log line per message, whatever the message holds.
            if c == '\n' || c == '\r' {
                buf.extend_from_slice(b"\\n");
            } else {
                let mut tmp = [0u8; 4];
                buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
            }
        }
        buf.push(b'\n');
        let _ = (&*self.0).write_all(&buf);
    }

    fn stdio(&self) -> io::Result<Stdio> {
        Ok(Stdio::from(self.0.try_clone()?))
    }
}

/// What the writer thread is told.
enum WriterMsg {
    Frame(Bytes),
    Close,
}

/// Why a frame could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The queue is full: the child is not reading.
    Full,
    /// The writer is gone: stdin is closed.
    Closed,
}

/// The host's side of a running child.
pub struct Child {
    pub pid: u32,
    queue: Sender<WriterMsg>,
}

impl Child {
    /// Spawns `exec` (the manifest's resolved program) with the manifest's
    /// args, in its directory, in its own process group. Every report of
    /// its threads reaches `inbox` as `wrap(msg)`.
    pub fn spawn<M, W>(
        manifest: &Manifest,
        exec: &Path,
        log: &Log,
        queue_limit: usize,
        inbox: Sender<M>,
        wrap: W,
    ) -> io::Result<Child>
    where
        M: Send + 'static,
        W: Fn(ChildMsg) -> M + Send + Sync + Clone + 'static,
    {
        let name = &manifest.name;
        let mut cmd = Command::new(exec);
        cmd.args(&manifest.args)
            .current_dir(&manifest.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log.stdio()?)
            .process_group(0);
        set_parent_death_signal(&mut cmd);
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => {
                kill_group(pid, libc::SIGKILL);
                let _ = child.wait();
                return Err(io::Error::other("child pipes missing"));
            }
        };
        let (qtx, qrx) = bounded::<WriterMsg>(queue_limit.max(1));

        let spawn_thread = |suffix: &str, f: Box<dyn FnOnce() + Send>| {
            thread::Builder::new()
                .name(format!("zot-ext-{name}-{suffix}"))
                .stack_size(THREAD_STACK)
                .spawn(f)
        };

        let (tx, w) = (inbox.clone(), wrap.clone());
        let rlog = log.clone();
        let r = spawn_thread("r", Box::new(move || read_loop(stdout, &rlog, |m| tx.send(w(m)).is_ok())));
        let (tx, w) = (inbox, wrap);
        let x = spawn_thread(
            "x",
            Box::new(move || {
                let status = loop {
                    match child.wait() {
                        Ok(s) => break s,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => break ExitStatus::from_raw(0),
                    }
                };
                let _ = tx.send(w(ChildMsg::Exited(status)));
            }),
        );
        let wr = spawn_thread("w", Box::new(move || write_loop(stdin, qrx)));
        if let Err(e) = r.and(x).and(wr) {
            kill_group(pid, libc::SIGKILL);
            return Err(e);
        }
        Ok(Child { pid, queue: qtx })
    }

    /// Queues an encoded frame without blocking.
    pub fn send(&self, bytes: Bytes) -> Result<(), SendError> {
        self.queue.try_send(WriterMsg::Frame(bytes)).map_err(|e| match e {
            TrySendError::Full(_) => SendError::Full,
            TrySendError::Disconnected(_) => SendError::Closed,
        })
    }

    /// Asks the writer to flush what is queued and close stdin. Never blocks:
    /// if the queue is full the writer is stuck anyway, and the signals that
    /// follow unblock it.
    pub fn close_stdin(&self) {
        let _ = self.queue.try_send(WriterMsg::Close);
    }

    /// Sends `sig` to the child's whole process group.
    pub fn signal_group(&self, sig: i32) {
        kill_group(self.pid, sig);
    }
}

/// Sends `sig` to process group `pgid`; a group that is gone is not an error.
pub fn kill_group(pgid: u32, sig: i32) {
    if pgid == 0 || pgid > i32::MAX as u32 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals that process group only.
    unsafe {
        libc::kill(-(pgid as i32), sig);
    }
}

/// True while any process of group `pgid` exists.
pub fn group_alive(pgid: u32) -> bool {
    if pgid == 0 || pgid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-(pgid as i32), 0) == 0 }
}

#[cfg(target_os = "linux")]
fn set_parent_death_signal(cmd: &mut Command) {
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
fn set_parent_death_signal(_cmd: &mut Command) {}

/// Splits `input` into lines of at most [`MAX_LINE`] bytes, decodes each and
/// hands frames to `emit`; junk is logged and skipped, over-long lines are
/// discarded whole without being kept. Returns at EOF, after emitting `Eof`,
/// or when `emit` returns false.
pub fn read_loop<R: Read>(input: R, log: &Log, mut emit: impl FnMut(ChildMsg) -> bool) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_LINE as u64 + 1;
        let n = match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                log.line(&format!("reading stdout failed: {e}"));
                0
            }
        };
        if n == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() > MAX_LINE {
            let skipped = reader.skip_until(b'\n').unwrap_or(0);
            log.line(&format!(
                "discarded a line of {} bytes from stdout (limit {MAX_LINE} bytes)",
                line.len() + skipped
            ));
            line = Vec::new();
            continue;
        }
        if !handle_line(&line, log, &mut emit) {
            return;
        }
        if line.capacity() > 1024 * 1024 {
            line = Vec::new();
        }
    }
    emit(ChildMsg::Eof);
}

fn handle_line(line: &[u8], log: &Log, emit: &mut impl FnMut(ChildMsg) -> bool) -> bool {
    match decode::<ExtFrame>(line) {
        Ok(frame) => emit(ChildMsg::Frame(frame)),
        Err(DecodeError::BadFields { ty, id: Some(id), msg })
            if matches!(ty.as_str(), "command_response" | "tool_result" | "event_intercept_response") =>
        {
            log.line(&format!("malformed {ty} for request {id}: {msg}"));
            emit(ChildMsg::BadReply { id, error: DecodeError::BadFields { ty, id: None, msg } })
        }
        Err(e) => {
            log.line(&format!("skipped a stdout line: {e}: {}", preview(line)));
            true
        }
    }
}

/// The start of a line, for logs: at most 200 bytes, lossily decoded.
pub fn preview(line: &[u8]) -> String {
    let cut = &line[..line.len().min(200)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if line.len() > cut.len() {
        s.push_str(&format!("… ({} bytes)", line.len()));
    }
    s
}

fn write_loop(stdin: std::process::ChildStdin, rx: crossbeam_channel::Receiver<WriterMsg>) {
    let mut w = BufWriter::with_capacity(64 * 1024, stdin);
    while let Ok(msg) = rx.recv() {
        match msg {
            WriterMsg::Frame(b) => {
                if w.write_all(&b).is_err() {
                    return;
                }
            }
            WriterMsg::Close => break,
        }
        if rx.is_empty() && w.flush().is_err() {
            return;
        }
    }
    let _ = w.flush();
}

/// Describes an exit status: `code 3` or `signal 9`.
pub fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown status".into(),
    }
}
