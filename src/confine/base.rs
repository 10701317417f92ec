//! What every confined process gets beyond its declaration (docs/protocol.md
//! §9.2): the system's program and library folders, its own folder, the
//! program that really runs (through `$PATH`, links and `#!` lines) with
//! an interpreter's prefix and its script's folder, its data and temporary
//! folders, a few devices, and `/proc` to read.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and execute, recursively.
    Read,
    /// Read, execute, create, write, rename and delete, recursively.
    Write,
}

/// Why a path is granted: shown on the trust line and in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Declared in `read` or `write`.
    Declared,
    /// The base set every confined process gets (never listed).
    Base,
    /// A compiled program that runs (`(the program it runs)`).
    Program,
    /// An interpreter and its prefix (`(its interpreter)`).
    Interpreter,
    /// The script an interpreter runs, and its folder (`(the script it runs)`).
    Script,
}

impl Why {
    /// How a derived grant is marked where it is shown.
    pub fn label(self) -> &'static str {
        match self {
            Why::Declared => "declared",
            Why::Base => "the base set",
            Why::Program => "the program it runs",
            Why::Interpreter => "its interpreter",
            Why::Script => "the script it runs",
        }
    }
}

/// One grant, before it is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub access: Access,
    pub why: Why,
}

/// The system folders read and executed by every confined process.
const SYSTEM: [&str; 11] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/nix/store", "/snap", "/proc"];
/// Devices read and written (`/dev/shm` only when declared).
const DEVICES: [&str; 5] = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty"];
/// What stays reachable of `/dev` through a grant that holds it whole
/// (`read: ["/"]`), beside what the base set grants on its own.
const DEV_KEPT: [&str; 10] = ["null", "zero", "full", "random", "urandom", "tty", "fd", "stdin", "stdout", "stderr"];
/// Read so that names resolve where `/etc/resolv.conf` is a link: the
/// file is opened through its link, so its target is what is granted.
const RESOLVER: [&str; 2] = ["/etc/resolv.conf", "/run/systemd/resolve"];
/// `/etc`'s secrets, carved out even for a root host's children.
const SECRETS: [&str; 8] =
    ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd"];

/// Where the program is found and what guards its folders.
pub struct Program<'a> {
    /// `exec` or `command` resolved through `$PATH` (not through links);
    /// `None` when it cannot be (nothing derived).
    pub exec: Option<&'a Path>,
    pub args: &'a [String],
    /// The folder it runs in: relative arguments start there.
    pub cwd: &'a Path,
    /// The `PATH` it runs with, for `#!/usr/bin/env NAME`.
    pub path_var: Option<&'a std::ffi::OsStr>,
    /// `$HOME` as the program gets it (the host's own is guarded too).
    pub home: Option<&'a Path>,
    /// `$XDG_RUNTIME_DIR` as the program gets it.
    pub runtime: Option<&'a Path>,
    /// The project root: never granted as a script's folder or a prefix.
    pub project: &'a Path,
    /// `$ZOT_HOME`: no folder at or above it, nor inside it outside the
    /// extension's own folder, is granted as a folder.
    pub zot_home: &'a Path,
    /// The extension's own folder (`None` for an MCP server): when it is
    /// itself named `bin/` (or `.bin/`, `shims/`), the folder above it
    /// holds the other extensions, never a prefix.
    pub own: Option<&'a Path>,
    /// Where a path leads, for the grants derived from where the program or
    /// its script really is (`None`: nowhere); an error when it leads
    /// through a link that must not be followed. The start hands in its
    /// own checked walk, so what is derived is what that walk checked.
    pub real: &'a dyn Fn(&Path) -> Result<Option<PathBuf>, String>,
}

