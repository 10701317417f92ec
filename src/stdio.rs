//! What the JSON-lines front ends on stdin/stdout (`zot serve`, `zot mcp`)
//! share: starting the host with a clean stop on termination signals,
//! reading bounded input lines, counting the requests still with the host
//! so that the end of input waits for their answers, and the one writer
//! thread. Host events and responses reach the writer through one channel,
//! both sent from the host's dispatcher thread as they happen there, so the
//! writer only ever writes in order and never reorders.

use crate::host::{Config, EventSink, Host, IdleHook};
use crossbeam_channel::{bounded, Receiver, Sender};
use crate::lines::{self, LineBuf};
use std::io::{BufRead, BufWriter, Write};
use std::sync::{Arc, Condvar, Mutex};

/// Longest input line accepted, in bytes.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// Starts the host for front end `who` (`zot serve`, `zot mcp`), its
/// events handed to `sink`. With `exit_on_signal`, SIGINT, SIGTERM and
/// SIGHUP stop every extension and then exit with 128 + the signal.
pub fn start_host(config: Config, who: &str, exit_on_signal: bool, sink: EventSink) -> Option<Arc<Host>> {
    start_host_idle(config, who, exit_on_signal, sink, Box::new(|| {}))
}

/// [`start_host`] with the host's idle hook ([`crate::host::IdleHook`]).
pub fn start_host_idle(config: Config, who: &str, exit_on_signal: bool, sink: EventSink, idle: IdleHook) -> Option<Arc<Host>> {
    let host = match Host::start_with_idle(config, sink, idle) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{who}: {e}");
            return None;
        }
    };
    let host = Arc::new(host);
    if exit_on_signal {
        let host = host.clone();
        let _ = crate::signals::on_termination(move |sig| {
            host.shutdown();
            std::process::exit(crate::signals::exit_code(sig));
        });
    }
    Some(host)
}

/// One line of input.
pub enum Line<'a> {
    /// The line without its `\n` (and `\r`); never blank.
    Text(&'a [u8]),
    /// A line over [`MAX_LINE`] bytes, skipped whole without being kept.
    TooLong,
}

/// Reads lines of at most [`MAX_LINE`] bytes, skipping blank ones.
pub struct Lines {
    buf: LineBuf,
}

impl Default for Lines {
    fn default() -> Lines {
        Lines { buf: LineBuf::new(MAX_LINE) }
    }
}

impl Lines {
    /// The next non-blank line; `None` at the end of input (or when it
    /// cannot be read any more).
    pub fn next<R: BufRead>(&mut self, input: &mut R) -> Option<Line<'_>> {
        loop {
            match self.buf.next(input) {
                Ok(None) | Err(_) => return None,
                Ok(Some(lines::Line::TooLong(_))) => return Some(Line::TooLong),
                Ok(Some(lines::Line::Text(t))) if t.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Some(lines::Line::Text(_))) => break,
            }
        }
        let text = self.buf.text();
        Some(Line::Text(text.strip_suffix(b"\r").unwrap_or(text)))
    }
}

/// How many requests are with the host, so that shutdown can wait for
/// their answers.
#[derive(Default)]
pub struct Pending {
    /// Requests not answered yet, and whether someone waits for none.
    count: Mutex<(usize, bool)>,
    idle: Condvar,
}

/// Marks one request as answered when dropped.
pub struct Done(Arc<Pending>);

impl Pending {
    /// Counts one more request; it is answered when the result is dropped.
    pub fn begin(self: &Arc<Self>) -> Done {
        if let Ok(mut n) = self.count.lock() {
            n.0 += 1;
        }
        Done(self.clone())
    }

