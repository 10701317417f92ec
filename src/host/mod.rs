//! The host: the public handle that embedding programs (the console,
//! `zot serve`, tests, libraries) use to run extensions, and the types that
//! cross it. All state lives on one dispatcher thread (the private `dispatcher` module); a
//! [`Host`] is only a sender of requests plus the receiver of host events.
//!
//! Two ways to use it. A program that makes one call at a time uses the
//! blocking calls ([`Host::tool`], [`Host::command`], …; see
//! `examples/embed.rs`). A front end that serves many requests at once
//! (what `zot serve` is, on exactly this API) submits them with a
//! [`Responder`] and gets every answer and every host event on the
//! dispatcher thread, in the order they happened there:
//!
//! - [`Host::start_with_idle`]: host events go to a sink, and an
//!   [`IdleHook`] runs each time the dispatcher has handled what it had,
//!   where a front end that gathers its output writes it once;
//! - [`Host::submit_quiet`] / [`Host::submit_quiet_responder`] and
//!   [`Host::wake`]: a burst of requests read together wakes the
//!   dispatcher once;
//! - [`Responder::with_key`] and [`Request::Cancel`]: give up on a request
//!   wherever it is; [`Request::EndOfInput`] when nobody is left to answer
//!   interactive tools;
//! - [`on_dispatcher_thread`]: whether code runs where blocking calls are
//!   refused (a responder or the sink).
//!
//! ```no_run
//! use std::sync::mpsc;
//! use zot_host::home::Home;
//! use zot_host::host::{Config, Host, Request, Responder};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::new(Home::from_env()?, std::env::current_dir()?);
//! let (out, lines) = mpsc::channel::<String>();
//! let sink = { let out = out.clone(); Box::new(move |e| { let _ = out.send(format!("{e:?}")); }) };
//! let host = Host::start_with_idle(config, sink, Box::new(|| {}))?;
//! // Two requests read together: one wake-up for both.
//! for (key, tool) in [(1, "weather"), (2, "slow")] {
//!     let out = out.clone();
//!     let done = Responder::new(move |r| { let _ = out.send(format!("{key}: {r:?}")); }).with_key(key);
//!     let call = Request::Tool { name: tool.into(), args: None, tool_id: None };
//!     host.submit_quiet_responder(call, key == 1, done);
//! }
//! // Give up on the second wherever it is: it is answered `cancelled` first.
//! host.submit(Request::Cancel { key: 2 }, move |r| { let _ = out.send(format!("cancel: {r:?}")); });
//! for line in lines.iter().take(3) {
//!     println!("{line}");
//! }
//! host.shutdown();
//! # Ok(())
//! # }
//! ```

mod dispatcher;
mod registry;
mod resources;
mod types;

pub use types::*;

/// What `--trace FILE` writes: every frame in and out ([`Config::trace`]).
pub use crate::trace::Tracer;
/// `--confine` (docs/protocol.md §9.3), for [`Config::confine`].
pub use crate::confine::Mode as ConfineMode;

/// Stack size of the per-extension reader and writer threads.
pub use crate::child::THREAD_STACK;

/// Waits until every `[zot]` line the host handed to its logger thread is
/// in the extension's log file (the host also does this when it stops).
pub fn flush_logs() {
    crate::log::flush();
}

use crossbeam_channel::{bounded, unbounded, Receiver};
use serde_json::Value;
use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::protocol::Payload;

/// Whether this is the host's dispatcher thread (where responders and the
/// event sink run).
pub fn on_dispatcher_thread() -> bool {
    dispatcher::on_dispatcher_thread()
}

/// A running extension host.
pub struct Host {
    tx: crate::wake::Tx<dispatcher::Inbox>,
    thread: Mutex<Option<JoinHandle<()>>>,
    trace: Option<std::sync::Arc<crate::trace::Tracer>>,
}

