//! One reaper for every extension process of this process, and (Linux)
//! for the orphans they leave behind.
//!
//! A `SIGCHLD` handler writes to a pipe that wakes one thread. On every
//! wake it asks each watched process, without reaping it
//! (`waitid(P_PID, WNOWAIT)`), whether it exited, and tells its owner,
//! which kills the group while the zombie still pins the group id and only
//! then reaps ([`reap`]). `waitid(P_ALL)` is never used: the host also
//! runs children through `std::process::Command` (`git clone` on install)
//! whose owners wait for them, and whose status must stay theirs.
//!
//! On Linux the process is a child subreaper, so a descendant of an
//! extension that leaves its group (`setsid`, a double fork) becomes this
//! process's child when its parent dies, instead of init's. Each such
//! orphan is attributed to the extension it came from (its lineage): by
//! the `ZOT_EXT_INSTANCE` variable every extension is started with and its
//! descendants inherit, read from `/proc/PID/environ`, or by belonging to a
//! process group or session led by a process of the lineage. Orphans are
//! found as children of this process (`/proc/self/task/PID/children`,
//! where the kernel puts every orphan). The marker is read first, so one
//! that moved into the host's own process group is still attributed; only
//! an unmarked one there is taken for the host's own command's (or what
//! one left behind) and never touched. Once an
//! extension is reaped or dropped its lineage is doomed: every orphan of
//! it gets SIGTERM, one second later SIGKILL, and is reaped; one that
//! turns up later (its own parent died since) gets SIGKILL at once. An
//! orphan is only ever signalled while it is an unreaped child of this
//! process, so its pid is still its own.
//!
//! A lineage may hold what its confined start leaves ([`hold`]: its
//! `${TMP}` and its cgroup): once doomed, its cgroup is killed whole at
//! the moment orphans get SIGKILL, and what it holds is dropped (removed)
//! only once the lineage is done: no orphan left, no group of it alive,
//! and its cgroup, where it has one, empty. [`settle`] waits for that too.

use super::cancel::Cancel;
use super::group::EXIT_GRACE;
#[cfg(target_os = "linux")]
use super::procfs::{children, instance_of, own_stat, stat, Stat};
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Told once, on the reaper thread, that the process exited (not reaped).
pub(super) type Notify = Box<dyn FnOnce(Option<ExitStatus>) + Send>;


/// How long orphans have between SIGTERM and SIGKILL (docs/protocol.md §3 rule 10).
const ORPHAN_GRACE: Duration = Duration::from_secs(1);

/// How often a doomed lineage is looked at while some process of it may
/// still be on its way to becoming an orphan (nothing wakes the reaper for
/// that: the kernel tells the dying process's parent, not us).
const RESCAN: Duration = Duration::from_millis(50);

/// Retired lineages kept to recognise their late orphans.
const RETIRED_KEPT: usize = 512;

/// How much longer than other lineages one that holds a start's remains
/// waits for its last process before it is given up on.
const HOLD_MORE: Duration = Duration::from_secs(5);

struct Reaper {
    state: Mutex<State>,
    /// Signalled when no doomed lineage is left.
    settled: Condvar,
    wake: RawFd,
}

#[derive(Default)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct State {
    watched: HashMap<u32, Watched>,
    lineages: HashMap<u64, Lineage>,
    markers: HashMap<String, u64>,
    /// Readers and writers to end, when.
    cancels: Vec<(Instant, Cancel)>,
    retired: std::collections::VecDeque<u64>,
    /// Orphans of no known lineage are ended too ([`settle`]).
    end_unknown: Option<Doom>,
    unknown_termed: HashSet<u32>,
    /// Watched since the last look.
    fresh: Vec<u32>,
    /// Remains taken from done lineages and not dropped yet.
    dropping: usize,
}

struct Watched {
    lineage: u64,
    notify: Option<Notify>,
    exited: bool,
    /// Its owner is reaping it right now.
    reaping: bool,
    /// Its owner is gone: reaped here once it exits.
    dropped: bool,
}

