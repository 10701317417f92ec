//! The git repositories a `write` grant holds, at any depth (docs/protocol.md
//! §9.1), and what in each stays read-only: what is written there runs
//! later, unconfined, in the user's own `git`. A repository is a folder
//! holding a `.git` folder, a `.git` file (`gitdir: PATH`: a worktree, a
//! submodule's checkout) or a link named `.git`, or a bare repository
//! (`HEAD`, `objects/` and `refs/` together). Of each git dir its
//! `config`, `config.worktree`, `commondir` and `hooks/` are kept, and so
//! are those of its submodules (`modules/NAME`, at any depth) and of its
//! worktrees (`worktrees/NAME`); every `.git` file and link is kept too,
//! and a folder that cannot be listed, whole. So are the paths a git dir's
//! config names for git to run or read more settings from: `core.hooksPath`
//! and `include.path` / `includeIf.*.path`, followed through the files
//! included (a relative hooks path is kept against the work tree and the
//! git dir alike). A kept path that does not exist is kept all the same:
//! what is created there later would be run, or read, as well.

use std::path::{Path, PathBuf};

/// How many folder entries one `write` grant is looked through, at most.
pub const BUDGET: usize = 100_000;

/// What a git dir holds that git reads its settings or runs code from.
const KEPT: [&str; 4] = ["config", "config.worktree", "commondir", "hooks"];

/// How deep `include.path` is followed (git's own bound).
const INCLUDE_DEPTH: usize = 10;

/// The walk of one grant.
struct Walk<'a> {
    /// The grant's folder, resolved: nothing outside it is named.
    root: &'a Path,
    budget: usize,
    out: Vec<PathBuf>,
    /// Git dirs already taken (one reached by a `.git` file and its folder).
    seen: Vec<PathBuf>,
    /// Config files already read, with the git dir they were read for.
    configs: std::collections::HashSet<(PathBuf, PathBuf)>,
}

