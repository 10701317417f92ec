//! One extension process, for the host and for `zot ext check` alike:
//! spawning it in its own process group with its stderr a pipe, the reader
//! thread (stdout lines → frames for the host, or the lines as they are
//! for the check; stderr lines → the log, [`stderr`]), the writer thread
//! (bounded queue → stdin, for what the sender's own non-blocking writes
//! leave; or one blocking write at a time that reports its error, for the
//! check), its exit seen without reaping by the one reaper of the process
//! ([`reaper`]), which drains stderr before telling it, and signals to its
//! group. The group is signalled only while the process is unreaped:
//! its zombie pins the group id, which after the reap may belong to
//! someone else. Neither thread outlives the process ([`cancel`]), and a
//! `Child` dropped unreaped kills its group and leaves the reap to the
//! reaper.
//!
//! The rooms, bottom-up: `msg` what the threads hand over, `group` the
//! process groups, `procfs` what `/proc` says, `cancel` the cancel token,
//! `read` the reader thread, `reaper` the one reaper, `spawn` the start of
//! a process; this file the `Child` itself and its writer thread.

pub use crate::log::Log;
use crate::manifest::Manifest;
use crate::trace::{Tap, Tracer};
use crossbeam_channel::{Sender, TrySendError};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

pub use crate::protocol::MAX_LINE;

/// Stack size of the per-child threads. Frame decoding is the deepest work
/// they do and serde_json caps nesting at 128 levels; a frame nested just
/// under that cap needs about 270 KiB of stack in a debug build (an
/// overflow aborts the whole host), so this leaves twice that.
pub const THREAD_STACK: usize = 512 * 1024;

/// An encoded frame, shared when the same bytes go to many children.
pub type Bytes = Arc<Vec<u8>>;

/// A peer that is not a process (a remote MCP server, docs/protocol.md
/// §8.5): what the host writes goes to [`Link::send`], and the link
/// reports through the inbox as a child's threads do, ending with
/// [`ChildMsg::Eof`] and [`ChildMsg::Exited`] once it is gone.
pub trait Link: Send + Sync {
    /// Bytes for the peer; never blocks. `held` is the frame's place in
    /// the child's queue bounds, as a stdio child's queue counts it: kept
    /// until the frame is sent, so a link is bounded as a pipe is.
    fn send(&self, bytes: Bytes, held: Charge) -> Result<(), SendError>;
    /// Ends it as a stop ends a process: the peer is told, then let go.
    fn close(&self);
    /// Ends it now.
    fn kill(&self);
}

/// What the writer thread is told.
enum WriterMsg {
    /// A frame, from this byte on (the start may have been written already),
    /// counted against the bounds of the queue until it is written.
    Frame(Bytes, usize, Charge),
    Close,
}

/// The bounds of what waits for the writer threads (docs/protocol.md §3 rule
/// 9): per child at most `frames` frames and `bytes` bytes (a frame that
/// finds its child's queue empty is always taken, so that one frame of up
/// to the 4 MiB frame limit never fails for size alone), and for all
/// children of a host together at most the shared budget. What is in the
/// pipe (64 KiB) and in the batch not written yet (64 KiB) comes on top.
#[derive(Clone)]
pub struct QueueBounds {
    pub frames: usize,
    pub bytes: usize,
    pub shared: Arc<Budget>,
}

/// Bytes queued for all the writer threads of one host, and their limit.
pub struct Budget {
    limit: usize,
    used: AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget { limit, used: AtomicUsize::new(0) })
    }

    /// Bytes queued now, for all children together.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// The bytes of one queued frame, given back to its child's count and the
