//! Paths given on the command line, checked before anything is spawned
//! (docs/protocol.md §4): an `--ext PATH` must be a folder holding
//! `extension.json` or that file itself, an `--mcp-config FILE` a file. A
//! path that is neither is `--ext PATH: <why>` (the front end adds `zot: `
//! and exits 1), so that a typo is never a silent empty run.

use crate::manifest::MANIFEST_FILE;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;

/// What a path option must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A folder holding `extension.json`, or that file (`--ext`).
    Extension,
    /// A regular file (`--mcp-config`).
    #[allow(dead_code)] // until `--mcp-config` is parsed
    File,
}

/// Checks `given` (as typed, relative to the current directory) for the
/// option `--flag`; the error is `--flag PATH: <why>`.
pub fn check(flag: &str, given: &Path, expect: Expect) -> Result<(), String> {
    problem(given, expect).map_err(|why| format!("--{flag} {}: {why}", given.display()))
}

/// Why `p` is not what `expect` asks for, in a few words.
pub fn problem(p: &Path, expect: Expect) -> Result<(), String> {
    let meta = fs::metadata(p).map_err(|e| match e.kind() {
        ErrorKind::NotFound => "no such file or directory".to_string(),
        ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    })?;
    match expect {
        Expect::File if meta.is_dir() => Err("is a directory, not a file".into()),
        Expect::File if !meta.is_file() => Err("not a regular file".into()),
        Expect::File => Ok(()),
        Expect::Extension if meta.is_dir() => match fs::metadata(p.join(MANIFEST_FILE)) {
            Ok(m) if m.is_file() => Ok(()),
            Ok(_) => Err(format!("{MANIFEST_FILE} in it is not a file")),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                Err(format!("the folder holds no {MANIFEST_FILE}"))
            }
            Err(e) => Err(format!("cannot read {MANIFEST_FILE} in it: {e}")),
        },
        Expect::Extension if meta.is_file() && p.file_name().is_some_and(|n| n == MANIFEST_FILE) => Ok(()),
        Expect::Extension => Err(format!(
            "not an extension: give its folder (holding {MANIFEST_FILE}) or its {MANIFEST_FILE}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{check, Expect};
    use std::path::Path;

    #[test]
    fn each_kind_of_wrong_path_says_why() {
        let dir = std::env::temp_dir().join(format!("zot-argpath-{}", std::process::id()));
        let ext = dir.join("ext");
        std::fs::create_dir_all(&ext).unwrap();
        std::fs::write(dir.join("main.sh"), "").unwrap();
        let e = |p: &Path, x| check("ext", p, x).unwrap_err();
        assert_eq!(e(&dir.join("nope"), Expect::Extension), format!("--ext {}/nope: no such file or directory", dir.display()));
        assert_eq!(e(&ext, Expect::Extension), format!("--ext {}: the folder holds no extension.json", ext.display()));
        assert!(e(&dir.join("main.sh"), Expect::Extension).ends_with("main.sh: not an extension: give its folder (holding extension.json) or its extension.json"));
        std::fs::write(ext.join("extension.json"), "{}").unwrap();
        assert_eq!(check("ext", &ext, Expect::Extension), Ok(()));
        assert_eq!(check("ext", &ext.join("extension.json"), Expect::Extension), Ok(()));
        assert_eq!(check("mcp-config", &dir.join("main.sh"), Expect::File), Ok(()));
        let e = check("mcp-config", &ext, Expect::File).unwrap_err();
        assert_eq!(e, format!("--mcp-config {}: is a directory, not a file", ext.display()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
