//! Terminal resizes (SIGWINCH) as messages on a channel: the handler
//! writes a byte to a pipe, and a thread of its own turns each into one
//! message, so that the screen is drawn again outside the signal handler.

use crossbeam_channel::{unbounded, Receiver};
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_winch(_: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe, the pipe non-blocking (a
        // full pipe already holds a resize), the byte on the stack; errno
        // is restored for the code the signal interrupted.
        unsafe {
            let errno = *libc::__errno_location();
            let b = 0u8;
            libc::write(fd, &b as *const u8 as *const libc::c_void, 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// A message for each resize of the terminal from now on (several in a
/// burst may come as one). Once per process: a second call fails.
pub fn resizes() -> io::Result<Receiver<()>> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two descriptors, close-on-exec so no child
    // inherits them.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    // SAFETY: only the write end becomes non-blocking.
    unsafe { libc::fcntl(wfd, libc::F_SETFL, libc::O_NONBLOCK) };
    if PIPE_WRITE.compare_exchange(-1, wfd, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        // SAFETY: closing the two descriptors opened above.
        unsafe {
            libc::close(rfd);
            libc::close(wfd);
        }
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, "resizes are already watched"));
    }
    // SAFETY: installing a handler that only calls write(2); SA_RESTART
    // keeps the reads of other threads going.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_winch as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGWINCH, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let (tx, rx) = unbounded();
    std::thread::Builder::new().name("zot-winch".into()).stack_size(64 * 1024).spawn(move || {
        let mut b = [0u8; 64];
        loop {
            // SAFETY: reading into a local buffer of its own length.
            let n = unsafe { libc::read(rfd, b.as_mut_ptr().cast(), b.len()) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 || tx.send(()).is_err() {
                return;
            }
        }
    })?;
    Ok(rx)
}
