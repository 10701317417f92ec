//! Finding extensions: the three sources (`--ext` paths, project-local,
//! global), their precedence, and the deterministic load order.
//!
//! Project-local extensions of a project that is not trusted
//! (`zot trust`) are set apart in [`Discovery::untrusted`]: they claim
//! no name, so a global extension of the same name loads as usual. Their
//! broken manifests are still reported: reading a manifest runs nothing.

use crate::home::{project_extensions_dir, Home};
use crate::manifest::{Manifest, ManifestError, MANIFEST_FILE};
use crate::mcpserver::config::{ServerSpec, MCP_FILE};
use crate::mcpserver::files::{self, Kind, Place};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where an extension was found, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// Given with `--ext PATH`.
    Ext,
    /// Project-local: `<cwd>/.zot/extensions`.
    Project,
    /// Global: `$ZOT_HOME/extensions`.
    Global,
}

impl Source {
    /// The source as listings spell it: `ext`, `project` or `global`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Ext => "ext",
            Source::Project => "project",
            Source::Global => "global",
        }
    }
}

/// A valid manifest and where it came from.
#[derive(Debug, Clone)]
pub struct Found {
    /// The manifest read (for an MCP server, the one made from its entry).
    pub manifest: Manifest,
    /// Where it was found.
    pub source: Source,
    /// For an MCP server (docs/protocol.md §8): its configuration entry.
    pub mcp: Option<Arc<ServerSpec>>,
}

impl Found {
    /// `extension` or `mcp`, as listings say.
    pub fn kind(&self) -> &'static str {
        if self.mcp.is_some() {
            "mcp"
        } else {
            "extension"
        }
    }

    /// Its log file: `ext-<name>.log`, or `mcp-<name>.log` for a server.
    pub fn log_path(&self, home: &Home) -> PathBuf {
        let name = &self.manifest.name;
        match self.mcp {
            Some(_) => home.logs_dir().join(format!("mcp-{name}.log")),
            None => home.log_path(name),
        }
    }
}

/// A directory that should have held an extension but could not be read.
#[derive(Debug)]
pub struct Broken {
    /// The directory that was read.
    pub dir: PathBuf,
    /// Where it was found.
    pub source: Source,
    /// What was wrong with it.
    pub error: ManifestError,
}

impl Broken {
    /// An MCP configuration file that cannot be used, not an extension.
    pub fn is_config(&self) -> bool {
        matches!(self.error, ManifestError::Config { .. })
    }

    /// The best name to attribute the failure to: the folder's name, or
    /// for a configuration file its path (it is not a server's name).
    pub fn label(&self) -> String {
        if self.is_config() {
            return self.dir.display().to_string();
        }
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.dir.display().to_string())
    }
}

/// The outcome of one discovery pass.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Enabled extensions to start, in load order, one per name.
    pub load: Vec<Found>,
    /// Disabled extensions (highest-precedence entry of their name).
    pub disabled: Vec<Found>,
    /// Entries skipped because a higher source already has the name, with
    /// the directory of the winner (for a server, its file).
    pub shadowed: Vec<(Found, PathBuf)>,
    /// Directories whose manifest is missing or invalid.
    pub broken: Vec<Broken>,
    /// Enabled project-local extensions not loaded because the project is
    /// not trusted, in load order.
    pub untrusted: Vec<Found>,
    /// Why the project's trust could not be checked (`$ZOT_HOME/trust.json`
    /// cannot be read), with the fix.
    pub trust_problem: Option<String>,
    /// The project was trusted, but its files changed since (§7.3).
    pub trust_changed: bool,
}

impl Discovery {
    /// The remote server `name`, for `zot mcp login|logout NAME` and the
    /// console's `/login NAME`: loaded or disabled; one of an untrusted
    /// project, a local one or none is refused naming why.
    pub fn remote_named(&self, name: &str) -> Result<Arc<ServerSpec>, String> {
        let named = |f: &&Found| f.mcp.as_ref().is_some_and(|s| s.name == name);
        if let Some(spec) = self.load.iter().chain(&self.disabled).find(named).and_then(|f| f.mcp.clone()) {
            if spec.remote.is_none() {
                return Err(format!("{name} is not a remote server: it has nothing to log in to"));
            }
            return Ok(spec);
        }
        if self.untrusted.iter().any(|f| named(&f)) {
            return Err(format!("{name} is a server of a project you have not trusted: `zot trust` it first"));
        }
        Err(format!("no MCP server named {name}"))
    }
}

