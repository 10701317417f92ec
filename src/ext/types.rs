//! The values handlers return and receive: command [`Response`]s, tool
//! [`ToolResult`]s, intercept [`Verdict`]s, note [`Level`]s, the tool
//! [`Cancel`] flag and [`PanelKey`] presses, plus the free-function
//! shorthands (`prompt`, `display`, ...) that mirror the Go SDK.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::protocol::{CommandResponse, InterceptResponse, Panel};

/// What the host receives in `hello_ack`: zot's version, provider, model,
/// the user's project directory (`cwd`) and the extension's own directory.
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

/// Shorthand for [`Response::noop`] (Go: `ext.Noop`).
pub fn noop() -> Response {
    Response::noop()
}

/// The result of a tool call: content blocks and an error flag.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    /// `{"type":"text",...}` and `{"type":"image",...}` blocks, in order.
    pub content: Vec<Value>,
    /// The call failed; the content says why.
    pub is_error: bool,
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

    /// Appends an image block.
    pub fn with_image(mut self, mime_type: impl Into<String>, base64: impl Into<String>) -> ToolResult {
        self.content.push(json!({"type": "image", "mime_type": mime_type.into(), "data": base64.into()}));
        self
    }

    pub(crate) fn into_frame(self, id: String) -> crate::protocol::ToolResult {
        crate::protocol::ToolResult { id, content: self.content, is_error: self.is_error, ..Default::default() }
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
        }
        r
    }
}

/// The level of a [`Handle::notify`](super::Handle::notify) note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Success,
    Warn,
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
/// extension down. Long-running tools poll it and return early.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag nobody has set yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// True once the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the flag.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Sleeps for `d`, waking early when cancelled. Returns `true` when the
    /// full time elapsed, `false` when cancelled.
    pub fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.is_cancelled() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(5)));
        }
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
