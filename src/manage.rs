//! `zot ext`: managing installed extensions on disk. Listing project-local
//! and global extensions (broken ones too), installing from a local folder
//! or a git URL into `$ZOT_HOME/extensions/<name>` with complete rollback,
//! removing, enabling/disabling (through [`crate::manifest::set_enabled`]), and
//! printing or following an extension's log. Everything printed goes
//! through [`sanitize`] ([`crate::text::one_line`]).
//!
//! Decisions where the protocol is silent:
//! - A local install skips a top-level `.git` (file or directory): the
//!   installed copy is a snapshot, not a checkout. It skips a top-level
//!   `target/` and `node_modules/` too (build output and dependencies, often
//!   huge), except the files the manifest's `exec` and `args` name inside
//!   them (a built Rust extension runs `./target/release/NAME`); a note
//!   says what was left out. A git install keeps the `.git` of its shallow
//!   clone. `install DIR/extension.json` installs DIR.
//! - Symbolic links: a link is kept only if its target, resolved lexically
//!   from the link's directory, stays inside the extension, is relative, and
//!   does not go up (`..`) after passing through another link. The same
//!   check runs on a git clone's tree. FIFOs, sockets and devices refuse the
//!   install.
//! - The installed folder's top directory keeps the source's mode plus
//!   owner `rwx`, so that `enable`/`disable` can always rewrite the manifest.
//! - Name lookup: `remove`, `enable`, `disable` and `logs` take the
//!   manifest's name or the installed folder's name, in project-local and
//!   global extensions alike (a broken manifest by its folder's name). More
//!   than one match is refused, naming every matching folder, and nothing
//!   changes; `logs` only refuses when the matches log to different files.
//! - `list` notes whether the project is trusted ([`crate::trust`]) and
//!   warns about an `exec` that cannot run (missing, not executable).
//! - `remove` of an extension folder that is a symbolic link unlinks the
//!   link and leaves its target alone; the extension's log is kept.
//! - `logs` prints the log as is (it is the extension's own stderr);
//!   `logs -f` first prints the whole file, waits for a missing log to
//!   appear, and notes truncation on stderr.

use crate::discovery::{scan_dir, Source};
use crate::home::{project_extensions_dir, validate_name, Home};
use crate::manifest::{set_enabled, Manifest, MANIFEST_FILE};
use crate::trust::Status as Trust;
pub use crate::text::one_line as sanitize;
use serde::Serialize;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// One `zot ext` subcommand with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtCommand {
    List { json: bool },
    Install { source: OsString },
    Remove { name: String, yes: bool },
    Enable { name: String },
    Disable { name: String },
    Logs { name: String, follow: bool },
}

/// How often `logs --follow` looks at the file.
pub const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Longest description shown in the `list` table (the JSON has it whole).
const DESCRIPTION_WIDTH: usize = 60;

enum Fail {
    /// A runtime error: one line `zot: <message>`, exit 1.
    Msg(String),
    /// Stdout was closed (`zot ext list | head`): stop quietly.
    Pipe,
}

impl From<String> for Fail {
    fn from(m: String) -> Fail {
        Fail::Msg(m)
    }
}

type Res<T = ()> = Result<T, Fail>;

/// Runs one `zot ext` subcommand; returns the exit code. `cwd` is the
/// checked `--cwd`, or `None` for the current directory.
pub fn run(cmd: ExtCommand, home: &Home, cwd: Option<&Path>) -> i32 {
    let result = match cmd {
        ExtCommand::List { json } => list(home, cwd, json),
        ExtCommand::Install { source } => install(home, &source),
        ExtCommand::Remove { name, yes } => remove(home, cwd, &name, yes),
        ExtCommand::Enable { name } => set_state(home, cwd, &name, true),
        ExtCommand::Disable { name } => set_state(home, cwd, &name, false),
        ExtCommand::Logs { name, follow } => logs(home, cwd, &name, follow),
    };
    match result {
        Ok(()) | Err(Fail::Pipe) => 0,
        Err(Fail::Msg(m)) => {
            eprintln!("zot: {}", sanitize(&m));
            1
        }
    }
}

// ---------------------------------------------------------------------------
// Output

