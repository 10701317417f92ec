//! The values handlers return and receive: command [`Response`]s, tool
//! [`ToolResult`]s and [`ToolOptions`], intercept [`Verdict`]s, note
//! [`Level`]s, the [`Cancel`] flag and [`PanelKey`] presses, plus the
//! free-function shorthands (`prompt`, `display`, ...) that mirror the Go
//! SDK.

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use serde_json::{json, Value};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::protocol::{self, CommandResponse, InterceptResponse, Panel};

/// What the host sends in `hello_ack`: zot's version, provider, model,
/// the user's project directory (`cwd`), the extension's own directory and
/// the host's capabilities.
pub type HostInfo = crate::protocol::HelloAck;

/// The reply of a command handler (`command_response` without its id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response(pub(crate) CommandResponse);

impl Response {
    /// Submit `text` to the model as the user's prompt.
    pub fn prompt(text: impl Into<String>) -> Response {
        Response(CommandResponse { action: "prompt".into(), prompt: Some(text.into()), ..Default::default() })
    }

    /// Put `text` into the user's input line for editing.
    pub fn insert(text: impl Into<String>) -> Response {
        Response(CommandResponse { action: "insert".into(), insert: Some(text.into()), ..Default::default() })
    }

    /// Show `text` to the user; nothing goes to the model.
    pub fn display(text: impl Into<String>) -> Response {
        Response(CommandResponse { action: "display".into(), display: Some(text.into()), ..Default::default() })
    }

    /// Open an interactive panel; keys arrive at [`Extension::on_panel_key`](super::Extension::on_panel_key).
    pub fn open_panel(panel: Panel) -> Response {
        Response(CommandResponse { action: "open_panel".into(), open_panel: Some(panel), ..Default::default() })
    }

    /// Do nothing visible.
    pub fn noop() -> Response {
        Response(CommandResponse { action: "noop".into(), ..Default::default() })
    }

    /// Report an error to the user.
    pub fn error(msg: impl Into<String>) -> Response {
        Response(CommandResponse { action: "noop".into(), error: Some(msg.into()), ..Default::default() })
    }

    /// Run the tool `tool_name` with `tool_args` (a JSON object) through
    /// the host's `tool_call` chain as the model would, show the call and
    /// its result, then submit `text` as the user's prompt. The result
    /// never comes back to this extension (Go: `ext.ToolPrompt`).
    pub fn tool_prompt(tool_name: impl Into<String>, tool_args: Value, text: impl Into<String>) -> Response {
        let (tool_name, text) = (tool_name.into(), text.into());
        if tool_name.is_empty() || text.is_empty() {
            return Response::error("tool_prompt requires a name and prompt");
        }
        if !tool_args.is_object() {
            return Response::error("tool_prompt args must be a JSON object");
        }
        Response(CommandResponse {
            action: "tool_prompt".into(),
            prompt: Some(text),
            tool_name: Some(tool_name),
            tool_args: Some(tool_args),
            ..Default::default()
        })
    }

    /// The frame this response becomes, answering request `id`.
    pub(crate) fn into_frame(self, id: String) -> CommandResponse {
        CommandResponse { id, ..self.0 }
    }
}

/// Shorthand for [`Response::prompt`] (Go: `ext.Prompt`).
pub fn prompt(text: impl Into<String>) -> Response {
    Response::prompt(text)
}

/// Shorthand for [`Response::insert`] (Go: `ext.Insert`).
pub fn insert(text: impl Into<String>) -> Response {
    Response::insert(text)
}

/// Shorthand for [`Response::display`] (Go: `ext.Display`).
pub fn display(text: impl Into<String>) -> Response {
    Response::display(text)
}

/// Shorthand for [`Response::tool_prompt`] (Go: `ext.ToolPrompt`).
pub fn tool_prompt(tool_name: impl Into<String>, tool_args: Value, text: impl Into<String>) -> Response {
    Response::tool_prompt(tool_name, tool_args, text)
}

/// Shorthand for [`Response::noop`] (Go: `ext.Noop`).
pub fn noop() -> Response {
    Response::noop()
}

/// The result of a tool call: content blocks and an error flag, plus the
/// current revision's structured content and tools to activate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    /// `{"type":"text",...}` and `{"type":"image",...}` blocks, in order.
    pub content: Vec<Value>,
    /// The call failed; the content says why.
    pub is_error: bool,
    /// Any JSON, described by the tool's `output_schema` (passed on as is).
    pub structured_content: Option<Value>,
    /// Names of this extension's deferred tools to offer from now on.
    pub activate_tools: Vec<String>,
}

impl ToolResult {
    /// One text block (Go: `ext.TextResult`).
    pub fn text(text: impl Into<String>) -> ToolResult {
        ToolResult::default().with_text(text)
    }

    /// One base64-encoded image block, e.g. `image("image/png", b64)`.
    pub fn image(mime_type: impl Into<String>, base64: impl Into<String>) -> ToolResult {
        ToolResult::default().with_image(mime_type, base64)
    }

    /// A failed call explained by one text block (Go: `ext.TextErrorResult`).
    pub fn error_text(text: impl Into<String>) -> ToolResult {
        ToolResult { is_error: true, ..ToolResult::text(text) }
    }

