//! What every subcommand of `zot ext` shares: its error ([`Fail`]: a
//! message, or a closed stdout) and how it prints.

use crate::text::one_line as sanitize;
use std::io::{self, Write};
use std::path::Path;

pub(super) enum Fail {
    /// A runtime error: one line `zot: <message>`, exit 1.
    Msg(String),
    /// Stdout was closed (`zot ext list | head`): stop quietly.
    Pipe,
}

impl From<String> for Fail {
    fn from(m: String) -> Fail {
        Fail::Msg(m)
    }
}

pub(super) type Res<T = ()> = Result<T, Fail>;

pub(super) fn out_err(e: io::Error) -> Fail {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Fail::Pipe
    } else {
        Fail::Msg(format!("cannot write to stdout: {e}"))
    }
}

/// Prints one sanitized line on stdout.
pub(super) fn say(line: &str) -> Res {
    let mut out = io::stdout().lock();
    writeln!(out, "{}", sanitize(line)).and_then(|()| out.flush()).map_err(out_err)
}

pub(super) fn show(p: &Path) -> String {
    p.display().to_string()
}

pub(super) fn stdin_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDIN_FILENO) == 1 }
}