#[derive(Default)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Lineage {
    marker: String,
    /// Groups and sessions whose members belong to it.
    pgids: HashSet<u32>,
    sids: HashSet<u32>,
    doom: Option<Doom>,
    termed: HashSet<u32>,
    retired: bool,
    /// What its confined start leaves, dropped once it is done.
    remains: Option<crate::confine::Remains>,
}

#[derive(Clone, Copy)]
struct Doom {
    kill_at: Instant,
    /// Give up waiting for more orphans at this point.
    until: Instant,
}

impl Doom {
    fn now() -> Doom {
        let now = Instant::now();
        Doom { kill_at: now + ORPHAN_GRACE, until: now + ORPHAN_GRACE + Duration::from_secs(1) }
    }
}

/// What wakes the reaper: a look at processes just watched ([`FRESH`]),
/// or at everything ([`FULL`]: `SIGCHLD`, a reap, a drop, a settle). The
/// byte only wakes it; [`FULL_PENDING`] says which, so that no full look
/// is lost in a pipe full of the others.
const FULL: u8 = 0;
const FRESH: u8 = 1;
static FULL_PENDING: AtomicBool = AtomicBool::new(false);

static REAPER: OnceLock<&'static Reaper> = OnceLock::new();
static START: Mutex<()> = Mutex::new(());
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
static OLD_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static OLD_SIGINFO: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_sigchld(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: only write(2) on a non-blocking pipe and a call of the
    // handler that was there before ours; errno is restored for the code
    // the signal interrupted.
    unsafe {
        let errno = *errno_location();
        let fd = WAKE_FD.load(Ordering::Relaxed);
        if fd >= 0 {
            FULL_PENDING.store(true, Ordering::SeqCst);
            let b = FULL;
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
        let old = OLD_HANDLER.load(Ordering::Relaxed);
        if old != libc::SIG_DFL && old != libc::SIG_IGN {
            if OLD_SIGINFO.load(Ordering::Relaxed) != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(old);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(old);
                f(sig);
            }
        }
        *errno_location() = errno;
    }
}

#[cfg(target_os = "linux")]
unsafe fn errno_location() -> *mut libc::c_int {
    libc::__errno_location()
}

#[cfg(not(target_os = "linux"))]
unsafe fn errno_location() -> *mut libc::c_int {
    libc::__error()
}

fn reaper() -> io::Result<&'static Reaper> {
    if let Some(r) = REAPER.get() {
        return Ok(r);
    }
    let _one = START.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = REAPER.get() {
        return Ok(r);
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe fills two descriptors that we keep for the life of the process.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for fd in fds {
        // SAFETY: flags of our own descriptors: no extension inherits them,
        // and neither the handler nor the thread ever blocks on them.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
        }
    }
    let r: &'static Reaper = Box::leak(Box::new(Reaper { state: Mutex::new(State::default()), settled: Condvar::new(), wake: fds[1] }));
    let read = fds[0];
    std::thread::Builder::new().name("zot-reaper".into()).stack_size(256 * 1024).spawn(move || r.run(read))?;
    WAKE_FD.store(fds[1], Ordering::Relaxed);
    // SAFETY: installs a handler that only writes to the pipe and chains
    // to the previous one, which it keeps.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigchld as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_NOCLDSTOP;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGCHLD, &sa, &mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
        OLD_SIGINFO.store(i32::from(old.sa_flags & libc::SA_SIGINFO != 0), Ordering::Relaxed);
        OLD_HANDLER.store(old.sa_sigaction, Ordering::Relaxed);
    }
    let _ = REAPER.set(r);
    Ok(r)
}

/// Makes this process a child subreaper (Linux) and starts the reaper:
/// called when a host (or `zot ext check`) starts, before its first child.
pub(super) fn start() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with an integer argument; it only sets a flag.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
    let _ = reaper();
}

