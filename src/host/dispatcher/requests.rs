//! Requests from the embedding program: routing each to the extension that
//! owns its name (waiting for a load, a reload or a restart when it must),
//! commands, tool calls (as the model's: the intercept chain, the event,
//! then the call), events with their envelope, panels, and cancellation.

use super::{Call, CallKind, Dispatcher, MAX_FRAME_OUT, ModelCall, Origin, PANEL_KEYS, Phase, after, chain, respond};
use super::calls::{ToolStage, Why};
use super::ending::Pick;
use crate::host::{CallKey, HostError, InterceptOutcome, Request, Responder, Response, ToolCall, ToolReply};
use crate::protocol::{HostFrame, Payload, encode};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use super::mcp;

impl Dispatcher {
    pub(super) fn on_request(&mut self, req: Request, done: Responder) {
        if self.load.exiting() {
            return respond(done, Err(HostError::ShuttingDown));
        }
        // During a load or a reload the names are about to be there: calls
        // wait for it instead of failing as unknown.
        let loading = self.load.holds(self.cfg.hold_until_loaded);
        if loading && req.needs_extensions() {
            return self.table.waiting.push((req, done));
        }
        if let Request::Event { payload, .. } | Request::Intercept { payload, .. } = &req {
            if let Some(k) = ["type", "id"].into_iter().find(|k| payload.contains_key(*k)) {
                let msg = format!("an event payload may not set `{k}`");
                return respond(done, Err(HostError::BadRequest(msg)));
            }
        }
        match req {
            Request::WaitReady => self.load.wait_ready(done),
            Request::List => respond(done, Ok(Response::List(self.listing()))),
            Request::Owner { name, tool } => {
                let owner = if tool { self.registry.tool_owner(&name) } else { self.registry.command_owner(&name) };
                let slot = owner.or_else(|| self.restarting_owner(&name, tool));
                respond(done, Ok(Response::Owner(slot.map(|s| self.exts[s].name().to_string()))))
            }
            Request::Command { name, args } => self.start_command(name, args, done),
            Request::Tool { name, args, tool_id } => {
                self.start_tool(ToolCall { name, args, tool_id, ..Default::default() }, None, done)
            }
            Request::ToolCall(call) => self.start_tool(call, None, done),
            Request::AgentTools(tools) => {
                self.ext_calls.set_agent_tools(tools);
                respond(done, Ok(Response::Done))
            }
            Request::CallToolResult { call_id, content, is_error, structured_content } => {
                self.on_agent_result(&call_id, content, is_error, structured_content, done)
            }
            Request::CancelTool { tool_id } => self.cancel_tool(&tool_id, done),
            Request::Cancel { key } => {
                let n = self.cancel(Pick::Key(CallKey::Caller(key)), Why::Caller);
                respond(done, Ok(Response::Cancelled(n > 0)))
            }
            Request::EndOfInput => {
                self.table.input_ended = true;
                self.cancel(Pick::Interactive, Why::EndOfInput);
                respond(done, Ok(Response::Done))
            }
            Request::Restart { name } => self.restart_request(name, done),
            Request::Resources => respond(done, Ok(Response::Resources(self.resource_listing()))),
            Request::ReadResource { uri } => self.start_read(uri, done),
            Request::Intercept { event, payload } => self.start_chain(event, payload, done),
            Request::Event { event, payload } => {
                let n = self.deliver_event(&event, payload);
                respond(done, Ok(Response::Delivered(n)))
            }
            Request::PanelKey { extension, panel_id, key, text } => {
                if !PANEL_KEYS.contains(&key.as_str()) {
                    let msg = format!("unknown key {key:?} (expected one of {})", PANEL_KEYS.join(", "));
                    return respond(done, Err(HostError::BadRequest(msg)));
                }
                if let Err(e) = self.open_panel_of(&extension, &panel_id) {
                    return respond(done, Err(e));
                }
                let frame = HostFrame::PanelKey { panel_id, key, text };
                respond(done, self.send_to_named(&extension, "panel_key", &frame).map(|()| Response::Done))
            }
            Request::PanelClose { extension, panel_id } => {
                let slot = match self.open_panel_of(&extension, &panel_id) {
                    Ok(slot) => slot,
                    Err(e) => return respond(done, Err(e)),
                };
                self.exts[slot].panels.retain(|p| *p != panel_id);
                let frame = HostFrame::PanelClose { panel_id };
                respond(done, self.send_to_named(&extension, "panel_close", &frame).map(|()| Response::Done))
            }
            Request::Reload => {
                if self.load.ask_reload(done) {
                    self.begin_stop_all(false);
                }
            }
            // docs/protocol.md §4: requests that came before `shutdown` and
            // wait for the load are dispatched first, when it ends.
            Request::Shutdown if loading && !self.table.waiting.is_empty() => self.table.waiting.push((Request::Shutdown, done)),
            Request::Shutdown => {
                self.load.ask_exit(done);
                self.begin_stop_all(true);
            }
        }
    }

