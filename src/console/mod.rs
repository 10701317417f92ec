//! The interactive session: loads extensions, and hosts the lifecycle an
//! agent would (docs/protocol.md §6.4): `session_start` at the start; for each
//! prompt `user_prompt_submit`, then the `before_agent_start` chain (before
//! the first prompt and again after `/reload-ext`), `turn_start`,
//! `assistant_message` and `turn_end`; `tool_result` after each tool call;
//! `session_end` (`shutdown`) at the end. It reads lines. `/name args` runs an extension command; host built-ins
//! exercise tools, events, intercepts and panels the way an agent would;
//! other text is a prompt that would go to the model. Everything an
//! extension says is printed through one printer thread, stripped of
//! terminal control sequences, attributed to the extension.
//!
//! The rooms, bottom-up: `render` how text and panels look, `panels` the
//! open panels and the one drawn in place, `print` the printer thread that
//! keeps replies in their place among the host's events (and how each
//! event looks), `state` what the other rooms share (the built-in
//! commands, the session's state, a piped line, a tool call in flight),
//! `hints` what the console tells a newcomer (did you mean, what to try),
//! `commands` the built-in commands and tab completion, `input` where
//! lines come from, what extensions submit and how a call is waited for;
//! this file the session and one line's handling.

mod commands;
mod hints;
mod input;
mod panels;
mod print;
mod render;
mod state;

use crate::host::{Config, Host, HostError, InterceptOutcome, Request, Response, State};
use crate::lineedit::{Editor, RawMode, Screen};
use crate::protocol::Payload;
use crate::signals;
use crate::text::{one_line, strip_controls};
use crossbeam_channel::{bounded, unbounded};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread;

use commands::split_word;
use input::MAX_SLASHES;
use panels::Panels;
use print::{print_loop, Job, PassedOn, Printed, Submitted};
use render::Style;
use state::{Console, Input, SessionInfo};

pub use state::BUILTINS;

