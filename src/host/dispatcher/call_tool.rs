//! Tools called by extensions (docs/protocol.md §6.1): the capability, the
//! chain of parents with its depth limit and cycle refusal, routing like a
//! model's call (intercept chain, event, tool) with `origin_extension`,
//! the bounded answer, `call_tool_cancel`, and the calls of an extension
//! that exits.

use super::{Call, Dispatcher, ExtId, Inbox, Origin, Timer, after, blocks, respond};
use super::calls::{AgentCall, CallKind, ToolStage, Why};
use super::table::Pick;
use crate::host::{CallKey, HostError, HostEvent, Responder, Response, ToolCall, ToolReply};
use crate::protocol::{HostFrame, encode};
use serde_json::Value;
use std::sync::Arc;

/// The longest chain of tool calls, the first one counted.
pub(super) const MAX_DEPTH: usize = 4;

/// The refusal of a call a confined extension may not make (docs/protocol.md
/// §9.1 `call`), for `call_tool` and a `tool_prompt` answer alike.
pub(super) fn not_in_call(name: &str) -> String {
    format!("tool {name:?} is not in this extension's confine.call")
}

/// How the `tool_id` of a call made for an extension begins: host-made
/// ids are unique for the life of the host, and only ever shown, never
/// looked up (an agent's `tool_id` of the same text is another call).
const EXT_CALL: &str = "ext-call-";

impl Dispatcher {
    pub(super) fn on_call_tool(&mut self, slot: usize, id: String, name: Value, args: Value, parent_id: String) {
        let caller = self.exts[slot].id;
        if id.is_empty() {
            return self.exts[slot].log("dropped call_tool without an id");
        }
        if self.ext_calls.under_way(caller, &id) {
            return self.exts[slot].log(&format!("dropped call_tool {id:?}: that id is already in flight"));
        }
        let name_text = name.as_str().unwrap_or("").to_string();
        let refuse = |d: &mut Self, text: String| {
            d.exts[slot].log(&format!("refused call_tool {id:?} ({name_text}): {text}"));
            d.answer_call_tool(slot, &id, &name_text, vec![serde_json::json!({"type": "text", "text": text})], true, None);
        };
        if !self.exts[slot].can("call_tool") {
            return refuse(self, "extension did not opt in to call_tool".into());
        }
        let (Some(name), true) = (name.as_str().filter(|n| !n.is_empty()).map(str::to_string), args.is_object()) else {
            return refuse(self, "call_tool requires a name and JSON object args".into());
        };
        // docs/protocol.md §9.1 `call`: a confined caller reaches only the
        // tools it declared, before anything of the call runs.
        if !self.exts[slot].may_call(&name) {
            return refuse(self, not_in_call(&name));
        }
        let active = |c: &Call| c.ext == caller && matches!(c.kind, CallKind::Tool(_));
        let parents = if parent_id.is_empty() {
            if !self.table.sent.ids_where(active).is_empty() {
                return refuse(self, "parent_id is required while an extension tool is active".into());
            }
            Vec::new()
        } else {
            let parent = parent_id.parse::<u64>().ok().and_then(|n| self.table.sent.get(&n)).filter(|c| active(c));
            let Some(Call { kind: CallKind::Tool(ToolStage { name: pname, parents, .. }), .. }) = parent else {
                return refuse(self, "unknown or expired parent tool call".into());
            };
            let mut chain = parents.clone();
            chain.push(pname.clone());
            chain
        };
        // The agent's `tool_id` of the call this one is made in: the
        // parent's own when the agent gave it, the one at the root of the
        // chain when the parent was itself made by an extension, none when
        // the agent gave none (the host's own ids are never shown).
        let parent_tool_id = parent_id.parse::<u64>().ok().and_then(|n| match self.table.sent.get(&n).map(|c| &c.kind) {
            Some(CallKind::Tool(t)) => t.root_tool_id.clone(),
            _ => None,
        });
        if parents.contains(&name) {
            return refuse(self, "tool call cycle detected".into());
        }
        if parents.len() >= MAX_DEPTH {
            return refuse(self, "tool call depth limit reached".into());
        }
        // A name an MCP server still starting may bring waits for it (docs/protocol.md §8.2).
        let known = self.registry.tool_owner(&name).is_some() || self.restarting_owner(&name, true).is_some() || self.servers_starting();
        if !known && !self.ext_calls.is_agent_tool(&name) {
            return refuse(self, format!("unknown tool {name:?}"));
        }
        let key = self.next();
        self.ext_calls.begin(caller, id.clone(), key, name.clone());
        let inbox = self.inbox.clone();
        let (their, tool) = (id, name.clone());
        let done = Responder::new(move |result| {
            let _ = inbox.send(Inbox::CallToolDone { caller, id: their, name: tool, result });
        })
        .with_host_key(key);
        let origin = Origin { name: self.exts[slot].name().to_string(), parents, parent_tool_id };
        let tool_id = format!("{EXT_CALL}{key}");
        let call = ToolCall { name, args: Some(args), tool_id: Some(tool_id), as_model: true, ..Default::default() };
        self.start_tool(call, Some(origin), done);
    }