/// host's budget when the frame is written or dropped (a dead child's
/// queue too), so nothing is counted twice or forever. A link's frame
/// (`frame`) gives back its place in the count of frames too.
pub struct Charge {
    n: usize,
    child: Arc<Stdin>,
    host: Arc<Budget>,
    frame: bool,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.child.queued.fetch_sub(self.n, Ordering::AcqRel);
        self.host.used.fetch_sub(self.n, Ordering::AcqRel);
        if self.frame {
            self.child.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Frames are gathered in the outbox up to this many bytes, and written
/// (by the sender or the writer thread) in pieces of at most about this size.
const BATCH: usize = 64 * 1024;

/// The child's stdin (non-blocking), shared by the dispatcher and the
/// writer thread. While nothing is queued, [`Child::send`] puts frames in
/// the outbox and [`Child::flush`] (called by the dispatcher when its inbox
/// is empty) writes them itself, without blocking: no thread hand-off per
/// call, and one write for a burst of frames. What does not fit in the
/// pipe, and everything after it until the writer has caught up, goes
/// through the bounded queue and the writer thread, in order.
struct Stdin {
    /// `None` once closed; only ever locked with `try_lock` by the sender,
    /// so a writer blocked on a full pipe never blocks it.
    pipe: Mutex<Option<File>>,
    /// Messages queued for the writer thread and not written yet.
    pending: AtomicUsize,
    /// Bytes of those messages.
    queued: AtomicUsize,
    /// Fired once the process is gone: a write waiting for room gives up.
    cancel: Cancel,
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
    /// Set once the process is reaped; no signal reaches its group after.
    reaped: std::sync::atomic::AtomicBool,
    queue: Sender<WriterMsg>,
    bounds: QueueBounds,
    stdin: Arc<Stdin>,
    /// Frames not written yet; only ever non-empty while nothing is queued.
    outbox: Mutex<Vec<u8>>,
    /// `--trace`: frames out are recorded in [`Child::send`].
    tap: Option<Tap>,
    /// Ends the reader and writer threads ([`cancel`]).
    cancel: Cancel,
    /// A dialect other than zot frames, when it speaks one.
    dialect: Option<Arc<dyn Dialect>>,
    /// A peer with no process ([`Child::linked`]).
    link: Option<Arc<dyn Link>>,
}

/// `env` as the pairs [`child_env`] takes.
fn os_pairs(env: &[(String, String)]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    env.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

impl Child {
    /// Spawns `exec` (the manifest's resolved program) with the manifest's
    /// args, in its directory, in its own process group. Every report of
    /// its threads reaches `inbox` as `wrap(msg)`. With `trace`, every
    /// frame in and out is recorded ([`crate::trace`]). `env` (the
    /// manifest's, expanded) is added to the environment ([`child_env`]).
    #[allow(clippy::too_many_arguments)]
    pub fn spawn<M, W>(
        manifest: &Manifest,
        exec: &Path,
        env: &[(String, String)],
        log: &Log,
        bounds: &QueueBounds,
        trace: Option<&Arc<Tracer>>,
        jail: Option<&crate::confine::Jail>,
        inbox: crate::wake::Tx<M>,
        wrap: W,
    ) -> io::Result<Child>
    where
        M: Send + 'static,
        W: Fn(ChildMsg) -> M + Send + Sync + Clone + 'static,
    {
        let tap = trace.map(|t| t.tap(&manifest.name));
        Child::start(manifest, exec, &os_pairs(env), log, bounds, tap, Reading::Frames, None, jail, inbox, wrap)
    }

    /// Spawns a child that speaks `dialect` as [`Child::spawn`] spawns an
    /// extension: its stdout is read through the dialect, every frame sent
    /// to it is translated there, and the dialect's opening is written at once.
    #[allow(clippy::too_many_arguments)]
    pub fn spawn_dialect<M, W>(
        manifest: &Manifest,
        exec: &Path,
        env: &[(String, String)],
        log: &Log,
        bounds: &QueueBounds,
        trace: Option<&Arc<Tracer>>,
        dialect: Arc<dyn Dialect>,
        jail: Option<&crate::confine::Jail>,
        inbox: crate::wake::Tx<M>,
        wrap: W,
    ) -> io::Result<Child>
    where
        M: Send + 'static,
        W: Fn(ChildMsg) -> M + Send + Sync + Clone + 'static,
    {
        let tap = trace.map(|t| t.tap(&manifest.name));
        let opening = dialect.opening();
        let child = Child::start(manifest, exec, &os_pairs(env), log, bounds, tap, Reading::Frames, Some(dialect), jail, inbox, wrap)?;
        if !opening.is_empty() {
            child.send_raw(Arc::new(opening)).map_err(|_| io::Error::other("cannot write its opening"))?;
            child.flush();
        }
        Ok(child)
    }

    /// Spawns `exec` as [`Child::spawn`] does, for a driver that judges
    /// every stdout line itself (`zot ext check`): the reader hands over
    /// each line as it is ([`Reading::Lines`]), so `log` holds nothing but
    /// the child's stderr; nothing is traced. `env` is added to the
    /// environment ([`child_env`]). Such a driver writes with
    /// [`Child::send_wait`], so the queue only ever carries the close of
    /// stdin.
    #[cfg_attr(not(feature = "author"), allow(dead_code))]
    pub fn spawn_lines<M, W>(
        manifest: &Manifest,
        exec: &Path,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        log: &Log,
        jail: Option<&crate::confine::Jail>,
        inbox: crate::wake::Tx<M>,
        wrap: W,
    ) -> io::Result<Child>
    where
        M: Send + 'static,
        W: Fn(ChildMsg) -> M + Send + Sync + Clone + 'static,
    {
        let bounds = QueueBounds { frames: 1, bytes: MAX_LINE, shared: Budget::new(MAX_LINE) };
        Child::start(manifest, exec, env, log, &bounds, None, Reading::Lines, None, jail, inbox, wrap)
    }

    /// Starts the process, with `env` (the manifest's) added to the
    /// environment ([`child_env`]), and its threads.
    #[allow(clippy::too_many_arguments)]
    fn start<M, W>(
        manifest: &Manifest,
        exec: &Path,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        log: &Log,
        bounds: &QueueBounds,
        tap: Option<Tap>,
        reading: Reading,
        dialect: Option<Arc<dyn Dialect>>,
        jail: Option<&crate::confine::Jail>,
        inbox: crate::wake::Tx<M>,
        wrap: W,
    ) -> io::Result<Child>
    where
        M: Send + 'static,
        W: Fn(ChildMsg) -> M + Send + Sync + Clone + 'static,
    {
        let name = &manifest.name;
        let cancel = Cancel::new()?;
        let (lineage, marker) = reaper::lineage(jail.and_then(|j| j.instance))?;
        let env = match jail {
            Some(j) => spawn::confined_env(j, &marker, env),
            None => child_env(&marker, env),
        };
        let Started { pid, stdin, stdout, stderr } = start_process(manifest, exec, &env, jail).inspect_err(|_| reaper::forget(lineage))?;
        // Non-blocking before the exit can be seen: the reaper drains it then.
        if let Err(e) = set_nonblocking(stderr.as_raw_fd()) {
            kill_group(pid, libc::SIGKILL);
            reaper::forget(lineage);
            reaper::reap_unwatched(pid);
            return Err(e);
        }
        let stderr = Stderr::new(stderr, log.clone());
        let (tx, w, err) = (inbox.clone(), wrap.clone(), stderr.clone());
        // Everything the process wrote to stderr is in the log before its
        // exit is reported (and so before the host's exit line).
        let told = move |status| {
            err.at_exit();
            drop(tx.send(w(ChildMsg::Exited(status))));
        };
        if let Err(e) = reaper::watch(pid, lineage, Box::new(told)) {
            kill_group(pid, libc::SIGKILL);
            reaper::forget(lineage);
            reaper::reap_unwatched(pid);
            return Err(e);
        }
        // Watched from here on: whatever fails, the process is killed and
        // reaped by the reaper, and its threads end.
        let abandon = |e: io::Error| {
            cancel.fire();
            kill_group(pid, libc::SIGKILL);
            reaper::abandon(pid);
            Err(e)
        };
        if let Err(e) = set_nonblocking(stdin.as_raw_fd()).and_then(|()| set_nonblocking(stdout.as_raw_fd())) {
            return abandon(e);
        }
        let stdin = Arc::new(Stdin {
            pipe: Mutex::new(Some(stdin)),
            pending: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            cancel: cancel.clone(),
        });
        // Unbounded underneath, bounded by `pending` and `queued` in
        // `send`: a bounded channel would allocate every slot up front
        // (about 1 MiB per child for 16,384 frames).
        let (qtx, qrx) = crossbeam_channel::unbounded::<WriterMsg>();

        let spawn_thread = |suffix: &str, f: Box<dyn FnOnce() + Send>| {
            thread::Builder::new()
                .name(format!("zot-ext-{name}-{suffix}"))
                .stack_size(THREAD_STACK)
                .spawn(f)
        };

        let (tx, w) = (inbox, wrap);
        let rlog = log.clone();
        let rtap = tap.as_ref().map(Tap::for_reader);
        let stdout = CancellableRead::new(stdout, cancel.clone(), 64 * 1024, stderr.clone());
        let rdialect = dialect.clone();
        let rcancel = cancel.clone();
        let r = spawn_thread(
            "r",
            Box::new(move || {
                // A reader that fails is reported like the end of stdout.
                let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let wake = tx.clone();
                    read_loop(
                        stdout,
                        &rlog,
                        rtap.as_ref(),
                        reading,
                        rdialect.as_deref(),
                        |m, more| if more { tx.send_quiet(w(m)) } else { tx.send(w(m)) }.is_ok(),
                        || wake.wake(),
                    )
                }));
                if read.is_err() {
                    rlog.line("the stdout reader failed; treating it as the end of stdout");
                    let _ = tx.send(w(ChildMsg::Eof));
                }
                // Stdout ended; stderr is read until its last holder closes it.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stderr.read_to_end(&rcancel)));
            }),
        );
        if let Err(e) = r {
            return abandon(e);
        }
        let shared = Arc::clone(&stdin);
        if let Err(e) = spawn_thread("w", Box::new(move || write_loop(&shared, qrx))) {
            return abandon(e);
        }
        let reaped = std::sync::atomic::AtomicBool::new(false);
        Ok(Child { pid, reaped, queue: qtx, bounds: bounds.clone(), stdin, outbox: Mutex::new(Vec::new()), tap, cancel, dialect, link: None })
    }

