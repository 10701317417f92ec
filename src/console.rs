//! The interactive session: loads extensions, and hosts the lifecycle an
//! agent would (PROTOCOL.md §6.4): `session_start` at the start; for each
//! prompt `user_prompt_submit`, then the `before_agent_start` chain (before
//! the first prompt and again after `/reload-ext`), `turn_start`,
//! `assistant_message` and `turn_end`; `session_end` (`shutdown`) at the
//! end. It reads lines. `/name args` runs an extension command; host built-ins
//! exercise tools, events, intercepts and panels the way an agent would;
//! other text is a prompt that would go to the model. Everything an
//! extension says is printed through one printer thread, stripped of
//! terminal control sequences, attributed to the extension.

use crate::host::{CommandReply, Config, ExtInfo, Host, HostError, HostEvent, InterceptOutcome, Listing, Request, Response, ToolReply};
use crate::lineedit::{Editor, RawMode, Read, Screen};
use crate::protocol::{Panel, Payload};
use crate::signals;
use crate::text::{one_line, strip_controls};
use crossbeam_channel::{bounded, select, unbounded, Receiver, Sender};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex};
use std::thread;

/// Commands the console answers itself; extensions cannot take them.
pub const BUILTINS: [(&str, &str); 11] = [
    ("help", "show this help"),
    ("system", "show the system prompt after the before_agent_start chain"),
    ("commands", "list extension commands"),
    ("tools", "list extension tools"),
    ("tool", "NAME JSON: call a tool as the model would (intercepts, event, call)"),
    ("event", "NAME [JSON]: send an event to its subscribers"),
    ("intercept", "EVENT JSON: run an intercept chain and show the verdict"),
    ("key", "PANEL KEY [TEXT]: press a key in an extension's panel"),
    ("reload-ext", "stop, rediscover and restart every extension"),
    ("extensions", "list extensions and their state"),
    ("exit", "shut extensions down and leave"),
];

#[derive(Clone, Copy)]
struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\u{1b}[{code}m{s}\u{1b}[0m")
        } else {
            s.to_string()
        }
    }
    fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn level(&self, level: &str, s: &str) -> String {
        match level {
            "error" => self.paint("31", s),
            "warn" => self.paint("33", s),
            "success" => self.paint("32", s),
            _ => self.paint("36", s),
        }
    }
}

/// A block of text for the printer; `ack` is signalled once it is out.
struct Job {
    text: String,
    ack: Option<Sender<()>>,
    /// The reply whose place in the host's order [`Printed::Hold`] marked.
    release: Option<u64>,
}

/// What the host hands the printer, on its dispatcher thread and so in the
/// order things happened there.
enum Printed {
    Event(HostEvent),
    /// A reply the console will print arrived here: later events wait
    /// until it is printed.
    Hold(u64),
}

/// A reply's place in the printed order; printing it (or dropping it)
/// lets the events after it through.
struct Held {
    n: u64,
    out: Sender<Job>,
    done: bool,
}

impl Held {
    fn say(mut self, text: String) {
        let (tx, rx) = bounded(1);
        self.done = true;
        let _ = self.out.send(Job { text, ack: Some(tx), release: Some(self.n) });
        let _ = rx.recv();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.out.send(Job { text: String::new(), ack: None, release: Some(self.n) });
        }
    }
}

/// The console's view of the world shared with the printer: which
/// extension owns which open panel.
type Panels = Arc<Mutex<HashMap<String, String>>>;