/// The base set: system folders, devices, the resolver's files,
/// `/sys/devices/system/cpu`, the extension's own folder (`own`: `None`
/// for an MCP server), the program's derived grants, and read-write on
/// `data` and `tmp`.
pub fn base_set(own: Option<&Path>, program: &Program, data: &Path, tmp: &Path) -> Result<Vec<Grant>, String> {
    let grant = |p: &Path, access, why| Grant { path: p.to_path_buf(), access, why };
    let mut out: Vec<Grant> = SYSTEM.iter().chain(&RESOLVER).map(|p| grant(Path::new(p), Access::Read, Why::Base)).collect();
    out.push(grant(Path::new("/sys/devices/system/cpu"), Access::Read, Why::Base));
    out.extend(DEVICES.iter().map(|p| grant(Path::new(p), Access::Write, Why::Base)));
    out.extend(own.map(|o| grant(o, Access::Read, Why::Base)));
    out.extend(program_grants(program)?.into_iter().map(|(p, why)| grant(&p, Access::Read, why)));
    out.push(grant(data, Access::Write, Why::Base));
    out.push(grant(tmp, Access::Write, Why::Base));
    Ok(out)
}

/// Whether the base set already reads `target` (resolved): inside a
/// system folder, or the extension's own folder.
pub fn covered(target: &Path, own: Option<&Path>) -> bool {
    static REAL: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    let system = REAL.get_or_init(|| SYSTEM.iter().filter_map(|s| Path::new(s).canonicalize().ok()).collect());
    system.iter().map(PathBuf::as_path).chain(own).any(|s| target.starts_with(s))
}

/// What is carved out of every grant that would cover it, declared or
/// derived, `read: ["/"]` included: `/etc`'s secrets (the named ones and
/// every entry not readable by others, found once per host), the terminals
/// (`/dev/pts`, `/dev/tty[0-9]*`, `/dev/console`, `/dev/input`) and every
/// cgroup file system.
pub fn carved_out() -> Vec<PathBuf> {
    let mut out = etc_secrets_once().to_vec();
    // The virtual consoles, found once per host as /etc's secrets are.
    static TTYS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    out.extend(["/dev/pts", "/dev/console", "/dev/input"].iter().map(PathBuf::from));
    // Every cgroup file system: written, a child would leave its own
    // cgroup (and the `procs` bound with it). One mounted while the host
    // runs is carved out of the next start too.
    out.extend(cgroup_mounts_now());
    out.extend(TTYS.get_or_init(|| {
        let Ok(rd) = std::fs::read_dir("/dev") else { return Vec::new() };
        rd.flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("tty")).is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit())))
            .collect()
    }).iter().cloned());
    out
}

/// [`etc_secrets`], walked once per host (a start would otherwise pay the
/// whole walk): a secret made in /etc while the host runs is a known limit
/// (docs/trust-and-confinement.md).
fn etc_secrets_once() -> &'static [PathBuf] {
    static ETC: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    ETC.get_or_init(etc_secrets)
}

/// `/etc`'s secrets: the named ones and every entry not readable by others
/// that this host's user could reach.
fn etc_secrets() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SECRETS.iter().map(PathBuf::from).collect();
    if let Ok(rd) = std::fs::read_dir("/etc/ssh") {
        let keys = rd.flatten().map(|e| e.path()).filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
        });
        out.extend(keys);
    }
    let mut budget = ETC_BUDGET;
    if !unreadable(Path::new("/etc"), &mut budget, &mut out) {
        ETC_CUT.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // One this host's user cannot reach anyway (not root, nor in
    // its group) is left to the kernel's own refusal: carving it
    // out too would change nothing but the cost of every start.
    out.retain(|p| reachable(p));
    let mut out: Vec<PathBuf> = out.into_iter().map(|p| p.canonicalize().unwrap_or(p)).collect();
    crate::order::sort(&mut out);
    out.dedup();
    out
}

/// The entries of `/dev` carved out of a grant that holds `/dev` whole:
/// all but [`DEV_KEPT`] (a serial line, a console's screen, a disk).
/// Listed at each start, so a device that appears later is carved out too.
pub fn dev_carved() -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/dev") else { return Vec::new() };
    let mut out: Vec<PathBuf> = rd.flatten().filter(|e| !DEV_KEPT.iter().any(|k| e.file_name() == *k)).map(|e| e.path()).collect();
    crate::order::sort(&mut out);
    out
}

