//! The process bound of a confined start (docs/protocol.md §9.2): `procs`
//! processes and threads for the extension and all its descendants.
//!
//! Where the host can make a cgroup, each start gets one with `pids.max`,
//! which the child joins before its exec: on cgroup v2 under the host's own
//! cgroup (from `/proc/self/cgroup`) when it is writable and offers `pids`
//! (the host first moves itself into a `zot` leaf there, as v2 wants no
//! process beside child cgroups that use a controller), on v1 in the `pids`
//! hierarchy when the host runs as root. Elsewhere `RLIMIT_NPROC`, set to
//! the user's task count at start plus `procs`, never above the host's own
//! limit less [`RESERVE`]; it binds no process of root, so a root host with
//! no cgroup enforces nothing ([`enforced`] says which).
//!
//! A start's cgroup is killed (`cgroup.kill`, or each of its processes on
//! v1) and removed once the start's last process has ended ([`Remains`]),
//! which is also when its `${TMP}` goes (at the latest when the host
//! exits); cgroups a host left behind (killed before it could remove them)
//! are removed by the next host that makes one.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// What `RLIMIT_NPROC` leaves the host above everything its confined
/// children may start, so that it can still start, restart and call them.
pub const RESERVE: u64 = 64;

/// A cgroup hierarchy the host can make cgroups in.
#[derive(Debug, Clone)]
struct Hier {
    /// Where the per-start cgroups are made.
    base: PathBuf,
    v2: bool,
}

/// Whether this host's starts are bounded: by a cgroup it can make, or by
/// `RLIMIT_NPROC` (any host not running as root). Read-only: a listing
/// asks it without moving the process anywhere; once [`prepare`] has run
/// (in a host that starts confined processes), what it found.
pub fn enforced() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    let cgroup = match HIER.get() {
        Some(h) => h.is_ok(),
        None => *USABLE.get_or_init(|| usable().is_some()),
    };
    // SAFETY: getuid has no preconditions.
    cgroup || unsafe { libc::getuid() } != 0
}

/// Sets up the cgroup hierarchy of this host, once, before its first
/// confined start says what it enforces: on v2 this moves the host.
pub fn prepare() {
    let _ = hierarchy();
}

/// The hierarchy this process could use, without changing anything.
fn usable() -> Option<Hier> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let v2 = own.lines().find_map(|l| l.strip_prefix("0::")).and_then(|p| dir_of(&mounts, "cgroup2", None, p)).and_then(|dir| {
        // A host already in a `zot` leaf makes its cgroups beside it.
        let base = if dir.file_name().is_some_and(|n| n == "zot") { dir.parent()?.to_path_buf() } else { dir };
        let controllers = std::fs::read_to_string(base.join("cgroup.controllers")).ok()?;
        let ok = controllers.split_whitespace().any(|c| c == "pids")
            && ["", "cgroup.procs", "cgroup.subtree_control"].iter().all(|f| writable(&base.join(f)));
        ok.then_some(Hier { base, v2: true })
    });
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    v2.or_else(|| {
        let path = own.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            ctl.split(',').any(|c| c == "pids").then_some(path)
        })?;
        let base = dir_of(&mounts, "cgroup", Some("pids"), path)?;
        (root && writable(&base)).then_some(Hier { base, v2: false })
    })
}

