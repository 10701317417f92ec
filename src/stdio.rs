//! What the JSON-lines front ends on stdin/stdout (`zot serve`, `zot mcp`)
//! share: starting the host with a clean stop on termination signals,
//! reading bounded input lines, counting the requests still with the host
//! so that the end of input waits for their answers, and the one writer
//! thread. Host events and responses reach the writer through one channel,
//! both sent from the host's dispatcher thread as they happen there, so the
//! writer only ever writes in order and never reorders.

use crate::host::{Config, EventSink, Host};
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
    let host = match Host::start_with(config, sink) {
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
    count: Mutex<usize>,
    idle: Condvar,
}

/// Marks one request as answered when dropped.
pub struct Done(Arc<Pending>);

impl Pending {
    /// Counts one more request; it is answered when the result is dropped.
    pub fn begin(self: &Arc<Self>) -> Done {
        if let Ok(mut n) = self.count.lock() {
            *n += 1;
        }
        Done(self.clone())
    }

    /// Waits until every request counted so far is answered.
    pub fn wait_idle(&self) {
        let Ok(mut n) = self.count.lock() else { return };
        while *n > 0 {
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
            *n -= 1;
            if *n == 0 {
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
