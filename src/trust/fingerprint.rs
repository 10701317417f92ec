//! The fingerprint of a project (PROTOCOL §7.3): one SHA-256 over
//! everything under `.zot` that decides what runs, walked in a fixed order.
//!
//! What goes in, each item tagged and length-prefixed:
//! - the format version ([`VERSION`]);
//! - `.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json` (§8.6), `.zot`,
//!   `.zot/mcp.json` and `.zot/extensions` as they are: absent, a
//!   file (mode and content), a folder, or a link (its text, then what it
//!   points to);
//! - the names of the folders in `.zot/extensions` that discovery would
//!   load (not hidden), in byte order;
//! - for each: the folder itself (a link by its text), then every entry
//!   under it in byte order, recursively, a top-level `.git` left out: a
//!   folder by its relative path and mode, a file by path, mode and
//!   content, a link by the text it holds and what it points to (a file by
//!   its mode and content, a folder outside the extension walked like the
//!   extension's own, once), anything else by its type; the manifest by
//!   its JSON without the `enabled` field and without its mode (`zot ext
//!   disable` rewrites it);
//! - then its `exec` and each argument that names an existing file, by
//!   canonical path and content, wherever they resolve, except a bare
//!   `exec` found on `$PATH` outside the project (the system's `python3`:
//!   only its name counts);
//! - then every other entry under `.zot`, walked the same way (what an
//!   extension or server loads from beside its folder: `.zot/node_modules`,
//!   hidden folders and loose files in `.zot/extensions`, a server's helper
//!   modules), and, for each server of the project's server files,
//!   its command and arguments as an extension's `exec` and `args`
//!   (resolved against the server's folder; a default folder that is the
//!   project root named `not covered`, not walked); a remote entry's
//!   `url` alone (it runs nothing here).
//!
//! - what runs from beyond: see [`reach`] (scripts, folders, interpreters
//!   and module paths outside `.zot`), and what a link reaches inside a
//!   left-out `.git/` (walked as any folder reached through a link).
//!
//! A folder or link that resolves outside the project is named in
//! [`Print::outside`]; what an interpreter may find that the fingerprint
//! cannot see, in [`Print::not_covered`]. More than [`MAX_ENTRIES`] entries or [`MAX_BYTES`]
//! of content is refused rather than fingerprinted in part.
//!
//! File contents are hashed once per (device, inode, size, mtime, ctime):
//! [`Cache`] remembers each file's digest under that key, so a warm check
//! only stats the tree. ctime cannot be set back by a project's files, so a
//! changed file never matches its old key. The extensions are walked on up
//! to four threads, each into its own digest, fed in folder order: the
//! result does not depend on the threads.

mod reach;
mod walk;

use super::cache::{Cache, Key, Segment};
use walk::{Counts, Walk};
use crate::sha256::Sha256;
use crate::manifest::{Manifest, MANIFEST_FILE};
use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The fingerprint format. A record of another format reads as changed.
pub const VERSION: u32 = 6;
/// Most entries (files, folders, links) one fingerprint covers.
pub const MAX_ENTRIES: usize = 20_000;
/// Most bytes of content one fingerprint covers.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// A computed fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Print {
    /// `sha256:<hex>`.
    pub digest: String,
    /// `.zot`, `.zot/extensions`, `.zot/mcp.json` or extension folders that
    /// are links or resolve outside the project, as `path -> target`.
    pub outside: Vec<String>,
    /// Folders an interpreter may find modules in on its own, which the
    /// fingerprint does not cover (a `node_modules` in or above the
    /// project, a virtual environment or module path outside `.zot`, the
    /// project's own folder when a script runs from it), each once.
    pub not_covered: Vec<String>,
    /// The digest of each project extension's part (`.zot/extensions/NAME`:
    /// its files and what it runs), in folder order, then `rest` for the
    /// part that is none of theirs (the server files, what their servers
    /// run, the rest of `.zot`): kept with a trust, so that a project
    /// changed since can say where.
    pub parts: Vec<(String, String)>,
}

