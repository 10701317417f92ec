//! Running intercept chains: the dispatcher's side of a [`Chain`]. It asks
//! the interceptor the chain names (the `event_intercept` frame, its size
//! check, the call in flight), hands the reply to the chain, logs and warns
//! about a `before_agent_start` reply the chain ignored, counts a failed
//! interceptor as allow (or as block when the host is fail-closed), and
//! finishes with what the chain leads to ([`Then`]).

use super::{Dispatcher, Ext, INTERCEPTABLE, Phase, after, respond};
use super::calls::{Call, CallKind};
use super::chain::{self, Chain, Reply, Step, Then};
use super::requests::capped;
use crate::host::{HostError, HostEvent, InterceptOutcome, Responder, Response};
use crate::protocol::{HostFrame, InterceptResponse, Payload};
use serde_json::Value;
use std::sync::Arc;

impl Dispatcher {
    pub(super) fn start_chain(&mut self, event: String, mut payload: Payload, done: Responder) {
        if !INTERCEPTABLE.contains(&event.as_str()) {
            let msg = format!("event {event:?} cannot be intercepted ({})", INTERCEPTABLE.join(", "));
            return respond(done, Err(HostError::BadRequest(msg)));
        }
        if event == "before_agent_start" {
            // Every field of docs/protocol.md §6.4's payload reaches each
            // interceptor: the host's provider and model, the prompt the
            // chain starts from ("" when the agent gave none, as the result
            // reads it) and one run id for the whole chain, each when the
            // agent gave none.
            for (k, v) in [("provider", &self.cfg.provider), ("model", &self.cfg.model)] {
                if !payload.get(k).is_some_and(Value::is_string) {
                    payload.insert(k.into(), Value::String(v.clone()));
                }
            }
            if !payload.get("system_prompt").is_some_and(Value::is_string) {
                payload.insert("system_prompt".into(), Value::String(String::new()));
            }
            if !payload.get("agent_run_id").is_some_and(Value::is_string) {
                let n = self.next();
                let run = self.envelope.run_id(n);
                payload.insert("agent_run_id".into(), Value::String(run));
            }
        }
        self.run_chain(event, payload, Then::Answer(done));
    }

    pub(super) fn run_chain(&mut self, event: String, payload: Payload, then: Then) {
        let exts = &self.exts;
        // A confined extension intercepts only calls of tools it may call
        // (docs/protocol.md §9.1 `call`).
        let tool = (event == "tool_call").then(|| payload.get("tool_name").and_then(Value::as_str).unwrap_or_default().to_string());
        let chain = Chain::new(event, payload, then, exts.len(), |s, e| asks(&exts[s], e) && tool.as_deref().is_none_or(|t| exts[s].may_call(t)));
        let id = self.next();
        self.table.chains.insert(id, chain);
        self.step_chain(id);
    }

    /// Asks the next interceptor in the chain, or finishes it.
    pub(super) fn step_chain(&mut self, id: u64) {
        loop {
            let exts = &self.exts;
            let Some(chain) = self.table.chains.get_mut(id) else { return };
            // The host stops: the interceptors left are stopping, never to
            // be asked; a verdict without them would be nobody's.
            if self.load.phase == (Phase::Stopping { exit: true }) && chain.has_next() {
                return self.end_chain(id, HostError::ShuttingDown);
            }
            let (slot, event, payload) = match chain.step(|s, e| asks(&exts[s], e)) {
                Step::Ask { slot, event, payload } => (slot, event, payload),
                Step::Done(outcome) => return self.finish_chain(id, outcome),
            };
            let call_id = self.next();
            let payload = self.envelope.wrap(&event, payload);
            let frame = HostFrame::EventIntercept { id: call_id.to_string(), event, payload };
            let sent = capped(self.exts[slot].name(), "event_intercept", &frame)
                .and_then(|bytes| self.has_room(slot).and_then(|()| self.exts[slot].send(Arc::new(bytes))));
            match sent {
                Ok(()) => {
                    let deadline = after(self.cfg.timeouts.intercept);
                    let call = Call { ext: self.exts[slot].id, kind: CallKind::Intercept { chain: id }, deadline };
                    self.table.sent.insert(call_id, call);
                    return;
                }
                Err(e) => {
                    if self.interceptor_failed(id, slot, &e.to_string()) {
                        return;
                    }
                }
            }
        }
    }

