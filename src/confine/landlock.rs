//! The Landlock ruleset of a confined process, built before the fork: the
//! kernel's ABI probed once, each grant a path-beneath rule (a grant with
//! a denied path under it replaced by its entries one by one, down to the
//! denied path), the TCP port rules and the scopes.

use super::base::Access;
use super::resolve::Reach;
use super::sys::*;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The Landlock ABI of this kernel: 0 where it has none (probed once).
pub fn abi() -> u32 {
    static ABI: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ABI.get_or_init(|| {
        // SAFETY: the version query reads no memory.
        let v = unsafe { libc::syscall(SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, LANDLOCK_CREATE_RULESET_VERSION) };
        u32::try_from(v).unwrap_or(0)
    })
}

const READ: u64 = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
/// What a rule on a file (not a folder) may carry.
const FILE_ONLY: u64 = LANDLOCK_ACCESS_FS_EXECUTE
    | LANDLOCK_ACCESS_FS_WRITE_FILE
    | LANDLOCK_ACCESS_FS_READ_FILE
    | LANDLOCK_ACCESS_FS_TRUNCATE
    | LANDLOCK_ACCESS_FS_IOCTL_DEV;

/// Every filesystem access right `abi` knows.
fn handled_fs(abi: u32) -> u64 {
    let mut all = READ
        | LANDLOCK_ACCESS_FS_WRITE_FILE
        | LANDLOCK_ACCESS_FS_REMOVE_DIR
        | LANDLOCK_ACCESS_FS_REMOVE_FILE
        | LANDLOCK_ACCESS_FS_MAKE_CHAR
        | LANDLOCK_ACCESS_FS_MAKE_DIR
        | LANDLOCK_ACCESS_FS_MAKE_REG
        | LANDLOCK_ACCESS_FS_MAKE_SOCK
        | LANDLOCK_ACCESS_FS_MAKE_FIFO
        | LANDLOCK_ACCESS_FS_MAKE_BLOCK
        | LANDLOCK_ACCESS_FS_MAKE_SYM;
    if abi >= 2 {
        all |= LANDLOCK_ACCESS_FS_REFER;
    }
    if abi >= 3 {
        all |= LANDLOCK_ACCESS_FS_TRUNCATE;
    }
    if abi >= 5 {
        all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    }
    all
}

/// The TCP rules: `None` for any network.
pub struct Tcp<'a> {
    pub connect: &'a [u16],
    pub bind: &'a [u16],
}

/// A ruleset fd, ready for `landlock_restrict_self` in the child.
pub struct Ruleset(pub OwnedFd);

