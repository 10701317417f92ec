//! One resolution of every path a confined process is granted
//! (docs/protocol.md §9.1): placeholders expanded, then the path opened
//! (`O_PATH`) with each link and `..` applied as the kernel applies them.
//! What is checked, shown and granted is the opened descriptor — its
//! device and inode and the path it resolves to — so the Landlock rule is
//! made from that descriptor, and a link changed afterwards changes
//! nothing. Enforcement ([`super::Plan::jail`]) and every display (the
//! trust line, listings, doctor) take their grants from [`reach`] alone.

use super::base::{self, Access, Why};
use super::gitdirs;
use super::policy::Declared;
use crate::lexical::{lexical, Above};
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A path opened `O_PATH`: the descriptor, what it resolves to, and its
/// device and inode.
#[derive(Debug)]
pub struct Opened {
    pub fd: OwnedFd,
    pub target: PathBuf,
    pub id: (u64, u64),
    pub is_dir: bool,
}

/// Opens `p` as the kernel resolves it (links followed, `..` applied
/// after the link before it).
pub fn open(p: &Path) -> io::Result<Opened> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated path; O_PATH opens nothing's contents.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh and ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat fills `st`; O_PATH descriptors may be stat'ed.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let target = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()
        .filter(|t| t.is_absolute())
        .map_or_else(|| p.canonicalize(), Ok)?;
    Ok(Opened { fd, target, id: (st.st_dev, st.st_ino), is_dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR })
}

/// Where `p` leads: its deepest existing ancestor as the kernel resolves
/// it, with the rest taken lexically (what a folder created there later
/// would be); `Some` descriptor only when `p` itself exists.
pub fn far(p: &Path) -> (PathBuf, Option<Opened>) {
    if let Ok(o) = open(p) {
        return (o.target.clone(), Some(o));
    }
    let mut rest: Vec<OsString> = Vec::new();
    let mut at = p.to_path_buf();
    loop {
        if let Ok(o) = open(&at) {
            let joined = rest.iter().rev().fold(o.target, |acc, c| acc.join(c));
            return (lexical(&joined, Above::Drop), None);
        }
        match (at.file_name().map(OsStr::to_os_string), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return (lexical(p, Above::Drop), None),
        }
    }
}

