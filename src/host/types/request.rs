//! What the embedding program asks of the dispatcher: [`Request`], and the
//! tool call and agent tools some requests carry.

#[cfg(doc)]
use super::{HostError, HostEvent, Responder, ToolReply};
use crate::protocol::Payload;
use serde::Serialize;
use serde_json::Value;

/// A request to the dispatcher.
#[derive(Debug, Clone)]
pub enum Request {
    /// Waits for the initial load to end; answers `Load`.
    WaitReady,
    /// Extensions, commands and tools; answers `List`.
    List,
    /// The extension a call for tool (or command) `name` runs on: its
    /// owner, or the one it would wait for while that restarts; answers
    /// `Owner`.
    Owner {
        /// The tool's or command's name.
        name: String,
        /// A tool's name; else a command's.
        tool: bool,
    },
    /// Runs `/name args`; answers `Command`.
    Command {
        /// The command's name, without the `/`.
        name: String,
        /// Text after the command name.
        args: String,
    },
    /// `tool_id` is the caller's own key for the call, for [`Request::CancelTool`].
    Tool {
        /// The tool's name.
        name: String,
        /// The tool's arguments, a JSON object.
        args: Option<Value>,
        /// The caller's own key for the call.
        tool_id: Option<String>,
    },
    /// Gives up on the tool calls in flight that were started with this
    /// `tool_id`: each leaves the calls in flight, its extension gets
    /// `tool_cancel`, and its caller is answered [`HostError::Cancelled`].
    /// Answers `Done`, or `BadRequest` when no such call is in flight.
    CancelTool {
        /// The caller's key given to the calls to give up on.
        tool_id: String,
    },
    /// Gives up on the request submitted with [`Responder::with_key`]`(key)`,
    /// wherever it is: waiting for a load or a restart (it never runs),
    /// in its intercept chain (its tool is never called), sent to an
    /// extension (a tool gets `tool_cancel` if it opted in), or waiting on
    /// the agent (`call_tool_cancel`). That request is answered
    /// [`HostError::Cancelled`] first; this one answers `Cancelled(true)`,
    /// or `Cancelled(false)` when no such request is in flight.
    Cancel {
        /// The key given to the request to give up on.
        key: u64,
    },
    /// The front end's input ended: interactive tool calls in flight (and
    /// any that come later) are cancelled as [`Request::CancelTool`] does,
    /// since nobody is left to answer them (docs/protocol.md §6.2). Answers `Done`.
    EndOfInput,
    /// Stops extension `name` (docs/protocol.md §3 rule 10) and starts it anew,
    /// its restart count and any crash loop reset; requests for its names
    /// wait meanwhile. Answers `Restarted` once it is ready, or
    /// [`HostError::UnknownExtension`].
    Restart {
        /// The extension's name.
        name: String,
    },
    /// A tool call with every option: see [`ToolCall`].
    ToolCall(ToolCall),
    /// The agent's own tools that extensions may reach with `call_tool`
    /// (docs/protocol.md §6.1); replaces the previous set. Answers `Done`.
    AgentTools(Vec<AgentTool>),
    /// The agent's answer to a [`HostEvent::CallTool`]. Answers `Done`, or
    /// [`HostError::UnknownCall`] when that call no longer waits.
    CallToolResult {
        /// The `call_id` of the [`HostEvent::CallTool`] this answers.
        call_id: String,
        /// The result's content blocks.
        content: Vec<Value>,
        /// The agent's tool failed; `content` says why.
        is_error: bool,
        /// The tool's structured result, passed on.
        structured_content: Option<Value>,
    },
    /// Runs the intercept chain of `event`; answers `Intercept`.
    Intercept {
        /// The event's name.
        event: String,
        /// The event's payload.
        payload: Payload,
    },
    /// Sends `event` to its subscribers; answers `Delivered`.
    Event {
        /// The event's name.
        event: String,
        /// The event's payload.
        payload: Payload,
    },
    /// Sends a `panel_key` to the extension that owns the panel; answers `Done`.
    PanelKey {
        /// The extension that owns the panel.
        extension: String,
        /// `id` of the focused panel.
        panel_id: String,
        /// `up`, `down`, `enter`, `esc`, ... or `rune`.
        key: String,
        /// The character(s) typed, for `rune`.
        text: Option<String>,
    },
    /// Tells an extension the user closed its panel; answers `Done`.
    PanelClose {
        /// The extension that owns the panel.
        extension: String,
        /// `id` of the closed panel.
        panel_id: String,
    },
    /// Every hosted MCP server's resources and templates (docs/protocol.md
    /// §8.6); answers `Resources`.
    Resources,
    /// Reads the resource `uri` from the server that lists it, else from
    /// the first server in load order one of whose templates matches it;
    /// answers `Resource`, or [`HostError::UnknownResource`]. It runs under
    /// that server's `requestTimeout` and is cancelled as a call is
    /// ([`Request::Cancel`]).
    ReadResource {
        /// The resource's URI.
        uri: String,
    },
    /// Stops every extension, re-reads the manifests and loads again; answers `Reload`.
    Reload,
    /// Stops every extension; answers `Done`.
    Shutdown,
}

/// A tool of the agent's own, declared with [`Request::AgentTools`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentTool {
    /// The tool's name as extensions call it.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the tool's `args`.
    pub schema: Value,
}

/// A tool call as [`Request::ToolCall`] makes it.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// `{}` when `None`.
    pub args: Option<Value>,
    /// The caller's own key, for [`Request::CancelTool`].
    pub tool_id: Option<String>,
    /// Passed to the extension as given (docs/protocol.md §6.2).
    pub operation_key: Option<Value>,
    /// Passed to the extension as given (docs/protocol.md §6.2).
    pub reconcile: Option<Value>,
    /// Run it as the model's call would be: the `tool_call` intercept chain
    /// first (a block answers with [`ToolReply::blocked`]), then the
    /// `tool_call` event, then the tool with the arguments after the chain.
    pub as_model: bool,
    /// The caller's key for the call's progress: an MCP server's progress
    /// notifications for it come as [`HostEvent::ToolProgress`] with this `id`.
    pub progress_key: Option<crate::protocol::WireId>,
}

impl Request {
    /// Whether the request is about the extensions' names and so waits for
    /// a load (or reload) under way to end, instead of failing as unknown.
    pub fn needs_extensions(&self) -> bool {
        !matches!(
            self,
            Request::WaitReady
                | Request::List
                | Request::CancelTool { .. }
                | Request::Cancel { .. }
                | Request::EndOfInput
                | Request::AgentTools(_)
                | Request::CallToolResult { .. }
                | Request::Reload
                | Request::Shutdown
        )
    }
}