/// The name of the part of a fingerprint that is no extension's.
pub const REST: &str = "rest";

/// Fingerprints `project` (canonical), hashing file contents through
/// `cache`; returns the print and the files it hashed (for
/// [`Cache::save`]).
pub fn compute<'c>(project: &Path, cache: &'c Cache) -> Result<(Print, Vec<Segment<'c>>), String> {
    let counts = Counts::default();
    let mut w = Walk::new(project, &counts, cache.segment(b""));
    w.rest = Some(Sha256::new());
    w.feed("zot-fingerprint", VERSION.to_string().as_bytes());
    let mut jobs: Vec<(String, PathBuf, PathBuf)> = Vec::new();
    let mut zot_dir: Option<PathBuf> = None;
    // The other clients' server files, and whether each exists (§8.6).
    for rel in &crate::mcpserver::files::PROJECT_FILES[1..] {
        w.top(rel, &project.join(rel))?;
    }
    if let Some(zot) = w.top(".zot", &project.join(".zot"))? {
        w.top(".zot/mcp.json", &zot.join("mcp.json"))?;
        zot_dir = Some(zot.clone());
        if let Some(exts) = w.top(".zot/extensions", &zot.join("extensions"))? {
            for name in w.folders(&exts)? {
                let rel = format!(".zot/extensions/{}", name.to_string_lossy());
                let path = exts.join(&name);
                if let Some(dir) = w.top(&rel, &path)? {
                    jobs.push((rel, path, dir));
                }
            }
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4).min(jobs.len());
    let mut done: Vec<(usize, Walked<'c>)> = if threads <= 1 {
        jobs.iter().enumerate().map(|(i, j)| (i, extension(project, &counts, cache, j))).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (jobs, counts) = (&jobs, &counts);
                    s.spawn(move || {
                        (t..jobs.len())
                            .step_by(threads)
                            .map(|i| (i, extension(project, counts, cache, &jobs[i])))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|_| vec![(0, Err("the fingerprint failed".to_string()))]))
                .collect()
        })
    };
    crate::order::sort_by(&mut done, |a, b| a.0.cmp(&b.0));
    let mut segments = Vec::new();
    let mut not_covered = Vec::new();
    let mut parts = Vec::new();
    for (i, r) in done {
        let (digest, seg, nc) = r?;
        w.feed("extension", &digest);
        parts.push((jobs[i].0.clone(), hex(&digest)));
        segments.push(seg);
        not_covered.extend(nc);
    }
    if let Some(zot) = zot_dir {
        w.rest(&zot, &jobs)?;
    }
    w.servers()?;
    w.not_covered.splice(0..0, not_covered);
    w.found_by_interpreters();
    let (digest, seg, outside, mut not_covered) = w.digest_with(&mut parts);
    let mut seen = HashSet::new();
    not_covered.retain(|p| seen.insert(p.clone()));
    segments.insert(0, seg);
    Ok((Print { digest: format!("sha256:{}", hex(&digest)), outside, not_covered, parts }, segments))
}

fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// An extension's digest, cache segment and what it cannot cover, or why
/// it has none.
type Walked<'c> = Result<([u8; 32], Segment<'c>, Vec<String>), String>;

/// One extension folder `dir` (reached as `path`): its tree, then what it
/// runs, into a digest of its own.
fn extension<'c>(project: &Path, counts: &Counts, cache: &'c Cache, job: &(String, PathBuf, PathBuf)) -> Walked<'c> {
    let (rel, path, dir) = job;
    let mut w = Walk::new(project, counts, cache.segment(rel.as_bytes()));
    w.root = fs::canonicalize(dir).map_err(|e| read_err(dir, e))?;
    w.left_out = vec![w.root.join(".git")];
    w.tree(dir, "", true)?;
    // Only a regular manifest is read (a FIFO there would hang the read).
    let regular = fs::metadata(path.join(MANIFEST_FILE)).is_ok_and(|m| m.is_file());
    match regular.then(|| Manifest::load(path)) {
        Some(Ok(m)) => w.runs(&m)?,
        _ => w.feed("invalid-manifest", rel.as_bytes()),
    }
    let (digest, seg, _, not_covered) = w.digest();
    Ok((digest, seg, not_covered))
}

