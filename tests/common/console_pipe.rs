//! The console driven through a pipe, for tests/console_*.rs that script
//! a session: `zot` started with the Python fixture's extension folders,
//! a script of lines written and the input ended, and what reached stdout
//! ([`Session`]), with the pipe mode's rules checked on every run (no
//! escape byte, no prompt, no banner, no extension process left).
//! Included with `#[path]` beside `mod common` and `mod zot_proc`.
#![allow(dead_code)]

use super::common::{py_ext, TempDir};
use super::zot_proc::{assert_gone_within, children_of, session_args, Zot, LINE_WAIT};
use std::path::PathBuf;

/// An extension folder under `t/exts/<name>` running the Python fixture.
pub fn ext(t: &TempDir, name: &str, flags: &[&str]) -> PathBuf {
    py_ext(&t.path().join("exts"), name, name, flags)
}

/// `zot --no-ext --cwd T/cwd <FAST> <extra> --ext D...` with piped stdio.
pub fn start(t: &TempDir, exts: &[PathBuf], extra: &[&str], env: &[(&str, &str)]) -> Zot {
    Zot::spawn(t.path(), &session_args(t.path(), None, exts, extra), env)
}

pub fn assert_gone(pids: &[u32]) {
    assert_gone_within(pids, LINE_WAIT, "");
}

/// What one scripted session printed.
pub struct Session {
    pub code: i32,
    pub out: String,
    /// Stderr and the extensions' logs, for failure messages.
    pub context: String,
}

impl Session {
    pub fn lines(&self) -> Vec<&str> {
        self.out.lines().collect()
    }

    /// Panics unless some line is exactly `line`.
    pub fn has_line(&self, line: &str) {
        assert!(self.lines().contains(&line), "no line {line:?} in:\n{}\n{}", self.out, self.context);
    }

    /// Panics unless `lines` appear in this order, each one right after the other.
    pub fn has_block(&self, lines: &[&str]) {
        let all = self.lines();
        let found = all.windows(lines.len()).any(|w| w == lines);
        assert!(found, "no block {lines:#?} in:\n{}\n{}", self.out, self.context);
    }

    /// The index of the first line equal to `line`.
    pub fn index(&self, line: &str) -> usize {
        let i = self.lines().iter().position(|l| *l == line);
        i.unwrap_or_else(|| panic!("no line {line:?} in:\n{}\n{}", self.out, self.context))
    }
}

/// Runs `script` through a console session, then ends the input (unless
/// `eof` is false: the script must end the session itself). Checks the
/// exit code is 0-or-reported, that stdout has no escape byte, no prompt
/// and no banner, and that every extension process is gone afterwards.
pub fn run(t: &TempDir, exts: &[PathBuf], script: &[&str], eof: bool, env: &[(&str, &str)]) -> Session {
    let mut z = start(t, exts, &[], env);
    let mut text = String::new();
    for l in script {
        text.push_str(l);
        text.push('\n');
    }
    // A first line marks the end of the load: the extensions are running.
    z.send("/extensions");
    z.next_line(LINE_WAIT).unwrap_or_else(|| panic!("no output\n{}", z.context()));
    let pids = children_of(z.pid);
    z.write(text.as_bytes());
    if eof {
        z.close_stdin();
    }
    z.read_to_end(LINE_WAIT);
    let code = z.exit_code(LINE_WAIT);
    assert_gone(&pids);
    let raw = z.raw_stdout();
    assert!(!raw.contains(&0x1b), "escape byte on stdout:\n{}", String::from_utf8_lossy(&raw));
    let out = String::from_utf8(raw).expect("stdout is UTF-8");
    assert!(!out.contains("zot>"), "a prompt in pipe mode:\n{out}");
    assert!(!out.contains("extensions ready"), "a banner in pipe mode:\n{out}");
    Session { code, out, context: z.context() }
}
