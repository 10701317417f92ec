//! How a request is answered: its outcome ([`Response`]) with the replies
//! and reports it carries, and the [`Responder`] that delivers it.

use super::{HostError, Listing, ResourceListing, ResourceRead};
#[cfg(doc)]
use super::{Request, ToolCall};
use crate::protocol::Panel;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The outcome of a request.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// Answer to [`Request::WaitReady`].
    Load(LoadReport),
    /// Answer to [`Request::List`].
    List(Listing),
    /// Answer to [`Request::Owner`]: the extension's name, if any.
    Owner(Option<String>),
    /// Answer to [`Request::Command`].
    Command(CommandReply),
    /// Answer to a tool call.
    Tool(ToolReply),
    /// Answer to [`Request::Intercept`].
    Intercept(InterceptOutcome),
    /// Answer to [`Request::Event`]: the number of extensions it was sent to.
    Delivered(usize),
    /// Answer to [`Request::Reload`].
    Reload(ReloadReport),
    /// Answer to [`Request::Cancel`]: whether the call was still in flight
    /// (it is then answered [`HostError::Cancelled`], before this answer).
    Cancelled(bool),
    /// Answer to [`Request::Restart`]: the extension is ready again.
    Restarted {
        /// Its name.
        extension: String,
        /// Its new process.
        pid: Option<u32>,
    },
    /// Answer to [`Request::Resources`].
    Resources(ResourceListing),
    /// Answer to [`Request::ReadResource`].
    Resource(ResourceRead),
    /// The request was carried out; nothing to report.
    Done,
}

/// The answer to one request: called exactly once, on the dispatcher
/// thread, with its outcome. Answering consumes it; a responder dropped
/// without an answer (a request lost to a bug, or a panic on the way)
/// answers [`HostError::Internal`] by itself, so every request gets one
/// answer. It runs on the dispatcher thread, so it must be quick and must
/// not wait for the host: [`Host::call`](crate::host::Host::call) and the other
/// blocking calls refuse to run there.
pub struct Responder {
    f: Option<AnswerFn>,
    key: Option<CallKey>,
    chain_args: Option<crossbeam_channel::Sender<Value>>,
    /// Made by [`Responder::observed`]: the call's end is already seen.
    observed: bool,
    /// Set once the call reached its tool (the frame sent to the extension,
    /// the agent asked): whether it was executed.
    reached: Option<Arc<AtomicBool>>,
}

type AnswerFn = Box<dyn FnOnce(Result<Response, HostError>) + Send>;

/// Who named a call, and by what: the embedder's keys
/// ([`Responder::with_key`], for [`Request::Cancel`]) and the host's own
/// (the calls it makes for an extension's `call_tool`) are separate
/// namespaces, so that no key one side picks can reach the other's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CallKey {
    /// The embedder's.
    Caller(u64),
    /// The host's own.
    Host(u64),
}

impl Responder {
    /// A responder that calls `f` with the outcome.
    pub fn new(f: impl FnOnce(Result<Response, HostError>) + Send + 'static) -> Responder {
        Responder { f: Some(Box::new(f)), key: None, chain_args: None, observed: false, reached: None }
    }

    /// This responder, with `seen` run first with its answer and the
    /// arguments its `tool_call` chain ended with (`None` when the chain
    /// never ended): the key stays, and the caller of
    /// [`Responder::with_chain_args`] still gets the arguments first.
    /// `seen` also learns whether the call reached its tool
    /// ([`Responder::reached`]).
    pub(crate) fn observed(mut self, seen: impl FnOnce(&Result<Response, HostError>, Option<Value>, bool) + Send + 'static) -> Responder {
        let (tx, rx) = crossbeam_channel::bounded::<Value>(1);
        let key = self.key;
        let caller = self.chain_args.take();
        let reached = Arc::new(AtomicBool::new(false));
        let flag = reached.clone();
        let f = move |r: Result<Response, HostError>| {
            let args = rx.try_recv().ok();
            if let (Some(a), Some(c)) = (&args, &caller) {
                let _ = c.try_send(a.clone());
            }
            seen(&r, args, flag.load(Ordering::Relaxed));
            self.answer(r);
        };
        Responder { f: Some(Box::new(f)), key, chain_args: Some(tx), observed: true, reached: Some(reached) }
    }

    /// The call this answers reached its tool: its frame was sent to the
    /// extension (or server), or the agent was asked. A call answered
    /// before that (blocked, cancelled or timed out while parked or
    /// waiting for a wake) was not executed.
    pub(crate) fn reached(&self) {
        if let Some(r) = &self.reached {
            r.store(true, Ordering::Relaxed);
        }
    }

    /// Whether [`Responder::observed`] made it.
    pub(crate) fn is_observed(&self) -> bool {
        self.observed
    }

    /// The request this answers gets the caller's own `key`, by which
    /// [`Request::Cancel`] gives up on it wherever it is (waiting for a
    /// load or a restart, in its intercept chain, sent to an extension,
    /// waiting on the agent). Keys are the caller's to choose; the
    /// host's own calls are never reached by one.
    pub fn with_key(mut self, key: u64) -> Responder {
        self.key = Some(CallKey::Caller(key));
        self
    }

