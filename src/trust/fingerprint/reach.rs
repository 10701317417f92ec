//! What a project's extensions and servers run from beyond `.zot`
//! (docs/protocol.md §7.3), fed into the same walk:
//! - a script named by `exec` or an argument that lies in the project but
//!   outside `.zot`: its whole folder, as a tree (its helper modules),
//!   unless that folder is the project's own, which is named
//!   [`not covered`](super::Print::not_covered) instead;
//! - a folder an argument or the working folder names inside the project:
//!   that folder as a tree; the project's own folder without its `.git`,
//!   `.zot` (walked already) and `node_modules` (named instead);
//! - every `env` value that names existing paths (each entry of a
//!   `:`-separated list, relative ones against the folder the process runs
//!   in): inside the project, each as a tree or a file; outside it, a
//!   module path (`PYTHONPATH`, `NODE_PATH`, `VIRTUAL_ENV`, any `...PATH`
//!   or `...LIB` but `PATH`) is named;
//! - the interpreter a script's `#!` line names by a relative path
//!   (against the folder it runs in), or through `/usr/bin/env NAME` with
//!   a `PATH` the manifest sets, by content;
//! - named, not walked: a `node_modules` in the project or any folder
//!   above it, `__pypackages__` in the project, and the `VIRTUAL_ENV` and
//!   `PYTHONPATH` of the environment `zot trust` runs in, outside `.zot`.

use super::walk::Walk;
use crate::manifest::Manifest;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The bytes of a `#!` line read.
const SHEBANG_MAX: usize = 256;

impl Walk<'_, '_> {
    /// `real` (canonical) is inside the project, outside `.zot`.
    fn beyond_zot(&self, real: &Path) -> bool {
        real.starts_with(self.project) && !real.starts_with(self.project.join(".zot"))
    }

    /// `real` (canonical) is in the project where the walk of `.zot` does
    /// not go on its own: beyond `.zot`, or inside a `.git` under it (an
    /// extension's own `.git` is left out of its tree).
    fn unwalked(&self, real: &Path) -> bool {
        self.beyond_zot(real)
            || real.strip_prefix(self.project.join(".zot")).is_ok_and(|r| r.components().any(|c| c.as_os_str() == ".git"))
    }

    pub(super) fn name_not_covered(&mut self, p: &Path) {
        let p = p.display().to_string();
        if !self.not_covered.contains(&p) {
            self.not_covered.push(p);
        }
    }

    /// A file that runs (an `exec`, a script argument): its folder when it
    /// lies beyond `.zot`, and the interpreter its `#!` line names.
    pub(super) fn script(&mut self, tag: &str, real: &Path, m: &Manifest) -> Result<(), String> {
        if self.unwalked(real) {
            if let Some(dir) = real.parent() {
                if dir == self.project {
                    self.name_not_covered(dir);
                } else {
                    self.folder(&format!("{tag}-dir"), dir)?;
                }
            }
        }
        self.interpreter(tag, real, m)
    }

    /// The folder `real` (canonical) as a tree, once, when it lies in the
    /// project beyond `.zot`; only its path otherwise.
    pub(super) fn folder(&mut self, tag: &str, real: &Path) -> Result<(), String> {
        if !self.unwalked(real) {
            return Ok(());
        }
        self.feed(tag, real.as_os_str().as_bytes());
        if !self.walked.insert(real.to_path_buf()) {
            return Ok(());
        }
        let saved = std::mem::take(&mut self.skip);
        if real == self.project {
            self.skip = [".git", ".zot", "node_modules"].iter().map(|n| real.join(n)).collect();
            if real.join("node_modules").is_dir() {
                self.name_not_covered(&real.join("node_modules"));
            }
        }
        let walked = self.tree(real, &format!("{tag}=>"), false);
        self.skip = saved;
        walked
    }

    /// What the manifest's `env` names on disk: every path among the
    /// words of each value (`NODE_OPTIONS=--require ../x.js`), each entry
    /// of a `:`-separated list.
    pub(super) fn env_paths(&mut self, m: &Manifest) -> Result<(), String> {
        let env = crate::envexpand::expand_from_env(m.env()).unwrap_or_else(|_| m.env().to_vec());
        for (name, value) in &env {
            let module_path = name == "VIRTUAL_ENV" || (name != "PATH" && (name.ends_with("PATH") || name.ends_with("LIB")));
            self.paths_in(&format!("env-{name}"), value, module_path, m)?;
        }
        Ok(())
    }

