//! The Rust SDK for writing zot extensions: the [`Extension`] builder
//! (commands, tools, events, interceptors, panels, the on-hello hook), the
//! cloneable [`Handle`] for notes, panels and `call_tool` from any thread,
//! and [`log`]/[`logf!`](crate::logf) for the extension's log (stderr). It
//! mirrors upstream's current Go SDK (docs/protocol.md §2 and §6) and speaks
//! through [`crate::protocol`]'s frames, decoder and encoder.
//!
//! ```no_run
//! use zot_host::ext::{self, Extension, ToolResult};
//!
//! let mut e = Extension::new("weather", "1.0.0");
//! e.command("weather", "current weather for a city", |args| {
//!     ext::prompt(format!("Tell me the weather for {args}"))
//! });
//! e.tool("weather", "Get current weather for a city.",
//!     serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
//!     |args| ToolResult::text(format!("{}: sunny", args["city"])));
//! if let Err(err) = e.run() {
//!     zot_host::logf!("fatal: {err}");
//! }
//! ```
//!
//! [`Extension::run`] speaks the protocol on stdin/stdout: `hello`, wait for
//! `hello_ack`, the on-hello hook, registrations, one `subscribe`, `ready`,
//! then requests until `shutdown` or end of input. Stdout carries frames
//! only: never `print!` from an extension, use [`log`].
//!
//! Threads: one thread reads the host's frames. Event, panel-key and
//! panel-close handlers run on it, one at a time in arrival order, before
//! the next frame is read; so every handler sees the effects of every
//! event received before its own frame. Commands, tools and intercepts run
//! on a pool of handler threads (an idle one is reused, else a new one is
//! started, at most 256 at once), so a slow handler never delays another
//! call. Frames go out through one writer behind a mutex. A handler that
//! panics answers its request with an error (an intercept with allow) and
//! the extension stays up.

#![warn(missing_docs)]

mod events;
mod pool;
mod runtime;
mod types;
mod writer;

pub use crate::protocol::{Panel, Payload};
pub use events::*;
pub use types::*;

use crossbeam_channel::{after, bounded, never, select, Sender};
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::{self, Display};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::protocol::{encode, ExtFrame, ToolMore};

pub(crate) type CommandFn = Arc<dyn Fn(&str) -> Response + Send + Sync>;
pub(crate) type ToolFn = Arc<dyn Fn(ToolCall) -> ToolResult + Send + Sync>;
pub(crate) type ReconcileFn = Arc<dyn Fn(&ToolCall) -> Reconciled + Send + Sync>;
pub(crate) type EventFn = Arc<dyn Fn(&str, &Payload) + Send + Sync>;
pub(crate) type InterceptFn = Arc<dyn Fn(&Payload) -> Verdict + Send + Sync>;
pub(crate) type PanelKeyFn = Arc<dyn Fn(&PanelKey) + Send + Sync>;
pub(crate) type PanelCloseFn = Arc<dyn Fn(&str) + Send + Sync>;
type HelloFn = Box<dyn FnOnce(&HostInfo, &mut Extension) + Send>;

/// How long a `call_tool` waits by default, as upstream's Go SDK.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) struct CommandDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) handler: CommandFn,
}

pub(crate) struct ToolDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) more: ToolMore,
    pub(crate) handler: ToolFn,
}

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
    seq: AtomicU64,
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

/// An extension under construction; [`run`](Extension::run) starts it.
pub struct Extension {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) commands: Vec<CommandDef>,
    pub(crate) tools: Vec<ToolDef>,
    pub(crate) reconcilers: Vec<(String, ReconcileFn)>,
    pub(crate) events: Vec<(String, EventFn)>,
    pub(crate) intercepts: Vec<(String, InterceptFn)>,
    pub(crate) panel_key: Option<PanelKeyFn>,
    pub(crate) panel_close: Option<PanelCloseFn>,
    pub(crate) on_hello: Option<HelloFn>,
}