fn read_err(p: &Path, e: io::Error) -> String {
    format!("cannot read {}: {e}", p.display())
}

impl<'a, 'c> Walk<'a, 'c> {
    fn new(project: &'a Path, counts: &'a Counts, seg: Segment<'c>) -> Walk<'a, 'c> {
        Walk {
            h: Sha256::new(),
            rest: None,
            buf: Vec::with_capacity(32 * 1024),
            project,
            counts,
            seg,
            outside: Vec::new(),
            walked: HashSet::new(),
            root: PathBuf::new(),
            skip: Vec::new(),
            left_out: Vec::new(),
            not_covered: Vec::new(),
        }
    }

    /// One tagged, length-prefixed item, buffered on its way to the hash
    /// (an extension's digest straight to it, past the `rest`).
    fn feed(&mut self, tag: &str, bytes: &[u8]) {
        if tag == "extension" && self.rest.is_some() {
            self.flush();
            let mut item = vec![tag.len() as u8];
            item.extend_from_slice(tag.as_bytes());
            item.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            item.extend_from_slice(bytes);
            self.h.update(&item);
            return;
        }
        self.buf.push(tag.len() as u8);
        self.buf.extend_from_slice(tag.as_bytes());
        self.buf.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.raw(bytes);
    }

    /// Bytes of a fixed size, right after the item they belong to.
    fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= 16 * 1024 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.h.update(&self.buf);
        if let Some(r) = &mut self.rest {
            r.update(&self.buf);
        }
        self.buf.clear();
    }

    fn digest(mut self) -> ([u8; 32], Segment<'c>, Vec<String>, Vec<String>) {
        self.flush();
        (self.h.finish(), self.seg, self.outside, self.not_covered)
    }

    /// [`Walk::digest`], `rest`'s digest added to `parts` as [`REST`].
    fn digest_with(mut self, parts: &mut Vec<(String, String)>) -> ([u8; 32], Segment<'c>, Vec<String>, Vec<String>) {
        self.flush();
        if let Some(r) = self.rest.take() {
            parts.push((REST.to_string(), hex(&r.finish())));
        }
        (self.h.finish(), self.seg, self.outside, self.not_covered)
    }

    fn count(&mut self, size: u64) -> Result<(), String> {
        let entries = self.counts.entries.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = self.counts.bytes.fetch_add(size, Ordering::Relaxed) + size;
        if entries > MAX_ENTRIES {
            return Err(format!(
                "{}: too large to fingerprint: more than {MAX_ENTRIES} files, folders and links under .zot (counting what its links point to)",
                self.project.display()
            ));
        }
        if bytes > MAX_BYTES {
            return Err(format!(
                "{}: too large to fingerprint: more than {} MiB of files under .zot (counting what its links point to)",
                self.project.display(),
                MAX_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// One of `.zot`, `.zot/mcp.json`, `.zot/extensions` or an extension
    /// folder: fed as it is; returns the folder to go on with, if it is
    /// one (through a link, the canonical target).
    fn top(&mut self, rel: &str, path: &Path) -> Result<Option<PathBuf>, String> {
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.feed("absent", rel.as_bytes());
                return Ok(None);
            }
            Err(e) => return Err(read_err(path, e)),
        };
        let real = fs::canonicalize(path).ok();
        if let Some(real) = &real {
            let named = self.outside.iter().any(|o| o.split(" -> ").next().is_some_and(|p| rel.starts_with(p)));
            if !real.starts_with(self.project) && !named {
                self.outside.push(format!("{rel} -> {}", real.display()));
            }
        }
        if meta.file_type().is_symlink() {
            self.count(0)?;
            let text = fs::read_link(path).map_err(|e| read_err(path, e))?;
            self.feed("link", rel.as_bytes());
            self.feed("text", text.as_os_str().as_bytes());
            let Some(real) = real else {
                self.feed("dangling", b"");
                return Ok(None);
            };
            let target = fs::metadata(&real).map_err(|e| read_err(&real, e))?;
            if target.is_dir() {
                self.feed("to-dir", real.as_os_str().as_bytes());
                return Ok(Some(real));
            }
            return self.leaf(rel, &real, &target).map(|()| None);
        }
        if meta.is_dir() {
            self.count(0)?;
            self.feed("dir", rel.as_bytes());
            self.feed("mode", &(meta.mode() & 0o7777).to_be_bytes());
            return Ok(Some(path.to_path_buf()));
        }
        self.leaf(rel, path, &meta).map(|()| None)
    }

    /// A file (mode and content) or a special file (its type), not a link
    /// or folder.
    fn leaf(&mut self, rel: &str, path: &Path, meta: &Metadata) -> Result<(), String> {
        let ft = meta.file_type();
        if ft.is_file() {
            self.count(meta.len())?;
            let digest = self.content(path, meta)?;
            self.feed("file", rel.as_bytes());
            self.raw(&(meta.mode() & 0o7777).to_le_bytes());
            self.raw(&digest);
        } else {
            self.count(0)?;
            let kind: &[u8] = if ft.is_fifo() {
                b"fifo"
            } else if ft.is_socket() {
                b"socket"
            } else if ft.is_block_device() || ft.is_char_device() {
                b"device"
            } else {
                b"other"
            };
            self.feed("special", rel.as_bytes());
            self.feed("kind", kind);
        }
        Ok(())
    }

    /// The SHA-256 of a regular file's content, from the cache when its
    /// key still matches.
    fn content(&mut self, path: &Path, meta: &Metadata) -> Result<[u8; 32], String> {
        let key = Key::of(meta);
        if let Some(d) = self.seg.get(path, &key) {
            self.seg.put(path, &key, &d);
            return Ok(d);
        }
        // O_NONBLOCK and O_NOFOLLOW: a file swapped for a FIFO or a link
        // since it was looked at neither hangs nor misleads the walk.
        let mut f = File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| read_err(path, e))?;
        if !f.metadata().map_err(|e| read_err(path, e))?.is_file() {
            return Err(format!("{}: changed while it was read", path.display()));
        }
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => h.update(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(read_err(path, e)),
            }
        }
        let d = h.finish();
        self.seg.put(path, &key, &d);
        Ok(d)
    }

    /// The folders of `.zot/extensions` discovery would load, in byte
    /// order, fed as a list.
    fn folders(&mut self, exts: &Path) -> Result<Vec<OsString>, String> {
        let rd = fs::read_dir(exts).map_err(|e| read_err(exts, e))?;
        let mut names: Vec<OsString> = Vec::new();
        for e in rd {
            let e = e.map_err(|e| read_err(exts, e))?;
            let name = e.file_name();
            if !name.as_bytes().starts_with(b".") && e.path().is_dir() {
                names.push(name);
            }
        }
        crate::order::sort(&mut names);
        let list: Vec<u8> = names.iter().flat_map(|n| n.as_bytes().iter().copied().chain([0])).collect();
        self.feed("folders", &list);
        Ok(names)
    }

    /// Every entry under `dir`, in byte order, recursively.
    fn tree(&mut self, dir: &Path, rel: &str, top: bool) -> Result<(), String> {
        let rd = fs::read_dir(dir).map_err(|e| read_err(dir, e))?;
        let mut entries: Vec<(OsString, Metadata)> = Vec::new();
        for e in rd {
            let e = e.map_err(|e| read_err(dir, e))?;
            let name = e.file_name();
            if (top && name == ".git") || self.skip.iter().any(|s| e.path() == *s) {
                continue;
            }
            let meta = e.metadata().map_err(|err| read_err(&e.path(), err))?;
            entries.push((name, meta));
        }
        crate::order::sort_by(&mut entries, |a, b| a.0.cmp(&b.0));
        for (name, meta) in entries {
            let path = dir.join(&name);
            let rel = format!("{rel}/{}", name.to_string_lossy());
            let ft = meta.file_type();
            if ft.is_symlink() {
                self.count(0)?;
                let text = fs::read_link(&path).map_err(|e| read_err(&path, e))?;
                self.feed("link", rel.as_bytes());
                self.feed("text", text.as_os_str().as_bytes());
                self.pointee(&rel, &path)?;
            } else if ft.is_dir() {
                self.count(0)?;
                self.feed("dir", rel.as_bytes());
                self.feed("mode", &(meta.mode() & 0o7777).to_be_bytes());
                self.tree(&path, &rel, false)?;
            } else if top && name == MANIFEST_FILE && ft.is_file() {
                self.count(meta.len())?;
                let bytes = fs::read(&path).map_err(|e| read_err(&path, e))?;
                self.feed("manifest", rel.as_bytes());
                self.feed("content", &without_enabled(&bytes));
            } else {
                self.leaf(&rel, &path, &meta)?;
            }
        }
        Ok(())
    }

    /// What the link at `path` points to: a file by mode and content, a
    /// folder outside the extension walked (once), nothing when dangling.
    fn pointee(&mut self, rel: &str, path: &Path) -> Result<(), String> {
        let Ok(real) = fs::canonicalize(path) else {
            self.feed("dangling", b"");
            return Ok(());
        };
        let meta = fs::metadata(&real).map_err(|e| read_err(&real, e))?;
        if !meta.is_dir() {
            return self.leaf(&format!("{rel}=>"), &real, &meta);
        }
        self.feed("to-dir", real.as_os_str().as_bytes());
        let left_out = self.left_out.iter().any(|g| real.starts_with(g));
        if real.starts_with(&self.root) && !left_out {
            // Walked as part of the extension, except what the walk leaves
            // out under it (`lib -> .` reaches `lib/.git`).
            let under: Vec<PathBuf> = self.left_out.iter().filter(|g| g.starts_with(&real) && g.is_dir()).cloned().collect();
            for g in under {
                if self.walked.insert(g.clone()) {
                    let below = g.strip_prefix(&real).unwrap_or(&g).to_string_lossy().into_owned();
                    self.tree(&g, &format!("{rel}=>/{below}"), false)?;
                }
            }
            return Ok(());
        }
        if !self.walked.insert(real.clone()) {
            // Already walked through another link.
            return Ok(());
        }
        self.feed("mode", &(meta.mode() & 0o7777).to_be_bytes());
        self.tree(&real, &format!("{rel}=>"), false)
    }

    /// The `exec` and the arguments that name existing files (a script
    /// outside `.zot` with its folder), the interpreters their `#!` lines
    /// name, the folders an argument, the working folder or an `env` value
    /// names ([`reach`]).
    fn runs(&mut self, m: &Manifest) -> Result<(), String> {
        self.runs_in(m, true)
    }

    /// [`Self::runs`]; `walk_root` false: a working folder that is the
    /// project root is fed by its path and named `not covered`, not walked.
    fn runs_in(&mut self, m: &Manifest, walk_root: bool) -> Result<(), String> {
        if !m.is_static() {
            let bare = !m.exec.contains('/');
            let named = m.resolve_exec().ok();
            if let Some(p) = &named {
                self.venv_of(p);
            }
            match named.and_then(|p| fs::canonicalize(p).ok()) {
                Some(real) if bare && !real.starts_with(self.project) => {
                    self.feed("exec-system", m.exec.as_bytes());
                }
                Some(real) => {
                    self.resolved("exec", &real)?;
                    self.script("exec", &real, m)?;
                }
                None => self.feed("exec-missing", m.exec.as_bytes()),
            }
        }
        for (i, arg) in m.args.iter().enumerate() {
            let tag = format!("arg{i}");
            let p = m.dir.join(arg);
            match fs::canonicalize(&p) {
                Ok(real) if !arg.is_empty() && real.is_file() => {
                    self.resolved(&tag, &real)?;
                    self.script(&tag, &real, m)?;
                }
                Ok(real) if !arg.is_empty() && real.is_dir() => self.folder(&tag, &real)?,
                // Not a path as a whole: the paths among its words
                // (`bash -c "python3 ../x.py"`, `--require=../x.js`,
                // `env PYTHONPATH=../lib python3 ...`).
                _ => {
                    self.feed(&tag, b"");
                    self.paths_in(&tag, arg, false, m)?;
                }
            }
        }
        match fs::canonicalize(&m.dir) {
            Ok(cwd) if !walk_root && cwd == self.project => {
                self.feed("cwd-root", cwd.as_os_str().as_bytes());
                self.name_not_covered(&cwd);
            }
            Ok(cwd) => self.folder("cwd", &cwd)?,
            Err(_) => {}
        }
        self.env_paths(m)
    }

    /// Everything else under `.zot` (the extension folders, `walked`, were
    /// walked on their own): what an extension or server loads from beside
    /// its own folder (`.zot/node_modules`, a hidden folder or a loose file
    /// in `.zot/extensions`, a server's helper modules); then what
    /// the servers of `.zot/mcp.json` run, each one's command and arguments
    /// as an extension's `exec` and `args`.
    fn rest(&mut self, zot: &Path, jobs: &[(String, PathBuf, PathBuf)]) -> Result<(), String> {
        self.root = fs::canonicalize(zot).map_err(|e| read_err(zot, e))?;
        self.skip = jobs.iter().map(|(_, path, _)| path.clone()).collect();
        self.left_out = jobs.iter().filter_map(|(_, _, dir)| fs::canonicalize(dir).ok()).map(|d| d.join(".git")).collect();
        self.tree(zot, ".zot", false)?;
        self.skip.clear();
        Ok(())
    }

    /// What the servers of the project's server files run (§8.6), each
    /// one's command and arguments as an extension's `exec` and `args`;
    /// a remote one's `url`.
    /// A server's default folder, the project root, is named `not covered`
    /// rather than walked (as a script's folder is when it is the root);
    /// a `cwd` the entry names is walked as a tree.
    fn servers(&mut self) -> Result<(), String> {
        let project = self.project.to_path_buf();
        for place in crate::mcpserver::files::project_files(&project) {
            if !fs::metadata(&place.path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            let Ok(Some(config)) = crate::mcpserver::files::read(&place) else {
                continue;
            };
            for spec in &config.servers {
                self.feed("server", spec.name.as_bytes());
                // A remote entry runs nothing here: no program, no folder
                // (its url and headers are in the file's own bytes).
                match &spec.remote {
                    Some(r) => self.feed("server-remote", r.url.as_bytes()),
                    None => self.runs_in(&spec.manifest(), spec.cwd_given)?,
                }
            }
        }
        Ok(())
    }

    fn resolved(&mut self, tag: &str, real: &Path) -> Result<(), String> {
        let meta = fs::metadata(real).map_err(|e| read_err(real, e))?;
        self.feed(tag, real.as_os_str().as_bytes());
        self.leaf(tag, real, &meta)
    }
}

/// A manifest's bytes without its top-level `enabled` field, in one
/// canonical form; bytes that are not a JSON object as they are.
fn without_enabled(bytes: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(serde_json::Value::Object(mut o)) => {
            o.remove("enabled");
            serde_json::to_vec(&o).unwrap_or_else(|_| bytes.to_vec())
        }
        _ => bytes.to_vec(),
    }
}