/// Runs the interactive session until `/exit` or end of input; returns the
/// exit code.
pub fn run(mut config: Config) -> i32 {
    config.reserved_commands = BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
    // A person is there to answer them (docs/protocol.md §4).
    config.interactive_tools = true;
    let interactive = is_tty(0);
    let style = Style { color: is_tty(1) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) };
    // A script must not run on without an extension it named; a person at
    // the terminal sees the load error and can go on.
    if !interactive {
        if let Some(p) = config.sources.ext_paths.iter().find(|p| std::fs::symlink_metadata(p).is_err()) {
            eprintln!("zot: --ext {}: no such file or directory", crate::manage::sanitize(&p.display().to_string()));
            return 1;
        }
    }
    let history = config.home.root().join("history");
    let session = SessionInfo {
        cwd: config.cwd.display().to_string(),
        provider: config.provider.clone(),
        model: config.model.clone(),
    };
    let (printed_tx, events) = unbounded::<Printed>();
    let sink = {
        let tx = printed_tx.clone();
        Box::new(move |e| {
            let _ = tx.send(Printed::Event(e));
        })
    };
    let discovery = config.clone();
    let project = config.cwd.clone();
    let host = match Host::start_with(config, sink) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("zot: {e}");
            return 1;
        }
    };
    let host = Arc::new(host);
    let screen = Arc::new(Screen::new());
    // Line editing needs both ends on the terminal; else plain lines.
    let mut raw = if interactive && is_tty(1) { RawMode::enter(0).ok() } else { None };
    let editor = match raw {
        Some(_) => Editor::new(screen.clone(), Some(history)).ok(),
        None => None,
    };
    if editor.is_none() {
        raw = None;
    }
    let panels: Panels = Arc::default();
    // On a terminal a panel is drawn in place and takes the keys.
    let in_place = editor.is_some();
    let (jobs_tx, jobs_rx) = unbounded::<Job>();
    let (submit_tx, submitted) = unbounded::<Submitted>();
    let (opened_tx, panel_opened) = unbounded::<()>();
    let awaited = print::Awaited::default();
    let printer = {
        let panels = panels.clone();
        let awaited = awaited.clone();
        thread::Builder::new()
            .name("zot-console-out".into())
            .spawn({
                let screen = screen.clone();
                move || {
                    let passed_on = PassedOn { submitted: submit_tx, opened: opened_tx, awaited };
                    print_loop(events, jobs_rx, style, panels, screen, passed_on, in_place)
                }
            })
    };
    if printer.is_err() {
        eprintln!("zot: cannot start the printer thread");
        return 1;
    }
    let lines = match editor {
        Some(_) => None,
        None => {
            let (tx, rx) = unbounded::<Input>();
            if input::read_stdin(tx).is_err() {
                eprintln!("zot: cannot start the input thread");
                return 1;
            }
            Some(rx)
        }
    };
    {
        let host = host.clone();
        let _ = signals::on_termination(move |sig| {
            crate::lineedit::restore_terminal();
            end_session(&host);
            host.shutdown();
            std::process::exit(signals::exit_code(sig));
        });
    }
    let mut console = Console {
        host: host.clone(),
        out: jobs_tx,
        holds: printed_tx,
        held: 0,
        submitted,
        budget: MAX_SLASHES,
        lines,
        backlog: VecDeque::new(),
        panel_opened,
        prompting: interactive,
        style,
        panels,
        step: 0,
        tool_seq: 0,
        session,
        system_prompt: BASE_SYSTEM_PROMPT.to_string(),
        system_stale: true,
        agent_runs: 0,
        editor,
        discovery,
        told_no_model: false,
    };
    let report = host.wait_ready();
    // A project found above the folder zot was started in is named.
    let found_above = std::env::current_dir().ok().filter(|d| d != &project && d.starts_with(&project)).map(|_| project.clone());
    let banner = report.as_ref().ok().filter(|_| interactive).map(|r| {
        // Servers counted apart from extensions, as `zot mcp` counts them.
        let servers: Vec<String> = host.list().map(|l| l.extensions.into_iter().filter(|e| e.kind == "mcp").map(|e| e.name).collect()).unwrap_or_default();
        let mut text = style.bold(&format!("zot {} — {}", env!("CARGO_PKG_VERSION"), r.ready_line(&servers)));
        if let Some(root) = found_above {
            text = format!("{text}\n{}", style.dim(&format!("project: {}", crate::text::one_line(&root.display().to_string()))));
        }
        if r.ready.is_empty() {
            text = format!("{text}\n{}", style.dim(hints::NOTHING_LOADED));
        }
        format!("{text}\n{}", style.dim("type /help for commands, /exit to leave"))
    });
    // Servers still starting: calls for a name nobody has wait for them,
    // and each gets a line once ready (docs/protocol.md §8.2). Which ones is
    // read on the dispatcher thread and handed to the printer in line with
    // the host's events, so that none of their ready lines comes before
    // the banner or is missed; the console goes on once it is there.
    let (start_tx, started) = bounded::<()>(1);
    let to_printer = console.holds.clone();
    host.submit(Request::List, move |r| {
        let starting = match r {
            Ok(Response::List(l)) => l.extensions.into_iter().filter(|e| e.kind == "mcp" && e.state == State::Starting).map(|e| e.name).collect(),
            _ => Vec::new(),
        };
        let _ = to_printer.send(Printed::Start { banner, starting, say: interactive });
        let _ = start_tx.send(());
    });
    let _ = started.recv();
    let _ = host.event("session_start", Payload::new());
    console.repl();
    console.sync();
    end_session(&host);
    host.shutdown();
    drop(console);
    drop(raw);
    0
}

/// The system prompt the console starts from, before any extension's
/// `before_agent_start` reply.
pub const BASE_SYSTEM_PROMPT: &str = "You are a helpful coding assistant.";

fn end_session(host: &Host) {
    let mut p = Payload::new();
    p.insert("reason".into(), json!("shutdown"));
    let _ = host.event("session_end", p);
}

