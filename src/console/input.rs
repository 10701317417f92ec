//! Where the session's input comes from, and how the console waits.
//!
//! On a terminal the line editor reads keys; its `read_line` also wakes for
//! what extensions submit (`submit_slash`, `submit`), which runs at once and
//! leaves the half-typed line as it was. Piped, stdin is read on a thread
//! of its own and the session selects between its lines and what is
//! submitted. Either way at most [`MAX_SLASHES`] submitted commands run
//! between two input lines, so that two extensions cannot keep each other
//! going for ever.
//!
//! While a call is in flight, piped lines keep being read and wait their
//! turn until it ends; during an interactive tool's call `/key` lines are
//! carried out at once (once the tool's extension has a panel open, so a
//! script can answer it), and the end of input cancels the call once the
//! `/key` lines before it are carried out (or, when no panel opens, after
//! [`PANEL_GRACE`]). On a terminal, keys typed during an interactive tool's
//! call go to its extension's open panel, Ctrl-C cancels a tool call, and
//! keys typed during other calls are kept for the next prompt. At the
//! prompt, while an open panel has the keys (see `panels`), they go to it
//! by the same way, [`panels::press`].

use crate::host::{HostError, Request, Response, ToolReply};
use crate::lineedit::{Read, WaitKey};
use crate::text::strip_controls;
use crossbeam_channel::{never, select, Receiver, Sender};
use serde_json::Value;
use std::io::{self, BufRead, Write};

use super::commands::{completions, split_word};
use super::panels;
use super::print::{Held, Job, PanelOp, Submitted};
use super::state::{Console, InFlight, Input};

/// How long `/key` lines read before the end of input wait for the
/// interactive tool's panel once the input has ended.
const PANEL_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Submitted commands (`submit_slash`, `submit`) that run between two
/// input lines, at most.
pub(super) const MAX_SLASHES: usize = 16;

/// Reads stdin lines on a thread of its own, until its end.
pub(super) fn read_stdin(tx: Sender<Input>) -> io::Result<()> {
    std::thread::Builder::new().name("zot-console-in".into()).spawn(move || {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut line = String::new();
        loop {
            line.clear();
            let item = match input.read_line(&mut line) {
                Ok(0) => Input::End,
                Ok(_) => Input::Line(line.clone()),
                Err(e) if e.kind() == io::ErrorKind::InvalidData => Input::NotUtf8,
                Err(_) => Input::End,
            };
            let end = matches!(item, Input::End);
            if tx.send(item).is_err() || end {
                return;
            }
        }
    })?;
    Ok(())
}

/// The arguments of a `/key` line.
fn key_args(line: &str) -> Option<&str> {
    let (name, args) = split_word(line.trim().strip_prefix('/')?);
    name.eq_ignore_ascii_case("key").then_some(args)
}

/// The key that closes a panel on a terminal, as upstream zot's
/// interactive host closes one: the extension gets `panel_close`, not the key.
const CLOSE_KEY: &str = "esc";

