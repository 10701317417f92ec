//! One extension process: spawning it in its own process group with its
//! stderr in the log file, the reader thread (stdout lines → frames), the
//! writer thread (bounded queue → stdin), the waiter thread (exit status),
//! and signals to its group.

use crate::manifest::Manifest;
use crate::protocol::{decode, DecodeError, ExtFrame};
use crossbeam_channel::{bounded, Sender, TrySendError};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
pub struct Log(Arc<(File, PathBuf)>);

impl Log {
    /// Opens (creating, appending) the log file at `path`.
    pub fn open(path: &Path) -> io::Result<Log> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Log(Arc::new((f, path.to_path_buf()))))
    }

    /// When the file is over `max` bytes, copies it to `<path>.1` and
    /// truncates it in place. The child keeps writing through its own
    /// append-mode descriptor, which continues at the new end; lines written
    /// between the copy and the truncation are lost. Returns whether it
    /// rotated.
    pub fn rotate_if_over(&self, max: u64) -> io::Result<bool> {
        let (file, path) = &*self.0;
        if file.metadata()?.len() <= max {
            return Ok(false);
        }
        let mut old = path.clone().into_os_string();
        old.push(".1");
        std::fs::copy(path, &old)?;
        file.set_len(0)?;
        self.line(&format!("log rotated past {max} bytes; older lines are in {}", Path::new(&old).display()));
        Ok(true)
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
        let _ = (&self.0 .0).write_all(&buf);
    }

    fn stdio(&self) -> io::Result<Stdio> {
        Ok(Stdio::from(self.0 .0.try_clone()?))
    }
}

/// What the writer thread is told.
enum WriterMsg {
    /// A frame, from this byte on (the start may have been written already).
    Frame(Bytes, usize),
    Close,
}

/// The child's stdin (non-blocking), shared by the dispatcher and the
/// writer thread. While nothing is queued, [`Child::send`] writes a frame
/// itself, without blocking: one thread hand-off less per call. What does
/// not fit in the pipe, and everything after it until the writer has caught
/// up, goes through the bounded queue and the writer thread, in order.
struct Stdin {
    /// `None` once closed; only ever locked with `try_lock` by the sender,
    /// so a writer blocked on a full pipe never blocks it.
    pipe: Mutex<Option<ChildStdin>>,
    /// Messages queued for the writer thread and not written yet.
    pending: AtomicUsize,
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
    stdin: Arc<Stdin>,
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
        set_nonblocking(&stdin)?;
        let stdin = Arc::new(Stdin { pipe: Mutex::new(Some(stdin)), pending: AtomicUsize::new(0) });
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
        let shared = Arc::clone(&stdin);
        let wr = spawn_thread("w", Box::new(move || write_loop(&shared, qrx)));
        if let Err(e) = r.and(x).and(wr) {
            kill_group(pid, libc::SIGKILL);
            return Err(e);
        }
        Ok(Child { pid, queue: qtx, stdin })
    }

    /// Queues an encoded frame without blocking.
    pub fn send(&self, bytes: Bytes) -> Result<(), SendError> {
        let mut from = 0;
        if self.stdin.pending.load(Ordering::Acquire) == 0 {
            if let Ok(mut pipe) = self.stdin.pipe.try_lock() {
                let Some(p) = pipe.as_mut() else { return Err(SendError::Closed) };
                // A write error (the child closed stdin) is left to the writer
                // thread to find, as before: the frame is queued.
                while from < bytes.len() {
                    match p.write(&bytes[from..]) {
                        Ok(n) if n > 0 => from += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        _ => break,
                    }
                }
                if from == bytes.len() {
                    return Ok(());
                }
            }
        }
        // A frame begun above cannot be refused: nothing was queued (pending
        // was 0), so there is room for it.
        self.stdin.pending.fetch_add(1, Ordering::AcqRel);
        self.queue.try_send(WriterMsg::Frame(bytes, from)).map_err(|e| {
            self.stdin.pending.fetch_sub(1, Ordering::AcqRel);
            match e {
                TrySendError::Full(_) => SendError::Full,
                TrySendError::Disconnected(_) => SendError::Closed,
            }
        })
    }

    /// Asks the writer to flush what is queued and close stdin. Never blocks:
    /// if the queue is full the writer is stuck anyway, and the signals that
    /// follow unblock it.
    pub fn close_stdin(&self) {
        // Counted as pending, so no later frame is written ahead of it.
        self.stdin.pending.fetch_add(1, Ordering::AcqRel);
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

fn set_nonblocking(stdin: &ChildStdin) -> io::Result<()> {
    let fd = stdin.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; only O_NONBLOCK is changed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Writes all of `buf` to the non-blocking pipe, waiting for room as long
/// as it takes (a child that stopped reading is unblocked by the signals
/// of a stop, which make the write fail).
fn write_all_wait(stdin: &Stdin, buf: &[u8]) -> io::Result<()> {
    let mut guard = stdin.pipe.lock().unwrap_or_else(|e| e.into_inner());
    let Some(pipe) = guard.as_mut() else { return Err(io::ErrorKind::BrokenPipe.into()) };
    let mut done = 0;
    while done < buf.len() {
        match pipe.write(&buf[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut pfd = libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd; a failure just retries the write.
                unsafe { libc::poll(&mut pfd, 1, -1) };
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The writer thread: writes queued frames in order, many per write when
/// they pile up, and closes stdin on `Close` or on the first error.
fn write_loop(stdin: &Stdin, rx: crossbeam_channel::Receiver<WriterMsg>) {
    const BATCH: usize = 64 * 1024;
    let mut buf = Vec::new();
    let mut held = 0;
    while let Ok(msg) = rx.recv() {
        let WriterMsg::Frame(b, from) = msg else { break };
        let bytes = &b[from.min(b.len())..];
        held += 1;
        let ok = if buf.is_empty() && bytes.len() >= BATCH {
            write_all_wait(stdin, bytes).is_ok()
        } else {
            buf.extend_from_slice(bytes);
            true
        };
        if !ok {
            break;
        }
        if !buf.is_empty() && (rx.is_empty() || buf.len() >= BATCH) {
            if write_all_wait(stdin, &buf).is_err() {
                break;
            }
            buf.clear();
            if buf.capacity() > 4 * BATCH {
                buf = Vec::new();
            }
        }
        if buf.is_empty() {
            stdin.pending.fetch_sub(std::mem::take(&mut held), Ordering::AcqRel);
        }
    }
    if !buf.is_empty() {
        let _ = write_all_wait(stdin, &buf);
    }
    // Closes the pipe; later sends find it closed.
    drop(stdin.pipe.lock().unwrap_or_else(|e| e.into_inner()).take());
}

/// Describes an exit status: `code 3` or `signal 9`.
pub fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown status".into(),
    }
}
