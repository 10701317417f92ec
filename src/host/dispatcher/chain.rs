//! Intercept chains: subscribers asked one after another in load order,
//! the first block winning, `modified_args` and `replace_text` carried from
//! one interceptor to the next, and a failed interceptor counting as allow
//! (or as block when the host is fail-closed).

use super::calls::{Call, CallKind};
use super::*;
use super::ModelCall;

/// An intercept chain under way.
pub(super) struct Chain {
    event: String,
    payload: Payload,
    order: Vec<usize>,
    pos: usize,
    args_changed: bool,
    text_changed: bool,
    then: Option<Then>,
}

/// What the end of a chain leads to.
pub(super) enum Then {
    /// Answer the intercept request with the verdict.
    Answer(Responder),
    /// Go on with a model's tool call.
    Tool(Box<ModelCall>),
}

impl Dispatcher {
    pub(super) fn start_chain(&mut self, event: String, payload: Payload, done: Responder) {
        if !INTERCEPTABLE.contains(&event.as_str()) {
            let msg = format!("event {event:?} cannot be intercepted ({})", INTERCEPTABLE.join(", "));
            return respond(done, Err(HostError::BadRequest(msg)));
        }
        self.run_chain(event, payload, Then::Answer(done));
    }

    pub(super) fn run_chain(&mut self, event: String, payload: Payload, then: Then) {
        let order: Vec<usize> = (0..self.exts.len())
            .filter(|&s| self.exts[s].life.running() && self.exts[s].intercepts.contains(&event))
            .collect();
        let id = self.next();
        let chain = Chain { event, payload, order, pos: 0, args_changed: false, text_changed: false, then: Some(then) };
        self.chains.insert(id, chain);
        self.step_chain(id);
    }

    /// Asks the next interceptor in the chain, or finishes it.
    pub(super) fn step_chain(&mut self, id: u64) {
        loop {
            let Some(chain) = self.chains.get_mut(&id) else { return };
            let Some(&slot) = chain.order.get(chain.pos) else {
                let outcome = InterceptOutcome {
                    block: false,
                    reason: None,
                    modified_args: chain.args_changed.then(|| chain.payload.get("tool_args").cloned()).flatten(),
                    replace_text: chain
                        .text_changed
                        .then(|| chain.payload.get("text").and_then(|t| t.as_str().map(str::to_owned)))
                        .flatten(),
                    system_prompt: (chain.event == "before_agent_start").then(|| {
                        chain.payload.get("system_prompt").and_then(Value::as_str).unwrap_or("").to_string()
                    }),
                };
                return self.finish_chain(id, outcome);
            };
            chain.pos += 1;
            let ext = &self.exts[slot];
            if !ext.life.running() || !ext.intercepts.contains(&chain.event) {
                continue;
            }
            let (event, payload) = (chain.event.clone(), chain.payload.clone());
            let call_id = self.next();
            let payload = self.enveloped(&event, payload);
            let frame = HostFrame::EventIntercept { id: call_id.to_string(), event, payload };
            let bytes = encode(&frame);
            let sent = if bytes.len() > MAX_FRAME_OUT {
                Err(HostError::TooLarge {
                    extension: self.exts[slot].name().to_string(),
                    what: format!("an event_intercept frame of {} bytes (limit {MAX_FRAME_OUT} bytes)", bytes.len()),
                })
            } else {
                self.has_room(slot).and_then(|()| self.exts[slot].send(Arc::new(bytes)))
            };
            match sent {
                Ok(()) => {
                    let deadline = after(self.cfg.timeouts.intercept);
                    let call = Call { ext: self.exts[slot].id, kind: CallKind::Intercept { chain: id }, deadline };
                    self.calls.insert(call_id, call);
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
        let event = self.chains.get(&id).map(|c| c.event.clone()).unwrap_or_default();
        ext.log(&format!("intercept of {event} failed: {why}"));
        // A failed interceptor keeps the system prompt, fail-closed or not.
        if self.cfg.fail_closed && event != "before_agent_start" {
            let reason = format!("intercept by extension {:?} failed ({why}); blocking (fail-closed)", ext.name());
            self.finish_chain(id, InterceptOutcome { block: true, reason: Some(reason), ..Default::default() });
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
        let name = self.exts[slot].name().to_string();
        let Some(chain) = self.chains.get_mut(&id) else { return };
        if chain.event == "before_agent_start" {
            return self.system_prompt_reply(id, slot, r);
        }
        if r.block {
            let reason = if r.reason.is_empty() { format!("blocked by extension {name:?}") } else { r.reason };
            return self.finish_chain(id, InterceptOutcome { block: true, reason: Some(reason), ..Default::default() });
        }
        // Arguments can only be rewritten for a tool call, text only replaced
        // for an assistant message; anything else is ignored.
        match (chain.event.as_str(), r.modified_args, r.replace_text) {
            ("tool_call", Some(args @ Value::Object(_)), _) => {
                chain.payload.insert("tool_args".into(), args);
                chain.args_changed = true;
            }
            ("assistant_message", _, Some(text)) => {
                chain.payload.insert("text".into(), Value::String(text));
                chain.text_changed = true;
            }
            _ => {}
        }
        self.step_chain(id);
    }

    /// A `before_agent_start` reply (PROTOCOL.md §6.4): a string sets the
    /// prompt (`""` empties it), none leaves it; anything else is ignored,
    /// logged, and the user is warned in the extension's name.
    fn system_prompt_reply(&mut self, id: u64, slot: usize, r: InterceptResponse) {
        let bad = match &r.system_prompt {
            None if r.block => Some("block without a system_prompt".to_string()),
            None => None,
            Some(Value::String(p)) => {
                let size = serde_json::to_vec(p).map_or(usize::MAX, |v| v.len());
                (size > MAX_SYSTEM_PROMPT).then(|| format!("a system_prompt of {size} bytes (limit {MAX_SYSTEM_PROMPT})"))
            }
            Some(other) => Some(format!("a system_prompt that is not a string ({})", json_kind(other))),
        };
        match bad {
            Some(why) => {
                let ext = &self.exts[slot];
                ext.log(&format!("ignored its before_agent_start reply: {why}"));
                let message = format!("zot: ignored this extension's before_agent_start reply: {why}");
                let extension = ext.name().to_string();
                self.emit(HostEvent::Notify { extension, level: "warn".into(), message });
            }
            None => {
                if let (Some(p), Some(chain)) = (r.system_prompt, self.chains.get_mut(&id)) {
                    chain.payload.insert("system_prompt".into(), p);
                }
            }
        }
        self.step_chain(id);
    }

    pub(super) fn finish_chain(&mut self, id: u64, outcome: InterceptOutcome) {
        let Some(mut c) = self.chains.remove(&id) else { return };
        match c.then.take() {
            Some(Then::Answer(done)) => respond(done, Ok(Response::Intercept(outcome))),
            Some(Then::Tool(m)) => self.after_tool_chain(*m, c.payload, outcome),
            None => {}
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