/// Runs the interactive session until `/exit` or end of input; returns the
/// exit code.
pub fn run(mut config: Config) -> i32 {
    config.reserved_commands = BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
    // A person is there to answer them (PROTOCOL.md §4).
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
    let (jobs_tx, jobs_rx) = unbounded::<Job>();
    let (slash_tx, slash_rx) = unbounded::<String>();
    let printer = {
        let panels = panels.clone();
        thread::Builder::new()
            .name("zot-console-out".into())
            .spawn({
                let screen = screen.clone();
                move || print_loop(events, jobs_rx, style, panels, screen, slash_tx)
            })
    };
    if printer.is_err() {
        eprintln!("zot: cannot start the printer thread");
        return 1;
    }
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
        slashes: slash_rx,
        style,
        panels,
        step: 0,
        tool_seq: 0,
        session,
        system_prompt: BASE_SYSTEM_PROMPT.to_string(),
        system_stale: true,
        agent_runs: 0,
        editor,
    };
    let report = host.wait_ready();
    if let Ok(r) = &report {
        let names = if r.ready.is_empty() { "none".to_string() } else { r.ready.join(", ") };
        let banner = format!("zot {} — extensions ready: {names}", env!("CARGO_PKG_VERSION"));
        if interactive {
            console.say(format!("{}\n{}", style.bold(&banner), style.dim("type /help for commands, /exit to leave")));
        }
    }
    let _ = host.event("session_start", Payload::new());
    console.repl(interactive);
    console.sync();
    end_session(&host);
    host.shutdown();
    drop(console);
    drop(raw);
    0
}

/// Slash commands from `submit_slash` run after one input line, at most.
const MAX_SLASHES: usize = 16;

/// The system prompt the console starts from, before any extension's
/// `before_agent_start` reply.
pub const BASE_SYSTEM_PROMPT: &str = "You are a helpful coding assistant.";

/// What `before_agent_start` tells extensions about the session.
struct SessionInfo {
    cwd: String,
    provider: String,
    model: String,
}

fn end_session(host: &Host) {
    let mut p = Payload::new();
    p.insert("reason".into(), json!("shutdown"));
    let _ = host.event("session_end", p);
}

struct Console {
    host: Arc<Host>,
    out: Sender<Job>,
    /// Where a reply marks its place among the host's events.
    holds: Sender<Printed>,
    held: u64,
    /// Slash commands extensions asked to run (`submit_slash`).
    slashes: Receiver<String>,
    style: Style,
    panels: Panels,
    step: u64,
    tool_seq: u64,
    session: SessionInfo,
    /// The system prompt after the last `before_agent_start` chain.
    system_prompt: String,
    /// The chain must run (again) before the next prompt: at the start and
    /// after each `/reload-ext`.
    system_stale: bool,
    agent_runs: u64,
    /// The line editor, on a terminal.
    editor: Option<Editor>,
}

impl Console {
    /// Prints `text` after every host event already received.
    fn say(&self, text: String) {
        let (tx, rx) = bounded(1);
        let _ = self.out.send(Job { text, ack: Some(tx), release: None });
        let _ = rx.recv();
    }

    fn sync(&self) {
        self.say(String::new());
    }

    fn error(&self, msg: &str) {
        self.say(self.style.red(&format!("error: {msg}")));
    }

    /// Reads lines with the editor until the session ends.
    fn edit_loop(&mut self) {
        let prompt = self.style.bold("zot> ");
        let host = self.host.clone();
        let complete = move |before: &str| completions(&host, before);
        loop {
            self.sync();
            let Some(mut editor) = self.editor.take() else { return };
            let read = editor.read_line(&prompt, &complete);
            self.editor = Some(editor);
            match read {
                Read::End => return,
                Read::Line(line) => {
                    let text = line.trim();
                    if !text.is_empty() && !self.line(text) {
                        return;
                    }
                    if !self.run_slashes() {
                        return;
                    }
                }
            }
        }
    }