    /// Waits until every request counted so far is answered.
    pub fn wait_idle(&self) {
        let Ok(mut n) = self.count.lock() else { return };
        while n.0 > 0 {
            n.1 = true;
            match self.idle.wait(n) {
                Ok(g) => n = g,
                Err(_) => return,
            }
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Ok(mut n) = self.0.count.lock() {
            n.0 -= 1;
            // Only a waiter is woken: a wake costs a system call even when
            // nobody sleeps, and this runs once per request.
            if n.0 == 0 && n.1 {
                n.1 = false;
                self.0.idle.notify_all();
            }
        }
    }
}

/// What the writer thread is given.
pub enum Out {
    Line(Vec<u8>),
    /// Everything queued before this is written and flushed; then ack.
    Flush(Sender<()>),
}

/// Asks the writer to write out everything queued so far, and waits.
pub fn flush(out: &Sender<Out>) {
    let (ack_tx, ack_rx) = bounded(1);
    if out.send(Out::Flush(ack_tx)).is_ok() {
        let _ = ack_rx.recv();
    }
}

/// Writes lines in the order they were queued until every sender of `rx`
/// is gone, flushing whenever nothing more is waiting. After a failed write
/// (the agent went away) output is dropped, but the loop goes on so that
/// shutdown still completes.
pub fn write_loop<W: Write>(output: W, rx: Receiver<Out>) {
    let mut w = BufWriter::with_capacity(64 * 1024, output);
    let mut broken = false;
    while let Ok(msg) = rx.recv() {
        match msg {
            Out::Line(l) => {
                if !broken && w.write_all(&l).is_err() {
                    broken = true;
                }
            }
            Out::Flush(ack) => {
                let _ = w.flush();
                let _ = ack.send(());
                continue;
            }
        }
        if rx.is_empty() && w.flush().is_err() {
            broken = true;
        }
    }
    let _ = w.flush();
}

/// Starts the writer thread of front end `name` on `output`; `None` (and a
/// message on stderr) when it cannot.
pub fn start_writer<W: Write + Send + 'static>(name: &str, output: W) -> Option<(Sender<Out>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = crossbeam_channel::unbounded::<Out>();
    match std::thread::Builder::new().name(format!("{name}-out")).spawn(move || write_loop(output, rx)) {
        Ok(h) => Some((tx, h)),
        Err(e) => {
            eprintln!("{name}: cannot start the output thread: {e}");
            None
        }
    }
}

/// The one ordered output of a front end, written without a thread
/// hand-off when it can be: lines are gathered in a buffer in the order
/// they are given, and whoever gives them writes them out at once, to a
/// non-blocking description of the same pipe ([`nonblocking_stdout`]),
/// as far as the pipe takes them. The host's dispatcher thread only
/// gathers, and writes what it gathered when its inbox is empty
/// ([`Output::write_ready`], its idle hook): one write for a burst of
/// answers, none of them waiting for another thread. Only what the pipe
/// does not take (the agent reads slowly) goes to the writer thread, which
/// writes it blocking, and keeps the output until it has caught up, so the
/// order never changes. Without a non-blocking description (not a pipe, or
/// a generic writer) every write is the writer thread's, as before.
#[derive(Clone)]
pub struct Output {
    shared: Arc<OutShared>,
}

struct OutShared {
    state: Mutex<OutState>,
    /// The writer thread waits here for work.
    work: Condvar,
    /// [`Output::flush`] waits here for the writer thread to catch up.
    drained: Condvar,
    direct: Option<std::fs::File>,
}

#[derive(Default)]
struct OutState {
    buf: Vec<u8>,
    /// The writer thread owns the output: it writes `buf` when it can.
    thread: bool,
    closed: bool,
    /// A write failed (the agent went away): output is dropped from here on.
    broken: bool,
}

/// The writer thread of an [`Output`], joined by [`Output::finish`].
pub struct OutputThread(std::thread::JoinHandle<()>);