    /// Appends a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> ToolResult {
        self.content.push(json!({"type": "text", "text": text.into()}));
        self
    }

    /// One text block marked `format: "markdown"`, a display hint for the
    /// front end (Go: `ext.MarkdownResult`).
    pub fn markdown(text: impl Into<String>) -> ToolResult {
        ToolResult::default().with_markdown(text)
    }

    /// Appends a markdown text block.
    pub fn with_markdown(mut self, text: impl Into<String>) -> ToolResult {
        self.content.push(json!({"type": "text", "text": text.into(), "format": "markdown"}));
        self
    }

    /// Sets the structured content (see [`ToolOptions::output_schema`]).
    pub fn with_structured(mut self, value: Value) -> ToolResult {
        self.structured_content = Some(value);
        self
    }

    /// Asks the host to offer these deferred tools of this extension from
    /// now on.
    pub fn activate<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> ToolResult {
        self.activate_tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Appends an image block.
    pub fn with_image(mut self, mime_type: impl Into<String>, base64: impl Into<String>) -> ToolResult {
        self.content.push(json!({"type": "image", "mime_type": mime_type.into(), "data": base64.into()}));
        self
    }

    pub(crate) fn into_frame(self, id: String) -> protocol::ToolResult {
        protocol::ToolResult {
            id,
            content: self.content,
            is_error: self.is_error,
            structured_content: self.structured_content,
            activate_tools: self.activate_tools,
        }
    }
}

/// An interceptor's decision about an event that is about to happen.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Verdict {
    /// Let it happen unchanged.
    #[default]
    Allow,
    /// Stop it; the reason is shown to the user and the model.
    Block(String),
    /// `tool_call` only: run the tool with these arguments (a JSON object).
    ModifyArgs(Value),
    /// `assistant_message` only: show this text instead.
    ReplaceText(String),
    /// `before_agent_start` only: use this system prompt (`""` empties it).
    SystemPrompt(String),
}

impl Verdict {
    /// Shorthand for `Verdict::Block(reason.into())`.
    pub fn block(reason: impl Into<String>) -> Verdict {
        Verdict::Block(reason.into())
    }

    pub(crate) fn into_frame(self, id: String) -> InterceptResponse {
        let mut r = InterceptResponse { id, ..Default::default() };
        match self {
            Verdict::Allow => {}
            Verdict::Block(reason) => {
                r.block = true;
                r.reason = reason;
            }
            Verdict::ModifyArgs(args) => r.modified_args = Some(args),
            Verdict::ReplaceText(text) => r.replace_text = Some(text),
            Verdict::SystemPrompt(text) => r.system_prompt = Some(Value::String(text)),
        }
        r
    }
}

/// The level of a [`Handle::notify`](super::Handle::notify) note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Neutral information.
    Info,
    /// Something worked.
    Success,
    /// Something needs attention.
    Warn,
    /// Something failed.
    Error,
}

impl Level {
    /// The wire name: `info`, `success`, `warn` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Success => "success",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Set when the host gives up on a tool call (`tool_cancel`) or shuts the
/// extension down, or by anyone holding a clone. Long-running tools poll
/// it or [`sleep`](Cancel::sleep) on it; waits on it wake at once.
#[derive(Clone)]
pub struct Cancel(Arc<CancelInner>);

struct CancelInner {
    flag: AtomicBool,
    /// Dropped on cancel, which wakes every receiver of `woken`.
    wake: Mutex<Option<Sender<()>>>,
    woken: Receiver<()>,
}

impl Cancel {
    /// A flag nobody has set yet.
    pub fn new() -> Cancel {
        let (tx, rx) = bounded(0);
        Cancel(Arc::new(CancelInner { flag: AtomicBool::new(false), wake: Mutex::new(Some(tx)), woken: rx }))
    }

    /// True once the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::Acquire)
    }

    /// Sets the flag and wakes whoever waits on it.
    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::Release);
        let sender = self.0.wake.lock().map(|mut w| w.take()).unwrap_or_else(|p| p.into_inner().take());
        drop(sender);
    }

    /// Sleeps for `d`, waking early when cancelled. Returns `true` when the
    /// full time elapsed, `false` when cancelled.
    pub fn sleep(&self, d: Duration) -> bool {
        if self.is_cancelled() {
            return false;
        }
        matches!(self.0.woken.recv_timeout(d), Err(RecvTimeoutError::Timeout))
    }

    /// Waits for a message on `rx`; `None` once cancelled (or when `rx`
    /// is disconnected). For tools that wait on something else, e.g. an
    /// answer from a panel.
    pub fn recv<T>(&self, rx: &Receiver<T>) -> Option<T> {
        if self.is_cancelled() {
            return None;
        }
        crossbeam_channel::select! {
            recv(rx) -> msg => msg.ok(),
            recv(self.0.woken) -> _ => None,
        }
    }

    /// Ready (disconnected) once cancelled: for `crossbeam_channel::select!`.
    pub(crate) fn woken(&self) -> &Receiver<()> {
        &self.0.woken
    }
}

