//! An intercept chain's state and its rules, without processes
//! (docs/protocol.md §3 rule 7, §6.4): who is asked next (load order, only
//! extensions that still run and intercept the event), what an
//! interceptor's reply does (the first block wins; `modified_args` and
//! `replace_text` carried from one interceptor to the next; the
//! `before_agent_start` `system_prompt` rules), whether a failed
//! interceptor blocks, and the verdict at the end. [`Chains`] is the
//! table of the chains under way; the dispatcher's side (sending, the
//! calls in flight, logging, finishing) is in `intercept.rs`.

use super::{ModelCall, MAX_SYSTEM_PROMPT};
use crate::host::{HostError, InterceptOutcome, Responder};
use crate::protocol::{InterceptResponse, Payload};
use serde_json::Value;
use std::collections::HashMap;

/// The event whose chain sets the system prompt (docs/protocol.md §6.4).
const BEFORE_AGENT_START: &str = "before_agent_start";

/// An intercept chain under way.
pub(super) struct Chain {
    event: String,
    /// The payload as the next interceptor sees it.
    payload: Payload,
    /// The slots asked, in load order: those that ran and intercepted the
    /// event when the chain started.
    order: Vec<usize>,
    /// How far along `order` the chain is.
    pos: usize,
    args_changed: bool,
    text_changed: bool,
    then: Then,
}

/// What the end of a chain leads to.
pub(super) enum Then {
    /// Answer the intercept request with the verdict.
    Answer(Responder),
    /// Go on with a model's tool call.
    Tool(Box<ModelCall>),
}

impl Then {
    /// The chain ends without a verdict: whoever waits for it gets `e`.
    pub(super) fn fail(self, e: HostError) {
        let done = match self {
            Then::Answer(done) => done,
            Then::Tool(m) => m.done,
        };
        super::respond(done, Err(e));
    }
}

/// What an interceptor's reply does to its chain.
#[derive(Debug, PartialEq)]
pub(super) enum Reply {
    /// Taken (or nothing to take); the chain goes on.
    Next,
    /// A `before_agent_start` reply ignored, and why; the chain goes on
    /// with the prompt as it was.
    Ignored(String),
    /// The event is blocked: the chain is over with this verdict.
    Blocked(InterceptOutcome),
}

/// The next thing a chain needs.
#[derive(Debug, PartialEq)]
pub(super) enum Step {
    /// Send `event` with `payload` to the extension in `slot`.
    Ask { slot: usize, event: String, payload: Payload },
    /// Nobody is left to ask: the chain is over with this verdict.
    Done(InterceptOutcome),
}

impl Chain {
    /// A chain of `event` over the `loaded` extensions (slot order is load
    /// order); `asks(slot, event)`: whether that extension runs and
    /// intercepts the event now.
    pub(super) fn new(
        event: String,
        payload: Payload,
        then: Then,
        loaded: usize,
        asks: impl Fn(usize, &str) -> bool,
    ) -> Chain {
        let order = (0..loaded).filter(|&s| asks(s, &event)).collect();
        Chain { event, payload, order, pos: 0, args_changed: false, text_changed: false, then }
    }

    pub(super) fn event(&self) -> &str {
        &self.event
    }

    /// The payload as the next interceptor sees it.
    pub(super) fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The next interceptor to ask: the next in the chain's order that
    /// still runs and intercepts the event (`asks`); None when the chain
    /// has asked everyone.
    fn next(&mut self, asks: impl Fn(usize, &str) -> bool) -> Option<usize> {
        while let Some(&slot) = self.order.get(self.pos) {
            self.pos += 1;
            if asks(slot, &self.event) {
                return Some(slot);
            }
        }
        None
    }

    /// Who to ask next, with what; or the verdict when nobody is left.
    pub(super) fn step(&mut self, asks: impl Fn(usize, &str) -> bool) -> Step {
        match self.next(asks) {
            Some(slot) => Step::Ask { slot, event: self.event.clone(), payload: self.payload.clone() },
            None => Step::Done(self.outcome()),
        }
    }