fn out_err(e: io::Error) -> Fail {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Fail::Pipe
    } else {
        Fail::Msg(format!("cannot write to stdout: {e}"))
    }
}

/// Prints one sanitized line on stdout.
fn say(line: &str) -> Res {
    let mut out = io::stdout().lock();
    writeln!(out, "{}", sanitize(line)).and_then(|()| out.flush()).map_err(out_err)
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

// ---------------------------------------------------------------------------
// Finding extensions

/// An extension directory as `list` shows it.
struct Entry {
    scope: Source,
    /// The manifest's name, or the folder's name when the manifest is broken.
    name: String,
    manifest: Option<Manifest>,
    error: Option<String>,
    /// Where it is (canonical when possible).
    dir: PathBuf,
    /// The root it was found in.
    root: PathBuf,
}

fn project_dir(cwd: Option<&Path>) -> Result<PathBuf, String> {
    match cwd {
        Some(c) => Ok(c.to_path_buf()),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot determine the current directory: {e}")),
    }
}

/// Every extension directory, project-local first, each root in folder order
/// (the discovery order).
fn entries(home: &Home, cwd: &Path) -> Vec<Entry> {
    let project = project_extensions_dir(cwd);
    let global = home.extensions_dir();
    let mut roots = vec![(global.clone(), Source::Global)];
    let same = matches!(
        (fs::canonicalize(&project), fs::canonicalize(&global)),
        (Ok(a), Ok(b)) if a == b
    );
    if !same {
        roots.insert(0, (project, Source::Project));
    }
    let mut all = Vec::new();
    for (root, scope) in roots {
        for item in scan_dir(&root, scope) {
            all.push(match item {
                Ok(found) => Entry {
                    scope: found.source,
                    name: found.manifest.name.clone(),
                    dir: found.manifest.dir.clone(),
                    manifest: Some(found.manifest),
                    error: None,
                    root: root.clone(),
                },
                Err(b) => Entry {
                    scope: b.source,
                    name: b.label(),
                    dir: fs::canonicalize(&b.dir).unwrap_or_else(|_| b.dir.clone()),
                    error: Some(b.error.to_string()),
                    manifest: None,
                    root: root.clone(),
                },
            });
        }
    }
    all
}

fn check_name(name: &str) -> Res {
    validate_name(name).map_err(|e| Fail::Msg(format!("invalid extension name {name:?}: {e}")))
}

/// Every extension whose manifest name or installed folder's name is
/// `name`, project-local first.
fn matching(home: &Home, cwd: Option<&Path>, name: &str) -> Res<Vec<Entry>> {
    check_name(name)?;
    let all = entries(home, &project_dir(cwd)?);
    Ok(all
        .into_iter()
        .filter(|e| e.name == name || entry_path(e).file_name().is_some_and(|f| f == name))
        .collect())
}

/// The one extension called `name` (see [`matching`]).
fn lookup(home: &Home, cwd: Option<&Path>, name: &str) -> Res<Entry> {
    let mut found = matching(home, cwd, name)?;
    match found.len() {
        0 => Err(not_found(name)),
        1 => Ok(found.remove(0)),
        _ => Err(ambiguous(name, &found)),
    }
}

fn ambiguous(name: &str, found: &[Entry]) -> Fail {
    let dirs: Vec<String> =
        found.iter().map(|e| format!("{} ({})", show(&entry_path(e)), e.scope.as_str())).collect();
    Fail::Msg(format!(
        "{name} is ambiguous: it matches {}; nothing changed (rename or remove one of them by hand)",
        dirs.join(", ")
    ))
}

fn not_found(name: &str) -> Fail {
    Fail::Msg(format!("no extension named {name} (see 'zot ext list')"))
}

/// The path of `e`'s entry inside its root: the folder (or the symbolic
/// link to it) that discovery found, which `dir` (canonical) may not be.
fn entry_path(e: &Entry) -> PathBuf {
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

// ---------------------------------------------------------------------------
// list

#[derive(Serialize)]
struct Row {
    scope: &'static str,
    name: String,
    version: String,
    enabled: bool,
    language: String,
    description: String,
    dir: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The directory of the extension that wins over this one (same name,
    /// higher precedence).
    #[serde(skip_serializing_if = "Option::is_none")]
    shadowed_by: Option<String>,
    /// Project-local rows: whether the project is trusted to run them.
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted: Option<bool>,
    /// Why its `exec` cannot run now.
    #[serde(skip_serializing_if = "Option::is_none")]
    exec_error: Option<String>,
    #[serde(rename = "static", skip_serializing_if = "std::ops::Not::not")]
    is_static: bool,
}

fn list(home: &Home, cwd: Option<&Path>, json: bool) -> Res {
    let project = project_dir(cwd)?;
    let all = entries(home, &project);
    let trust = all
        .iter()
        .any(|e| e.scope == Source::Project)
        .then(|| crate::trust::status(home, &project));
    // Shadowing follows discovery order, before sorting for display.
    let mut winners: Vec<(&str, &Path)> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for e in &all {
        let mut shadowed_by = None;
        if let Some(m) = &e.manifest {
            match winners.iter().find(|(n, _)| *n == m.name) {
                Some((_, d)) => shadowed_by = Some(show(d)),
                None => winners.push((&m.name, &m.dir)),
            }
        }
        let m = e.manifest.as_ref();
        let field = |f: fn(&Manifest) -> &String| m.map(|m| f(m).clone()).unwrap_or_default();
        rows.push(Row {
            scope: e.scope.as_str(),
            name: e.name.clone(),
            version: field(|m| &m.version),
            enabled: m.is_some_and(|m| m.enabled),
            language: field(|m| &m.language),
            description: field(|m| &m.description),
            dir: show(&e.dir),
            error: e.error.clone(),
            shadowed_by,
            trusted: trust.filter(|_| e.scope == Source::Project).map(|t| t == Trust::Trusted),
            exec_error: m.filter(|m| !m.is_static()).and_then(|m| m.resolve_exec().err()).map(|e| e.to_string()),
            is_static: m.is_some_and(Manifest::is_static),
        });
    }
    rows.sort_by(|a, b| {
        let rank = |r: &Row| if r.scope == Source::Project.as_str() { 0 } else { 1 };
        (rank(a), &a.name, &a.dir).cmp(&(rank(b), &b.name, &b.dir))
    });
    if json {
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|e| Fail::Msg(format!("cannot encode the list: {e}")))?;
        let mut out = io::stdout().lock();
        return writeln!(out, "{}", escape_json_controls(&text))
            .and_then(|()| out.flush())
            .map_err(out_err);
    }
    if rows.is_empty() {
        say("no extensions installed")?;
        return say("install one with: zot ext install <path|git-url>");
    }
    let trust_note = trust.map(|t| match t {
        Trust::Trusted => format!("project {} is trusted: its extensions run", show(&project)),
        _ => format!(
            "project {} is {}: its extensions do not run (run 'zot trust' in it, or pass --trust-project)",
            show(&project),
            t.as_str()
        ),
    });
    print_table(&rows, trust_note)
}

/// Escapes DEL, C1 controls and bidi overrides that `serde_json` leaves
/// raw. They can only occur inside JSON strings, where `\uXXXX` is valid.
fn escape_json_controls(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && !c.is_ascii()) || c == '\u{7f}' || crate::text::is_bidi_control(c) {
            s.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            s.push(c);
        }
    }
    s
}

