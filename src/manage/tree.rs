//! Directory trees on disk: copying an extension's folder (keeping modes
//! masked with `0755`: no setuid, setgid or sticky bit, no group or other
//! write; leaving out a top-level `.git`, `target/` and `node_modules/`),
//! refusing device files, FIFOs and sockets, checking that its symbolic
//! links stay inside it, and removing a tree.

use crate::manifest::Manifest;
use std::ffi::{OsStr, OsString};
use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::out::{show, Fail, Res};
use super::sanitize;

/// The permission bits an installed file or folder keeps (PROTOCOL §1).
const INSTALL_MASK: u32 = 0o755;

/// Copies the contents of `src` into the existing directory `dst`, keeping
/// modes (masked), recreating internal symbolic links, following none.
/// Top-level folders a local install leaves out (see the module header).
const SKIPPED: [&str; 2] = ["target", "node_modules"];

pub(super) fn copy_tree(src: &Path, dst: &Path) -> Res {
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
    fs::set_permissions(dst, fs::Permissions::from_mode((mode & INSTALL_MASK) | 0o700))
        .map_err(|e| Fail::Msg(format!("cannot set the mode of {}: {e}", show(dst))))
}

fn sorted_entries(dir: &Path) -> Res<Vec<OsString>> {
    let rd = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", show(dir)))?;
    let mut names = Vec::new();
    for entry in rd {
        names.push(entry.map_err(|e| format!("cannot read {}: {e}", show(dir)))?.file_name());
    }
    crate::order::sort(&mut names);
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
            fs::set_permissions(&dp, fs::Permissions::from_mode(meta.permissions().mode() & INSTALL_MASK))
                .map_err(|e| format!("cannot set the mode of {}: {e}", show(&dp)))?;
        } else if ft.is_file() {
            copy_file(&sp, &dp)?;
        } else {
            return Err(special(&sp, ft));
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
        // 0700, not the umask's: a folder others could write to would let
        // them swap the file the manifest runs.
        crate::home::create_private_dir(parent).map_err(|e| format!("cannot create {}: {e}", show(parent)))?;
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
        .set_permissions(fs::Permissions::from_mode(meta.permissions().mode() & INSTALL_MASK))
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

/// The refusal of a device file, FIFO or socket at `p`.
fn special(p: &Path, ft: fs::FileType) -> Fail {
    use std::os::unix::fs::FileTypeExt;
    let kind = if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device file"
    } else {
        "not a regular file, directory or symbolic link"
    };
    Fail::Msg(format!(
        "refusing to install: {} is {kind} (an extension holds only files, folders and links); nothing was installed",
        show(p)
    ))
}

/// Masks the modes of everything in a cloned tree with `0755` and refuses
/// device files, FIFOs and sockets, following no link.
pub(super) fn mask_tree(root: &Path) -> Res {
    fn walk(dir: &Path) -> Res {
        for name in sorted_entries(dir)? {
            let p = dir.join(&name);
            let meta = fs::symlink_metadata(&p).map_err(|e| format!("cannot read {}: {e}", show(&p)))?;
            let ft = meta.file_type();
            if ft.is_symlink() {
                continue;
            }
            if !ft.is_dir() && !ft.is_file() {
                return Err(special(&p, ft));
            }
            let mode = meta.permissions().mode();
            if mode & !INSTALL_MASK & 0o7777 != 0 {
                fs::set_permissions(&p, fs::Permissions::from_mode(mode & INSTALL_MASK))
                    .map_err(|e| format!("cannot set the mode of {}: {e}", show(&p)))?;
            }
            if ft.is_dir() {
                walk(&p)?;
            }
        }
        Ok(())
    }
    walk(root)
}

/// Runs [`check_link`] on every link in the tree (not following any),
/// except inside a top-level `.git`.
pub(super) fn check_tree_links(root: &Path) -> Res {
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

/// Removes a directory tree, first giving the owner write access to every
/// directory in it (a read-only directory would stop the removal). Follows
/// no symbolic link.
pub(super) fn remove_tree(p: &Path) -> io::Result<()> {
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
