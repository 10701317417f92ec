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
//!
//! The rooms, bottom-up: `log` the extension's log line, `events` and
//! `types` the values handlers receive and return, `writer` the one writer,
//! `pool` the handler threads, `handle` what the builder, every `Handle`
//! and the runtime share, `call` a tool call as its handler sees it, `defs`
//! what the builder collects, `runtime` the reader loop; this file the
//! builder's methods.

#![warn(missing_docs)]

mod call;
mod defs;
mod events;
mod handle;
mod log;
mod pool;
mod runtime;
mod types;
mod writer;

pub use crate::protocol::{Panel, Payload};
pub use events::*;
pub use types::*;
pub use call::ToolCall;
pub use defs::Extension;
pub use handle::Handle;
pub use log::log;

use defs::{CommandDef, InterceptFn, ToolDef, ToolFn};
use handle::Shared;
use log::LOG_NAME;

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use crate::protocol::ToolMore;

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

/// `format!`-style [`log`](crate::ext::log): `zot_host::logf!("fatal: {err}")`.
#[macro_export]
macro_rules! logf {
    ($($arg:tt)*) => {
        $crate::ext::log(::std::format_args!($($arg)*))
    };
}