fn print_table(rows: &[Row], trust_note: Option<String>) -> Res {
    let header = ["SCOPE", "NAME", "VERSION", "ENABLED", "LANGUAGE", "DESCRIPTION", "DIRECTORY"];
    let dash = |s: &str| if s.is_empty() { "-".to_string() } else { sanitize(s) };
    let mut table: Vec<[String; 7]> = vec![header.map(str::to_string)];
    for r in rows {
        let description = if r.error.is_some() {
            "(broken manifest, see below)".to_string()
        } else {
            truncate(&dash(&r.description), DESCRIPTION_WIDTH)
        };
        table.push([
            r.scope.to_string(),
            sanitize(&r.name),
            dash(&r.version),
            if r.enabled { "yes" } else { "no" }.to_string(),
            dash(&r.language),
            description,
            sanitize(&r.dir),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in &table {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let mut notes: Vec<String> = trust_note.map(|n| format!("note: {}", sanitize(&n))).into_iter().collect();
    for r in rows {
        if let Some(err) = &r.exec_error {
            notes.push(format!("warning: {} {}: {}", r.scope, sanitize(&r.name), sanitize(err)));
        }
    }
    for r in rows {
        if let Some(err) = &r.error {
            notes.push(format!("error: {} {}: {}", r.scope, sanitize(&r.name), sanitize(err)));
        }
    }
    for r in rows {
        if let Some(by) = &r.shadowed_by {
            notes.push(format!(
                "note: {} {} ({}) is shadowed by {} and not loaded",
                r.scope,
                sanitize(&r.name),
                sanitize(&r.dir),
                sanitize(by)
            ));
        }
    }
    if !notes.is_empty() {
        text.push('\n');
        for n in notes {
            text.push_str(&n);
            text.push('\n');
        }
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(out_err)
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(3)).collect();
    t.push_str("...");
    t
}

// ---------------------------------------------------------------------------
// install

/// True when `source` names a git repository rather than a local folder:
/// `https://`, `http://`, `ssh://`, `git@`, `file://`, or ending in `.git`.
pub fn is_git_url(source: &str) -> bool {
    ["https://", "http://", "ssh://", "git@", "file://"].iter().any(|p| source.starts_with(p))
        || source.ends_with(".git")
}

/// A temporary directory inside `$ZOT_HOME/extensions` (hidden, so
/// discovery skips it), removed on drop unless kept.
struct Staging {
    path: PathBuf,
    keep: bool,
}

impl Staging {
    fn create(root: &Path) -> Res<Staging> {
        for n in 0u32.. {
            let path = root.join(format!(".zot-install-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Staging { path, keep: false }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 10_000 => continue,
                Err(e) => return Err(Fail::Msg(format!("cannot create {}: {e}", show(&path)))),
            }
        }
        Err(Fail::Msg(format!("cannot create a temporary directory in {}", show(root))))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.keep {
            let _ = remove_tree(&self.path);
        }
    }
}

fn install(home: &Home, source: &OsStr) -> Res {
    let as_path = Path::new(source);
    let source = match as_path.parent() {
        Some(dir) if as_path.file_name() == Some(OsStr::new(MANIFEST_FILE)) && as_path.is_file() => {
            if dir.as_os_str().is_empty() { OsStr::new(".") } else { dir.as_os_str() }
        }
        _ => source,
    };
    let text = source.to_string_lossy();
    let root = home.extensions_dir();
    fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", show(&root)))?;
    let git = is_git_url(&text);
    if !git {
        precheck_local(Path::new(source), &root)?;
    }
    let staging = Staging::create(&root)?;
    if git {
        clone(source, &staging.path)?;
        check_tree_links(&staging.path)?;
    } else {
        copy_tree(Path::new(source), &staging.path)?;
    }
    if fs::symlink_metadata(staging.path.join(MANIFEST_FILE)).is_err() {
        return Err(Fail::Msg(format!("{text} holds no {MANIFEST_FILE}: not an extension")));
    }
    let m = Manifest::load(&staging.path).map_err(|e| {
        format!("{text} holds no valid extension: {}", rebase(&e.to_string(), &staging.path, &text))
    })?;
    let dest = root.join(&m.name);
    let mut staging = staging;
    match rename_noreplace(&staging.path, &dest) {
        Ok(()) => staging.keep = true,
        Err(e)
            if matches!(e.kind(), io::ErrorKind::AlreadyExists)
                || e.raw_os_error() == Some(libc::ENOTEMPTY) =>
        {
            return Err(already_installed(&m.name, &dest));
        }
        Err(e) => {
            return Err(Fail::Msg(format!("cannot move the extension to {}: {e}", show(&dest))))
        }
    }
    let version = if m.version.is_empty() { String::new() } else { format!(" {}", m.version) };
    say(&format!("installed {}{version} to {}", m.name, show(&dest)))?;
    // Installed all the same: a bare `exec` may only be on PATH later.
    if let Err(e) = Manifest::load(&dest).and_then(|m| m.resolve_exec()) {
        eprintln!("{}", sanitize(&format!("zot: warning: {e}")));
    }
    Ok(())
}

/// Error messages about the staging copy name the source instead.
fn rebase(msg: &str, staging: &Path, source: &str) -> String {
    let canon = fs::canonicalize(staging).unwrap_or_else(|_| staging.to_path_buf());
    msg.replace(&show(&canon), source).replace(&show(staging), source)
}

fn already_installed(name: &str, dest: &Path) -> Fail {
    Fail::Msg(format!(
        "{name} is already installed at {}; remove it first with: zot ext remove {name}",
        show(dest)
    ))
}

/// Checks a local source before anything is written: a folder, holding a
/// valid manifest whose name is not installed yet, not containing the
/// extensions directory itself.
fn precheck_local(src: &Path, root: &Path) -> Res {
    match fs::metadata(src) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Fail::Msg(format!(
                "{}: not a directory (expected a folder holding {MANIFEST_FILE}, or a git URL)",
                show(src)
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Fail::Msg(format!("{}: no such directory", show(src))))
        }
        Err(e) => return Err(Fail::Msg(format!("{}: {e}", show(src)))),
    }
    let manifest_path = src.join(MANIFEST_FILE);
    if fs::symlink_metadata(&manifest_path).is_err() {
        return Err(Fail::Msg(format!("{} holds no {MANIFEST_FILE}: not an extension", show(src))));
    }
    let m = Manifest::load(src).map_err(|e| e.to_string())?;
    let dest = root.join(&m.name);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(already_installed(&m.name, &dest));
    }
    if let (Ok(s), Ok(r)) = (fs::canonicalize(src), fs::canonicalize(root)) {
        if r.starts_with(&s) {
            return Err(Fail::Msg(format!(
                "cannot install {}: it contains the extensions directory {}",
                show(src),
                show(root)
            )));
        }
    }
    Ok(())
}

/// Copies the contents of `src` into the existing directory `dst`, keeping
/// modes, recreating internal symbolic links, following none.
/// Top-level folders a local install leaves out (see the module header).
const SKIPPED: [&str; 2] = ["target", "node_modules"];

fn copy_tree(src: &Path, dst: &Path) -> Res {
    copy_dir(src, src, dst, true)?;
    let mut skipped = Vec::new();
    for dir in SKIPPED {
        if fs::symlink_metadata(src.join(dir)).is_ok_and(|m| m.is_dir()) {
            skipped.push(format!("{dir}/"));
        }
    }
    if !skipped.is_empty() {
        if let Ok(m) = Manifest::load(src) {
            for rel in std::iter::once(&m.exec).chain(&m.args) {
                copy_needed(src, dst, rel)?;
            }
        }
        eprintln!(
            "{}",
            sanitize(&format!(
                "zot: note: not copied: {} (build output and dependencies; only the files the manifest runs from them)",
                skipped.join(", ")
            ))
        );
    }
    let mode = fs::metadata(src).map_err(|e| format!("{}: {e}", show(src)))?.permissions().mode();
    fs::set_permissions(dst, fs::Permissions::from_mode((mode & 0o7777) | 0o700))
        .map_err(|e| Fail::Msg(format!("cannot set the mode of {}: {e}", show(dst))))
}

fn sorted_entries(dir: &Path) -> Res<Vec<OsString>> {
    let rd = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", show(dir)))?;
    let mut names = Vec::new();
    for entry in rd {
        names.push(entry.map_err(|e| format!("cannot read {}: {e}", show(dir)))?.file_name());
    }
    names.sort();
    Ok(names)
}

fn copy_dir(root: &Path, src: &Path, dst: &Path, top: bool) -> Res {
    for name in sorted_entries(src)? {
        if top && (name == ".git" || SKIPPED.iter().any(|s| name == *s)) {
            continue;
        }
        let sp = src.join(&name);
        let dp = dst.join(&name);
        let meta =
            fs::symlink_metadata(&sp).map_err(|e| format!("cannot read {}: {e}", show(&sp)))?;
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = check_link(root, &sp)?;
            std::os::unix::fs::symlink(&target, &dp)
                .map_err(|e| format!("cannot create the link {}: {e}", show(&dp)))?;
        } else if ft.is_dir() {
            fs::create_dir(&dp).map_err(|e| format!("cannot create {}: {e}", show(&dp)))?;
            copy_dir(root, &sp, &dp, false)?;
            fs::set_permissions(&dp, meta.permissions())
                .map_err(|e| format!("cannot set the mode of {}: {e}", show(&dp)))?;
        } else if ft.is_file() {
            copy_file(&sp, &dp)?;
        } else {
            return Err(Fail::Msg(format!(
                "refusing to install: {} is not a regular file, directory or symbolic link",
                show(&sp)
            )));
        }
    }
    Ok(())
}

/// Copies the file `rel` (a manifest's `exec` or argument, relative to
/// `src`) when it lies in a skipped top-level folder, creating its parents.
fn copy_needed(src: &Path, dst: &Path, rel: &str) -> Res {
    let parts: Vec<Component> =
        Path::new(rel).components().filter(|c| *c != Component::CurDir).collect();
    let Some(Component::Normal(first)) = parts.first() else { return Ok(()) };
    if !SKIPPED.iter().any(|s| *first == OsStr::new(s))
        || parts.iter().any(|c| !matches!(c, Component::Normal(_)))
    {
        return Ok(());
    }
    let relp: PathBuf = parts.iter().collect();
    let sp = src.join(&relp);
    let dp = dst.join(&relp);
    if !fs::symlink_metadata(&sp).is_ok_and(|m| m.is_file()) || dp.exists() {
        return Ok(());
    }
    if let Some(parent) = dp.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", show(parent)))?;
    }
    copy_file(&sp, &dp)
}

fn copy_file(src: &Path, dst: &Path) -> Res {
    let err =
        |what: &str, p: &Path, e: io::Error| Fail::Msg(format!("cannot {what} {}: {e}", show(p)));
    // O_NOFOLLOW: a file swapped for a link since it was looked at is not
    // followed; O_NONBLOCK: a file swapped for a FIFO does not hang us.
    let mut input = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(src)
        .map_err(|e| err("read", src, e))?;
    let meta = input.metadata().map_err(|e| err("read", src, e))?;
    if !meta.is_file() {
        return Err(Fail::Msg(format!("refusing to install: {} is not a regular file", show(src))));
    }
    let mut output = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dst)
        .map_err(|e| err("create", dst, e))?;
    io::copy(&mut input, &mut output).map_err(|e| err("copy", src, e))?;
    output
        .set_permissions(fs::Permissions::from_mode(meta.permissions().mode() & 0o7777))
        .map_err(|e| err("set the mode of", dst, e))
}

