//! The interactive session on a pseudo-terminal (`openpty`): the line
//! editor's keys, the history in `$ZOT_HOME/history`, Tab completion, a
//! note arriving while a line is half typed, Ctrl-C cancelling a tool call
//! in flight, the ways out (two Ctrl-C, Ctrl-D), the terminal mode
//! restored afterwards, and panels drawn in place that take the keys. The
//! test types bytes into the master side and reads the screen bytes back
//! (tests/common/term.rs).

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/term.rs"]
mod term;

use common::TempDir;
use std::path::{Path, PathBuf};
use term::{tty_ext, Term, Vt, LEFT, RIGHT};

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

const UP: &str = "\x1b[A";

#[test]
fn editing_keys_history_and_completion() {
    let t = TempDir::new("tty-edit");
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let mut at = z.wait_for("zot> ", 0);
    // Ctrl-A, right four times, insert: "/dislay" becomes "/display".
    z.typed(&format!("/dislay hi\x01{}p\x05\r", RIGHT.repeat(4)));
    at = z.wait_for("[tty] shown:hi\r\n", at);
    // Ctrl-U kills the whole line.
    z.typed("garbage\x15/display u\r");
    at = z.wait_for("[tty] shown:u\r\n", at);
    // Ctrl-K kills to the end; Ctrl-W the word before the cursor.
    z.typed(&format!("/display kXYZ{}\x0b\r", LEFT.repeat(3)));
    at = z.wait_for("[tty] shown:k\r\n", at);
    z.typed("/display a bbb\x17w\r");
    at = z.wait_for("[tty] shown:a w\r\n", at);
    // Backspace, and Delete under the cursor.
    z.typed("/display bx\x7f\r");
    at = z.wait_for("[tty] shown:b\r\n", at);
    z.typed(&format!("/display dX{LEFT}\x1b[3~\r"));
    at = z.wait_for("[tty] shown:d\r\n", at);
    // Up twice: the entry before the last one.
    z.typed(&format!("{UP}{UP}\r"));
    at = z.wait_for("[tty] shown:b\r\n", at);
    // Tab completes a command, and a tool name after /tool.
    z.typed("/disp\t");
    at = z.wait_for("/display ", at);
    z.typed("tab\r");
    at = z.wait_for("[tty] shown:tab\r\n", at);
    z.typed("/tool ha\t");
    at = z.wait_for("/tool hang ", at);
    // Ctrl-C clears a typed line: it does not run.
    z.typed("\x15/display never\x03/display ok\r");
    at = z.wait_for("[tty] shown:ok\r\n", at);
    assert!(!z.text().contains("shown:never"), "{:?}", z.text());
    // Ctrl-D on an empty line prints a newline and ends the session.
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
    let tail = &z.text()[at..];
    assert!(tail.ends_with("zot> \x1b[K\r\n"), "{tail:?}");
    z.assert_cooked();
    let history = std::fs::read_to_string(z.home.join("history")).expect("history file");
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(
        lines,
        [
            "/display hi",
            "/display u",
            "/display k",
            "/display a w",
            "/display b",
            "/display d",
            "/display b",
            "/display tab",
            "/display ok"
        ]
    );

    // A new session recalls the last entry from the file.
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let at = z.wait_for("zot> ", 0);
    z.typed(&format!("{UP}\r"));
    z.wait_for("[tty] shown:ok\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0);
}

#[test]
fn notes_print_above_the_line_and_ctrl_c_cancels_a_call() {
    let t = TempDir::new("tty-notes");
    let fifo = t.path().join("tick");
    mkfifo(&fifo);
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let mut at = z.wait_for("zot> ", 0);
    z.typed(&format!("/arm {}\r", fifo.display()));
    at = z.wait_for("[tty] armed\r\n", at);
    at = z.wait_for("zot> ", at);
    // Half a line typed, then a note arrives from the extension.
    z.typed("/display mid");
    at = z.wait_for("/display mid", at);
    std::fs::write(&fifo, "x").expect("write the fifo");
    at = z.wait_for("[tty] tick\r\n", at);
    // Printed on a cleared line above, then the prompt and the partial
    // line drawn again.
    let screen = z.text();
    let note = screen[..at].rfind("[tty] tick").unwrap_or(0);
    assert!(screen[..note].ends_with("\r\x1b[K"), "{:?}", &screen[note.saturating_sub(40)..at]);
    at = z.wait_for("zot> /display mid", at);
    z.typed(" done\r");
    at = z.wait_for("[tty] shown:mid done\r\n", at);

    // Ctrl-C while a tool call is in flight cancels it; the session goes on.
    z.typed("/tool hang {}\r\x03");
    at = z.wait_for("was cancelled by the caller", at);
    at = z.wait_for("zot> ", at);
    z.typed("/display still here\r");
    at = z.wait_for("[tty] shown:still here\r\n", at);

    // A command cannot be cancelled: Ctrl-C says so, and two of them do not
    // end the session once it is answered (here: its timeout).
    z.typed("/stall\r\x03\x03");
    at = z.wait_for("(this cannot be cancelled; waiting for its answer or its timeout)", at);
    at = z.wait_for("(this cannot be cancelled; waiting for its answer or its timeout)", at);
    at = z.wait_for("did not answer", at);
    z.typed("/display alive\r");
    at = z.wait_for("[tty] shown:alive\r\n", at);

    // On an empty line, one Ctrl-C says how to leave; the second leaves.
    z.typed("\x03");
    z.wait_for("(Ctrl-C again or Ctrl-D to leave)", at);
    z.typed("\x03");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
    z.assert_cooked();
}

/// An extension running tests/fixtures/calls.py with `cfg`; what reaches
/// it is noted in `<t>/<name>.seen`.
fn calls_ext(t: &TempDir, name: &str, mut cfg: serde_json::Value) -> PathBuf {
    cfg["name"] = serde_json::json!(name);
    cfg["log"] = serde_json::json!(t.path().join(format!("{name}.seen")).display().to_string());
    let args = [common::fixture("calls.py").display().to_string(), cfg.to_string()];
    common::write_manifest(&t.path().join("exts"), name, serde_json::json!({"name": name, "exec": "python3", "args": args}))
}

#[test]
fn ctrl_c_while_the_intercept_chain_runs_means_the_tool_never_runs() {
    // docs/protocol.md §6.1: a call cancelled before it reached its tool never
    // reaches it. The interceptor answers 1.5 s later.
    let t = TempDir::new("tty-cancel-chain");
    let t1 = calls_ext(&t, "t1", serde_json::json!({"tools": ["target"], "commands": ["t1ping"]}));
    let g = calls_ext(&t, "g", serde_json::json!({"intercepts": ["tool_call"], "intercept_ms": 1500, "commands": ["gping"]}));
    let seen = |name: &str| std::fs::read_to_string(t.path().join(format!("{name}.seen"))).unwrap_or_default();
    let mut z = Term::spawn(&t, &[t1, g]);
    let mut at = z.wait_for("zot> ", 0);
    z.typed("/tool target {\"x\":1}\r\x03");
    at = z.wait_for("error: tool target of extension \"t1\" was cancelled by the caller", at);
    at = z.wait_for("zot> ", at);
    // The interceptor's late answer arrives; g's frames are read in order,
    // so once its command is answered that answer was handled, and once
    // t1's is, a tool call sent to t1 before it would have reached it.
    assert!(common::wait_until(zot_proc::LINE_WAIT, || seen("g").contains("intercept replied")), "{}", seen("g"));
    z.typed("/gping\r");
    at = z.wait_for("[g] g\r\n", at);
    z.typed("/t1ping\r");
    at = z.wait_for("[t1] t1\r\n", at);
    assert!(!seen("t1").contains("tool_call target"), "the target ran: {}", seen("t1"));
    // Control: not cancelled, the same call runs once the interceptor answers.
    z.typed("/tool target {\"x\":2}\r");
    at = z.wait_for("[t1] {\"by\": \"t1\"", at);
    assert!(seen("t1").contains("tool_call target"), "{}", seen("t1"));
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn a_termination_signal_restores_the_terminal() {
    let t = TempDir::new("tty-signal");
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let at = z.wait_for("zot> ", 0);
    z.typed("/display half");
    z.wait_for("/display half", at);
    // SAFETY: signalling the child zot started by this test.
    unsafe { libc::kill(z.child.id() as i32, libc::SIGTERM) };
    assert_eq!(z.exit_code(), 143);
    z.assert_cooked();
}

#[test]
fn keys_answer_an_interactive_tools_panel_and_a_submitted_slash_runs_at_once() {
    let t = TempDir::new("tty-panel");
    let gate = t.path().join("gate");
    let a = common::py_ext(&t.path().join("exts"), "a", "a", &["--interactive-tools", "ask", "--commands", "display,submit_when"]);
    let mut z = Term::spawn(&t, &[a]);
    let mut at = z.wait_for("zot> ", 0);
    // While the interactive tool waits, keys go to its panel as panel_key.
    z.typed("/tool ask {}\r");
    at = z.wait_for("enter: yes, esc: no", at);
    z.typed(&format!("q{UP}\x1b[5~\x1b[6~\t\x7f\x1b[3~\x1b[H\x1b[F\x1b[B{RIGHT}{LEFT}\r"));
    at = z.wait_for("[a] keys rune:q up pageup pagedown tab backspace delete home end down right left\r\n", at);
    z.typed("/tool ask {}\r");
    at = z.wait_for("enter: yes, esc: no", at);
    z.typed("\x1b");
    at = z.wait_for("[a] declined\r\n", at);
    // Ctrl-C still cancels the call.
    z.typed("/tool ask {}\r");
    at = z.wait_for("enter: yes, esc: no", at);
    z.typed("\x03");
    at = z.wait_for("was cancelled by the caller", at);
    at = z.wait_for("zot> ", at);

    // A slash command submitted while a line is half typed runs at once;
    // the prompt and the half line come back below it.
    z.typed(&format!("/submit_when {}\r", gate.display()));
    z.typed("/display mid");
    at = z.wait_for("/display mid", at);
    std::fs::write(&gate, "").expect("open the gate");
    at = z.wait_for("[a] display:later\r\n", at);
    at = z.wait_for("zot> /display mid", at);
    z.typed(" done\r");
    at = z.wait_for("[a] display:mid done\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
    z.assert_cooked();
}

#[test]
fn wide_characters_move_the_cursor_by_their_display_width() {
    let t = TempDir::new("tty-wide");
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let at = z.wait_for("zot> ", 0);
    // Each CJK character is two columns: Home is column 5, right after
    // the prompt, and one Left steps over a whole character.
    z.typed("\u{65e5}\u{672c}\u{8a9e}\x01a");
    z.wait_cursor(120, "zot> a\u{65e5}\u{672c}\u{8a9e}", 6);
    z.typed(&format!("\x05{LEFT}b"));
    z.wait_cursor(120, "zot> a\u{65e5}\u{672c}b\u{8a9e}", 11);
    // Emoji are two columns as well (Ctrl-E Ctrl-U: a new line).
    z.typed(&format!("\x05\x15\u{1f600}\u{1f600}{LEFT}c"));
    z.wait_cursor(120, "zot> \u{1f600}c\u{1f600}", 8);
    // A combining accent moves with its letter; Backspace takes both.
    z.typed(&format!("\x05\x15e\u{301}x{LEFT}{LEFT}d"));
    z.wait_cursor(120, "zot> dex", 6);
    z.typed(&format!("{RIGHT}\x7f"));
    z.wait_cursor(120, "zot> dx", 6);
    z.typed("\x05\x15/display \u{65e5}\u{672c}\u{8a9e}\r");
    z.wait_for("[tty] shown:\u{65e5}\u{672c}\u{8a9e}\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
}

#[test]
fn a_line_wider_than_the_terminal_scrolls_in_one_row() {
    let t = TempDir::new("tty-long");
    let mut z = Term::spawn_sized(&t, &[tty_ext(&t)], 40);
    let at = z.wait_for("zot> ", 0);
    let long = "x".repeat(100);
    z.typed(&format!("/display {long}"));
    // The end of the line in view, the cursor in the last free column,
    // and one prompt row however many redraws there were.
    let vt = z.wait_cursor(40, "zot> ", 39);
    let prompts = (0..vt.rows.len()).filter(|r| vt.row_text(*r).contains("zot> ")).count();
    assert_eq!(prompts, 1, "{:#?}", (0..vt.rows.len()).map(|r| vt.row_text(r)).collect::<Vec<_>>());
    assert!(vt.row_text(vt.row).ends_with("xxxx"), "{:?}", vt.row_text(vt.row));
    // Home shows the start again; Enter runs the whole line.
    z.typed("\x01");
    z.wait_cursor(40, "zot> /display xxx", 5);
    z.typed("\r");
    z.wait_for(&format!("[tty] shown:{long}"), at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
}

#[test]
fn tab_completion_ignores_case_as_commands_do() {
    let t = TempDir::new("tty-tab-case");
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let mut at = z.wait_for("zot> ", 0);
    // The typed word takes the command's own spelling.
    z.typed("/DISP\t");
    at = z.wait_for("zot> /display ", at);
    z.typed("case\r");
    z.wait_for("[tty] shown:case\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
}

fn todo_ext(t: &TempDir) -> PathBuf {
    let frames = t.path().join("frames.jsonl");
    common::write_manifest(
        &t.path().join("exts"),
        "todo",
        serde_json::json!({"name": "todo", "exec": "python3", "args": [common::fixture("todo_panel.py"), frames]}),
    )
}

/// The `panel_key` and `panel_close` frames the todo fixture got, as
/// `key` or `key:text`, and `close:ID`.
fn panel_frames(t: &TempDir) -> Vec<String> {
    let text = std::fs::read_to_string(t.path().join("frames.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|f| match f["type"].as_str() {
            Some("panel_key") => Some(match f["text"].as_str() {
                Some(text) => format!("{}:{}:{text}", f["panel_id"].as_str().unwrap_or(""), f["key"].as_str().unwrap_or("")),
                None => format!("{}:{}", f["panel_id"].as_str().unwrap_or(""), f["key"].as_str().unwrap_or("")),
            }),
            Some("panel_close") => Some(format!("close:{}", f["panel_id"].as_str().unwrap_or(""))),
            _ => None,
        })
        .collect()
}

/// The rows of the screen as `vt` holds them.
fn rows(vt: &Vt) -> Vec<String> {
    (0..vt.rows.len()).map(|r| vt.row_text(r)).collect()
}

#[test]
fn an_open_panel_takes_the_keys_and_is_redrawn_in_place() {
    let t = TempDir::new("tty-todo");
    let mut z = Term::spawn(&t, &[todo_ext(&t)]);
    let mut at = z.wait_for("zot> ", 0);
    z.typed("/todo\r");
    at = z.wait_for("┌─ [todo] Todos ", at);
    at = z.wait_for("(keys go to the panel; Ctrl-O: the prompt, Ctrl-C: close it)", at);
    // Typed keys go to the panel: `a`, the text, Enter adds an item; `x`
    // toggles it. Nothing reaches the prompt.
    z.typed("a");
    at = z.wait_for("new: _", at);
    z.typed("buy milkk\x7f");
    at = z.wait_for("new: buy milk_", at);
    z.typed("\r");
    at = z.wait_for("[ ] buy milk  <", at);
    z.typed("x");
    at = z.wait_for("[x] buy milk  <", at);
    // One panel on screen, redrawn in place; the note above it.
    let vt = Vt::of(&z.text(), 120);
    let screen = rows(&vt);
    let tops: Vec<usize> = (0..screen.len()).filter(|r| screen[*r].starts_with("┌─ [todo] Todos")).collect();
    assert_eq!(tops.len(), 1, "{screen:#?}");
    let note = screen.iter().position(|r| r == "[todo] added buy milk").unwrap_or_else(|| panic!("no note: {screen:#?}"));
    assert!(note < tops[0], "{screen:#?}");
    assert!(screen.iter().any(|r| r.starts_with("│ [x] buy milk  <")), "{screen:#?}");
    assert!(!screen.iter().any(|r| r.contains("→ model")), "{screen:#?}");

    // No line of its own for the extension's tag: it is in the frame.
    assert!(!screen.iter().any(|r| r == "[todo]"), "{screen:#?}");
    // Ctrl-O: the prompt has the keys, the panel stays, and a row under
    // it says how to get back; back again.
    z.typed("\x0f");
    at = z.wait_for("(Ctrl-O: back to the panel)", at);
    at = z.wait_for("zot> ", at);
    z.typed("/echo hi\r");
    at = z.wait_for("[todo] shown:hi\r\n", at);
    at = z.wait_for("zot> ", at);
    let screen = rows(&Vt::of(&z.text(), 120));
    let tops: Vec<usize> = (0..screen.len()).filter(|r| screen[*r].starts_with("┌─ [todo] Todos")).collect();
    let echoed = screen.iter().position(|r| r == "[todo] shown:hi").expect("echo shown");
    assert_eq!(tops.len(), 1, "{screen:#?}");
    assert!(echoed < tops[0] && screen.last().is_some_and(|r| r.starts_with("zot> ")), "{screen:#?}");
    // A half-typed line waits while the panel has the keys.
    z.typed("/echo half\x0f");
    at = z.wait_for("Ctrl-O: the prompt", at);
    z.typed("x");
    at = z.wait_for("[ ] buy milk  <", at);
    z.typed("\x0f");
    at = z.wait_for("zot> /echo half", at);
    z.typed("\r");
    at = z.wait_for("[todo] shown:half\r\n", at);
    z.typed("\x0f");
    at = z.wait_for("Ctrl-O: the prompt", at);

    // Esc closes the panel from the console's side, as upstream zot's
    // interactive host does (the extension, which never closes it itself,
    // gets panel_close and no key): the prompt is back.
    z.typed("\x1b");
    at = z.wait_for("[todo] (panel todos-main closed)", at);
    at = z.wait_for("zot> ", at);
    z.typed("/echo back\r");
    at = z.wait_for("[todo] shown:back\r\n", at);
    let screen = rows(&Vt::of(&z.text(), 120));
    assert!(!screen.iter().any(|r| r.starts_with("┌─ [todo] Todos")), "{screen:#?}");

    // The user closes it (Ctrl-C): the extension is told with panel_close.
    z.typed("/todo\r");
    at = z.wait_for("Ctrl-O: the prompt", at);
    z.typed("\x03");
    at = z.wait_for("[todo] (panel todos-main closed)", at);
    at = z.wait_for("zot> ", at);

    // Two open panels: the newest (an extension's own open_panel) has the
    // keys; when it closes the prompt has them, and Ctrl-O reaches the older.
    z.typed("/todo\r");
    at = z.wait_for("Ctrl-O: the prompt", at);
    z.typed("\x0f/popup\r");
    at = z.wait_for("┌─ [todo] Popup ", at);
    at = z.wait_for("Ctrl-O: the prompt", at);
    z.typed("\x1b");
    at = z.wait_for("[todo] (panel popup closed)", at);
    at = z.wait_for("zot> ", at);
    z.typed("\x0f\x1b");
    at = z.wait_for("[todo] (panel todos-main closed)", at);
    at = z.wait_for("zot> ", at);
    z.typed("/echo end\r");
    at = z.wait_for("[todo] shown:end\r\n", at);

    // The panels of an extension that exits go with it; the prompt has the keys.
    z.typed("/todo\r");
    at = z.wait_for("Ctrl-O: the prompt", at);
    z.typed("\x0f/crash\r");
    at = z.wait_for("[todo] exited (", at);
    at = z.wait_for("zot> ", at);
    z.typed("/help\r");
    at = z.wait_for("built-in commands:", at);
    at = z.wait_for("zot> ", at);
    let screen = rows(&Vt::of(&z.text(), 120));
    assert!(!screen.iter().any(|r| r.starts_with("┌─ [todo] Todos")), "{screen:#?}");
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
    z.assert_cooked();
    let mut want: Vec<String> = "abuy milkk".chars().map(|c| format!("todos-main:rune:{c}")).collect();
    want.extend(["todos-main:backspace", "todos-main:enter", "todos-main:rune:x", "todos-main:rune:x", "close:todos-main", "close:todos-main", "close:popup", "close:todos-main"].map(String::from));
    assert_eq!(panel_frames(&t), want);
}

#[test]
fn ctrl_r_searches_the_history_and_ctrl_l_clears_the_screen() {
    let t = TempDir::new("tty-search");
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let mut at = z.wait_for("zot> ", 0);
    for line in ["/display apple", "/display banana", "/display cherry"] {
        z.typed(&format!("{line}\r"));
        at = z.wait_for(&format!("[tty] shown:{}\r\n", &line[9..]), at);
    }
    // Ctrl-R, then what to look for: the newest entry holding it, run by Enter.
    z.typed("\x12ban");
    at = z.wait_for("(history search 'ban'): /display banana", at);
    z.typed("\r");
    at = z.wait_for("[tty] shown:banana\r\n", at);
    // Ctrl-R again finds the one before; Esc gives the line back as it was.
    z.typed("/disp\x12e");
    at = z.wait_for("(history search 'e'): /display cherry", at);
    z.typed("\x12");
    at = z.wait_for("(history search 'e'): /display apple", at);
    z.typed("\x1b");
    at = z.wait_for("zot> /disp", at);
    z.typed("lay kept\r");
    at = z.wait_for("[tty] shown:kept\r\n", at);
    // Ctrl-L clears the screen and draws the prompt again at its top.
    z.typed("/display half\x0c");
    at = z.wait_for("\x1b[H\x1b[2J", at);
    at = z.wait_for("zot> /display half", at);
    z.typed("\r");
    at = z.wait_for("[tty] shown:half\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}
