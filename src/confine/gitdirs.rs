//! The git repositories a `write` grant holds, at any depth (docs/protocol.md
//! §9.1), and what in each stays read-only: what is written there runs
//! later, unconfined, in the user's own `git`. A repository is a folder
//! holding a `.git` folder, a `.git` file (`gitdir: PATH`: a worktree, a
//! submodule's checkout) or a link named `.git`, or a bare repository
//! (`HEAD`, `objects/` and `refs/` together). Of each git dir its
//! `config`, `config.worktree`, `commondir` and `hooks/` are kept, and so
//! are those of its submodules (`modules/NAME`, at any depth) and of its
//! worktrees (`worktrees/NAME`); every `.git` file and link is kept too,
//! and a folder that cannot be listed, whole.

use std::path::{Path, PathBuf};

/// How many folder entries one `write` grant is looked through, at most.
pub const BUDGET: usize = 100_000;

/// What a git dir holds that git reads its settings or runs code from.
const KEPT: [&str; 4] = ["config", "config.worktree", "commondir", "hooks"];

/// The walk of one grant.
struct Walk<'a> {
    /// The grant's folder, resolved: nothing outside it is named.
    root: &'a Path,
    budget: usize,
    out: Vec<PathBuf>,
    /// Git dirs already taken (one reached by a `.git` file and its folder).
    seen: Vec<PathBuf>,
}

/// The existing paths under `root` (a resolved folder) that stay
/// read-only under a `write` of it, as named under it; `Err` when it
/// holds more than `budget` entries to look through.
pub fn kept(root: &Path, budget: usize) -> Result<Vec<PathBuf>, ()> {
    let mut w = Walk { root, budget, out: Vec::new(), seen: Vec::new() };
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        // A folder that cannot be listed may still hold a repository the
        // extension reaches by name: it is kept read-only whole.
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => {
                w.out.push(dir);
                continue;
            }
        };
        let mut names = Vec::new();
        for e in rd.flatten() {
            w.spend()?;
            let Ok(ft) = e.file_type() else { continue };
            names.push(e.file_name());
            let path = e.path();
            if e.file_name() == ".git" {
                if ft.is_dir() {
                    w.git_dir(&path)?;
                } else {
                    w.dot_git(&dir, &path, ft.is_symlink())?;
                }
            } else if ft.is_dir() {
                stack.push(path);
            }
        }
        // A bare repository: its folders are not walked as a checkout.
        let has = |n: &str| names.iter().any(|x| x == n);
        if has("HEAD") && has("objects") && has("refs") {
            stack.retain(|p| !p.starts_with(&dir));
            w.git_dir(&dir)?;
        }
    }
    Ok(w.out)
}

impl Walk<'_> {
    fn spend(&mut self) -> Result<(), ()> {
        self.budget = self.budget.checked_sub(1).ok_or(())?;
        Ok(())
    }

    /// A `.git` file or link in `dir`: kept itself, and the git dir it
    /// names when that lies in the grant.
    fn dot_git(&mut self, dir: &Path, file: &Path, link: bool) -> Result<(), ()> {
        let named = if link {
            std::fs::read_link(file).ok().map(|t| dir.join(t))
        } else {
            let mut text = String::new();
            use std::io::Read;
            let read = std::fs::File::open(file).and_then(|f| f.take(4096).read_to_string(&mut text));
            read.ok().and_then(|_| text.lines().next().and_then(|l| l.strip_prefix("gitdir:")).map(|t| dir.join(t.trim())))
        };
        self.out.push(file.to_path_buf());
        if let Some(real) = named.and_then(|n| n.canonicalize().ok()).filter(|r| r.starts_with(self.root) && r.is_dir()) {
            self.git_dir(&real)?;
        }
        Ok(())
    }

    /// A git dir: what it keeps, its submodules' and its worktrees'.
    fn git_dir(&mut self, g: &Path) -> Result<(), ()> {
        if self.seen.iter().any(|s| s == g) {
            return Ok(());
        }
        self.seen.push(g.to_path_buf());
        for k in KEPT {
            let p = g.join(k);
            if std::fs::symlink_metadata(&p).is_ok() {
                self.out.push(p);
            }
        }
        for (sub, nested) in [("modules", true), ("worktrees", false)] {
            let Ok(rd) = std::fs::read_dir(g.join(sub)) else { continue };
            for e in rd.flatten() {
                self.spend()?;
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    if nested {
                        self.module(&e.path())?;
                    } else {
                        self.git_dir(&e.path())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// An entry of `modules/`: a submodule's git dir, or a folder of them
    /// (a submodule named `a/b` is kept in `modules/a/b`).
    fn module(&mut self, m: &Path) -> Result<(), ()> {
        if m.join("HEAD").exists() || m.join("config").exists() {
            return self.git_dir(m);
        }
        let Ok(rd) = std::fs::read_dir(m) else { return Ok(()) };
        for e in rd.flatten() {
            self.spend()?;
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                self.module(&e.path())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_with_more_entries_than_the_budget_is_refused_and_one_within_it_is_walked() {
        let t = std::env::temp_dir().join(format!("zot-gitdirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("a/b/c/.git/hooks")).unwrap();
        std::fs::write(t.join("a/b/c/.git/config"), "").unwrap();
        let t = t.canonicalize().unwrap();
        let mut want = vec![t.join("a/b/c/.git/config"), t.join("a/b/c/.git/hooks")];
        want.sort();
        let mut got = kept(&t, 4).unwrap();
        got.sort();
        assert_eq!(got, want);
        assert_eq!(kept(&t, 3), Err(()));
        let _ = std::fs::remove_dir_all(&t);
    }
}
