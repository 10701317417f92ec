//! Trusted projects (PROTOCOL §7.3): the fingerprint of a project's
//! `.zot/extensions`, the record of trusted projects in
//! `$ZOT_HOME/trust.json`, and `zot trust` / `zot untrust`.
//!
//! Decisions where the protocol is silent:
//! - What the fingerprint covers: see [`fingerprint`]. Its format version
//!   is recorded with each project; a record of another version reads as
//!   changed, never as trusted.
//! - What `zot trust` showed of the project's extensions and servers
//!   (their trust lines, docs/protocol.md §9.3, and the `--confine` mode
//!   they were shown under) is recorded with the fingerprint, and computed
//!   again at each check: a line that reads otherwise now (a granted link
//!   that leads elsewhere) makes the project changed, as a changed file
//!   does. A record without them (from before they were kept) reads as
//!   changed.
//! - Projects are recorded by canonical path; `zot untrust` of a folder
//!   that no longer exists removes it by its absolute path.
//! - `trust.json` is rewritten through a temporary file and a rename
//!   under an exclusive lock (`trust.json.lock`), so a crash leaves the
//!   old file and two `zot trust` at once lose nothing. A `trust.json`
//!   that cannot be parsed is never overwritten (the commands fail naming
//!   it) and trusts nothing.

mod cache;
pub mod fingerprint;

use crate::home::Home;

use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// What `zot trust` / `zot untrust` were asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustCommand {
    Trust(Option<PathBuf>),
    Untrust(Option<PathBuf>),
    List,
}

/// One trusted project as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub dir: PathBuf,
    pub fingerprint: String,
    /// The fingerprint format it was computed with; records from before
    /// there was one are format 1.
    #[serde(default = "format_one")]
    pub fingerprint_version: u32,
    /// Seconds since the Unix epoch.
    #[serde(default)]
    pub trusted_at: u64,
    /// What `zot trust` showed it may reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<Shown>,
    /// The digest of each part of the fingerprint (each extension's folder,
    /// then the rest), to say what changed since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<(String, String)>,
}

/// The trust lines `zot trust` showed, and the `--confine` mode
/// (`declared`, `all` or `off`) they were resolved under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    pub confine: String,
    pub lines: Vec<String>,
}

/// The trust lines of the project in a folder under a `--confine` mode
/// (docs/protocol.md §9.3): discovery resolves them, and hands them in.
pub type ProjectReach<'a> = dyn Fn(&Path, &str) -> Vec<String> + 'a;

fn format_one() -> u32 {
    1
}

/// The version of `trust.json` this host writes.
const FILE_VERSION: u32 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    projects: Vec<Entry>,
}

/// Whether a project may run its extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Trusted,
    /// Never trusted (or untrusted since).
    Untrusted,
    /// Trusted once, but its extensions changed since (or the record is of
    /// an older fingerprint format).
    Changed,
    /// `trust.json` cannot be read: nothing is trusted until it is fixed
    /// ([`file_problem`] says how).
    Unreadable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Trusted => "trusted",
            Status::Untrusted => "untrusted",
            Status::Changed => "changed since trusted",
            Status::Unreadable => "not trusted (trust.json cannot be read)",
        }
    }
}

