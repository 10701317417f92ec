//! Which project a session is in: started with no `--cwd`, the nearest
//! folder at or above the working directory that holds a `.zot` folder or
//! one of the server files other clients keep in a project (`.mcp.json`,
//! `.vscode/mcp.json`, `.cursor/mcp.json`), as git finds its repository
//! from a subfolder. The search stops at the filesystem root, and for a
//! start inside `$HOME` at `$HOME` (its parent and above are other users'
//! or the system's); a `.zot` that is zot's own home (`$ZOT_HOME`) marks no
//! project, nor do the client files in `$HOME` itself (`~/.cursor/mcp.json`
//! is Cursor's file for every project). No folder found: the working
//! directory is the project, as before.

use std::path::{Path, PathBuf};

/// The server files of other clients that mark a project's root (§8.6).
const CLIENT_FILES: [&str; 3] = [".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"];

/// The project root for a session started in `start` (absolute).
pub fn root_from(start: &Path, home: Option<&Path>, zot_home: &Path) -> PathBuf {
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (zot_home, home) = (real(zot_home), home.map(real));
    let stop = home.filter(|h| start.starts_with(h) || real(start).starts_with(h));
    for dir in start.ancestors() {
        let at_home = stop.as_deref().is_some_and(|h| real(dir) == *h);
        let marker = dir.join(".zot");
        if marker.is_dir() && real(&marker) != zot_home {
            return dir.to_path_buf();
        }
        if !at_home && CLIENT_FILES.iter().any(|f| dir.join(f).is_file()) {
            return dir.to_path_buf();
        }
        if at_home {
            break;
        }
    }
    start.to_path_buf()
}

/// [`root_from`] with the process's `$HOME`.
pub fn root(start: &Path, zot_home: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    root_from(start, home.as_deref(), zot_home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_zot_folder_above_up_to_home() {
        let t = std::env::temp_dir().join(format!("zot-project-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        let (home, zh) = (t.join("home"), t.join("state"));
        let app = home.join("app");
        std::fs::create_dir_all(app.join("src/deep")).unwrap();
        std::fs::create_dir_all(app.join(".zot")).unwrap();
        std::fs::create_dir_all(&zh).unwrap();
        assert_eq!(root_from(&app.join("src/deep"), Some(&home), &zh), app);
        assert_eq!(root_from(&app, Some(&home), &zh), app);
        // Nothing above: the start itself.
        let other = home.join("other/x");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(root_from(&other, Some(&home), &zh), other);
        // Not above $HOME, even where a `.zot` is there.
        std::fs::create_dir_all(t.join(".zot")).unwrap();
        assert_eq!(root_from(&other, Some(&home), &zh), other);
        // zot's own home named `.zot` marks no project.
        std::fs::create_dir_all(home.join(".zot")).unwrap();
        assert_eq!(root_from(&other, Some(&home), &home.join(".zot")), other);
        assert_eq!(root_from(&other, Some(&home), &zh), home);
        std::fs::remove_dir_all(home.join(".zot")).unwrap();
        // Another client's server file marks a project too...
        let repo = home.join("repo");
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        std::fs::create_dir_all(repo.join(".vscode")).unwrap();
        std::fs::write(repo.join(".vscode/mcp.json"), "{}").unwrap();
        assert_eq!(root_from(&repo.join("a/b"), Some(&home), &zh), repo);
        std::fs::remove_dir_all(repo.join(".vscode")).unwrap();
        std::fs::write(repo.join(".mcp.json"), "{}").unwrap();
        assert_eq!(root_from(&repo.join("a/b"), Some(&home), &zh), repo);
        // ...but not in $HOME itself, where it is the client's user file.
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::write(home.join(".cursor/mcp.json"), "{}").unwrap();
        assert_eq!(root_from(&other, Some(&home), &zh), other);
        let _ = std::fs::remove_dir_all(&t);
    }
}
