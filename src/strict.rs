//! Installed files that other users could change, as OpenSSH's
//! `StrictModes` looks for them: anything in an extension's folder that is
//! group- or world-writable, or not owned by the user running zot. An
//! extension's files decide what zot runs; `zot ext doctor` reports them
//! with the fix.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Most entries looked at in one folder.
const MAX_WALK: usize = 20_000;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Group or others may write to it; its mode.
    Writable(PathBuf, u32),
    /// Owned by another user; their uid.
    Owner(PathBuf, u32),
}

/// Everything under `dir` (itself included, links not followed) others
/// could change, in walk order.
pub fn check(dir: &Path) -> Vec<Problem> {
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        if seen > MAX_WALK {
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.uid() != me {
            out.push(Problem::Owner(p.clone(), meta.uid()));
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o022 != 0 {
            out.push(Problem::Writable(p.clone(), mode));
        }
        if meta.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                crate::order::sort(&mut names);
                stack.extend(names.into_iter().rev());
            }
        }
    }
    out
}

/// The findings for `problems` under `dir`: (message, fix), at most one of
/// each kind; more than three paths are fixed for the whole folder.
pub fn describe(dir: &Path, problems: &[Problem]) -> Vec<(String, String)> {
    let quote = |p: &Path| {
        let t = p.display().to_string();
        if t.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b)) {
            t
        } else {
            format!("'{}'", t.replace('\'', "'\\''"))
        }
    };
    let list = |v: &[String]| {
        let more = if v.len() > 3 { format!(" and {} more", v.len() - 3) } else { String::new() };
        format!("{}{more}", v.iter().take(3).cloned().collect::<Vec<_>>().join(", "))
    };
    let mut out = Vec::new();
    let writable: Vec<&PathBuf> = problems.iter().filter_map(|p| if let Problem::Writable(p, _) = p { Some(p) } else { None }).collect();
    if !writable.is_empty() {
        let shown: Vec<String> = problems
            .iter()
            .filter_map(|p| if let Problem::Writable(p, m) = p { Some(format!("{} (mode {m:04o})", p.display())) } else { None })
            .collect();
        let fix = if writable.len() > 3 {
            format!("chmod -R go-w {}", quote(dir))
        } else {
            format!("chmod go-w {}", writable.iter().map(|p| quote(p)).collect::<Vec<_>>().join(" "))
        };
        out.push((format!("installed files other users can write to, so they could change what runs: {}", list(&shown)), fix));
    }
    let owned: Vec<&PathBuf> = problems.iter().filter_map(|p| if let Problem::Owner(p, _) = p { Some(p) } else { None }).collect();
    if !owned.is_empty() {
        let shown: Vec<String> = problems
            .iter()
            .filter_map(|p| if let Problem::Owner(p, u) = p { Some(format!("{} (uid {u})", p.display())) } else { None })
            .collect();
        // SAFETY: geteuid has no failure mode.
        let me = unsafe { libc::geteuid() };
        let fix = if owned.len() > 3 {
            format!("chown -R {me} {} (or reinstall the extension)", quote(dir))
        } else {
            format!("chown {me} {} (or reinstall the extension)", owned.iter().map(|p| quote(p)).collect::<Vec<_>>().join(" "))
        };
        out.push((format!("installed files not owned by you, so their owner could change what runs: {}", list(&shown)), fix));
    }
    out
}