/// The user closes panel `id` of `ext`: the extension is told
/// (`panel_close`) and the panel leaves the screen.
fn close_panel(host: &crate::host::Host, out: &Sender<Job>, screen: &crate::lineedit::Screen, style: super::render::Style, ext: String, id: String) {
    if let Err(e) = host.panel_close(&ext, &id) {
        screen.print(&style.red(&format!("error: {}", crate::text::one_line(&e.to_string()))));
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let op = Some(PanelOp::Close(ext, id));
    let _ = out.send(Job { text: String::new(), ack: Some(tx), release: None, panel: op });
    let _ = rx.recv();
}

impl Console {
    pub(super) fn repl(&mut self) {
        if self.editor.is_some() {
            self.edit_loop();
        } else {
            self.pipe_loop();
        }
    }

    /// Reads lines with the editor until the session ends.
    fn edit_loop(&mut self) {
        let prompt = self.style.bold("zot> ");
        let host = self.host.clone();
        let complete = move |before: &str| completions(&host, before);
        let submitted = self.submitted.clone();
        loop {
            self.sync();
            let Some(mut editor) = self.editor.take() else { return };
            let read = editor.read_line(&prompt, &complete, &submitted);
            self.editor = Some(editor);
            let go_on = match read {
                Read::End => false,
                Read::Line(line) => {
                    self.budget = MAX_SLASHES;
                    let text = line.trim();
                    (text.is_empty() || self.line(text)) && self.run_submitted()
                }
                Read::Woken(s) => self.run_one(s),
                Read::Panel(k) => {
                    self.panel_key(k);
                    true
                }
            };
            if !go_on {
                break;
            }
        }
        if let Some(editor) = self.editor.as_mut() {
            editor.close_line();
        }
    }

    /// A key typed while the panel drawn in place has the keys: to the
    /// newest open panel, as an interactive tool's keys go to its panel;
    /// Esc and Ctrl-C close it (the extension is told, `panel_close`).
    fn panel_key(&mut self, key: WaitKey) {
        let Some((id, ext)) = self.panels.newest() else { return };
        let Some(screen) = self.editor.as_ref().map(|e| e.screen()) else { return };
        match key {
            WaitKey::Panel(CLOSE_KEY, _) | WaitKey::Interrupt => close_panel(&self.host, &self.out, &screen, self.style, ext, id),
            WaitKey::Panel(key, text) => panels::press(&self.host, &screen, self.style, &ext, &id, key, text),
        }
    }

    /// Reads piped lines (or a terminal's, without the editor) until the
    /// session ends; what extensions submit runs as it arrives.
    fn pipe_loop(&mut self) {
        let Some(lines) = self.lines.clone() else { return };
        let submitted = self.submitted.clone();
        loop {
            let next = match self.submitted.try_recv() {
                Ok(s) => Err(s),
                Err(_) => match self.backlog.pop_front() {
                    Some(i) => Ok(i),
                    None => {
                        if self.prompting {
                            self.sync();
                            let mut o = io::stdout();
                            let _ = write!(o, "{}", self.style.bold("zot> "));
                            let _ = o.flush();
                        }
                        select! {
                            recv(lines) -> i => Ok(i.unwrap_or(Input::End)),
                            recv(submitted) -> s => match s {
                                Ok(s) => Err(s),
                                Err(_) => Ok(Input::End),
                            },
                        }
                    }
                },
            };
            let go_on = match next {
                Err(s) => self.run_one(s),
                Ok(Input::End) => {
                    // What the last lines caused still runs.
                    self.sync();
                    self.run_submitted();
                    false
                }
                Ok(Input::NotUtf8) => {
                    self.error("input is not UTF-8; line skipped");
                    true
                }
                Ok(Input::Line(line)) => {
                    let text = line.trim();
                    if text.is_empty() {
                        continue;
                    }
                    self.budget = MAX_SLASHES;
                    self.line(text)
                }
            };
            if !go_on {
                return;
            }
        }
    }

    /// Runs what extensions submitted and is already queued; false ends
    /// the session.
    pub(super) fn run_submitted(&mut self) -> bool {
        while let Ok(s) = self.submitted.try_recv() {
            if !self.run_one(s) {
                return false;
            }
        }
        true
    }

    /// Runs one submitted command as if typed, within the budget; false
    /// ends the session.
    fn run_one(&mut self, s: Submitted) -> bool {
        if self.budget == 0 {
            let dropped = 1 + self.submitted.try_iter().count();
            self.error(&format!("{dropped} more submitted slash commands dropped (at most {MAX_SLASHES} per line)"));
            return true;
        }
        self.budget -= 1;
        match s {
            Submitted::Slash(text) => {
                self.say(format!("{} {}", self.style.dim("→ running"), strip_controls(&text)));
                self.line(&text)
            }
            Submitted::Prompt(text) => {
                let text = text.trim();
                if !text.is_empty() {
                    self.prompt(text);
                }
                true
            }
        }
    }

    /// Submits `request`; its answer marks its place among the host's
    /// events, so the reply is printed before what happened after it.
    pub(super) fn submit_held(&mut self, request: Request) -> (Receiver<Result<Response, HostError>>, Held) {
        self.submit_held_with(request, None)
    }

    /// [`Console::submit_held`]; a tool call run as the model's sends the
    /// arguments its chain ended with to `chain_args`.
    fn submit_held_with(&mut self, request: Request, chain_args: Option<Sender<Value>>) -> (Receiver<Result<Response, HostError>>, Held) {
        self.held += 1;
        let n = self.held;
        let (tx, rx) = crossbeam_channel::bounded(1);
        let holds = self.holds.clone();
        let mut done = crate::host::Responder::new(move |r| {
            let _ = holds.send(super::print::Printed::Hold(n));
            let _ = tx.send(r);
        });
        if let Some(c) = chain_args {
            done = done.with_chain_args(c);
        }
        self.host.submit_responder(request, done);
        (rx, Held { n, out: self.out.clone(), done: false })
    }

    /// Runs a request that cannot be cancelled. On a terminal, a Ctrl-C
    /// meanwhile says so (rather than waiting to end the session at the
    /// next prompt).
    pub(super) fn call(&mut self, request: Request) -> (Result<Response, HostError>, Held) {
        let (rx, held) = self.submit_held(request);
        let outcome = match self.editor.as_mut() {
            Some(editor) => {
                let screen = editor.screen();
                editor.wait(&rx, || screen.print("(this cannot be cancelled; waiting for its answer or its timeout)"))
            }
            None => self.wait_piped(&rx, None),
        };
        (outcome.unwrap_or(Err(HostError::ShuttingDown)), held)
    }

    /// Calls the tool as the model's call (the host runs its `tool_call`
    /// chain, its events and the call), with the arguments the chain ended
    /// with when it ended. On a terminal Ctrl-C meanwhile cancels it
    /// wherever it is, and the keys of an interactive tool's call go to
    /// its extension's panel; piped, the end of input cancels an
    /// interactive tool's call.
    pub(super) fn call_tool(&mut self, name: &str, args: Value, call: &InFlight<'_>) -> (Result<ToolReply, HostError>, Option<Value>, Held) {
        let tool_id = call.tool_id;
        // Progress (an MCP server's) is shown as a status line as it comes.
        let req = Request::ToolCall(crate::host::ToolCall {
            name: name.into(),
            args: Some(args),
            tool_id: Some(tool_id.into()),
            progress_key: Some(crate::protocol::WireId::string(tool_id)),
            as_model: true,
            ..Default::default()
        });
        let (args_tx, args_rx) = crossbeam_channel::bounded(1);
        let (rx, held) = self.submit_held_with(req, Some(args_tx));
        let host = self.host.clone();
        let open = self.panels.clone();
        let out = self.out.clone();
        let style = self.style;
        let outcome = match (self.editor.as_mut(), call.interactive) {
            (Some(editor), Some(ext)) => {
                let screen = editor.screen();
                editor.wait_keys(&rx, |k| match k {
                    WaitKey::Interrupt => {
                        let _ = host.cancel_tool(tool_id);
                    }
                    WaitKey::Panel(key, text) => {
                        let Some(panel) = open.last_of(ext) else { return };
                        if key == CLOSE_KEY {
                            return close_panel(&host, &out, &screen, style, ext.to_string(), panel);
                        }
                        panels::press(&host, &screen, style, ext, &panel, key, text);
                    }
                })
            }
            (Some(editor), None) => editor.wait(&rx, || {
                let _ = host.cancel_tool(tool_id);
            }),
            (None, _) => self.wait_piped(&rx, Some(call)),
        };
        let r = match outcome {
            Some(Ok(Response::Tool(r))) => Ok(r),
            Some(Ok(other)) => Err(HostError::Internal(format!("unexpected response {other:?}"))),
            Some(Err(e)) => Err(e),
            None => Err(HostError::ShuttingDown),
        };
        (r, args_rx.try_recv().ok(), held)
    }

    /// Waits for `rx` while piped lines keep being read (see the header).
    fn wait_piped<T>(&mut self, rx: &Receiver<T>, call: Option<&InFlight<'_>>) -> Option<T> {
        let Some(lines) = self.lines.clone() else { return rx.recv().ok() };
        let opened = self.panel_opened.clone();
        let mut cancelled = false;
        let mut ended_at: Option<std::time::Instant> = None;
        loop {
            self.keys_read_meanwhile(call, &mut cancelled);
            let ended = self.backlog.iter().any(|i| matches!(i, Input::End));
            let more = if ended { never() } else { lines.clone() };
            // Input is over but `/key` lines still wait for a panel: they
            // get a while for it, then the call is cancelled all the same,
            // so that a script never hangs on a tool that opens no panel.
            let waiting_keys = ended && !cancelled && call.is_some_and(|c| c.interactive.is_some());
            // A timeout arm rather than a timer channel: a channel of
            // `Instant`s would be one more copy of the channel code.
            let give_up = match (waiting_keys, ended_at) {
                (true, None) => {
                    ended_at = Some(std::time::Instant::now());
                    PANEL_GRACE
                }
                (true, Some(t)) => (t + PANEL_GRACE).saturating_duration_since(std::time::Instant::now()),
                (false, _) => std::time::Duration::MAX,
            };
            select! {
                recv(rx) -> r => return r.ok(),
                recv(more) -> i => self.backlog.push_back(i.unwrap_or(Input::End)),
                recv(opened) -> _ => {}
                default(give_up) => {
                    let skipped = self.backlog.iter().filter(|i| matches!(i, Input::Line(l) if key_args(l).is_some())).count();
                    self.backlog.retain(|i| !matches!(i, Input::Line(l) if key_args(l).is_some()));
                    self.error(&format!("the tool opened no panel; {skipped} /key line(s) skipped at the end of input"));
                }
            }
        }
    }

    /// Carries out the `/key` lines read during a call, in their order; an
    /// interactive tool's call waits for its extension's panel first, and
    /// is cancelled by the end of input once the keys before it are out.
    fn keys_read_meanwhile(&mut self, call: Option<&InFlight<'_>>, cancelled: &mut bool) {
        let Some(ext) = call.and_then(|c| c.interactive) else { return };
        let mut i = 0;
        while i < self.backlog.len() {
            match &self.backlog[i] {
                Input::Line(l) if key_args(l).is_some() => {
                    if self.panels.last_of(ext).is_none() {
                        return;
                    }
                    if let Some(Input::Line(l)) = self.backlog.remove(i) {
                        self.key(key_args(&l).unwrap_or_default());
                    }
                }
                Input::End => {
                    if let (Some(c), false) = (call, *cancelled) {
                        *cancelled = true;
                        let _ = self.host.cancel_tool(c.tool_id);
                    }
                    return;
                }
                _ => i += 1,
            }
        }
    }
}