/// Checks the symbolic link `link` inside the tree `root` and returns its
/// target: it must be relative and, resolved lexically from the link's
/// directory, stay inside `root`; going up (`..`) after passing through
/// another link is refused too, since that would leave lexical ground.
fn check_link(root: &Path, link: &Path) -> Res<PathBuf> {
    let target =
        fs::read_link(link).map_err(|e| format!("cannot read the link {}: {e}", show(link)))?;
    let refuse = |why: &str| {
        Fail::Msg(format!(
            "refusing to install: the symbolic link {} -> {} {why}",
            show(link),
            show(&target)
        ))
    };
    let rel_dir = link
        .parent()
        .and_then(|p| p.strip_prefix(root).ok())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut stack: Vec<OsString> = rel_dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        })
        .collect();
    let mut through_link = false;
    for c in target.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("is absolute (it must point inside the extension)"))
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if through_link {
                    return Err(refuse("goes up (..) through another link"));
                }
                if stack.pop().is_none() {
                    return Err(refuse("points outside the extension"));
                }
            }
            Component::Normal(n) => {
                stack.push(n.to_os_string());
                if !through_link {
                    let p: PathBuf = stack.iter().collect();
                    through_link = fs::symlink_metadata(root.join(p))
                        .is_ok_and(|m| m.file_type().is_symlink());
                }
            }
        }
    }
    Ok(target)
}