/// The cgroup file systems mounted now. `/proc/self/mountinfo` is read
/// again only when the kernel says the mount table changed since it was
/// last read (`poll` reports `POLLPRI` on it after every mount and unmount
/// in the host's namespace), so a start pays one `poll`, not a read of
/// every mount.
fn cgroup_mounts_now() -> Vec<PathBuf> {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    static KEPT: std::sync::Mutex<Option<(std::fs::File, Vec<PathBuf>)>> = std::sync::Mutex::new(None);
    let read = |f: &mut std::fs::File| -> Option<Vec<PathBuf>> {
        let mut text = String::new();
        f.seek(std::io::SeekFrom::Start(0)).ok()?;
        f.read_to_string(&mut text).ok()?;
        Some(cgroup_mounts(&text))
    };
    let fresh = || cgroup_mounts(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default());
    let Ok(mut kept) = KEPT.lock() else { return fresh() };
    if let Some((f, mounts)) = kept.as_mut() {
        let mut p = libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLPRI, revents: 0 };
        // SAFETY: one pollfd, no wait.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        if n >= 0 && p.revents & (libc::POLLPRI | libc::POLLERR | libc::POLLNVAL) == 0 {
            return mounts.clone();
        }
        if n >= 0 && p.revents & libc::POLLNVAL == 0 {
            if let Some(m) = read(f) {
                *mounts = m;
                return mounts.clone();
            }
        }
        *kept = None;
        return fresh();
    }
    let Ok(mut f) = std::fs::File::open("/proc/self/mountinfo") else { return fresh() };
    let Some(m) = read(&mut f) else { return fresh() };
    *kept = Some((f, m.clone()));
    m
}

/// The mount points of `mountinfo` whose file system is `cgroup` or
/// `cgroup2`, unescaped (`\040` for a space).
fn cgroup_mounts(mountinfo: &str) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let unescape = |s: &str| {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
            match octal {
                Some(d) => {
                    out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8).wrapping_add(c - b'0')));
                    i += 4;
                }
                None => {
                    out.push(b[i]);
                    i += 1;
                }
            }
        }
        PathBuf::from(std::ffi::OsString::from_vec(out))
    };
    mountinfo
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let fstype = right.split_whitespace().next()?;
            let point = left.split_whitespace().nth(4)?;
            matches!(fstype, "cgroup" | "cgroup2").then(|| unescape(point))
        })
        .collect()
}

/// Whether this process's user may read `p`, or pass through it (a folder).
fn reachable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path; faccessat only checks.
    let may = |mode| unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, libc::AT_EACCESS) } == 0;
    may(libc::R_OK) || (p.is_dir() && may(libc::X_OK))
}

/// The entries of `/etc` looked at, at most, to find its secrets.
pub const ETC_BUDGET: usize = 20_000;
/// Set when `/etc` held more than [`ETC_BUDGET`] entries.
static ETC_CUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the walk of `/etc` for its secrets stopped at [`ETC_BUDGET`]
/// entries (what it did not look at is then carved out whole).
pub fn etc_cut() -> bool {
    etc_secrets_once();
    ETC_CUT.load(std::sync::atomic::Ordering::Relaxed)
}

/// The entries under `dir` not readable by others (not descended into),
/// at any depth, links left alone (their target is found where it lies);
/// once `budget` entries are looked at, every entry not yet looked at too
/// (fail closed). Whether it looked at every entry.
fn unreadable(dir: &Path, budget: &mut usize, out: &mut Vec<PathBuf>) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else { return true };
    let mut whole = true;
    for e in rd.flatten() {
        if *budget == 0 {
            out.push(e.path());
            whole = false;
            continue;
        }
        *budget -= 1;
        let Ok(m) = std::fs::symlink_metadata(e.path()) else { continue };
        if m.file_type().is_symlink() {
            continue;
        }
        if m.permissions().mode() & 0o004 == 0 {
            out.push(e.path());
        } else if m.is_dir() {
            whole &= unreadable(&e.path(), budget, out);
        }
    }
    whole
}

