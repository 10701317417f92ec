//! The console's built-in commands (`/help`, `/commands`, `/tools`,
//! `/tool`, `/resources`, `/read`, `/event`, `/intercept`, `/key`,
//! `/reload-ext`, `/extensions`), how they show replies, tool results and
//! resources, and tab completion.

use crate::host::{CommandReply, ExtInfo, Host, Listing, Request, Response, ToolReply};
use crate::protocol::Payload;
use crate::text::{one_line, strip_controls};
use serde_json::{json, Value};

use super::print::Held;
use super::panels::BLOCK_WIDTH;
use super::render::{draw_panel, fit, text_width};
use super::state::{Console, InFlight, BUILTINS};

impl Console {
    pub(super) fn help(&self) {
        let mut s = String::from("built-in commands:\n");
        for (n, d) in BUILTINS {
            // The arguments beside the name, as a usage line has them.
            let (args, what) = match d.split_once(": ") {
                Some((a, w)) if a.chars().all(|c| c.is_ascii_uppercase() || " []".contains(c)) => (a, w),
                _ => ("", d),
            };
            let head = if args.is_empty() { format!("/{n}") } else { format!("/{n} {args}") };
            s.push_str(&format!("  {head:<22} {what}\n"));
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
    /// earlier extension (docs/protocol.md §3.5: never silent to a user who asks).
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

    pub(super) fn commands(&self) {
        let s = self.command_lines();
        self.say(s.trim_end().to_string());
    }

    pub(super) fn tools(&self) {
        match self.host.list() {
            Ok(l) => {
                // On a terminal each tool is one row: what does not fit
                // of its description is cut (the name and tag stay).
                let room = self.editor.is_some().then(|| crate::lineedit::term_size().0.saturating_sub(1));
                // The name column fits the longest name, so the descriptions
                // start in one column.
                let column = l.tools.iter().map(|t| text_width(&one_line(&t.name))).max().unwrap_or(0).max(14);
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
                        let tag = format!("[{}]{marks}", one_line(&t.extension));
                        let shown = one_line(&t.name);
                        let name = format!("  {shown}{} ", " ".repeat(column - text_width(&shown)));
                        let mut desc = one_line(&t.description);
                        if let Some(room) = room {
                            let fixed = text_width(&name) + 1 + text_width(&tag);
                            desc = fit(&desc, room.saturating_sub(fixed));
                            if fixed > room {
                                let line = fit(&format!("{name}{desc} {tag}"), room);
                                return format!("{line}\n");
                            }
                        }
                        format!("{name}{desc} {}\n", self.style.dim(&tag))
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

    pub(super) fn extensions(&self) {
        match self.host.list() {
            Ok(l) if l.extensions.is_empty() => self.say("(no extensions loaded)".into()),
            Ok(l) => {
                let lines: Vec<String> = l
                    .extensions
                    .iter()
                    .map(|e| {
                        // Its confinement mark (docs/protocol.md §9.3) before its folder.
                        // A failed entry never ran: it has no access to mark.
                        let mark = if e.state == crate::host::State::Failed { "-" } else { e.confinement_mark };
                        let mark = self.style.dim(&format!("{mark:<15}"));
                        // A server from an --mcp-config file is shown by that file.
                        let source = match (&e.config_file, e.source) {
                            (Some(file), "ext") => one_line(file),
                            _ => e.source.to_string(),
                        };
                        let mut s = format!("  {:<16} {:<10} {:<7} {mark} {}", one_line(&e.name), e.state.as_str(), source, one_line(&e.dir));
                        let broken_file = e.error.as_deref().is_some_and(|x| x.contains(crate::manifest::BROKEN_CONFIG));
                        if e.kind == "mcp" && broken_file {
                            s.push_str(&format!("  {}", self.style.dim("(MCP config file)")));
                        } else if e.kind == "mcp" {
                            let v = e.protocol_version.as_deref().map(|v| format!(" {}", one_line(v))).unwrap_or_default();
                            s.push_str(&format!("  {}", self.style.dim(&format!("(MCP server{v})"))));
                        }
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

    pub(super) fn show_reply(&mut self, r: &CommandReply, held: Held) {
        let tag = self.style.dim(&format!("[{}]", one_line(&r.extension)));
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
                // On a terminal it is drawn in place, below what is printed.
                Some(p) if self.editor.is_some() => return held.open_panel(String::new(), &r.extension, p.clone()),
                Some(p) => {
                    self.panels.open(&r.extension, p);
                    format!("{tag}\n{}", draw_panel(&p.title, &p.lines, &p.footer, &p.id, BLOCK_WIDTH))
                }
                None => format!("{tag} (open_panel without a panel)"),
            },
            // Printed as nothing, in its place: what came before it is out.
            "noop" => return held.say(String::new()),
            other => format!("{tag} {}", self.style.dim(&format!("(unknown action {:?})", one_line(other)))),
        };
        held.say(text);
        // A `prompt` action submits a user prompt: it runs as typed text.
        if r.action == "prompt" {
            let text = r.prompt.as_deref().unwrap_or("").trim();
            if !text.is_empty() {
                self.prompt(text);
            }
        }
    }

    pub(super) fn tool(&mut self, args: &str) {
        match name_and_object(args, "/tool NAME JSON") {
            Ok((n, a)) => self.run_tool(n, a),
            Err(e) => self.error(&e),
        }
    }

    /// A tool call as the model's: the host runs the intercept chain, the
    /// events and the call (cancellable at every step, docs/protocol.md §6.1);
    /// what the chain did and the answer are shown.
    fn run_tool(&mut self, name: &str, args: Payload) {
        // An interactive tool is answered in its extension's panel. A name
        // nobody has is the host's to answer: it may wait for an MCP
        // server still starting (docs/protocol.md §8.2).
        let interactive = self
            .host
            .list()
            .ok()
            .and_then(|l| l.tools.into_iter().find(|t| t.name == name))
            .and_then(|t| t.interactive.then_some(t.extension));
        self.tool_seq += 1;
        let tool_id = format!("console-{}", self.tool_seq);
        let asked = Value::Object(args);
        let call = InFlight { tool_id: &tool_id, interactive: interactive.as_deref() };
        let (r, chain_args, held) = self.call_tool(name, asked.clone(), &call);
        let mut lines = Vec::new();
        if let Some(a) = chain_args.filter(|a| *a != asked) {
            lines.push(format!("{} {}", self.style.dim("args rewritten:"), strip_controls(&a.to_string())));
        }
        match r {
            Ok(ToolReply { blocked: Some(reason), .. }) => {
                lines.push(self.style.red(&format!("tool call blocked: {}", one_line(&reason))));
            }
            Ok(r) => lines.push(self.tool_text(&r)),
            Err(e) => lines.push(self.error_line(&e.to_string())),
        }
        held.say(lines.join("\n"));
    }

    fn tool_text(&self, r: &ToolReply) -> String {
        let tag = self.style.dim(&format!("[{}]", one_line(&r.extension)));
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
            format!("{tag} {}", self.style.red(&format!("tool error: {body}")))
        } else {
            format!("{tag} {body}")
        }
    }

    /// `/resources`: each server's resources and templates, under its name.
    pub(super) fn resources(&mut self) {
        let (r, held) = self.call(Request::Resources);
        let l = match r {
            Ok(Response::Resources(l)) => l,
            Ok(other) => return held.say(self.error_line(&format!("unexpected response {other:?}"))),
            Err(e) => return held.say(self.error_line(&e.to_string())),
        };
        if l.resources.is_empty() && l.templates.is_empty() {
            return held.say("(no resources)".into());
        }
        let mut servers: Vec<&str> = Vec::new();
        for s in l.resources.iter().map(|r| r.server.as_str()).chain(l.templates.iter().map(|t| t.server.as_str())) {
            if !servers.contains(&s) {
                servers.push(s);
            }
        }
        let mut out = Vec::new();
        for s in servers {
            out.push(self.style.dim(&format!("[{}]", one_line(s))));
            for r in l.resources.iter().filter(|r| r.server == s) {
                let mut about = vec![one_line(r.title.as_deref().unwrap_or(&r.name))];
                about.extend(r.mime_type.as_deref().map(one_line));
                about.extend(r.size.map(|n| format!("{n} bytes")));
                out.push(format!("  {}  {}", one_line(&r.uri), self.style.dim(&about.join(", "))));
            }
            for t in l.templates.iter().filter(|t| t.server == s) {
                let mut about = vec![one_line(t.title.as_deref().unwrap_or(&t.name)), "template".to_string()];
                about.extend(t.mime_type.as_deref().map(one_line));
                out.push(format!("  {}  {}", one_line(&t.uri_template), self.style.dim(&about.join(", "))));
            }
        }
        held.say(out.join("\n"));
    }

    /// `/read URI`: the text of each content, a blob described by its type
    /// and size (never printed).
    pub(super) fn read(&mut self, args: &str) {
        let (uri, _) = split_word(args);
        if uri.is_empty() {
            return self.error("usage: /read URI");
        }
        let (r, held) = self.call(Request::ReadResource { uri: uri.into() });
        let read = match r {
            Ok(Response::Resource(read)) => read,
            Ok(other) => return held.say(self.error_line(&format!("unexpected response {other:?}"))),
            Err(e) => return held.say(self.error_line(&e.to_string())),
        };
        let tag = self.style.dim(&format!("[{}]", one_line(&read.server)));
        let mut parts = Vec::new();
        for c in &read.contents {
            let mime = c.get("mime_type").and_then(Value::as_str).map(one_line);
            if let Some(t) = c.get("text").and_then(Value::as_str) {
                parts.push(strip_controls(t));
            } else if let Some(b) = c.get("blob").and_then(Value::as_str) {
                let bytes = b.trim_end_matches('=').len() * 3 / 4;
                let uri = one_line(c.get("uri").and_then(Value::as_str).unwrap_or(""));
                parts.push(self.style.dim(&format!("[blob {uri}: {}, {bytes} bytes]", mime.as_deref().unwrap_or("application/octet-stream"))));
            }
        }
        if parts.is_empty() {
            parts.push(self.style.dim("(no contents)"));
        }
        held.say(format!("{tag} {}", parts.join("\n")));
    }

    pub(super) fn event(&self, args: &str) {
        let (name, payload) = match name_and_object(args, "/event NAME [JSON]") {
            Ok(v) => v,
            Err(e) => return self.error(&e),
        };
        match self.host.event(name, payload) {
            Ok(n) => self.say(self.style.dim(&format!("event {} delivered to {n} extension(s)", one_line(name)))),
            Err(e) => self.error(&e.to_string()),
        }
    }

    pub(super) fn intercept(&self, args: &str) {
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

    pub(super) fn key(&self, args: &str) {
        let mut it = args.splitn(3, char::is_whitespace);
        let (Some(panel), Some(key)) = (it.next().filter(|s| !s.is_empty()), it.next()) else {
            return self.error("usage: /key PANEL KEY [TEXT]");
        };
        let text = it.next().map(str::to_string);
        let owner = self.panels.owner(panel);
        let Some(ext) = owner else {
            return self.error(&format!("no open panel {panel:?}"));
        };
        if let Err(e) = self.host.panel_key(&ext, panel, key, text) {
            self.error(&e.to_string());
        }
    }

    pub(super) fn reload(&mut self) {
        self.system_stale = true;
        let (r, held) = self.call(Request::Reload);
        match r {
            Ok(Response::Reload(r)) => {
                // Each load error was printed as it happened (`failed to load`).
                held.say(format!("reloaded: stopped {}, loaded {}, ready {}", r.stopped, r.loaded, r.ready));
                // The session goes on with new processes: they are told it
                // began, as the first ones were.
                let _ = self.host.event("session_start", crate::protocol::Payload::new());
            }
            Ok(other) => held.say(self.error_line(&format!("unexpected response {other:?}"))),
            Err(e) => held.say(self.error_line(&e.to_string())),
        }
    }
}

impl Console {
    /// `/login NAME`: what `zot mcp login NAME` does (docs/protocol.md §8.5
    /// rule 11), the address printed here and the callback awaited in the
    /// session; then the server is connected again with its new login.
    pub(super) fn login(&mut self, args: &str) {
        let (name, _) = split_word(args);
        if name.is_empty() {
            return self.error("usage: /login NAME");
        }
        let c = &self.discovery;
        let found = crate::discovery::discover_with(&c.sources, &c.mcp_configs, &c.cwd, &c.home, c.trust_project).remote_named(name);
        let spec = match found {
            Ok(s) => s,
            Err(e) => return self.error(&e),
        };
        let mut said = Said { console: self, pending: Vec::new() };
        let done = log_in(&spec, c.home.root(), &mut said);
        let _ = std::io::Write::flush(&mut said);
        match done {
            Ok(()) => self.restart(name),
            Err(e) => self.error(&e),
        }
    }

    /// `/restart NAME`: as serve's `restart` (docs/protocol.md §4).
    pub(super) fn restart(&mut self, args: &str) {
        let (name, _) = split_word(args);
        if name.is_empty() {
            return self.error("usage: /restart NAME");
        }
        let (r, held) = self.call(Request::Restart { name: name.into() });
        match r {
            Ok(Response::Restarted { extension, pid }) => {
                let pid = pid.map_or_else(String::new, |p| format!(" (pid {p})"));
                held.say(format!("restarted {extension}{pid}"));
            }
            Ok(other) => held.say(self.error_line(&format!("unexpected response {other:?}"))),
            Err(e) => held.say(self.error_line(&e.to_string())),
        }
    }
}

/// The first word of `s` and the rest, trimmed.
pub(super) fn split_word(s: &str) -> (&str, &str) {
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

/// Tab completion: `/commands` as the first word, tool names after `/tool`.
pub(super) fn completions(host: &Host, before: &str) -> Vec<String> {
    let words: Vec<&str> = before.split(' ').collect();
    let Ok(l) = host.list() else { return Vec::new() };
    match words.as_slice() {
        [first] if first.starts_with('/') => BUILTINS
            .iter()
            .map(|(n, _)| format!("/{n}"))
            .chain(l.commands.iter().map(|c| format!("/{}", one_line(&c.name))))
            .collect(),
        ["/tool", _] => l.tools.iter().map(|t| one_line(&t.name)).collect(),
        ["/read", _] => match host.call(Request::Resources) {
            Ok(Response::Resources(r)) => r.resources.iter().map(|r| one_line(&r.uri)).collect(),
            _ => Vec::new(),
        },
        ["/login", _] => l.extensions.iter().filter(|e| e.auth == Some("oauth")).map(|e| one_line(&e.name)).collect(),
        _ => Vec::new(),
    }
}

#[cfg(feature = "remote")]
fn log_in(spec: &crate::mcpserver::config::ServerSpec, home: &std::path::Path, out: &mut dyn std::io::Write) -> Result<(), String> {
    crate::mcpserver::remote::login(spec, home, out)
}

#[cfg(not(feature = "remote"))]
fn log_in(_: &crate::mcpserver::config::ServerSpec, _: &std::path::Path, _: &mut dyn std::io::Write) -> Result<(), String> {
    Err("this zot was built without remote servers".into())
}

/// What a login writes, said in the console as it is flushed (the address
/// must show while the login waits for the browser).
struct Said<'a> {
    console: &'a Console,
    pending: Vec<u8>,
}

impl std::io::Write for Said<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        let text = text.trim_end_matches('\n');
        if !text.is_empty() {
            let safe: Vec<String> = text.lines().map(strip_controls).collect();
            self.console.say(safe.join("\n"));
        }
        Ok(())
    }
}
