//! A piped console session as extensions see it: the session lifecycle
//! events in order, what extensions submit (a prompt action, `submit`,
//! `submit_slash`) and when notes are printed, restarts and a crash loop
//! one line each, and an interactive tool call that waits for the script.

mod common;
#[path = "common/console_pipe.rs"]
mod console_pipe;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{write_manifest, TempDir};
use console_pipe::*;
use serde_json::{json, Value};
use std::time::Duration;
use zot_proc::LINE_WAIT;

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
