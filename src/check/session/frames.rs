//! What the extension sends, judged line by line: frames the decoder
//! refuses, fields it accepts leniently but that are missing or mistyped,
//! the fields and frames of the current upstream revision (`call_tool` is
//! answered here), and the bookkeeping of registrations and replies.

use super::state::{Reply, Session};
use crate::check::outcome::fmt_ms;
use crate::protocol::ExtFrame;
use serde_json::{json, Value};
use std::time::Instant;
use crate::protocol::{decode_repaired, repair_note, CommandResponse, DecodeError};
use serde_json::Map;

/// `register_tool.exposure` values (§6.2); anything else makes the host refuse the tool.
const EXPOSURES: [&str; 5] = ["", "direct", "deferred", "codemode", "model-only"];
/// `register_tool.replay` values (§6.2); anything else counts as `never`.
const REPLAYS: [&str; 5] = ["", "never", "safe", "idempotent", "reconcile"];
/// Extension frames of the current upstream revision (§6.1, §6.3) that the
/// check reads from the raw line.
const UPSTREAM_FRAMES: [&str; 3] = ["call_tool", "call_tool_cancel", "submit_slash"];
/// What the host answers to a `call_tool` from an extension that did not
/// declare the capability.
const NO_CALL_TOOL: &str = "extension did not opt in to call_tool";
const LEVELS: [&str; 4] = ["info", "success", "warn", "error"];