/// What to look at.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `--ext` directories in command-line order.
    pub ext_paths: Vec<PathBuf>,
    /// `--no-ext`: skip project-local and global discovery (and the
    /// project and global MCP files).
    pub no_ext: bool,
}

/// Discovers extensions from all sources. The highest-precedence enabled
/// entry of a name wins; a disabled one hides nothing.
/// Project-local ones load only when the project at `cwd` is trusted, or
/// with `trust_project` (`--trust-project`).
pub fn discover(sources: &Sources, cwd: &Path, home: &Home, trust_project: bool) -> Discovery {
    discover_with(sources, &[], cwd, home, trust_project)
}

/// [`discover`], with the MCP servers (docs/protocol.md §8.1) of the
/// `--mcp-config` files `mcp_configs` (in command-line order) and of the
/// project and global `mcp.json`, each after the extensions of its source.
pub fn discover_with(sources: &Sources, mcp_configs: &[PathBuf], cwd: &Path, home: &Home, trust_project: bool) -> Discovery {
    let mut all: Vec<Result<Found, Broken>> = Vec::new();
    for p in &sources.ext_paths {
        let dir = if p.file_name().is_some_and(|n| n == MANIFEST_FILE) && p.is_file() {
            p.parent().map(Path::to_path_buf).unwrap_or_else(|| p.clone())
        } else {
            p.clone()
        };
        all.push(load_one(&dir, Source::Ext));
    }
    // MCP servers come after the extensions of the same source.
    for f in mcp_configs {
        all.extend(mcp_servers_at(&Place { kind: Kind::Given, path: f.clone(), root: cwd.to_path_buf() }, Source::Ext, true));
    }
    if !sources.no_ext {
        let (project, global) = (project_extensions_dir(cwd), home.extensions_dir());
        // A project whose extensions folder is the home's own (zot run in
        // the folder holding ZOT_HOME) has global extensions only, as
        // `zot ext list` shows them.
        let same = matches!((fs::canonicalize(&project), fs::canonicalize(&global)), (Ok(a), Ok(b)) if a == b);
        if !same {
            all.extend(scan_dir(&project, Source::Project));
            all.extend(project_servers(cwd));
        }
        all.extend(scan_dir(&global, Source::Global));
        all.extend(global_servers(home, cwd));
    }
    // A grant that resolves inside zot's home makes the manifest (or that
    // server) invalid (docs/protocol.md §9.1).
    let all: Vec<Result<Found, Broken>> =
        all.into_iter().map(|item| item.and_then(|f| confine_checked(cwd_checked(f, home.root()), home.root(), cwd))).collect();
    let mut out = Discovery::default();
    let mut winners: Vec<(String, PathBuf)> = Vec::new();
    let mut trusted: Option<bool> = trust_project.then_some(true);
    // The same folder reached twice (`--ext X --ext X`, or an `--ext` that
    // is also a project or global folder) is one extension, at its first
    // (highest) source.
    let mut seen: Vec<PathBuf> = Vec::new();
    for item in all {
        // MCP servers of one file share its folder: each is its own entry.
        let dir = match &item {
            Ok(f) if f.mcp.is_some() => None,
            Ok(f) => Some(f.manifest.dir.clone()),
            Err(b) if b.dir.extension().is_some_and(|x| x == "json") => None,
            Err(b) => Some(fs::canonicalize(&b.dir).unwrap_or_else(|_| b.dir.clone())),
        };
        if let Some(dir) = dir {
            if seen.contains(&dir) {
                continue;
            }
            seen.push(dir);
        }
        match item {
            Err(b) => out.broken.push(b),
            Ok(found) => {
                if let Some((_, dir)) = winners.iter().find(|(n, _)| *n == found.manifest.name) {
                    let dir = dir.clone();
                    out.shadowed.push((found, dir));
                    continue;
                }
                if found.source == Source::Project
                    && !*trusted.get_or_insert_with(|| match crate::trust::status(home, cwd, &|d, confine| project_reach_named(d, home.root(), confine)) {
                        crate::trust::Status::Trusted => true,
                        crate::trust::Status::Unreadable => {
                            out.trust_problem = crate::trust::file_problem(home);
                            false
                        }
                        crate::trust::Status::Changed => {
                            out.trust_changed = true;
                            false
                        }
                        _ => false,
                    })
                {
                    // Two of the project's files naming one server: the
                    // first is the one trust would run, the other shadowed.
                    let first = out.untrusted.iter().find(|u| u.manifest.name == found.manifest.name && u.mcp.is_some());
                    match first.and_then(|u| u.mcp.as_ref()).map(|s| s.file.clone()) {
                        Some(file) if found.mcp.is_some() => out.shadowed.push((found, file)),
                        _ if found.manifest.enabled => out.untrusted.push(found),
                        _ => {}
                    }
                    continue;
                }
                // A disabled entry hides nothing: an enabled one of the
                // same name further down still loads.
                if found.manifest.enabled {
                    // A server is named by its file: the folder it runs in
                    // (the project root) tells nobody which file won.
                    let at = found.mcp.as_ref().map_or_else(|| found.manifest.dir.clone(), |s| s.file.clone());
                    winners.push((found.manifest.name.clone(), at));
                    out.load.push(found);
                } else {
                    out.disabled.push(found);
                }
            }
        }
    }
    out
}