/// A second, non-blocking open of this process's stdout when it is a pipe
/// (or FIFO): its own file description, so `O_NONBLOCK` changes nothing
/// for whoever else holds the pipe. `None` for anything else (a terminal,
/// a file, a socket), whose writes are left to the writer thread.
pub fn nonblocking_stdout() -> Option<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    // SAFETY: fstat on fd 1 into a zeroed struct; a failure is handled.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(1, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    let f = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open("/proc/self/fd/1").ok()?;
    f.metadata().ok().filter(|m| m.file_type().is_fifo())?;
    Some(f)
}

impl Output {
    /// Starts the writer thread of front end `name` on `output`, with
    /// `direct` (see [`nonblocking_stdout`]) for writes without it; `None`
    /// (and a message on stderr) when the thread cannot start.
    pub fn start<W: Write + Send + 'static>(name: &str, output: W, direct: Option<std::fs::File>) -> Option<(Output, OutputThread)> {
        let shared = Arc::new(OutShared {
            state: Mutex::new(OutState::default()),
            work: Condvar::new(),
            drained: Condvar::new(),
            direct,
        });
        let s = shared.clone();
        match std::thread::Builder::new().name(format!("{name}-out")).spawn(move || s.write_loop(output)) {
            Ok(h) => Some((Output { shared }, OutputThread(h))),
            Err(e) => {
                eprintln!("{name}: cannot start the output thread: {e}");
                None
            }
        }
    }

    /// Queues one line (with its `\n`). From the host's dispatcher thread
    /// it waits in the buffer for [`Output::write_ready`]; from any other
    /// thread it is written at once.
    pub fn line(&self, line: &[u8]) {
        let mut s = self.shared.lock();
        if s.broken {
            return;
        }
        s.buf.extend_from_slice(line);
        if !crate::host::on_dispatcher_thread() {
            self.shared.push(&mut s);
        }
    }

    /// Writes what was gathered, as far as the pipe takes it without
    /// blocking; the rest goes to the writer thread.
    pub fn write_ready(&self) {
        let mut s = self.shared.lock();
        self.shared.push(&mut s);
    }

    /// Waits until every line given so far is written (or the output broke).
    pub fn flush(&self) {
        let mut s = self.shared.lock();
        self.shared.push(&mut s);
        while (s.thread || !s.buf.is_empty()) && !s.broken {
            s = self.shared.drained.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Writes what is left and stops the writer thread.
    pub fn finish(&self, thread: OutputThread) {
        {
            let mut s = self.shared.lock();
            s.closed = true;
            self.shared.work.notify_one();
        }
        let _ = thread.0.join();
    }
}

impl OutShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, OutState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `buf` directly while the writer thread does not own the
    /// output; what is left is handed to it.
    fn push(&self, s: &mut OutState) {
        if s.thread || s.buf.is_empty() || s.broken {
            return;
        }
        if let Some(mut f) = self.direct.as_ref() {
            let mut done = 0;
            while done < s.buf.len() {
                match f.write(&s.buf[done..]) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        s.broken = true;
                        s.buf = Vec::new();
                        return;
                    }
                }
            }
            s.buf.drain(..done);
            if s.buf.is_empty() {
                if s.buf.capacity() > 1024 * 1024 {
                    s.buf = Vec::new();
                }
                return;
            }
        }
        s.thread = true;
        self.work.notify_one();
    }

    fn write_loop<W: Write>(&self, mut w: W) {
        let mut s = self.lock();
        let mut spare = Vec::new();
        loop {
            while !s.thread && !s.closed {
                s = self.work.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            if s.buf.is_empty() || s.broken {
                s.thread = false;
                self.drained.notify_all();
                if s.closed {
                    break;
                }
                continue;
            }
            let mut chunk = std::mem::replace(&mut s.buf, std::mem::take(&mut spare));
            drop(s);
            let ok = w.write_all(&chunk).and_then(|()| w.flush()).is_ok();
            chunk.clear();
            if chunk.capacity() <= 1024 * 1024 {
                spare = chunk;
            }
            s = self.lock();
            if !ok {
                s.broken = true;
                s.buf = Vec::new();
            }
        }
    }
}