    /// The host's call made for an extension's `call_tool` is over.
    pub(super) fn on_call_tool_done(&mut self, caller: ExtId, id: String, name: String, result: Result<Response, HostError>) {
        if self.ext_calls.end(caller, &id).is_none() {
            return; // cancelled, or the caller is gone
        }
        let Some(slot) = self.slot_of(caller) else { return };
        let text = |t: String| vec![serde_json::json!({"type": "text", "text": t})];
        match result {
            Ok(Response::Tool(r)) => self.answer_call_tool(slot, &id, &name, r.content, r.is_error, r.structured_content),
            Ok(other) => self.answer_call_tool(slot, &id, &name, text(format!("unexpected response {other:?}")), true, None),
            Err(e) => self.answer_call_tool(slot, &id, &name, text(e.to_string()), true, None),
        }
    }

    /// `call_tool_cancel`: the call is cancelled where it runs and the
    /// caller is answered that it was. An unknown id is ignored.
    pub(super) fn on_call_tool_cancel(&mut self, slot: usize, id: &str) {
        let caller = self.exts[slot].id;
        let Some(c) = self.ext_calls.end(caller, id) else { return };
        self.cancel(Pick::Key(CallKey::Host(c.key)), Why::CallerGone);
        let text = vec![serde_json::json!({"type": "text", "text": "tool call cancelled"})];
        self.answer_call_tool(slot, id, &c.name, text, true, None);
    }

    /// The caller is gone: what it started is cancelled, unanswered.
    pub(super) fn cancel_calls_of(&mut self, caller: ExtId) {
        for key in self.ext_calls.end_all_of(caller) {
            self.cancel(Pick::Key(CallKey::Host(key)), Why::CallerGone);
        }
    }

    /// An agent tool: the agent is asked with a `call_tool` notification
    /// and answers with `call_tool_result`, within the tool timeout.
    pub(super) fn call_agent_tool(&mut self, call: ToolCall, args: Value, origin: Origin, done: Responder) {
        let n = self.next();
        let call_id = format!("c{n}");
        let parent_tool_id = origin.parent_tool_id.clone();
        self.emit(HostEvent::CallTool { call_id: call_id.clone(), extension: origin.name, name: call.name.clone(), args, parent_tool_id });
        // The agent was asked: its tool ran, whatever ends the call now.
        done.reached();
        self.at(after(self.cfg.timeouts.tool), Timer::AgentCall(n));
        self.table.agent.insert(call_id, AgentCall { n, name: call.name, done });
    }

    pub(super) fn on_agent_result(&mut self, call_id: &str, content: Vec<Value>, is_error: bool, structured: Option<Value>, done: Responder) {
        let Some(c) = self.table.agent.remove(call_id) else {
            return respond(done, Err(HostError::UnknownCall(call_id.to_string())));
        };
        let (content, is_error) = blocks::normalize(content, is_error);
        let reply = ToolReply { extension: String::new(), content, is_error, structured_content: structured, ..Default::default() };
        respond(c.done, Ok(Response::Tool(reply)));
        respond(done, Ok(Response::Done));
    }

    pub(super) fn on_agent_call_timeout(&mut self, n: u64) {
        self.time_out(Pick::AgentCall(n));
    }

    fn answer_call_tool(&mut self, slot: usize, id: &str, name: &str, content: Vec<Value>, is_error: bool, structured: Option<Value>) {
        let (content, truncated) = blocks::bound(content);
        let frame = HostFrame::ToolResult {
            id: id.to_string(),
            name: name.to_string(),
            content,
            is_error,
            truncated,
            structured_content: structured,
        };
        let ext = &self.exts[slot];
        if let Err(e) = ext.send(Arc::new(encode(&frame))) {
            ext.log(&format!("could not answer call_tool {id:?}: {e}"));
        }
    }
}
