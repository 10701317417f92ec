//! The envelope of every `event` and `event_intercept` frame (docs/protocol.md
//! §6.4): the agent's `session_id` and `cwd` or the host's, a `sequence`
//! that rises with every frame written (one per subscriber, in load order),
//! and a `tool_result`'s content bounded as a `call_tool` result is. The
//! host's session id is one per host run, and names the chains' run ids.

use super::blocks;
use crate::protocol::Payload;
use serde_json::Value;
use std::path::Path;

pub(super) struct Envelope {
    /// The session id when the agent gives none.
    session_id: String,
    /// The `cwd` when the agent gives none.
    cwd: String,
    /// The last `sequence` given.
    sequence: u64,
}

impl Envelope {
    pub(super) fn new(cwd: &Path) -> Envelope {
        Envelope { session_id: new_session_id(), cwd: cwd.display().to_string(), sequence: 0 }
    }

    /// `payload` of `event` with its envelope and the next `sequence`.
    pub(super) fn wrap(&mut self, event: &str, mut payload: Payload) -> Payload {
        self.sequence += 1;
        if !payload.get("session_id").is_some_and(Value::is_string) {
            payload.insert("session_id".into(), Value::String(self.session_id.clone()));
        }
        if !payload.get("cwd").is_some_and(Value::is_string) {
            payload.insert("cwd".into(), Value::String(self.cwd.clone()));
        }
        payload.insert("sequence".into(), Value::from(self.sequence));
        if event == "tool_result" {
            if let Some(Value::Object(result)) = payload.get_mut("result") {
                if let Some(Value::Array(content)) = result.remove("content") {
                    let (content, truncated) = blocks::bound(content);
                    result.insert("content".into(), Value::Array(content));
                    if truncated {
                        result.insert("truncated".into(), Value::Bool(true));
                    }
                }
            }
        }
        payload
    }

    /// The same payload written once more (to the next subscriber): the
    /// counter is over frames.
    pub(super) fn next_frame(&mut self, payload: &mut Payload) {
        self.sequence += 1;
        payload.insert("sequence".into(), Value::from(self.sequence));
    }

    /// The `agent_run_id` of the `n`th chain, when the agent gives none.
    pub(super) fn run_id(&self, n: u64) -> String {
        format!("{}-run-{n}", self.session_id)
    }
}

/// One id per host run: the process and the time it started.
fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("zot-{:x}-{:x}", std::process::id(), nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(v: Value) -> Payload {
        match v {
            Value::Object(m) => m,
            _ => panic!("an object"),
        }
    }

    #[test]
    fn the_host_fills_what_the_agent_left_out_and_counts_every_frame() {
        let mut env = Envelope::new(Path::new("/p"));
        let own = env.wrap("turn_start", payload(json!({})));
        let sid = own["session_id"].as_str().expect("a session id").to_string();
        assert!(sid.starts_with("zot-"), "{sid}");
        assert_eq!((own["cwd"].clone(), own["sequence"].clone()), (json!("/p"), json!(1)));
        let given = env.wrap("turn_start", payload(json!({"session_id": "s", "cwd": "/a", "sequence": 99})));
        assert_eq!((given["session_id"].clone(), given["cwd"].clone(), given["sequence"].clone()), (json!("s"), json!("/a"), json!(2)));
        // Not strings: the host's own.
        let odd = env.wrap("turn_start", payload(json!({"session_id": 1, "cwd": null})));
        assert_eq!((odd["session_id"].as_str(), odd["cwd"].clone()), (Some(sid.as_str()), json!("/p")));
        let mut again = odd.clone();
        env.next_frame(&mut again);
        assert_eq!(again["sequence"], json!(4));
        assert_eq!(env.run_id(7), format!("{sid}-run-7"));
    }

    #[test]
    fn a_tool_results_content_is_bounded_and_other_events_are_not() {
        let text = "x".repeat(5 * 1024 * 1024);
        let big = json!({"result": {"content": [{"type": "text", "text": text}]}});
        let mut env = Envelope::new(Path::new("/"));
        let cut = env.wrap("tool_result", payload(big.clone()));
        assert_eq!(cut["result"]["truncated"], json!(true));
        assert!(cut["result"]["content"].to_string().len() < text.len());
        let kept = env.wrap("tool_call", payload(big));
        assert_eq!(kept["result"]["content"][0]["text"].as_str().map(str::len), Some(text.len()));
        assert!(kept["result"].get("truncated").is_none());
    }
}