/// Builds the ruleset from `reach`: each grant's rule made from the
/// descriptor it was resolved to, or, where a denied path lies under it,
/// its entries one by one; `read_only` paths split write grants only and
/// are granted read where a write grant holds them and nothing carved out
/// does. Grants that do not exist are skipped and named in
/// `skipped`.
pub fn build(abi: u32, reach: &Reach, tcp: Option<Tcp>, skipped: &mut Vec<PathBuf>) -> Result<Ruleset, String> {
    let fs_all = handled_fs(abi);
    let attr = landlock_ruleset_attr {
        handled_access_fs: fs_all,
        handled_access_net: if abi >= 4 && tcp.is_some() { LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP } else { 0 },
        scoped: if abi >= 6 { LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL } else { 0 },
    };
    let size = match abi {
        0..=3 => 8,
        4 | 5 => 16,
        _ => std::mem::size_of::<landlock_ruleset_attr>(),
    };
    // SAFETY: `attr` is a valid landlock_ruleset_attr of at least `size` bytes.
    let fd = unsafe { libc::syscall(SYS_landlock_create_ruleset, &attr as *const landlock_ruleset_attr, size, 0u32) };
    if fd < 0 {
        return Err(format!("cannot create a Landlock ruleset: {}", io::Error::last_os_error()));
    }
    // SAFETY: a fresh fd, ours (close-on-exec, as Landlock makes it).
    let ruleset = Ruleset(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    for g in &reach.grants {
        let access = match g.access {
            Access::Read => READ,
            Access::Write => fs_all,
        };
        let Some(opened) = &g.opened else {
            skipped.push(g.target.clone());
            continue;
        };
        let mut splits: Vec<&Path> = reach.deny.iter().map(PathBuf::as_path).collect();
        if g.access == Access::Write {
            splits.extend(reach.read_only.iter().map(PathBuf::as_path));
        }
        if Path::new("/dev").starts_with(&g.target) {
            splits.extend(reach.dev.iter().map(PathBuf::as_path));
        }
        if splits.iter().any(|s| s.starts_with(&g.target)) {
            ruleset.split(opened, &g.target, access, &splits)?;
        } else {
            let access = if opened.is_dir { access } else { access & FILE_ONLY };
            ruleset.rule_fd(&opened.fd, access).map_err(|e| format!("cannot grant {}: {e}", g.target.display()))?;
        }
    }
    for p in &reach.read_only {
        if let Ok(o) = super::resolve::open(p) {
            // Left readable only where a write grant would reach it: never
            // a grant of its own outside one, nor inside what is carved out
            // of every grant (zot's home, /etc's secrets, the terminals,
            // a `deny`).
            let written = reach.grants.iter().any(|g| g.access == Access::Write && g.opened.is_some() && o.target.starts_with(&g.target));
            let carved = reach.deny.iter().chain(&reach.dev).any(|d| o.target.starts_with(d));
            if !written || carved {
                continue;
            }
            let mut splits: Vec<&Path> = reach.deny.iter().map(PathBuf::as_path).collect();
            if Path::new("/dev").starts_with(&o.target) {
                splits.extend(reach.dev.iter().map(PathBuf::as_path));
            }
            ruleset.split(&o, &o.target, READ, &splits)?;
        }
    }
    if let (Some(tcp), true) = (tcp, abi >= 4) {
        for (ports, access) in [(tcp.connect, LANDLOCK_ACCESS_NET_CONNECT_TCP), (tcp.bind, LANDLOCK_ACCESS_NET_BIND_TCP)] {
            for &port in ports {
                let rule = landlock_net_port_attr { allowed_access: access, port: port.into() };
                ruleset.add(LANDLOCK_RULE_NET_PORT, &rule as *const _ as *const u8).map_err(|e| format!("cannot add a rule for port {port}: {e}"))?;
            }
        }
    }
    Ok(ruleset)
}

/// The descriptors to grant for `fd` (named `path`) with `access`: itself,
/// or, when a split path lies under it, each of its entries along the way
/// instead, each opened beneath the descriptor of its folder without
/// following a link.
fn leaves(fd: OwnedFd, path: &Path, access: u64, splits: &[&Path], out: &mut Vec<(PathBuf, OwnedFd, u64)>, folders: &mut Vec<(PathBuf, Stamp)>) -> Result<(), String> {
    if splits.contains(&path) {
        return Ok(());
    }
    let under: Vec<&Path> = splits.iter().copied().filter(|s| s.starts_with(path)).collect();
    let mode = file_mode(&fd).map_err(|e| format!("{}: {e}", path.display()))?;
    let is_dir = mode & libc::S_IFMT == libc::S_IFDIR;
    if mode & libc::S_IFMT == libc::S_IFLNK {
        // A link is reached through its target, granted or not on its own.
        return Ok(());
    }
    if under.is_empty() || !is_dir {
        out.push((path.to_path_buf(), fd, if is_dir { access } else { access & FILE_ONLY }));
        return Ok(());
    }
    // Stamped before it is listed: a change while it is makes the next
    // start list it again.
    folders.push((path.to_path_buf(), stamp(&fd).map_err(|e| format!("{}: {e}", path.display()))?));
    let listed = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let entries = fs::read_dir(&listed).map_err(|e| format!("cannot list {} to leave out what is denied under it: {e}", path.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", path.display()))?;
        let name = entry.file_name();
        let c = std::ffi::CString::new(name.as_bytes()).map_err(|_| format!("{}: a NUL byte", path.display()))?;
        // SAFETY: a NUL-terminated name beneath a descriptor we hold.
        let child = unsafe { libc::openat(fd.as_raw_fd(), c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW) };
        if child < 0 {
            // Gone since it was listed: nothing to grant.
            continue;
        }
        // SAFETY: fresh and ours.
        let child = unsafe { OwnedFd::from_raw_fd(child) };
        leaves(child, &path.join(&name), access, &under, out, folders)?;
    }
    Ok(())
}

/// `rel` opened `O_PATH` beneath `dir` with no link followed (`openat2`,
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`): `Ok(None)` when it is gone;
/// an error when it cannot be opened that way (then the folder is walked
/// again).
fn beneath(dir: &OwnedFd, rel: &Path) -> io::Result<Option<OwnedFd>> {
    if rel.as_os_str().is_empty() {
        return dir.try_clone().map(Some);
    }
    let c = std::ffi::CString::new(rel.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: zeroed is a valid open_how; its fields are set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: a NUL-terminated path beneath a descriptor we hold, and a
    // valid open_how of the size given.
    let fd = unsafe { libc::syscall(libc::SYS_openat2, dir.as_raw_fd(), c.as_ptr(), &how as *const libc::open_how, std::mem::size_of::<libc::open_how>()) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ENOENT) { Ok(None) } else { Err(e) };
    }
    // SAFETY: fresh and ours.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
}

/// What tells that a folder's entries are still those it had: its device
/// and inode, and its change and modification times.
type Stamp = (u64, u64, i64, i64, i64, i64);

/// The descriptors of split entries kept, at most, over every split (the
/// host's own limit on open files is often 1024).
const KEPT_FDS: usize = 512;

/// One split as found: its entries relative to the folder granted, with
/// their access; the folders listed on the way, stamped; and the entries'
/// descriptors, when kept.
struct Split {
    leaves: Vec<(PathBuf, u64)>,
    folders: Vec<(PathBuf, Stamp)>,
    fds: Option<Vec<OwnedFd>>,
}

/// Whether every folder's stamp can tell a later change: it last changed
/// well before now, so a change made after it was stamped gets another
/// time even where the file system keeps times coarsely (a clock tick, or
/// two seconds).
fn settled(folders: &[(PathBuf, Stamp)]) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    folders.iter().all(|(_, st)| st.2 + 3 < now)
}

fn stamp(fd: &OwnedFd) -> io::Result<Stamp> {
    // SAFETY: fstat fills `st`; O_PATH descriptors may be stat'ed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.st_dev, st.st_ino, st.st_ctime, st.st_ctime_nsec, st.st_mtime, st.st_mtime_nsec))
}

/// The stamps of the folders `rels` beneath `dir`, no link followed;
/// `None` when one cannot be opened that way.
fn stamps<'a>(dir: &OwnedFd, rels: impl Iterator<Item = &'a Path>) -> Option<Vec<Stamp>> {
    rels.map(|rel| beneath(dir, rel).ok().flatten().and_then(|fd| stamp(&fd).ok())).collect()
}

/// The type and mode bits of what `fd` names.
fn file_mode(fd: &OwnedFd) -> io::Result<libc::mode_t> {
    // SAFETY: fstat fills `st`; O_PATH descriptors may be stat'ed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_mode)
}

impl Ruleset {
    fn add(&self, kind: u32, attr: *const u8) -> io::Result<()> {
        // SAFETY: `attr` points to the struct `kind` names.
        let r = unsafe { libc::syscall(SYS_landlock_add_rule, self.0.as_raw_fd(), kind, attr, 0u32) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Grants `opened` (named `path`, as it resolves) with `access`, split
    /// around the `splits` under it. The split is the same at every start
    /// of the same grant (the system's `/etc` around its secrets, a
    /// declared `/` around zot's home): its entries are found once per
    /// host, so that a start adds the rules without walking the folders
    /// again. An entry made later in a folder on the way is not reachable,
    /// as the contract says of a split. Their descriptors are kept too, and
    /// used again as long as no folder on the way has changed since they
    /// were opened (its inode, change and modification times: an entry
    /// replaced, renamed or removed changes them); otherwise each entry is
    /// opened again by name beneath the folder's descriptor, no link
    /// followed on the way.
    fn split(&self, opened: &super::resolve::Opened, path: &Path, access: u64, splits: &[&Path]) -> Result<(), String> {
        /// A split: the folder's device and inode, the access, the paths under it.
        type Key = ((u64, u64), u64, Vec<PathBuf>);
        static CACHE: std::sync::Mutex<Vec<(Key, std::sync::Arc<Split>)>> = std::sync::Mutex::new(Vec::new());
        let under: Vec<PathBuf> = splits.iter().filter(|s| s.starts_with(path)).map(|s| s.to_path_buf()).collect();
        let key = (opened.id, access, under);
        let found = CACHE.lock().ok().and_then(|c| c.iter().find(|(k, _)| *k == key).map(|e| e.1.clone()));
        let grant = |fds: &[OwnedFd], leaves: &[(PathBuf, u64)]| -> Result<(), String> {
            for (fd, (_, access)) in fds.iter().zip(leaves) {
                self.rule_fd(fd, *access).map_err(|e| format!("cannot grant {}: {e}", path.display()))?;
            }
            Ok(())
        };
        let fresh = match &found {
            Some(c) => {
                let folders = stamps(&opened.fd, c.folders.iter().map(|(rel, _)| rel.as_path()));
                if let (Some(fds), Some(now)) = (&c.fds, &folders) {
                    if now.iter().zip(&c.folders).all(|(a, (_, b))| a == b) {
                        return grant(fds, &c.leaves);
                    }
                }
                let mut fds = Vec::with_capacity(c.leaves.len());
                for (rel, _) in c.leaves.iter() {
                    match beneath(&opened.fd, rel) {
                        Ok(Some(fd)) => fds.push(fd),
                        Ok(None) => {}
                        Err(_) => break,
                    }
                }
                match folders {
                    Some(now) if fds.len() == c.leaves.len() => {
                        grant(&fds, &c.leaves)?;
                        let folders = c.folders.iter().map(|(rel, _)| rel.clone()).zip(now).collect();
                        Split { leaves: c.leaves.clone(), folders, fds: Some(fds) }
                    }
                    _ => self.walk(opened, path, access, &key.2)?,
                }
            }
            None => self.walk(opened, path, access, &key.2)?,
        };
        if let Ok(mut c) = CACHE.lock() {
            c.retain(|(k, _)| *k != key);
            if c.len() >= 64 {
                c.remove(0);
            }
            let held: usize = c.iter().filter_map(|(_, s)| s.fds.as_ref().map(Vec::len)).sum();
            let mut fresh = fresh;
            if held + fresh.leaves.len() > KEPT_FDS || !settled(&fresh.folders) {
                fresh.fds = None;
            }
            c.push((key, std::sync::Arc::new(fresh)));
        }
        Ok(())
    }

    /// The split of `opened` walked anew, its rules added.
    fn walk(&self, opened: &super::resolve::Opened, path: &Path, access: u64, under: &[PathBuf]) -> Result<Split, String> {
        let mut out = Vec::new();
        let mut folders = Vec::new();
        let dup = opened.fd.try_clone().map_err(|e| format!("{}: {e}", path.display()))?;
        let under: Vec<&Path> = under.iter().map(PathBuf::as_path).collect();
        leaves(dup, path, access, &under, &mut out, &mut folders)?;
        for (_, fd, access) in &out {
            self.rule_fd(fd, *access).map_err(|e| format!("cannot grant {}: {e}", path.display()))?;
        }
        let rel = |p: PathBuf| p.strip_prefix(path).map(Path::to_path_buf).unwrap_or(p);
        let (leaves, fds): (Vec<(PathBuf, u64)>, Vec<OwnedFd>) = out.into_iter().map(|(p, fd, a)| ((rel(p), a), fd)).unzip();
        let folders = folders.into_iter().map(|(p, st)| (rel(p), st)).collect();
        Ok(Split { leaves, folders, fds: Some(fds) })
    }

    fn rule_fd(&self, fd: &OwnedFd, access: u64) -> io::Result<()> {
        let rule = landlock_path_beneath_attr { allowed_access: access, parent_fd: fd.as_raw_fd() };
        self.add(LANDLOCK_RULE_PATH_BENEATH, &rule as *const _ as *const u8)
    }
}
