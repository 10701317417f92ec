//! A child's stderr (docs/protocol.md §1): a pipe that the child's one
//! reader thread reads beside its stdout, and that the reaper drains once
//! more when the process exits, before its exit is reported, so that the
//! host's exit line comes after everything the process wrote. What is read
//! is cut into lines that the host appends to the child's log:
//!
//! - a line is written whole, with its newline, once that newline is read;
//!   a last line without one is written at the end (of the pipe, or of
//!   the process);
//! - a line over [`LINE_MAX`] bytes is cut there: its first [`LINE_MAX`]
//!   bytes are written as a line, the rest up to its newline is left out,
//!   and a `[zot]` line after it says how long it was;
//! - bytes are kept as they are, invalid UTF-8 included (the log is the
//!   child's own text; readers decode it as they see fit);
//! - a line that would pass for one of the host's (`[zot]` at its start) is
//!   written after `[stderr] `, so a `[zot]` line is always the host's.

use super::cancel::{Cancel, LATE_LIMIT};
use super::Log;
use crate::log::format_line;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The longest stderr line written whole; longer ones are cut.
pub const LINE_MAX: usize = 64 * 1024;
/// At most this much is read in one turn, so that stdout does not wait.
pub(super) const TURN: usize = 64 * 1024;
/// Said before a stderr line that begins like one of the host's.
const MARK: &[u8] = b"[stderr] ";

/// The read end of a child's stderr pipe (non-blocking) and the line it
/// is in the middle of; clones share it.
#[derive(Clone)]
pub(super) struct Stderr(Arc<Shared>);

struct Shared {
    fd: RawFd,
    /// Read to its end (or given up on): never polled again.
    ended: AtomicBool,
    state: Mutex<State>,
}

struct State {
    /// Kept open until the last clone is gone, so that `fd` never names
    /// another file while some thread polls it.
    _pipe: File,
    log: Log,
    line: Vec<u8>,
    /// While the rest of an over-long line is left out: its length so far.
    cut: Option<usize>,
}

impl Stderr {
    pub(super) fn new(pipe: File, log: Log) -> Stderr {
        let fd = pipe.as_raw_fd();
        let state = Mutex::new(State { _pipe: pipe, log, line: Vec::new(), cut: None });
        Stderr(Arc::new(Shared { fd, ended: AtomicBool::new(false), state }))
    }

    /// The descriptor to poll beside stdout; -1 (ignored by `poll`) once
    /// the pipe is read to its end.
    pub(super) fn poll_fd(&self) -> RawFd {
        if self.0.ended.load(Ordering::Acquire) {
            -1
        } else {
            self.0.fd
        }
    }

    /// Reads what the pipe holds now, at most `limit` bytes (a little
    /// more), and hands the whole lines to the log, in one piece; at the
    /// pipe's end, the last line too. Returns whether the pipe is read to
    /// its end. It never waits for the pipe, and waits for the logger
    /// thread to write what it handed over: what the child wrote to stderr
    /// is in the file before anything read after it is acted on (a reply
    /// on stdout, its exit), and a child that writes faster than the disk
    /// takes is slowed, not kept in memory.
    pub(super) fn pump(&self, limit: usize) -> bool {
        if self.0.ended.load(Ordering::Acquire) {
            return true;
        }
        let mut st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        let mut got = 0;
        let mut ended = self.0.ended.load(Ordering::Acquire);
        while !ended && got < limit {
            // SAFETY: reads at most buf.len() bytes into a local buffer
            // from our own descriptor, kept open by `st`.
            let n = unsafe { libc::read(self.0.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                let n = n as usize;
                got += n;
                st.take(&buf[..n], &mut out);
                continue;
            }
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => break,
                    _ => out.extend(format_line(&format!("reading stderr failed: {e}"))),
                }
            }
            st.finish(&mut out);
            self.0.ended.store(true, Ordering::Release);
            ended = true;
        }
        written(&st.log.clone(), st, out);
        ended
    }

    /// The process exited: what it wrote is in the pipe (at most what a
    /// pipe holds, more only from a descendant), read now, and the line it
    /// was in the middle of is written as it is.
    pub(super) fn at_exit(&self) {
        if self.pump(LATE_LIMIT) {
            return;
        }
        let mut st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        st.finish(&mut out);
        written(&st.log.clone(), st, out);
    }

    /// Reads on until the last holder of the pipe closes it, or, once
    /// `cancel` fired (the process is gone and a descendant holds the
    /// pipe), what is there already: for the reader, after stdout ended.
    pub(super) fn read_to_end(&self, cancel: &Cancel) {
        loop {
            if self.pump(TURN) {
                return;
            }
            if cancel.wait(self.0.fd, libc::POLLIN).is_err() {
                break;
            }
        }
        self.at_exit();
        self.0.ended.store(true, Ordering::Release);
    }
}

/// Hands `out` to `log` and, with the state let go, waits until it is written.
fn written(log: &Log, st: std::sync::MutexGuard<'_, State>, out: Vec<u8>) {
    if out.is_empty() {
        return;
    }
    log.append(out);
    drop(st);
    crate::log::flush();
}

