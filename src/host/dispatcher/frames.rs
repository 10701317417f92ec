//! Frames from extensions: the handshake and `hello_ack`, registrations
//! (within the limits, shadowing by load order), subscriptions, replies
//! matched to their calls by id and sender, and the spontaneous frames
//! forwarded as host events at a bounded rate.

use super::{COMMAND_ACTIONS, Dispatcher, HOST_CAPABILITIES, INTERCEPTABLE, Life, NOTIFY_LEVELS, Timer, after, blocks, registry, respond};
use super::calls::{Call, CallKind, ToolStage};
use super::ext::ToolEntry;
use super::limits::{cut, trim_panel};
use crate::host::{CommandReply, HostError, HostEvent, Response, ToolReply};
use crate::protocol::{CommandResponse, ExtFrame, HelloAck, HostFrame, PROTOCOL_VERSION, Panel, ToolMore, ToolResult, encode};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

impl Dispatcher {
    pub(super) fn on_frame(&mut self, slot: usize, frame: ExtFrame) {
        let ext = &mut self.exts[slot];
        if let Life::Stopping { .. } = ext.life {
            // Answers to calls still in flight count, and notes (a note may
            // come "any time", docs/protocol.md §2.1: "saving state"); nothing
            // new starts.
            return match frame {
                ExtFrame::CommandResponse(r) => self.on_command_response(slot, r),
                ExtFrame::ToolResult(r) => self.on_tool_result(slot, r),
                ExtFrame::EventInterceptResponse(r) => self.on_intercept_response(slot, r),
                ExtFrame::Notify { .. } | ExtFrame::ClearNotes => self.spontaneous(slot, frame),
                ExtFrame::ShutdownAck => ext.log("shutdown acknowledged"),
                ExtFrame::Unknown => {}
                other => ext.log(&format!("ignored {} while stopping", other.kind())),
            };
        }
        if !ext.life.running() {
            return;
        }
        ext.last_frame = Instant::now();
        if ext.life == Life::Spawned {
            let ExtFrame::Hello { name, capabilities, version } = frame else {
                let why = format!("first frame was {:?}, expected \"hello\"", frame.kind());
                return self.fail(slot, why);
            };
            ext.life = Life::Registering;
            ext.capabilities = capabilities;
            ext.hello_version = version;
            if name != ext.name() {
                ext.log(&format!(
                    "hello names {name:?} but the manifest says {:?}; using the manifest's",
                    ext.name()
                ));
            }
            let m = &ext.found.manifest;
            let dir = m.dir.display().to_string();
            let data_dir = ext.data_dir.display().to_string();
            let ack = HostFrame::HelloAck(HelloAck {
                protocol_version: PROTOCOL_VERSION,
                zot_version: self.cfg.zot_version.clone(),
                provider: self.cfg.provider.clone(),
                model: self.cfg.model.clone(),
                cwd: self.cfg.cwd.display().to_string(),
                extension_dir: dir,
                data_dir,
                capabilities: HOST_CAPABILITIES.iter().map(|c| c.to_string()).collect(),
            });
            if let Err(e) = ext.send(Arc::new(encode(&ack))) {
                return self.fail(slot, format!("cannot send hello_ack: {e}"));
            }
            // An MCP server is ready when its lists are answered, however long that takes.
            if ext.found.mcp.is_none() {
                let (id, when) = (ext.id, after(self.cfg.timeouts.ready_idle));
                self.at(when, Timer::ReadyIdle(id));
            }
            return;
        }
        match frame {
            ExtFrame::Hello { .. } => ext.log("ignored a second hello"),
            ExtFrame::RegisterCommand { name, description } => self.register_command(slot, name, description),
            ExtFrame::RegisterTool { name, description, schema, more } => {
                self.register_tool(slot, name, description, schema, more)
            }
            ExtFrame::Subscribe { events, intercept } => self.subscribe(slot, events, intercept),
            ExtFrame::Ready => self.mark_ready(slot, "ready frame"),
            ExtFrame::CommandResponse(r) => self.on_command_response(slot, r),
            ExtFrame::ToolResult(r) => self.on_tool_result(slot, r),
            ExtFrame::EventInterceptResponse(r) => self.on_intercept_response(slot, r),
            ExtFrame::Notify { .. }
            | ExtFrame::ClearNotes
            | ExtFrame::OpenPanel { .. }
            | ExtFrame::PanelRender { .. }
            | ExtFrame::PanelClose { .. }
            | ExtFrame::Submit { .. }
            | ExtFrame::SubmitSlash { .. } => self.spontaneous(slot, frame),
            ExtFrame::CallTool { id, name, args, parent_id } => self.on_call_tool(slot, id, name, args, parent_id),
            ExtFrame::CallToolCancel { id } => self.on_call_tool_cancel(slot, &id),
            ExtFrame::ShutdownAck => ext.log("shutdown acknowledged"),
            ExtFrame::Unknown => {}
        }
    }

