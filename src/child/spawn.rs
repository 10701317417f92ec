//! Starting an extension's process: its environment, its own process
//! Starting an extension's process: its environment, its own process
//! group (a confined one: its own session), stdin, stdout and stderr pipes,
//! only fds 0-2 across exec and (Linux) the parent-death signal, with the
//! `clone(CLONE_VM | CLONE_VFORK)` start on a guard-paged stack; and which
//! threads may start one.

#[cfg(not(target_os = "linux"))]
use super::group::kill_group;
use super::procfs::INSTANCE_VAR;
use crate::manifest::Manifest;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering;

/// A started extension process: its pid and our ends of its stdin,
/// stdout and stderr.
pub(super) struct Started {
    pub pid: u32,
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
}

/// The environment of an extension (docs/protocol.md §1): the host's own, then
/// zot's own variables (`ZOT_AGENT=1` and `AI_AGENT=zot` as upstream sets
/// them, the instance `marker` as [`INSTANCE_VAR`](INSTANCE_VAR)),
/// then `extra` (the manifest's `env`, expanded), each later entry
/// replacing an earlier one of its name: the manifest's wins.
pub fn child_env<K: AsRef<OsStr>, V: AsRef<OsStr>>(marker: &str, extra: &[(K, V)]) -> Vec<(OsString, OsString)> {
    with_additions(std::env::vars_os().collect(), marker, extra)
}

/// The environment of a confined process (docs/protocol.md §9.1 `env`): as
/// [`child_env`], but of the host's own variables only those `jail` keeps
/// (the small set and the declared names), so that a key in the user's
/// shell is not handed to every confined process.
pub fn confined_env<K: AsRef<OsStr>, V: AsRef<OsStr>>(jail: &crate::confine::Jail, marker: &str, extra: &[(K, V)]) -> Vec<(OsString, OsString)> {
    with_additions(std::env::vars_os().filter(|(k, _)| jail.keeps_var(k)).collect(), marker, extra)
}