impl State {
    /// Adds `bytes` to the line(s), whole lines going to `out`.
    fn take(&mut self, mut bytes: &[u8], out: &mut Vec<u8>) {
        while !bytes.is_empty() {
            let (part, newline) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], true),
                None => (bytes, false),
            };
            bytes = &bytes[(part.len() + usize::from(newline)).min(bytes.len())..];
            if let Some(n) = self.cut.as_mut() {
                *n += part.len();
            } else if self.line.len() + part.len() > LINE_MAX {
                let room = LINE_MAX - self.line.len();
                self.line.extend_from_slice(&part[..room]);
                self.put(out);
                self.cut = Some(LINE_MAX + part.len() - room);
            } else {
                self.line.extend_from_slice(part);
            }
            if newline {
                self.end_line(out);
            }
        }
    }

    /// The line ends here (its newline, or the end of the input).
    fn end_line(&mut self, out: &mut Vec<u8>) {
        match self.cut.take() {
            Some(n) => out.extend(format_line(&format!("the stderr line above was {n} bytes long, cut to its first {LINE_MAX}"))),
            None => self.put(out),
        }
    }

    /// The input ends: a line begun is written as it is.
    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.cut.is_some() || !self.line.is_empty() {
            self.end_line(out);
        }
    }

    fn put(&mut self, out: &mut Vec<u8>) {
        if passes_for_the_hosts(&self.line) {
            out.extend_from_slice(MARK);
        }
        out.extend_from_slice(&self.line);
        out.push(b'\n');
        self.line.clear();
        // A long line's memory is not kept for the short ones after it.
        if self.line.capacity() > 8 * 1024 {
            self.line = Vec::new();
        }
    }
}

/// Whether `line` could show as one of the host's `[zot]` lines: it holds
/// `[zot]` and what comes before it shows nothing on a terminal (blanks, a
/// byte-order mark, a zero-width space) or may move the cursor back over
/// what came before (a carriage return, a backspace, an escape sequence).
fn passes_for_the_hosts(line: &[u8]) -> bool {
    let Some(at) = line.windows(5).position(|w| w == b"[zot]") else { return false };
    let before = &line[..at];
    let moves = |b: &u8| matches!(b, b'\r' | 0x08 | 0x1b) || *b == 0x9b;
    if before.iter().any(moves) {
        return true;
    }
    let text = String::from_utf8_lossy(before);
    text.chars().all(|c| c.is_whitespace() || c.is_control() || matches!(c, '\u{feff}' | '\u{200b}' | '\u{200c}' | '\u{200d}' | '\u{2060}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]], end: bool) -> Vec<u8> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zot-stderr-test-{}-{n}", std::process::id()));
        let log = Log::open(&dir.join("x.log")).unwrap();
        let mut st = State { _pipe: File::open("/dev/null").unwrap(), log, line: Vec::new(), cut: None };
        let mut out = Vec::new();
        for c in chunks {
            st.take(c, &mut out);
        }
        if end {
            st.finish(&mut out);
        }
        let _ = std::fs::remove_dir_all(dir);
        out
    }

    #[test]
    fn whole_lines_only_and_the_last_one_at_the_end() {
        assert_eq!(lines(&[b"ab", b"c\nde", b"f\n\ng"], false), b"abc\ndef\n\n");
        assert_eq!(lines(&[b"ab", b"c\nde", b"f\n\ng"], true), b"abc\ndef\n\ng\n");
        assert_eq!(lines(&[b"\xff\xfe bad utf-8\r\n"], true), b"\xff\xfe bad utf-8\r\n", "bytes kept as they are");
    }

    #[test]
    fn a_line_that_looks_like_the_hosts_is_marked() {
        assert_eq!(lines(&[b"[zot] forged\n[zo] fine\n"], true), b"[stderr] [zot] forged\n[zo] fine\n");
        // What a terminal would show as a host line is marked too.
        for forged in [&b" \r[zot] b"[..], b"x\x1b[2K\r[zot] c", "\u{feff}[zot] d".as_bytes(), b"  [zot] e", b"abc\x08\x08\x08[zot] f"] {
            assert!(passes_for_the_hosts(forged), "{:?}", String::from_utf8_lossy(forged));
        }
        assert!(!passes_for_the_hosts(b"the [zot] prefix means the host"), "a line that mentions it");
        assert!(!passes_for_the_hosts(b"plain"));
    }

    #[test]
    fn an_over_long_line_is_cut_and_said_so() {
        let long = vec![b'x'; LINE_MAX + 10];
        let out = lines(&[&long[..100], &long[100..], b"yy\nnext\n"], true);
        let mut want = vec![b'x'; LINE_MAX];
        want.push(b'\n');
        want.extend(format_line(&format!("the stderr line above was {} bytes long, cut to its first {LINE_MAX}", LINE_MAX + 12)));
        want.extend(b"next\n");
        assert_eq!(out, want);
        let exact = vec![b'x'; LINE_MAX];
        let out = lines(&[&exact, b"\n"], true);
        assert_eq!(out.len(), LINE_MAX + 1, "a line of exactly the bound is whole");
        let out = lines(&[&long], true);
        assert!(out.ends_with(b"cut to its first 65536\n"), "cut at the end of the input too");
    }
}
