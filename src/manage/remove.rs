//! `zot ext remove`: deleting an installed extension by name, after a
//! confirmation on a terminal (or `--yes`).

use crate::home::Home;
use std::fs;
use std::io::{self, BufRead, Write};
use std::path::Path;

use super::lookup::{entry_path, lookup};
use super::tree::remove_tree;
use super::out::{say, show, stdin_is_tty, Fail, Res};
use super::sanitize;

pub(super) fn remove(home: &Home, cwd: Option<&Path>, name: &str, yes: bool) -> Res {
    let e = lookup(home, cwd, name)?;
    super::lookup::refuse_server(&e, "remove")?;
    let path = entry_path(&e);
    if !yes {
        if !stdin_is_tty() {
            return Err(Fail::Msg(format!(
                "not removing {name} without confirmation: stdin is not a terminal; pass --yes"
            )));
        }
        let mut err = io::stderr().lock();
        let _ = write!(err, "{}", sanitize(&format!("remove {name} at {}? [y/N] ", show(&path))));
        let _ = err.flush();
        drop(err);
        let mut answer = String::new();
        io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        let a = answer.trim().to_ascii_lowercase();
        if a != "y" && a != "yes" {
            return Err(Fail::Msg(format!("cancelled; {name} was not removed")));
        }
    }
    let meta = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", show(&path)))?;
    if meta.file_type().is_symlink() {
        fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", show(&path)))?;
        return say(&format!(
            "removed {name} (unlinked {}; its target {} was left alone)",
            show(&path),
            show(&e.dir)
        ));
    }
    remove_tree(&path).map_err(|e| format!("cannot remove {}: {e}", show(&path)))?;
    say(&format!("removed {name} ({})", show(&path)))
}