impl Host {
    /// Starts the dispatcher and begins loading every extension the config
    /// points at, all in parallel. Returns at once; host events (ready, load
    /// errors, notes from extensions, exits) arrive on the returned receiver.
    pub fn start(config: Config) -> Result<(Host, Receiver<HostEvent>), HostError> {
        let (etx, erx) = unbounded();
        let host = Host::start_with(config, Box::new(move |e| {
            let _ = etx.send(e);
        }))?;
        Ok((host, erx))
    }

    /// Like [`Host::start`], with host events handed to `sink` on the
    /// dispatcher thread as they happen. Responders run on that thread too,
    /// so a front end whose sink and responders feed one channel gets one
    /// stream in the order things happened in the host: a note an
    /// extension sent after its reply comes after the answer carrying that
    /// reply. The sink must be quick and must not wait for the host.
    pub fn start_with(config: Config, sink: EventSink) -> Result<Host, HostError> {
        Host::start_with_idle(config, sink, Box::new(|| {}))
    }

    /// Like [`Host::start_with`], with `idle` run on the dispatcher thread
    /// whenever it runs out of work ([`IdleHook`]).
    pub fn start_with_idle(config: Config, sink: EventSink, idle: IdleHook) -> Result<Host, HostError> {
        let (tx, rx) = crate::wake::channel();
        let trace = config.trace.clone();
        let thread = dispatcher::spawn(config, tx.clone(), rx, sink, idle)?;
        Ok(Host { tx, thread: Mutex::new(Some(thread)), trace })
    }

    /// Sends a request; `done` is called exactly once with the outcome, on
    /// the dispatcher thread, so it must be quick and must not block.
    pub fn submit(&self, request: Request, done: impl FnOnce(Result<Response, HostError>) + Send + 'static) {
        self.submit_responder(request, Responder::new(done));
    }

    /// [`Host::submit`], without waking the dispatcher when `more` (the
    /// caller has more requests at hand): the last one submitted without
    /// `more`, or [`Host::wake`], wakes it once for all of them.
    pub fn submit_quiet(&self, request: Request, more: bool, done: impl FnOnce(Result<Response, HostError>) + Send + 'static) {
        self.submit_quiet_responder(request, more, Responder::new(done));
    }

    /// [`Host::submit_quiet`] with a ready-made [`Responder`] (one made
    /// [`Responder::with_key`], to cancel it by).
    pub fn submit_quiet_responder(&self, request: Request, more: bool, done: Responder) {
        let msg = dispatcher::Inbox::Request(request, done);
        let sent = if more { self.tx.send_quiet(msg) } else { self.tx.send(msg) };
        if let Err(dispatcher::Inbox::Request(_, done)) = sent {
            done.answer(Err(HostError::ShuttingDown));
        }
    }

    /// Wakes the dispatcher for requests submitted quietly.
    pub fn wake(&self) {
        self.tx.wake();
    }

    /// [`Host::submit`] with a ready-made [`Responder`].
    pub fn submit_responder(&self, request: Request, done: Responder) {
        if let Err(dispatcher::Inbox::Request(_, done)) = self.tx.send(dispatcher::Inbox::Request(request, done)) {
            done.answer(Err(HostError::ShuttingDown));
        }
    }

