//! The interactive session (`zot` without a subcommand) driven through a
//! pipe, its commands: command actions, tool listings and help, tool calls
//! and their events, interceptors, the built-in event and intercept
//! commands, plain text as a prompt, notifications, panel keys, a crash,
//! and control sequences and colour kept off a pipe. stdin is not a
//! terminal, so there is no prompt, no banner and no colour. Every run
//! gets its own `ZOT_HOME`, `--cwd` and extension folders.

mod common;
#[path = "common/console_pipe.rs"]
mod console_pipe;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{write_manifest, TempDir};
use console_pipe::*;
use serde_json::{json, Value};

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
        ["help", "commands", "tools", "tool", "resources", "read", "event", "intercept", "key", "reload-ext", "extensions", "exit"]
    {
        assert!(s.lines().iter().any(|l| l.starts_with(&format!("  /{builtin} "))), "no /{builtin} in:\n{}", s.out);
    }
    s.has_line("  /help                  show this help");
    assert!(!s.out.contains("help from a"), "{}", s.out);
    let help = s.index("built-in commands:");
    assert_eq!(s.lines()[help + 1], "  /help                  show this help");
    // Each command's arguments beside its name, not in the description.
    s.has_line("  /tool NAME JSON        call a tool as the model would (intercepts, event, call)");
    s.has_line("  /key PANEL KEY [TEXT]  press a key in an extension's panel");
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
    // It does not come back by itself (no `restart` declared): the line
    // says how to bring it back.
    s.has_line(r#"[a] exited (exit code 4); not restarted: /restart a starts it again, and "restart": "on-failure" in its manifest brings it back by itself"#);
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