/// The existing paths under `root` (a resolved folder) that stay
/// read-only under a `write` of it, as named under it; `Err` when it
/// holds more than `budget` entries to look through.
pub fn kept(root: &Path, budget: usize) -> Result<Vec<PathBuf>, ()> {
    let mut w = Walk { root, budget, out: Vec::new(), seen: Vec::new(), configs: Default::default() };
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
                    w.git_dir(&path, Some(&dir))?;
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
            w.git_dir(&dir, None)?;
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
            self.git_dir(&real, Some(dir))?;
        }
        Ok(())
    }

    /// A git dir (of the work tree `work`, when known): what it keeps,
    /// what its config names, its submodules' and its worktrees'.
    fn git_dir(&mut self, g: &Path, work: Option<&Path>) -> Result<(), ()> {
        if self.seen.iter().any(|s| s == g) {
            return Ok(());
        }
        self.seen.push(g.to_path_buf());
        for k in KEPT {
            self.out.push(g.join(k));
        }
        for file in ["config", "config.worktree"] {
            self.named_by(&g.join(file), g, work, 0)?;
        }
        for (sub, nested) in [("modules", true), ("worktrees", false)] {
            let Ok(rd) = std::fs::read_dir(g.join(sub)) else { continue };
            for e in rd.flatten() {
                self.spend()?;
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    if nested {
                        self.module(&e.path())?;
                    } else {
                        self.git_dir(&e.path(), None)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// What the config file `file` of git dir `g` names for git to run
    /// (`core.hooksPath`) or to read settings from (`include.path`,
    /// `includeIf.*.path`, each included file followed in turn).
    fn named_by(&mut self, file: &Path, g: &Path, work: Option<&Path>, depth: usize) -> Result<(), ()> {
        use std::io::Read;
        // Each file read once per git dir, whatever includes it again.
        let read_as = (g.to_path_buf(), file.to_path_buf());
        if !self.configs.insert(read_as) {
            return Ok(());
        }
        let mut text = String::new();
        let Ok(f) = std::fs::File::open(file) else { return Ok(()) };
        if f.take(1 << 20).read_to_string(&mut text).is_err() {
            return Ok(());
        }
        self.spend()?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let expand = |v: &str| match v.strip_prefix("~/") {
            Some(rest) => home.as_ref().map(|h| h.join(rest)),
            None => Some(PathBuf::from(v)),
        };
        for (section, key, value) in settings(&text) {
            let Some(v) = expand(&value).filter(|v| !v.as_os_str().is_empty()) else { continue };
            match (section.as_str(), key.as_str()) {
                ("core", "hookspath") if v.is_absolute() => self.out.push(v),
                ("core", "hookspath") => self.out.extend(work.into_iter().chain([g]).map(|base| base.join(&v))),
                ("include" | "includeif.", "path") => {
                    let v = if v.is_absolute() { v } else { file.parent().unwrap_or(g).join(v) };
                    self.out.push(v.clone());
                    if depth < INCLUDE_DEPTH {
                        self.named_by(&v, g, work, depth + 1)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// An entry of `modules/`: a submodule's git dir, or a folder of them
    /// (a submodule named `a/b` is kept in `modules/a/b`).
    fn module(&mut self, m: &Path) -> Result<(), ()> {
        if m.join("HEAD").exists() || m.join("config").exists() {
            return self.git_dir(m, None);
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

/// The settings of a git config file as git reads them: `(section, key,
/// value)`, section and key in lower case (a section with a subsection
/// as `section.`: the subsection itself is not kept), the value unquoted and unescaped, a
/// comment (`#`, `;`) outside quotes dropped, a line ending in `\` joined
/// with the next; a key with no `=` is a boolean and has the value `true`.
fn settings(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.trim_start().to_string();
        if line.starts_with('[') {
            let Some(end) = line.find(']') else { continue };
            let head = &line[1..end];
            // `[section "sub"]`, or the old `[section.sub]`: kept as
            // `section.` when it has a subsection.
            let name = head.split([' ', '"', '.']).next().unwrap_or("");
            section = name.to_ascii_lowercase();
            if head.trim_end().len() > name.len() {
                section.push('.');
            }
            line = line[end + 1..].trim_start().to_string();
            if line.is_empty() {
                continue;
            }
        }
        if line.starts_with(['#', ';']) || line.is_empty() {
            continue;
        }
        let (key, raw) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), v.to_string()),
            None => {
                out.push((section.clone(), line.trim().to_ascii_lowercase(), "true".into()));
                continue;
            }
        };
        let mut value = String::new();
        // Unquoted spaces, kept only when more of the value follows.
        let mut space = String::new();
        let mut raw = raw;
        let mut quoted = false;
        'value: loop {
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                let add = match c {
                    '"' => {
                        quoted = !quoted;
                        None
                    }
                    '#' | ';' if !quoted => break 'value,
                    '\\' => match chars.next() {
                        None => {
                            // Continued on the next line.
                            raw = lines.next().unwrap_or("").to_string();
                            continue 'value;
                        }
                        Some('n') => Some('\n'),
                        Some('t') => Some('\t'),
                        Some(other) => Some(other),
                    },
                    c if c.is_whitespace() && !quoted => {
                        if !value.is_empty() {
                            space.push(c);
                        }
                        None
                    }
                    c => Some(c),
                };
                if let Some(c) = add {
                    value.push_str(&std::mem::take(&mut space));
                    value.push(c);
                }
            }
            break;
        }
        out.push((section.clone(), key, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_as_git_reads_them() {
        let text = "[Core]\n\tHooksPath = \"my hooks\" # why\n[core \"x\"]\n\thooksPath = no\n[include]\n  path = a\\\n/b ; c\n\tbare\n[includeIf \"gitdir:~/\"] path = ~/x\n";
        let got = settings(text);
        let want = [("core", "hookspath", "my hooks"), ("core.", "hookspath", "no"), ("include", "path", "a/b"), ("include", "bare", "true"), ("includeif.", "path", "~/x")];
        let want: Vec<(String, String, String)> = want.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_grant_with_more_entries_than_the_budget_is_refused_and_one_within_it_is_walked() {
        let t = std::env::temp_dir().join(format!("zot-gitdirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("a/b/c/.git/hooks")).unwrap();
        std::fs::write(t.join("a/b/c/.git/config"), "").unwrap();
        let t = t.canonicalize().unwrap();
        // Those that do not exist yet are kept too; reading the config costs one.
        let mut want: Vec<PathBuf> = KEPT.iter().map(|k| t.join("a/b/c/.git").join(k)).collect();
        want.sort();
        let mut got = kept(&t, 5).unwrap();
        got.sort();
        assert_eq!(got, want);
        assert_eq!(kept(&t, 4), Err(()));
        let _ = std::fs::remove_dir_all(&t);
    }
}