    /// Forwards a frame the extension sent of its own accord, within its
    /// rate; what is over the rate is dropped and counted.
    pub(super) fn spontaneous(&mut self, slot: usize, frame: ExtFrame) {
        let limits = self.cfg.limits;
        let ext = &mut self.exts[slot];
        if !ext.notes.take(&limits) {
            if ext.notes.dropped == 1 {
                ext.log(&format!(
                    "over {} notes/s (burst {}): dropping notes, panels and submits until the rate falls",
                    limits.notes_per_sec, limits.notes_burst
                ));
            }
            return;
        }
        let extension = ext.name().to_string();
        if ext.notes.dropped > 0 {
            let n = std::mem::take(&mut ext.notes.dropped);
            ext.log(&format!("dropped {n} notes, panels and submits over the rate limit"));
            let message = format!("zot: dropped {n} notes from this extension (over {} per second)", limits.notes_per_sec);
            self.emit(HostEvent::Notify { extension: extension.clone(), level: "warn".into(), message });
        }
        let t = limits.text_bytes;
        let ev = match frame {
            ExtFrame::Notify { level, message } => {
                let level = if NOTIFY_LEVELS.contains(&level.as_str()) {
                    level
                } else {
                    self.exts[slot].log(&format!("notify with unknown level {:?}; shown as info", cut(level, t)));
                    "info".to_string()
                };
                HostEvent::Notify { extension, level, message }
            }
            ExtFrame::ClearNotes => HostEvent::ClearNotes { extension },
            ExtFrame::OpenPanel { panel } => {
                let panel = trim_panel(panel, &limits);
                self.note_panel(slot, &panel.id);
                HostEvent::OpenPanel { extension, panel }
            }
            ExtFrame::PanelRender { panel_id, title, lines, footer } => {
                let p = trim_panel(Panel { id: panel_id, title, lines, footer }, &limits);
                HostEvent::PanelRender { extension, panel_id: p.id, title: p.title, lines: p.lines, footer: p.footer }
            }
            ExtFrame::PanelClose { panel_id } => {
                let panel_id = cut(panel_id, t);
                self.exts[slot].panels.retain(|p| *p != panel_id);
                HostEvent::PanelClose { extension, panel_id }
            }
            // docs/protocol.md §9.1 `prompt`: a confined extension steers the
            // model only when it declared so.
            ExtFrame::Submit { .. } | ExtFrame::SubmitSlash { .. } if !self.exts[slot].may_prompt() => {
                let kind = frame.kind();
                return self.exts[slot].log(&format!("dropped {kind}: confine.prompt is not true"));
            }
            ExtFrame::Submit { text } => HostEvent::Submit { extension, text },
            ExtFrame::SubmitSlash { text } => {
                let text = text.trim().to_string();
                if !text.starts_with('/') {
                    return self.exts[slot].log(&format!("refused submit_slash {text:?}: it must start with '/'"));
                }
                HostEvent::SubmitSlash { extension, text }
            }
            _ => return,
        };
        self.emit(ev);
    }