    /// For a tool call run as the model's ([`ToolCall::as_model`]): once its
    /// `tool_call` intercept chain is over, and before the answer, the
    /// arguments the chain ended with (every `modified_args` applied; those
    /// the tool is called with unless the chain blocked) are sent to `tx`,
    /// so that what the caller reports after the call (the `tool_result`
    /// event) names them. Nothing is sent for a call that never finished
    /// its chain.
    pub fn with_chain_args(mut self, tx: crossbeam_channel::Sender<Value>) -> Responder {
        self.chain_args = Some(tx);
        self
    }

    /// Hands `args` to the sender given to [`Responder::with_chain_args`].
    pub(crate) fn chain_args(&self, args: &Value) {
        if let Some(tx) = &self.chain_args {
            let _ = tx.try_send(args.clone());
        }
    }

    pub(crate) fn with_host_key(mut self, key: u64) -> Responder {
        self.key = Some(CallKey::Host(key));
        self
    }

    pub(crate) fn key(&self) -> Option<CallKey> {
        self.key
    }

    /// Answers the request; a panic in the embedder's code stays there.
    pub fn answer(mut self, r: Result<Response, HostError>) {
        if let Some(f) = self.f.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(r)));
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            let e = HostError::Internal("the request was dropped without an answer".into());
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(Err(e))));
        }
    }
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Responder")
    }
}

/// An extension's answer to a command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandReply {
    /// The extension that answered.
    pub extension: String,
    /// `prompt`, `insert`, `display`, `open_panel` or `noop`.
    pub action: String,
    /// For `prompt` and `tool_prompt`: the text to submit as a user prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// For `insert`: the text to put in the user's input line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    /// For `display`: the text to show the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// For `open_panel`: the panel to open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<Panel>,
    /// `tool_prompt`: the tool the front end runs before the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// `tool_prompt`: the arguments of `tool_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    /// A non-empty error, to show as an error whatever the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An extension's answer to a tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolReply {
    /// The extension that answered.
    pub extension: String,
    /// The result's content blocks, as the extension sent them.
    pub content: Vec<Value>,
    /// The tool failed; `content` says why.
    pub is_error: bool,
    /// The tool's structured result, passed on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The deferred tools this answer activated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub activate_tools: Vec<String>,
    /// A call run as the model's ([`ToolCall::as_model`]) that the intercept
    /// chain blocked: the reason. The tool did not run.
    #[serde(skip)]
    pub blocked: Option<String>,
    /// A call refused before anything saw it (an interactive tool on a host
    /// without interactive support): no event is sent for it.
    #[serde(skip)]
    pub refused: bool,
}

/// The verdict of an intercept chain.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InterceptOutcome {
    /// Some interceptor blocked the event.
    pub block: bool,
    /// Why it was blocked, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments after every rewrite, when any interceptor rewrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    /// The text after every replacement, when any interceptor replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
    /// `before_agent_start`: the system prompt after the whole chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// The initial load.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadReport {
    /// Extensions started.
    pub loaded: usize,
    /// Names of the extensions ready when the load ended, in load order.
    pub ready: Vec<String>,
    /// One line per extension that failed to load.
    pub errors: Vec<String>,
}

impl LoadReport {
    /// The line front ends say once the load is over: the extensions and
    /// the MCP servers (`servers`: their names) that are ready, each
    /// counted as what it is (`2 extensions and 1 MCP server ready:
    /// weather, notes, fs`).
    pub fn ready_line(&self, servers: &[String]) -> String {
        let n_srv = self.ready.iter().filter(|n| servers.contains(n)).count();
        let n_ext = self.ready.len() - n_srv;
        let count = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let what = match (n_ext, n_srv) {
            // Nothing ready of a load that had servers: none of them is.
            (0, 0) if !servers.is_empty() => count(0, "MCP server", "MCP servers"),
            (_, 0) => count(n_ext, "extension", "extensions"),
            (0, _) => count(n_srv, "MCP server", "MCP servers"),
            _ => format!("{} and {}", count(n_ext, "extension", "extensions"), count(n_srv, "MCP server", "MCP servers")),
        };
        let names = if self.ready.is_empty() { "none".to_string() } else { self.ready.join(", ") };
        format!("{what} ready: {names}")
    }

    /// The line that follows [`LoadReport::ready_line`] when MCP servers
    /// (`starting`: their names) were still starting as the load ended;
    /// none when no server was.
    pub fn starting_line(starting: &[String]) -> Option<String> {
        (!starting.is_empty()).then(|| format!("still starting: {} (calls for their tools wait for them)", starting.join(", ")))
    }
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReloadReport {
    /// Extensions stopped.
    pub stopped: usize,
    /// Extensions started again.
    pub loaded: usize,
    /// Extensions ready when the reload ended.
    pub ready: usize,
    /// One line per extension that failed to load.
    pub errors: Vec<String>,
}