fn with_additions<K: AsRef<OsStr>, V: AsRef<OsStr>>(mut env: Vec<(OsString, OsString)>, marker: &str, extra: &[(K, V)]) -> Vec<(OsString, OsString)> {
    let added = [("ZOT_AGENT", "1"), ("AI_AGENT", "zot"), (INSTANCE_VAR, marker)]
        .map(|(k, v)| (OsStr::new(k), OsStr::new(v)))
        .into_iter()
        .chain(extra.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
    for (k, v) in added {
        env.retain(|(name, _)| name != k);
        env.push((k.into(), v.into()));
    }
    env
}

thread_local! {
    static SPAWNER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as one that outlives the processes it starts: the
/// parent-death signal (Linux) is tied to the thread that started the
/// child, so a child started from a thread that ends early would be killed
/// with it. The dispatcher thread and `zot ext check`'s own thread call it;
/// starting a process from any other thread is refused.
///
/// It also makes the process a child subreaper (Linux) and starts its one
/// reaper, before the first child.
pub fn spawn_from_this_thread() {
    SPAWNER.with(|s| s.set(true));
    super::reaper::start();
}

fn may_spawn_here() -> io::Result<()> {
    if SPAWNER.with(|s| s.get()) {
        Ok(())
    } else {
        Err(io::Error::other("extensions are started only from a thread that outlives them (see child::spawn_from_this_thread)"))
    }
}

/// The child's stack until its exec: mapped with a guard page below it,
/// so an overflow faults instead of writing into our heap.
#[cfg(target_os = "linux")]
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

#[cfg(target_os = "linux")]
impl ChildStack {
    const SIZE: usize = 64 * 1024;

    fn new() -> io::Result<ChildStack> {
        // SAFETY: sysconf only reads a value.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(4096);
        let len = Self::SIZE + page;
        // SAFETY: a fresh private anonymous mapping, owned by the result.
        let base = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK, -1, 0)
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the lowest page of our own mapping; the stack grows down.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of our mapping, where a stack starts.
        unsafe { (self.base as *mut u8).add(self.len) as *mut libc::c_void }
    }
}

#[cfg(target_os = "linux")]
impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Starts `exec` with the manifest's args, in its directory, in its own
/// process group, its stdin, stdout and stderr pipes.
#[cfg(not(target_os = "linux"))]
pub(super) fn start_process(
    manifest: &Manifest,
    exec: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    _jail: Option<&crate::confine::Jail>,
) -> io::Result<Started> {
    may_spawn_here()?;
    use std::os::fd::OwnedFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(exec)
        .args(&manifest.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&manifest.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
        kill_group(pid, libc::SIGKILL);
        let _ = child.wait();
        return Err(io::Error::other("child pipes missing"));
    };
    let file = |fd: OwnedFd| File::from(fd);
    Ok(Started { pid, stdin: file(stdin.into()), stdout: file(stdout.into()), stderr: file(stderr.into()) })
}

/// Starts `exec` with the manifest's args, in its directory, in its own
/// process group (with a `jail`: its own session, as `setsid` makes it),
/// its stdin, stdout and stderr pipes, with SIGKILL as its parent-death
/// signal, and with only fds 0, 1 and 2 crossing exec.
///
/// `std::process::Command` can only set the parent-death signal in a
/// `pre_exec` hook, which makes it `fork`: copying the page tables of a
/// host that already runs 3 threads per extension, with TLB shootdowns on
/// every core, several milliseconds per extension at 50 of them. This
/// starts the child the way `posix_spawn` does instead: `clone` with
/// `CLONE_VM | CLONE_VFORK`, the child running on a stack of its own in our
/// memory, doing only async-signal-safe system calls, while this thread
/// waits for its exec (other threads run on). Everything the child needs is
/// prepared before, every signal is blocked around the clone so that no
/// handler of the host runs in the child, and the child resets handlers to
/// their defaults (SIGPIPE too, which Rust ignores) and unblocks signals
/// before exec, as `std` does. With a `jail`, the child starts with `setsid`
/// and confines itself last before its exec ([`crate::confine::Jail::enter`]).
#[cfg(target_os = "linux")]
pub(super) fn start_process(
    manifest: &Manifest,
    exec: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    jail: Option<&crate::confine::Jail>,
) -> io::Result<Started> {
    may_spawn_here()?;
    use std::ffi::CString;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::AtomicI32;

    /// What the child reads (in our memory) and where it reports a failure.
    struct Plan<'a> {
        path: CString,
        argv: Vec<*const libc::c_char>,
        envp: Vec<*const libc::c_char>,
        dir: CString,
        /// Become the child's fds 0, 1 and 2.
        fds: [libc::c_int; 3],
        parent: libc::pid_t,
        max_fd: libc::c_int,
        /// errno of the step that failed in the child; 0 when it exec'd.
        err: AtomicI32,
        jail: Option<&'a crate::confine::Jail>,
    }

    extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Plan` of the parent, which is suspended
        // (CLONE_VFORK) and keeps it alive until this exits or execs. Only
        // system calls from here on: no allocation, no locks.
        unsafe {
            let p = &*(arg as *const Plan);
            let fail = || -> libc::c_int {
                p.err.store(*libc::__errno_location(), Ordering::SeqCst);
                libc::_exit(127)
            };
            let mut sa: libc::sigaction = std::mem::zeroed();
            for sig in 1..65 {
                if libc::sigaction(sig, std::ptr::null(), &mut sa) == 0
                    && sa.sa_sigaction != libc::SIG_DFL
                    && (sa.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE)
                {
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(sig, &dfl, std::ptr::null_mut());
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return fail();
            }
            // A confined child starts a session of its own (§3 rule 1):
            // no controlling terminal, and no way back into the host's
            // process group, which is in another session.
            let own_group = if p.jail.is_some() { libc::setsid() } else { libc::setpgid(0, 0) };
            if own_group < 0 {
                return fail();
            }
            for (target, &fd) in p.fds.iter().enumerate() {
                let target = target as libc::c_int;
                let ok = if fd == target { libc::fcntl(fd, libc::F_SETFD, 0) } else { libc::dup2(fd, target) };
                if ok < 0 {
                    return fail();
                }
            }
            if libc::chdir(p.dir.as_ptr()) != 0 {
                return fail();
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return fail();
            }
            if libc::getppid() != p.parent {
                libc::_exit(1);
            }
            // Only fds 0, 1 and 2 cross exec: an fd zot inherited without
            // close-on-exec (a pipe of whatever started zot) must not reach
            // extensions and be held open by them. A jail closes them
            // itself, in its order, and ends with its seccomp filter.
            if let Some(j) = p.jail {
                if let Err(errno) = j.enter() {
                    p.err.store(errno, Ordering::SeqCst);
                    libc::_exit(127);
                }
            } else {
                let (first, last) = (3 as libc::c_uint, libc::c_uint::MAX);
                if libc::syscall(libc::SYS_close_range, first, last, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                    for fd in 3..p.max_fd {
                        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    }
                }
            }
            libc::execve(p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
            fail()
        }
    }

    let cstr = |b: &[u8]| {
        CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the program, its arguments, its directory or the environment"))
    };
    let path = cstr(exec.as_os_str().as_bytes())?;
    let args = std::iter::once(Ok(path.clone()))
        .chain(manifest.args.iter().map(|a| cstr(a.as_bytes())))
        .collect::<io::Result<Vec<CString>>>()?;
    let env = env
        .iter()
        .map(|(k, v)| cstr(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<io::Result<Vec<CString>>>()?;
    let nul_terminated = |v: &[CString]| v.iter().map(|c| c.as_ptr()).chain([std::ptr::null()]).collect::<Vec<_>>();
    let pipe = || -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds that we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both are fresh, open and ours.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    };
    let (in_r, in_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let plan = Plan {
        argv: nul_terminated(&args),
        envp: nul_terminated(&env),
        path,
        dir: cstr(manifest.dir.as_os_str().as_bytes())?,
        fds: [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
        parent: std::process::id() as libc::pid_t,
        // SAFETY: sysconf only reads a limit.
        // The real limit: close_range is missing only on kernels before 5.11.
        max_fd: unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(3, libc::c_int::MAX as libc::c_long) as libc::c_int,
        err: AtomicI32::new(0),
        jail,
    };
    let stack = ChildStack::new()?;
    // SAFETY: the stack outlives the child's use of it (CLONE_VFORK: we
    // resume only once it has exec'd or exited); the signal mask is
    // restored right after.
    let pid = unsafe {
        let top = stack.top();
        let (mut all, mut old): (libc::sigset_t, libc::sigset_t) = (std::mem::zeroed(), std::mem::zeroed());
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
        let pid = libc::clone(child, top, flags, &plan as *const Plan as *mut libc::c_void);
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(err);
        }
        pid
    };
    drop(stack);
    let reap = move || loop {
        let mut status = 0;
        // SAFETY: waits for our own child, which failed before its exec.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        break;
    };
    match plan.err.load(Ordering::SeqCst) {
        0 => {}
        errno => {
            reap();
            return Err(io::Error::from_raw_os_error(errno));
        }
    }
    drop((in_r, out_w, err_w));
    Ok(Started { pid: pid as u32, stdin: File::from(in_w), stdout: File::from(out_r), stderr: File::from(err_r) })
}