/// Runs [`check_link`] on every link in the tree (not following any),
/// except inside a top-level `.git`.
fn check_tree_links(root: &Path) -> Res {
    fn walk(root: &Path, dir: &Path, top: bool) -> Res {
        for name in sorted_entries(dir)? {
            if top && name == ".git" {
                continue;
            }
            let p = dir.join(&name);
            let meta =
                fs::symlink_metadata(&p).map_err(|e| format!("cannot read {}: {e}", show(&p)))?;
            if meta.file_type().is_symlink() {
                check_link(root, &p)?;
            } else if meta.is_dir() {
                walk(root, &p, false)?;
            }
        }
        Ok(())
    }
    walk(root, root, true)
}

/// `git clone --depth 1 -- <url> <dir>` with the system git.
fn clone(url: &OsStr, dir: &Path) -> Res {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "protocol.ext.allow=never", "clone", "--depth", "1", "--"])
        .arg(url)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if !stdin_is_tty() {
        cmd.env("GIT_TERMINAL_PROMPT", "0");
    }
    let url = url.to_string_lossy();
    let out = cmd.output().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            format!("cannot install {url}: git is not installed (not found on PATH)")
        } else {
            format!("cannot run git: {e}")
        }
    })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // git's own reason is its `fatal:` line; hints may follow it.
    let last = stderr
        .lines()
        .find(|l| l.starts_with("fatal:"))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim();
    let status = match out.status.code() {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_string(),
    };
    Err(Fail::Msg(format!("git clone {url} failed ({status}): {last}")))
}