    /// The paths named among the words of `text` (an argument that is not
    /// a path as a whole, an `env` value, the rest of a `#!` line): each
    /// word, without quotes and without what comes before a `=`
    /// (`--require=../x.js`, `PYTHONPATH=../lib`), each entry of a
    /// `:`-separated list, against the folder the process runs in. In the
    /// project: a file as a script (its folder with it), a folder as a
    /// tree; outside it, named when `named_outside`.
    pub(super) fn paths_in(&mut self, tag: &str, text: &str, named_outside: bool, m: &Manifest) -> Result<(), String> {
        let words = text.split(|c: char| c.is_ascii_whitespace() || c == ';' || c == '&' || c == '|' || c == '(' || c == ')');
        for (i, word) in words.enumerate() {
            let word = word.trim_matches(|c| c == '"' || c == '\'' || c == '`');
            let word = match word.find('=') {
                Some(k) if !word[..k].contains('/') => &word[k + 1..],
                _ => word,
            };
            for (j, entry) in word.split(':').enumerate() {
                if entry.is_empty() || !(entry.contains('/') || entry.starts_with('.')) {
                    continue;
                }
                let Ok(real) = fs::canonicalize(m.dir.join(entry)) else { continue };
                let tag = format!("{tag}-{i}-{j}");
                if real.starts_with(self.project) {
                    if real.is_dir() {
                        self.folder(&tag, &real)?;
                    } else if real.is_file() && self.unwalked(&real) {
                        self.resolved(&tag, &real)?;
                        self.script(&tag, &real, m)?;
                    }
                } else if named_outside {
                    self.name_not_covered(&real);
                }
            }
        }
        Ok(())
    }

    /// The root of the virtual environment `exec` (as named, not resolved)
    /// lies in when it is in the project (`.venv/bin/python3`, a link to
    /// the system's): its modules and `.pth` files are found by the
    /// interpreter and are not fingerprinted, so it is named.
    pub(super) fn venv_of(&mut self, exec: &Path) {
        let Some(root) = exec.parent().and_then(Path::parent) else { return };
        if !root.join("pyvenv.cfg").is_file() {
            return;
        }
        if let Ok(real) = fs::canonicalize(root) {
            if real.starts_with(self.project) {
                self.name_not_covered(&real);
            }
        }
    }

    /// The interpreter the `#!` line of `script` names by a relative path,
    /// or through `env` with the manifest's `PATH`, by content.
    fn interpreter(&mut self, tag: &str, script: &Path, m: &Manifest) -> Result<(), String> {
        let Some(line) = shebang(script) else { return Ok(()) };
        let mut words = line.split_ascii_whitespace();
        let Some(interp) = words.next() else { return Ok(()) };
        let tag = format!("{tag}-interp");
        // What the rest of the line names (`#!/bin/sh ../x.sh`,
        // `#!/usr/bin/env -S node --require ../x.js`).
        let rest: Vec<&str> = line.split_ascii_whitespace().skip(1).collect();
        self.paths_in(&format!("{tag}-args"), &rest.join(" "), false, m)?;
        if !interp.starts_with('/') {
            if let Ok(real) = fs::canonicalize(m.dir.join(interp)) {
                if real.is_file() {
                    self.resolved(&tag, &real)?;
                }
            }
            return Ok(());
        }
        if !interp.ends_with("/env") {
            return Ok(());
        }
        let Some(name) = words.find(|w| !w.starts_with('-') && !w.contains('=')) else { return Ok(()) };
        let Some((_, path)) = m.env().iter().find(|(k, _)| k == "PATH") else { return Ok(()) };
        let path = crate::envexpand::expand_from_env(&[("PATH".to_string(), path.clone())])
            .ok()
            .and_then(|e| e.into_iter().next())
            .map_or_else(|| path.clone(), |(_, v)| v);
        let found: Option<PathBuf> = path
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|d| m.dir.join(d).join(name))
            .find(|p| p.is_file())
            .and_then(|p| fs::canonicalize(p).ok());
        match found {
            Some(real) => self.resolved(&tag, &real),
            None => Ok(()),
        }
    }

    /// Names what interpreters find on their own (see the module's notes).
    pub(super) fn found_by_interpreters(&mut self) {
        let mut found: Vec<PathBuf> = self.project.ancestors().map(|d| d.join("node_modules")).filter(|p| p.is_dir()).collect();
        found.push(self.project.join("__pypackages__"));
        let zot = self.project.join(".zot");
        for var in ["VIRTUAL_ENV", "PYTHONPATH"] {
            let value = std::env::var_os(var).unwrap_or_default();
            for entry in value.as_bytes().split(|&b| b == b':').filter(|e| e.starts_with(b"/")) {
                found.push(PathBuf::from(std::ffi::OsStr::from_bytes(entry)));
            }
        }
        for p in found {
            if let Ok(real) = fs::canonicalize(&p) {
                if real.is_dir() && !real.starts_with(&zot) {
                    self.name_not_covered(&real);
                }
            }
        }
    }
}

/// The `#!` line of the regular file `p`, without `#!`, when it has one.
fn shebang(p: &Path) -> Option<String> {
    let mut f = File::options().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(p).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = [0u8; SHEBANG_MAX];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let head = buf[..n].strip_prefix(b"#!")?;
    let line = head.split(|&b| b == b'\n').next()?;
    Some(String::from_utf8_lossy(line).trim().to_string())
}