/// The canonical form of a project directory, or `dir` itself when it
/// cannot be resolved.
pub fn canonical(dir: &Path) -> PathBuf {
    fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The id of the project at `dir` (docs/protocol.md §2.2): the lowercase hex
/// of the first 8 bytes of the SHA-256 of its canonical path. It names
/// its extensions' data folders, and its fingerprint's cache.
pub fn project_id(dir: &Path) -> String {
    let mut h = crate::sha256::Sha256::new();
    h.update(canonical(dir).as_os_str().as_encoded_bytes());
    h.hex()[..16].to_string()
}

/// The trust status of the project at `dir`, its trust lines now from
/// `reach`. A broken `trust.json` trusts nothing.
pub fn status(home: &Home, dir: &Path, reach: &ProjectReach<'_>) -> Status {
    let dir = canonical(dir);
    let file = match read(home) {
        Ok(f) => f,
        Err(_) => return Status::Unreadable,
    };
    let Some(e) = file.projects.iter().find(|e| e.dir == dir) else { return Status::Untrusted };
    matches(home, &file, e, reach)
}

/// Whether the record `e` still holds: same format, same fingerprint and
/// the same trust lines now.
fn matches(home: &Home, file: &TrustFile, e: &Entry, reach: &ProjectReach<'_>) -> Status {
    if file.version < FILE_VERSION || e.fingerprint_version != fingerprint::VERSION {
        return Status::Changed;
    }
    match (compute(home, &e.dir), &e.reach) {
        (Ok(p), Some(shown)) if p.digest == e.fingerprint && reach(&e.dir, &shown.confine) == shown.lines => Status::Trusted,
        _ => Status::Changed,
    }
}

/// The trust lines `zot trust` recorded for `name` in the project at
/// `dir` (a disabled extension and a server of one name each have one),
/// with the `--confine` mode they were resolved under; `None` when there
/// is no record (or none for that name).
pub fn recorded_lines(home: &Home, dir: &Path, name: &str) -> Option<(String, Vec<String>)> {
    let dir = canonical(dir);
    let file = read(home).ok()?;
    let shown = file.projects.iter().find(|e| e.dir == dir)?.reach.clone()?;
    let head = format!("  {name}: ");
    let lines: Vec<String> = shown.lines.into_iter().filter(|l| l.starts_with(&head)).collect();
    (!lines.is_empty()).then_some((shown.confine, lines))
}

/// What changed in the project at `dir` since it was trusted: each
/// extension whose part of the fingerprint (its folder, its files, what it
/// runs) changed, came or went, named as its manifest names it with its
/// folder (`a (.zot/extensions/helper)`: a folder may hold an extension of
/// another name); "the server files, what they run, or the rest of .zot"
/// for the part that is none of theirs; and each trust line that reads
/// otherwise now (`s: now "..." (was "...")`, as `reach` resolves them
/// under the mode they were shown in). Empty when nothing changed, or when
/// the record cannot say (one made before the parts were kept names no
/// part, only lines).
pub fn changed_parts(home: &Home, dir: &Path, reach: &ProjectReach<'_>) -> Vec<String> {
    let dir = canonical(dir);
    let Ok(file) = read(home) else { return Vec::new() };
    let Some(e) = file.projects.iter().find(|e| e.dir == dir) else { return Vec::new() };
    let mut out = Vec::new();
    if let Ok(now) = compute(home, &dir) {
        if now.digest != e.fingerprint && !e.parts.is_empty() {
            let name = |n: &str| {
                if n == fingerprint::REST {
                    return "the server files, what they run, or the rest of .zot".to_string();
                }
                match crate::manifest::Manifest::load(&dir.join(n)) {
                    Ok(m) => format!("{} ({n})", crate::text::one_line(&m.name)),
                    Err(_) => n.to_string(),
                }
            };
            for (n, d) in &now.parts {
                match e.parts.iter().find(|(m, _)| m == n) {
                    None => out.push(format!("{} (new)", name(n))),
                    Some((_, was)) if was != d => out.push(name(n)),
                    _ => {}
                }
            }
            out.extend(e.parts.iter().filter(|(n, _)| !now.parts.iter().any(|(m, _)| m == n)).map(|(n, _)| format!("{} (gone)", name(n))));
        }
    }
    if let Some(shown) = &e.reach {
        let lines = reach(&dir, &shown.confine);
        let head = |l: &str| l.trim_start().split_once(": ").map(|(n, _)| n.to_string()).unwrap_or_default();
        for l in lines.iter().filter(|l| !shown.lines.contains(l)) {
            let n = head(l);
            let rest = |l: &str| l.trim_start().split_once(": ").map_or(l.to_string(), |(_, r)| r.to_string());
            match shown.lines.iter().find(|o| head(o) == n && !lines.contains(o)) {
                Some(o) => out.push(format!("{n}: now {:?} (was {:?})", rest(l), rest(o))),
                None => out.push(format!("{n}: {:?} (new)", rest(l))),
            }
        }
    }
    out
}

/// What is wrong with `trust.json`, with the fix, when it cannot be read;
/// `None` when it can (or does not exist yet).
pub fn file_problem(home: &Home) -> Option<String> {
    read(home).err()
}

/// The fingerprint of the canonical project `dir`, through its cache in
/// `$ZOT_HOME/cache`.
fn compute(home: &Home, dir: &Path) -> Result<fingerprint::Print, String> {
    let name = format!("trust-{}", project_id(dir));
    let cache = cache::Cache::load(home.root().join("cache").join(name));
    let (print, segments) = fingerprint::compute(dir, &cache)?;
    cache.save(&segments);
    Ok(print)
}

/// `p` as a shell word.
fn quote(p: &Path) -> String {
    let t = p.display().to_string();
    if t.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b)) {
        t
    } else {
        format!("'{}'", t.replace('\'', "'\\''"))
    }
}