/// [`far`] of `p`, resolved one name at a time by descriptor (`O_PATH |
/// O_NOFOLLOW` beneath the folder reached so far), each link met asked of
/// `refuse` by where it lies (its folder as the kernel names that folder
/// now) before it is followed, and followed by what its descriptor holds.
/// What is checked is what is opened: a link swapped while this walks
/// changes the descriptor the walk holds, never the check of another one.
pub fn far_checked(p: &Path, refuse: &dyn Fn(&Path) -> Option<String>) -> Result<(PathBuf, Option<Opened>), String> {
    use std::path::Component;
    let push = |todo: &mut Vec<OsString>, q: &Path| {
        for c in q.components().rev() {
            match c {
                Component::Normal(n) => todo.push(n.to_os_string()),
                Component::ParentDir => todo.push("..".into()),
                _ => {}
            }
        }
    };
    let open_at = |dir: &OwnedFd, name: &OsStr| -> Option<OwnedFd> {
        let c = CString::new(name.as_bytes()).ok()?;
        // SAFETY: a NUL-terminated name beneath a descriptor we hold.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        // SAFETY: fresh and ours.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let root = || open(Path::new("/")).map(|o| o.fd).map_err(|e| format!("cannot open /: {e}"));
    let named = |fd: &OwnedFd| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default();
    let mut todo: Vec<OsString> = Vec::new();
    push(&mut todo, p);
    let mut at = root()?;
    // The path as the walk took it, name by name: a folder moved while
    // the walk is in it changes the name it has now, not the one it was
    // reached by, and a link is judged by both.
    let mut walked = PathBuf::from("/");
    let mut hops = 40;
    while let Some(name) = todo.pop() {
        if name == ".." {
            walked.pop();
        }
        let Some(next) = open_at(&at, &name) else {
            // Not there (or not a folder on the way): the rest as written.
            let rest = std::iter::once(name).chain(todo.into_iter().rev()).fold(named(&at), |acc, c| acc.join(c));
            return Ok((lexical(&rest, Above::Drop), None));
        };
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat fills `st`; O_PATH descriptors may be stat'ed.
        if unsafe { libc::fstat(next.as_raw_fd(), &mut st) } < 0 {
            return Err(format!("{}: {}", p.display(), io::Error::last_os_error()));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFLNK {
            if name != ".." {
                walked.push(&name);
            }
            at = next;
            continue;
        }
        let (as_walked, as_named) = (walked.join(&name), named(&at).join(&name));
        let both = if as_walked == as_named { vec![as_named] } else { vec![as_walked, as_named] };
        for link in both {
            if let Some(why) = refuse(&link) {
                return Err(why);
            }
        }
        hops -= 1;
        if hops == 0 {
            return Err(format!("{}: too many levels of links", p.display()));
        }
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: reads the link the descriptor holds (an empty name with an
        // O_PATH | O_NOFOLLOW descriptor) into `buf`.
        let n = unsafe { libc::readlinkat(next.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(format!("{}: {}", named(&at).join(&name).display(), io::Error::last_os_error()));
        }
        buf.truncate(n as usize);
        let to = PathBuf::from(OsStr::from_bytes(&buf));
        if to.is_absolute() {
            at = root()?;
            walked = PathBuf::from("/");
        }
        push(&mut todo, &to);
    }
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat fills `st`.
    if unsafe { libc::fstat(at.as_raw_fd(), &mut st) } < 0 {
        return Err(format!("{}: {}", p.display(), io::Error::last_os_error()));
    }
    let target = named(&at);
    Ok((target.clone(), Some(Opened { fd: at, target, id: (st.st_dev, st.st_ino), is_dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR })))
}

/// Why a grant may not lead through `link`: a link of `/proc` (`self`,
/// a process's `cwd`, `root`, `fd/N`) leads somewhere else in each process,
/// so what the host resolves is not what the child would reach; a link in
/// `$ZOT_HOME` may be any extension's making; a link in
/// a folder the extension may write (its `${DATA}`, `${TMP}`, a `write`
/// grant) is its own to point anywhere before its next start. A project's
/// entries are spared the second: what they resolve to is recorded by
/// `zot trust`, and a link pointed elsewhere makes the project changed.
fn refused_link(link: &Path, writable: &[PathBuf], zot_home: &[PathBuf], own: &[PathBuf], project_local: bool) -> Option<String> {
    if inside(link, Path::new("/proc")) {
        return Some(format!("leads through {}, a link of /proc that leads elsewhere in each process", link.display()));
    }
    // Whoever may write the folder a link is in may point it anywhere.
    let folder = link.parent().unwrap_or(link);
    if let Some(w) = writable.iter().find(|w| !project_local && inside(folder, w)) {
        return Some(format!(
            "leads through the link {}, inside {}, which it may write: it could point that link anywhere before its next start",
            link.display(),
            w.display()
        ));
    }
    // Every start of every extension writes somewhere in zot's home (its
    // `${DATA}`, its `${TMP}`): no link there is followed, but in the
    // extension's own folder, which it only reads (`node_modules/.bin`).
    let z = zot_home.iter().find(|z| inside(folder, z) && !own.iter().any(|o| inside(folder, o)))?;
    Some(format!("leads through the link {}, inside zot's home {}, where an extension may have made it", link.display(), z.display()))
}

/// [`far`] of a folder that stays where it is while the host runs (zot's
/// home, `$HOME`, the shared temporary folders): resolved once per host
/// and path, with its device and inode, rather than at every start.
pub fn far_kept(p: &Path) -> (PathBuf, Option<(u64, u64)>) {
    /// A folder as named, where it leads, and its device and inode.
    type Kept = (PathBuf, PathBuf, Option<(u64, u64)>);
    static KEPT: std::sync::Mutex<Vec<Kept>> = std::sync::Mutex::new(Vec::new());
    let resolve = || {
        let (t, o) = far(p);
        (t, o.map(|o| o.id))
    };
    let Ok(mut kept) = KEPT.lock() else { return resolve() };
    if let Some((_, t, id)) = kept.iter().find(|(q, _, _)| q == p) {
        return (t.clone(), *id);
    }
    let (t, id) = resolve();
    // Known only once it exists: a folder made later is looked up again.
    if id.is_some() {
        kept.push((p.to_path_buf(), t.clone(), id));
    }
    (t, id)
}

/// Whether `p` is `dir` or inside it.
pub fn inside(p: &Path, dir: &Path) -> bool {
    p.starts_with(dir)
}

/// Whether `p` or a folder above it (as named) is the inode `id`.
fn below_id(p: &Path, id: (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    p.ancestors().any(|a| std::fs::metadata(a).is_ok_and(|m| (m.dev(), m.ino()) == id))
}

/// What one start (or its preview in a display) resolves against.
pub struct Scope<'a> {
    /// `$ZOT_HOME`.
    pub zot_home: &'a Path,
    /// `${PROJECT}`.
    pub project: &'a Path,
    /// `${EXT}`: the extension's folder, a server's `cwd`.
    pub ext: &'a Path,
    /// An MCP server has no folder of its own.
    pub is_server: bool,
    /// A project's (from `.zot/extensions`): its folder is the project's
    /// to make, a link to the project root included.
    pub project_local: bool,
    /// `${DATA}` and `${TMP}` (the latter need not exist yet).
    pub data: &'a Path,
    pub tmp: &'a Path,
    /// The program that runs (`exec` resolved on `$PATH`), when known.
    pub exec: Option<&'a Path>,
    /// Its arguments, placeholders expanded.
    pub args: &'a [String],
    /// The child's environment (its `HOME`, `PATH`, `XDG_RUNTIME_DIR`).
    pub env: &'a [(OsString, OsString)],
}

impl Scope<'_> {
    fn var(&self, k: &str) -> Option<&OsStr> {
        self.env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_os_str())
    }

    /// `${PROJECT}`, `${EXT}`, `${DATA}`, `${TMP}`, then the host's variables.
    pub fn lookup(&self, name: &str) -> Option<String> {
        let p = match name {
            "PROJECT" => self.project,
            "EXT" => self.ext,
            "DATA" => self.data,
            "TMP" => self.tmp,
            _ => return std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
        };
        Some(p.display().to_string())
    }

    /// A declared path made absolute: placeholders and `${VAR}` expanded,
    /// `~/` from `$HOME`, relative against the declaration's folder; no
    /// `..` or link taken off (the kernel applies them).
    pub fn path(&self, d: &Declared, raw: &str) -> Result<PathBuf, String> {
        let s = crate::envexpand::expand("confine", raw, &|n| self.lookup(n)).map_err(|e| e.to_string().replacen("env confine", "confine", 1))?;
        Ok(match s.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                let home = std::env::var_os("HOME").ok_or_else(|| format!("confine: {raw}: HOME is not set"))?;
                PathBuf::from(home).join(rest.trim_start_matches('/'))
            }
            _ => d.base.join(s),
        })
    }
}

