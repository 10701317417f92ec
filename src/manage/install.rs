//! `zot ext install`: a local folder copied or a git URL cloned into a
//! hidden staging directory, checked, then moved into
//! `$ZOT_HOME/extensions/<name>` without replacing anything; on any failure
//! nothing is left behind.

use crate::home::Home;
use crate::manifest::{Manifest, MANIFEST_FILE};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::tree::{check_tree_links, copy_tree, mask_tree, remove_tree};
use super::out::{say, show, stdin_is_tty, Fail, Res};

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
            match std::os::unix::fs::DirBuilderExt::mode(&mut fs::DirBuilder::new(), 0o700).create(&path) {
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

pub(super) fn install(home: &Home, source: &OsStr) -> Res {
    let as_path = Path::new(source);
    // A server configuration is not an extension: its servers go in a file.
    if as_path.is_file() && crate::mcpserver::config::read_file(as_path).is_ok_and(|f| f.is_some()) {
        let global = home.root().join(crate::mcpserver::config::MCP_FILE);
        return Err(Fail::Msg(format!(
            "{} holds MCP servers, not an extension: edit {} to add them (or pass --mcp-config {})",
            as_path.display(),
            global.display(),
            as_path.display()
        )));
    }
    let source = match as_path.parent() {
        Some(dir) if as_path.file_name() == Some(OsStr::new(MANIFEST_FILE)) && as_path.is_file() => {
            if dir.as_os_str().is_empty() { OsStr::new(".") } else { dir.as_os_str() }
        }
        _ => source,
    };
    let text = source.to_string_lossy();
    let root = home.extensions_dir();
    crate::home::create_private_dir(&root).map_err(|e| format!("cannot create {}: {e}", show(&root)))?;
    let git = is_git_url(&text);
    if !git {
        precheck_local(Path::new(source), &root)?;
    }
    let staging = Staging::create(&root)?;
    if git {
        clone(source, &staging.path)?;
        check_tree_links(&staging.path)?;
        mask_tree(&staging.path)?;
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
    name_is_free(&root, &m.name, &dest)?;
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
    // Installed all the same (a bare `exec` may only be on PATH later), and
    // said so on the last line: it cannot start as it is.
    let problem = Manifest::load(&dest).ok().as_ref().and_then(super::exec_problem);
    match problem {
        None => say(&format!("installed {}{version} to {}", m.name, show(&dest))),
        Some(why) => {
            say(&format!("installed {}{version} to {}", m.name, show(&dest)))?;
            say(&format!("broken: {} cannot start: {why}", m.name))?;
            // A build of the checkout it came from (a Rust example's
            // `target/`) is not copied: say how to install one that runs.
            if why.ends_with("(outside the extension's folder)") {
                let fix = "put the built program in the extension's folder, set \"exec\" to it (\"./NAME\"), and install that folder";
                let rust = if m.language == "rust" {
                    format!("; for a Rust example: cargo build --release --example {0}, copy target/release/examples/{0} into a copy of its folder", m.name)
                } else {
                    String::new()
                };
                say(&format!("to install it: {fix}{rust} (zot ext remove {} first)", m.name))?;
            }
            Ok(())
        }
    }
}

/// Error messages about the staging copy name the source instead.
fn rebase(msg: &str, staging: &Path, source: &str) -> String {
    let canon = fs::canonicalize(staging).unwrap_or_else(|_| staging.to_path_buf());
    msg.replace(&show(&canon), source).replace(&show(staging), source)
}

/// Refuses a name some installed extension already has, whatever its
/// folder is called, and a folder `dest` that exists, whatever it holds:
/// an install never replaces anything, nor makes a name ambiguous.
fn name_is_free(root: &Path, name: &str, dest: &Path) -> Res {
    let same = crate::discovery::scan_dir(root, crate::discovery::Source::Global)
        .into_iter()
        .flatten()
        .find(|f| f.manifest.name == name);
    if let Some(f) = same {
        return Err(already_installed(name, &f.manifest.dir));
    }
    if fs::symlink_metadata(dest).is_ok() {
        let holds = Manifest::load(dest).map(|m| m.name).ok().filter(|n| n != name);
        return Err(match holds {
            Some(other) => Fail::Msg(format!(
                "cannot install {name}: {} already exists and holds extension {other:?}; remove or rename that folder first",
                show(dest)
            )),
            None => already_installed(name, dest),
        });
    }
    Ok(())
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
                "{}: not an extension: give its folder (holding {MANIFEST_FILE}), its {MANIFEST_FILE}, or a git URL",
                show(src)
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Fail::Msg(format!(
                "{}: no such directory (give an extension's folder, its {MANIFEST_FILE}, or a git URL)",
                show(src)
            )))
        }
        Err(e) => return Err(Fail::Msg(format!("{}: {e}", show(src)))),
    }
    let manifest_path = src.join(MANIFEST_FILE);
    if fs::symlink_metadata(&manifest_path).is_err() {
        return Err(Fail::Msg(format!(
            "{} holds no {MANIFEST_FILE}: not an extension (give its folder, its {MANIFEST_FILE}, or a git URL)",
            show(src)
        )));
    }
    let m = Manifest::load(src).map_err(|e| e.to_string())?;
    let dest = root.join(&m.name);
    name_is_free(root, &m.name, &dest)?;
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

/// `git clone --depth 1 -- <url> <dir>` with the system git.
fn clone(url: &OsStr, dir: &Path) -> Res {
    let url_text = url.to_string_lossy();
    let Some(git) = crate::which::find_executable("git") else {
        return Err(Fail::Msg(format!("cannot install {url_text}: git is not installed (not found on PATH)")));
    };
    let mut cmd = Command::new(git);
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


#[cfg(test)]
mod tests {
    use super::*;

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
