//! Where zot keeps things on disk: `ZOT_HOME` resolution, the paths under it,
//! the one rule every name must pass before it becomes part of a path, and
//! how zot creates what it writes: folders `0700`, files `0600` from the
//! moment they exist, whatever the umask (PROTOCOL §1, File modes).

use std::env;
use std::fmt;
use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Longest extension name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The resolved zot home directory and the paths derived from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Uses `root` as the home directory as is.
    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    /// Resolves the home directory from the environment: `$ZOT_HOME` if set
    /// and non-empty (a relative value made absolute against the current
    /// directory); otherwise `$XDG_STATE_HOME/zot` on every platform (made
    /// absolute the same way); then
    /// macOS `~/Library/Application Support/zot`, Windows
    /// `%LOCALAPPDATA%\zot`, elsewhere `~/.local/state/zot`.
    pub fn from_env() -> Result<Home, HomeError> {
        let var = |k: &str| env::var_os(k).filter(|v| !v.is_empty());
        let absolute = |p: PathBuf| -> Result<PathBuf, HomeError> {
            if p.is_absolute() {
                return Ok(p);
            }
            Ok(env::current_dir().map_err(|_| HomeError::NoCwd)?.join(p))
        };
        if let Some(h) = var("ZOT_HOME") {
            return Ok(Home::at(absolute(PathBuf::from(h))?));
        }
        if let Some(x) = var("XDG_STATE_HOME") {
            return Ok(Home::at(absolute(PathBuf::from(x))?.join("zot")));
        }
        if cfg!(windows) {
            let local = var("LOCALAPPDATA").ok_or(HomeError::NoHome)?;
            return Ok(Home::at(PathBuf::from(local).join("zot")));
        }
        let user_home = var("HOME").map(PathBuf::from).ok_or(HomeError::NoHome)?;
        if cfg!(target_os = "macos") {
            return Ok(Home::at(user_home.join("Library/Application Support/zot")));
        }
        Ok(Home::at(user_home.join(".local/state/zot")))
    }

    /// The zot home directory itself (`$ZOT_HOME`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `$ZOT_HOME/extensions`: installed (global) extensions.
    pub fn extensions_dir(&self) -> PathBuf {
        self.root.join("extensions")
    }

    /// `$ZOT_HOME/logs`.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// `$ZOT_HOME/logs/ext-<name>.log`. The name must already be validated.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.logs_dir().join(format!("ext-{name}.log"))
    }

    /// `$ZOT_HOME/trust.json`: the trusted projects (`zot trust`).
    pub fn trust_path(&self) -> PathBuf {
        self.root.join("trust.json")
    }
}

/// `<cwd>/.zot/extensions`: project-local extensions.
pub fn project_extensions_dir(cwd: &Path) -> PathBuf {
    cwd.join(".zot").join("extensions")
}

/// Creates `dir` and every missing parent with mode `0700`.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates `dir`, a folder of zot's own below `base` (`logs`, `data/NAME`,
/// `tmp/NAME.INSTANCE`), and every missing folder between them, `0700`;
/// `base` as [`create_private_dir`] does. A folder between them that is
/// already there must be a real folder of this user: a symbolic link
/// there is refused, never followed (in a home others can write, it could
/// point at any folder of the user's, which an extension would then be
/// handed to write in, or a log appended in), and so is a folder of
/// another user (planted for what zot would put in it). The error names
/// it.
pub fn create_own_dir(base: &Path, dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    create_private_dir(base)?;
    let Ok(rel) = dir.strip_prefix(base) else { return create_private_dir(dir) };
    let mut p = base.to_path_buf();
    for c in rel.components() {
        p.push(c);
        match DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => continue,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = std::fs::symlink_metadata(&p)?;
        let refused = |why: &str| Err(io::Error::other(format!("{} {why}; zot does not use it for its own files (remove it)", p.display())));
        if meta.file_type().is_symlink() {
            return refused("is a symbolic link");
        }
        if !meta.is_dir() {
            return refused("is not a folder");
        }
        // SAFETY: getuid has no preconditions.
        if meta.uid() != unsafe { libc::getuid() } {
            return refused("belongs to another user");
        }
    }
    Ok(())
}