    /// Records an interceptor's failure. Returns true when the chain is over
    /// (fail-closed blocks).
    pub(super) fn interceptor_failed(&mut self, id: u64, slot: usize, why: &str) -> bool {
        let ext = &self.exts[slot];
        let event = self.table.chains.event(id).unwrap_or_default().to_string();
        ext.log(&format!("intercept of {event} failed: {why}"));
        if chain::failure_blocks(&event, self.cfg.fail_closed) {
            let outcome = chain::failed_closed(ext.name(), why);
            self.finish_chain(id, outcome);
            return true;
        }
        false
    }

    pub(super) fn chain_failed(&mut self, id: u64, slot: usize, why: &str) {
        if !self.interceptor_failed(id, slot, why) {
            self.step_chain(id);
        }
    }

    pub(super) fn on_intercept_response(&mut self, slot: usize, r: InterceptResponse) {
        let Some(call) = self.take_call(slot, &r.id, "event_intercept_response") else { return };
        let CallKind::Intercept { chain: id } = call.kind else { return };
        let ext = &self.exts[slot];
        let Some(chain) = self.table.chains.get_mut(id) else { return };
        let mut r = r;
        confined_reply(ext, chain, &mut r);
        match chain.apply(ext.name(), r) {
            Reply::Next => {}
            Reply::Blocked(outcome) => return self.finish_chain(id, outcome),
            Reply::Ignored(why) => {
                // docs/protocol.md §6.4: logged, and the user is warned in the
                // extension's name.
                ext.log(&format!("ignored its before_agent_start reply: {why}"));
                let message = format!("zot: ignored this extension's before_agent_start reply: {why}");
                let extension = ext.name().to_string();
                self.emit(HostEvent::Notify { extension, level: "warn".into(), message });
            }
        }
        self.step_chain(id);
    }

    /// Ends chain `id` without a verdict: what it leads to fails with `e`.
    pub(super) fn end_chain(&mut self, id: u64, e: HostError) {
        if let Some((then, _)) = self.table.chains.remove(id) {
            then.fail(e);
        }
    }

    pub(super) fn finish_chain(&mut self, id: u64, outcome: InterceptOutcome) {
        match self.table.chains.remove(id) {
            Some((Then::Answer(done), _)) => respond(done, Ok(Response::Intercept(outcome))),
            Some((Then::Tool(m), payload)) => {
                if let Some(args) = payload.get("tool_args") {
                    m.done.chain_args(args);
                }
                self.after_tool_chain(*m, payload, outcome)
            }
            None => {}
        }
    }
}

/// What a confined interceptor may not do is taken out of its reply, with a
/// log line (docs/protocol.md §9.1): `modified_args` of a call of a tool it
/// may not call (blocking stays allowed), and a `system_prompt` without
/// `prompt`.
fn confined_reply(ext: &Ext, chain: &Chain, r: &mut InterceptResponse) {
    if chain.event() == "tool_call" && r.modified_args.is_some() {
        let tool = chain.payload().get("tool_name").and_then(Value::as_str).unwrap_or_default();
        if !ext.may_call(tool) {
            ext.log(&format!("dropped its modified_args for tool {tool:?}: not in its confine.call"));
            r.modified_args = None;
        }
    }
    if chain.event() == "before_agent_start" && r.system_prompt.is_some() && !ext.may_prompt() {
        ext.log("dropped its system_prompt: confine.prompt is not true");
        (r.system_prompt, r.block) = (None, false);
    }
    // Rewriting the model's words is steering it too.
    if r.replace_text.is_some() && !ext.may_prompt() {
        ext.log(&format!("dropped its replace_text of {}: confine.prompt is not true", chain.event()));
        r.replace_text = None;
    }
}

/// Whether `ext` is asked in a chain of `event`: it runs and intercepts it.
fn asks(ext: &Ext, event: &str) -> bool {
    ext.life.running() && ext.intercepts.iter().any(|i| i == event)
}