/// Renames `from` to `to`, failing with `AlreadyExists` instead of
/// replacing anything at `to` (atomically where the system allows).
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let f = CString::new(from.as_os_str().as_bytes())?;
        let t = CString::new(to.as_os_str().as_bytes())?;
        // SAFETY: both pointers are valid NUL-terminated strings that live
        // across the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(e);
        }
    }
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    fs::rename(from, to)
}

/// Removes a directory tree, first giving the owner write access to every
/// directory in it (a read-only directory would stop the removal). Follows
/// no symbolic link.
fn remove_tree(p: &Path) -> io::Result<()> {
    fn writable(p: &Path) {
        let Ok(m) = fs::symlink_metadata(p) else { return };
        if !m.is_dir() {
            return;
        }
        let mode = m.permissions().mode();
        if mode & 0o700 != 0o700 {
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode | 0o700));
        }
        if let Ok(rd) = fs::read_dir(p) {
            for e in rd.flatten() {
                writable(&e.path());
            }
        }
    }
    writable(p);
    fs::remove_dir_all(p)
}

// ---------------------------------------------------------------------------
// remove, enable, disable

fn stdin_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDIN_FILENO) == 1 }
}

fn remove(home: &Home, cwd: Option<&Path>, name: &str, yes: bool) -> Res {
    let e = lookup(home, cwd, name)?;
    let path = entry_path(&e);
    if !yes {
        if !stdin_is_tty() {
            return Err(Fail::Msg(format!(
                "not removing {name} without confirmation: stdin is not a terminal; pass --yes"
            )));
        }
        let mut err = io::stderr().lock();
        let _ = write!(err, "{}", sanitize(&format!("remove {name} at {}? [y/N] ", show(&path))));
        let _ = err.flush();
        drop(err);
        let mut answer = String::new();
        io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        let a = answer.trim().to_ascii_lowercase();
        if a != "y" && a != "yes" {
            return Err(Fail::Msg(format!("cancelled; {name} was not removed")));
        }
    }
    let meta = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", show(&path)))?;
    if meta.file_type().is_symlink() {
        fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", show(&path)))?;
        return say(&format!(
            "removed {name} (unlinked {}; its target {} was left alone)",
            show(&path),
            show(&e.dir)
        ));
    }
    remove_tree(&path).map_err(|e| format!("cannot remove {}: {e}", show(&path)))?;
    say(&format!("removed {name} ({})", show(&path)))
}

