//! Finding extensions by name: the project-local and global extension
//! directories as `list` shows them, and the one entry (or the refusal
//! naming every match) that `remove`, `enable`, `disable` and `logs` act on.

use crate::discovery::{scan_dir, Found, Source};
use crate::mcpserver::config::ServerSpec;
use std::sync::Arc;
use crate::home::{project_extensions_dir, validate_name, Home};
use crate::manifest::Manifest;
use std::fs;
use std::path::{Path, PathBuf};

use super::out::{show, Fail, Res};

/// An extension directory as `list` shows it.
pub(super) struct Entry {
    pub(super) scope: Source,
    /// The manifest's name, or the folder's name when the manifest is broken.
    pub(super) name: String,
    pub(super) manifest: Option<Manifest>,
    pub(super) error: Option<String>,
    /// Where it is (canonical when possible).
    pub(super) dir: PathBuf,
    /// The root it was found in.
    pub(super) root: PathBuf,
    /// An MCP server (docs/protocol.md §8): its entry in a configuration file.
    pub(super) mcp: Option<Arc<ServerSpec>>,
}

impl Entry {
    /// `extension` or `mcp`.
    pub(super) fn kind(&self) -> &'static str {
        if self.mcp.is_some() {
            "mcp"
        } else {
            "extension"
        }
    }
}

/// Management commands edit manifests; a server is changed in its file.
pub(super) fn refuse_server(e: &Entry, verb: &str) -> Res {
    let Some(spec) = &e.mcp else { return Ok(()) };
    // The field that does it, for the two verbs that have one.
    let how = match verb {
        "disable" => format!("set \"disabled\": true in its entry \"{}\" in {}", e.name, show(&spec.file)),
        "enable" => format!("set \"disabled\": false (or remove it) in its entry \"{}\" in {}", e.name, show(&spec.file)),
        _ => format!("edit its entry \"{}\" in {} to {verb} it", e.name, show(&spec.file)),
    };
    Err(Fail::Msg(format!("{} is an MCP server, not an extension: {how} ('zot ext {verb}' changes extensions only)", e.name)))
}

pub(super) fn project_dir(cwd: Option<&Path>) -> Result<PathBuf, String> {
    match cwd {
        Some(c) => Ok(c.to_path_buf()),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot determine the current directory: {e}")),
    }
}

/// Every extension directory, project-local first, each root in folder order
/// (the discovery order).
pub(super) fn entries(home: &Home, cwd: &Path) -> Vec<Entry> {
    let project = project_extensions_dir(cwd);
    let global = home.extensions_dir();
    let mut roots = vec![(global.clone(), Source::Global, crate::discovery::global_servers(home, cwd))];
    let same = matches!(
        (fs::canonicalize(&project), fs::canonicalize(&global)),
        (Ok(a), Ok(b)) if a == b
    );
    if !same {
        roots.insert(0, (project, Source::Project, crate::discovery::project_servers(cwd)));
    }
    let mut all = Vec::new();
    for (root, scope, servers) in roots {
        // The servers of a source come after its extensions, as they load.
        for item in scan_dir(&root, scope).into_iter().chain(servers) {
            all.push(match item {
                Ok(Found { manifest, source, mcp }) => Entry {
                    scope: source,
                    name: manifest.name.clone(),
                    dir: manifest.dir.clone(),
                    error: mcp.as_ref().and_then(|s| s.error.clone()),
                    manifest: Some(manifest),
                    root: root.clone(),
                    mcp,
                },
                Err(b) => Entry {
                    scope: b.source,
                    name: b.label(),
                    dir: fs::canonicalize(&b.dir).unwrap_or_else(|_| b.dir.clone()),
                    error: Some(b.error.to_string()),
                    manifest: None,
                    root: root.clone(),
                    mcp: None,
                },
            });
        }
    }
    all
}

pub(super) fn check_name(name: &str) -> Res {
    validate_name(name).map_err(|e| Fail::Msg(format!("invalid extension name {name:?}: {e}")))
}

/// Every extension whose manifest name or installed folder's name is
/// `name`, project-local first.
pub(super) fn matching(home: &Home, cwd: Option<&Path>, name: &str) -> Res<Vec<Entry>> {
    check_name(name)?;
    let all = entries(home, &project_dir(cwd)?);
    Ok(all
        .into_iter()
        .filter(|e| e.name == name || (e.mcp.is_none() && entry_path(e).file_name().is_some_and(|f| f == name)))
        .collect())
}

/// The one extension called `name` (see [`matching`]).
pub(super) fn lookup(home: &Home, cwd: Option<&Path>, name: &str) -> Res<Entry> {
    let mut found = matching(home, cwd, name)?;
    match found.len() {
        0 => Err(not_found(name)),
        1 => Ok(found.remove(0)),
        _ => Err(ambiguous(name, &found)),
    }
}

pub(super) fn ambiguous(name: &str, found: &[Entry]) -> Fail {
    let dirs: Vec<String> =
        found.iter().map(|e| format!("{} ({})", show(&entry_path(e)), e.scope.as_str())).collect();
    Fail::Msg(format!(
        "{name} is ambiguous: it matches {}; nothing changed (rename or remove one of them by hand)",
        dirs.join(", ")
    ))
}

pub(super) fn not_found(name: &str) -> Fail {
    Fail::Msg(format!("no extension named {name} (see 'zot ext list')"))
}

/// The path of `e`'s entry inside its root: the folder (or the symbolic
/// link to it) that discovery found, which `dir` (canonical) may not be.
pub(super) fn entry_path(e: &Entry) -> PathBuf {
    let same = |p: &Path| fs::canonicalize(p).is_ok_and(|c| c == e.dir);
    if let Some(n) = e.dir.file_name() {
        let p = e.root.join(n);
        if same(&p) {
            return p;
        }
    }
    if let Ok(rd) = fs::read_dir(&e.root) {
        for entry in rd.flatten() {
            if same(&entry.path()) {
                return entry.path();
            }
        }
    }
    e.dir.clone()
}
