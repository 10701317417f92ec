//! Removing a folder and all it holds beneath its own descriptor
//! (docs/protocol.md §9.1, `${TMP}`): every entry is reached with `openat`
//! / `unlinkat` from the folder above it, never by a path and never through
//! a link (a link is removed, not followed), so a folder swapped for a link
//! while this runs cannot lead it anywhere else. A folder whose mode keeps
//! its owner out (`chmod 000`, which no confinement refuses) is given
//! `0700` first, through a descriptor of its own. Iterative: a deep tree
//! costs one descriptor per level, never stack.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Levels deeper than this are left (each holds a descriptor open).
const MAX_DEPTH: usize = 256;

/// Removes `path` (a folder, or whatever is there, a link included) with
/// everything in it; a missing `path` is not an error.
pub fn remove(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return Err(io::ErrorKind::InvalidInput.into()) };
    let parent = open_dir(libc::AT_FDCWD, &cstr(parent.as_os_str().as_bytes())?)?;
    let name = cstr(name.as_bytes())?;
    // (the folder, its name in the one below it on the stack)
    let mut stack: Vec<(OwnedFd, CString)> = Vec::new();
    match open_dir_forcing(parent.as_raw_fd(), &name) {
        Ok(fd) => stack.push((fd, name)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        Err(_) => return unlink(parent.as_raw_fd(), &name, 0),
    }
    while let Some((fd, _)) = stack.last() {
        let mut sub = None;
        for entry in list(fd.as_raw_fd())? {
            let mut gone = unlink(fd.as_raw_fd(), &entry, 0);
            if gone.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EACCES)) {
                // SAFETY: fchmod of a folder we hold open.
                unsafe { libc::fchmod(fd.as_raw_fd(), 0o700) };
                gone = unlink(fd.as_raw_fd(), &entry, 0);
            }
            match gone {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
                    sub = Some(entry);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        match sub {
            Some(entry) if stack.len() < MAX_DEPTH => {
                let below = open_dir_forcing(fd.as_raw_fd(), &entry)?;
                stack.push((below, entry));
            }
            Some(_) => return Err(io::Error::other("folders nested too deep")),
            None => {
                let Some((done, name)) = stack.pop() else { break };
                drop(done);
                let above = stack.last().map_or(parent.as_raw_fd(), |(f, _)| f.as_raw_fd());
                unlink(above, &name, libc::AT_REMOVEDIR)?;
            }
        }
    }
    Ok(())
}

fn cstr(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::ErrorKind::InvalidInput.into())
}

/// `name` beneath `dir`, as a folder, not through a link.
fn open_dir(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the fd returned is ours.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh and ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`open_dir`], and where its mode keeps us out, again after giving it
/// `0700` through an `O_PATH` descriptor of the folder itself (never a link).
fn open_dir_forcing(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    match open_dir(dir, name) {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            // SAFETY: a NUL-terminated name; the fd returned is ours.
            let fd = unsafe { libc::openat(dir, name.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(e);
            }
            // SAFETY: fresh and ours.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let path = cstr(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes())?;
            // SAFETY: the path names the folder held by `fd`.
            unsafe { libc::chmod(path.as_ptr(), 0o700) };
            open_dir(dir, name)
        }
        r => r,
    }
}

fn unlink(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: a NUL-terminated name beneath an open folder.
    match unsafe { libc::unlinkat(dir, name.as_ptr(), flags) } {
        0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            e => Err(e),
        },
    }
}

/// The entries of the folder `dir` (without `.` and `..`).
fn list(dir: RawFd) -> io::Result<Vec<CString>> {
    let again = open_dir(dir, c".")?;
    // SAFETY: fdopendir takes the fd (closed by closedir below).
    let d = unsafe { libc::fdopendir(again.as_raw_fd()) };
    if d.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(again);
    let mut out = Vec::new();
    loop {
        // SAFETY: a stream opened above, read by this thread alone.
        let e = unsafe { libc::readdir64(d) };
        if e.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        if name != c"." && name != c".." {
            out.push(name.to_owned());
        }
    }
    // SAFETY: closes the stream and its fd.
    unsafe { libc::closedir(d) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::remove;

    #[test]
    fn removes_a_tree_and_only_the_link_of_a_link() {
        let base = std::env::temp_dir().join(format!("zot-rmtree-{}", std::process::id()));
        let outside = base.join("outside");
        let t = base.join("tmp");
        std::fs::create_dir_all(t.join("a/b/c")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        std::fs::write(t.join("a/b/c/f"), "x").unwrap();
        std::fs::write(t.join("g"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, t.join("a/link")).unwrap();
        remove(&t).unwrap();
        assert!(!t.exists());
        assert!(outside.join("keep").exists());
        // A link in place of the folder: the link goes, not its target.
        std::os::unix::fs::symlink(&outside, &t).unwrap();
        remove(&t).unwrap();
        assert!(std::fs::symlink_metadata(&t).is_err() && outside.join("keep").exists());
        remove(&base.join("missing")).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }
}