    /// Sends a request and waits for its outcome.
    /// Refused on the dispatcher thread (from a responder or the event
    /// sink), where it would wait for itself.
    pub fn call(&self, request: Request) -> Result<Response, HostError> {
        if dispatcher::on_dispatcher_thread() {
            return Err(reentrant());
        }
        let (tx, rx) = bounded(1);
        self.submit(request, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or(Err(HostError::ShuttingDown))
    }

    /// Waits until the initial load is over: every extension is ready or
    /// failed, or the ready grace ran out. Returns the load report.
    pub fn wait_ready(&self) -> Result<LoadReport, HostError> {
        match self.call(Request::WaitReady)? {
            Response::Load(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Every loaded extension with its state, and the effective commands
    /// and tools.
    pub fn list(&self) -> Result<Listing, HostError> {
        match self.call(Request::List)? {
            Response::List(l) => Ok(l),
            other => Err(unexpected(other)),
        }
    }

    /// Runs `/name args`.
    pub fn command(&self, name: &str, args: &str) -> Result<CommandReply, HostError> {
        match self.call(Request::Command { name: name.into(), args: args.into() })? {
            Response::Command(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Calls tool `name` with `args` (`{}` when `None`).
    pub fn tool(&self, name: &str, args: Option<Value>) -> Result<ToolReply, HostError> {
        let req = Request::Tool { name: name.into(), args, tool_id: None };
        match self.call(req)? {
            Response::Tool(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Calls tool `name` with `args` under the caller's own key `tool_id`,
    /// so that [`Host::cancel_tool`] can give up on it; `done` as in
    /// [`Host::submit`].
    pub fn submit_tool(
        &self,
        name: &str,
        args: Option<Value>,
        tool_id: &str,
        done: impl FnOnce(Result<Response, HostError>) + Send + 'static,
    ) {
        self.submit(Request::Tool { name: name.into(), args, tool_id: Some(tool_id.into()) }, done);
    }

    /// Gives up on the tool calls in flight started with `tool_id`: their
    /// extension gets `tool_cancel` and their callers get
    /// [`HostError::Cancelled`].
    pub fn cancel_tool(&self, tool_id: &str) -> Result<(), HostError> {
        self.call(Request::CancelTool { tool_id: tool_id.into() }).map(drop)
    }

    /// Runs the intercept chain for `event` (`tool_call`, `turn_start` or
    /// `assistant_message`) with its payload fields.
    pub fn intercept(&self, event: &str, payload: Payload) -> Result<InterceptOutcome, HostError> {
        match self.call(Request::Intercept { event: event.into(), payload })? {
            Response::Intercept(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Sends `event` to its subscribers; returns how many it reached.
    pub fn event(&self, event: &str, payload: Payload) -> Result<usize, HostError> {
        match self.call(Request::Event { event: event.into(), payload })? {
            Response::Delivered(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// Forwards a key press to an extension's panel.
    pub fn panel_key(
        &self,
        extension: &str,
        panel_id: &str,
        key: &str,
        text: Option<String>,
    ) -> Result<(), HostError> {
        let req = Request::PanelKey {
            extension: extension.into(),
            panel_id: panel_id.into(),
            key: key.into(),
            text,
        };
        self.call(req).map(drop)
    }

    /// Tells an extension the user closed its panel.
    pub fn panel_close(&self, extension: &str, panel_id: &str) -> Result<(), HostError> {
        let req = Request::PanelClose { extension: extension.into(), panel_id: panel_id.into() };
        self.call(req).map(drop)
    }

    /// Stops every extension, discovers again, starts and waits for ready.
    pub fn reload(&self) -> Result<ReloadReport, HostError> {
        match self.call(Request::Reload)? {
            Response::Reload(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Stops every extension (docs/protocol.md §3.10) and the dispatcher. Safe
    /// to call more than once; later calls return at once.
    /// On the dispatcher thread it only asks for the stop.
    pub fn shutdown(&self) {
        if dispatcher::on_dispatcher_thread() {
            return self.submit(Request::Shutdown, drop);
        }
        let _ = self.call(Request::Shutdown);
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(h) = handle {
            let _ = h.join();
        }
        if let Some(t) = &self.trace {
            t.flush(std::time::Duration::from_secs(2));
        }
    }
}

impl Host {
    /// For a process that exits once the host has stopped (`zot serve`):
    /// waits until the extensions' orphans are gone and every log line and
    /// trace record is written, without waiting for the dispatcher thread
    /// to end.
    pub(crate) fn flush_for_exit(&self) {
        crate::child::settle_orphans();
        crate::log::flush();
        if let Some(t) = &self.trace {
            t.flush(std::time::Duration::from_secs(2));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn reentrant() -> HostError {
    HostError::Internal("a blocking host call from the dispatcher thread (a responder or the event sink) would wait for itself".into())
}

fn unexpected(r: Response) -> HostError {
    HostError::Internal(format!("unexpected response {r:?}"))
}