    /// Refuses a registration over a limit: logged the first time, counted
    /// always, and the embedding program is told once.
    pub(super) fn refuse(&mut self, slot: usize, what: String) {
        let ext = &mut self.exts[slot];
        ext.refused += 1;
        if ext.refused == 1 {
            ext.log(&format!("refused {what}; further refusals are counted, not logged"));
            let extension = ext.name().to_string();
            let message = format!("zot: refused {what}");
            self.emit(HostEvent::Notify { extension, level: "warn".into(), message });
        }
    }

    pub(super) fn register_command(&mut self, slot: usize, name: String, description: String) {
        let limits = self.cfg.limits;
        let ext = &mut self.exts[slot];
        if name.is_empty() {
            return ext.log("refused register_command with an empty name");
        }
        if name.len() > limits.name_bytes {
            return self.refuse(slot, format!("a command name of {} bytes (limit {})", name.len(), limits.name_bytes));
        }
        let description = cut(description, limits.text_bytes);
        let full = ext.commands.len() >= limits.commands;
        match ext.commands.iter_mut().find(|(n, _)| *n == name) {
            Some(c) => c.1 = description,
            None if full => {
                return self.refuse(slot, format!("command /{name}: over {} commands", limits.commands));
            }
            None => {
                // Names match without case (docs/protocol.md §6.3), within one
                // extension too: the spelling registered first wins.
                if let Some(first) = ext.command_spelled(&name) {
                    ext.log(&format!("command /{name} is shadowed by /{first}, registered first by the same extension"));
                }
                ext.commands.push((name.clone(), description));
            }
        }
        let msgs = self.registry.claim_command(&name, slot);
        self.log_claims(msgs);
    }

    pub(super) fn register_tool(&mut self, slot: usize, name: String, description: String, schema: Value, mut more: ToolMore) {
        let limits = self.cfg.limits;
        let ext = &mut self.exts[slot];
        if name.is_empty() {
            return ext.log("refused register_tool with an empty name");
        }
        // Upstream's SDK sends no schema for a tool without arguments.
        let schema = if schema.is_null() { serde_json::json!({"type": "object"}) } else { schema };
        if !schema.is_object() {
            return ext.log(&format!("refused tool {name:?}: its schema is not a JSON object"));
        }
        if name.len() > limits.name_bytes {
            return self.refuse(slot, format!("a tool name of {} bytes (limit {})", name.len(), limits.name_bytes));
        }
        let size = serde_json::to_vec(&schema).map_or(usize::MAX, |v| v.len());
        if size > limits.schema_bytes {
            return self.refuse(slot, format!("tool {name:?}: a schema of {size} bytes (limit {})", limits.schema_bytes));
        }
        let deferred = match more.exposure.as_str() {
            "" => more.deferred,
            "direct" | "model-only" => false,
            "deferred" | "codemode" => true,
            other => return ext.log(&format!("tool {name:?} has unknown exposure {other:?}, skipped")),
        };
        if !matches!(more.replay.as_str(), "" | "never" | "safe" | "idempotent" | "reconcile") {
            ext.log(&format!("tool {name:?} has unknown replay {:?}; treated as \"never\"", more.replay));
            more.replay = "never".into();
        }
        let description = cut(description, limits.text_bytes);
        let full = ext.tools.len() >= limits.tools;
        let entry = ToolEntry { name: name.clone(), description, schema, more, active: !deferred };
        match ext.tools.iter_mut().find(|t| t.name == name) {
            Some(t) => *t = entry,
            None if full => {
                return self.refuse(slot, format!("tool {name:?}: over {} tools", limits.tools));
            }
            None => ext.tools.push(entry),
        }
        let msgs = self.registry.claim_tool(&name, slot);
        self.log_claims(msgs);
    }

    fn note_panel(&mut self, slot: usize, id: &str) {
        let panels = &mut self.exts[slot].panels;
        if !panels.iter().any(|p| p == id) {
            panels.push(id.to_string());
        }
    }