impl Reaper {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops (removes) remains taken with [`State::take_remains`], outside
    /// the lock, and tells [`settle`] when none is left to drop.
    fn drop_remains(&self, done: Vec<crate::confine::Remains>) {
        if done.is_empty() {
            return;
        }
        let n = done.len();
        drop(done);
        self.lock().dropping -= n;
        self.settled.notify_all();
    }

    /// Wakes the reaper for a full look ([`FULL`]), or only at processes
    /// just watched ([`FRESH`]).
    fn wake(&self, b: u8) {
        if b == FULL {
            FULL_PENDING.store(true, Ordering::SeqCst);
        }
        // SAFETY: one byte to our own non-blocking pipe; a full pipe is
        // already a wake.
        unsafe {
            libc::write(self.wake, (&b as *const u8).cast(), 1);
        }
    }

    fn run(&self, read: RawFd) {
        let mut timeout: Option<Instant> = None;
        loop {
            let ms = timeout.map_or(-1, |t| t.saturating_duration_since(Instant::now()).as_millis().min(60_000) as libc::c_int + 1);
            let mut pfd = libc::pollfd { fd: read, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd; EINTR and timeouts just rescan.
            let woken = unsafe { libc::poll(&mut pfd, 1, ms) } > 0;
            let mut full = !woken;
            let mut buf = [0u8; 256];
            loop {
                // SAFETY: drains our own non-blocking pipe into a local.
                let n = unsafe { libc::read(read, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
            }
            full |= FULL_PENDING.swap(false, Ordering::SeqCst);
            let (told, due, next, settled, done) = {
                let mut st = self.lock();
                let told = st.exits(full);
                #[cfg(target_os = "linux")]
                if full {
                    st.orphans();
                }
                let (due, next, settled) = st.deadlines();
                let done = st.take_remains(|l| l.retired);
                (told, due, next, settled, done)
            };
            self.drop_remains(done);
            for (notify, status) in told {
                notify(status);
            }
            for c in due {
                c.fire();
            }
            if settled {
                self.settled.notify_all();
            }
            timeout = next;
        }
    }
}

impl State {
    /// Exits of watched processes not told yet (of those just watched
    /// only, unless `full`); processes whose owner is gone are reaped once
    /// they exited.
    fn exits(&mut self, full: bool) -> Vec<(Notify, Option<ExitStatus>)> {
        let mut told = Vec::new();
        let mut done = Vec::new();
        let fresh = std::mem::take(&mut self.fresh);
        for (&pid, w) in self.watched.iter_mut() {
            if w.reaping || !(full || fresh.contains(&pid)) {
                continue;
            }
            if !w.exited {
                let Some(status) = exited(pid) else { continue };
                w.exited = true;
                if let Some(n) = w.notify.take() {
                    told.push((n, status));
                }
            }
            if w.dropped {
                reap_now(pid);
                done.push(pid);
            }
        }
        for pid in done {
            self.watched.remove(&pid);
        }
        told
    }

    /// The remains of the lineages that `pick` picks, counted as being dropped.
    fn take_remains(&mut self, pick: impl Fn(&Lineage) -> bool) -> Vec<crate::confine::Remains> {
        let done: Vec<_> = self.lineages.values_mut().filter(|l| pick(l)).filter_map(|l| l.remains.take()).collect();
        self.dropping += done.len();
        done
    }

    fn doom(&mut self, lineage: u64) {
        if let Some(l) = self.lineages.get_mut(&lineage) {
            if l.doom.is_none() {
                l.doom = Some(Doom::now());
            }
        }
    }

    /// The lineage of our child `pid`, whose stat is `s`, and what it adds
    /// to it; `by_marker` is the lineage its marker names, if any.
    #[cfg(target_os = "linux")]
    fn attribute(&mut self, pid: u32, s: &Stat, host: &Stat, by_marker: Option<u64>) -> Option<u64> {
        let id = by_marker.or_else(|| {
            self.lineages.iter().find(|(_, l)| l.pgids.contains(&s.pgid) || l.sids.contains(&s.sid)).map(|(&id, _)| id)
        })?;
        let l = self.lineages.get_mut(&id)?;
        for g in [pid, s.pgid] {
            if g != host.pgid {
                l.pgids.insert(g);
            }
        }
        for g in [pid, s.sid] {
            if g != host.sid {
                l.sids.insert(g);
            }
        }
        Some(id)
    }

    /// Finds orphans among our children: reaps the dead ones, records the
    /// living in their lineage, and signals those of doomed lineages.
    #[cfg(target_os = "linux")]
    fn orphans(&mut self) {
        let Some(host) = own_stat() else { return };
        let now = Instant::now();
        let mut seen: HashSet<u64> = HashSet::new();
        let mut unknown_seen = false;
        for pid in children() {
            if self.watched.contains_key(&pid) {
                continue;
            }
            let Some(s) = stat(pid) else { continue };
            // The marker first (docs/protocol.md §3 rule 10): an extension's
            // descendant that moved into the host's own process group is
            // still that extension's. Unmarked there, it is the host's own
            // command's, or what one left behind: left alone.
            let by_marker = instance_of(pid).and_then(|m| self.markers.get(&m).copied());
            if s.pgid == host.pgid && by_marker.is_none() {
                continue;
            }
            let lineage = self.attribute(pid, &s, &host, by_marker);
            if s.zombie {
                reap_now(pid);
                for l in self.lineages.values_mut() {
                    l.termed.remove(&pid);
                }
                self.unknown_termed.remove(&pid);
                if let Some(id) = lineage {
                    seen.insert(id);
                }
                continue;
            }
            let (doom, termed) = match lineage.and_then(|id| self.lineages.get_mut(&id)) {
                Some(l) => {
                    seen.insert(lineage.unwrap_or_default());
                    let Some(d) = l.doom else { continue };
                    // A late orphan: looked at again until it is gone.
                    l.retired = false;
                    (d, &mut l.termed)
                }
                None => match self.end_unknown {
                    Some(d) => {
                        unknown_seen = true;
                        (d, &mut self.unknown_termed)
                    }
                    None => continue,
                },
            };
            if now >= doom.kill_at {
                signal(pid, libc::SIGKILL);
            } else if termed.insert(pid) {
                signal(pid, libc::SIGTERM);
            }
        }
        // A group or session id with no process left may be given to a new
        // process, which is no one's orphan: forgotten (an extension's own
        // id stays pinned while it is watched).
        for l in self.lineages.values_mut() {
            l.pgids.retain(|&g| group_alive(g));
            l.sids.retain(|&g| group_alive(g));
        }
        // A doomed lineage is done once none of its orphans is left and no
        // group of it has a member that could still become one, nor its
        // cgroup a process.
        let mut retire = Vec::new();
        for (&id, l) in self.lineages.iter_mut() {
            let Some(d) = l.doom else { continue };
            if l.retired {
                continue;
            }
            if let Some(r) = l.remains.as_ref().filter(|_| now >= d.kill_at) {
                r.kill();
            }
            let quiet = !seen.contains(&id) && !l.pgids.iter().any(|&g| group_alive(g));
            let ended = quiet && l.remains.as_ref().and_then(crate::confine::Remains::ended) != Some(false);
            let until = if l.remains.is_some() { d.until + HOLD_MORE } else { d.until };
            if ended || now >= until {
                l.retired = true;
                retire.push(id);
            }
        }
        self.retired.extend(retire);
        while self.retired.len() > RETIRED_KEPT {
            let Some(id) = self.retired.pop_front() else { break };
            if self.lineages.get(&id).is_some_and(|l| l.retired) {
                if let Some(l) = self.lineages.remove(&id) {
                    self.markers.remove(&l.marker);
                }
            }
        }
        if !unknown_seen || self.end_unknown.is_some_and(|d| now >= d.until) {
            self.end_unknown = None;
        }
    }

    /// The cancels due now, when to look again, and whether no doomed
    /// lineage is left.
    fn deadlines(&mut self) -> (Vec<Cancel>, Option<Instant>, bool) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.cancels).into_iter().partition(|(t, _)| *t <= now);
        self.cancels = later;
        let mut next = self.cancels.iter().map(|(t, _)| *t).min();
        let mut settled = true;
        let busy = self.lineages.values().filter(|l| !l.retired).filter_map(|l| l.doom).chain(self.end_unknown);
        for d in busy {
            settled = false;
            let t = if d.kill_at > now { d.kill_at.min(now + RESCAN) } else { now + RESCAN };
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if !cfg!(target_os = "linux") {
            // Nothing finds orphans here; a doomed lineage is done at once.
            for l in self.lineages.values_mut() {
                l.retired |= l.doom.is_some();
            }
            settled = true;
        }
        (due.into_iter().map(|(_, c)| c).collect(), next, settled)
    }
}

/// How many of this process's children alive now are orphans that no
/// lineage can be said to own: no marker of a known lineage, outside the
/// host's own process group, and in no group or session of a lineage.
pub(super) fn unattributed() -> usize {
    #[cfg(target_os = "linux")]
    {
        let (Ok(r), Some(host)) = (reaper(), own_stat()) else { return 0 };
        let mut st = r.lock();
        let mut n = 0;
        for pid in children() {
            if st.watched.contains_key(&pid) {
                continue;
            }
            let Some(s) = stat(pid) else { continue };
            let by_marker = instance_of(pid).and_then(|m| st.markers.get(&m).copied());
            if s.zombie || (s.pgid == host.pgid && by_marker.is_none()) {
                continue;
            }
            if st.attribute(pid, &s, &host, by_marker).is_none() {
                n += 1;
            }
        }
        n
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// A new lineage (`instance`, or a number of its own), and its marker.
pub(super) fn lineage(instance: Option<crate::instance::Instance>) -> io::Result<(u64, String)> {
    let r = reaper()?;
    let instance = instance.unwrap_or_else(crate::instance::Instance::reserve);
    let (id, marker) = (instance.number(), instance.marker());
    let mut st = r.lock();
    st.markers.insert(marker.clone(), id);
    st.lineages.insert(id, Lineage { marker: marker.clone(), ..Lineage::default() });
    Ok((id, marker))
}

/// Watches `pid` (of `lineage`, its group led by itself): `notify` is
/// called once it exited.
pub(super) fn watch(pid: u32, lineage: u64, notify: Notify) -> io::Result<()> {
    let r = reaper()?;
    let mut st = r.lock();
    if let Some(l) = st.lineages.get_mut(&lineage) {
        l.pgids.insert(pid);
    }
    st.watched.insert(pid, Watched { lineage, notify: Some(notify), exited: false, reaping: false, dropped: false });
    st.fresh.push(pid);
    drop(st);
    // It may have exited before it was watched.
    r.wake(FRESH);
    Ok(())
}

/// Keeps `remains` with the lineage of `pid` until that lineage is done;
/// dropped at once when `pid` is not watched.
pub(super) fn hold(pid: u32, remains: crate::confine::Remains) {
    let Some(r) = REAPER.get() else { return };
    let mut st = r.lock();
    let lineage = st.watched.get(&pid).map(|w| w.lineage);
    if let Some(l) = lineage.and_then(|id| st.lineages.get_mut(&id)) {
        l.remains = Some(remains);
        return;
    }
    // Removed outside the lock.
    drop(st);
    drop(remains);
}

/// Forgets a lineage whose process never started.
pub(super) fn forget(lineage: u64) {
    let Some(r) = REAPER.get() else { return };
    let mut st = r.lock();
    if let Some(l) = st.lineages.remove(&lineage) {
        st.markers.remove(&l.marker);
    }
}

/// Reaps `pid`, whose exit was told: its orphans are ended from now on,
/// and `cancel` fires [`EXIT_GRACE`] later (what it wrote before
/// exiting is read until then).
pub(super) fn reap(pid: u32, cancel: &Cancel) {
    let Some(r) = REAPER.get() else { return reap_wait(pid) };
    let lineage = {
        let mut st = r.lock();
        let Some(w) = st.watched.get_mut(&pid) else { return };
        w.reaping = true;
        w.lineage
    };
    reap_wait(pid);
    let mut st = r.lock();
    st.watched.remove(&pid);
    st.doom(lineage);
    st.cancels.push((Instant::now() + EXIT_GRACE, cancel.clone()));
    drop(st);
    r.wake(FULL);
}

/// The owner of `pid` is gone before reaping it (its group was killed):
/// it is reaped here once it exits, and its orphans are ended.
pub(super) fn abandon(pid: u32) {
    let Some(r) = REAPER.get() else { return };
    let mut st = r.lock();
    let Some(w) = st.watched.get_mut(&pid) else { return };
    w.dropped = true;
    w.notify = None;
    let lineage = w.lineage;
    st.doom(lineage);
    drop(st);
    r.wake(FULL);
}

/// Waits, up to `limit`, until the orphans of every stopped extension are
/// gone (TERM, 1 s, KILL), ending those of no known lineage too: for a
/// host that is about to exit, so that none outlives it.
pub fn settle(limit: Duration) {
    let Some(r) = REAPER.get() else { return };
    let deadline = Instant::now() + limit;
    let mut st = r.lock();
    if cfg!(target_os = "linux") && st.end_unknown.is_none() {
        st.end_unknown = Some(Doom::now());
        st.unknown_termed.clear();
    }
    r.wake(FULL);
    loop {
        let busy = st.end_unknown.is_some() || st.dropping > 0 || st.lineages.values().any(|l| l.doom.is_some() && !l.retired);
        let now = Instant::now();
        if !busy || now >= deadline {
            // Given up on: what they hold goes now, as far as it can.
            let left = st.take_remains(|l| l.doom.is_some());
            drop(st);
            r.drop_remains(left);
            return;
        }
        let (guard, _) = r.settled.wait_timeout(st, (deadline - now).min(RESCAN)).unwrap_or_else(|e| e.into_inner());
        st = guard;
    }
}

/// Reaps `pid`, killed and never watched, as soon as it exited.
pub(super) fn reap_unwatched(pid: u32) {
    reap_wait(pid)
}

/// Waits for `pid` (ours, exited) and reaps it.
fn reap_wait(pid: u32) {
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
}

/// Reaps `pid` if it exited.
fn reap_now(pid: u32) {
    let mut status = 0;
    // SAFETY: our own child, which has exited.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG);
    }
}

/// Whether our child `pid` exited, without reaping it: `Some(status)`
/// (`None` inside when the status cannot be read).
fn exited(pid: u32) -> Option<Option<ExitStatus>> {
    loop {
        // SAFETY: waitid fills the zeroed siginfo for our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT | libc::WNOHANG) };
        if r == 0 {
            // SAFETY: filled by a successful waitid with WEXITED.
            let (got, code, status) = unsafe { (info.si_pid(), info.si_code, info.si_status()) };
            if got == 0 {
                return None;
            }
            let raw = match code {
                libc::CLD_EXITED => (status & 0xff) << 8,
                libc::CLD_DUMPED => (status & 0x7f) | 0x80,
                _ => status & 0x7f,
            };
            return Some(Some(ExitStatus::from_raw(raw)));
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::Interrupted => continue,
            // Not our child any more (reaped by someone else): gone.
            _ => return Some(None),
        }
    }
}

/// Signals our unreaped child `pid` (its pid is still its own).
#[cfg(target_os = "linux")]
fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) of one process.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

#[cfg(target_os = "linux")]
fn group_alive(pgid: u32) -> bool {
    super::group::group_alive(pgid)
}