/// One grant, resolved.
#[derive(Debug)]
pub struct Resolved {
    /// As written (declared), or where it leads (derived, `~` for `$HOME`).
    pub shown: String,
    /// What it resolves to.
    pub target: PathBuf,
    /// The descriptor the rule is made from: `None` when it does not exist
    /// (shown as written, granted nothing).
    pub opened: Option<Opened>,
    pub access: Access,
    pub why: Why,
    /// It resolves somewhere other than it reads (shown `(-> TARGET)`).
    pub elsewhere: bool,
    /// A `write` over a git repository whose `.git/config` and
    /// `.git/hooks` stay read-only.
    pub git_read_only: bool,
}

/// Everything one confined process is granted, resolved once.
#[derive(Debug, Default)]
pub struct Reach {
    pub grants: Vec<Resolved>,
    /// Resolved paths carved out of every grant that holds them.
    pub deny: Vec<PathBuf>,
    /// Resolved paths left readable only inside a write grant.
    pub read_only: Vec<PathBuf>,
    /// The entries of `/dev` carved out of a grant that holds `/dev` whole
    /// (empty when none does).
    pub dev: Vec<PathBuf>,
    /// One log line per path skipped or left out.
    pub notes: Vec<String>,
}

/// The `..`-free text of `p` as written (what "resolves elsewhere" is
/// measured against).
fn as_read(p: &Path) -> PathBuf {
    lexical(p, Above::Drop)
}

