//! The interactive session (`zot` without a subcommand) driven through a
//! pipe: stdin is not a terminal, so there is no prompt, no banner and no
//! colour. Each test writes a script of lines, then ends the input (or
//! types `/exit`), and checks what reached stdout, the exit code, and that
//! no extension process is left. Every run gets its own `ZOT_HOME`,
//! `--cwd` and extension folders.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use zot_proc::{assert_gone_within, children_of, session_args, Zot, LINE_WAIT};

/// An extension folder under `t/exts/<name>` running the Python fixture.
fn ext(t: &TempDir, name: &str, flags: &[&str]) -> PathBuf {
    py_ext(&t.path().join("exts"), name, name, flags)
}

/// `zot --no-ext --cwd T/cwd <FAST> <extra> --ext D...` with piped stdio.
fn start(t: &TempDir, exts: &[PathBuf], extra: &[&str], env: &[(&str, &str)]) -> Zot {
    Zot::spawn(t.path(), &session_args(t.path(), None, exts, extra), env)
}

fn assert_gone(pids: &[u32]) {
    assert_gone_within(pids, LINE_WAIT, "");
}

/// What one scripted session printed.
struct Session {
    code: i32,
    out: String,
    /// Stderr and the extensions' logs, for failure messages.
    context: String,
}

impl Session {
    fn lines(&self) -> Vec<&str> {
        self.out.lines().collect()
    }

    /// Panics unless some line is exactly `line`.
    fn has_line(&self, line: &str) {
        assert!(self.lines().contains(&line), "no line {line:?} in:\n{}\n{}", self.out, self.context);
    }

    /// Panics unless `lines` appear in this order, each one right after the other.
    fn has_block(&self, lines: &[&str]) {
        let all = self.lines();
        let found = all.windows(lines.len()).any(|w| w == lines);
        assert!(found, "no block {lines:#?} in:\n{}\n{}", self.out, self.context);
    }

    /// The index of the first line equal to `line`.
    fn index(&self, line: &str) -> usize {
        let i = self.lines().iter().position(|l| *l == line);
        i.unwrap_or_else(|| panic!("no line {line:?} in:\n{}\n{}", self.out, self.context))
    }
}