    /// Activates the extension's deferred tools named in a result (unknown
    /// names ignored); returns those whose state changed, for the caller to
    /// announce as `tools_changed` after the answer.
    pub(super) fn activate(&mut self, slot: usize, names: &[String]) -> Vec<String> {
        let ext = &mut self.exts[slot];
        let mut changed = Vec::new();
        for n in names {
            if let Some(t) = ext.tools.iter_mut().find(|t| t.name == *n && !t.active) {
                t.active = true;
                changed.push(n.clone());
            }
        }
        if !changed.is_empty() {
            ext.log(&format!("activated tools: {}", changed.join(", ")));
        }
        changed
    }

    /// Writes shadowing news into the log of the extension that lost.
    pub(super) fn log_claims(&self, shadowed: Option<registry::Shadowed>) {
        let Some(s) = shadowed else { return };
        // A command in the loser's own spelling (names match without case).
        let what = match s.what.strip_prefix("command /") {
            Some(n) => {
                format!("command /{}", self.exts[s.slot].command_spelled(n).unwrap_or(n))
            }
            None => s.what.clone(),
        };
        let text = match s.by.and_then(|w| self.exts.get(w)) {
            Some(w) => format!("{what} is shadowed by extension {:?} (earlier in load order)", w.name()),
            None => format!("{what} is shadowed by a host built-in"),
        };
        self.exts[s.slot].log(&text);
    }

    pub(super) fn subscribe(&mut self, slot: usize, events: Vec<String>, intercept: Vec<String>) {
        let limits = self.cfg.limits;
        let mut over = 0;
        let ext = &mut self.exts[slot];
        for e in events {
            if e.is_empty() || e.len() > limits.name_bytes || ext.events.contains(&e) {
                continue;
            }
            if ext.events.len() + ext.intercepts.len() >= limits.subscriptions {
                over += 1;
            } else {
                ext.events.push(e);
            }
        }
        if over > 0 {
            self.refuse(slot, format!("{over} event subscriptions: over {} subscriptions", limits.subscriptions));
        }
        let ext = &mut self.exts[slot];
        for e in intercept {
            if !INTERCEPTABLE.contains(&e.as_str()) {
                ext.log(&format!("ignored intercept {e:?}: only tool_call, turn_start and assistant_message can be intercepted"));
            } else if !ext.intercepts.contains(&e) {
                ext.intercepts.push(e);
            }
        }
    }

    /// Takes the call `id` if it was sent to the extension in `slot`.
    pub(super) fn take_call(&mut self, slot: usize, id: &str, frame: &str) -> Option<Call> {
        let ext = self.exts[slot].id;
        let found = id.parse::<u64>().ok().filter(|n| self.table.sent.get(n).is_some_and(|c| c.ext == ext));
        let Some(n) = found else {
            self.exts[slot].log(&format!("dropped {frame} for unknown request id {id:?}"));
            return None;
        };
        let matches = matches!(
            (self.table.sent.get(&n).map(|c| &c.kind), frame),
            (Some(CallKind::Command { .. }), "command_response")
                | (Some(CallKind::Tool(_)), "tool_result")
                | (Some(CallKind::Intercept { .. }), "event_intercept_response")
        );
        if !matches {
            self.exts[slot].log(&format!("dropped {frame} for request {id}, which is not a {frame} request"));
            return None;
        }
        self.table.sent.remove(&n)
    }