impl Default for Cancel {
    fn default() -> Cancel {
        Cancel::new()
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cancel").field(&self.is_cancelled()).finish()
    }
}

/// How a tool is offered (`exposure` in `register_tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Offered to the model from the start (the default).
    Direct,
    /// Offered once a tool result activates it.
    Deferred,
    /// For code-mode hosts; counts as deferred elsewhere.
    Codemode,
    /// Offered to the model only; counts as direct.
    ModelOnly,
}

impl Exposure {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Direct => "direct",
            Exposure::Deferred => "deferred",
            Exposure::Codemode => "codemode",
            Exposure::ModelOnly => "model-only",
        }
    }
}

/// Whether a durable host may run a tool call again after a restart
/// (`replay` in `register_tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Never replayed (the default).
    Never,
    /// No side effects: replay freely.
    Safe,
    /// Same `operation_key`, same effect: replay with the key.
    Idempotent,
    /// Ask the tool first ([`Extension::reconcile`](super::Extension::reconcile)).
    Reconcile,
}

impl Replay {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Replay::Never => "never",
            Replay::Safe => "safe",
            Replay::Idempotent => "idempotent",
            Replay::Reconcile => "reconcile",
        }
    }
}

/// The optional fields of a tool registration (Go: `ext.ToolOptions`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOptions {
    /// JSON Schema of the result's `structured_content`.
    pub output_schema: Option<Value>,
    /// Not offered until a tool result activates it.
    pub deferred: bool,
    /// Explicit exposure; wins over `deferred`.
    pub exposure: Option<Exposure>,
    /// Waits for the user: the host sets no reply deadline.
    pub interactive: bool,
    /// Groups tools in listings.
    pub namespace: Option<String>,
    /// What the namespace's tools are for.
    pub namespace_description: Option<String>,
    /// How to use the namespace's tools, for the model.
    pub namespace_instructions: Option<String>,
    /// Whether a durable host may run the call again.
    pub replay: Option<Replay>,
}

/// Options of one [`call_tool`](super::Handle::call_tool_with).
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// The `tool_call` this one is made for (set by [`ToolCall::call_tool`]).
    pub parent_id: Option<String>,
    /// Cancels the call (sends `call_tool_cancel`) when set.
    pub cancel: Option<Cancel>,
    /// Gives up (and sends `call_tool_cancel`) after this long; default 60 s.
    pub timeout: Option<Duration>,
}

/// The host's answer to a `call_tool`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallResult {
    /// The tool that ran.
    pub name: String,
    /// Its content blocks, as the host passed them on.
    pub content: Vec<Value>,
    /// The tool failed, or the host refused the call; the content says why.
    pub is_error: bool,
    /// The host cut the content to its bounds (256 KiB, 128 blocks).
    pub truncated: bool,
    /// The tool's structured content, if any.
    pub structured_content: Option<Value>,
}

impl CallResult {
    /// The text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect();
        texts.join("\n")
    }
}

/// Why a `call_tool` has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The host's `hello_ack` does not list `call_tool`: nothing was sent.
    Unsupported,
    /// The arguments are not a JSON object, or the name is empty.
    BadArgs,
    /// Called from an event or panel handler or the on-hello hook, which
    /// run on the thread that reads the host's frames: the answer could
    /// never be read.
    OnReaderThread,
    /// Cancelled (the caller's flag or the parent call); `call_tool_cancel` was sent.
    Cancelled,
    /// No answer within the timeout; `call_tool_cancel` was sent.
    Timeout,
    /// The extension is stopping or the host went away.
    Disconnected,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallError::Unsupported => "host does not support call_tool",
            CallError::BadArgs => "call_tool requires a name and JSON object args",
            CallError::OnReaderThread => "call_tool cannot wait on the thread that reads the host (event and panel handlers, on_hello)",
            CallError::Cancelled => "call_tool cancelled",
            CallError::Timeout => "call_tool timed out",
            CallError::Disconnected => "host disconnected",
        })
    }
}

impl std::error::Error for CallError {}

/// A reconcile handler's answer: did an earlier run of the operation
/// happen? Sent as `structured_content` `{"state": ...}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciled {
    /// It completed; this is its result.
    Completed(ToolResult),
    /// It never started: the host may run it again.
    NotStarted,
    /// Cannot tell.
    Unknown,
}

impl Reconciled {
    pub(crate) fn into_result(self) -> ToolResult {
        let (state, result) = match self {
            Reconciled::Completed(r) => ("completed", r),
            Reconciled::NotStarted => ("not_started", ToolResult::text("not started")),
            Reconciled::Unknown => ("unknown", ToolResult::text("unknown")),
        };
        result.with_structured(json!({"state": state}))
    }
}

/// A key pressed while one of the extension's panels is focused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PanelKey {
    /// The panel's id, as given when it was opened.
    pub panel_id: String,
    /// `up`, `down`, `left`, `right`, `enter`, `esc`, `tab`, `pageup`,
    /// `pagedown`, `home`, `end`, `backspace`, `delete` or `rune`.
    pub key: String,
    /// The typed text when `key` is `rune`, else empty.
    pub text: String,
}