/// `f`, its entry carrying the error when it is a server that would run in
/// zot's own home: its `cwd`, resolved as the kernel resolves it (links and
/// `..` applied), at or inside `$ZOT_HOME` (docs/protocol.md §8.1: never
/// `$ZOT_HOME`). A server there would read and write the trust records,
/// the tokens and every extension's state with no grant showing it.
pub fn cwd_checked(mut f: Found, zot_home: &Path) -> Found {
    let Some(spec) = f.mcp.as_mut() else { return f };
    if spec.remote.is_some() || spec.disabled || spec.error.is_some() {
        return f;
    }
    let at = crate::confine::resolve::far(&spec.cwd).0;
    let home = crate::confine::resolve::far_kept(zot_home).0;
    if crate::confine::resolve::inside(&at, &home) {
        let file = spec.file.display().to_string();
        let what = match spec.cwd_given {
            true => format!("field `cwd` {:?}", spec.cwd.display().to_string()),
            false => format!("its default `cwd` {:?}", spec.cwd.display().to_string()),
        };
        let to = if at == spec.cwd { String::new() } else { format!(" (-> {})", at.display()) };
        Arc::make_mut(spec).error =
            Some(format!("{file}: {what}{to} is inside $ZOT_HOME: a server never runs in zot's own folder; give it a `cwd` elsewhere"));
    }
    f
}

/// `f`, or why its `confine` cannot be granted as written: an extension's
/// manifest is then broken, a server's entry carries the error.
pub fn confine_checked(mut f: Found, zot_home: &Path, project: &Path) -> Result<Found, Broken> {
    if f.manifest.confine.is_none() {
        return Ok(f);
    }
    let Err(msg) = subject(&f, project).check(crate::confine::Mode::Declared, zot_home, project) else { return Ok(f) };
    match f.mcp.as_mut() {
        Some(spec) => {
            if spec.error.is_none() {
                Arc::make_mut(spec).error = Some(msg);
            }
            Ok(f)
        }
        None => Err(Broken { dir: f.manifest.dir.clone(), source: f.source, error: ManifestError::Confine { path: f.manifest.path(), msg } }),
    }
}

fn load_one(dir: &Path, source: Source) -> Result<Found, Broken> {
    Manifest::load(dir)
        .map(|manifest| Found { manifest, source, mcp: None })
        .map_err(|error| Broken { dir: dir.to_path_buf(), source, error })
}

/// The servers of the MCP configuration file at `path` read as a
/// `--mcp-config` file of a session in `path`'s folder (see
/// [`mcp_servers_at`]).
pub fn mcp_servers(path: &Path, source: Source, given: bool) -> Vec<Result<Found, Broken>> {
    let root = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    mcp_servers_at(&Place { kind: Kind::Given, path: path.to_path_buf(), root }, source, given)
}

/// The servers of every server file of the project at `root`
/// (docs/protocol.md §8.6), in order, highest first.
pub fn project_servers(root: &Path) -> Vec<Result<Found, Broken>> {
    files::project_files(root).iter().flat_map(|p| mcp_servers_at(p, Source::Project, false)).collect()
}