impl Session<'_> {
    /// Decodes a line, reporting what is wrong with it.
    pub(super) fn classify(&mut self, line: &[u8]) -> Option<ExtFrame> {
        if let Some((ty, obj)) = upstream_frame(line) {
            self.upstream(ty, &obj);
            return None;
        }
        // Invalid text is read as the host reads it (docs/protocol.md §2).
        let (decoded, fixed) = decode_repaired::<ExtFrame>(line);
        let line = match &fixed {
            Some((fixed, n)) => {
                self.f.warning(
                    "invalid_text",
                    format!("{} (as the host reads it)", repair_note(fixed, *n, "frame")),
                    "write valid UTF-8, and cut text on character boundaries: a lone surrogate escape is half of an emoji",
                );
                fixed.as_slice()
            }
            None => line,
        };
        match decoded {
            Ok(frame) => {
                self.check_fields(line, &frame);
                Some(frame)
            }
            Err(DecodeError::BadFields { ty, id: Some(id), msg }) if is_reply(&ty) => {
                let expected = self.asked.remove(&id);
                self.f.error(
                    "bad_reply",
                    format!("malformed {ty} for request {id}: {msg}; the host fails that call"),
                    reply_hint(&ty),
                );
                if expected.is_some() {
                    self.replies.insert(id, Reply::Malformed);
                }
                None
            }
            Err(DecodeError::BadFields { ty, msg, .. }) => {
                self.f.error("bad_frame", format!("malformed {ty} frame: {msg}; the host skips it"), frame_hint(&ty));
                None
            }
            Err(DecodeError::UnknownType(ty)) => {
                self.f.warning(
                    "unknown_frame",
                    format!("a frame of unknown type {ty:?}; the host skips it"),
                    "see docs/protocol.md §2.1 for the frames an extension may send",
                );
                None
            }
            Err(e) => {
                let what = if line.is_empty() { "an empty line".to_string() } else { format!("{e}: {}", crate::child::preview(line)) };
                self.f.warning(
                    "not_a_frame",
                    format!("stdout line is not a frame ({what}); the host skips it"),
                    "stdout is for protocol frames only: print logs to stderr",
                );
                None
            }
        }
    }

    /// Fields the decoder accepts leniently (display only) but that are
    /// missing or of the wrong type.
    pub(super) fn check_fields(&mut self, line: &[u8], frame: &ExtFrame) {
        const STR: u8 = 0;
        const STRS: u8 = 1;
        const BOOL: u8 = 2;
        const OBJ: u8 = 3;
        let rules: &[(&str, u8, bool)] = match frame {
            ExtFrame::Hello { .. } => &[("name", STR, true), ("version", STR, false), ("capabilities", STRS, false)],
            ExtFrame::RegisterCommand { .. } => &[("description", STR, false)],
            ExtFrame::RegisterTool { .. } => &[
                ("description", STR, false),
                ("output_schema", OBJ, false),
                ("deferred", BOOL, false),
                ("interactive", BOOL, false),
                ("exposure", STR, false),
                ("replay", STR, false),
                ("namespace", STR, false),
                ("namespace_description", STR, false),
                ("namespace_instructions", STR, false),
            ],
            ExtFrame::ToolResult(_) => &[("activate_tools", STRS, false)],
            ExtFrame::CommandResponse(_) => &[("tool_name", STR, false), ("tool_args", OBJ, false)],
            ExtFrame::Subscribe { .. } => &[("events", STRS, false), ("intercept", STRS, false)],
            ExtFrame::Notify { .. } => &[("level", STR, true), ("message", STR, true)],
            ExtFrame::PanelRender { .. } => &[("title", STR, false), ("lines", STRS, false), ("footer", STR, false)],
            ExtFrame::EventInterceptResponse(_) => &[("reason", STR, false), ("system_prompt", STR, false)],
            _ => &[],
        };
        if rules.is_empty() {
            return;
        }
        let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line.strip_suffix(b"\r").unwrap_or(line)) else {
            return;
        };
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("?").to_string();
        for (field, kind, required) in rules {
            let ok = match obj.get(*field) {
                None | Some(Value::Null) => {
                    if *required {
                        self.f.warning("missing_field", format!("{ty} has no {field:?}"), format!("add a string {field:?}"));
                    }
                    continue;
                }
                Some(Value::String(_)) => *kind == STR,
                Some(Value::Array(a)) => *kind == STRS && a.iter().all(Value::is_string),
                Some(Value::Bool(_)) => *kind == BOOL,
                Some(Value::Object(_)) => *kind == OBJ,
                Some(_) => false,
            };
            if !ok {
                let want = ["a string", "an array of strings", "true or false", "a JSON object"][usize::from(*kind)];
                self.f.warning("mistyped_field", format!("{ty}.{field} is not {want}; the host ignores it"), format!("send {field:?} as {want}"));
            }
        }
        if let ExtFrame::Notify { level, .. } = frame {
            if !level.is_empty() && !LEVELS.contains(&level.as_str()) {
                self.f.warning("bad_level", format!("notify level {level:?} is not one of {}", LEVELS.join(", ")), "use info, success, warn or error");
            }
        }
        self.check_revision_fields(frame, &obj);
    }

    /// The values of the fields of the current upstream revision (§6.2,
    /// §6.3) that the host acts on.
    pub(super) fn check_revision_fields(&mut self, frame: &ExtFrame, obj: &Map<String, Value>) {
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        match frame {
            ExtFrame::RegisterTool { name, .. } => {
                self.refused.remove(name);
                if let Some(e) = s("exposure").filter(|e| !EXPOSURES.contains(e)) {
                    self.refused.insert(name.clone());
                    self.f.error(
                        "unknown_exposure",
                        format!("tool {name} has unknown exposure {e:?}; the host refuses the tool"),
                        "use direct, deferred, codemode or model-only (or leave exposure out)",
                    );
                }
                if let Some(r) = s("replay").filter(|r| !REPLAYS.contains(r)) {
                    self.f.warning(
                        "unknown_replay",
                        format!("tool {name} has unknown replay {r:?}; the host treats it as never"),
                        "use never, safe, idempotent or reconcile (or leave replay out)",
                    );
                }
                if obj.get("interactive") == Some(&Value::Bool(true)) {
                    self.interactive.insert(name.clone());
                } else {
                    self.interactive.remove(name);
                }
            }
            ExtFrame::CommandResponse(r) if r.action == "tool_prompt" => {
                if s("tool_name").is_none_or(str::is_empty) {
                    self.f.error(
                        "tool_prompt_no_tool",
                        format!("command_response {} has action tool_prompt without a tool_name; the front end has no tool to run", r.id),
                        "send {\"action\":\"tool_prompt\",\"prompt\":...,\"tool_name\":...,\"tool_args\":{...}}",
                    );
                }
                if r.prompt.is_none() {
                    self.f.warning("bad_action", format!("command_response {} has action tool_prompt without a prompt", r.id), "send the prompt to submit after the tool in \"prompt\"");
                }
            }
            ExtFrame::ToolResult(r) => {
                let own: Vec<&str> = self.tools.iter().map(|t| t.0.as_str()).collect();
                let unknown: Vec<&str> = obj
                    .get("activate_tools")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).filter(|n| !own.contains(n)).collect())
                    .unwrap_or_default();
                if !unknown.is_empty() {
                    self.f.warning(
                        "unknown_activation",
                        format!("tool_result {} activates {}, which it did not register; the host ignores them", r.id, unknown.join(", ")),
                        "activate only this extension's own (deferred) tools",
                    );
                }
            }
            _ => {}
        }
    }

    /// A frame of the current upstream revision that the decoder does not
    /// know; `call_tool` is answered as a host would answer it with no
    /// other tool to run.
    pub(super) fn upstream(&mut self, ty: &'static str, obj: &Map<String, Value>) {
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        match ty {
            "submit_slash" => match s("text") {
                Some(t) if t.trim().starts_with('/') => {}
                Some(t) => self.f.warning(
                    "bad_submit_slash",
                    format!("submit_slash text {:?} does not start with '/'; the host refuses it", crate::child::preview(t.as_bytes())),
                    "send the slash command as typed: {\"type\":\"submit_slash\",\"text\":\"/name args\"}",
                ),
                None => self.f.warning("missing_field", "submit_slash has no string \"text\"; the host refuses it", "add a string \"text\" starting with /"),
            },
            "call_tool_cancel" => {
                if s("id").is_none_or(str::is_empty) {
                    self.f.warning("missing_field", "call_tool_cancel has no string \"id\"; the host ignores it", "send the id of the call_tool to cancel");
                }
            }
            _ => self.call_tool(obj),
        }
    }

    pub(super) fn call_tool(&mut self, obj: &Map<String, Value>) {
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        let Some(id) = s("id").filter(|i| !i.is_empty()).map(str::to_string) else {
            self.f.error("bad_call_tool", "call_tool without a string id; the host drops it", "give every call_tool an id of its own (the Go SDK uses sdk-1, sdk-2, ...)");
            return;
        };
        let name = s("name").unwrap_or_default().to_string();
        let in_flight: Vec<&String> = self.asked.iter().filter(|(_, t)| **t == "tool_result").map(|(i, _)| i).collect();
        let refusal = if !self.caps.iter().any(|c| c == "call_tool") {
            self.f.error(
                "call_tool_capability",
                format!("sent call_tool {name:?} without \"call_tool\" in hello's capabilities; the host refuses it"),
                "list \"call_tool\" in hello.capabilities",
            );
            NO_CALL_TOOL.to_string()
        } else if name.is_empty() || !obj.get("args").is_some_and(Value::is_object) {
            let text = "call_tool requires a name and JSON object args";
            self.f.error("bad_call_tool", format!("call_tool {id}: {text}; the host refuses it"), "send \"name\" and \"args\" as a JSON object ({} when none)");
            text.to_string()
        } else {
            match s("parent_id") {
                Some(p) if !in_flight.iter().any(|i| i.as_str() == p) => {
                    let text = "unknown or expired parent tool call";
                    self.f.error("bad_parent_id", format!("call_tool {id}: parent_id {p:?} is no tool_call in flight: {text}"), "use the id of the tool_call being handled as parent_id");
                    text.to_string()
                }
                None if !in_flight.is_empty() => {
                    let text = "parent_id is required while an extension tool is active";
                    self.f.error("bad_parent_id", format!("call_tool {id}: no parent_id: {text}"), "send the id of the tool_call being handled as parent_id");
                    text.to_string()
                }
                _ => {
                    self.f.info("call_tool", format!("called tool {name:?} through the host; the check runs no other tool and answered with an error result"), "");
                    format!("zot ext check runs this extension alone: tool {name:?} was not run")
                }
            }
        };
        let reply = json!({"type": "tool_result", "id": id, "name": name, "content": [{"type": "text", "text": refusal}], "is_error": true});
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        self.send_bytes(&bytes);
    }

    /// Bookkeeping common to every frame.
    pub(super) fn observe(&mut self, frame: Box<ExtFrame>, at: Instant) {
        let frame = *frame;
        let before_ack = self.ack_at.is_none();
        let registration = matches!(frame, ExtFrame::RegisterCommand { .. } | ExtFrame::RegisterTool { .. } | ExtFrame::Subscribe { .. });
        if registration && self.host_ready && self.ready_at.is_none_or(|r| r < at) {
            self.f.warning(
                "late_registration",
                format!("{} arrived after the host considered the extension ready ({} after hello_ack)", frame.kind(), fmt_ms(self.host_ms(at) - self.host_ms(self.ack_at.unwrap_or(at)))),
                "register everything before sending ready",
            );
        }
        if before_ack && self.hello_at.is_some() && !matches!(frame, ExtFrame::Hello { .. }) {
            let t = frame.kind();
            if !self.early.contains(&t) {
                self.early.push(t);
            }
        }
        match frame {
            ExtFrame::Hello { .. } if self.hello_at.is_some() => {
                self.f.warning("second_hello", "sent hello twice; the host ignores the second", "send hello once, as the first frame");
            }
            ExtFrame::RegisterCommand { name, description } => match self.commands.iter_mut().find(|c| c.0 == name) {
                Some(c) => {
                    self.f.warning("duplicate_name", format!("command /{name} registered twice; the last one wins"), "register each command once");
                    c.1 = description;
                }
                None => self.commands.push((name, description)),
            },
            ExtFrame::RegisterTool { name, description, schema, .. } => match self.tools.iter_mut().find(|t| t.0 == name) {
                Some(t) => {
                    self.f.warning("duplicate_name", format!("tool {name} registered twice; the last one wins"), "register each tool once");
                    (t.1, t.2) = (description, schema);
                }
                None => self.tools.push((name, description, schema)),
            },
            ExtFrame::Subscribe { events, intercept } => {
                for e in events {
                    if !self.events.contains(&e) {
                        self.events.push(e);
                    }
                }
                for e in intercept {
                    if !self.intercepts.contains(&e) {
                        self.intercepts.push(e);
                    }
                }
            }
            ExtFrame::Ready => {
                if self.ready_at.is_some() {
                    self.f.info("second_ready", "sent ready more than once", "send ready once, after the initial registrations");
                } else {
                    self.ready_at = Some(at);
                    if self.host_ready {
                        self.f.warning(
                            "late_ready",
                            format!("ready came {} after hello_ack, after the host's 250ms auto-ready", fmt_ms(self.host_ms(at) - self.host_ms(self.ack_at.unwrap_or(at)))),
                            "send ready right after the initial registrations",
                        );
                    }
                }
            }
            ExtFrame::ShutdownAck => {
                if self.shutdown_sent {
                    self.shutdown_acked = true;
                } else {
                    self.f.warning("unasked_shutdown_ack", "sent shutdown_ack without being asked", "send shutdown_ack only in reply to shutdown");
                }
            }
            ExtFrame::CommandResponse(CommandResponse { ref id, .. })
            | ExtFrame::ToolResult(crate::protocol::ToolResult { ref id, .. })
            | ExtFrame::EventInterceptResponse(crate::protocol::InterceptResponse { ref id, .. }) => {
                let id = id.clone();
                let ty = frame.kind();
                match self.asked.remove(&id) {
                    Some(_) => {
                        self.replies.insert(id, Reply::Frame(Box::new(frame), at));
                    }
                    None if self.late.remove(&id) => self.f.warning(
                        "late_reply",
                        format!("{ty} for request {id} came after its deadline; the host had given up on it"),
                        "answer within the host's timeouts (command 30s, tool 60s, intercept 5s)",
                    ),
                    None => self.f.error(
                        "stray_reply",
                        format!("{ty} with id {id:?}, which no request in flight has"),
                        "copy the id of the request into its reply, and answer each request once",
                    ),
                }
            }
            _ => {}
        }
    }
}