    pub(super) fn on_command_response(&mut self, slot: usize, r: CommandResponse) {
        let Some(call) = self.take_call(slot, &r.id, "command_response") else { return };
        if let CallKind::Command { done, .. } = call.kind {
            let mut action = if r.action.is_empty() { "noop".to_string() } else { r.action };
            let mut error = r.error.filter(|e| !e.is_empty());
            if !COMMAND_ACTIONS.contains(&action.as_str()) {
                self.exts[slot].log(&format!("command_response with unknown action {action:?}"));
                error.get_or_insert_with(|| format!("extension answered with unknown action {action:?}"));
                action = "noop".into();
            }
            if let Some(p) = &r.open_panel {
                let id = cut(p.id.clone(), self.cfg.limits.text_bytes);
                self.note_panel(slot, &id);
            }
            // A `tool_prompt` names its tool, and its `tool_args` are an
            // object (docs/protocol.md §6.3); else nothing is run.
            let mut tool_args = r.tool_args;
            let bad = match (action.as_str(), r.tool_name.as_deref(), &tool_args) {
                ("tool_prompt", None | Some(""), _) => Some("without a tool_name"),
                ("tool_prompt", _, Some(a)) if !a.is_object() && !a.is_null() => Some("with tool_args that are not a JSON object"),
                _ => None,
            };
            if let Some(why) = bad {
                self.exts[slot].log(&format!("command_response tool_prompt {why}"));
                error.get_or_insert_with(|| format!("extension answered tool_prompt {why}"));
                action = "noop".into();
                tool_args = None;
            }
            // A confined extension's `tool_prompt` names a tool it may call
            // (docs/protocol.md §9.1 `call`), else nothing is run.
            let unlisted = r.tool_name.as_deref().filter(|n| action == "tool_prompt" && !self.exts[slot].may_call(n));
            if let Some(name) = unlisted {
                let text = super::call_tool::not_in_call(name);
                self.exts[slot].log(&format!("refused command_response tool_prompt: {text}"));
                error.get_or_insert(text);
                action = "noop".into();
                tool_args = None;
            }
            // A tool named beside another action runs nothing here, but an
            // agent may take it up: not one a confined extension may not call.
            let (tool_name, tool_args) = match r.tool_name {
                Some(n) if !self.exts[slot].may_call(&n) => (None, None),
                n => (n, tool_args),
            };
            let reply = CommandReply {
                extension: self.exts[slot].name().to_string(),
                action,
                prompt: r.prompt,
                insert: r.insert,
                display: r.display,
                open_panel: r.open_panel.map(|p| trim_panel(p, &self.cfg.limits)),
                tool_name,
                tool_args,
                error,
            };
            respond(done, Ok(Response::Command(reply)));
        }
    }

    pub(super) fn on_tool_result(&mut self, slot: usize, r: ToolResult) {
        let Some(call) = self.take_call(slot, &r.id, "tool_result") else { return };
        if let CallKind::Tool(ToolStage { done, .. }) = call.kind {
            let (content, is_error) = blocks::normalize(r.content, r.is_error);
            let activated = self.activate(slot, &r.activate_tools);
            let extension = self.exts[slot].name().to_string();
            let reply = ToolReply {
                extension: extension.clone(),
                content,
                is_error,
                structured_content: r.structured_content,
                activate_tools: activated.clone(),
                blocked: None,
                refused: false,
            };
            respond(done, Ok(Response::Tool(reply)));
            // The answer first, then what it changed.
            if !activated.is_empty() {
                self.emit(HostEvent::ToolsChanged { extension, reason: "activated".into(), tools: activated });
            }
        }
    }

    pub(super) fn on_bad_reply(&mut self, slot: usize, id: &str, error: String) {
        let Some(n) = id.parse::<u64>().ok() else { return };
        let ext = self.exts[slot].id;
        if self.table.sent.get(&n).is_none_or(|c| c.ext != ext) {
            return self.exts[slot].log(&format!("dropped a malformed reply for unknown request id {id:?}"));
        }
        let Some(call) = self.table.sent.remove(&n) else { return };
        let extension = self.exts[slot].name().to_string();
        let msg = format!("malformed reply from extension {extension:?}: {error}");
        match call.kind {
            CallKind::Command { done, .. } => {
                let reply = CommandReply {
                    extension,
                    action: "noop".into(),
                    prompt: None,
                    insert: None,
                    display: None,
                    open_panel: None,
                    tool_name: None,
                    tool_args: None,
                    error: Some(msg),
                };
                respond(done, Ok(Response::Command(reply)));
            }
            CallKind::Tool(ToolStage { done, .. }) => {
                let content = vec![serde_json::json!({"type": "text", "text": msg})];
                respond(done, Ok(Response::Tool(ToolReply { extension, content, is_error: true, ..Default::default() })));
            }
            CallKind::Read { uri, done } => respond(done, Err(HostError::ReadFailed { server: extension, uri, why: msg })),
            CallKind::Intercept { chain } => self.chain_failed(chain, slot, "sent a malformed reply"),
        }
    }
}
