//! `zot ext`: managing installed extensions on disk. Listing project-local
//! and global extensions (broken ones too), installing from a local folder
//! or a git URL into `$ZOT_HOME/extensions/<name>` with complete rollback,
//! removing, enabling/disabling (through [`crate::manifest::set_enabled`]), and
//! printing or following an extension's log. Everything printed goes
//! through [`sanitize`] ([`crate::text::one_line`]).
//!
//! Decisions where the protocol is silent:
//! - A local install skips a top-level `.git` (file or directory): the
//!   installed copy is a snapshot, not a checkout. It skips a top-level
//!   `target/` and `node_modules/` too (build output and dependencies, often
//!   huge), except the files the manifest's `exec` and `args` name inside
//!   them (a built Rust extension runs `./target/release/NAME`); a note
//!   says what was left out. A git install keeps the `.git` of its shallow
//!   clone. `install DIR/extension.json` installs DIR.
//! - Symbolic links: a link is kept only if its target, resolved lexically
//!   from the link's directory, stays inside the extension, is relative, and
//!   does not go up (`..`) after passing through another link. The same
//!   check runs on a git clone's tree. FIFOs, sockets and devices refuse the
//!   install.
//! - The installed folder's top directory keeps the source's mode plus
//!   owner `rwx`, so that `enable`/`disable` can always rewrite the manifest.
//! - Name lookup: `remove`, `enable`, `disable` and `logs` take the
//!   manifest's name or the installed folder's name, in project-local and
//!   global extensions alike (a broken manifest by its folder's name). More
//!   than one match is refused, naming every matching folder, and nothing
//!   changes; `logs` only refuses when the matches log to different files.
//! - `list` notes whether the project is trusted ([`crate::trust`]) and
//!   warns about an `exec` that cannot run (missing, not executable).
//! - `remove` of an extension folder that is a symbolic link unlinks the
//!   link and leaves its target alone; the extension's log is kept.
//! - `logs` prints the log as is (it is the extension's own stderr);
//!   `logs -f` first prints the whole file, waits for a missing log to
//!   appear, and notes truncation on stderr.
//!
//! The rooms, bottom-up: `out` holds the error and the printing every
//! subcommand shares, `broken` what keeps an `exec` from running, `tree`
//! copies, checks and removes directory trees, `lookup` finds extensions
//! by name, `list`, `install`, `remove` and `logs` are the subcommands;
//! this file dispatches, and enables or disables.

mod broken;
mod install;
mod list;
mod logs;
mod lookup;
mod out;
mod remove;
mod tree;


use crate::home::Home;
use crate::manifest::{set_enabled, MANIFEST_FILE};
pub use crate::text::one_line as sanitize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use broken::exec_problem;
use install::install;
use list::list;
use logs::logs;
use lookup::lookup;
use out::{say, Fail, Res};
use remove::remove;

/// One `zot ext` subcommand with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtCommand {
    /// `names`: only the names, one per line.
    List { json: bool, names: bool },
    Install { source: OsString },
    Remove { name: String, yes: bool },
    Enable { name: String },
    Disable { name: String },
    /// `mcp_configs`: the `--mcp-config` files whose servers it also finds.
    Logs { name: String, follow: bool, mcp_configs: Vec<PathBuf> },
}

/// Runs one `zot ext` subcommand; returns the exit code. `cwd` is the
/// checked `--cwd`, or `None` for the current directory.
pub fn run(cmd: ExtCommand, home: &Home, cwd: Option<&Path>) -> i32 {
    let result = match cmd {
        ExtCommand::List { json, names } => list(home, cwd, json, names),
        ExtCommand::Install { source } => install(home, &source),
        ExtCommand::Remove { name, yes } => remove(home, cwd, &name, yes),
        ExtCommand::Enable { name } => set_state(home, cwd, &name, true),
        ExtCommand::Disable { name } => set_state(home, cwd, &name, false),
        ExtCommand::Logs { name, follow, mcp_configs } => logs(home, cwd, &name, follow, &mcp_configs),
    };
    match result {
        Ok(()) | Err(Fail::Pipe) => 0,
        Err(Fail::Msg(m)) => {
            eprintln!("zot: {}", sanitize(&m));
            1
        }
    }
}

fn set_state(home: &Home, cwd: Option<&Path>, name: &str, enable: bool) -> Res {
    let e = lookup(home, cwd, name)?;
    lookup::refuse_server(&e, if enable { "enable" } else { "disable" })?;
    let word = if enable { "enabled" } else { "disabled" };
    if e.manifest.as_ref().is_some_and(|m| m.enabled == enable) {
        return say(&format!("{name} is already {word}"));
    }
    set_enabled(&e.dir.join(MANIFEST_FILE), enable).map_err(|e| e.to_string())?;
    say(&format!("{word} {name}"))
}