/// Options that create a file with mode `0600` (the mode it has from the
/// moment it exists: a file zot creates is never readable by others, even
/// for an instant). The caller adds how it opens it.
pub fn private_file() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(0o600);
    o
}

/// Opens `path` with `opts` (which should create it), creating it `0600`,
/// for zot's own log, history, trace and lock files. A symbolic link there
/// is refused, never followed (in a home others can write, it could point
/// at any file of the user's): the error names it. An existing file with
/// group or other bits is made `0600` through the open descriptor before
/// anything is written to it, but only when it is one zot could have
/// created: a regular file of this user with no other hard link (never a
/// file someone linked there).
pub fn open_private(path: &Path, opts: &mut OpenOptions) -> io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = opts.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            io::Error::new(
                e.kind(),
                format!("{} is a symbolic link; zot does not follow links for its own files (remove it)", path.display()),
            )
        } else {
            e
        }
    })?;
    let meta = f.metadata()?;
    // SAFETY: getuid has no preconditions.
    let mine = meta.is_file() && meta.nlink() == 1 && meta.uid() == unsafe { libc::getuid() };
    if mine && meta.permissions().mode() & 0o077 != 0 {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(f)
}

/// The warning for an existing home that group or others can write to,
/// with the `chmod` that fixes it; `None` for a private (or missing) home.
pub fn shared_home_warning(home: &Home) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(home.root()).ok()?.permissions().mode() & 0o7777;
    if mode & 0o022 == 0 {
        return None;
    }
    let shown = home.root().display().to_string();
    let quoted = if shown.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b)) {
        shown.clone()
    } else {
        format!("'{}'", shown.replace('\'', "'\\''"))
    };
    Some(format!(
        "warning: the zot home {shown} is writable by other users (mode {mode:04o}): they could change what zot runs; fix it with: chmod 700 {quoted}"
    ))
}

/// Why the zot home cannot be located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeError {
    /// None of `ZOT_HOME`, `XDG_STATE_HOME` and the platform's home (`HOME`, `LOCALAPPDATA`) is set.
    NoHome,
    /// `ZOT_HOME` or `XDG_STATE_HOME` is relative and the current directory is unknown.
    NoCwd,
}

impl fmt::Display for HomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HomeError::NoHome => {
                write!(f, "cannot locate the zot home: set ZOT_HOME or HOME")
            }
            HomeError::NoCwd => write!(
                f,
                "ZOT_HOME is relative and the current directory cannot be determined"
            ),
        }
    }
}

impl std::error::Error for HomeError {}

/// Why a name is not a safe file-name component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// The name is empty.
    Empty,
    /// The name is longer than 64 bytes; its length in bytes.
    TooLong(usize),
    /// The name is `.` or `..`.
    Dots,
    /// The name holds a character outside `[A-Za-z0-9._-]`.
    BadChar(char),
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => write!(f, "name is empty"),
            NameError::TooLong(n) => {
                write!(f, "name is {n} bytes long (at most {MAX_NAME_LEN})")
            }
            NameError::Dots => write!(f, "name may not be `.` or `..`"),
            NameError::BadChar(c) => write!(
                f,
                "name contains {c:?} (allowed: letters, digits, `.`, `_`, `-`)"
            ),
        }
    }
}

impl std::error::Error for NameError {}

/// Checks that `name` is a safe file-name component: `[A-Za-z0-9._-]`,
/// not `.` or `..`, non-empty, at most [`MAX_NAME_LEN`] bytes.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong(name.len()));
    }
    if name == "." || name == ".." {
        return Err(NameError::Dots);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(NameError::BadChar(c));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("weather").is_ok());
        assert!(validate_name("a.b_c-D9").is_ok());
        assert_eq!(validate_name(""), Err(NameError::Empty));
        assert_eq!(validate_name(".."), Err(NameError::Dots));
        assert_eq!(validate_name("."), Err(NameError::Dots));
        assert_eq!(validate_name("../x"), Err(NameError::BadChar('/')));
        assert_eq!(validate_name("a b"), Err(NameError::BadChar(' ')));
        assert_eq!(validate_name("é"), Err(NameError::BadChar('é')));
        assert!(validate_name(&"a".repeat(64)).is_ok());
        assert_eq!(validate_name(&"a".repeat(65)), Err(NameError::TooLong(65)));
    }
}
