//! What the extension is asked: its registrations judged, then every
//! command, tool and intercept called once with a harmless input, each
//! reply judged.

use super::frames::block_problem;
use super::state::{Reply, Session, Step};
use crate::check::outcome::{fmt_ms, ms, Call};
use crate::host::fmt_duration;
use crate::protocol::{ExtFrame, HostFrame};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use crate::check::schema::schema_findings;
use crate::protocol::Payload;
use serde_json::Map;

/// How many calls may time out before the rest are skipped.
const MAX_TIMEOUTS: usize = 3;
/// Commands (and tools) invoked at most.
const MAX_CALLS: usize = 50;

/// Interceptable events and the harmless payload each is checked with.
fn intercept_payload(event: &str) -> Option<Payload> {
    let v = match event {
        "tool_call" => json!({"tool_id": "zot-check-1", "tool_name": "zot_check_noop", "tool_args": {}}),
        "turn_start" => json!({"step": 1}),
        "assistant_message" => json!({"text": "zot ext check: a harmless message"}),
        "before_agent_start" => json!({
            "session_id": "zot-check", "agent_run_id": "zot-check-1", "cwd": "", "provider": "", "model": "",
            "system_prompt": "zot ext check: a harmless system prompt"
        }),
        _ => return None,
    };
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The events of docs/protocol.md §6.4.
const KNOWN_EVENTS: [&str; 14] = [
    "session_start", "session_end", "user_prompt_submit", "turn_start", "turn_end", "tool_call",
    "tool_confirmation_requested", "permission_decision", "tool_result", "assistant_message",
    "pre_compact", "post_compact", "subagent_start", "subagent_stop",
];
const ACTIONS: [&str; 6] = ["prompt", "insert", "display", "open_panel", "tool_prompt", "noop"];
/// A tool answering slower than this should let the host cancel it.
const SLOW_TOOL: Duration = Duration::from_secs(1);

impl Session<'_> {
    pub(super) fn check_registrations(&mut self) {
        let lim = self.limits;
        if self.commands.is_empty() && self.tools.is_empty() && self.events.is_empty() && self.intercepts.is_empty() {
            self.f.warning("nothing_registered", "registered no command, tool or subscription before ready", "send register_command / register_tool / subscribe before ready");
        }
        if self.commands.len() > lim.commands {
            self.f.error("too_many", format!("{} commands; the host takes the first {}", self.commands.len(), lim.commands), "register fewer commands");
        }
        if self.tools.len() > lim.tools {
            self.f.error("too_many", format!("{} tools; the host takes the first {}", self.tools.len(), lim.tools), "register fewer tools");
        }
        let commands = self.commands.clone();
        for (name, description) in &commands {
            if name.is_empty() {
                self.f.error("bad_name", "a command with an empty name; the host refuses it", "give every command a name");
                continue;
            }
            if name.len() > lim.name_bytes {
                self.f.error("bad_name", format!("command name of {} bytes; the host refuses names over {}", name.len(), lim.name_bytes), "use a shorter name");
            }
            if name.starts_with('/') || name.chars().any(char::is_whitespace) {
                self.f.warning("bad_name", format!("command name {name:?} has a '/' prefix or whitespace; users cannot type it"), "register the bare word: \"note\", not \"/note\"");
            }
            if description.trim().is_empty() {
                self.f.info("no_description", format!("command /{name} has no description"), "describe it: /help shows the description");
            }
        }
        let tools = self.tools.clone();
        for (name, description, schema) in &tools {
            if name.is_empty() {
                self.f.error("bad_name", "a tool with an empty name; the host refuses it", "give every tool a name");
                continue;
            }
            if name.len() > lim.name_bytes {
                self.f.error("bad_name", format!("tool name of {} bytes; the host refuses names over {}", name.len(), lim.name_bytes), "use a shorter name");
            } else if name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                self.f.warning("tool_name", format!("tool name {name:?}: model APIs accept only [A-Za-z0-9_-], at most 64 characters"), "rename it, e.g. with underscores");
            }
            if description.trim().is_empty() {
                self.f.warning("no_description", format!("tool {name} has no description; the model decides when to call it from that"), "describe what it does and when to use it");
            }
            for (sev, code, msg, hint) in schema_findings(schema) {
                self.f.add(sev, code, format!("tool {name}: {msg}"), hint);
            }
            let size = serde_json::to_vec(schema).map_or(0, |v| v.len());
            if size > lim.schema_bytes {
                self.f.error("schema_too_big", format!("tool {name}: a schema of {size} bytes; the host refuses over {}", lim.schema_bytes), "simplify the schema");
            }
        }
        for e in self.intercepts.clone() {
            if intercept_payload(&e).is_none() {
                self.f.warning("bad_intercept", format!("subscribes to intercept {e:?}, which cannot be intercepted; the host ignores it"), "intercept only tool_call, turn_start, assistant_message or before_agent_start");
            }
        }
        for e in self.events.clone() {
            if !KNOWN_EVENTS.contains(&e.as_str()) {
                self.f.info("unknown_event", format!("subscribes to event {e:?}, which zot does not send itself (an agent may)"), "see docs/protocol.md §6.4 for the events zot sends");
            }
        }
    }

    pub(super) fn calls(&mut self, calls: &mut Vec<Call>) {
        let mut n = 0u32;
        let mut id = || {
            n += 1;
            format!("zot-check-{n}")
        };
        let commands: Vec<String> = self.commands.iter().map(|c| c.0.clone()).filter(|c| !c.is_empty()).collect();
        let tools: Vec<String> =
            self.tools.iter().filter(|t| t.2.is_object() && !t.0.is_empty() && !self.refused.contains(&t.0)).map(|t| t.0.clone()).collect();
        let (waiting, tools): (Vec<String>, Vec<String>) = tools.into_iter().partition(|t| self.interactive.contains(t));
        for t in waiting {
            self.f.info("not_all_called", format!("tool {t} is interactive (it waits for the user): not called"), "");
        }
        for (kind, list) in [("command", &commands), ("tool", &tools)] {
            if list.len() > MAX_CALLS {
                self.f.info("not_all_called", format!("{} {kind}s registered; only the first {MAX_CALLS} were called", list.len()), "");
            }
        }
        let intercepts: Vec<(String, Payload)> =
            self.intercepts.iter().filter_map(|e| intercept_payload(e).map(|p| (e.clone(), p))).collect();
        let mut plan: Vec<(&'static str, String, HostFrame)> = Vec::new();
        for name in commands.into_iter().take(MAX_CALLS) {
            plan.push(("command", name.clone(), HostFrame::CommandInvoked { id: id(), name, args: String::new() }));
        }
        for name in tools.into_iter().take(MAX_CALLS) {
            plan.push(("tool", name.clone(), HostFrame::ToolCall { id: id(), name, args: Value::Object(Map::new()), operation_key: None, reconcile: None }));
        }
        for (event, payload) in intercepts {
            plan.push(("intercept", event.clone(), HostFrame::EventIntercept { id: id(), event, payload }));
        }
        for (kind, name, frame) in plan {
            if self.gone() || self.timeouts >= MAX_TIMEOUTS {
                if !self.gone() {
                    self.f.info("not_all_called", format!("skipped {kind} {name}: {MAX_TIMEOUTS} calls timed out already"), "");
                }
                continue;
            }
            let call = self.call(kind, &name, &frame);
            calls.push(call);
        }
    }

    pub(super) fn call(&mut self, kind: &'static str, name: &str, frame: &HostFrame) -> Call {
        let (id, expected, shown) = match frame {
            HostFrame::CommandInvoked { id, .. } => (id.clone(), "command_response", format!("/{name}")),
            HostFrame::ToolCall { id, .. } => (id.clone(), "tool_result", format!("tool {name}")),
            HostFrame::EventIntercept { id, .. } => (id.clone(), "event_intercept_response", format!("intercept {name}")),
            _ => (String::new(), "", name.to_string()),
        };
        let mut result = Call { kind, name: name.to_string(), ms: None, ok: false };
        self.asked.insert(id.clone(), expected);
        let sent_at = Instant::now();
        if !self.send(frame) {
            self.asked.remove(&id);
            return result;
        }
        let deadline = sent_at + self.d.call;
        loop {
            if let Some(reply) = self.replies.remove(&id) {
                let Reply::Frame(reply, at) = reply else { return result };
                result.ms = Some(ms(at - sent_at));
                if kind == "tool" && at - sent_at >= SLOW_TOOL {
                    self.slow_without_cancel(name, &format!("took {}", fmt_ms(ms(at - sent_at))));
                }
                result.ok = self.judge(&shown, expected, reply);
                return result;
            }
            match self.next(deadline) {
                Step::Malformed => {}
                Step::Timeout => {
                    self.asked.remove(&id);
                    self.late.insert(id.clone());
                    self.timeouts += 1;
                    self.f.error("no_reply", format!("{shown}: no {expected} within {}", fmt_duration(self.d.call)), format!("answer every {} with {} {expected} carrying its id", frame_type_host(frame), if expected.starts_with('e') { "an" } else { "a" }));
                    if kind == "tool" {
                        if self.caps.iter().any(|c| c == "tool_cancel") {
                            self.send(&HostFrame::ToolCancel { id });
                        } else {
                            self.slow_without_cancel(name, &format!("did not answer within {}", fmt_duration(self.d.call)));
                        }
                    }
                    return result;
                }
                Step::Gone => {
                    self.report_gone(&format!("while answering {shown}"));
                    return result;
                }
                Step::Frame(f, at) => self.observe(f, at),
            }
        }
    }

    pub(super) fn slow_without_cancel(&mut self, tool: &str, what: &str) {
        if self.caps.iter().any(|c| c == "tool_cancel") {
            return;
        }
        self.f.warning(
            "no_tool_cancel",
            format!("tool {tool} {what}, and hello does not declare \"tool_cancel\": the host cannot tell it to stop when it gives up"),
            "list \"tool_cancel\" in hello.capabilities and stop the work on {\"type\":\"tool_cancel\",\"id\":...}",
        );
    }

    /// Whether a reply is the right kind and well formed; reports what is not.
    pub(super) fn judge(&mut self, shown: &str, expected: &str, reply: Box<ExtFrame>) -> bool {
        let reply = *reply;
        let got = reply.kind();
        if got != expected {
            self.f.error("wrong_reply", format!("{shown} was answered with {got}, not {expected}"), format!("answer with a {expected}"));
            return false;
        }
        match reply {
            ExtFrame::CommandResponse(r) => {
                if let Some(e) = r.error.as_deref().filter(|e| !e.is_empty()) {
                    self.f.info("command_error", format!("{shown} with no arguments answered with the error {e:?}"), "fine if it needs arguments; otherwise see its log");
                    return true;
                }
                let field = match r.action.as_str() {
                    "" | "noop" => return true,
                    "prompt" => r.prompt.is_some(),
                    "insert" => r.insert.is_some(),
                    "display" => r.display.is_some(),
                    "open_panel" => r.open_panel.is_some(),
                    // Its fields are checked as it arrives (check_revision_fields).
                    "tool_prompt" => true,
                    other => {
                        self.f.warning("bad_action", format!("{shown} answered with action {other:?}, which is not one of {}", ACTIONS.join(", ")), "use one of the protocol's actions");
                        return true;
                    }
                };
                if !field {
                    let a = r.action.as_str();
                    self.f.warning("bad_action", format!("{shown} answered action {a:?} without a {a:?} field"), format!("send {{\"action\":\"{a}\",\"{a}\":...}}"));
                }
                true
            }
            ExtFrame::ToolResult(r) => {
                if r.content.is_empty() {
                    self.f.warning("bad_content", format!("{shown} returned no content blocks"), "return at least one {\"type\":\"text\",\"text\":...} block");
                }
                for b in &r.content {
                    if let Some(why) = block_problem(b) {
                        self.f.warning("bad_content", format!("{shown}: content block {}: {why}", crate::child::preview(b.to_string().as_bytes())), "blocks are {\"type\":\"text\",\"text\":...} or {\"type\":\"image\",\"mime_type\":...,\"data\":<base64>}");
                    }
                }
                if r.is_error {
                    self.f.info("tool_error", format!("{shown} with {{}} answered is_error: true"), "fine if it needs arguments");
                }
                true
            }
            ExtFrame::EventInterceptResponse(r) => {
                if r.modified_args.as_ref().is_some_and(|v| !v.is_object()) {
                    self.f.warning("bad_intercept_reply", format!("{shown}: modified_args is not an object; the host ignores it"), "send modified_args as a JSON object, or leave it out");
                }
                if r.block {
                    let why = if r.reason.is_empty() { String::new() } else { format!(" ({})", r.reason) };
                    self.f.info("blocked", format!("{shown} blocked a harmless payload{why}"), "fine if intended; a block stops the user's action");
                }
                true
            }
            _ => true,
        }
    }
}

fn frame_type_host(f: &HostFrame) -> &'static str {
    match f {
        HostFrame::CommandInvoked { .. } => "command_invoked",
        HostFrame::ToolCall { .. } => "tool_call",
        HostFrame::EventIntercept { .. } => "event_intercept",
        _ => "request",
    }
}