    /// A child with no process: frames go through `dialect` to `link`,
    /// which reports as a process's threads do. Its pid is 0 and no signal
    /// reaches anything; a signal or a drop ends the link.
    // Used by remote servers only (the default feature `remote`).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    /// Its frames are held to `bounds` as a process's are.
    pub fn linked(name: &str, link: Arc<dyn Link>, dialect: Arc<dyn Dialect>, trace: Option<&Arc<Tracer>>, bounds: &QueueBounds) -> io::Result<Child> {
        let cancel = Cancel::new()?;
        let stdin = Arc::new(Stdin { pipe: Mutex::new(None), pending: AtomicUsize::new(0), queued: AtomicUsize::new(0), cancel: cancel.clone() });
        let (queue, _) = crossbeam_channel::bounded(0);
        let bounds = bounds.clone();
        let opening = dialect.opening();
        let child = Child {
            pid: 0,
            reaped: std::sync::atomic::AtomicBool::new(false),
            queue,
            bounds,
            stdin,
            outbox: Mutex::new(Vec::new()),
            tap: trace.map(|t| t.tap(name)),
            cancel,
            dialect: Some(dialect),
            link: Some(link),
        };
        if !opening.is_empty() {
            child.send_raw(Arc::new(opening)).map_err(|_| io::Error::other("cannot send its opening"))?;
        }
        Ok(child)
    }