/// The `type` and fields of a line holding one of [`UPSTREAM_FRAMES`].
fn upstream_frame(line: &[u8]) -> Option<(&'static str, Map<String, Value>)> {
    let needle = |n: &[u8]| line.windows(n.len()).any(|w| w == n);
    if !needle(b"call_tool") && !needle(b"submit_slash") {
        return None;
    }
    let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line.strip_suffix(b"\r").unwrap_or(line)) else {
        return None;
    };
    let ty = obj.get("type").and_then(Value::as_str)?;
    let ty = UPSTREAM_FRAMES.iter().find(|t| **t == ty)?;
    Some((ty, obj))
}

fn is_reply(ty: &str) -> bool {
    matches!(ty, "command_response" | "tool_result" | "event_intercept_response")
}

fn reply_hint(ty: &str) -> String {
    match ty {
        "command_response" => "{\"type\":\"command_response\",\"id\":<the request's id>,\"action\":\"display\",\"display\":\"...\"}".into(),
        "tool_result" => "{\"type\":\"tool_result\",\"id\":<the request's id>,\"content\":[{\"type\":\"text\",\"text\":\"...\"}],\"is_error\":false}".into(),
        _ => "{\"type\":\"event_intercept_response\",\"id\":<the request's id>,\"block\":false}".into(),
    }
}

