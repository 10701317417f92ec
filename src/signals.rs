//! Termination signals (SIGINT, SIGTERM, SIGHUP) turned into an ordinary
//! callback on a thread of its own, through a self-pipe, so that the front
//! ends can stop every extension cleanly before the process exits.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;

static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe and the pipe is
        // non-blocking (a full pipe already holds a signal); the buffer is
        // on the stack; errno is restored for the code the signal
        // interrupted.
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(fd, &b as *const u8 as *const libc::c_void, 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// The exit code of a process ended by `sig` (128 + the signal number).
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}

/// Calls `f(signal)` on a dedicated thread when the process first receives
/// SIGINT, SIGTERM or SIGHUP. Later signals are ignored while `f` runs.
pub fn on_termination<F: FnOnce(i32) + Send + 'static>(f: F) -> io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two descriptors; both are close-on-exec so no
    // extension inherits them.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: only the write end becomes non-blocking.
    if unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    PIPE_WRITE.store(wfd, Ordering::Relaxed);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only calls write(2).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    thread::Builder::new().name("zot-signals".into()).stack_size(64 * 1024).spawn(move || {
        let mut b = 0u8;
        loop {
            // SAFETY: reading one byte into a local.
            let n = unsafe { libc::read(rfd, &mut b as *mut u8 as *mut libc::c_void, 1) };
            if n == 1 {
                break;
            }
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        f(b as i32);
    })?;
    Ok(())
}