    /// Queues an encoded frame without blocking (for a child of another
    /// dialect, what its dialect makes of it).
    pub fn send(&self, bytes: Bytes) -> Result<(), SendError> {
        match &self.dialect {
            Some(d) => {
                let out = d.outgoing(&bytes);
                if out.is_empty() {
                    return Ok(());
                }
                self.send_raw(Arc::new(out))
            }
            None => self.send_raw(bytes),
        }
    }

    /// Queues bytes as they are, without blocking.
    pub fn send_raw(&self, bytes: Bytes) -> Result<(), SendError> {
        if let Some(tap) = &self.tap {
            tap.frame_out(&bytes);
        }
        if let Some(link) = &self.link {
            if !self.room_for(bytes.len()) {
                return Err(SendError::Full);
            }
            let mut held = self.charge(bytes.len());
            held.frame = true;
            self.stdin.pending.fetch_add(1, Ordering::AcqRel);
            return link.send(bytes, held);
        }
        let mut from = 0;
        if self.idle() {
            let mut outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
            if outbox.len() + bytes.len() <= BATCH {
                outbox.extend_from_slice(&bytes);
                return Ok(());
            }
            self.flush_locked(&mut outbox);
            if self.idle() {
                from = self.write_now(&bytes);
                if from == bytes.len() {
                    return Ok(());
                }
            }
        }
        // A frame begun above cannot be refused: nothing was queued (pending
        // was 0), so there is room for it.
        let n = bytes.len() - from;
        if from == 0 && !self.room_for(n) {
            return Err(SendError::Full);
        }
        let charge = self.charge(n);
        self.stdin.pending.fetch_add(1, Ordering::AcqRel);
        self.queue.try_send(WriterMsg::Frame(bytes, from, charge)).map_err(|e| {
            self.stdin.pending.fetch_sub(1, Ordering::AcqRel);
            match e {
                TrySendError::Full(_) => SendError::Full,
                TrySendError::Disconnected(_) => SendError::Closed,
            }
        })
    }

