//! Why an extension with a valid manifest cannot start: its `exec` is
//! missing or not executable. `zot ext list`, `zot ext install` and
//! `zot ext doctor` show such an extension as `broken` with this reason,
//! rather than as one that loads.

use crate::lexical::{lexical, Above};
use crate::manifest::{Manifest, ManifestError};
use std::path::Path;

/// The reason `m`'s `exec` cannot run now, in a few words (`exec not
/// found: /abs/path`, `exec not executable: /abs/path (chmod +x it)`,
/// `exec "node" not found on PATH`); none when it can, or when the
/// extension is static.
pub fn exec_problem(m: &Manifest) -> Option<String> {
    if m.is_static() {
        return None;
    }
    let Err(e) = m.resolve_exec() else { return None };
    let ManifestError::Exec { exec, msg, .. } = &e else { return Some(e.to_string()) };
    let (path, why) = msg.rsplit_once(": ").unwrap_or(("", msg.as_str()));
    let path = lexical(Path::new(path), Above::Drop);
    let shown = path.display();
    Some(match why {
        "no such file" if !exec.starts_with('/') && !path.starts_with(&m.dir) => {
            format!("exec not found: {shown} (outside the extension's folder)")
        }
        "no such file" => format!("exec not found: {shown}"),
        w if w.starts_with("not executable") => format!("exec not executable: {shown} (chmod +x it)"),
        "not found on PATH" => format!("exec {exec:?} not found on PATH"),
        _ => format!("exec {exec:?}: {msg}"),
    })
}