/// The one prefix rule: what the program that really runs needs to read.
/// A compiled program alone; an interpreter (named by a `#!` line, or run
/// with a script: the first argument that does not begin with `-` and
/// names a regular file, when `exec` is not itself a `#!` script) its prefix, the folder above its `bin/` (or
/// `bin/` alone when that folder is guarded); the script it runs, with
/// the script's folder unless that folder is guarded.
pub fn program_grants(p: &Program) -> Result<Vec<(PathBuf, Why)>, String> {
    let mut out = Vec::new();
    let Some(exec) = p.exec else { return Ok(out) };
    let guards = Guards::of(p);
    // A `#!` script is itself the script: its first argument is its own,
    // not a script an interpreter is handed (derived only when `exec` is
    // the interpreter, `python3 server.py`, or a version manager's shim
    // that hands its arguments to one).
    let script_arg = if shebang(exec, p.path_var).is_some() && !shim(exec) {
        None
    } else {
        p.args.iter().filter(|a| !a.starts_with('-')).map(|a| p.cwd.join(a)).find(|a| a.is_file())
    };
    let mut program = exec.to_path_buf();
    let mut script = None;
    // A `#!` chain, a few levels deep as the kernel allows.
    for _ in 0..4 {
        let Some(interp) = shebang(&program, p.path_var) else { break };
        if script.is_none() {
            // `exec` is the script: what is derived from where it lies is
            // the script's (its folder, or the prefix of a tool in `bin/`).
            script = Some(program.clone());
            prefix(&program, Why::Script, p, &guards, &mut out)?;
        } else {
            out.push((program.clone(), Why::Interpreter));
            prefix(&program, Why::Interpreter, p, &guards, &mut out)?;
        }
        program = interp;
    }
    let interpreter = script.is_some() || script_arg.is_some();
    out.push((program.clone(), if interpreter { Why::Interpreter } else { Why::Program }));
    if interpreter {
        prefix(&program, Why::Interpreter, p, &guards, &mut out)?;
    }
    for s in script.iter().chain(&script_arg) {
        folder_of(s, &guards, &mut out);
        if let Some(real) = (p.real)(s)? {
            folder_of(&real, &guards, &mut out);
        }
    }
    Ok(out)
}

/// The folder above `bin/` (or `.bin/`, or a version manager's `shims/`)
/// of `exe`, named and resolved.
fn prefix(exe: &Path, why: Why, p: &Program, g: &Guards, out: &mut Vec<(PathBuf, Why)>) -> Result<(), String> {
    for exe in [Some(exe.to_path_buf()), (p.real)(exe)?].into_iter().flatten() {
        let Some(bin) = exe.parent() else { continue };
        let is_bin = matches!(bin.file_name().and_then(|n| n.to_str()), Some("bin" | ".bin" | "shims")) && !p.own.is_some_and(|o| same(o, bin));
        // A version manager's own folder (`~/.pyenv` above `shims/`, with
        // its `versions/`) is its prefix even directly in `$HOME`: its
        // shims run its own code from there.
        let manager = |top: &Path| bin.ends_with("shims") && ["versions", "installs"].iter().any(|v| top.join(v).is_dir());
        match bin.parent() {
            Some(top) if is_bin && (!g.guarded(top) || manager(top) && !g.beyond_home(top)) => out.push((top.to_path_buf(), why)),
            _ if !g.guarded(bin) => out.push((bin.to_path_buf(), why)),
            _ => {}
        }
    }
    Ok(())
}

/// Whether `exe` is a version manager's shim: in its `shims/`, beside
/// its `versions/` or `installs/`, as named or resolved.
fn shim(exe: &Path) -> bool {
    [exe.to_path_buf(), real(exe)].iter().any(|e| {
        let bin = e.parent().filter(|b| b.file_name().is_some_and(|n| n == "shims"));
        bin.and_then(Path::parent).is_some_and(|top| ["versions", "installs"].iter().any(|v| top.join(v).is_dir()))
    })
}

/// The script, with its folder unless that folder is guarded.
fn folder_of(script: &Path, g: &Guards, out: &mut Vec<(PathBuf, Why)>) {
    out.push((script.to_path_buf(), Why::Script));
    if let Some(dir) = script.parent().filter(|d| !g.guarded(d)) {
        out.push((dir.to_path_buf(), Why::Script));
    }
}

