//! A child's stdout read end: non-blocking, buffered, its reads waiting
//! for data or the process's end ([`Cancel`]), and handing on the child's
//! stderr before and after each read, so that the one reader thread reads
//! both.

use super::cancel::{is_cancelled, Cancel, Cancelled, LATE_LIMIT};
use super::stderr::{Stderr, TURN};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;

/// The most stderr read after a read of stdout: `pipe-max-size`'s default,
/// more than a stderr pipe holds.
const AFTER_READ: usize = 1024 * 1024;

/// A non-blocking pipe read end (stdout), buffered, whose reads wait for
/// data or the token, and that hands on the child's stderr (`side`)
/// before every read and whenever it is readable during a wait, so that
/// one thread reads both. Its own buffer rather than a `BufReader` around
/// a `Read`: std zero-fills a `BufReader`'s whole buffer for a reader that is not a
/// `File`, which would make each of its 64 KiB resident (12.5 MiB at 200
/// extensions); this reads into the spare capacity instead, and only what
/// arrives is ever touched.
pub(super) struct CancellableRead {
    file: File,
    cancel: Cancel,
    buf: Vec<u8>,
    pos: usize,
    /// Bytes read since the token fired.
    late: usize,
    side: Stderr,
}


impl CancellableRead {
    pub(super) fn new(file: File, cancel: Cancel, capacity: usize, side: Stderr) -> CancellableRead {
        CancellableRead { file, cancel, buf: Vec::with_capacity(capacity), pos: 0, late: 0, side }
    }

    /// What is read and not consumed yet.
    pub(super) fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..]
    }
}

impl io::BufRead for CancellableRead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            // The token ends a wait, not what is in the pipe already: a
            // reader that runs late (a busy machine) still reads what the
            // process wrote before it went.
            loop {
                let fired = self.cancel.fired();
                if fired && self.late >= LATE_LIMIT {
                    return Err(io::Error::other(Cancelled));
                }
                // What the child wrote to stderr before this goes to the
                // log before what this read brings is acted on.
                self.side.pump(TURN);
                let spare = self.buf.spare_capacity_mut();
                // SAFETY: reads at most the spare capacity into it; the
                // length is set to exactly what the kernel wrote.
                let n = unsafe { libc::read(self.file.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
                if n >= 0 {
                    // SAFETY: the first n bytes of the spare capacity were written.
                    unsafe { self.buf.set_len(n as usize) };
                    // What it wrote to stderr before these bytes is in that
                    // pipe by now (it may have come after the pump above):
                    // into the log before they are acted on, up to what a
                    // pipe can hold (a child still writing is not followed
                    // for ever).
                    if n > 0 {
                        self.side.pump(AFTER_READ);
                    }
                    if fired {
                        self.late += n as usize;
                    }
                    break;
                }
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock if fired => return Err(io::Error::other(Cancelled)),
                    // Fired meanwhile: one more read takes what came before.
                    io::ErrorKind::WouldBlock => match self.cancel.wait_with(self.file.as_raw_fd(), self.side.poll_fd(), libc::POLLIN) {
                        Err(e) if is_cancelled(&e) => {}
                        r => r?,
                    },
                    io::ErrorKind::Interrupted => {}
                    _ => return Err(e),
                }
            }
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.buf.len());
    }
}

impl Read for CancellableRead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let got = io::BufRead::fill_buf(self)?;
            let n = got.len().min(out.len());
            out[..n].copy_from_slice(&got[..n]);
            n
        };
        io::BufRead::consume(self, n);
        Ok(n)
    }
}
