//! How a piped console session ends: `/exit` and `/quit` (in any case),
//! the end of input, input that is not UTF-8, termination signals (exit
//! 128+n, no extension left), and a mistyped `--ext` path; `/reload` and
//! `/restart` on the way.

mod common;
#[path = "common/console_pipe.rs"]
mod console_pipe;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use console_pipe::*;
use zot_proc::{children_of, LINE_WAIT};

#[test]
fn exit_command_ends_the_session() {
    let t = TempDir::new("console-exit");
    let a = ext(&t, "a", &["--commands", "display"]);
    let b = ext(&t, "b", &["--grandchild"]);
    // No end of input: /exit alone ends it; what follows is not run.
    let s = run(&t, &[a, b], &["/display before", "/exit", "/display after"], false, &[]);
    assert_eq!(s.code, 0);
    s.has_line("[a] display:before");
    assert!(!s.out.contains("display:after"), "{}", s.out);
}

#[test]
fn built_in_commands_match_without_case() {
    let t = TempDir::new("console-case");
    let a = ext(&t, "a", &["--commands", "display"]);
    let s = run(&t, &[a], &["/HELP", "/System", "/Extensions", "/DISPLAY up", "/EXIT", "/display after"], false, &[]);
    assert_eq!(s.code, 0);
    s.has_line("built-in commands:");
    s.has_line("system prompt: You are a helpful coding assistant.");
    assert!(s.lines().iter().any(|l| l.starts_with("  a ") && l.contains("ready")), "{}", s.out);
    s.has_line("[a] display:up");
    assert!(!s.out.contains("unknown command"), "{}", s.out);
    assert!(!s.out.contains("display:after"), "{}", s.out);
}

#[test]
fn end_of_input_ends_the_session() {
    let t = TempDir::new("console-eof");
    let a = ext(&t, "a", &["--commands", "display"]);
    let b = ext(&t, "b", &["--grandchild"]);
    let s = run(&t, &[a, b], &["/display last"], true, &[]);
    assert_eq!(s.code, 0);
    assert_eq!(s.lines().last(), Some(&"[a] display:last"));
}

#[test]
fn quit_and_input_that_is_not_utf8() {
    let t = TempDir::new("console-quit");
    let a = ext(&t, "a", &["--commands", "display"]);
    // A line that is not UTF-8 is skipped with an error; the session goes on.
    let mut z = start(&t, &[a], &[], &[]);
    z.write(b"/display \xff\xfe\n/display h\xc3\xa9llo \xe2\x9c\x93\n/quit\n/display after\n");
    let out = z.read_to_end(LINE_WAIT);
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    assert_eq!(out, ["error: input is not UTF-8; line skipped", "[a] display:héllo ✓"], "{}", z.context());
}

#[test]
fn termination_signals_stop_extensions_and_exit_128_plus_n() {
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130), (libc::SIGHUP, 129)] {
        let t = TempDir::new("console-signal");
        let a = ext(&t, "a", &["--commands", "display,silent"]);
        let b = ext(&t, "b", &["--grandchild"]);
        let mut z = start(&t, &[a, b], &[], &[]);
        z.send("/display up");
        z.wait_line("[a] display:up", |l| l == "[a] display:up");
        let pids = children_of(z.pid);
        assert_eq!(pids.len(), 2, "{pids:?}");
        // A command in flight does not hold the exit up.
        z.send("/silent");
        z.signal(sig);
        let status = z.wait_exit(LINE_WAIT);
        assert_eq!(status.code(), Some(code), "signal {sig}: {status:?}\n{}", z.context());
        assert_gone(&pids);
    }
}

#[test]
fn reload_restarts_extensions() {
    let t = TempDir::new("console-reload");
    let a = ext(&t, "a", &["--commands", "display"]);
    let s = run(&t, &[a], &["/display one", "/reload-ext", "/display two"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line("reloaded: stopped 1, loaded 1, ready 1");
    s.has_line("[a] display:two");

    // A load error is printed once per load, as it happens.
    let t = TempDir::new("console-reload-error");
    let b = ext(&t, "b", &["--exit-now"]);
    let s = run(&t, &[b], &["/reload-ext"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line("reloaded: stopped 1, loaded 1, ready 0");
    let failed = s.lines().iter().filter(|l| l.contains("failed to load")).count();
    assert_eq!(failed, 2, "{}", s.out);
    assert!(s.lines().iter().all(|l| !l.starts_with("[b] failed to load") || l.contains("(see 'zot ext logs b')")), "{}", s.out);
}

#[test]
fn restart_starts_one_extension_anew() {
    // docs/protocol.md §4: `/restart NAME` does what serve's `restart` does.
    let t = TempDir::new("console-restart");
    let a = ext(&t, "a", &["--commands", "display"]);
    let s = run(&t, &[a], &["/display one", "/restart a", "/display two", "/restart nope"], true, &[]);
    assert_eq!(s.code, 0);
    assert!(s.lines().iter().any(|l| l.starts_with("restarted a (pid ")), "{}", s.out);
    s.has_line("[a] display:two");
    assert!(s.out.contains("unknown extension \"nope\""), "{}", s.out);
    let log = std::fs::read_to_string(t.path().join("zot-home/logs/ext-a.log")).unwrap_or_default();
    assert_eq!(log.matches("starting a from").count(), 2, "{log}");
}

#[test]
fn a_mistyped_ext_path_fails_a_piped_session() {
    let t = TempDir::new("console-missing-ext");
    let missing = t.path().join("exts").join("not-there");
    let mut z = start(&t, std::slice::from_ref(&missing), &[], &[]);
    let out = z.read_to_end(LINE_WAIT);
    assert_eq!(z.exit_code(LINE_WAIT), 1, "{}", z.context());
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(z.stderr_text(), format!("zot: --ext {}: no such file or directory\n", missing.display()));
}