    /// Writes `bytes` before it returns, waiting for room in the pipe as
    /// long as it takes, and tells why it could not: for a driver that
    /// sends one frame at a time and must know at once that stdin is closed
    /// (`zot ext check`). It passes the outbox and the queue by, so it is
    /// not ordered with frames of [`Child::send`] not written yet: a child
    /// is driven with one or the other.
    #[cfg_attr(not(feature = "author"), allow(dead_code))]
    pub fn send_wait(&self, bytes: &[u8]) -> io::Result<()> {
        if let Some(tap) = &self.tap {
            tap.frame_out(&Arc::new(bytes.to_vec()));
        }
        write_all_wait(&self.stdin, bytes)
    }

    /// Whether `n` more bytes may be queued: always when this child's queue
    /// is empty, else within its bound and the host's budget.
    fn room_for(&self, n: usize) -> bool {
        let mine = self.stdin.queued.load(Ordering::Acquire);
        let frames = self.stdin.pending.load(Ordering::Acquire);
        mine == 0
            || (frames < self.bounds.frames.max(1)
                && mine + n <= self.bounds.bytes
                && self.bounds.shared.used() + n <= self.bounds.shared.limit)
    }

    fn charge(&self, n: usize) -> Charge {
        self.stdin.queued.fetch_add(n, Ordering::AcqRel);
        self.bounds.shared.used.fetch_add(n, Ordering::AcqRel);
        Charge { n, child: self.stdin.clone(), host: self.bounds.shared.clone(), frame: false }
    }

    /// Writes the outbox without blocking; what the pipe does not take goes
    /// to the writer thread.
    pub fn flush(&self) {
        let mut outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_locked(&mut outbox);
    }