    /// The slot of extension `name` when its panel `panel_id` is open.
    pub(super) fn open_panel_of(&self, name: &str, panel_id: &str) -> Result<usize, HostError> {
        let slot = self.exts.iter().position(|e| e.name() == name).ok_or_else(|| HostError::UnknownExtension(name.to_string()))?;
        if !self.exts[slot].panels.iter().any(|p| p == panel_id) {
            return Err(HostError::BadRequest(format!("extension {name:?} has no open panel {panel_id:?}")));
        }
        Ok(slot)
    }

    pub(super) fn send_to_named(&self, name: &str, kind: &str, frame: &HostFrame) -> Result<(), HostError> {
        let ext = self
            .exts
            .iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| HostError::UnknownExtension(name.to_string()))?;
        ext.send(Arc::new(capped(ext.name(), kind, frame)?))
    }

    /// Whether one more call may be sent to the extension in `slot`.
    pub(super) fn has_room(&self, slot: usize) -> Result<(), HostError> {
        let limit = self.cfg.limits.in_flight;
        if self.table.sent.count(slot) >= limit {
            let extension = self.exts[slot].name().to_string();
            return Err(HostError::TooManyCalls { extension, limit });
        }
        Ok(())
    }

    pub(super) fn start_command(&mut self, name: String, args: String, done: Responder) {
        let Some(slot) = self.registry.command_owner(&name) else {
            if let Some(r) = self.restarting_owner(&name, false) {
                let timeout = self.cfg.timeouts.command;
                return self.park(r, Request::Command { name, args }, done, timeout);
            }
            let timeout = self.cfg.timeouts.command;
            return self.unknown_or_wait(Request::Command { name, args }, None, done, timeout);
        };
        if self.exts[slot].idle.asleep(self.exts[slot].life) {
            return self.wake_for(slot, Request::Command { name, args }, None, done);
        }
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        // The spelling the owner registered, whatever the user typed.
        let name = self.exts[slot].command_spelled(&name).map_or(name, str::to_string);
        let id = self.next();
        let frame = HostFrame::CommandInvoked { id: id.to_string(), name: name.clone(), args: args.trim().to_string() };
        let sent = capped(self.exts[slot].name(), "command_invoked", &frame).and_then(|b| self.exts[slot].send(Arc::new(b)));
        if let Err(e) = sent {
            return respond(done, Err(e));
        }
        let ext = self.exts[slot].id;
        let deadline = after(self.cfg.timeouts.command);
        self.table.sent.insert(id, Call { ext, kind: CallKind::Command { name, done }, deadline });
    }

    /// A tool call: through the intercept chain and the event first when
    /// it is run as the model's; `origin` when an extension made it.
    pub(super) fn start_tool(&mut self, call: ToolCall, origin: Option<Origin>, done: Responder) {
        let args = match call.args.clone() {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return respond(done, Err(HostError::BadRequest("tool args must be a JSON object".into()))),
        };
        let agent_tool = origin.is_some() && self.ext_calls.is_agent_tool(&call.name);
        if self.registry.tool_owner(&call.name).is_none() && !agent_tool {
            let timeout = self.cfg.timeouts.tool;
            if let Some(r) = self.restarting_owner(&call.name, true) {
                return self.park_call(r, Request::ToolCall(call), origin, done, timeout);
            }
            return self.unknown_or_wait(Request::ToolCall(call), origin, done, timeout);
        }
        // docs/protocol.md §6.2: refused before any interceptor or event sees it.
        if let Some(reply) = self.interactive_refusal(&call.name) {
            return respond(done, Ok(Response::Tool(reply)));
        }
        if !call.as_model {
            return self.send_tool(call, args, origin, done);
        }
        let tool_id = call.tool_id.clone().unwrap_or_else(|| format!("call-{}", self.next()));
        let done = self.reporting(&tool_id, &call.name, &args, origin.as_ref(), done);
        let mut payload = Payload::new();
        payload.insert("tool_id".into(), Value::String(tool_id));
        payload.insert("tool_name".into(), Value::String(call.name.clone()));
        payload.insert("tool_args".into(), args);
        if let Some(o) = &origin {
            payload.insert("origin_extension".into(), Value::String(o.name.clone()));
        }
        self.run_chain("tool_call".into(), payload, chain::Then::Tool(Box::new(ModelCall { call, origin, done })));
    }

    /// The chain of a model's call is over: blocked, or the event and then
    /// the tool with the arguments after the chain.
    pub(super) fn after_tool_chain(&mut self, m: ModelCall, mut payload: Payload, outcome: InterceptOutcome) {
        let ModelCall { call, origin, done } = m;
        if outcome.block {
            let reason = outcome.reason.filter(|r| !r.is_empty()).unwrap_or_else(|| "no reason given".into());
            let content = vec![serde_json::json!({"type": "text", "text": format!("tool call blocked: {reason}")})];
            let reply = ToolReply { content, is_error: true, blocked: Some(reason), ..Default::default() };
            return respond(done, Ok(Response::Tool(reply)));
        }
        // Allowed while the host stops: there is nobody left to call.
        if self.load.phase == (Phase::Stopping { exit: true }) {
            return respond(done, Err(HostError::ShuttingDown));
        }
        let args = payload.remove("tool_args").unwrap_or_else(|| Value::Object(Default::default()));
        let mut ev = Payload::new();
        for k in ["tool_id", "tool_name"] {
            if let Some(v) = payload.get(k) {
                ev.insert(k.into(), v.clone());
            }
        }
        ev.insert("tool_args".into(), args.clone());
        if let Some(o) = payload.get("origin_extension") {
            ev.insert("origin_extension".into(), o.clone());
        }
        self.deliver_event("tool_call", ev);
        if self.registry.tool_owner(&call.name).is_none() {
            // Its extension began a restart while the chain ran: the call
            // waits for it, its chain and event done.
            if let Some(r) = self.restarting_owner(&call.name, true) {
                let timeout = self.cfg.timeouts.tool;
                let call = ToolCall { args: Some(args), as_model: false, ..call };
                return self.park_call(r, Request::ToolCall(call), origin, done, timeout);
            }
            if let Some(o) = origin.filter(|_| self.ext_calls.is_agent_tool(&call.name)) {
                return self.call_agent_tool(call, args, o, done);
            }
            return respond(done, Err(HostError::UnknownTool(call.name)));
        }
        self.send_tool(call, args, origin, done);
    }

    pub(super) fn send_tool(&mut self, call: ToolCall, args: Value, origin: Option<Origin>, done: Responder) {
        let ToolCall { name, tool_id, operation_key, reconcile, progress_key, .. } = call;
        let Some(slot) = self.registry.tool_owner(&name) else {
            return respond(done, Err(HostError::UnknownTool(name)));
        };
        if let Some(reply) = self.interactive_refusal(&name) {
            return respond(done, Ok(Response::Tool(reply)));
        }
        if self.exts[slot].idle.asleep(self.exts[slot].life) {
            let call = ToolCall { name, args: Some(args), tool_id, operation_key, reconcile, progress_key, as_model: false };
            return self.wake_for(slot, Request::ToolCall(call), origin, done);
        }
        // Reached through `call_tool`, an interactive tool keeps the tool
        // timeout (docs/protocol.md §6.2); else it waits for the user, and only
        // a cancel ends it.
        let interactive = origin.is_none() && self.exts[slot].tool(&name).is_some_and(|t| t.more.interactive);
        if interactive && self.table.input_ended {
            let extension = self.exts[slot].name().to_string();
            return respond(done, Err(HostError::Cancelled { extension, what: format!("tool {name}") }));
        }
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        let id = self.next();
        let frame = HostFrame::ToolCall { id: id.to_string(), name: name.clone(), args, operation_key, reconcile };
        let sent = capped(self.exts[slot].name(), "tool_call", &frame).and_then(|b| self.exts[slot].send(Arc::new(b)));
        if let Err(e) = sent {
            return respond(done, Err(e));
        }
        done.reached();
        let ext = self.exts[slot].id;
        // An interactive tool waits for the user: only cancellation ends it.
        let deadline = after(if interactive { Duration::MAX } else { mcp::tool_timeout(&self.exts[slot], self.cfg.timeouts.tool) });
        let (agent_tool_id, root_tool_id, parents) = match origin {
            Some(o) => (None, o.parent_tool_id, o.parents),
            None => (tool_id.clone(), tool_id, Vec::new()),
        };
        let stage = ToolStage { name, done, agent_tool_id, root_tool_id, parents, interactive, progress_key };
        self.table.sent.insert(id, Call { ext, kind: CallKind::Tool(stage), deadline });
    }

    /// The refusal of a call to interactive tool `name` by a host without
    /// interactive support (docs/protocol.md §6.2), if it is one.
    fn interactive_refusal(&self, name: &str) -> Option<ToolReply> {
        let slot = self.registry.tool_owner(name)?;
        let ext = &self.exts[slot];
        if self.cfg.interactive_tools || !ext.tool(name).is_some_and(|t| t.more.interactive) {
            return None;
        }
        let text = "interactive extension tools require an interactive host";
        let content = vec![serde_json::json!({"type": "text", "text": text})];
        Some(ToolReply { extension: ext.name().to_string(), content, is_error: true, refused: true, ..Default::default() })
    }

    /// Sends `event` to its subscribers; how many it reached. Each frame
    /// gets its own `sequence` (docs/protocol.md §6.4: the counter is over
    /// frames), in load order.
    pub(super) fn deliver_event(&mut self, event: &str, payload: Payload) -> usize {
        // A confined extension hears of calls of the tools it may call
        // only (docs/protocol.md §9.1 `call`): every event about one tool
        // (its confirmation and the permission decision too, which carry
        // a preview of the call).
        let tool = payload.get("tool_name").and_then(Value::as_str).or_else(|| {
            matches!(event, "tool_call" | "tool_result" | "tool_confirmation_requested" | "permission_decision").then_some("")
        });
        let hears = |s: usize| tool.is_none_or(|t| self.exts[s].may_call(t));
        let subscribers: Vec<usize> = (0..self.exts.len())
            .filter(|&s| self.exts[s].life.running() && self.exts[s].events.iter().any(|x| x == event) && hears(s))
            .collect();
        if subscribers.is_empty() {
            return 0;
        }
        let mut payload = self.envelope.wrap(event, payload);
        let mut n = 0;
        for (i, &s) in subscribers.iter().enumerate() {
            if i > 0 {
                self.envelope.next_frame(&mut payload);
            }
            let bytes = encode(&HostFrame::Event { event: event.to_string(), payload: payload.clone() });
            if bytes.len() > MAX_FRAME_OUT {
                self.exts[s].log(&format!("event {event} not delivered: {} bytes (limit {MAX_FRAME_OUT} bytes)", bytes.len()));
                continue;
            }
            match self.exts[s].send(Arc::new(bytes)) {
                Ok(()) => n += 1,
                Err(e) => self.exts[s].log(&format!("event {event} not delivered: {e}")),
            }
        }
        n
    }

    /// [`Request::CancelTool`]: every tool call the caller started with
    /// `tool_id` is given up on, wherever it is.
    pub(super) fn cancel_tool(&mut self, tool_id: &str, done: Responder) {
        if self.cancel(Pick::ToolId(tool_id), Why::Caller) == 0 {
            return respond(done, Err(HostError::BadRequest(format!("no tool call {tool_id:?} in flight"))));
        }
        respond(done, Ok(Response::Done))
    }
}

/// `frame` encoded, or `too_large` when it is over the 4 MiB an extension
/// reads (docs/protocol.md §3 rule 9): a call that large fails at once.
pub(super) fn capped(extension: &str, kind: &str, frame: &HostFrame) -> Result<Vec<u8>, HostError> {
    let bytes = encode(frame);
    if bytes.len() > MAX_FRAME_OUT {
        let a = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        let what = format!("{a} {kind} frame of {} bytes is over the limit of {MAX_FRAME_OUT} bytes", bytes.len());
        return Err(HostError::TooLarge { extension: extension.to_string(), what });
    }
    Ok(bytes)
}