fn writable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The folder of cgroup `path` in the mount of `fstype` (with `option` in
/// its super options, for v1), from `/proc/self/mountinfo`.
fn dir_of(mounts: &str, fstype: &str, option: Option<&str>, path: &str) -> Option<PathBuf> {
    for line in mounts.lines() {
        let Some((head, tail)) = line.split_once(" - ") else { continue };
        let mut t = tail.split(' ');
        let (ty, _src, opts) = (t.next()?, t.next()?, t.next().unwrap_or(""));
        if ty != fstype || option.is_some_and(|o| !opts.split(',').any(|x| x == o)) {
            continue;
        }
        let h: Vec<&str> = head.split(' ').collect();
        let (root, point) = (unescape(h.get(3)?), unescape(h.get(4)?));
        let rel = if root == "/" { path } else { path.strip_prefix(root.as_str())? };
        if !(rel.is_empty() || rel.starts_with('/')) || rel.split('/').any(|c| c == "..") {
            continue;
        }
        return Some(PathBuf::from(point).join(rel.trim_start_matches('/')));
    }
    None
}

/// A mountinfo field with its `\NNN` escapes decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = |j: usize| b.get(j).filter(|c| (b'0'..=b'7').contains(c)).map(|c| c - b'0');
        match (b[i], oct(i + 1), oct(i + 2), oct(i + 3)) {
            (b'\\', Some(x), Some(y), Some(z)) => {
                out.push(x.wrapping_mul(64).wrapping_add(y * 8 + z));
                i += 4;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The hierarchy this host makes its cgroups in, set up once (on v2 the
/// host moves into the `zot` leaf and enables `pids` for its siblings);
/// the error says why there is none, for the log.
static HIER: OnceLock<Result<Hier, String>> = OnceLock::new();

fn hierarchy() -> Result<&'static Hier, &'static str> {
    HIER.get_or_init(|| {
        let h = usable().ok_or_else(|| "no writable cgroup with pids".to_string())?;
        if h.v2 {
            let leaf = h.base.join("zot");
            match std::fs::create_dir(&leaf) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(format!("cannot make {}: {e}", leaf.display())),
                _ => {}
            }
            std::fs::write(leaf.join("cgroup.procs"), "0").map_err(|e| format!("cannot move into {}: {e}", leaf.display()))?;
            let on = std::fs::read_to_string(h.base.join("cgroup.subtree_control")).unwrap_or_default();
            if !on.split_whitespace().any(|c| c == "pids") {
                if let Err(e) = std::fs::write(h.base.join("cgroup.subtree_control"), "+pids") {
                    // Back where it was: other processes share that cgroup.
                    let _ = std::fs::write(h.base.join("cgroup.procs"), "0");
                    let _ = std::fs::remove_dir(&leaf);
                    return Err(format!("cannot enable pids in {}: {e}", h.base.display()));
                }
            }
        }
        sweep(&h);
        Ok(h)
    })
    .as_ref()
    .map_err(String::as_str)
}

/// Removes the start cgroups of hosts that are gone.
fn sweep(h: &Hier) {
    let Ok(rd) = std::fs::read_dir(&h.base) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("zot.").and_then(|r| r.split_once('.')).and_then(|(p, _)| p.parse::<libc::pid_t>().ok()) else { continue };
        // SAFETY: signal 0 only asks whether the process exists.
        if pid > 0 && unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            let c = Cgroup { dir: e.path(), v2: h.v2, join: None };
            c.kill();
            let _ = std::fs::remove_dir(&c.dir);
        }
    }
}

/// One start's cgroup: made with `pids.max`, its `cgroup.procs` open for
/// the child to join; removed when dropped.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    v2: bool,
    join: Option<OwnedFd>,
}

impl Cgroup {
    /// Joined already: no descriptor is kept for the life of the start.
    pub(super) fn forget_join(&mut self) {
        self.join = None;
    }

    fn make(h: &Hier, procs: u64) -> std::io::Result<Cgroup> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let dir = h.base.join(format!("zot.{}.{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir(&dir)?;
        let mut c = Cgroup { dir, v2: h.v2, join: None };
        std::fs::write(c.dir.join("pids.max"), procs.to_string())?;
        // The child joins with its one thread, before it can start another:
        // on v1 through `tasks`, which moves one thread without the
        // kernel's global threadgroup lock (taking that lock waits for an
        // RCU grace period, about half a millisecond per start here);
        // `cgroup.procs` on v2, where `tasks` does not exist.
        let file = if h.v2 { "cgroup.procs" } else { "tasks" };
        let path = CString::new(c.dir.join(file).as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: a NUL-terminated path; the fd is ours.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fresh and ours.
        c.join = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(c)
    }

    /// Kills every process in it, now.
    pub(super) fn kill(&self) {
        if self.v2 && std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        for pid in self.pids() {
            // SAFETY: kill(2) of one process listed in the cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    fn pids(&self) -> Vec<libc::pid_t> {
        let text = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        text.split_whitespace().filter_map(|p| p.parse().ok()).filter(|&p| p > 0).collect()
    }

    /// No process is left in it (a zombie does not count).
    pub(super) fn empty(&self) -> bool {
        if self.v2 {
            if let Ok(ev) = std::fs::read_to_string(self.dir.join("cgroup.events")) {
                return ev.lines().any(|l| l == "populated 0");
            }
        }
        self.pids().is_empty()
    }
}

/// Removed when dropped: whatever is still in it is killed first (a start
/// given up on), and its removal tried until its processes are gone.
impl Drop for Cgroup {
    fn drop(&mut self) {
        self.join = None;
        for _ in 0..100 {
            match std::fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    self.kill();
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                _ => return,
            }
        }
    }
}

/// The bound of one start, built before the fork.
#[derive(Debug, Default)]
pub struct Bound {
    cgroup: Option<Cgroup>,
    /// `RLIMIT_NPROC`, soft and hard.
    nproc: Option<libc::rlim_t>,
}

impl Bound {
    /// `procs` for one start: a cgroup where the host can make one, else
    /// `RLIMIT_NPROC` (nothing for root); `log` says why a cgroup failed.
    pub fn new(procs: u64, log: &mut dyn FnMut(&str)) -> Bound {
        // SAFETY: getuid has no preconditions.
        let root = unsafe { libc::getuid() } == 0;
        let instead = if root { "not enforced (RLIMIT_NPROC binds no process of root)" } else { "bounded by RLIMIT_NPROC instead" };
        match hierarchy() {
            Ok(h) => match Cgroup::make(h, procs) {
                Ok(c) => return Bound { cgroup: Some(c), nproc: None },
                Err(e) => log(&format!("procs: cannot make a cgroup under {}: {e}; {instead}", h.base.display())),
            },
            // One was there to use, but could not be set up.
            Err(why) if usable().is_some() => log(&format!("procs: {why}; {instead}")),
            Err(_) => {}
        }
        if root {
            return Bound::default();
        }
        let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: fills `own`.
        unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut own) };
        let mut n = user_tasks().saturating_add(procs);
        if own.rlim_cur != libc::RLIM_INFINITY {
            n = n.min(own.rlim_cur.saturating_sub(RESERVE));
        }
        Bound { cgroup: None, nproc: Some(n) }
    }

