//! The bookkeeping of extensions' `call_tool` (docs/protocol.md §6.1): which
//! calls are under way, by caller and the caller's id (one id at a time
//! per caller), with the host's key of the call made for each, and the
//! agent's own tools an extension may call. [`super::call_tool`] routes
//! the calls; this type says what is under way and what a caller's exit
//! or cancel ends.

use super::ExtId;
use crate::host::AgentTool;
use std::collections::HashMap;

/// An extension's `call_tool` under way.
pub(super) struct ExtCall {
    /// The host's key of the call it made for it, to cancel it by.
    pub(super) key: u64,
    /// The tool asked for, named in the answer to a cancel.
    pub(super) name: String,
}

#[derive(Default)]
pub(super) struct ExtCalls {
    under_way: HashMap<(ExtId, String), ExtCall>,
    /// The agent's own tools (`agent_tools`).
    agent_tools: Vec<AgentTool>,
}

impl ExtCalls {
    /// The agent's tools from now on, in place of the ones it gave before.
    pub(super) fn set_agent_tools(&mut self, tools: Vec<AgentTool>) {
        self.agent_tools = tools;
    }

    pub(super) fn is_agent_tool(&self, name: &str) -> bool {
        self.agent_tools.iter().any(|t| t.name == name)
    }

    /// Whether `caller`'s call `id` is under way (a second one with that id
    /// is dropped).
    pub(super) fn under_way(&self, caller: ExtId, id: &str) -> bool {
        self.under_way.contains_key(&(caller, id.to_string()))
    }

    pub(super) fn begin(&mut self, caller: ExtId, id: String, key: u64, name: String) {
        self.under_way.insert((caller, id), ExtCall { key, name });
    }

    /// The call is over (answered or cancelled): `None` when it was over
    /// already, and then nothing is answered.
    pub(super) fn end(&mut self, caller: ExtId, id: &str) -> Option<ExtCall> {
        self.under_way.remove(&(caller, id.to_string()))
    }

    /// The caller is gone: the host's keys of everything it started.
    pub(super) fn end_all_of(&mut self, caller: ExtId) -> Vec<u64> {
        let mut keys = Vec::new();
        self.under_way.retain(|(c, _), call| {
            if *c == caller {
                keys.push(call.key);
            }
            *c != caller
        });
        crate::order::sort(&mut keys);
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(slot: usize) -> ExtId {
        ExtId { slot, gen: 1 }
    }

    #[test]
    fn a_call_ends_once_and_a_callers_exit_ends_only_its_own() {
        let mut c = ExtCalls::default();
        c.begin(ext(0), "1".into(), 10, "t".into());
        c.begin(ext(0), "2".into(), 11, "u".into());
        c.begin(ext(1), "1".into(), 12, "t".into());
        assert!(c.under_way(ext(0), "1") && c.under_way(ext(1), "1") && !c.under_way(ext(1), "2"));
        let done = c.end(ext(0), "1").expect("under way");
        assert_eq!((done.key, done.name.as_str()), (10, "t"));
        assert!(c.end(ext(0), "1").is_none(), "answered once");
        assert_eq!(c.end_all_of(ext(0)), vec![11]);
        assert!(c.end_all_of(ext(0)).is_empty());
        assert!(c.under_way(ext(1), "1"), "another caller's call stays");
    }

    #[test]
    fn the_agents_tools_are_the_last_ones_it_gave() {
        let mut c = ExtCalls::default();
        let tool = |name: &str| AgentTool { name: name.into(), ..Default::default() };
        assert!(!c.is_agent_tool("a"));
        c.set_agent_tools(vec![tool("a"), tool("b")]);
        assert!(c.is_agent_tool("a") && c.is_agent_tool("b"));
        c.set_agent_tools(vec![tool("b")]);
        assert!(!c.is_agent_tool("a") && c.is_agent_tool("b"));
    }
}