/// The folders never granted whole as a script's folder or a prefix: `/`,
/// `/tmp`, `/var/tmp`, `/dev/shm`, `$XDG_RUNTIME_DIR`, `$HOME` (the
/// program's and the host's) and any folder directly in it, the project
/// root, a folder at or above `$ZOT_HOME`, and one inside it outside the
/// extension's own folder; each as named and as resolved through links
/// (resolved once per program).
struct Guards {
    listed: Vec<PathBuf>,
    homes: Vec<PathBuf>,
    zot: Vec<PathBuf>,
    own: Vec<PathBuf>,
}

impl Guards {
    fn of(p: &Program) -> Guards {
        let both = |v: Vec<PathBuf>| -> Vec<PathBuf> {
            let mut out = v.clone();
            out.extend(v.iter().filter_map(|q| q.canonicalize().ok()));
            out
        };
        let host_home = std::env::var_os("HOME").map(PathBuf::from);
        let homes = both(p.home.map(Path::to_path_buf).into_iter().chain(host_home).filter(|h| !h.as_os_str().is_empty()).collect());
        let fixed = ["/", "/tmp", "/var/tmp", "/dev/shm"].iter().map(PathBuf::from);
        let listed = both(fixed.chain(p.runtime.map(Path::to_path_buf)).chain([p.project.to_path_buf()]).collect());
        Guards { listed, homes, zot: both(vec![p.zot_home.to_path_buf()]), own: both(p.own.map(Path::to_path_buf).into_iter().collect()) }
    }

    /// Whether `dir` is never granted whole.
    fn guarded(&self, dir: &Path) -> bool {
        self.beyond_home(dir) || self.forms(dir).iter().any(|d| d.parent().is_some_and(|up| self.homes.iter().any(|h| h == up)))
    }

    /// [`Guards::guarded`] but for the folders directly in `$HOME`.
    fn beyond_home(&self, dir: &Path) -> bool {
        self.forms(dir).iter().any(|d| {
            d.parent().is_none()
                || self.listed.iter().chain(&self.homes).any(|l| l == d)
                || self.zot.iter().any(|z| z.starts_with(d))
                || (self.zot.iter().any(|z| d.starts_with(z)) && !self.own.iter().any(|o| d.starts_with(o)))
        })
    }

    fn forms(&self, dir: &Path) -> [PathBuf; 2] {
        [dir.to_path_buf(), real(dir)]
    }
}

/// `p` resolved through links, or as it is.
fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Whether `a` and `b` name the same folder, as named or resolved.
fn same(a: &Path, b: &Path) -> bool {
    a == b || real(a) == real(b)
}

