//! Looking a bare program name up on `$PATH` (PROTOCOL §1, `exec`): the one
//! search every part of the host uses (spawn, `zot ext check`, doctor,
//! the trust fingerprint, `git` for installs). Empty and relative `$PATH`
//! entries are skipped: they would resolve against whatever directory the
//! host happens to be in, not where the program runs.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The absolute directories of `$PATH`, in order, without empty or
/// relative entries.
pub fn path_dirs() -> Vec<PathBuf> {
    let var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&var).filter(|d| d.is_absolute()).collect()
}

/// The first `dir/name` on `$PATH` (absolute entries only) for which `ok`
/// holds.
pub fn find(name: impl AsRef<OsStr>, mut ok: impl FnMut(&Path) -> bool) -> Option<PathBuf> {
    let name = name.as_ref();
    path_dirs().into_iter().map(|d| d.join(name)).find(|p| ok(p))
}

/// The first executable regular file `name` on `$PATH`.
pub fn find_executable(name: impl AsRef<OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    find(name, |p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn relative_and_empty_entries_are_skipped() {
        let split: Vec<_> = std::env::split_paths(":.:bin:/usr/bin").filter(|d| d.is_absolute()).collect();
        assert_eq!(split, [std::path::PathBuf::from("/usr/bin")]);
    }
}