/// Runs `script` through a console session, then ends the input (unless
/// `eof` is false: the script must end the session itself). Checks the
/// exit code is 0-or-reported, that stdout has no escape byte, no prompt
/// and no banner, and that every extension process is gone afterwards.
fn run(t: &TempDir, exts: &[PathBuf], script: &[&str], eof: bool, env: &[(&str, &str)]) -> Session {
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

// ----- commands --------------------------------------------------------------

#[test]
fn command_actions_are_shown() {
    let t = TempDir::new("console-commands");
    let a = ext(&t, "a", &["--commands", "display,prompt,insert,err,panel,noop,explicit_noop,null_action"]);
    let s = run(
        &t,
        &[a],
        &[
            "/display x",
            "/prompt hi there",
            "/insert y",
            "/err bad",
            "/panel",
            "/noop",
            "/explicit_noop",
            "/null_action",
            "/nope now",
            "/",
            "/display   last   ",
        ],
        true,
        &[],
    );
    assert_eq!(s.code, 0);
    s.has_line("[a] display:x");
    s.has_line("[a] → submit: prompt:hi there");
    s.has_line("[a] → insert: insert:y");
    s.has_line("[a] error: failed: bad");
    s.has_block(&[
        "[a]",
        "┌─ T (p1) ─┐",
        "│ a        │",
        "│ b        │",
        "├──────────┤",
        "│ f        │",
        "└──────────┘",
    ]);
    s.has_line("error: unknown command /nope");
    s.has_line("error: empty command; try /help");
    s.has_line("[a] display:last");
    // `"action": null` is a noop, not a malformed reply.
    assert!(!s.out.contains("malformed"), "{}", s.out);
    // Replies come in script order; a noop prints nothing.
    assert!(s.index("[a] display:x") < s.index("[a] → submit: prompt:hi there"));
    assert_eq!(s.index("error: unknown command /nope"), s.index("└──────────┘") + 1);
}

#[test]
fn tools_listings_and_help() {
    let t = TempDir::new("console-lists");
    let a = ext(&t, "a", &["--commands", "help,display", "--tools", "echo,image"]);
    let b = ext(&t, "b", &["--commands", "own", "--tools", "echo,fail"]);
    let missing = write_manifest(&t.path().join("exts"), "missing", json!({"name": "missing", "exec": "./not-there"}));
    let s = run(&t, &[a.clone(), b.clone(), missing], &["/tools", "/commands", "/help", "/extensions"], true, &[]);
    assert_eq!(s.code, 0);
    assert!(s.out.contains("[missing] failed to load: "), "{}", s.out);
    // A crash at start points at the log it left.
    assert!(s.lines().iter().any(|l| l.starts_with("[missing] failed to load: ") && l.ends_with(" (see 'zot ext logs missing')")), "{}", s.out);
    // /tools: effective tools in load order, the shadowed one reported.
    s.has_block(&[
        "  echo           echo from a [a]",
        "  image          image from a [a]",
        "  fail           fail from b [b]",
        "  echo           (shadowed, not callable) [b]",
    ]);
    // /commands: the extension's `help` is shadowed by the built-in.
    s.has_block(&[
        "  /display      display from a [a]",
        "  /own          own from b [b]",
        "  /help         (shadowed, not callable) [a]",
    ]);
    // /help: the built-ins, then the extension commands.
    s.has_line("built-in commands:");
    for builtin in
        ["help", "commands", "tools", "tool", "event", "intercept", "key", "reload-ext", "extensions", "exit"]
    {
        assert!(s.lines().iter().any(|l| l.starts_with(&format!("  /{builtin} "))), "no /{builtin} in:\n{}", s.out);
    }
    s.has_line("  /help         show this help");
    assert!(!s.out.contains("help from a"), "{}", s.out);
    let help = s.index("built-in commands:");
    assert_eq!(s.lines()[help + 1], "  /help         show this help");
    s.has_line("anything else is a prompt that would go to the model");
    // /extensions
    assert!(s
        .lines()
        .iter()
        .any(|l| l.starts_with("  a ") && l.contains("ready") && l.contains(" full access ") && l.ends_with(&a.display().to_string())));
    assert!(s.lines().iter().any(|l| l.starts_with("  b ") && l.contains("ready") && l.contains(" ext ")));
    assert!(s.lines().iter().any(|l| l.starts_with("  missing ") && l.contains("failed") && l.contains("not-there")));
}

#[test]
fn tool_calls_and_results() {
    let t = TempDir::new("console-tool");
    let a = ext(&t, "a", &["--tools", "echo,image,fail,silent"]);
    let s = run(
        &t,
        &[a],
        &[
            r#"/tool echo {"a":1}"#,
            "/tool echo",
            "/tool image {}",
            "/tool fail {}",
            "/tool nope {}",
            "/tool echo [1]",
            "/tool echo {bad",
            "/tool",
        ],
        true,
        &[],
    );
    assert_eq!(s.code, 0);
    s.has_line(r#"[a] {"tool": "echo", "args": {"a": 1}, "from": "a"}"#);
    s.has_line(r#"[a] {"tool": "echo", "args": {}, "from": "a"}"#);
    s.has_block(&["[a] a picture", "[image image/png, 12 base64 bytes]"]);
    s.has_line("[a] tool error: it failed");
    s.has_line(r#"error: unknown tool "nope""#);
    s.has_line("error: arguments must be a JSON object");
    assert!(s.lines().iter().any(|l| l.starts_with("error: invalid JSON")), "{}", s.out);
    s.has_line("error: usage: /tool NAME JSON");
    assert!(!s.out.contains("args rewritten"), "{}", s.out);
}

#[test]
fn each_tool_call_is_followed_by_its_tool_result_event() {
    // docs/protocol.md §6.4, as an agent sends it.
    let t = TempDir::new("console-tool-result");
    let a = ext(&t, "a", &["--tools", "echo,fail,events", "--events", "tool_result"]);
    let s = run(&t, &[a], &[r#"/tool echo {"a":1}"#, "/tool fail {}", "/tool events"], true, &[]);
    assert_eq!(s.code, 0);
    let events = s.lines().into_iter().find_map(|l| l.strip_prefix("[a] [")).expect("events output");
    let seen: Value = serde_json::from_str(&format!("[{events}")).unwrap();
    let echo = r#"{"tool": "echo", "args": {"a": 1}, "from": "a"}"#;
    assert_eq!(
        seen,
        json!([
            {"event": "tool_result", "tool_id": "console-1", "tool_name": "echo", "tool_args": {"a": 1}, "status": "completed",
             "executed": true, "result": {"content": [{"type": "text", "text": echo}], "is_error": false}},
            {"event": "tool_result", "tool_id": "console-2", "tool_name": "fail", "tool_args": {}, "status": "failed",
             "executed": true, "result": {"content": [{"type": "text", "text": "it failed"}], "is_error": true}},
        ])
    );
}

#[test]
fn tool_call_interceptors_rewrite_and_block() {
    let t = TempDir::new("console-tool-intercept");
    let a = ext(&t, "a", &["--tools", "echo"]);
    let rw = ext(&t, "rw", &["--intercepts", "tool_call", "--intercept-mode", "rewrite"]);
    let s = run(&t, &[a.clone(), rw], &[r#"/tool echo {"a":1}"#], true, &[]);
    assert_eq!(s.code, 0);
    s.has_block(&[
        r#"args rewritten: {"a":1,"by_rw":true}"#,
        r#"[a] {"tool": "echo", "args": {"a": 1, "by_rw": true}, "from": "a"}"#,
    ]);

    let t = TempDir::new("console-tool-block");
    let a = ext(&t, "a", &["--tools", "echo"]);
    let bl = ext(&t, "bl", &["--intercepts", "tool_call", "--intercept-mode", "block"]);
    let s = run(
        &t,
        &[a, bl],
        &[r#"/tool echo {"a":1}"#, "/intercept tool_call {\"tool_name\":\"echo\",\"tool_args\":{}}"],
        true,
        &[],
    );
    assert_eq!(s.code, 0);
    s.has_line("tool call blocked: blocked by bl");
    assert!(!s.out.contains(r#""tool": "echo""#), "the blocked tool ran:\n{}", s.out);
    s.has_line(r#"{"block":true,"reason":"blocked by bl"}"#);
}

#[test]
fn events_and_intercept_builtins() {
    let t = TempDir::new("console-events");
    let a = ext(&t, "a", &["--events", "x,y", "--intercepts", "tool_call", "--intercept-mode", "rewrite"]);
    let b = ext(&t, "b", &["--events", "x", "--intercepts", "assistant_message", "--intercept-mode", "replace"]);
    let s = run(
        &t,
        &[a, b],
        &[
            r#"/event x {"k":1}"#,
            "/event y",
            "/event z {}",
            "/event x [1]",
            "/event",
            r#"/intercept tool_call {"tool_id":"t1","tool_name":"echo","tool_args":{"a":1}}"#,
            r#"/intercept assistant_message {"text":"hi"}"#,
            "/intercept turn_start {\"step\":1}",
            "/intercept session_start {}",
        ],
        true,
        &[],
    );
    assert_eq!(s.code, 0);
    s.has_line("event x delivered to 2 extension(s)");
    s.has_line("event y delivered to 1 extension(s)");
    s.has_line("event z delivered to 0 extension(s)");
    s.has_line("error: arguments must be a JSON object");
    s.has_line("error: usage: /event NAME [JSON]");
    s.has_line(r#"{"block":false,"modified_args":{"a":1,"by_a":true}}"#);
    s.has_line(r#"{"block":false,"replace_text":"hi+b"}"#);
    s.has_line(r#"{"block":false}"#);
    assert!(s.lines().iter().any(|l| l.starts_with("error: bad request:") && l.contains("session_start")), "{}", s.out);
}

#[test]
fn plain_text_is_a_prompt_for_the_model() {
    let t = TempDir::new("console-prompt");
    let a = ext(&t, "a", &["--events", "session_start,turn_start,turn_end", "--tools", "events", "--keep-envelope"]);
    let s = run(&t, &[a], &["hello model", "  second   line  ", "/tool events"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line("→ model: hello model");
    s.has_line("→ model: second   line");
    // The lifecycle events went out: session_start once, then a turn per prompt.
    let events = s.lines().into_iter().find_map(|l| l.strip_prefix("[a] ")).expect("events tool output");
    let mut seen: Value = serde_json::from_str(events).unwrap();
    // Every frame carries the envelope: one session id, the cwd, and a
    // strictly increasing sequence (docs/protocol.md §6.4).
    let frames = seen.as_array_mut().expect("a list of events");
    let session_id = frames[0]["session_id"].clone();
    assert!(session_id.is_string(), "{frames:?}");
    let mut last = 0;
    for f in frames.iter_mut() {
        let f = f.as_object_mut().expect("an event object");
        assert_eq!(f.remove("session_id"), Some(session_id.clone()));
        assert!(f.remove("cwd").is_some_and(|c| c.as_str().is_some_and(|c| c.ends_with("/cwd"))), "{f:?}");
        let seq = f.remove("sequence").and_then(|n| n.as_u64()).expect("sequence");
        assert!(seq > last, "sequence {seq} after {last}");
        last = seq;
    }
    assert_eq!(
        seen,
        json!([
            {"event": "session_start"},
            {"event": "turn_start", "step": 1},
            {"event": "turn_end", "stop": "end_turn"},
            {"event": "turn_start", "step": 2},
            {"event": "turn_end", "stop": "end_turn"},
        ])
    );

    let t = TempDir::new("console-prompt-blocked");
    let bl = ext(&t, "bl", &["--intercepts", "turn_start", "--intercept-mode", "block"]);
    let s = run(&t, &[bl], &["hello model"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line("turn blocked: blocked by bl");
    assert!(!s.out.contains("→ model:"), "{}", s.out);
}

#[test]
fn notifications_are_attributed() {
    let t = TempDir::new("console-notes");
    let a = ext(&t, "a", &["--commands", "notify,display"]);
    let s = run(&t, &[a], &["/notify hi", "/display after"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_block(&[
        "[a] note:hi",
        "[a] (notes cleared)",
        "[a] → submit: submit:hi",
        "[a]",
        "┌─ P (p2) ─┐",
        "│ x        │",
        "└──────────┘",
        "[a]",
        "┌─ P2 (p2) ─┐",
        "│ y         │",
        "├───────────┤",
        "│ z         │",
        "└───────────┘",
        "[a] (panel p2 closed)",
        // The submitted prompt runs after the reply that caused it.
        "→ model: submit:hi",
        "[a] display:after",
    ]);
}

#[test]
fn panel_keys_go_to_the_panel_owner() {
    let t = TempDir::new("console-keys");
    let a = ext(&t, "a", &["--commands", "panel", "--tools", "events"]);
    let s =
        run(&t, &[a], &["/key p1 up", "/panel", "/key p1 rune q", "/key p1 bogus", "/key", "/tool events"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line(r#"error: no open panel "p1""#);
    assert!(s.lines().iter().any(|l| l.starts_with(r#"error: bad request: unknown key "bogus""#)), "{}", s.out);
    s.has_line("error: usage: /key PANEL KEY [TEXT]");
    let events = s.lines().into_iter().find_map(|l| l.strip_prefix("[a] [")).expect("events output");
    let seen: Value = serde_json::from_str(&format!("[{events}")).unwrap();
    assert_eq!(seen, json!([{"type": "panel_key", "panel_id": "p1", "key": "rune", "text": "q"}]));
}

#[test]
fn crash_is_reported_and_the_others_still_answer() {
    let t = TempDir::new("console-crash");
    let a = ext(&t, "a", &["--commands", "crash,display"]);
    let b = ext(&t, "b", &["--commands", "other"]);
    let s = run(&t, &[a, b], &["/crash", "/display x", "/other y", "/extensions"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line("[a] exited (exit code 4)");
    s.has_line(r#"error: extension "a" exited: exit code 4"#);
    s.has_line("error: unknown command /display");
    s.has_line("[b] b:other:y");
    assert!(s.index("error: unknown command /display") < s.index("[b] b:other:y"));
    assert!(s.lines().iter().any(|l| l.starts_with("  a ") && l.contains("exited")), "{}", s.out);
}

#[test]
fn control_sequences_are_stripped() {
    let t = TempDir::new("console-escapes");
    let a = ext(&t, "a", &["--commands", "display,notify,prompt,slash", "--tools", "echo"]);
    let s = run(
        &t,
        &[a],
        &[
            // A submitted slash command quoted back in an error.
            "/slash hh\u{1b}]0;PWN\u{7}",
            "/display \u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}x \u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{9b}2Jz\u{7}\r!",
            "/notify \u{1b}[2J\u{1b}[Hcleared?",
            "/prompt \u{1b}[1mbold",
            "plain \u{1b}[4munderlined\u{1b}[0m text",
        ],
        true,
        &[],
    );
    assert_eq!(s.code, 0);
    s.has_line("[a] display:red x link z!");
    s.has_line("[a] note:cleared?");
    s.has_line("[a] → submit: prompt:bold");
    s.has_line("→ model: plain underlined text");
    s.has_line("→ running /hh");
    s.has_line("error: unknown command /hh");
    // No control character at all except newlines.
    let bad: Vec<char> = s.out.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(bad.is_empty(), "control characters {bad:?} in:\n{}", s.out);
}

#[test]
fn no_colour_in_pipe_mode_whatever_the_environment() {
    let t = TempDir::new("console-colour");
    let a = ext(&t, "a", &["--commands", "display,err,notify", "--tools", "fail"]);
    let script = ["/display x", "/err e", "/notify n", "/tool fail {}", "/nope", "/help"];
    let colourful = [("TERM", "xterm-256color"), ("CLICOLOR_FORCE", "1"), ("COLORTERM", "truecolor")];
    let plain = run(&t, std::slice::from_ref(&a), &script, true, &colourful);
    let no_color = run(&t, &[a], &script, true, &[("NO_COLOR", "1"), ("TERM", "xterm-256color")]);
    assert_eq!(plain.code, 0);
    // `run` checked there is no escape byte; NO_COLOR changes nothing.
    assert_eq!(plain.out, no_color.out);
    plain.has_line("[a] error: failed: e");
    plain.has_line("[a] tool error: it failed");
}

// ----- leaving ---------------------------------------------------------------

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

// ----- lifecycle -------------------------------------------------------------

/// The lifecycle fixture's record: `(kind, event)` per frame, and the
/// frames themselves.
fn lifecycle_log(path: &std::path::Path) -> (Vec<(String, String)>, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let frames: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("fixture log line")).collect();
    let names = frames
        .iter()
        .map(|f| (f["kind"].as_str().unwrap_or("").to_string(), f["event"].as_str().unwrap_or("").to_string()))
        .collect();
    (names, frames)
}

#[test]
fn the_console_hosts_the_session_lifecycle() {
    let t = TempDir::new("console-lifecycle");
    let log = t.path().join("lifecycle.log");
    let lc = write_manifest(
        &t.path().join("exts"),
        "lc",
        json!({"name": "lc", "exec": "python3", "args": [common::fixture("lifecycle.py"), log]}),
    );
    let s = run(&t, &[lc], &["first prompt", "/system", "/reload-ext", "second prompt", "/system"], true, &[]);
    assert_eq!(s.code, 0);
    s.has_line("→ model: first prompt");
    let (names, frames) = lifecycle_log(&log);
    let ev = |n: &str| ("event".to_string(), n.to_string());
    let bas = ("event_intercept".to_string(), "before_agent_start".to_string());
    let turn = [ev("turn_start"), ev("assistant_message"), ev("turn_end")];
    let mut want = vec![ev("session_start"), ev("user_prompt_submit"), bas.clone()];
    want.extend(turn.clone());
    // The reload stops the extension (no session_end: the session goes
    // on); the new process is told the session began, and sees the chain
    // again at the next prompt.
    want.extend([ev("session_start"), ev("user_prompt_submit"), bas]);
    want.extend(turn);
    want.push(ev("session_end"));
    assert_eq!(names, want, "{frames:#?}\n{}", s.out);
    let submit = frames.iter().find(|f| f["event"] == "user_prompt_submit").expect("user_prompt_submit");
    assert_eq!(submit["fields"]["text"], "first prompt");
    assert_eq!(frames.last().expect("frames")["fields"]["reason"], "shutdown");
    let first = frames.iter().find(|f| f["event"] == "before_agent_start").expect("before_agent_start");
    assert_eq!(first["fields"]["system_prompt"], "You are a helpful coding assistant.");
    for key in ["agent_run_id", "cwd", "provider", "model", "session_id"] {
        assert!(first["fields"].get(key).is_some(), "no {key} in {first}");
    }
    // /system shows the prompt after the chain, after each load.
    let shown = s.lines().iter().filter(|l| **l == "system prompt: You are a helpful coding assistant. +lc").count();
    assert_eq!(shown, 2, "{}", s.out);
}

#[test]
fn a_prompt_action_and_a_submit_frame_run_as_typed_prompts() {
    // docs/protocol.md §2.1 `submit`, and the `prompt` action: user prompts,
    // with the lifecycle of typed text, after the reply that caused them.
    let t = TempDir::new("console-submit");
    let a = ext(&t, "a", &["--commands", "prompt,notify", "--tools", "events", "--events", "user_prompt_submit,turn_start,assistant_message,turn_end"]);
    let s = run(&t, &[a], &["/prompt hi", "/notify n", "/tool events"], true, &[]);
    assert_eq!(s.code, 0);
    assert_eq!(s.index("→ model: prompt:hi"), s.index("[a] → submit: prompt:hi") + 1, "{}", s.out);
    assert!(s.index("[a] → submit: submit:n") < s.index("→ model: submit:n"), "{}", s.out);
    let events = s.lines().into_iter().find_map(|l| l.strip_prefix("[a] [")).expect("events output");
    let seen: Value = serde_json::from_str(&format!("[{events}")).unwrap();
    let turn = |text: &str, step: u64| {
        vec![
            json!({"event": "user_prompt_submit", "text": text}),
            json!({"event": "turn_start", "step": step}),
            json!({"event": "assistant_message", "text": ""}),
            json!({"event": "turn_end", "stop": "end_turn"}),
        ]
    };
    let mut want = turn("prompt:hi", 1);
    want.extend(turn("submit:n", 2));
    assert_eq!(seen, Value::Array(want), "{}", s.out);
}

#[test]
fn a_note_sent_after_a_reply_is_printed_after_it() {
    // docs/protocol.md §4's order of output, in the console: 10 commands whose
    // extension answers and then sends a note and redraws the answer's panel.
    let t = TempDir::new("console-after");
    let a = ext(&t, "a", &["--commands", "note_after"]);
    let script: Vec<String> = (0..10).map(|i| format!("/note_after {i}")).collect();
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    let s = run(&t, &[a], &script, true, &[]);
    assert_eq!(s.code, 0);
    let lines = s.lines();
    for i in 0..10 {
        let panel = lines.iter().position(|l| l.starts_with(&format!("┌─ T (np{i})"))).unwrap_or_else(|| panic!("no panel {i}:\n{}", s.out));
        let note = s.index(&format!("[a] after:{i}"));
        let redraw = lines.iter().position(|l| l.starts_with(&format!("┌─ T2 (np{i})"))).unwrap_or_else(|| panic!("no redraw {i}:\n{}", s.out));
        assert!(panel < note && note < redraw, "command {i}: reply {panel}, note {note}, redraw {redraw}:\n{}", s.out);
    }
}

#[test]
fn submit_slash_tool_prompt_and_the_marks_of_tools() {
    // docs/protocol.md §6.2 and §6.3 in the console.
    let t = TempDir::new("console-revision");
    let a = ext(&t, "a", &["--rich-tools", "--tools", "echo", "--commands", "slash,display,tool_prompt", "--intercepts", "tool_call"]);
    let s = run(&t, &[a], &["/slash display hi", "/tool_prompt x", "/tools", "/tool nope {}", "/tool asks {}"], true, &[]);
    assert_eq!(s.code, 0);
    // The submitted slash command runs as if typed, after its line.
    s.has_line("[a] → run: /display hi");
    s.has_line("→ running /display hi");
    s.has_line("[a] display:hi");
    // tool_prompt: the tool and its result as a pair, then the prompt.
    let tool = s.index(r#"[a] → tool echo {"q":"x"}"#);
    let result = s.index(r#"[a] {"tool": "echo", "args": {"q": "x"}, "from": "a"}"#);
    let prompt = s.index("→ model: now x");
    assert!(tool < result && result < prompt, "{}", s.out);
    // /tools marks deferred and interactive tools.
    assert!(s.lines().iter().any(|l| l.contains("later") && l.contains("(deferred)")), "{}", s.out);
    assert!(s.lines().iter().any(|l| l.contains("asks") && l.contains("(interactive)")), "{}", s.out);
    // An unknown tool is said at once, before any interceptor is asked.
    s.has_line("error: unknown tool \"nope\"");
    // The console supports interactive tools: the call reaches the extension.
    assert!(!s.out.contains("interactive extension tools require an interactive host"), "{}", s.out);
}

#[test]
fn restarts_and_a_crash_loop_are_one_line_each() {
    // docs/protocol.md §7.1 in the console: a line per restart, and the verdict
    // with where to look.
    let t = TempDir::new("console-restart");
    let a = ext(&t, "a", &["--tools", "echo", "--exit-after-ready", "4"]);
    let mut z = start(&t, &[a], &["--restart", "always", "--hello-timeout", "30"], &[]);
    let verdict = z.wait_line_within(Duration::from_secs(90), "the crash-loop verdict", |l| l.contains("crash loop"));
    assert_eq!(verdict, "[a] gave up after 5 restarts (crash loop); see 'zot ext logs a'");
    let restarts: Vec<String> = z.seen.iter().filter(|l| l.contains("; restart ")).cloned().collect();
    assert_eq!(restarts.len(), 5, "{restarts:?}");
    assert_eq!(restarts[0], "[a] exited (exit code 4); restart 1 in 250 ms");
    // The exit a restart follows has no line of its own; the last one,
    // which none follows, has.
    let bare: Vec<usize> = (0..z.seen.len()).filter(|i| z.seen[*i] == "[a] exited (exit code 4)").collect();
    assert_eq!(bare, [z.seen.len() - 2], "{:#?}", z.seen);
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
}

// ----- while a call waits, and what extensions submit --------------------------

#[test]
fn a_script_answers_an_interactive_tool_and_end_of_input_cancels_it() {
    // docs/protocol.md §6.2: an interactive tool waits for the user, with no
    // deadline. Piped, `/key` lines answer its panel at once, other lines
    // wait their turn.
    let t = TempDir::new("console-interactive");
    let a = ext(&t, "a", &["--interactive-tools", "ask", "--commands", "display"]);
    let script = ["/tool ask {}", "/display queued", "/key ask rune q", "/key ask down", "/key ask enter", "/exit"];
    let s = run(&t, std::slice::from_ref(&a), &script, false, &[]);
    assert_eq!(s.code, 0);
    let panel = s.index("┌─ ask (ask) ─────────┐");
    let answer = s.index("[a] keys rune:q down");
    let queued = s.index("[a] display:queued");
    assert!(panel < answer && answer < queued, "{}", s.out);

    // The end of input cancels the call and ends the session.
    let s = run(&t, &[a], &["/tool ask {}"], true, &[]);
    assert_eq!(s.code, 0);
    assert!(s.lines().iter().any(|l| l.starts_with("error: ") && l.contains("cancelled")), "{}", s.out);
    assert!(s.context.contains("was cancelled"), "the extension got no tool_cancel:\n{}", s.context);

    // A tool that never opens a panel: the `/key` lines read before the
    // end get a grace for it, then the call is cancelled all the same.
    let b = ext(&t, "b", &["--interactive-tools", "hold"]);
    let s = run(&t, &[b], &["/tool hold {}", "/key hold enter"], true, &[]);
    assert_eq!(s.code, 0);
    let skipped = s.index("error: the tool opened no panel; 1 /key line(s) skipped at the end of input");
    let cancelled = s.lines().iter().position(|l| l.starts_with("error: ") && l.contains("cancelled")).unwrap_or(0);
    assert!(skipped < cancelled, "{}", s.out);
}

#[test]
fn a_submitted_slash_runs_when_it_arrives_within_a_budget() {
    // docs/protocol.md §6.3: submit_slash "any time".
    let t = TempDir::new("console-slash-idle");
    let a = ext(&t, "a", &["--commands", "submit_when,display,loop"]);
    let gate = t.path().join("gate");
    let mut z = start(&t, std::slice::from_ref(&a), &[], &[]);
    z.send(&format!("/submit_when {}", gate.display()));
    z.send("/display armed");
    z.wait_line("the reply before the gate", |l| l == "[a] display:armed");
    std::fs::write(&gate, "").expect("open the gate");
    // No input line follows: it runs while the console is idle.
    z.wait_line("the submitted command's run", |l| l == "→ running /display later");
    z.wait_line("its reply", |l| l == "[a] display:later");
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());

    // An extension that keeps submitting itself: 16 runs, then the rest
    // is dropped until the next input line.
    let s = run(&t, &[a], &["/loop x", "/display y", "/loop z"], true, &[]);
    assert_eq!(s.code, 0);
    let y = s.index("[a] display:y");
    let runs = s.lines()[..y].iter().filter(|l| **l == "→ running /loop x").count();
    assert_eq!(runs, 16, "{}", s.out);
    let dropped = s.index("error: 1 more submitted slash commands dropped (at most 16 per line)");
    assert!(dropped < y, "{}", s.out);
    let after = s.lines()[y..].iter().filter(|l| **l == "→ running /loop z").count();
    assert_eq!(after, 16, "{}", s.out);
}