fn frame_hint(ty: &str) -> String {
    match ty {
        "register_command" => "{\"type\":\"register_command\",\"name\":\"...\",\"description\":\"...\"}".into(),
        "register_tool" => "{\"type\":\"register_tool\",\"name\":\"...\",\"description\":\"...\",\"schema\":{\"type\":\"object\",\"properties\":{}}}".into(),
        "open_panel" => "{\"type\":\"open_panel\",\"panel\":{\"id\":\"...\",\"title\":\"...\",\"lines\":[...]}}".into(),
        "submit" => "{\"type\":\"submit\",\"text\":\"...\"}".into(),
        _ => "see docs/protocol.md §2.1 for the frame's fields".into(),
    }
}

pub(super) fn block_problem(b: &Value) -> Option<&'static str> {
    let Value::Object(o) = b else { return Some("not an object") };
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    match s("type") {
        Some("text") if o.get("format").is_some_and(|f| !f.is_string()) => Some("format is not a string (\"markdown\")"),
        Some("text") if s("text").is_some() => None,
        Some("text") => Some("a text block without a string \"text\""),
        Some("image") if s("mime_type").is_some() && s("data").is_some() => None,
        Some("image") => Some("an image block needs string \"mime_type\" and \"data\""),
        Some(_) => Some("type is neither \"text\" nor \"image\""),
        None => Some("no string \"type\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks() {
        assert_eq!(block_problem(&json!({"type": "text", "text": "x"})), None);
        assert!(block_problem(&json!({"type": "text"})).is_some());
        assert!(block_problem(&json!({"type": "image", "data": "x"})).is_some());
        assert!(block_problem(&json!("x")).is_some());
    }
}