    /// Takes the reply of the interceptor named `name`. A block ends the
    /// chain (with `name` as the reason when it gives none). Arguments can
    /// only be rewritten for a tool call, and only to an object; text only
    /// replaced for an assistant message; anything else is ignored.
    pub(super) fn apply(&mut self, name: &str, r: InterceptResponse) -> Reply {
        if self.event == BEFORE_AGENT_START {
            return self.system_prompt_reply(r);
        }
        if r.block {
            let reason = if r.reason.is_empty() { format!("blocked by extension {name:?}") } else { r.reason };
            return Reply::Blocked(InterceptOutcome { block: true, reason: Some(reason), ..Default::default() });
        }
        match (self.event.as_str(), r.modified_args, r.replace_text) {
            ("tool_call", Some(args @ Value::Object(_)), _) => {
                self.payload.insert("tool_args".into(), args);
                self.args_changed = true;
            }
            ("assistant_message", _, Some(text)) => {
                self.payload.insert("text".into(), Value::String(text));
                self.text_changed = true;
            }
            _ => {}
        }
        Reply::Next
    }

    /// A `before_agent_start` reply (docs/protocol.md §6.4): a string sets the
    /// prompt (`""` empties it), none leaves it; a block without a prompt,
    /// a prompt over [`MAX_SYSTEM_PROMPT`] encoded, or one that is not a
    /// string is ignored, with the reason. Blocking is not possible.
    fn system_prompt_reply(&mut self, r: InterceptResponse) -> Reply {
        let bad = match &r.system_prompt {
            None if r.block => Some("block without a system_prompt".to_string()),
            None => None,
            Some(Value::String(p)) => {
                let size = serde_json::to_vec(p).map_or(usize::MAX, |v| v.len());
                (size > MAX_SYSTEM_PROMPT).then(|| format!("a system_prompt of {size} bytes (limit {MAX_SYSTEM_PROMPT})"))
            }
            Some(other) => Some(format!("a system_prompt that is not a string ({})", json_kind(other))),
        };
        if let Some(why) = bad {
            return Reply::Ignored(why);
        }
        if let Some(p) = r.system_prompt {
            self.payload.insert("system_prompt".into(), p);
        }
        Reply::Next
    }

    /// The verdict of a chain that asked everyone: allow, with the
    /// arguments or text when an interceptor changed them, and for
    /// `before_agent_start` the prompt (`""` when there is none).
    pub(super) fn outcome(&self) -> InterceptOutcome {
        let text = || self.payload.get("text").and_then(|t| t.as_str().map(str::to_owned));
        InterceptOutcome {
            block: false,
            reason: None,
            modified_args: self.args_changed.then(|| self.payload.get("tool_args").cloned()).flatten(),
            replace_text: self.text_changed.then(text).flatten(),
            system_prompt: (self.event == BEFORE_AGENT_START)
                .then(|| self.payload.get("system_prompt").and_then(Value::as_str).unwrap_or("").to_string()),
        }
    }

    /// Whether an interceptor in the chain's order is still to be asked.
    pub(super) fn has_next(&self) -> bool {
        self.pos < self.order.len()
    }

    /// Where the chain leads, and the payload as it ended.
    pub(super) fn end(self) -> (Then, Payload) {
        (self.then, self.payload)
    }
}

/// Whether a failed interceptor (a timeout, an exit, a malformed reply, a
/// frame it cannot be sent) blocks `event`: only when the host is
/// fail-closed, and never `before_agent_start`, whose chain keeps the
/// current prompt instead.
pub(super) fn failure_blocks(event: &str, fail_closed: bool) -> bool {
    fail_closed && event != BEFORE_AGENT_START
}

/// The verdict of a chain whose interceptor `name` failed (`why`) while
/// the host is fail-closed.
pub(super) fn failed_closed(name: &str, why: &str) -> InterceptOutcome {
    let reason = format!("intercept by extension {name:?} failed ({why}); blocking (fail-closed)");
    InterceptOutcome { block: true, reason: Some(reason), ..Default::default() }
}

/// The chains under way, by id.
#[derive(Default)]
pub(super) struct Chains(HashMap<u64, Chain>);

impl Chains {
    pub(super) fn insert(&mut self, id: u64, chain: Chain) {
        self.0.insert(id, chain);
    }

    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut Chain> {
        self.0.get_mut(&id)
    }

    /// The event of chain `id`, if it is still under way.
    pub(super) fn event(&self, id: u64) -> Option<&str> {
        self.0.get(&id).map(Chain::event)
    }

