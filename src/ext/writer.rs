//! The frame writer: the only path to stdout. Any thread may send; there
//! is no writer thread. A sender queues its line, then writes the queue
//! itself if no other thread is writing ("flat combining"): a lone answer
//! is written at once by the thread that produced it (no hand-off to wake
//! up), and under load one thread writes many queued frames per flush
//! while the others return at once. Frames stay whole lines, in queue
//! order; a sender never waits for another's write.

use crossbeam_channel::{unbounded, Receiver, Sender};
use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

pub(crate) struct Writer {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    out: Mutex<BufWriter<Stdout>>,
    /// Queued frames may be written (the handshake is done).
    open: AtomicBool,
    /// No more frames: finished, or stdout broke.
    closed: AtomicBool,
}

impl Writer {
    pub(crate) fn new() -> Writer {
        let (tx, rx) = unbounded();
        Writer {
            tx,
            rx,
            out: Mutex::new(BufWriter::with_capacity(64 << 10, io::stdout())),
            open: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// Queues one encoded frame (a line) and writes the queue unless
    /// another thread is writing it already.
    pub(crate) fn send(&self, line: Vec<u8>) {
        if self.closed.load(Ordering::Acquire) || self.tx.send(line).is_err() {
            return;
        }
        fence(Ordering::SeqCst);
        if self.open.load(Ordering::SeqCst) {
            self.pump();
        }
    }

    /// Writes lines at once, ahead of the queue (the handshake).
    pub(crate) fn write_now(&self, lines: &[u8]) -> io::Result<()> {
        let mut out = self.lock();
        out.write_all(lines)?;
        out.flush()
    }

    /// Lets queued frames (e.g. notes sent before `run`) go out.
    pub(crate) fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        self.pump();
    }

    /// Writes whatever is queued, waiting for a writer in progress, and
    /// drops every later frame.
    pub(crate) fn finish(&self) {
        let out = self.lock();
        self.drain(out);
        self.closed.store(true, Ordering::Release);
    }

    fn lock(&self) -> MutexGuard<'_, BufWriter<Stdout>> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pump(&self) {
        loop {
            let out = match self.out.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                // The writer re-checks the queue after unlocking.
                Err(TryLockError::WouldBlock) => return,
            };
            self.drain(out);
            // Pairs with the fence in `send`: a line queued while we held
            // the lock is either seen here or its sender gets the lock.
            fence(Ordering::SeqCst);
            if self.rx.is_empty() || self.closed.load(Ordering::Acquire) {
                return;
            }
        }
    }

    fn drain(&self, mut out: MutexGuard<'_, BufWriter<Stdout>>) {
        while let Ok(line) = self.rx.try_recv() {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            if out.write_all(&line).is_err() {
                return self.broken();
            }
        }
        if out.flush().is_err() {
            self.broken();
        }
    }

    fn broken(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            super::log("stdout is closed; frames are dropped from now on");
        }
    }
}
