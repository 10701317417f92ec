//! What the builder, every [`Handle`] and the runtime share ([`Shared`]),
//! the [`Handle`] that sends frames to the host from any thread, and the
//! per-thread marks a `call_tool` reads (the reader thread, the call being
//! answered).

use super::log::log;
use super::types::*;
use super::writer;
use crossbeam_channel::{after, bounded, never, select, Sender};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::protocol::{encode, ExtFrame, Panel};

/// How long a `call_tool` waits by default, as upstream's Go SDK.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

thread_local! {
    /// Set on the thread that reads the host's frames.
    pub(crate) static ON_READER: Cell<bool> = const { Cell::new(false) };
    /// The tool call this thread's handler is answering: the parent of a
    /// `call_tool` made from it (upstream carries it in the context).
    pub(crate) static CURRENT_CALL: RefCell<Option<(String, Cancel)>> = const { RefCell::new(None) };
}

/// What the builder, every [`Handle`] and the runtime share.
pub(crate) struct Shared {
    pub(crate) writer: writer::Writer,
    /// Waiting `call_tool`s, by the SDK's id.
    pub(crate) calls: Mutex<HashMap<String, Sender<CallResult>>>,
    pub(crate) seq: AtomicU64,
    /// The host's `hello_ack` lists `call_tool`.
    pub(crate) call_tool_ok: AtomicBool,
    /// Set when `run` returns: waiting calls give up.
    pub(crate) stopping: Cancel,
}

impl Shared {
    /// Hands the host's answer to the `call_tool` waiting for it.
    pub(crate) fn deliver(&self, id: &str, result: CallResult) {
        let waiter = self.calls.lock().ok().and_then(|mut c| c.remove(id));
        let Some(waiter) = waiter else {
            return log(format_args!("dropping a tool_result for no call_tool in flight ({id:?})"));
        };
        let _ = waiter.send(result);
    }
}

/// Sends frames to the host from any thread; cheap to clone. Sends after
/// the extension stopped are dropped silently.
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Handle")
    }
}

impl Handle {
    /// Shows a note to the user, attributed to this extension.
    pub fn notify(&self, level: Level, message: impl Into<String>) {
        self.send(&ExtFrame::Notify { level: level.as_str().into(), message: message.into() });
    }

    /// Retracts every note this extension has shown.
    pub fn clear_notes(&self) {
        self.send(&ExtFrame::ClearNotes);
    }

    /// Asks the host to submit `text` as a user prompt.
    pub fn submit(&self, text: impl Into<String>) {
        self.send(&ExtFrame::Submit { text: text.into() });
    }

    /// Asks the host to run the slash command `text` (e.g. `/reload-ext`)
    /// as if the user typed it.
    pub fn submit_slash(&self, text: impl Into<String>) {
        self.send(&ExtFrame::SubmitSlash { text: text.into() });
    }

    /// Opens a panel without a command.
    pub fn open_panel(&self, panel: Panel) {
        self.send(&ExtFrame::OpenPanel { panel });
    }

    /// Redraws the open panel `panel.id`.
    pub fn render_panel(&self, panel: &Panel) {
        self.send(&ExtFrame::PanelRender {
            panel_id: panel.id.clone(),
            title: panel.title.clone(),
            lines: panel.lines.clone(),
            footer: panel.footer.clone(),
        });
    }

    /// Closes the panel `panel_id`.
    pub fn close_panel(&self, panel_id: impl Into<String>) {
        self.send(&ExtFrame::PanelClose { panel_id: panel_id.into() });
    }

    /// Sends any frame as is.
    pub fn send(&self, frame: &ExtFrame) {
        self.shared.writer.send(&encode(frame));
    }

    /// True once the host's `hello_ack` listed `call_tool`.
    pub fn host_supports_call_tool(&self) -> bool {
        self.shared.call_tool_ok.load(Ordering::Acquire)
    }

    /// Runs the tool `name` through the host and waits for its result (at
    /// most 60 s). Called on a tool handler's thread, the handler's call is
    /// the parent (`parent_id`, which the host requires while a tool call
    /// to this extension is in flight) and cancelling it cancels this one,
    /// as with [`ToolCall::call_tool`]; elsewhere there is no parent.
    /// Nothing is sent when the host does not support `call_tool`.
    pub fn call_tool(&self, name: &str, args: Value) -> Result<CallResult, CallError> {
        self.call(name, args, CallOptions::default(), None)
    }

    /// [`call_tool`](Self::call_tool) with a parent, a cancel flag or a
    /// timeout. A cancel or timeout sends `call_tool_cancel`.
    pub fn call_tool_with(&self, name: &str, args: Value, opts: CallOptions) -> Result<CallResult, CallError> {
        self.call(name, args, opts, None)
    }

    pub(crate) fn call(&self, name: &str, args: Value, opts: CallOptions, parent: Option<&Cancel>) -> Result<CallResult, CallError> {
        if ON_READER.with(Cell::get) {
            return Err(CallError::OnReaderThread);
        }
        if !self.host_supports_call_tool() {
            return Err(CallError::Unsupported);
        }
        if name.is_empty() || !args.is_object() {
            return Err(CallError::BadArgs);
        }
        let current = CURRENT_CALL.with(|c| c.borrow().clone());
        let (parent_id, parent) = match (opts.parent_id, parent) {
            (Some(id), p) => (Some(id), p.cloned()),
            (None, _) => current.map_or((None, None), |(id, cancel)| (Some(id), Some(cancel))),
        };
        let id = format!("sdk-{}", self.shared.seq.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = bounded(1);
        if let Ok(mut calls) = self.shared.calls.lock() {
            calls.insert(id.clone(), tx);
        }
        let parent_id = parent_id.unwrap_or_default();
        self.send(&ExtFrame::CallTool { id: id.clone(), name: Value::String(name.into()), args, parent_id });
        let none = never();
        let own = opts.cancel.as_ref().map_or(&none, Cancel::woken);
        let parent = parent.as_ref().map_or(&none, Cancel::woken);
        let deadline = after(opts.timeout.unwrap_or(CALL_TIMEOUT));
        let result = select! {
            recv(rx) -> r => r.map_err(|_| CallError::Disconnected),
            recv(own) -> _ => Err(CallError::Cancelled),
            recv(parent) -> _ => Err(CallError::Cancelled),
            recv(self.shared.stopping.woken()) -> _ => Err(CallError::Disconnected),
            recv(deadline) -> _ => Err(CallError::Timeout),
        };
        if result.is_err() {
            if let Ok(answer) = rx.try_recv() {
                return Ok(answer);
            }
            let waiting = self.shared.calls.lock().ok().and_then(|mut c| c.remove(&id)).is_some();
            if waiting && matches!(result, Err(CallError::Cancelled | CallError::Timeout)) {
                self.send(&ExtFrame::CallToolCancel { id });
            }
        }
        result
    }
}
