//! The Rust SDK for writing zot extensions: the [`Extension`] builder
//! (commands, tools, events, interceptors, panels, the on-hello hook), the
//! cloneable [`Handle`] for notes and panels from any thread, and
//! [`log`]/[`logf!`](crate::logf) for the extension's log (stderr). It
//! mirrors the Go SDK; frames are the ones of [`crate::protocol`].
//!
//! ```no_run
//! use zot::ext::{self, Extension, ToolResult};
//!
//! let mut e = Extension::new("weather", "1.0.0");
//! e.command("weather", "current weather for a city", |args| {
//!     ext::prompt(format!("Tell me the weather for {args}"))
//! });
//! e.tool("weather", "Get current weather for a city.",
//!     serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
//!     |args| ToolResult::text(format!("{}: sunny", args["city"])));
//! if let Err(err) = e.run() {
//!     zot::logf!("fatal: {err}");
//! }
//! ```
//!
//! [`Extension::run`] speaks the protocol on stdin/stdout: `hello`, wait for
//! `hello_ack`, the on-hello hook, registrations, one `subscribe`, `ready`,
//! then requests until `shutdown` or end of input. Stdout carries frames
//! only: never `print!` from an extension, use [`log`].
//!
//! Threads: a request (command, tool, intercept) runs on the thread that
//! read it, which first passes reading on to another thread, so a slow
//! handler never delays another call and a fast one costs no thread
//! hand-off (leader/follower; threads are added when all are busy).
//! Events and panel keys run one at a time, in arrival order, on one event
//! thread. A handler that panics answers its request with an error (an
//! intercept with allow) and the extension stays up.

mod crew;
mod runtime;
mod types;
mod writer;

pub use crate::protocol::{Panel, Payload};
pub use types::*;

use serde_json::{Map, Value};
use std::fmt::Display;
use std::io::Write;
use std::sync::{Arc, OnceLock};

use crate::protocol::{encode, ExtFrame};

pub(crate) type CommandFn = Arc<dyn Fn(&str) -> Response + Send + Sync>;
pub(crate) type ToolFn = Arc<dyn Fn(Value, &Cancel) -> ToolResult + Send + Sync>;
pub(crate) type EventFn = Arc<dyn Fn(&str, &Payload) + Send + Sync>;
pub(crate) type InterceptFn = Arc<dyn Fn(&Payload) -> Verdict + Send + Sync>;
pub(crate) type PanelKeyFn = Arc<dyn Fn(&PanelKey) + Send + Sync>;
pub(crate) type PanelCloseFn = Arc<dyn Fn(&str) + Send + Sync>;
type HelloFn = Box<dyn FnOnce(&HostInfo, &mut Extension) + Send>;

pub(crate) struct CommandDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) handler: CommandFn,
}

pub(crate) struct ToolDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) handler: ToolFn,
    /// Registered with a [`Cancel`]-aware handler: track its flag.
    pub(crate) cancellable: bool,
}

/// An extension under construction; [`run`](Extension::run) starts it.
pub struct Extension {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) writer: Arc<writer::Writer>,
    pub(crate) commands: Vec<CommandDef>,
    pub(crate) tools: Vec<ToolDef>,
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
        Extension {
            name,
            version: version.into(),
            writer: Arc::new(writer::Writer::new()),
            commands: Vec::new(),
            tools: Vec::new(),
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

    /// A handle for notes, prompts and panels, usable from any thread at
    /// any time. Frames sent before `ready` are held until just after it.
    pub fn handle(&self) -> Handle {
        Handle { writer: Arc::clone(&self.writer) }
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
        self.add_tool(name, description, schema, Arc::new(move |args, _: &Cancel| handler(args)), false)
    }

    /// Like [`tool`](Self::tool), for long-running tools: `handler` also
    /// gets the call's [`Cancel`] flag, set by the host's `tool_cancel`.
    pub fn tool_with_cancel<F>(&mut self, name: &str, description: &str, schema: Value, handler: F) -> &mut Self
    where
        F: Fn(Value, &Cancel) -> ToolResult + Send + Sync + 'static,
    {
        self.add_tool(name, description, schema, Arc::new(handler), true)
    }

    fn add_tool(&mut self, name: &str, description: &str, schema: Value, handler: ToolFn, cancellable: bool) -> &mut Self {
        let def = ToolDef { name: name.into(), description: description.into(), schema, handler, cancellable };
        match self.tools.iter_mut().find(|t| t.name == name) {
            Some(t) => *t = def,
            None => self.tools.push(def),
        }
        self
    }

    /// Subscribes to `event` (`session_start`, `turn_start`, `turn_end`,
    /// `tool_call`, `assistant_message`, ...); `handler` gets the event's
    /// name and payload. Handlers run in arrival order on one thread.
    pub fn on<F>(&mut self, event: &str, handler: F) -> &mut Self
    where
        F: Fn(&str, &Payload) + Send + Sync + 'static,
    {
        self.events.push((event.into(), Arc::new(handler)));
        self
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

    /// Runs `hook` once `hello_ack` arrived, before the registrations are
    /// sent: it sees the host (e.g. `cwd`) and may register more.
    pub fn on_hello<F>(&mut self, hook: F) -> &mut Self
    where
        F: FnOnce(&HostInfo, &mut Extension) + Send + 'static,
    {
        self.on_hello = Some(Box::new(hook));
        self
    }

    /// Handles keys pressed in this extension's panels.
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
    writer: Arc<writer::Writer>,
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
        self.writer.send(encode(frame));
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

/// `format!`-style [`log`](crate::ext::log): `zot::logf!("fatal: {err}")`.
#[macro_export]
macro_rules! logf {
    ($($arg:tt)*) => {
        $crate::ext::log(::std::format_args!($($arg)*))
    };
}
