//! A tool call as its handler sees it ([`ToolCall`]), which can run
//! another tool through the host with itself as the parent.

use super::handle::Handle;
use super::types::{CallError, CallOptions, CallResult, Cancel};
use serde_json::Value;

/// A tool call as its handler sees it: the arguments, the call's id, the
/// durable host's `operation_key`/`reconcile` when it gave them, and the
/// cancel flag. [`call_tool`](ToolCall::call_tool) runs another tool
/// through the host with this call as its parent.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The host's id of this call (the `parent_id` of nested calls).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub args: Value,
    /// The agent's key for this operation, when it gave one.
    pub operation_key: Option<String>,
    /// The host asks whether an earlier run of this operation happened
    /// (see [`Extension::reconcile`](super::Extension::reconcile)).
    pub reconcile: bool,
    /// Set by the host's `tool_cancel` or at shutdown.
    pub cancel: Cancel,
    pub(crate) handle: Handle,
}

impl ToolCall {
    /// True once the host cancelled this call.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Runs the tool `name` through the host (its intercepts and events,
    /// as a model's call) with this call as parent, and waits for its
    /// result. Cancelling this call cancels the nested one
    /// (`call_tool_cancel`). See [`Handle::call_tool_with`](super::Handle::call_tool_with).
    pub fn call_tool(&self, name: &str, args: Value) -> Result<CallResult, CallError> {
        self.call_tool_with(name, args, CallOptions::default())
    }

    /// [`call_tool`](Self::call_tool) with a deadline or cancel flag of its own.
    pub fn call_tool_with(&self, name: &str, args: Value, opts: CallOptions) -> Result<CallResult, CallError> {
        let opts = CallOptions { parent_id: Some(self.id.clone()), ..opts };
        self.handle.call(name, args, opts, Some(&self.cancel))
    }
}