fn read(home: &Home) -> Result<TrustFile, String> {
    let path = home.trust_path();
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{}: not a valid trust file ({e}); no project is trusted until it is fixed: repair it, or remove it (rm {}) and trust your projects again",
                path.display(),
                quote(&path)
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(TrustFile::default()),
        Err(e) => Err(format!(
            "cannot read {}: {e}; no project is trusted until it can be read: fix its permissions (chmod 600 {}), or remove it and trust your projects again",
            path.display(),
            quote(&path)
        )),
    }
}

/// Writes `file` to `trust.json` atomically: a fresh temporary sibling,
/// synced, then renamed over it.
fn write(home: &Home, file: &TrustFile) -> Result<(), String> {
    let path = home.trust_path();
    let mut bytes = serde_json::to_vec_pretty(file).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    let err = |e: io::Error| format!("cannot write {}: {e}", path.display());
    let (tmp, mut f) = (0u32..1000)
        .find_map(|n| {
            let tmp = home.root().join(format!(".trust.json.{}.{n}.tmp", std::process::id()));
            match crate::home::private_file().write(true).create_new(true).open(&tmp) {
                Ok(f) => Some(Ok((tmp, f))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => None,
                Err(e) => Some(Err(e)),
            }
        })
        .unwrap_or_else(|| Err(io::Error::from(io::ErrorKind::AlreadyExists)))
        .map_err(err)?;
    let done = f.write_all(&bytes).and_then(|()| f.sync_all()).and_then(|()| fs::rename(&tmp, &path));
    if let Err(e) = done {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}

/// Holds `trust.json.lock` exclusively while alive.
struct Lock(#[allow(dead_code)] File);

fn lock(home: &Home) -> Result<Lock, String> {
    crate::home::create_private_dir(home.root())
        .map_err(|e| format!("cannot create {}: {e}", home.root().display()))?;
    let path = home.root().join("trust.json.lock");
    let f = crate::home::open_private(&path, std::fs::OpenOptions::new().create(true).truncate(false).write(true))
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    loop {
        // SAFETY: flock only acts on the descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(Lock(f));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(format!("cannot lock {}: {e}", path.display()));
        }
    }
}

/// Records the project at `dir` as trusted with its current fingerprint
/// and the trust lines shown; returns the record, what in it lies outside
/// the project, and what an interpreter may find that the fingerprint does
/// not cover.
pub fn trust(home: &Home, dir: &Path, shown: Shown) -> Result<(Entry, Vec<String>, Vec<String>), String> {
    let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _lock = lock(home)?;
    let mut file = read(home)?;
    let print = compute(home, &dir).map_err(|e| format!("not trusted: {e}"))?;
    file.version = FILE_VERSION;
    let trusted_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let entry = Entry {
        dir: dir.clone(),
        fingerprint: print.digest,
        fingerprint_version: fingerprint::VERSION,
        trusted_at,
        reach: Some(shown),
        parts: print.parts,
    };
    file.projects.retain(|e| e.dir != dir);
    file.projects.push(entry.clone());
    crate::order::sort_by(&mut file.projects, |a, b| a.dir.cmp(&b.dir));
    write(home, &file)?;
    Ok((entry, print.outside, print.not_covered))
}

/// Forgets the project at `dir`; false when it was not recorded.
pub fn untrust(home: &Home, dir: &Path) -> Result<bool, String> {
    let dir = canonical(dir);
    let _lock = lock(home)?;
    let mut file = read(home)?;
    let before = file.projects.len();
    file.projects.retain(|e| e.dir != dir);
    if file.projects.len() == before {
        return Ok(false);
    }
    file.version = FILE_VERSION;
    write(home, &file)?;
    Ok(true)
}

/// Every recorded project with its status now.
pub fn list(home: &Home, reach: &ProjectReach<'_>) -> Result<Vec<(Entry, Status)>, String> {
    let file = read(home)?;
    Ok(file.projects.iter().map(|e| (e.clone(), matches(home, &file, e, reach))).collect())
}

/// The names of what a project in a folder runs: its extensions, then its
/// MCP servers.
pub type ProjectNames = dyn Fn(&Path) -> (Vec<String>, Vec<String>);

/// `zot trust` / `zot untrust`; returns the exit code. `project_names`
/// gives the names of what a trusted project runs (its extensions, then
/// its MCP servers), for the line that says what was trusted: discovery knows
/// them, and discovery asks this module whether a project is trusted, so
/// the caller hands them over rather than this module asking discovery.
/// `project_reach` gives, the same way, one line per extension and server
/// saying what it may read, write and reach (docs/protocol.md §9.3), under
/// the `--confine` mode named `confine`: shown, and recorded with the trust.
/// `not_enforced` names, per extension, the rules of its line that are not
/// enforced here (shown, not recorded).
pub fn run(cmd: TrustCommand, home: &Home, project_names: &ProjectNames, project_reach: &ProjectReach<'_>, not_enforced: &dyn Fn(&Path) -> Vec<String>, confine: &str) -> i32 {
    let here = |d: Option<PathBuf>| match d {
        Some(d) => Ok(d),
        // From a subfolder, the project found above it (as a session finds it).
        None => std::env::current_dir()
            .map(|d| crate::project::root(&d, home.root()))
            .map_err(|e| format!("cannot determine the current directory: {e}")),
    };
    let result = match cmd {
        TrustCommand::Trust(d) => here(d).and_then(|d| {
            if d.exists() && !d.is_dir() {
                return Err(format!("{}: not a directory (zot trust takes the project's folder)", d.display()));
            }
            if !d.is_dir() {
                return Err(format!("{}: no such directory", d.display()));
            }
            // What each may read, write and reach, shown before anything is recorded.
            let reach = project_reach(&canonical(&d), confine);
            if !reach.is_empty() {
                let mut out = io::stdout().lock();
                for l in &reach {
                    let _ = writeln!(out, "{}", crate::text::one_line(l));
                }
                let loose = not_enforced(&canonical(&d));
                if !loose.is_empty() {
                    let _ = writeln!(out, "{}", crate::text::one_line(&format!("not enforced here: {}", loose.join(", "))));
                }
                let _ = out.flush();
            }
            let changed = changed_parts(home, &d, project_reach);
            let (e, outside, not_covered) = trust(home, &d, Shown { confine: confine.to_string(), lines: reach })?;
            // Servers are named as servers.
            let (extensions, servers) = project_names(&e.dir);
            let mut parts = Vec::new();
            if !extensions.is_empty() {
                parts.push(format!("{} project extension(s): {}", extensions.len(), extensions.join(", ")));
            }
            if !servers.is_empty() {
                parts.push(format!("{} MCP server(s): {}", servers.len(), servers.join(", ")));
            }
            let what = if parts.is_empty() { "no project extensions yet".to_string() } else { parts.join("; ") };
            let mut lines = vec![format!("trusted {} ({what})", e.dir.display())];
            if !changed.is_empty() {
                lines.push(format!("changed since it was last trusted: {}", changed.join(", ")));
            }
            if !outside.is_empty() {
                lines.push(format!("links outside the project: {}", outside.join(", ")));
            }
            for p in not_covered {
                lines.push(format!("not covered: {p} (found by the interpreter, not fingerprinted)"));
            }
            Ok(lines)
        }),
        TrustCommand::Untrust(d) => here(d).and_then(|d| {
            let dir = canonical(&d);
            Ok(vec![if untrust(home, &dir)? {
                format!("untrusted {}", dir.display())
            } else {
                format!("{} was not trusted; nothing changed", dir.display())
            }])
        }),
        TrustCommand::List => list(home, project_reach).map(|all| {
            if all.is_empty() {
                return vec!["no trusted projects (trust one with: zot trust [DIR])".to_string()];
            }
            all.iter()
                .map(|(e, s)| match s {
                    Status::Trusted => format!("{}  trusted", e.dir.display()),
                    _ => format!(
                        "{}  {} (run 'zot trust {}' to allow it again)",
                        e.dir.display(),
                        s.as_str(),
                        e.dir.display()
                    ),
                })
                .collect()
        }),
    };
    match result {
        Ok(lines) => {
            let mut out = io::stdout().lock();
            for l in lines {
                if writeln!(out, "{}", crate::text::one_line(&l)).is_err() {
                    break;
                }
            }
            0
        }
        Err(e) => {
            eprintln!("zot: {}", crate::text::one_line(&e));
            1
        }
    }
}
