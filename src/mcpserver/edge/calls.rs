//! Calls through the edge (docs/protocol.md §8.3, §8.4.3 rule 13): the host's
//! `tool_call`, `tool_cancel` and `command_invoked` frames as `tools/call`,
//! `notifications/cancelled` and `prompts/get`, and their answers as
//! `tool_result` and `command_response`; for a modern server also its
//! `resultType` (`input_required` rounds, an unknown type an error).

use super::state::{request, Edge, Era, Pending};
use super::wire::{error_text, frame, line};
use crate::mcpserver::content;
use crate::child::ChildMsg;
use crate::protocol::{CommandResponse, DecodeError, ExtFrame, HostFrame, ToolResult};
use serde_json::{json, Map, Value};

/// `input_required` rounds a call may take before it fails.
const MAX_ROUNDS: u8 = 4;

/// What a result asks of zot.
enum Outcome {
    /// The result itself.
    Complete(Value),
    /// Ask again with these params (an `input_required` answered).
    Again(Value),
    /// The call fails with this text.
    Error(String),
}

impl Edge {
    /// The bytes to write for a host frame (empty: nothing to write).
    /// Answers the host can have at once (an unknown tool, a missing
    /// argument) are handed to the dispatcher instead.
    pub(super) fn translate(&self, frame: &[u8]) -> Vec<u8> {
        let text = frame.strip_suffix(b"\n").unwrap_or(frame);
        // The calls, read with a struct of their own (the tagged enum's
        // reader buffers every field first); the rest as frames.
        if text.starts_with(br#"{"type":"tool_call","#) {
            if let Ok(c) = serde_json::from_slice::<OutCall>(text) {
                return self.tool_call(c.id, &c.name, c.args);
            }
        }
        let Ok(f) = crate::protocol::decode::<HostFrame>(text) else { return Vec::new() };
        match f {
            HostFrame::ToolCall { id, name, args, .. } => self.tool_call(id, &name, args),
            HostFrame::ToolCancel { id } => {
                let mut st = self.state();
                let Some(n) = st.calls.remove(&id) else { return Vec::new() };
                if let Some(p) = st.pending.get_mut(&n) {
                    // A late answer is dropped quietly.
                    let host_id = format!("cancelled-{id}");
                    *p = match p {
                        Pending::Read { .. } => Pending::Read { host_id, params: Value::Null, rounds: 0 },
                        _ => Pending::Call { host_id, params: None, rounds: 0 },
                    };
                }
                line(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": n, "reason": "cancelled by the host"}}))
            }
            HostFrame::CommandInvoked { id, name, args } => self.prompt_get(id, &name, &args),
            _ => Vec::new(),
        }
    }

    fn tool_call(&self, id: String, name: &str, args: Value) -> Vec<u8> {
        let mut st = self.state();
        let Some(own) = st.tools.iter().find(|(t, _)| t.name == name).map(|(_, o)| o.clone()) else {
            drop(st);
            let text = format!("server {:?} no longer offers tool {name:?}", self.spec.name);
            self.send(frame(ExtFrame::ToolResult(error_result(id, text))));
            return Vec::new();
        };
        if self.era == Era::Modern {
            let params = json!({"name": own, "arguments": args, "_meta": {"progressToken": id}});
            let p = Pending::Call { host_id: id.clone(), params: Some(params.clone()), rounds: 0 };
            let bytes = request(&mut st, p, "tools/call", params);
            let n = st.next;
            st.calls.insert(id, n);
            return bytes;
        }
        st.next += 1;
        let n = st.next;
        st.pending.insert(n, Pending::Call { host_id: id.clone(), params: None, rounds: 0 });
        // Written directly: the one request on every call's path.
        let mut b = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"#).into_bytes();
        let _ = serde_json::to_writer(&mut b, &own);
        b.extend_from_slice(br#","arguments":"#);
        let _ = serde_json::to_writer(&mut b, &args);
        b.extend_from_slice(br#","_meta":{"progressToken":"#);
        let _ = serde_json::to_writer(&mut b, &id);
        b.extend_from_slice(b"}}}\n");
        st.calls.insert(id, n);
        b
    }

    fn prompt_get(&self, id: String, name: &str, args: &str) -> Vec<u8> {
        let mut st = self.state();
        let lower = name.to_lowercase();
        let Some(p) = st.prompts.iter().find(|p| p.offered.to_lowercase() == lower).cloned() else {
            drop(st);
            let error = Some(format!("server {:?} has no prompt {name:?}", self.spec.name));
            self.send(frame(ExtFrame::CommandResponse(CommandResponse { id, action: "noop".into(), error, ..Default::default() })));
            return Vec::new();
        };
        match split_args(&p.args, args) {
            Ok(arguments) => {
                let params = json!({"name": p.own, "arguments": arguments});
                request(&mut st, Pending::Prompt { host_id: id, params: params.clone(), rounds: 0 }, "prompts/get", params)
            }
            Err(error) => {
                drop(st);
                let r = CommandResponse { id, action: "noop".into(), error: Some(error), ..Default::default() };
                self.send(frame(ExtFrame::CommandResponse(r)));
                Vec::new()
            }
        }
    }

    /// A modern result's `resultType` (docs/protocol.md §8.4.3 rule 13).
    fn settle(&self, params: &Value, rounds: u8, r: Value) -> Outcome {
        if self.era == Era::Legacy {
            return Outcome::Complete(r);
        }
        match r.get("resultType") {
            None | Some(Value::Null) => return Outcome::Complete(r),
            Some(Value::String(t)) if t == "complete" => return Outcome::Complete(r),
            Some(Value::String(t)) if t == "input_required" => {}
            Some(Value::String(t)) => return Outcome::Error(format!("unknown resultType {t:?}")),
            Some(other) => return Outcome::Error(format!("unknown resultType {other}")),
        }
        if rounds >= MAX_ROUNDS {
            return Outcome::Error("too many input_required rounds".into());
        }
        let mut responses = Map::new();
        if let Some(Value::Object(asks)) = r.get("inputRequests") {
            for (key, ask) in asks {
                let method = ask.get("method").and_then(Value::as_str).unwrap_or("?");
                if method != "roots/list" || self.roots.is_none() {
                    return Outcome::Error(format!("server asked for input zot cannot give ({method})"));
                }
                responses.insert(key.clone(), self.roots_result());
            }
        }
        // Each round answers only this result's requests and echoes only its
        // state: nothing of an earlier round is sent again.
        let mut again = params.clone();
        if let Some(o) = again.as_object_mut() {
            o.remove("inputResponses");
            o.remove("requestState");
        }
        if !responses.is_empty() {
            again["inputResponses"] = Value::Object(responses);
        }
        if let Some(s) = r.get("requestState") {
            again["requestState"] = s.clone();
        }
        Outcome::Again(again)
    }

    /// [`Edge::settle`] for a request of another room: the result
    /// (`Ok(Ok)`), the params to ask again with (`Ok(Err)`), or why it fails.
    pub(super) fn settled(&self, params: &Value, rounds: u8, r: Value) -> Result<Result<Value, Value>, String> {
        match self.settle(params, rounds, r) {
            Outcome::Complete(r) => Ok(Ok(r)),
            Outcome::Again(again) => Ok(Err(again)),
            Outcome::Error(text) => Err(text),
        }
    }

    pub(super) fn call_done(&self, host_id: String, params: Option<Value>, rounds: u8, result: Result<Value, Value>) {
        let r = match result {
            Err(e) => return self.send(frame(ExtFrame::ToolResult(error_result(host_id, error_text(&e))))),
            Ok(r) => r,
        };
        let r = match self.settle(params.as_ref().unwrap_or(&Value::Null), rounds, r) {
            Outcome::Complete(r) => r,
            Outcome::Error(text) => return self.send(frame(ExtFrame::ToolResult(error_result(host_id, text)))),
            Outcome::Again(again) => {
                let mut st = self.state();
                let p = Pending::Call { host_id: host_id.clone(), params: Some(again.clone()), rounds: rounds + 1 };
                let bytes = request(&mut st, p, "tools/call", again);
                let n = st.next;
                st.calls.insert(host_id, n);
                drop(st);
                return self.write(bytes);
            }
        };
        let frame = match content::tool_result(r) {
            Ok(m) => ExtFrame::ToolResult(ToolResult {
                id: host_id,
                content: m.content,
                is_error: m.is_error,
                structured_content: m.structured,
                activate_tools: Vec::new(),
            }),
            Err(msg) => {
                self.log.line(&format!("malformed tools/call result for request {host_id}: {msg}"));
                let error = DecodeError::BadFields { ty: "tools/call result".into(), id: None, msg };
                return self.send(ChildMsg::BadReply { id: host_id, error });
            }
        };
        self.send(ChildMsg::Frame(frame));
    }

    pub(super) fn prompt_done(&self, host_id: String, params: Value, rounds: u8, result: Result<Value, Value>) {
        let text = match result {
            Err(e) => Err(error_text(&e)),
            Ok(r) => match self.settle(&params, rounds, r) {
                Outcome::Complete(r) => content::prompt_text(&r),
                Outcome::Error(e) => Err(e),
                Outcome::Again(again) => {
                    let mut st = self.state();
                    let p = Pending::Prompt { host_id, params: again.clone(), rounds: rounds + 1 };
                    let bytes = request(&mut st, p, "prompts/get", again);
                    drop(st);
                    return self.write(bytes);
                }
            },
        };
        let resp = match text {
            Ok(text) => CommandResponse { id: host_id, action: "prompt".into(), prompt: Some(text), ..Default::default() },
            Err(e) => CommandResponse { id: host_id, action: "noop".into(), error: Some(e), ..Default::default() },
        };
        self.send(frame(ExtFrame::CommandResponse(resp)));
    }
}

fn error_result(id: String, text: String) -> ToolResult {
    ToolResult { id, content: vec![json!({"type": "text", "text": text})], is_error: true, structured_content: None, activate_tools: Vec::new() }
}

/// A `tool_call` frame of the host.
#[derive(serde::Deserialize)]
struct OutCall {
    id: String,
    name: String,
    #[serde(default)]
    args: Value,
}

/// A command's text as a prompt's arguments: split on spaces in declared
/// order, the rest to the last; a missing required one is an error.
fn split_args(declared: &[(String, bool)], text: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let mut rest = text.trim();
    for (i, (name, required)) in declared.iter().enumerate() {
        let value = if i + 1 == declared.len() {
            std::mem::take(&mut rest).to_string()
        } else {
            let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            rest = tail.trim_start();
            word.to_string()
        };
        if value.is_empty() {
            if *required {
                return Err(format!("missing required argument {name:?}"));
            }
            continue;
        }
        out.insert(name.clone(), Value::String(value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_in_declared_order() {
        let d = vec![("city".to_string(), true), ("note".to_string(), false)];
        let a = split_args(&d, "Oslo  rain all day").unwrap();
        assert_eq!(a["city"], "Oslo");
        assert_eq!(a["note"], "rain all day");
        assert_eq!(split_args(&d, "").unwrap_err(), "missing required argument \"city\"");
        let a = split_args(&d, "Oslo").unwrap();
        assert!(!a.contains_key("note"));
    }
}