/// A confined extension reads its own folder whole, so that folder may not
/// be, or hold, a folder that holds what is not its own: the project root,
/// `$HOME`, `$ZOT_HOME`, or a shared temporary folder. A project's
/// `.zot/extensions/x` linked to the project root would otherwise read the
/// whole project, its untracked `.env` included, under a line that says
/// `reads nothing`.
fn own_folder_fits(scope: &Scope, own: &Path) -> Result<(), String> {
    let homes = [scope.var("HOME").map(PathBuf::from), std::env::var_os("HOME").map(PathBuf::from)];
    let mut held: Vec<(PathBuf, &str)> = vec![(scope.zot_home.to_path_buf(), "zot's home")];
    // An extension run from its own folder (`zot serve --ext .`) has that
    // folder as its project; a project's own extension never does.
    if scope.project_local {
        held.push((scope.project.to_path_buf(), "the project root"));
    }
    held.extend(homes.into_iter().flatten().filter(|h| h.is_absolute()).map(|h| (h, "$HOME")));
    held.extend(["/tmp", "/var/tmp", "/dev/shm"].iter().map(|t| (PathBuf::from(t), "a shared temporary folder")));
    for (dir, what) in held {
        if inside(&far_kept(&dir).0, own) {
            return Err(format!(
                "its folder {} resolves to {}, which holds {what}: a confined extension reads its own folder whole, so it must be a folder of its own",
                scope.ext.display(),
                own.display()
            ));
        }
    }
    Ok(())
}

/// `p` with `$HOME` shown as `~`.
pub fn tilde(p: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute() && h != Path::new("/")) {
        let real = far_kept(&home).0;
        for h in [home, real] {
            if let Ok(rest) = p.strip_prefix(&h) {
                return if rest.as_os_str().is_empty() { "~".into() } else { format!("~/{}", rest.display()) };
            }
        }
    }
    p.display().to_string()
}

/// Resolves the grants of `d` in `scope`: its own, the base set and the
/// derived ones. An error when a `read` or `write` path resolves inside
/// `$ZOT_HOME` (other than `${DATA}` and `${TMP}`): the manifest (or that
/// server) is invalid.
pub fn reach(scope: &Scope, d: &Declared) -> Result<Reach, String> {
    resolve(scope, d, true)
}

/// Whether `d`'s paths can be granted as written in `scope`: the error
/// [`reach`] gives (a `read` or `write` path that resolves inside
/// `$ZOT_HOME`, a placeholder that does not expand), without resolving
/// what it does not need to say so (the base set, the derived grants,
/// the walk of its `write` grants for git repositories).
pub fn check(scope: &Scope, d: &Declared) -> Result<(), String> {
    resolve(scope, d, false).map(drop)
}

