//! The `zot` command line: parsing arguments with `lexopt` into a
//! [`Command`], the usage texts, turning session options into a
//! [`host::Config`](crate::host::Config), and dispatching to the console,
//! `zot serve` or the `zot ext` subcommands ([`crate::manage`]).
//!
//! Exit codes: 0 success (and `--help`/`--version`), 1 a runtime error
//! (one line `zot: <message>` on stderr), 2 a usage error (one line naming
//! the offending argument and the help to read).
//!
//! The rooms, bottom-up: `command` holds what the command line asks for,
//! the session options and the usage error (which every other room
//! shares), `args` the reader over the arguments, `topics` the files and
//! console keys that `help` and `doc` describe, `flags` the flag and
//! command tables, `help` the usage texts, `parse` the parser, `doc` the
//! man page and the completion scripts (the last three read the tables,
//! and nothing reads them back); this file the dispatch.

mod args;
mod command;
mod doc;
mod flags;
mod help;
mod login;
mod parse;
mod topics;

pub use command::{resolve_dir, Command};
pub use parse::parse;

use command::{home, warn_shared_home, UsageError};
use crate::VERSION;
use crate::manage::{self, sanitize};
use std::env;
use std::ffi::OsString;

/// Entry point of the binary: parses the process's arguments, runs what
/// they ask for and returns the exit code.
pub fn main() -> i32 {
    run(env::args_os().skip(1))
}

/// Parses `args` (without the program name), runs the command and returns
/// the exit code.
pub fn run<I>(args: I) -> i32
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let command = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    // An unknown ZOT_CONFINE is a usage error wherever it is read, as an
    // unknown --confine is (which wins over it).
    let reads_confine_env = match &command {
        Command::Session(s) | Command::Serve(s) | Command::Mcp(s) | Command::McpLogin { session: s, .. } | Command::ExtDoctor { session: s, .. } => s.confine.is_none(),
        Command::Ext { cmd: manage::ExtCommand::List { .. }, .. } | Command::ExtCheck(_) | Command::Trust(_, None) => true,
        _ => false,
    };
    if let (true, Err(e)) = (reads_confine_env, crate::confine::Mode::from_env()) {
        eprintln!("{}", UsageError::bare(e));
        return 2;
    }
    match command {
        Command::Help(text) => {
            print!("{text}");
            0
        }
        Command::Version => {
            println!("zot {VERSION}");
            0
        }
        Command::Session(s) => match s.into_config() {
            Ok(config) => crate::console::run(config),
            Err(e) => fail(&e),
        },
        Command::Serve(s) => match s.into_config() {
            Ok(config) => crate::serve::run(config),
            Err(e) => fail(&e),
        },
        Command::Mcp(s) => match s.into_config() {
            Ok(config) => crate::mcp::run(config),
            Err(e) => fail(&e),
        },
        Command::McpImport(opts) => match home() {
            Ok(home) => crate::mcpserver::import::run(&opts, &home.root().join(crate::mcpserver::config::MCP_FILE)),
            Err(e) => fail(&e),
        },
        Command::McpLogin { session, name, logout } => match session.into_config() {
            Ok(config) => login::run(&config, &name, logout),
            Err(e) => fail(&e),
        },
        Command::Ext { cwd, cmd } => {
            let home = match home() {
                Ok(h) => h,
                Err(e) => return fail(&e),
            };
            warn_shared_home(&home);
            let cwd = match cwd.as_deref().map(resolve_dir).transpose() {
                Ok(Some(c)) => Some(c),
                Ok(None) => std::env::current_dir().ok().map(|d| crate::project::root(&d, home.root())),
                Err(e) => return fail(&e),
            };
            manage::run(cmd, &home, cwd.as_deref())
        }
        #[cfg(feature = "author")]
        Command::ExtNew(opts) => crate::scaffold::run(&opts),
        #[cfg(feature = "author")]
        Command::ExtCheck(opts) => crate::check::run(&opts),
        #[cfg(not(feature = "author"))]
        Command::ExtNew(_) | Command::ExtCheck(_) => {
            eprintln!("zot: this zot was built without the author tools (zot ext new, zot ext check): build it with the default features, or cargo build --features author");
            2
        }
        Command::Completions(shell) => {
            print!("{}", doc::completions(&shell));
            0
        }
        Command::Man => {
            print!("{}", doc::man_page());
            0
        }
        Command::ExtDoctor { session, json } => match session.into_config() {
            Ok(config) => crate::doctor::run(config, json),
            Err(e) => fail(&e),
        },
        Command::Trust(cmd, confine) => match home() {
            Ok(home) => {
                warn_shared_home(&home);
                // The flag wins over ZOT_CONFINE.
                let mode = match confine.as_deref().map(|v| crate::confine::Mode::named(v, "--confine")) {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => {
                        eprintln!("{}", UsageError::bare(e));
                        return 2;
                    }
                    // Checked above.
                    None => crate::confine::Mode::from_env().unwrap_or_default(),
                };
                let reach = |dir: &std::path::Path, confine: &str| crate::discovery::project_reach_named(dir, home.root(), confine);
                let not_enforced = |dir: &std::path::Path| crate::discovery::project_not_enforced(dir, home.root(), mode);
                crate::trust::run(cmd, &home, &crate::discovery::project_names, &reach, &not_enforced, mode.as_str())
            }
            Err(e) => fail(&e),
        },
    }
}

fn fail(msg: &str) -> i32 {
    eprintln!("zot: {}", sanitize(msg));
    1
}