fn set_state(home: &Home, cwd: Option<&Path>, name: &str, enable: bool) -> Res {
    let e = lookup(home, cwd, name)?;
    let word = if enable { "enabled" } else { "disabled" };
    if e.manifest.as_ref().is_some_and(|m| m.enabled == enable) {
        return say(&format!("{name} is already {word}"));
    }
    set_enabled(&e.dir.join(MANIFEST_FILE), enable).map_err(|e| e.to_string())?;
    say(&format!("{word} {name}"))
}

// ---------------------------------------------------------------------------
// logs

fn logs(home: &Home, cwd: Option<&Path>, name: &str, follow: bool) -> Res {
    let found = matching(home, cwd, name)?;
    let mut log_names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
    log_names.sort_unstable();
    log_names.dedup();
    let name = match log_names[..] {
        [] => name,
        [one] => one,
        _ => return Err(ambiguous(name, &found)),
    };
    let path = home.log_path(name);
    if fs::metadata(&path).is_err() {
        if found.is_empty() {
            return Err(not_found(name));
        }
        if !follow {
            return say(&format!("no log for {name} yet ({})", show(&path)));
        }
        eprintln!("{}", sanitize(&format!("zot: waiting for {} to appear", show(&path))));
    }
    if follow {
        return follow_file(&path);
    }
    let mut f = File::open(&path).map_err(|e| format!("cannot read {}: {e}", show(&path)))?;
    let mut out = io::stdout().lock();
    copy_out(&mut f, &mut out, &path)?;
    out.flush().map_err(out_err)
}