/// Whether `p` is a program `execve` runs: a regular file with an
/// execute bit.
fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The interpreter a `#!` line names, `env NAME` looked up on `path_var`
/// as `env` looks it up: the first executable file, a plain file passed
/// over.
fn shebang(file: &Path, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    use std::os::unix::fs::OpenOptionsExt;
    // Never a FIFO or a device (a line naming one must not hang the host).
    if !std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let n = std::fs::File::options().read(true).custom_flags(libc::O_NONBLOCK).open(file).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interp = PathBuf::from(words.next()?);
    let interp = if interp.is_relative() { file.parent()?.join(interp) } else { interp };
    if interp.file_name().is_some_and(|n| n == "env") {
        let name = words.find(|w| !w.starts_with('-'))?;
        if name.contains('/') {
            return Some(PathBuf::from(name)).filter(|p| executable(p));
        }
        let dirs = std::env::split_paths(path_var?).filter(|d| d.is_absolute());
        return dirs.map(|d| d.join(name)).find(|c| executable(c));
    }
    Some(interp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn env_passes_over_a_plain_file_and_the_script_is_the_first_word_not_an_option() {
        let home = tmp("plain");
        let (a, b) = (home.join("code/a"), home.join("code/b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("interp"), b"not a program").unwrap();
        exe(&b.join("interp"), b"\x7fELF");
        std::fs::write(home.join("code/s"), b"#!/usr/bin/env interp\n").unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        let args: Vec<String> = vec!["-u".into(), "s".into(), "x".into()];
        let zot_home = home.join(".zot");
        let p = Program { exec: Some(&home.join("code/s")), args: &[], cwd: &home, path_var: Some(&path), home: Some(&home), runtime: None, project: &home, zot_home: &zot_home, own: None, real: &REAL };
        let g = program_grants(&p).unwrap();
        assert!(g.contains(&(b.join("interp"), Why::Interpreter)) && !g.iter().any(|(q, _)| q.starts_with(&a)), "{g:?}");
        let p = Program { exec: Some(&b.join("interp")), args: &args, cwd: &home.join("code"), ..p };
        let g = program_grants(&p).unwrap();
        assert!(g.contains(&(home.join("code/s"), Why::Script)) && !g.iter().any(|(q, _)| q == &home.join("code")), "~/code is directly in $HOME: {g:?}");
    }

    #[test]
    fn secrets_are_found_at_any_depth_and_what_is_not_looked_at_is_carved_out() {
        let root = tmp("etc");
        let deep = root.join("a/b/c/d/e");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("key"), b"k").unwrap();
        std::fs::set_permissions(deep.join("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        for n in ["x", "y", "z"] {
            std::fs::write(root.join(n), b"open").unwrap();
        }
        let (mut budget, mut out) = (100, Vec::new());
        assert!(unreadable(&root, &mut budget, &mut out));
        assert_eq!(out, vec![deep.join("key")]);
        // Two entries looked at: the rest, the key's way among it, carved out.
        let (mut budget, mut out) = (2, Vec::new());
        assert!(!unreadable(&root, &mut budget, &mut out));
        let mut top: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
        top.sort();
        for p in &top {
            let carved = out.iter().any(|o| p.starts_with(o) || o.starts_with(p));
            assert!(carved || p.is_file(), "{p:?} neither looked at nor carved out: {out:?}");
        }
        assert!(out.iter().filter(|o| o.parent() == Some(&*root)).count() >= 2, "{out:?}");
        assert!(out.iter().any(|o| deep.join("key").starts_with(o)), "{out:?}");
    }

    #[test]
    fn cgroup_mounts_are_found_by_their_file_system() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n41 31 0:38 / /a\\040b rw shared:9 - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup_mounts(info), vec![PathBuf::from("/sys/fs/cgroup/pids"), PathBuf::from("/a b")]);
    }

    #[test]
    fn a_hash_bang_script_is_the_script_but_a_shim_hands_its_arguments_on() {
        let home = tmp("wrapped");
        std::fs::create_dir_all(home.join("code/x")).unwrap();
        std::fs::write(home.join("code/x/secret.txt"), b"s").unwrap();
        exe(&home.join("code/run"), b"#!/bin/sh\n");
        let g = grants(&home.join("code/run"), &["x/secret.txt"], &home.join("code"), &home, &home);
        assert!(!g.iter().any(|q| q.starts_with(home.join("code/x"))), "{g:?}");
        let mgr = home.join("tools/.pyenv");
        std::fs::create_dir_all(mgr.join("shims")).unwrap();
        std::fs::create_dir_all(mgr.join("versions")).unwrap();
        exe(&mgr.join("shims/python3"), b"#!/bin/sh\n");
        let g = grants(&mgr.join("shims/python3"), &["x/secret.txt"], &home.join("code"), &home, &home);
        assert!(g.contains(&home.join("code/x/secret.txt")), "{g:?}");
    }

    /// Where a path leads, as a start with no link to refuse finds it.
    const REAL: fn(&Path) -> Result<Option<PathBuf>, String> = |q| Ok(q.canonicalize().ok());

    /// A scratch folder, removed with what it holds when dropped.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl AsRef<Path> for Scratch {
        fn as_ref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tmp(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("zot-base-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d.canonicalize().unwrap())
    }

    fn grants(exec: &Path, args: &[&str], cwd: &Path, home: &Path, path_var: &Path) -> Vec<PathBuf> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let zot_home = home.join(".zot");
        let project = Path::new("/nonexistent-project");
        let p = Program { exec: Some(exec), args: &args, cwd, path_var: Some(path_var.as_os_str()), home: Some(home), runtime: None, project, zot_home: &zot_home, own: None, real: &REAL };
        let mut out: Vec<PathBuf> = program_grants(&p).unwrap().into_iter().map(|(p, _)| p).collect();
        out.dedup();
        out
    }

    fn exe(p: &Path, text: &[u8]) {
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn interpreter_gets_its_prefix_and_script_folder() {
        let home = tmp("interp");
        let prefix = home.join(".pyenv/versions/3.12");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        exe(&prefix.join("bin/python3"), b"\x7fELF");
        let srv = home.join("code/srv");
        std::fs::create_dir_all(&srv).unwrap();
        std::fs::write(srv.join("server.py"), b"print(1)").unwrap();
        let g = grants(&prefix.join("bin/python3"), &["server.py", "--config", "/etc/x"], &srv, &home, &prefix.join("bin"));
        assert!(g.contains(&prefix), "{g:?}");
        assert!(g.contains(&srv) && g.contains(&srv.join("server.py")), "{g:?}");
        assert!(!g.contains(&home.to_path_buf()), "{g:?}");
        // An option's value that names no regular file (a folder here) is
        // passed over: the script is the first argument that names one.
        std::fs::create_dir_all(srv.join("ignore")).unwrap();
        std::fs::write(home.join("x.json"), b"{}").unwrap();
        let x = home.join("x.json").display().to_string();
        let g = grants(&prefix.join("bin/python3"), &["-W", "ignore", "server.py", &x], &srv, &home, &prefix.join("bin"));
        assert!(g.contains(&srv.join("server.py")) && !g.contains(&home.join("x.json")), "{g:?}");
        // The same interpreter with no script: a compiled program alone.
        let g = grants(&prefix.join("bin/python3"), &["-m", "srv"], &srv, &home, &prefix.join("bin"));
        assert_eq!(g, vec![prefix.join("bin/python3")]);
    }

    #[test]
    fn shebang_through_env_and_a_bin_link() {
        let home = tmp("shebang");
        let proj = home.join("proj");
        let nm = proj.join("node_modules");
        std::fs::create_dir_all(nm.join("tool/dist")).unwrap();
        std::fs::create_dir_all(nm.join(".bin")).unwrap();
        std::fs::write(nm.join("tool/dist/cli.js"), b"#!/usr/bin/env node\n").unwrap();
        symlink("../tool/dist/cli.js", nm.join(".bin/tool")).unwrap();
        let nodes = home.join("nvm/v22");
        std::fs::create_dir_all(nodes.join("bin")).unwrap();
        exe(&nodes.join("bin/node"), b"\x7fELF");
        let g = grants(&nm.join(".bin/tool"), &[], &proj, &home, &nodes.join("bin"));
        assert!(g.contains(&nm), "the .bin tool's prefix: {g:?}");
        assert!(g.contains(&nodes), "node's prefix: {g:?}");
        assert!(g.contains(&nm.join("tool/dist")), "the script's own folder: {g:?}");
    }

    #[test]
    fn home_and_zot_home_are_never_a_prefix() {
        let home = tmp("guard");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::write(home.join("bin/run"), b"#!/bin/sh\n").unwrap();
        let g = grants(&home.join("bin/run"), &[], &home, &home, &home);
        // ~/bin is directly in $HOME: the script alone.
        assert!(g.contains(&home.join("bin/run")) && !g.contains(&home.join("bin")) && !g.contains(&home.to_path_buf()), "{g:?}");
        std::fs::create_dir_all(home.join("code/bin")).unwrap();
        std::fs::write(home.join("code/bin/run"), b"#!/bin/sh\n").unwrap();
        let g = grants(&home.join("code/bin/run"), &[], &home, &home, &home);
        assert!(g.contains(&home.join("code/bin")) && !g.contains(&home.join("code")), "~/code is directly in $HOME: {g:?}");
        std::fs::write(home.join("x.sh"), b"#!/bin/sh\n").unwrap();
        let g = grants(Path::new("/bin/sh"), &["x.sh"], &home, &home, &home);
        assert!(g.contains(&home.join("x.sh")) && !g.contains(&home.to_path_buf()), "{g:?}");
    }
}