    /// Joins its cgroup, then sets `RLIMIT_NPROC` (docs/protocol.md §9.2's order).
    ///
    /// # Safety
    /// For the child between fork and exec: system calls only.
    pub(super) unsafe fn enter(&self) -> Result<(), libc::c_int> {
        if let Some(fd) = self.cgroup.as_ref().and_then(|c| c.join.as_ref()) {
            if libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                return Err(*libc::__errno_location());
            }
        }
        if let Some(n) = self.nproc {
            if libc::setrlimit(libc::RLIMIT_NPROC, &libc::rlimit { rlim_cur: n, rlim_max: n }) != 0 {
                return Err(*libc::__errno_location());
            }
        }
        Ok(())
    }

    pub(super) fn into_cgroup(self) -> Option<Cgroup> {
        self.cgroup
    }
}

/// How long a count of the user's tasks is used again: starts that follow
/// one another (a load of many extensions) count once, not each (the walk
/// of `/proc` costs milliseconds where the user runs many processes); the
/// host's own limit less [`RESERVE`] bounds them whatever the count.
const RECOUNT: std::time::Duration = std::time::Duration::from_millis(250);

/// [`count_user_tasks`], counted at most once every [`RECOUNT`].
fn user_tasks() -> u64 {
    use std::time::Instant;
    static LAST: Mutex<Option<(Instant, u64)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match *last {
        Some((at, n)) if at.elapsed() < RECOUNT => n,
        _ => {
            let n = count_user_tasks();
            *last = Some((Instant::now(), n));
            n
        }
    }
}

/// The tasks (threads included, as the kernel counts them against
/// `RLIMIT_NPROC`) of this process's real user. A process is looked at
/// only when its `/proc` folder is the user's (its effective user: a
/// setuid program the user runs is left out, which lowers the bound, never
/// raises it), and then by its `stat` line, the cheapest to read.
fn count_user_tasks() -> u64 {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    let Ok(rd) = std::fs::read_dir("/proc") else { return 0 };
    let mut n = 0;
    let mut buf = Vec::with_capacity(1024);
    for e in rd.flatten() {
        if !e.file_name().as_bytes().iter().all(u8::is_ascii_digit) || !e.metadata().is_ok_and(|m| m.uid() == me) {
            continue;
        }
        buf.clear();
        let Ok(_) = std::fs::File::open(e.path().join("stat")).and_then(|mut f| f.read_to_end(&mut buf)) else { continue };
        // pid (comm) state ... num_threads is the 18th field after comm.
        let Some(close) = buf.iter().rposition(|&b| b == b')') else { continue };
        let threads = std::str::from_utf8(&buf[close + 1..]).ok().and_then(|r| r.split_whitespace().nth(17)).and_then(|t| t.parse::<u64>().ok());
        n += threads.unwrap_or(1);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_folders_from_mountinfo() {
        let m = "30 25 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                 31 25 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n\
                 32 25 0:28 /ctr /sys/fs/cgroup/mem\\040x rw - cgroup cgroup rw,memory\n";
        assert_eq!(dir_of(m, "cgroup2", None, "/user.slice/a"), Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice/a")));
        assert_eq!(dir_of(m, "cgroup", Some("pids"), "/"), Some(PathBuf::from("/sys/fs/cgroup/pids")));
        assert_eq!(dir_of(m, "cgroup", Some("memory"), "/ctr/b"), Some(PathBuf::from("/sys/fs/cgroup/mem x/b")));
        assert_eq!(dir_of(m, "cgroup", Some("memory"), "/other"), None);
        assert_eq!(dir_of(m, "cgroup", Some("cpu"), "/"), None);
    }
}