impl Extension {
    /// A new extension; `name` should match the manifest's.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Extension {
        let name = name.into();
        let _ = LOG_NAME.set(name.clone());
        let shared = Shared {
            writer: writer::Writer::new(),
            calls: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
            call_tool_ok: AtomicBool::new(false),
            stopping: Cancel::new(),
        };
        Extension {
            name,
            version: version.into(),
            shared: Arc::new(shared),
            commands: Vec::new(),
            tools: Vec::new(),
            reconcilers: Vec::new(),
            events: Vec::new(),
            intercepts: Vec::new(),
            panel_key: None,
            panel_close: None,
            on_hello: None,
        }
    }

    /// The extension's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A handle for notes, prompts, panels and `call_tool`, usable from any
    /// thread at any time. Frames sent before `ready` are held until just
    /// after it.
    pub fn handle(&self) -> Handle {
        Handle { shared: Arc::clone(&self.shared) }
    }

    /// Registers the slash command `/name`; `handler` gets the text after
    /// the command name. Registering a name again replaces its handler.
    pub fn command<F>(&mut self, name: &str, description: &str, handler: F) -> &mut Self
    where
        F: Fn(&str) -> Response + Send + Sync + 'static,
    {
        let def = CommandDef { name: name.into(), description: description.into(), handler: Arc::new(handler) };
        match self.commands.iter_mut().find(|c| c.name == name) {
            Some(c) => *c = def,
            None => self.commands.push(def),
        }
        self
    }

    /// Registers a tool the model may call; `schema` is the JSON Schema
    /// object of its arguments and `handler` gets the arguments.
    pub fn tool<F>(&mut self, name: &str, description: &str, schema: Value, handler: F) -> &mut Self
    where
        F: Fn(Value) -> ToolResult + Send + Sync + 'static,
    {
        self.add_tool(name, description, schema, ToolOptions::default(), Arc::new(move |call: ToolCall| handler(call.args)))
    }

    /// Like [`tool`](Self::tool), for long-running tools: `handler` also
    /// gets the call's [`Cancel`] flag, set by the host's `tool_cancel`.
    pub fn tool_with_cancel<F>(&mut self, name: &str, description: &str, schema: Value, handler: F) -> &mut Self
    where
        F: Fn(Value, &Cancel) -> ToolResult + Send + Sync + 'static,
    {
        let handler: ToolFn = Arc::new(move |call: ToolCall| handler(call.args, &call.cancel));
        self.add_tool(name, description, schema, ToolOptions::default(), handler)
    }

    /// Registers a tool with the current revision's options (output schema,
    /// deferred, exposure, interactive, namespace, replay); `handler` gets
    /// the whole [`ToolCall`]: its id, arguments, `operation_key`, cancel
    /// flag, and [`ToolCall::call_tool`] (Go: `ToolWithOptions`).
    pub fn tool_with<F>(&mut self, name: &str, description: &str, schema: Value, options: ToolOptions, handler: F) -> &mut Self
    where
        F: Fn(&ToolCall) -> ToolResult + Send + Sync + 'static,
    {
        self.add_tool(name, description, schema, options, Arc::new(move |call: ToolCall| handler(&call)))
    }

    /// A tool whose results carry `structured_content` described by
    /// `output_schema` (Go: `StructuredTool`).
    pub fn structured_tool<F>(&mut self, name: &str, description: &str, schema: Value, output_schema: Value, handler: F) -> &mut Self
    where
        F: Fn(&ToolCall) -> ToolResult + Send + Sync + 'static,
    {
        let options = ToolOptions { output_schema: Some(output_schema), ..Default::default() };
        self.tool_with(name, description, schema, options, handler)
    }

    /// A tool the host does not offer until a tool result names it in
    /// [`ToolResult::activate`] (Go: `DeferredTool`).
    pub fn deferred_tool<F>(&mut self, name: &str, description: &str, schema: Value, handler: F) -> &mut Self
    where
        F: Fn(&ToolCall) -> ToolResult + Send + Sync + 'static,
    {
        self.tool_with(name, description, schema, ToolOptions { deferred: true, ..Default::default() }, handler)
    }

    /// A tool that waits for the user (e.g. in a panel): the host sets no
    /// reply deadline, so `handler` must return once
    /// [`ToolCall::is_cancelled`] (Go: `InteractiveTool`).
    pub fn interactive_tool<F>(&mut self, name: &str, description: &str, schema: Value, handler: F) -> &mut Self
    where
        F: Fn(&ToolCall) -> ToolResult + Send + Sync + 'static,
    {
        self.tool_with(name, description, schema, ToolOptions { interactive: true, ..Default::default() }, handler)
    }

    /// Answers the durable host's `tool_call` with `reconcile: true` for
    /// `tool`: did the operation `call.operation_key` already happen? Sets
    /// the tool's `replay` to `reconcile` unless it declares another.
    /// Without it, such calls go to the tool's handler with
    /// [`ToolCall::reconcile`] set.
    pub fn reconcile<F>(&mut self, tool: &str, handler: F) -> &mut Self
    where
        F: Fn(&ToolCall) -> Reconciled + Send + Sync + 'static,
    {
        self.reconcilers.retain(|(t, _)| t != tool);
        self.reconcilers.push((tool.into(), Arc::new(handler)));
        self
    }

    fn add_tool(&mut self, name: &str, description: &str, schema: Value, o: ToolOptions, handler: ToolFn) -> &mut Self {
        let more = ToolMore {
            output_schema: o.output_schema,
            deferred: o.deferred,
            exposure: o.exposure.map(Exposure::as_str).unwrap_or_default().into(),
            interactive: o.interactive,
            namespace: o.namespace.unwrap_or_default(),
            namespace_description: o.namespace_description.unwrap_or_default(),
            namespace_instructions: o.namespace_instructions.unwrap_or_default(),
            replay: o.replay.map(Replay::as_str).unwrap_or_default().into(),
            ..Default::default()
        };
        let def = ToolDef { name: name.into(), description: description.into(), schema, more, handler };
        match self.tools.iter_mut().find(|t| t.name == name) {
            Some(t) => *t = def,
            None => self.tools.push(def),
        }
        self
    }

    /// Subscribes to `event` (see [`EVENTS`]); `handler` gets the event's
    /// name and payload. Event handlers run in arrival order on the reading
    /// thread, before the next frame is read: keep them quick.
    pub fn on<F>(&mut self, event: &str, handler: F) -> &mut Self
    where
        F: Fn(&str, &Payload) + Send + Sync + 'static,
    {
        self.events.push((event.into(), Arc::new(handler)));
        self
    }

    /// Like [`on`](Self::on), with the payload read into a typed [`Event`].
    pub fn on_event<F>(&mut self, event: &str, handler: F) -> &mut Self
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.on(event, move |name, payload| handler(&Event::from_payload(name, payload)))
    }

    /// Intercepts `event` before it happens; the last handler set for an
    /// event wins. Prefer the typed `intercept_*` methods below.
    pub fn intercept<F>(&mut self, event: &str, handler: F) -> &mut Self
    where
        F: Fn(&Payload) -> Verdict + Send + Sync + 'static,
    {
        let handler: InterceptFn = Arc::new(handler);
        match self.intercepts.iter_mut().find(|(e, _)| e == event) {
            Some(slot) => slot.1 = handler,
            None => self.intercepts.push((event.into(), handler)),
        }
        self
    }

    /// Intercepts tool calls: `handler(tool_name, tool_args)` may allow,
    /// block, or rewrite the arguments ([`Verdict::ModifyArgs`]).
    pub fn intercept_tool_call<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&str, &Value) -> Verdict + Send + Sync + 'static,
    {
        self.intercept("tool_call", move |p| {
            let name = p.get("tool_name").and_then(Value::as_str).unwrap_or("");
            match p.get("tool_args") {
                Some(args) => handler(name, args),
                None => handler(name, &Value::Object(Map::new())),
            }
        })
    }

    /// Intercepts the start of a turn: `handler(step)` may allow or block.
    pub fn intercept_turn_start<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(u64) -> Verdict + Send + Sync + 'static,
    {
        self.intercept("turn_start", move |p| handler(p.get("step").and_then(Value::as_u64).unwrap_or(0)))
    }

    /// Intercepts an assistant message: `handler(text)` may allow, block,
    /// or replace the text ([`Verdict::ReplaceText`]).
    pub fn intercept_assistant_message<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&str) -> Verdict + Send + Sync + 'static,
    {
        self.intercept("assistant_message", move |p| handler(p.get("text").and_then(Value::as_str).unwrap_or("")))
    }

    /// Intercepts `before_agent_start`: `handler` sees the system prompt
    /// about to be used and returns a replacement (`Some("")` empties it)
    /// or `None` to keep it (Go: `InterceptBeforeAgentStart`).
    pub fn intercept_before_agent_start<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&BeforeAgentStart) -> Option<String> + Send + Sync + 'static,
    {
        self.intercept("before_agent_start", move |p| match BeforeAgentStart::from_payload(p) {
            Some(ev) => handler(&ev).map_or(Verdict::Allow, Verdict::SystemPrompt),
            None => Verdict::Allow,
        })
    }

    /// Runs `hook` once `hello_ack` arrived, before the registrations are
    /// sent: it sees the host (e.g. `cwd`) and may register more.
    pub fn on_hello<F>(&mut self, hook: F) -> &mut Self
    where
        F: FnOnce(&HostInfo, &mut Extension) + Send + 'static,
    {
        self.on_hello = Some(Box::new(hook));
        self
    }

    /// Handles keys pressed in this extension's panels (on the reading
    /// thread, in order, like events).
    pub fn on_panel_key<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&PanelKey) + Send + Sync + 'static,
    {
        self.panel_key = Some(Arc::new(handler));
        self
    }

    /// Handles the user closing one of this extension's panels (by id).
    pub fn on_panel_close<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&str) + Send + Sync + 'static,
    {
        self.panel_close = Some(Arc::new(handler));
        self
    }

    /// Speaks the protocol on stdin/stdout until `shutdown` (answered with
    /// `shutdown_ack`) or the end of stdin, then returns `Ok`. Fails when
    /// stdin closes before `hello_ack` or stdout cannot be written.
    pub fn run(self) -> std::io::Result<()> {
        runtime::run(self)
    }
}

/// Sends frames to the host from any thread; cheap to clone. Sends after
/// the extension stopped are dropped silently.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
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

static LOG_NAME: OnceLock<String> = OnceLock::new();

/// Writes one line to the extension's log (stderr, which the host appends
/// to `ext-<name>.log`), prefixed with `[name]`.
pub fn log(msg: impl Display) {
    let name = LOG_NAME.get().map(String::as_str).unwrap_or("ext");
    let line = format!("[{name}] {msg}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `format!`-style [`log`](crate::ext::log): `zot_host::logf!("fatal: {err}")`.
#[macro_export]
macro_rules! logf {
    ($($arg:tt)*) => {
        $crate::ext::log(::std::format_args!($($arg)*))
    };
}