/// Copies `r` to `out`, telling read errors from write errors.
fn copy_out(r: &mut impl Read, out: &mut impl Write, path: &Path) -> Res<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Fail::Msg(format!("cannot read {}: {e}", show(path)))),
        };
        out.write_all(&buf[..n]).map_err(out_err)?;
        total += n as u64;
    }
}

/// Prints the file and then whatever is appended to it, polling every
/// [`FOLLOW_POLL`], until killed or stdout closes. A file that shrinks was
/// truncated: it is read again from the start. A file replaced by another
/// one (rotation: a new inode at the path) is reopened once the old one is
/// drained.
fn follow_file(path: &Path) -> Res {
    let mut out = io::stdout().lock();
    // The open file, its (device, inode), and how much of it was printed.
    let mut current: Option<(File, (u64, u64), u64)> = None;
    loop {
        match fs::metadata(path) {
            Ok(meta) => {
                let id = (meta.dev(), meta.ino());
                if current.as_ref().is_some_and(|(_, cur, _)| *cur != id) {
                    if let Some((mut old, _, offset)) = current.take() {
                        drain(&mut old, offset, &mut out, path)?;
                    }
                }
                if current.is_none() {
                    match File::open(path) {
                        Ok(f) => current = Some((f, id, 0)),
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => {
                            return Err(Fail::Msg(format!("cannot read {}: {e}", show(path))))
                        }
                    }
                }
                if let Some((f, _, offset)) = current.as_mut() {
                    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                    if len < *offset {
                        eprintln!("{}", sanitize(&format!("zot: {}: file truncated", show(path))));
                        *offset = 0;
                    }
                    *offset = drain(f, *offset, &mut out, path)?;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Moved away (rotation in progress): print what was left.
                if let Some((mut old, _, offset)) = current.take() {
                    drain(&mut old, offset, &mut out, path)?;
                }
            }
            Err(e) => return Err(Fail::Msg(format!("cannot read {}: {e}", show(path)))),
        }
        out.flush().map_err(out_err)?;
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// Prints `f` from `offset` to its current end; returns the new offset.
fn drain(f: &mut File, offset: u64, out: &mut impl Write, path: &Path) -> Res<u64> {
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Fail::Msg(format!("cannot read {}: {e}", show(path))))?;
    let n = copy_out(f, out, path)?;
    Ok(offset + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_strips_controls() {
        assert_eq!(sanitize("a\x1b[31mb\x07c\u{7f}e\u{202e}f\tg\nh"), "abcef g h");
        assert_eq!(escape_json_controls("\"a\u{9b}b\u{7f}\""), "\"a\\u009bb\\u007f\"");
    }

    #[test]
    fn git_urls() {
        for u in ["https://x/y", "http://x", "ssh://x", "git@h:a/b", "file:///r", "./r.git"] {
            assert!(is_git_url(u), "{u}");
        }
        for u in ["./weather", "/abs/dir", "gitx"] {
            assert!(!is_git_url(u), "{u}");
        }
    }
}