/// The servers of `$ZOT_HOME/mcp.json`, run in the session's directory
/// `cwd` unless an entry says otherwise.
pub fn global_servers(home: &Home, cwd: &Path) -> Vec<Result<Found, Broken>> {
    mcp_servers_at(&Place { kind: Kind::Global, path: home.root().join(MCP_FILE), root: cwd.to_path_buf() }, Source::Global, false)
}

/// The servers of the server file at `place`, by name; a file that cannot
/// be used is one broken entry (a missing one is nothing, unless `given`
/// with `--mcp-config`).
pub fn mcp_servers_at(place: &Place, source: Source, given: bool) -> Vec<Result<Found, Broken>> {
    let path = &place.path;
    let broken = |msg: String| Broken { dir: path.to_path_buf(), source, error: ManifestError::Config { path: path.to_path_buf(), msg } };
    let file = match files::read(place) {
        Ok(Some(f)) => f,
        Ok(None) if !given => return Vec::new(),
        Ok(None) => return vec![Err(broken("no such file or directory".into()))],
        Err(msg) => return vec![Err(broken(msg))],
    };
    let mut out: Vec<Result<Found, Broken>> = file
        .bad_names
        .into_iter()
        .map(|(name, why)| Err(broken(format!("server {name:?}: invalid name: {why}"))))
        .collect();
    for spec in file.servers {
        out.push(Ok(Found { manifest: spec.manifest(), source, mcp: Some(Arc::new(spec)) }));
    }
    out
}

/// The names of what a trusted project runs: its extensions (a broken
/// one by its label), then its MCP servers, each in load order; a broken
/// configuration file is neither. What `zot trust` says it trusted.
pub fn project_names(dir: &Path) -> (Vec<String>, Vec<String>) {
    let extensions = scan_dir(&dir.join(".zot").join("extensions"), Source::Project)
        .into_iter()
        .map(|r| match r {
            Ok(f) => f.manifest.name,
            Err(b) => b.label(),
        })
        .collect();
    // Its MCP servers run too: a project with only those is not one with
    // nothing to run.
    let mut servers: Vec<String> = Vec::new();
    // A name two of its files give runs once: the first file's.
    for f in project_servers(dir).into_iter().filter_map(Result::ok) {
        if !servers.contains(&f.manifest.name) {
            servers.push(f.manifest.name);
        }
    }
    (extensions, servers)
}

/// The line a front end prints when the project's own extensions and MCP
/// servers (`names`) were not loaded: each called what it is, and why
/// (not trusted, changed since it was trusted, or trust that cannot be
/// checked: `problem`; `changed`: it was trusted and changed since, as
/// discovery found), with the fix.
pub fn not_loaded_line(dir: &str, names: &[String], problem: Option<&str>, changed: bool) -> String {
    let (_, servers) = project_names(Path::new(dir));
    let (srv, ext): (Vec<&String>, Vec<&String>) = names.iter().partition(|n| servers.contains(n));
    let group = |list: &[&String], one: &str, many: &str| match list {
        [] => None,
        [n] => Some(format!("project {one} {n}")),
        _ => Some(format!("{} project {many} ({})", list.len(), list.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", "))),
    };
    let parts: Vec<String> = [group(&ext, "extension", "extensions"), group(&srv, "MCP server", "MCP servers")].into_iter().flatten().collect();
    let what = format!("{} not loaded", parts.join(" and "));
    crate::text::one_line(&match problem {
        Some(p) => format!("{what}: trust cannot be checked: {p}"),
        None if changed => format!("{what}: the project {dir} changed since trusted (run 'zot trust {dir}' to allow it again)"),
        None => format!("{what}: the project {dir} is not trusted (zot trust {dir} allows {})", if names.len() == 1 { "it" } else { "them" }),
    })
}

/// `zot trust`'s line for each project-local extension and MCP server of
/// the project `dir` that can be read: what it may read, write and reach
/// (docs/protocol.md §9.3), under the `--confine` mode `mode`, resolved
/// against the home `zot_home` as its start would resolve it.
pub fn project_reach(dir: &Path, zot_home: &Path, mode: crate::confine::Mode) -> Vec<String> {
    shown_on_trust(dir, zot_home)
        .into_iter()
        .map(|f| match f.mcp.as_deref() {
            // An entry that cannot run is shown as what it is.
            Some(s) if s.error.is_some() => format!("  {}: invalid: {}", f.manifest.name, s.error.as_deref().unwrap_or_default()),
            Some(crate::mcpserver::config::ServerSpec { remote: Some(r), .. }) => remote_line(&f.manifest.name, r),
            _ => subject(&f, dir).trust_line(mode, zot_home, dir),
        })
        .collect()
}