impl Console {
    /// Handles one input line; false ends the session.
    fn line(&mut self, text: &str) -> bool {
        let Some(cmd) = text.strip_prefix('/') else {
            self.prompt(text);
            if self.prompting && !std::mem::replace(&mut self.told_no_model, true) {
                self.say(self.style.dim(hints::NO_MODEL));
            }
            return true;
        };
        let (name, args) = split_word(cmd);
        // Built-ins match without case, as extension commands do.
        match name.to_ascii_lowercase().as_str() {
            "exit" | "quit" => return false,
            "help" => self.help(),
            "system" => self.system(),
            "commands" => self.commands(),
            "tools" => self.tools(),
            "extensions" => self.extensions(),
            "tool" => self.tool(args),
            "resources" => self.resources(),
            "read" => self.read(args),
            "event" => self.event(args),
            "intercept" => self.intercept(args),
            "key" => self.key(args),
            "reload-ext" => self.reload(),
            "restart" => self.restart(args),
            "login" => self.login(args),
            "" => self.error("empty command; try /help"),
            _ => {
                let (r, held) = self.call(Request::Command { name: name.into(), args: args.into() });
                match r {
                    Ok(Response::Command(r)) => self.show_reply(&r, held),
                    Ok(other) => held.say(self.error_line(&format!("unexpected response {other:?}"))),
                    Err(HostError::UnknownCommand(n)) => {
                        let known = self.host.list().map(|l| l.commands.into_iter().map(|c| c.name).collect::<Vec<_>>()).unwrap_or_default();
                        held.say(self.error_line(&hints::unknown_command(&n, &known, &self.discovery)));
                    }
                    Err(e) => held.say(self.error_line(&e.to_string())),
                }
            }
        }
        true
    }

    /// Runs the `before_agent_start` chain when it is due, from the base
    /// prompt. A host that cannot intercept it leaves the prompt as it is.
    fn refresh_system_prompt(&mut self) {
        if !self.system_stale {
            return;
        }
        self.system_stale = false;
        self.agent_runs += 1;
        let mut p = Payload::new();
        p.insert("agent_run_id".into(), json!(format!("console-run-{}", self.agent_runs)));
        p.insert("cwd".into(), json!(self.session.cwd));
        p.insert("provider".into(), json!(self.session.provider));
        p.insert("model".into(), json!(self.session.model));
        p.insert("system_prompt".into(), json!(BASE_SYSTEM_PROMPT));
        self.system_prompt = match self.host.intercept("before_agent_start", p) {
            Ok(InterceptOutcome { system_prompt: Some(s), .. }) => s,
            _ => BASE_SYSTEM_PROMPT.to_string(),
        };
    }

    fn system(&mut self) {
        self.refresh_system_prompt();
        let s = if self.system_prompt.is_empty() { self.style.dim("(empty)") } else { strip_controls(&self.system_prompt) };
        self.say(format!("{} {s}", self.style.dim("system prompt:")));
    }

    pub(super) fn prompt(&mut self, text: &str) {
        let mut submit = Payload::new();
        submit.insert("text".into(), json!(text));
        let _ = self.host.event("user_prompt_submit", submit);
        self.refresh_system_prompt();
        self.step += 1;
        let mut payload = Payload::new();
        payload.insert("step".into(), json!(self.step));
        match self.host.intercept("turn_start", payload.clone()) {
            Ok(v) if v.block => {
                return self.say(self.style.red(&format!("turn blocked: {}", one_line(v.reason.as_deref().unwrap_or("")))));
            }
            Ok(_) => {}
            Err(e) => return self.error(&e.to_string()),
        }
        let _ = self.host.event("turn_start", payload);
        self.say(format!("{} {}", self.style.dim("→ model:"), strip_controls(text)));
        // There is no model here: the assistant's message is empty.
        let mut reply = Payload::new();
        reply.insert("text".into(), json!(""));
        let _ = self.host.event("assistant_message", reply);
        let mut end = Payload::new();
        end.insert("stop".into(), json!("end_turn"));
        let _ = self.host.event("turn_end", end);
    }
}

fn is_tty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}