fn resolve(scope: &Scope, d: &Declared, whole: bool) -> Result<Reach, String> {
    let mut out = Reach::default();
    let (zot_home, zot_id) = far_kept(scope.zot_home);
    // By inode too: the same folder reached through a bind mount.
    let (data, tmp) = (far(scope.data).0, far(scope.tmp).0);
    let own = (!scope.is_server).then(|| far(scope.ext).0);
    if let Some(o) = &own {
        own_folder_fits(scope, o)?;
        // A project's extension whose folder leads out of
        // `.zot/extensions` (a committed link to `../../config`) reads what
        // is there: the line says where, as for any grant through a link.
        if scope.project_local && !inside(o, &far(&scope.project.join(".zot").join("extensions")).0) {
            let opened = open(o).ok();
            out.grants.push(Resolved { shown: "${EXT}".into(), target: o.clone(), opened, access: Access::Read, why: Why::Declared, elsewhere: true, git_read_only: false });
        }
    }
    let hard = if whole { base::carved_out() } else { Vec::new() };
    // What of `hard` holds a path: looked up by its folders, one by one
    // (a start asks this of every grant, and `hard` holds over a hundred).
    let hard_set: std::collections::HashSet<&Path> = hard.iter().map(PathBuf::as_path).collect();
    let carved = |t: &Path| t.ancestors().find_map(|a| hard_set.get(a).copied());
    if whole && base::etc_cut() {
        out.notes.push(format!("confine: /etc holds more than {} entries; the part not looked through for secrets is never granted", base::ETC_BUDGET));
    }
    // What it may write, where a link is its own to make.
    // Each as written and as resolved.
    let mut writable = vec![data.clone(), tmp.clone(), scope.data.to_path_buf(), scope.tmp.to_path_buf()];
    for raw in &d.write {
        let p = scope.path(d, raw)?;
        writable.push(far(&p).0);
        writable.push(lexical(&p, Above::Drop));
    }
    let homes = [zot_home.clone(), scope.zot_home.to_path_buf()];
    // The extension's own folder, as named and as resolved.
    let own_forms: Vec<PathBuf> = own.iter().cloned().chain((!scope.is_server).then(|| scope.ext.to_path_buf())).collect();
    // What it declares, each checked against zot's home and the links it
    // leads through.
    for (field, list, access) in [("read", &d.read, Access::Read), ("write", &d.write, Access::Write)] {
        for (i, raw) in list.iter().enumerate() {
            let path = scope.path(d, raw)?;
            let refuse = |l: &Path| refused_link(l, &writable, &homes, &own_forms, scope.project_local).map(|why| format!("confine.{field}[{i}]: {raw:?} {why}; write the path it should reach"));
            let (target, opened) = far_checked(&path, &refuse)?;
            let own_read = access == Access::Read && own.as_ref().is_some_and(|o| inside(&target, o));
            let in_home = inside(&target, &zot_home) || zot_id.is_some_and(|id| below_id(&target, id));
            if in_home && !inside(&target, &data) && !inside(&target, &tmp) && !own_read {
                return Err(format!(
                    "confine.{field}[{i}]: {raw:?} resolves to {}, inside zot's home, which no extension may be granted",
                    target.display()
                ));
            }
            if let Some(c) = carved(&target) {
                out.notes.push(format!("confine: {raw} ({}) is inside {}, which is never granted; left out", target.display(), c.display()));
                continue;
            }
            if opened.is_none() {
                out.notes.push(format!("confine: {raw} ({}) does not exist; skipped", path.display()));
            }
            // A server's `${EXT}` is the `cwd` its entry chose: where it
            // leads is shown, as for a link.
            let elsewhere = as_read(&path) != target || (scope.is_server && raw.contains("${EXT}"));
            out.grants.push(Resolved { shown: raw.clone(), target, opened, access, why: Why::Declared, elsewhere, git_read_only: false });
        }
    }
    if !whole {
        for raw in d.deny.iter().chain(&d.read_only) {
            scope.path(d, raw)?;
        }
        return Ok(out);
    }
    // What git reads its settings or runs code from, in every repository
    // a write grant holds, stays read-only unless written in `write`
    // itself; a grant too big to look through fails the start.
    let written: Vec<PathBuf> = out.grants.iter().filter(|g| g.access == Access::Write).map(|g| g.target.clone()).collect();
    for g in out.grants.iter_mut().filter(|g| g.access == Access::Write && g.opened.as_ref().is_some_and(|o| o.is_dir)) {
        let kept = gitdirs::kept(&g.target, gitdirs::BUDGET).map_err(|()| {
            format!(
                "confine.write: {:?} ({}) holds more than {} entries to look through for git repositories, whose config and hooks must stay read-only; grant a narrower folder",
                g.shown,
                g.target.display(),
                gitdirs::BUDGET
            )
        })?;
        for p in kept {
            // A link is kept by its name too (its folder is then split, so
            // it cannot be replaced), whatever it leads to; a `.git` link's
            // git dir is kept by what it holds.
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                g.git_read_only = true;
                if !out.deny.contains(&p) {
                    out.deny.push(p.clone());
                }
                if p.file_name().is_some_and(|n| n == ".git") {
                    continue;
                }
            }
            // What git would run or read there, in this grant or another
            // `write` one; one that does not exist yet cannot be made.
            let (t, o) = far(&p);
            if written.contains(&t) || !written.iter().any(|w| inside(&t, w)) {
                continue;
            }
            g.git_read_only = true;
            let list = if o.is_none() { &mut out.deny } else { &mut out.read_only };
            if !list.contains(&t) {
                list.push(t);
            }
        }
    }
    // The base set and the derived grants.
    let home = scope.var("HOME").map(PathBuf::from);
    let runtime = scope.var("XDG_RUNTIME_DIR").map(PathBuf::from);
    // What the program needs, by the same checked walk: a link met on the
    // way that the extension could have made is refused unless what it
    // leads to is the system's or its own folder, which it reads anyway (a
    // virtual environment's `python` in a write grant); what is derived is
    // what this walk opened.
    let checked = |q: &Path, label: &str| -> Result<Option<Opened>, String> {
        let refused = std::cell::RefCell::new(None::<String>);
        let note = |l: &Path| {
            if refused.borrow().is_none() {
                *refused.borrow_mut() = refused_link(l, &writable, &homes, &own_forms, scope.project_local);
            }
            None
        };
        let Ok((target, Some(opened))) = far_checked(q, &note) else { return Ok(None) };
        match refused.into_inner() {
            Some(why) if !base::covered(&target, own.as_deref()) => {
                Err(format!("{}{label} {why}; remove the link: zot never follows one the extension could have made", q.display()))
            }
            _ => Ok(Some(opened)),
        }
    };
    let real = |q: &Path| checked(q, "").map(|o| o.map(|o| o.target));
    let program = base::Program {
        exec: scope.exec,
        args: scope.args,
        cwd: scope.ext,
        path_var: scope.var("PATH"),
        home: home.as_deref(),
        runtime: runtime.as_deref(),
        project: scope.project,
        zot_home: scope.zot_home,
        own: own.as_deref(),
        real: &real,
    };
    // Granted already, with at least this access: adds nothing.
    let mut seen: Vec<((u64, u64), Access)> = out.grants.iter().filter_map(|g| g.opened.as_ref().map(|o| (o.id, g.access))).collect();
    for g in base::base_set(own.as_deref(), &program, scope.data, scope.tmp)? {
        // The system's folders are opened as they are; what is derived from
        // the program, name by name, its links checked on the way.
        let opened = if g.why == Why::Base { open(&g.path).ok() } else { checked(&g.path, &format!(" ({})", g.why.label()))? };
        let Some(o) = opened else { continue };
        if seen.iter().any(|(id, a)| *id == o.id && (*a == Access::Write || g.access == Access::Read)) {
            continue;
        }
        if carved(&o.target).is_some() {
            continue;
        }
        // A derived grant the base set already covers adds nothing.
        if g.why != Why::Base && base::covered(&o.target, own.as_deref()) {
            continue;
        }
        // Nor is one inside zot's home granted, but for its own folder and
        // its own `${DATA}` and `${TMP}`: a file named in `args` is not
        // the extension's to read.
        if g.why != Why::Base {
            let t = &o.target;
            let in_home = inside(t, &zot_home) || zot_id.is_some_and(|id| below_id(t, id));
            let its_own = [Some(&data), Some(&tmp), own.as_ref()].into_iter().flatten().any(|d| inside(t, d));
            if in_home && !its_own {
                out.notes.push(format!("confine: {} ({}) is inside zot's home, which no extension may be granted; left out", t.display(), g.why.label()));
                continue;
            }
        }
        seen.push((o.id, g.access));
        let shown = tilde(&o.target);
        out.grants.push(Resolved { shown, target: o.target.clone(), opened: Some(o), access: g.access, why: g.why, elsewhere: false, git_read_only: false });
    }
    // Carved out of every grant that holds them: what it denies (as the
    // kernel resolves it, and as written with its `..` taken lexically),
    // zot's home, /etc's secrets and the terminals.
    for raw in &d.deny {
        let p = scope.path(d, raw)?;
        for q in [far(&p).0, far(&lexical(&p, Above::Keep)).0] {
            if !out.deny.contains(&q) {
                out.deny.push(q);
            }
        }
    }
    for raw in &d.read_only {
        let q = far(&scope.path(d, raw)?).0;
        if !out.read_only.contains(&q) {
            out.read_only.push(q);
        }
    }
    // Over a hundred of them: kept apart by a set, not by a search of the
    // list for each.
    let mut denied: std::collections::HashSet<PathBuf> = out.deny.iter().cloned().collect();
    for q in std::iter::once(zot_home).chain(hard.iter().cloned()) {
        if denied.insert(q.clone()) {
            out.deny.push(q);
        }
    }
    if out.grants.iter().map(|g| &g.target).chain(&out.read_only).any(|t| Path::new("/dev").starts_with(t)) {
        out.dev = base::dev_carved().into_iter().filter(|p| !denied.contains(p)).collect();
    }
    Ok(out)
}