/// What of the rules of each project extension and server `zot trust`
/// shows this kernel (or `--confine off`) does not enforce (docs/protocol.md
/// §9.3), beside `metadata`, which no kernel does: `NAME (unix, procs)`.
pub fn project_not_enforced(dir: &Path, zot_home: &Path, mode: crate::confine::Mode) -> Vec<String> {
    shown_on_trust(dir, zot_home)
        .into_iter()
        .filter(|f| f.mcp.as_deref().is_none_or(|s| s.error.is_none() && s.remote.is_none()))
        .filter_map(|f| {
            // The kinds alone: no grant is resolved again for them.
            let r = crate::confine::listed(f.manifest.confine.as_ref(), mode, &f.manifest.dir);
            let kinds: Vec<&str> = r.not_enforced.into_iter().filter(|k| *k != "metadata").collect();
            (!kinds.is_empty()).then(|| format!("{} ({})", f.manifest.name, kinds.join(", ")))
        })
        .collect()
}

/// The project's extensions and servers `zot trust` has a line for.
fn shown_on_trust(dir: &Path, zot_home: &Path) -> Vec<Found> {
    scan_dir(&dir.join(".zot").join("extensions"), Source::Project)
        .into_iter()
        .chain(project_servers(dir))
        .flatten()
        // As discovery chooses what runs: a disabled server entry runs
        // nothing and hides nothing, so the enabled one of its name further
        // down is the one shown. (Every extension is shown, disabled or
        // not: `zot ext disable` keeps a project trusted, and its line.)
        .filter(|f| f.mcp.is_none() || f.manifest.enabled)
        .fold(Vec::<Found>::new(), |mut all, f| {
            if !all.iter().any(|a| a.mcp.is_some() && f.mcp.is_some() && a.manifest.name == f.manifest.name) {
                all.push(f);
            }
            all
        })
        .into_iter()
        .map(|f| cwd_checked(f, zot_home))
        .collect()
}

/// [`project_reach`] under the `--confine` mode named `confine` (as a
/// trust record keeps it): nothing for a name no mode has, which then
/// matches no record that showed lines.
pub fn project_reach_named(dir: &Path, zot_home: &Path, confine: &str) -> Vec<String> {
    match crate::confine::Mode::parse(confine) {
        Some(mode) => project_reach(dir, zot_home, mode),
        None => vec![format!("unknown --confine mode {confine:?}")],
    }
}

/// `zot trust`'s line for a project's remote server (docs/protocol.md
/// §8.5): where it connects and which variables it sends there, so that
/// trusting a project never sends a secret somewhere unseen. A server
/// that expands none is `remote URL` alone.
fn remote_line(name: &str, r: &crate::mcpserver::config::Remote) -> String {
    let vars = r.variables();
    let sends = if vars.is_empty() { String::new() } else { format!("; sends {}", vars.iter().map(|v| format!("${v}")).collect::<Vec<_>>().join(", ")) };
    format!("  {name}: remote {}{sends}", r.shown_url())
}

/// What confinement needs of `f` to resolve its grants for a display.
/// `project`: the session's project, whose id keys a project's data folder.
pub fn subject<'a>(f: &'a Found, project: &Path) -> crate::confine::Subject<'a> {
    let m = &f.manifest;
    let exec = match &f.mcp {
        Some(s) => s.resolve_command().ok(),
        None => m.resolve_exec().ok(),
    };
    crate::confine::Subject { name: &m.name, dir: &m.dir, declared: m.confine.as_ref(), is_server: f.mcp.is_some(), project_id: (f.source == Source::Project).then(|| crate::trust::project_id(project)), exec, args: &m.args, env: m.env() }
}

/// Every extension directory directly under `root`, sorted by folder name
/// (byte order). Hidden folders are skipped; a missing root is empty.
pub fn scan_dir(root: &Path, source: Source) -> Vec<Result<Found, Broken>> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    crate::order::sort_by(&mut dirs, |a, b| a.file_name().cmp(&b.file_name()));
    dirs.iter().map(|d| load_one(d, source)).collect()
}
