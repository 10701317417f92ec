//! The frame writer: the only path to stdout, one mutex around it. Any
//! thread may send; each frame is written whole and flushed. Frames sent
//! before the handshake is done are held, then written in order after
//! `ready`.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::{Mutex, MutexGuard};

pub(crate) struct Writer {
    state: Mutex<State>,
}

struct State {
    out: BufWriter<Stdout>,
    /// Frames sent before [`Writer::open`].
    held: Vec<u8>,
    open: bool,
    /// No more frames: finished, or stdout broke.
    closed: bool,
}

impl Writer {
    pub(crate) fn new() -> Writer {
        let out = BufWriter::with_capacity(64 << 10, io::stdout());
        Writer { state: Mutex::new(State { out, held: Vec::new(), open: false, closed: false }) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes one encoded frame (a line), or holds it until `open`.
    pub(crate) fn send(&self, line: &[u8]) {
        let mut s = self.lock();
        if s.closed {
            return;
        }
        if !s.open {
            s.held.extend_from_slice(line);
            return;
        }
        if s.out.write_all(line).and_then(|_| s.out.flush()).is_err() {
            s.broken();
        }
    }

    /// Writes lines at once, ahead of held frames (the handshake).
    pub(crate) fn write_now(&self, lines: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        s.out.write_all(lines)?;
        s.out.flush()
    }

    /// Writes the held frames; later ones go out as they are sent.
    pub(crate) fn open(&self) {
        let mut s = self.lock();
        s.open = true;
        let held = std::mem::take(&mut s.held);
        if s.out.write_all(&held).and_then(|_| s.out.flush()).is_err() {
            s.broken();
        }
    }

    /// Drops every later frame.
    pub(crate) fn finish(&self) {
        let mut s = self.lock();
        let _ = s.out.flush();
        s.closed = true;
    }
}

impl State {
    fn broken(&mut self) {
        if !self.closed {
            self.closed = true;
            super::log("stdout is closed; frames are dropped from now on");
        }
    }
}