    fn repl(&mut self, interactive: bool) {
        if self.editor.is_some() {
            return self.edit_loop();
        }
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut line = String::new();
        loop {
            if interactive {
                self.sync();
                let mut o = io::stdout();
                let _ = write!(o, "{}", self.style.bold("zot> "));
                let _ = o.flush();
            }
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    self.error("input is not UTF-8; line skipped");
                    continue;
                }
                Err(_) => break,
            }
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            if !self.line(text) || !self.run_slashes() {
                break;
            }
        }
    }

    /// Handles one input line; false ends the session.
    fn line(&mut self, text: &str) -> bool {
        let Some(cmd) = text.strip_prefix('/') else {
            self.prompt(text);
            return true;
        };
        let (name, args) = split_word(cmd);
        match name {
            "exit" | "quit" => return false,
            "help" => self.help(),
            "system" => self.system(),
            "commands" => self.commands(),
            "tools" => self.tools(),
            "extensions" => self.extensions(),
            "tool" => self.tool(args),
            "event" => self.event(args),
            "intercept" => self.intercept(args),
            "key" => self.key(args),
            "reload-ext" => self.reload(),
            "" => self.error("empty command; try /help"),
            _ => {
                let (r, held) = self.call(Request::Command { name: name.into(), args: args.into() });
                match r {
                    Ok(Response::Command(r)) => self.show_reply(&r, held),
                    Ok(other) => held.say(self.style.red(&format!("error: unexpected response {other:?}"))),
                    Err(e) => held.say(self.style.red(&format!("error: {e}"))),
                }
            }
        }
        true
    }

    /// Runs the slash commands extensions asked for (`submit_slash`) as
    /// if typed, after the line that caused them; a few per line at most,
    /// so that two extensions cannot keep each other going for ever.
    fn run_slashes(&mut self) -> bool {
        for _ in 0..MAX_SLASHES {
            let Ok(text) = self.slashes.try_recv() else { return true };
            self.say(format!("{} {}", self.style.dim("→ running"), strip_controls(&text)));
            if !self.line(&text) {
                return false;
            }
        }
        let dropped = self.slashes.try_iter().count();
        if dropped > 0 {
            self.error(&format!("{dropped} more submitted slash commands dropped (at most {MAX_SLASHES} per line)"));
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

    fn prompt(&mut self, text: &str) {
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

    fn help(&self) {
        let mut s = String::from("built-in commands:\n");
        for (n, d) in BUILTINS {
            s.push_str(&format!("  /{n:<12} {d}\n"));
        }
        s.push_str("extension commands:\n");
        s.push_str(&self.command_lines());
        s.push_str("anything else is a prompt that would go to the model");
        self.say(s);
    }

    fn command_lines(&self) -> String {
        match self.host.list() {
            Ok(l) => {
                let mut s: String = l
                    .commands
                    .iter()
                    .map(|c| format!("  /{:<12} {} {}\n", one_line(&c.name), one_line(&c.description), self.style.dim(&format!("[{}]", c.extension))))
                    .collect();
                if s.is_empty() {
                    s.push_str("  (none)\n");
                }
                s.push_str(&self.shadowed(&l, |e| &e.shadowed_commands, "/", 13));
                s
            }
            Err(e) => format!("  {e}\n"),
        }
    }

    /// One line per registration that lost its name to a built-in or an
    /// earlier extension (PROTOCOL.md §3.5: never silent to a user who asks).
    fn shadowed(&self, l: &Listing, names: impl Fn(&ExtInfo) -> &Vec<String>, prefix: &str, width: usize) -> String {
        let mut s = String::new();
        for e in &l.extensions {
            for n in names(e) {
                let what = format!("{prefix}{}", one_line(n));
                s.push_str(&format!("  {what:<width$} {} {}\n", self.style.dim("(shadowed, not callable)"), self.style.dim(&format!("[{}]", one_line(&e.name)))));
            }
        }
        s
    }

    fn commands(&self) {
        let s = self.command_lines();
        self.say(s.trim_end().to_string());
    }

    fn tools(&self) {
        match self.host.list() {
            Ok(l) => {
                let mut s: String = l
                    .tools
                    .iter()
                    .map(|t| {
                        let mut marks = String::new();
                        if !t.active {
                            marks.push_str(" (deferred)");
                        }
                        if t.interactive {
                            marks.push_str(" (interactive)");
                        }
                        let tag = self.style.dim(&format!("[{}]{marks}", t.extension));
                        format!("  {:<14} {} {tag}\n", one_line(&t.name), one_line(&t.description))
                    })
                    .collect();
                if s.is_empty() {
                    s.push_str("(no tools)\n");
                }
                s.push_str(&self.shadowed(&l, |e| &e.shadowed_tools, "", 14));
                self.say(s.trim_end().to_string());
            }
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn extensions(&self) {
        match self.host.list() {
            Ok(l) if l.extensions.is_empty() => self.say("(no extensions loaded)".into()),
            Ok(l) => {
                let lines: Vec<String> = l
                    .extensions
                    .iter()
                    .map(|e| {
                        let mut s = format!("  {:<16} {:<8} {:<7} {}", e.name, e.state.as_str(), e.source, e.dir);
                        if let Some(err) = &e.error {
                            s.push_str(&format!("  {}", self.style.red(&one_line(err))));
                        }
                        s
                    })
                    .collect();
                self.say(lines.join("\n"));
            }
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn show_reply(&mut self, r: &CommandReply, held: Held) {
        let tag = self.style.dim(&format!("[{}]", r.extension));
        if let Some(e) = r.error.as_deref().filter(|e| !e.is_empty()) {
            return held.say(format!("{tag} {}", self.style.red(&format!("error: {}", strip_controls(e)))));
        }
        if r.action == "tool_prompt" {
            // The tool runs as the model's call would, shown as a pair,
            // then the prompt goes to the model.
            let name = r.tool_name.clone().unwrap_or_default();
            let args = r.tool_args.clone().filter(Value::is_object).unwrap_or_else(|| json!({}));
            held.say(format!("{tag} {} {} {}", self.style.dim("→ tool"), one_line(&name), strip_controls(&args.to_string())));
            if name.is_empty() {
                self.error("tool_prompt without a tool_name");
            } else if let Value::Object(a) = args {
                self.run_tool(&name, a);
            }
            return self.prompt(r.prompt.as_deref().unwrap_or(""));
        }
        let text = match r.action.as_str() {
            "prompt" => format!("{tag} {} {}", self.style.dim("→ submit:"), strip_controls(r.prompt.as_deref().unwrap_or(""))),
            "insert" => format!("{tag} {} {}", self.style.dim("→ insert:"), strip_controls(r.insert.as_deref().unwrap_or(""))),
            "display" => format!("{tag} {}", strip_controls(r.display.as_deref().unwrap_or(""))),
            "open_panel" => match &r.open_panel {
                Some(p) => {
                    if let Ok(mut m) = self.panels.lock() {
                        m.insert(p.id.clone(), r.extension.clone());
                    }
                    format!("{tag}\n{}", draw_panel(&p.title, &p.lines, &p.footer, &p.id))
                }
                None => format!("{tag} (open_panel without a panel)"),
            },
            "noop" => return,
            other => format!("{tag} {}", self.style.dim(&format!("(unknown action {:?})", one_line(other)))),
        };
        held.say(text);
    }

    fn tool(&mut self, args: &str) {
        match name_and_object(args, "/tool NAME JSON") {
            Ok((n, a)) => self.run_tool(n, a),
            Err(e) => self.error(&e),
        }
    }

    /// A tool call as the model's: the intercept chain, the event, the
    /// call, each shown. An unknown tool is said at once.
    fn run_tool(&mut self, name: &str, args: Payload) {
        let mut tool_args = Value::Object(args);
        match self.host.list() {
            Ok(l) if !l.tools.iter().any(|t| t.name == name) => {
                return self.error(&HostError::UnknownTool(name.to_string()).to_string());
            }
            _ => {}
        }
        self.tool_seq += 1;
        let tool_id = format!("console-{}", self.tool_seq);
        let payload = |a: &Value| {
            let mut p = Payload::new();
            p.insert("tool_id".into(), json!(tool_id));
            p.insert("tool_name".into(), json!(name));
            p.insert("tool_args".into(), a.clone());
            p
        };
        match self.host.intercept("tool_call", payload(&tool_args)) {
            Ok(InterceptOutcome { block: true, reason, .. }) => {
                return self.say(self.style.red(&format!("tool call blocked: {}", one_line(reason.as_deref().unwrap_or("")))));
            }
            Ok(InterceptOutcome { modified_args: Some(a), .. }) => {
                self.say(format!("{} {}", self.style.dim("args rewritten:"), strip_controls(&a.to_string())));
                tool_args = a;
            }
            Ok(_) => {}
            Err(e) => return self.error(&e.to_string()),
        }
        let _ = self.host.event("tool_call", payload(&tool_args));
        let (r, held) = self.call_tool(name, tool_args, &tool_id);
        match r {
            Ok(r) => self.show_tool(&r, held),
            Err(e) => held.say(self.style.red(&format!("error: {e}"))),
        }
    }

    /// Submits `request`; its answer marks its place among the host's
    /// events, so the reply is printed before what happened after it.
    fn submit_held(&mut self, request: Request) -> (Receiver<Result<Response, HostError>>, Held) {
        self.held += 1;
        let n = self.held;
        let (tx, rx) = bounded(1);
        let holds = self.holds.clone();
        self.host.submit(request, move |r| {
            let _ = holds.send(Printed::Hold(n));
            let _ = tx.send(r);
        });
        (rx, Held { n, out: self.out.clone(), done: false })
    }

    /// Runs a request that cannot be cancelled. On a terminal, a Ctrl-C
    /// meanwhile says so (rather than waiting to end the session at the
    /// next prompt).
    fn call(&mut self, request: Request) -> (Result<Response, HostError>, Held) {
        let (rx, held) = self.submit_held(request);
        let outcome = match self.editor.as_mut() {
            Some(editor) => {
                let screen = editor.screen();
                editor.wait(&rx, || screen.print("(this cannot be cancelled; waiting for its answer or its timeout)"))
            }
            None => rx.recv().ok(),
        };
        (outcome.unwrap_or(Err(HostError::ShuttingDown)), held)
    }

    /// Calls the tool; on a terminal, Ctrl-C meanwhile cancels it (an
    /// interactive tool waits for nothing else).
    fn call_tool(&mut self, name: &str, args: Value, tool_id: &str) -> (Result<ToolReply, HostError>, Held) {
        let req = Request::Tool { name: name.into(), args: Some(args), tool_id: Some(tool_id.into()) };
        let (rx, held) = self.submit_held(req);
        let host = self.host.clone();
        let outcome = match self.editor.as_mut() {
            Some(editor) => editor.wait(&rx, || {
                let _ = host.cancel_tool(tool_id);
            }),
            None => rx.recv().ok(),
        };
        let r = match outcome {
            Some(Ok(Response::Tool(r))) => Ok(r),
            Some(Ok(other)) => Err(HostError::Internal(format!("unexpected response {other:?}"))),
            Some(Err(e)) => Err(e),
            None => Err(HostError::ShuttingDown),
        };
        (r, held)
    }

    fn show_tool(&self, r: &ToolReply, held: Held) {
        let tag = self.style.dim(&format!("[{}]", r.extension));
        let mut parts = Vec::new();
        for b in &r.content {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => parts.push(strip_controls(b.get("text").and_then(Value::as_str).unwrap_or(""))),
                Some("image") => {
                    let mime = b.get("mime_type").and_then(Value::as_str).unwrap_or("?");
                    let len = b.get("data").and_then(Value::as_str).map_or(0, str::len);
                    parts.push(format!("[image {}, {len} base64 bytes]", one_line(mime)));
                }
                _ => parts.push(strip_controls(&b.to_string())),
            }
        }
        let body = parts.join("\n");
        if r.is_error {
            held.say(format!("{tag} {}", self.style.red(&format!("tool error: {body}"))));
        } else {
            held.say(format!("{tag} {body}"));
        }
    }

    fn event(&self, args: &str) {
        let (name, payload) = match name_and_object(args, "/event NAME [JSON]") {
            Ok(v) => v,
            Err(e) => return self.error(&e),
        };
        match self.host.event(name, payload) {
            Ok(n) => self.say(self.style.dim(&format!("event {name} delivered to {n} extension(s)"))),
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn intercept(&self, args: &str) {
        let (name, payload) = match name_and_object(args, "/intercept EVENT JSON") {
            Ok(v) => v,
            Err(e) => return self.error(&e),
        };
        match self.host.intercept(name, payload) {
            Ok(v) => {
                let s = serde_json::to_string(&v).unwrap_or_default();
                let s = strip_controls(&s);
                self.say(if v.block { self.style.red(&s) } else { s });
            }
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn key(&self, args: &str) {
        let mut it = args.splitn(3, char::is_whitespace);
        let (Some(panel), Some(key)) = (it.next().filter(|s| !s.is_empty()), it.next()) else {
            return self.error("usage: /key PANEL KEY [TEXT]");
        };
        let text = it.next().map(str::to_string);
        let owner = self.panels.lock().ok().and_then(|m| m.get(panel).cloned());
        let Some(ext) = owner else {
            return self.error(&format!("no open panel {panel:?}"));
        };
        if let Err(e) = self.host.panel_key(&ext, panel, key, text) {
            self.error(&e.to_string());
        }
    }

    fn reload(&mut self) {
        self.system_stale = true;
        let (r, held) = self.call(Request::Reload);
        match r {
            Ok(Response::Reload(r)) => {
                let mut s = format!("reloaded: stopped {}, loaded {}, ready {}", r.stopped, r.loaded, r.ready);
                for e in &r.errors {
                    s.push('\n');
                    s.push_str(&self.style.red(&one_line(e)));
                }
                held.say(s);
            }
            Ok(other) => held.say(self.style.red(&format!("error: unexpected response {other:?}"))),
            Err(e) => held.say(self.style.red(&format!("error: {e}"))),
        }
    }
}

/// The first word of `s` and the rest, trimmed.
fn split_word(s: &str) -> (&str, &str) {
    match s.split_once(char::is_whitespace) {
        Some((w, rest)) => (w, rest.trim()),
        None => (s, ""),
    }
}

/// The `NAME [JSON]` arguments of a built-in: the name, and the JSON object
/// (empty when there is none).
fn name_and_object<'a>(args: &'a str, usage: &str) -> Result<(&'a str, Payload), String> {
    let (name, text) = split_word(args);
    if name.is_empty() {
        return Err(format!("usage: {usage}"));
    }
    if text.is_empty() {
        return Ok((name, Payload::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok((name, m)),
        Ok(_) => Err("arguments must be a JSON object".into()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

/// A panel as a framed block.
fn draw_panel(title: &str, lines: &[String], footer: &str, id: &str) -> String {
    let title = format!("{} ({})", one_line(title), one_line(id));
    let lines: Vec<String> = lines.iter().map(|l| one_line(l)).collect();
    let footer = one_line(footer);
    let width = lines
        .iter()
        .map(|l| l.chars().count())
        .chain([title.chars().count() + 2, footer.chars().count()])
        .max()
        .unwrap_or(0)
        .min(200);
    let pad = |s: &str| {
        let s: String = s.chars().take(width).collect();
        let n = width - s.chars().count();
        format!("│ {s}{} │", " ".repeat(n))
    };
    let mut out = format!("┌─ {title} {}┐\n", "─".repeat(width.saturating_sub(title.chars().count() + 1)));
    for l in &lines {
        out.push_str(&pad(l));
        out.push('\n');
    }
    if !footer.is_empty() {
        out.push_str(&format!("├{}┤\n", "─".repeat(width + 2)));
        out.push_str(&pad(&footer));
        out.push('\n');
    }
    out.push_str(&format!("└{}┘", "─".repeat(width + 2)));
    out
}

/// Tab completion: `/commands` as the first word, tool names after `/tool`.
fn completions(host: &Host, before: &str) -> Vec<String> {
    let words: Vec<&str> = before.split(' ').collect();
    let Ok(l) = host.list() else { return Vec::new() };
    match words.as_slice() {
        [first] if first.starts_with('/') => BUILTINS
            .iter()
            .map(|(n, _)| format!("/{n}"))
            .chain(l.commands.iter().map(|c| format!("/{}", one_line(&c.name))))
            .collect(),
        ["/tool", _] => l.tools.iter().map(|t| one_line(&t.name)).collect(),
        _ => Vec::new(),
    }
}

fn print_loop(
    events: Receiver<Printed>,
    jobs: Receiver<Job>,
    style: Style,
    panels: Panels,
    screen: Arc<Screen>,
    slashes: Sender<String>,
) {
    let print = |s: &str| {
        if !s.is_empty() {
            screen.print(s);
        }
    };
    let show = |ev: HostEvent| {
        if let HostEvent::SubmitSlash { text, .. } = &ev {
            let _ = slashes.send(text.clone());
        }
        print(&render_event(ev, style, &panels));
    };
    // A reply whose place is marked and not printed yet: the events after
    // it wait in the channel.
    let mut holding: Option<u64> = None;
    let finish = |job: Job| {
        print(&job.text);
        if let Some(a) = job.ack {
            let _ = a.send(());
        }
    };
    loop {
        let job = if holding.is_some() {
            match jobs.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        } else {
            select! {
                recv(events) -> p => {
                    match p {
                        Ok(Printed::Event(ev)) => show(ev),
                        Ok(Printed::Hold(n)) => holding = Some(n),
                        Err(_) => {
                            // The host is gone; finish the remaining jobs.
                            for job in jobs.iter() {
                                finish(job);
                            }
                            return;
                        }
                    }
                    continue;
                }
                recv(jobs) -> job => match job {
                    Ok(job) => job,
                    Err(_) => return,
                },
            }
        };
        match job.release {
            // Everything before the reply's mark is printed first.
            Some(n) => {
                while holding != Some(n) {
                    match events.recv() {
                        Ok(Printed::Event(ev)) => show(ev),
                        Ok(Printed::Hold(m)) => holding = Some(m),
                        Err(_) => break,
                    }
                }
                holding = None;
            }
            None if holding.is_none() => {
                while let Ok(p) = events.try_recv() {
                    match p {
                        Printed::Event(ev) => show(ev),
                        Printed::Hold(m) => {
                            holding = Some(m);
                            break;
                        }
                    }
                }
            }
            None => {}
        }
        finish(job);
    }
}

fn render_event(ev: HostEvent, st: Style, panels: &Panels) -> String {
    let tag = |n: &str| st.dim(&format!("[{}]", one_line(n)));
    match ev {
        HostEvent::Ready { .. }
        | HostEvent::ExtensionReady { .. }
        | HostEvent::ToolsChanged { .. }
        | HostEvent::CallTool { .. }
        | HostEvent::CallToolCancel { .. } => String::new(),
        HostEvent::ExtensionRestarting { extension, attempt, delay_ms, code, signal } => {
            let how = match (code, signal) {
                (_, Some(s)) => format!("signal {s}"),
                (Some(c), None) => format!("exit code {c}"),
                (None, None) => "failed to start".into(),
            };
            format!("{} {}", tag(&extension), st.dim(&format!("exited ({how}); restart {attempt} in {delay_ms} ms")))
        }
        HostEvent::ExtensionCrashLoop { extension, restarts } => format!(
            "{} {}",
            tag(&extension),
            st.red(&format!("gave up after {restarts} restarts (crash loop); see 'zot ext logs {}'", one_line(&extension)))
        ),
        HostEvent::SubmitSlash { extension, text } => {
            format!("{} {} {}", tag(&extension), st.dim("→ run:"), strip_controls(&text))
        }
        HostEvent::Notify { extension, level, message } => {
            format!("{} {}", tag(&extension), st.level(&level, &strip_controls(&message)))
        }
        HostEvent::ClearNotes { extension } => format!("{} {}", tag(&extension), st.dim("(notes cleared)")),
        HostEvent::Submit { extension, text } => {
            format!("{} {} {}", tag(&extension), st.dim("→ submit:"), strip_controls(&text))
        }
        HostEvent::OpenPanel { extension, panel } => {
            let Panel { id, title, lines, footer } = panel;
            if let Ok(mut m) = panels.lock() {
                m.insert(id.clone(), extension.clone());
            }
            format!("{}\n{}", tag(&extension), draw_panel(&title, &lines, &footer, &id))
        }
        HostEvent::PanelRender { extension, panel_id, title, lines, footer } => {
            format!("{}\n{}", tag(&extension), draw_panel(&title, &lines, &footer, &panel_id))
        }
        HostEvent::PanelClose { extension, panel_id } => {
            if let Ok(mut m) = panels.lock() {
                m.remove(&panel_id);
            }
            format!("{} {}", tag(&extension), st.dim(&format!("(panel {} closed)", one_line(&panel_id))))
        }
        HostEvent::Exited { extension, code, signal } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown status".into(),
            };
            format!("{} {}", tag(&extension), st.red(&format!("exited ({how})")))
        }
        HostEvent::LoadFailed { extension, message, log } => {
            let mut s = format!("{} {}", tag(&extension), st.red(&format!("failed to load: {}", one_line(&message))));
            if log.is_some() {
                s.push_str(&st.dim(&format!(" (see 'zot ext logs {}')", one_line(&extension))));
            }
            s
        }
        HostEvent::UntrustedProject { dir, extensions } => st.dim(&crate::trust::not_loaded_line(&dir, &extensions)),
    }
}

fn is_tty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}