    fn flush_locked(&self, outbox: &mut Vec<u8>) {
        if outbox.is_empty() {
            return;
        }
        let n = if self.idle() { self.write_now(outbox) } else { 0 };
        if n < outbox.len() {
            // Nothing is queued while the outbox holds frames, so there is room.
            let rest = outbox.split_off(n);
            let charge = self.charge(rest.len());
            self.stdin.pending.fetch_add(1, Ordering::AcqRel);
            if self.queue.try_send(WriterMsg::Frame(Arc::new(rest), 0, charge)).is_err() {
                self.stdin.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
        outbox.clear();
        if outbox.capacity() > 2 * BATCH {
            *outbox = Vec::new();
        }
    }

    /// Nothing is queued for (or being written by) the writer thread.
    fn idle(&self) -> bool {
        self.stdin.pending.load(Ordering::Acquire) == 0
    }

    /// Writes what the pipe takes without blocking; returns how much. A
    /// write error (the child closed stdin) is left to the writer thread to
    /// find, as before: the rest is queued.
    fn write_now(&self, bytes: &[u8]) -> usize {
        let mut from = 0;
        if let Ok(mut pipe) = self.stdin.pipe.try_lock() {
            if let Some(p) = pipe.as_mut() {
                while from < bytes.len() {
                    match p.write(&bytes[from..]) {
                        Ok(n) if n > 0 => from += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        _ => break,
                    }
                }
            }
        }
        from
    }

    /// Asks the writer to flush what is queued and close stdin. Never blocks:
    /// if the queue is full the writer is stuck anyway, and the signals that
    /// follow unblock it.
    pub fn close_stdin(&self) {
        if let Some(link) = &self.link {
            return link.close();
        }
        self.flush();
        // Counted as pending, so no later frame is written ahead of it.
        self.stdin.pending.fetch_add(1, Ordering::AcqRel);
        let _ = self.queue.try_send(WriterMsg::Close);
    }

    /// Sends `sig` to the child's whole process group, unless the process
    /// was reaped; returns whether it did.
    pub fn signal_group(&self, sig: i32) -> bool {
        if self.is_reaped() {
            return false;
        }
        if let Some(link) = &self.link {
            if sig == libc::SIGKILL || sig == libc::SIGTERM {
                link.kill();
            }
            return true;
        }
        kill_group(self.pid, sig);
        true
    }

    pub fn is_reaped(&self) -> bool {
        self.reaped.load(Ordering::Acquire)
    }

    /// Keeps what its confined start leaves (its `${TMP}`, its cgroup)
    /// until the start's last process has ended, its orphans and
    /// `setsid` descendants included: removed then (docs/protocol.md §9.1).
    pub fn hold(&self, remains: Option<crate::confine::Remains>) {
        if let Some(r) = remains {
            reaper::hold(self.pid, r);
        }
    }

    /// Reaps the process once its exit was seen ([`ChildMsg::Exited`]):
    /// from here on its group is never signalled.
    pub fn reap(&self) {
        if self.reaped.swap(true, Ordering::AcqRel) || self.link.is_some() {
            return;
        }
        reaper::reap(self.pid, &self.cancel);
    }
}

/// A child dropped before it was reaped is killed with its group, and
/// reaped by the reaper once it exited; its reader and writer end now.
impl Drop for Child {
    fn drop(&mut self) {
        self.cancel.fire();
        if let Some(link) = &self.link {
            return link.kill();
        }
        if !self.reaped.swap(true, Ordering::AcqRel) {
            kill_group(self.pid, libc::SIGKILL);
            reaper::abandon(self.pid);
        }
    }
}

/// Waits (at most 8 s) until the orphans of every stopped extension are
/// gone (docs/protocol.md §3 rule 10), and what their starts held (their
/// `${TMP}`, their cgroups) with them: for a host about to exit.
pub fn settle_orphans() {
    reaper::settle(std::time::Duration::from_secs(8));
}

/// How many children of this process alive now are orphans that no
/// extension can be said to own (docs/protocol.md §3 rule 10): `list`'s
/// `orphans`. Always 0 where orphans do not come to the host.
pub fn unattributed_orphans() -> usize {
    reaper::unattributed()
}

mod cancel;
mod group;
mod msg;
mod procfs;
mod read;
mod reaper;
mod spawn;
mod stderr;
mod stdout;
use cancel::{set_nonblocking, Cancel};
use stdout::CancellableRead;
use stderr::Stderr;
pub use read::preview;
pub use group::{group_alive, kill_group, EXIT_GRACE};
pub use msg::{ChildMsg, Dialect, Reading};
use read::read_loop;
pub use spawn::{child_env, spawn_from_this_thread};
use spawn::{start_process, Started};

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
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => stdin.cancel.wait(pipe.as_raw_fd(), libc::POLLOUT)?,
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
    // The charges of the frames in `buf`, given back once it is written.
    let mut charges = Vec::new();
    loop {
        let msg = crossbeam_channel::select! {
            recv(rx) -> msg => msg,
            recv(stdin.cancel.receiver()) -> _ => break,
        };
        let Ok(WriterMsg::Frame(b, from, charge)) = msg else { break };
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
        charges.push(charge);
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
            charges.clear();
            stdin.pending.fetch_sub(std::mem::take(&mut held), Ordering::AcqRel);
        }
    }
    if !buf.is_empty() {
        let _ = write_all_wait(stdin, &buf);
    }
    drop(charges);
    // What a dead child left queued gives its bytes back now.
    while rx.try_recv().is_ok() {}
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

#[cfg(test)]
mod tests;
