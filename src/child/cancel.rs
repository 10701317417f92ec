//! The end of what the host keeps for one process: a token fired once the
//! process is gone (dropped, or [`super::EXIT_GRACE`] after its reap),
//! which the reader polls together with stdout and the writer together
//! with stdin and its queue, so that neither outlives the process even
//! when a descendant holds the pipes open.

use crossbeam_channel::{Receiver, Sender};

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// Clones share one token; firing it is for good.
#[derive(Clone)]
pub(super) struct Cancel(Arc<Inner>);

struct Inner {
    /// Readable once fired: an eventfd (Linux), or a pipe's read end.
    fd: OwnedFd,
    /// The pipe's write end (not Linux), written once when fired.
    #[cfg(not(target_os = "linux"))]
    write: OwnedFd,
    /// Dropped when fired, so that `rx` reads as disconnected.
    tx: Mutex<Option<Sender<()>>>,
    rx: Receiver<()>,
}

/// What a read or write cut short by the token reports.
#[derive(Debug)]
pub(super) struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the process is gone")
    }
}

impl std::error::Error for Cancelled {}

/// Whether `e` is a [`Cancelled`].
pub(super) fn is_cancelled(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}

impl Cancel {
    pub(super) fn new() -> io::Result<Cancel> {
        let (tx, rx) = crossbeam_channel::bounded(0);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: eventfd returns a fresh descriptor that we then own.
            let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: fresh, open and ours.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            Ok(Cancel(Arc::new(Inner { fd, tx: Mutex::new(Some(tx)), rx })))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let mut fds = [0; 2];
            // SAFETY: pipe fills two fds that we then own.
            if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: both are fresh, open and ours.
            let (fd, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            for f in [&fd, &write] {
                // SAFETY: flags of our own descriptors.
                unsafe {
                    libc::fcntl(f.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
                    libc::fcntl(f.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
                }
            }
            Ok(Cancel(Arc::new(Inner { fd, write, tx: Mutex::new(Some(tx)), rx })))
        }
    }

    /// Ends the reader and the writer of the process, now or as soon as
    /// they next wait.
    pub(super) fn fire(&self) {
        let Some(tx) = self.0.tx.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        drop(tx);
        let one: u64 = 1;
        #[cfg(target_os = "linux")]
        let fd = self.0.fd.as_raw_fd();
        #[cfg(not(target_os = "linux"))]
        let fd = self.0.write.as_raw_fd();
        // SAFETY: writes 8 bytes from a local to our own descriptor (an
        // eventfd takes exactly that; a pipe takes them as data).
        unsafe {
            libc::write(fd, (&one as *const u64).cast(), 8);
        }
    }

    pub(super) fn fired(&self) -> bool {
        self.0.tx.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// Disconnected once fired: for a `select!` beside a channel.
    pub(super) fn receiver(&self) -> &Receiver<()> {
        &self.0.rx
    }

    /// Waits until `fd` is ready for `events` or the token is fired (then
    /// [`Cancelled`]).
    pub(super) fn wait(&self, fd: RawFd, events: libc::c_short) -> io::Result<()> {
        self.wait_with(fd, -1, events)
    }

    /// As [`Cancel::wait`], returning as well once `side` (-1: none) is
    /// readable.
    pub(super) fn wait_with(&self, fd: RawFd, side: RawFd, events: libc::c_short) -> io::Result<()> {
        loop {
            let mut pfds = [
                libc::pollfd { fd, events, revents: 0 },
                libc::pollfd { fd: self.0.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: side, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: three pollfds of our own (poll skips a negative fd).
            let r = unsafe { libc::poll(pfds.as_mut_ptr(), 3, -1) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if pfds[1].revents != 0 || self.fired() {
                return Err(io::Error::other(Cancelled));
            }
            if pfds[0].revents != 0 || pfds[2].revents != 0 {
                return Ok(());
            }
        }
    }
}

/// What is still read once the token fired: what the process wrote before
/// it went, not a descendant's endless stream.
pub(super) const LATE_LIMIT: usize = 1 << 20;

/// Sets `O_NONBLOCK` on a descriptor we own.
pub(super) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own; only O_NONBLOCK is changed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
