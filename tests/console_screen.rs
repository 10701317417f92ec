//! The console as a terminal shows it (tests/common/term.rs): grapheme
//! clusters under the cursor, a resize with a panel open, Tab's candidates
//! in columns, `/tools` one row a tool, a line scrolled sideways, and what
//! the session tells a newcomer.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/term.rs"]
mod term;

use common::TempDir;
use std::path::PathBuf;
use term::{tty_ext, Term, Vt, LEFT, RIGHT};

fn todo_ext(t: &TempDir) -> PathBuf {
    let frames = t.path().join("frames.jsonl");
    common::write_manifest(
        &t.path().join("exts"),
        "todo",
        serde_json::json!({"name": "todo", "exec": "python3", "args": [common::fixture("todo_panel.py"), frames]}),
    )
}


#[test]
fn an_emoji_with_a_modifier_or_a_zwj_is_one_step_and_one_backspace() {
    let t = TempDir::new("screen-graphemes");
    let mut z = Term::spawn(&t, &[tty_ext(&t)]);
    let at = z.wait_for("zot> ", 0);
    // 👩‍💻 (woman, ZWJ, laptop) and 👍🏽 (thumbs up, skin tone) are two
    // columns each; Left steps over each as one.
    z.typed("/display p\u{1F469}\u{200D}\u{1F4BB}q\u{1F44D}\u{1F3FD}r");
    z.wait_cursor(120, "zot> /display p", 21);
    z.typed(&format!("{LEFT}{LEFT}"));
    z.wait_cursor(120, "zot> /display p", 18);
    // Backspace takes q; Left steps back over the whole ZWJ sequence,
    // Delete takes it, Right steps over the modifier sequence.
    z.typed(&format!("\x7f{LEFT}\x1b[3~{RIGHT}s"));
    // (The screen model keeps no cell for the modifier, as a terminal.)
    z.wait_cursor(120, "zot> /display p\u{1F44D}sr", 18);
    z.typed("\r");
    z.wait_for("[tty] shown:p\u{1F44D}\u{1F3FD}sr\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
}

/// The rows from the first that starts with `top` to the end.
fn from_row(vt: &Vt, top: &str) -> Vec<String> {
    let rows = vt.all_rows();
    let i = rows.iter().position(|r| r.starts_with(top)).unwrap_or(rows.len());
    rows[i..].to_vec()
}

#[test]
fn a_resize_draws_the_open_panel_and_the_prompt_again_in_place() {
    let t = TempDir::new("screen-resize");
    let item = "a todo item long enough to be cut at forty columns";
    // A session 100 columns wide from the start, for the screen to compare.
    let mut fresh = Term::spawn_sized(&t, &[todo_ext(&t)], 100);
    let mut at = fresh.wait_for("zot> ", 0);
    fresh.typed(&format!("/todo\ra{item}\r"));
    at = fresh.wait_for(&format!("[ ] {item}  <"), at);
    let want = fresh.wait_screen(100, 0, 100, |vt| vt.all_rows().last().is_some_and(|r| r.starts_with("(keys go to the panel")));
    let want = from_row(&want, "┌─ [todo] Todos");
    fresh.typed("\x03\x04");
    assert_eq!(fresh.exit_code(), 0, "{:?}", &fresh.text()[at..]);

    // The same at 40 columns: the item is cut. Then 100 columns wide.
    let t = TempDir::new("screen-resize-2");
    let mut z = Term::spawn_sized(&t, &[todo_ext(&t)], 40);
    let mut at = z.wait_for("zot> ", 0);
    z.typed(&format!("/todo\ra{item}\r"));
    at = z.wait_for("[ ] a todo item long enough to be", at);
    at = z.wait_for("Ctrl-O", at);
    let resized = z.resize(100);
    let vt = z.wait_screen(40, resized, 100, |vt| from_row(vt, "┌─ [todo] Todos") == want);
    // One panel, nothing of the narrow one left, the note above it whole
    // (as the terminal wrapped it when it was 40 columns wide).
    let rows = vt.all_rows();
    assert_eq!(rows.iter().filter(|r| r.contains("┌─")).count(), 1, "{rows:#?}");
    let note = rows.iter().position(|r| r.starts_with("[todo] added")).expect("the note");
    assert_eq!(rows[note..note + 2].concat(), format!("[todo] added {item}"), "{rows:#?}");
    assert!(rows[note + 2].starts_with("┌─ [todo] Todos"), "{rows:#?}");
    // The prompt row too, with the keys back at the prompt.
    z.typed("\x0f/echo wide\r");
    at = z.wait_for("[todo] shown:wide\r\n", at);
    z.typed("\x0f\x03\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn tab_lists_its_candidates_in_columns_that_keep_each_whole() {
    let t = TempDir::new("screen-tab");
    let mut z = Term::spawn_sized(&t, &[tty_ext(&t)], 40);
    let at = z.wait_for("zot> ", 0);
    z.typed("/\t");
    let want = ["/arm", "/commands", "/display", "/event", "/exit", "/extensions", "/help", "/intercept", "/key", "/login", "/read", "/reload-ext", "/resources", "/restart", "/stall", "/system", "/tool", "/tools"];
    // Every row drawn: the last word of each column is there.
    let vt = z.wait_screen(40, 0, 40, |vt| {
        let rows = vt.all_rows();
        want.iter().all(|w| rows.iter().any(|r| r.starts_with('/') && r.split_whitespace().any(|x| x == *w)))
    });
    let rows = vt.all_rows();
    let listed: Vec<&str> = rows.iter().filter(|r| r.starts_with('/')).flat_map(|r| r.split_whitespace()).collect();
    assert_eq!(listed.len(), want.len(), "{rows:#?}");
    for w in want {
        assert!(listed.contains(&w), "{w} not whole in {rows:#?}");
    }
    // Filled down, then across: the first column is in order.
    let firsts: Vec<&str> = rows.iter().filter(|r| r.starts_with('/')).filter_map(|r| r.split_whitespace().next()).collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]) && firsts.len() > 1, "{rows:#?}");
    z.typed("\x15\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn tools_are_one_row_each_cut_to_the_terminal() {
    let t = TempDir::new("screen-tools");
    let mut z = Term::spawn_sized(&t, &[tty_ext(&t)], 50);
    let at = z.wait_for("zot> ", 0);
    z.typed("/tools\r");
    z.wait_for("wordy", at);
    let vt = z.wait_screen(50, 0, 50, |vt| vt.all_rows().last().is_some_and(|r| r.starts_with("zot> ")));
    let rows = vt.all_rows();
    let i = rows.iter().position(|r| r == "zot> /tools").expect("the line typed");
    assert_eq!(
        rows[i + 1..i + 3],
        ["  hang           never answers [tty]", "  wordy          a description much longer… [tty]"],
        "{rows:#?}"
    );
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn a_line_scrolled_sideways_is_marked_and_left_whole_in_the_scrollback() {
    let t = TempDir::new("screen-scroll");
    let mut z = Term::spawn_sized(&t, &[tty_ext(&t)], 40);
    let at = z.wait_for("zot> ", 0);
    let long = format!("{}end", (0..30).map(|i| format!("{}", i % 10)).collect::<String>().repeat(3));
    z.typed(&format!("/display {long}"));
    // Hidden on the left: `<` first.
    let vt = z.wait_screen(40, 0, 40, |vt| vt.row_text(vt.row).ends_with("end"));
    assert_eq!(vt.col, 39);
    assert!(vt.row_text(vt.row).starts_with("zot> <"), "{:?}", vt.row_text(vt.row));
    // Hidden on the right: `>` in the last column used.
    z.typed("\x01");
    let vt = z.wait_cursor(40, "zot> /display 0123", 5);
    assert!(vt.row_text(vt.row).ends_with('>') && vt.row_text(vt.row).chars().count() == 39, "{:?}", vt.row_text(vt.row));
    // Once run, the whole line is on screen, wrapped as the terminal wraps it.
    z.typed("\r");
    z.wait_for(&format!("[tty] shown:{long}"), at);
    let rows = Vt::of(&z.text(), 40).all_rows();
    let i = rows.iter().position(|r| r.starts_with("zot> /display")).expect("the line");
    assert_eq!(rows[i..i + 3].concat(), format!("zot> /display {long}"), "{rows:#?}");
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
}

#[test]
fn the_banner_says_what_to_try_and_a_prompt_says_once_there_is_no_model() {
    let t = TempDir::new("screen-newcomer");
    let mut z = Term::spawn(&t, &[]);
    let mut at = z.wait_for("extensions ready: none\r\n", 0);
    at = z.wait_for("no extensions loaded: try `zot --ext PATH` to load one, or `zot ext new NAME` to write one\r\n", at);
    at = z.wait_for("zot> ", at);
    z.typed("hello\r");
    at = z.wait_for("→ model: hello\r\n", at);
    let note = "(there is no model in this console: a line without a slash runs the events and intercepts an agent's prompt would, and the model's answer is empty; /help lists the commands)";
    at = z.wait_for(note, at);
    z.typed("again\r");
    at = z.wait_for("→ model: again\r\n", at);
    at = z.wait_for("zot> ", at);
    z.typed("/weathr\r");
    at = z.wait_for("error: unknown command /weathr\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
    assert_eq!(z.text().matches("there is no model in this console").count(), 1, "{:?}", z.text());
}

#[test]
fn an_unknown_command_names_the_one_meant_or_the_disabled_extension() {
    let t = TempDir::new("screen-unknown");
    let off = common::write_manifest(
        &t.path().join("exts"),
        "weather",
        serde_json::json!({"name": "weather", "exec": "python3", "args": [common::fixture("tty_ext.py")], "enabled": false}),
    );
    let mut z = Term::spawn(&t, &[tty_ext(&t), off.clone()]);
    let mut at = z.wait_for("zot> ", 0);
    z.typed("/dislay hi
");
    at = z.wait_for("error: unknown command /dislay — did you mean /display?\r\n", at);
    z.typed("/EXTI\r");
    at = z.wait_for("error: unknown command /EXTI — did you mean /exit?\r\n", at);
    z.typed("/weather\r");
    let fix = format!("set \"enabled\": true in {}", off.join("extension.json").display());
    at = z.wait_for(&format!("error: unknown command /weather — the extension weather is disabled ({fix})\r\n"), at);
    z.typed("/zzzzzz\r");
    at = z.wait_for("error: unknown command /zzzzzz\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn an_unknown_command_in_an_untrusted_project_says_its_extensions_are_not_loaded() {
    let t = TempDir::new("screen-untrusted");
    let proj = t.path().join("proj");
    common::write_manifest(
        &proj.join(".zot/extensions"),
        "lint",
        serde_json::json!({"name": "lint", "exec": "python3", "args": [common::fixture("tty_ext.py")]}),
    );
    let args: Vec<String> = ["--cwd", &proj.display().to_string(), "--tool-timeout", "60"].map(String::from).to_vec();
    let mut z = Term::spawn_args(&t, &args, 120);
    let mut at = z.wait_for("zot> ", 0);
    z.typed("/lint x\r");
    at = z.wait_for("error: unknown command /lint — the project's extensions are not loaded: zot trust\r\n", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn the_banner_counts_servers_apart_and_extensions_names_a_servers_file() {
    let t = TempDir::new("screen-servers");
    let cfg = t.path().join("servers.json");
    let fx = serde_json::json!({"command": "python3", "args": [common::fixture("mcp_server.py")]});
    let gone = serde_json::json!({"command": "/nonexistent/zot-no-such-server"});
    std::fs::write(&cfg, serde_json::json!({"mcpServers": {"fx": fx, "gone": gone}}).to_string()).expect("config");
    let mut args = zot_proc::session_args(t.path(), None, &[tty_ext(&t)], &["--tool-timeout", "60"]);
    args.extend(["--mcp-config".to_string(), cfg.display().to_string()]);
    let mut z = Term::spawn_args(&t, &args, 160);
    let mut at = z.wait_for("1 extension and 1 MCP server ready: ", 0);
    at = z.wait_for("zot> ", at);
    z.typed("/extensions\r");
    let file = cfg.display().to_string();
    at = z.wait_for("(MCP server 2025", at);
    at = z.wait_for("zot> ", at);
    let rows = Vt::of(&z.text(), 160).all_rows();
    let row = |name: &str| rows.iter().rev().find(|r| r.trim_start().starts_with(&format!("{name} "))).cloned().unwrap_or_default();
    assert!(row("fx").contains(&file), "the server's source is its file: {rows:#?}");
    assert!(row("gone").contains("failed") && !row("gone").contains("full access"), "a failed entry is not marked full access: {rows:#?}");
    assert!(row("gone").contains(&file), "{rows:#?}");
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}