    /// The ids of the chains whose end `pred` picks.
    pub(super) fn ids_where(&self, pred: impl Fn(&Then) -> bool) -> Vec<u64> {
        let mut ids: Vec<u64> = self.0.iter().filter(|(_, c)| pred(&c.then)).map(|(id, _)| *id).collect();
        crate::order::sort(&mut ids);
        ids
    }

    /// Takes chain `id` off the table: where it leads, and its payload.
    pub(super) fn remove(&mut self, id: u64) -> Option<(Then, Payload)> {
        self.0.remove(&id).map(Chain::end)
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

#[cfg(test)]
mod tests {
    use super::{failed_closed, failure_blocks, Chain, Chains, Reply, Step, Then, MAX_SYSTEM_PROMPT};
    use crate::host::{InterceptOutcome, Responder};
    use crate::protocol::{InterceptResponse, Payload};
    use serde_json::Value;
    use serde_json::json;

    fn payload(v: Value) -> Payload {
        match v {
            Value::Object(m) => m,
            _ => Payload::new(),
        }
    }

    fn chain(event: &str, p: Value, loaded: usize) -> Chain {
        Chain::new(event.into(), payload(p), Then::Answer(Responder::new(|_| ())), loaded, |_, _| true)
    }

    fn reply(v: Value) -> InterceptResponse {
        let mut v = v;
        if let Value::Object(m) = &mut v {
            m.insert("id".into(), json!("1"));
        }
        serde_json::from_value(v).unwrap_or_else(|e| panic!("not a reply: {e}"))
    }

    #[test]
    fn asks_in_load_order_only_those_that_intercept_and_still_run() {
        // Slot 1 does not intercept the event, slot 3 intercepts another.
        let subscribed = |s: usize, e: &str| match s {
            1 => false,
            3 => e != "turn_start",
            _ => true,
        };
        let mut c = Chain::new("turn_start".into(), Payload::new(), Then::Answer(Responder::new(|_| ())), 5, subscribed);
        assert_eq!(c.next(|_, _| true), Some(0));
        // Slot 2 stopped running meanwhile: skipped, never asked again.
        assert_eq!(c.next(|s, _| s != 2), Some(4));
        assert_eq!(c.next(|_, _| true), None);
        assert_eq!(c.next(|_, _| true), None);
    }

    #[test]
    fn an_extension_not_there_at_the_start_is_not_asked() {
        let mut c = Chain::new("tool_call".into(), Payload::new(), Then::Answer(Responder::new(|_| ())), 2, |s, _| s == 0);
        assert_eq!(c.next(|_, _| true), Some(0));
        assert_eq!(c.next(|_, _| true), None);
    }

    #[test]
    fn step_asks_with_the_current_payload_then_gives_the_verdict() {
        let mut c = chain("assistant_message", json!({"text": "a"}), 2);
        let asked = c.step(|_, _| true);
        assert_eq!(asked, Step::Ask { slot: 0, event: "assistant_message".into(), payload: payload(json!({"text": "a"})) });
        assert_eq!(c.apply("x", reply(json!({"replace_text": "b"}))), Reply::Next);
        let asked = c.step(|_, _| true);
        assert_eq!(asked, Step::Ask { slot: 1, event: "assistant_message".into(), payload: payload(json!({"text": "b"})) });
        let done = c.step(|_, _| true);
        assert_eq!(done, Step::Done(InterceptOutcome { replace_text: Some("b".into()), ..Default::default() }));
    }

    #[test]
    fn nobody_to_ask_allows_unchanged() {
        let mut c = chain("tool_call", json!({"tool_args": {"a": 1}}), 0);
        assert_eq!(c.step(|_, _| true), Step::Done(InterceptOutcome::default()));
    }

    #[test]
    fn a_block_ends_with_its_reason_or_the_extensions_name() {
        let mut c = chain("tool_call", json!({}), 1);
        let r = c.apply("guard", reply(json!({"block": true, "reason": "no"})));
        assert_eq!(r, Reply::Blocked(InterceptOutcome { block: true, reason: Some("no".into()), ..Default::default() }));
        let r = c.apply("guard", reply(json!({"block": true})));
        let reason = Some("blocked by extension \"guard\"".to_string());
        assert_eq!(r, Reply::Blocked(InterceptOutcome { block: true, reason, ..Default::default() }));
    }

    #[test]
    fn a_block_drops_what_earlier_interceptors_changed() {
        let mut c = chain("tool_call", json!({"tool_args": {}}), 2);
        assert_eq!(c.apply("a", reply(json!({"modified_args": {"x": 1}}))), Reply::Next);
        let r = c.apply("b", reply(json!({"block": true, "reason": "r"})));
        assert_eq!(r, Reply::Blocked(InterceptOutcome { block: true, reason: Some("r".into()), ..Default::default() }));
    }

    #[test]
    fn modified_args_chain_only_for_tool_call_and_only_an_object() {
        let mut c = chain("tool_call", json!({"tool_name": "t", "tool_args": {"a": 1}}), 3);
        assert_eq!(c.apply("a", reply(json!({"modified_args": [1, 2]}))), Reply::Next);
        assert_eq!(c.apply("a", reply(json!({"modified_args": "x"}))), Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome::default());
        assert_eq!(c.apply("a", reply(json!({"modified_args": {"a": 2}}))), Reply::Next);
        assert_eq!(c.apply("b", reply(json!({"modified_args": {"b": 3}, "replace_text": "ignored"}))), Reply::Next);
        let outcome = c.outcome();
        assert_eq!(outcome, InterceptOutcome { modified_args: Some(json!({"b": 3})), ..Default::default() });
        let (_, p) = c.end();
        assert_eq!(p.get("tool_args"), Some(&json!({"b": 3})));
        assert_eq!(p.get("tool_name"), Some(&json!("t")));
        assert_eq!(p.get("text"), None);

        let mut c = chain("turn_start", json!({"step": 1}), 1);
        let r = c.apply("a", reply(json!({"modified_args": {"a": 2}, "replace_text": "t", "system_prompt": "p"})));
        assert_eq!(r, Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome::default());
        assert_eq!(c.end().1, payload(json!({"step": 1})));
    }

    #[test]
    fn replace_text_only_for_assistant_message() {
        let mut c = chain("assistant_message", json!({"text": "hi"}), 2);
        assert_eq!(c.apply("a", reply(json!({"modified_args": {"a": 1}}))), Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome::default());
        assert_eq!(c.apply("a", reply(json!({"replace_text": ""}))), Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome { replace_text: Some(String::new()), ..Default::default() });

        let mut c = chain("tool_call", json!({"tool_args": {}}), 1);
        assert_eq!(c.apply("a", reply(json!({"replace_text": "x"}))), Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome::default());
    }

    fn prompt(c: &Chain) -> Option<String> {
        c.outcome().system_prompt
    }

    #[test]
    fn system_prompt_a_string_sets_it_empty_empties_it_absent_keeps_it() {
        let mut c = chain("before_agent_start", json!({"system_prompt": "base", "model": "m"}), 3);
        assert_eq!(prompt(&c).as_deref(), Some("base"));
        assert_eq!(c.apply("a", reply(json!({}))), Reply::Next);
        assert_eq!(prompt(&c).as_deref(), Some("base"));
        assert_eq!(c.apply("a", reply(json!({"system_prompt": "base\nmore"}))), Reply::Next);
        assert_eq!(prompt(&c).as_deref(), Some("base\nmore"));
        assert_eq!(c.apply("b", reply(json!({"system_prompt": ""}))), Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome { system_prompt: Some(String::new()), ..Default::default() });
    }

    #[test]
    fn system_prompt_missing_or_not_a_string_at_the_start_ends_as_empty() {
        let c = chain("before_agent_start", json!({}), 0);
        assert_eq!(prompt(&c).as_deref(), Some(""));
        let c = chain("before_agent_start", json!({"system_prompt": 3}), 0);
        assert_eq!(prompt(&c).as_deref(), Some(""));
    }

    #[test]
    fn system_prompt_cannot_block_and_ignores_other_fields() {
        let mut c = chain("before_agent_start", json!({"system_prompt": "p"}), 2);
        let r = c.apply("a", reply(json!({"block": true, "reason": "no"})));
        assert_eq!(r, Reply::Ignored("block without a system_prompt".into()));
        assert_eq!(prompt(&c).as_deref(), Some("p"));
        // A block with a prompt: the prompt counts, the block does not.
        let r = c.apply("a", reply(json!({"block": true, "system_prompt": "q", "replace_text": "t", "modified_args": {}})));
        assert_eq!(r, Reply::Next);
        assert_eq!(c.outcome(), InterceptOutcome { system_prompt: Some("q".into()), ..Default::default() });
    }

    #[test]
    fn system_prompt_not_a_string_is_ignored_with_its_kind() {
        let mut c = chain("before_agent_start", json!({"system_prompt": "p"}), 1);
        // A null is read as no system_prompt: the prompt stays.
        assert_eq!(c.apply("a", reply(json!({"system_prompt": null}))), Reply::Next);
        for (v, kind) in [
            (json!(true), "a boolean"),
            (json!(1.5), "a number"),
            (json!(["x"]), "an array"),
            (json!({"text": "x"}), "an object"),
        ] {
            let r = c.apply("a", reply(json!({"system_prompt": v})));
            assert_eq!(r, Reply::Ignored(format!("a system_prompt that is not a string ({kind})")));
        }
        assert_eq!(prompt(&c).as_deref(), Some("p"));
    }

    #[test]
    fn system_prompt_over_the_cap_encoded_is_ignored() {
        let mut c = chain("before_agent_start", json!({"system_prompt": "p"}), 1);
        // Encoded, a string has its two quotes.
        let fits = "x".repeat(MAX_SYSTEM_PROMPT - 2);
        assert_eq!(c.apply("a", reply(json!({"system_prompt": fits}))), Reply::Next);
        assert_eq!(prompt(&c).map(|p| p.len()), Some(MAX_SYSTEM_PROMPT - 2));
        let over = "x".repeat(MAX_SYSTEM_PROMPT - 1);
        let r = c.apply("a", reply(json!({"system_prompt": over})));
        let why = format!("a system_prompt of {} bytes (limit {MAX_SYSTEM_PROMPT})", MAX_SYSTEM_PROMPT + 1);
        assert_eq!(r, Reply::Ignored(why));
        // Escapes count as encoded: each newline is two bytes.
        let escaped = "\n".repeat(MAX_SYSTEM_PROMPT / 2);
        let r = c.apply("a", reply(json!({"system_prompt": escaped})));
        let why = format!("a system_prompt of {} bytes (limit {MAX_SYSTEM_PROMPT})", MAX_SYSTEM_PROMPT + 2);
        assert_eq!(r, Reply::Ignored(why));
        assert_eq!(prompt(&c).map(|p| p.len()), Some(MAX_SYSTEM_PROMPT - 2));
    }

    #[test]
    fn a_failure_blocks_only_fail_closed_and_never_the_system_prompt() {
        assert!(!failure_blocks("tool_call", false));
        assert!(failure_blocks("tool_call", true));
        assert!(failure_blocks("turn_start", true));
        assert!(!failure_blocks("before_agent_start", true));
        assert!(!failure_blocks("before_agent_start", false));
        let outcome = failed_closed("guard", "timed out after 5s");
        let reason = "intercept by extension \"guard\" failed (timed out after 5s); blocking (fail-closed)";
        assert_eq!(outcome, InterceptOutcome { block: true, reason: Some(reason.into()), ..Default::default() });
    }

    #[test]
    fn the_table_hands_back_where_a_chain_leads() {
        let (tx, rx) = std::sync::mpsc::channel();
        let then = Then::Answer(Responder::new(move |r| {
            let _ = tx.send(r.is_ok());
        }));
        let mut chains = Chains::default();
        chains.insert(7, Chain::new("turn_start".into(), payload(json!({"step": 2})), then, 0, |_, _| true));
        assert_eq!(chains.event(7), Some("turn_start"));
        assert_eq!(chains.event(8), None);
        assert!(chains.get_mut(7).is_some());
        let Some((Then::Answer(done), p)) = chains.remove(7) else { panic!("no chain 7") };
        assert_eq!(p, payload(json!({"step": 2})));
        assert!(chains.remove(7).is_none());
        done.answer(Ok(crate::host::Response::Done));
        assert_eq!(rx.recv().ok(), Some(true));
    }
}
