//! Typed lifecycle events (docs/protocol.md §6.4): [`Event`] with the envelope
//! (`session_id`, `cwd`, `sequence`) and the fields of the 14 events, and
//! the [`BeforeAgentStart`] intercept's payload. A field of the wrong type
//! reads as absent; the raw payload stays available.

use serde_json::Value;

use crate::protocol::Payload;

/// The events the host routes, in the order of the protocol's table.
pub const EVENTS: [&str; 14] = [
    "session_start",
    "session_end",
    "user_prompt_submit",
    "turn_start",
    "turn_end",
    "tool_call",
    "tool_confirmation_requested",
    "permission_decision",
    "tool_result",
    "assistant_message",
    "pre_compact",
    "post_compact",
    "subagent_start",
    "subagent_stop",
];

/// One lifecycle event. Which fields are set depends on `name`:
///
/// | event | fields |
/// |---|---|
/// | `session_start` | — |
/// | `session_end` | `reason` |
/// | `user_prompt_submit` | `text`, `queued`, `image_count` |
/// | `turn_start` | `step` |
/// | `turn_end` | `stop`, `error` |
/// | `tool_call` | `tool_id`, `tool_name`, `tool_args`, `origin_extension` |
/// | `tool_confirmation_requested` | `tool_id`, `tool_name`, `tool_preview`, `origin_extension` |
/// | `permission_decision` | `tool_id`, `tool_name`, `decision`, `source`, `stage`, `reason`, `origin_extension` |
/// | `tool_result` | `tool_id`, `tool_name`, `tool_args` or `tool_args_raw`, `status`, `executed`, `result`, `origin_extension` |
/// | `assistant_message` | `text` |
/// | `pre_compact` | `compaction_id`, `message_count`, `token_estimate` |
/// | `post_compact` | the same, plus `status`, `error` |
/// | `subagent_start` | `agent_id`, `agent_run_id`, `agent_name` |
/// | `subagent_stop` | the same, plus `status`, `error` |
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    /// The event's name.
    pub name: String,
    /// The agent's session, or one the host made for its run.
    pub session_id: String,
    /// The project directory.
    pub cwd: String,
    /// The host's counter over every event and intercept it sends.
    pub sequence: u64,
    /// `session_end`: why; `permission_decision`: the reason given.
    pub reason: String,
    /// `user_prompt_submit`: the prompt; `assistant_message`: the message.
    pub text: String,
    /// `user_prompt_submit`: the prompt waits for a turn in progress.
    pub queued: bool,
    /// `user_prompt_submit`: images attached to the prompt.
    pub image_count: Option<u64>,
    /// `turn_start`: the turn's step number.
    pub step: u64,
    /// `turn_end`: why the model stopped.
    pub stop: String,
    /// `turn_end`, `post_compact`, `subagent_stop`: what went wrong.
    pub error: String,
    /// The tool call's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The tool's arguments (`Null` when absent).
    pub tool_args: Value,
    /// `tool_result`: the arguments as text, when they are not JSON.
    pub tool_args_raw: String,
    /// `tool_confirmation_requested`: what the user is shown.
    pub tool_preview: String,
    /// The extension whose `call_tool` this is about, if any.
    pub origin_extension: String,
    /// `permission_decision`: `approved`, `denied` or `cancelled`.
    pub decision: String,
    /// `permission_decision`: `user`, `remembered`, `policy` or `yolo`.
    pub source: String,
    /// `permission_decision`: `pre_execution` or `tool_execution`.
    pub stage: String,
    /// `tool_result`, `post_compact`, `subagent_stop`: how it ended.
    pub status: String,
    /// `tool_result`: the tool ran.
    pub executed: Option<bool>,
    /// `tool_result`: the outcome.
    pub result: Option<EventResult>,
    /// `pre_compact`, `post_compact`: which compaction.
    pub compaction_id: String,
    /// `pre_compact`, `post_compact`: messages compacted.
    pub message_count: Option<u64>,
    /// `pre_compact`, `post_compact`: their estimated tokens.
    pub token_estimate: Option<u64>,
    /// `subagent_start`, `subagent_stop`: the subagent.
    pub agent_id: String,
    /// `subagent_start`, `subagent_stop`: its run.
    pub agent_run_id: String,
    /// The subagent's name (`name` on the wire).
    pub agent_name: String,
    /// Every field as received, `event` excluded.
    pub payload: Payload,
}

/// The outcome carried by a `tool_result` event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventResult {
    /// The content blocks.
    pub content: Vec<Value>,
    /// The tool failed.
    pub is_error: bool,
    /// The host cut the content to its bounds.
    pub truncated: bool,
}

struct Fields<'a>(&'a Payload);

impl Fields<'_> {
    fn str(&self, key: &str) -> String {
        self.0.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
    }
    fn u64(&self, key: &str) -> Option<u64> {
        self.0.get(key).and_then(Value::as_u64)
    }
    fn bool(&self, key: &str) -> Option<bool> {
        self.0.get(key).and_then(Value::as_bool)
    }
}

impl Event {
    /// Reads the event `name` from its payload.
    pub fn from_payload(name: &str, payload: &Payload) -> Event {
        let f = Fields(payload);
        let result = payload.get("result").and_then(Value::as_object).map(|r| EventResult {
            content: r.get("content").and_then(Value::as_array).cloned().unwrap_or_default(),
            is_error: r.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            truncated: r.get("truncated").and_then(Value::as_bool).unwrap_or(false),
        });
        Event {
            name: name.to_string(),
            session_id: f.str("session_id"),
            cwd: f.str("cwd"),
            sequence: f.u64("sequence").unwrap_or(0),
            reason: f.str("reason"),
            text: f.str("text"),
            queued: f.bool("queued").unwrap_or(false),
            image_count: f.u64("image_count"),
            step: f.u64("step").unwrap_or(0),
            stop: f.str("stop"),
            error: f.str("error"),
            tool_id: f.str("tool_id"),
            tool_name: f.str("tool_name"),
            tool_args: payload.get("tool_args").cloned().unwrap_or(Value::Null),
            tool_args_raw: f.str("tool_args_raw"),
            tool_preview: f.str("tool_preview"),
            origin_extension: f.str("origin_extension"),
            decision: f.str("decision"),
            source: f.str("source"),
            stage: f.str("stage"),
            status: f.str("status"),
            executed: f.bool("executed"),
            result,
            compaction_id: f.str("compaction_id"),
            message_count: f.u64("message_count"),
            token_estimate: f.u64("token_estimate"),
            agent_id: f.str("agent_id"),
            agent_run_id: f.str("agent_run_id"),
            agent_name: f.str("name"),
            payload: payload.clone(),
        }
    }
}

/// The payload of the `before_agent_start` intercept: the system prompt
/// about to be used and the run it is for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeforeAgentStart {
    /// The system prompt about to be used.
    pub system_prompt: String,
    /// The agent's session.
    pub session_id: String,
    /// The run about to start.
    pub agent_run_id: String,
    /// The project directory.
    pub cwd: String,
    /// The model provider.
    pub provider: String,
    /// The model.
    pub model: String,
}

impl BeforeAgentStart {
    /// Reads the payload; `None` without a string `system_prompt`.
    pub fn from_payload(payload: &Payload) -> Option<BeforeAgentStart> {
        let f = Fields(payload);
        Some(BeforeAgentStart {
            system_prompt: payload.get("system_prompt")?.as_str()?.to_string(),
            session_id: f.str("session_id"),
            agent_run_id: f.str("agent_run_id"),
            cwd: f.str("cwd"),
            provider: f.str("provider"),
            model: f.str("model"),
        })
    }
}