impl Reach {
    /// The trust line's and listings' items: what it reads, then what it
    /// writes, each as written (`(-> TARGET)` where it leads elsewhere)
    /// or, derived, where it leads and why.
    pub fn items(&self) -> (Vec<String>, Vec<String>) {
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        // A derived grant inside another shown grant that covers it adds
        // nothing to what the line says, unless that grant's carve-outs
        // hold it (then it reaches what the other does not).
        let folded = |g: &Resolved| {
            g.why != Why::Declared
                && self.grants.iter().any(|h| {
                    !std::ptr::eq(g, h)
                        && h.why != Why::Base
                        && h.opened.is_some()
                        && g.target.starts_with(&h.target)
                        && g.target != h.target
                        && (h.access == Access::Write || g.access == Access::Read)
                        && !self.deny.iter().any(|d| d.starts_with(&h.target) && g.target.starts_with(d))
                })
        };
        for g in &self.grants {
            if folded(g) {
                continue;
            }
            let mut s = g.shown.clone();
            if g.elsewhere {
                s.push_str(&format!(" (-> {})", tilde(&g.target)));
            }
            match g.why {
                Why::Base => continue,
                Why::Declared => {}
                why => s.push_str(&format!(" ({})", why.label())),
            }
            if g.git_read_only {
                s.push_str(" (.git/config and .git/hooks read-only)");
            }
            let list = if g.access == Access::Write { &mut writes } else { &mut reads };
            if !list.contains(&s) {
                list.push(s);
            }
        }
        (reads, writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_and_dotdot_resolve_as_the_kernel_does() {
        let t = std::env::temp_dir().join(format!("zot-resolve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::create_dir_all(t.join("c")).unwrap();
        let t = t.canonicalize().unwrap();
        symlink(t.join("a/b"), t.join("l")).unwrap();
        // `l/..` is `a`, not the folder holding `l`.
        assert_eq!(open(&t.join("l/..")).unwrap().target, t.join("a"));
        assert_eq!(far(&t.join("l/new/x")).0, t.join("a/b/new/x"));
        assert!(far(&t.join("l/new")).1.is_none());
        // Name by name, the same answers, and each link met asked first.
        let none = |_: &Path| None;
        for p in [t.join("l/.."), t.join("l/new/x"), t.join("l"), t.join("c/../l/../b"), t.join("a/b")] {
            let (target, opened) = far_checked(&p, &none).unwrap();
            assert_eq!((target.clone(), opened.is_some()), (far(&p).0, far(&p).1.is_some()), "{}", p.display());
        }
        symlink("../l", t.join("c/rel")).unwrap();
        let met = std::cell::RefCell::new(Vec::new());
        let note = |l: &Path| {
            met.borrow_mut().push(l.to_path_buf());
            None
        };
        assert_eq!(far_checked(&t.join("c/rel/.."), &note).unwrap().0, t.join("a"));
        assert_eq!(*met.borrow(), [t.join("c/rel"), t.join("l")]);
        let refuse = |l: &Path| (l == t.join("l")).then(|| "no".to_string());
        assert_eq!(far_checked(&t.join("c/rel"), &refuse).unwrap_err(), "no");
        assert!(far_checked(Path::new("/proc/self/cwd"), &|l: &Path| inside(l, Path::new("/proc")).then(|| "proc".into())).is_err());
        // A link swapped for another while it is checked: the walk follows
        // the one it checked (it holds it), never the one put in its place.
        symlink(t.join("c"), t.join("swap")).unwrap();
        symlink(t.join("a"), t.join("other")).unwrap();
        let swap = |l: &Path| {
            if l == t.join("swap") {
                std::fs::rename(t.join("other"), t.join("swap")).unwrap();
            }
            None
        };
        assert_eq!(far_checked(&t.join("swap"), &swap).unwrap().0, t.join("c"));
        assert_eq!(far(&t.join("swap")).0, t.join("a"), "swapped since");
        let _ = std::fs::remove_dir_all(&t);
    }
}
