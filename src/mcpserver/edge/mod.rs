//! The edge of one MCP server's process: JSON-RPC 2.0 on its stdio
//! translated into the host's own messages, so that nothing above the
//! child knows the dialect (docs/protocol.md §8.2, §8.3, §8.4.3). It is the
//! child's [`Dialect`], chosen when the server is spawned, in the era the
//! host tries it in ([`Era`]).
//!
//! From the server (the reader thread, [`Edge::incoming`]): the handshake's
//! answer becomes `hello` ([`handshake`]), the tools and prompts it lists
//! `register_tool` and `register_command`, the end of the first listing
//! `ready`, a `tools/call` answer `tool_result`, a `prompts/get` answer
//! `command_response` ([`calls`]); a later listing replaces the tools
//! ([`McpMsg::Tools`]) or the prompts ([`McpMsg::Prompts`]), progress is
//! [`McpMsg::Progress`]; its resources and templates are
//! [`McpMsg::Resources`] and a read's answer [`McpMsg::Read`] (in
//! `resources`). Its own requests are answered here.
//!
//! To the server (the dispatcher's sends, [`Edge::outgoing`], in [`calls`]):
//! `tool_call` becomes `tools/call` with a `progressToken`, `tool_cancel`
//! `notifications/cancelled`, `command_invoked` `prompts/get`; `hello_ack`
//! and `shutdown` write nothing (the stop closes stdin, MCP's shutdown). A
//! resource read has no frame: the dispatcher asks [`Edge::read`] for its
//! line, and cancels it with `tool_cancel` as a call.
//!
//! Request ids are this edge's own counter, so none collides with another
//! and a server's answer is matched to what was asked.

mod calls;
mod handshake;
mod resources;
mod state;
mod wire;

use crate::child::{ChildMsg, Dialect};
use serde_json::{json, Value};
use state::Pending;
use wire::{error_reply, line};

pub use handshake::{MODERN, PROTOCOL};
pub use state::{Edge, EdgeMsg, Era, McpMsg, Resource, Template, Tool};

impl Edge {
    // ----- from the server ------------------------------------------------

    fn junk(&self, line: &[u8], why: &str) {
        self.log.line(&format!("skipped a stdout line ({why}): {}", crate::child::preview(line)));
    }

    fn server_request(&self, method: &str, id: Value) {
        if self.era == Era::Modern {
            // 2026-07-28 servers send no requests on stdio.
            self.log.line(&format!("refused the server's {method} request: a 2026-07-28 server sends no requests"));
            return self.write(line(&error_reply(id, &format!("method {method:?} not found"))));
        }
        let reply = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "roots/list" if self.roots.is_some() => json!({"jsonrpc": "2.0", "id": id, "result": self.roots_result()}),
            "sampling/createMessage" | "elicitation/create" | "roots/list" => {
                self.log.line(&format!("refused the server's {method} request: not supported by this host"));
                error_reply(id, "not supported by this host")
            }
            other => {
                self.log.line(&format!("refused the server's {other} request: unknown method"));
                error_reply(id, &format!("method {other:?} not found"))
            }
        };
        self.write(line(&reply));
    }

    fn roots_result(&self) -> Value {
        let roots: Vec<Value> = self.roots.iter().flatten().map(|u| json!({"uri": u})).collect();
        json!({ "roots": roots })
    }

    fn notification(&self, method: &str, params: Value) {
        match method {
            "notifications/progress" => {
                let token = match params.get("progressToken") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => return self.log.line("dropped a progress notification without a progressToken"),
                };
                if !self.state().calls.contains_key(&token) {
                    return self.log.line(&format!("dropped progress for token {token:?}: no such call in flight"));
                }
                let progress = params.get("progress").cloned().unwrap_or(Value::Null);
                let total = params.get("total").filter(|v| v.is_number()).cloned();
                let message = params.get("message").and_then(Value::as_str).map(str::to_string);
                self.tell(McpMsg::Progress { id: token, progress, total, message });
            }
            "notifications/tools/list_changed" => {
                let mut st = self.state();
                if !st.ready || st.gathering.is_some() {
                    st.list_again = true;
                    return;
                }
                let bytes = handshake::list_tools(&mut st, None);
                drop(st);
                self.write(bytes);
            }
            "notifications/prompts/list_changed" => {
                let mut st = self.state();
                if !st.ready || st.prompt_pages.is_some() {
                    st.prompts_again = true;
                    return;
                }
                let bytes = handshake::list_prompts(&mut st, None);
                drop(st);
                self.write(bytes);
            }
            "notifications/resources/list_changed" => self.resources_changed(),
            "notifications/message" => {
                let level = params.get("level").and_then(Value::as_str).unwrap_or("info");
                let logger = params.get("logger").and_then(Value::as_str).map(|l| format!(" {l}:")).unwrap_or_default();
                let data = match params.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                self.log.line(&format!("server log [{level}]{logger} {data}"));
            }
            "notifications/cancelled" | "notifications/subscriptions/acknowledged" => {}
            other => self.log.line(&format!("ignored the server's notification {other}")),
        }
    }

    fn response(&self, id: Value, result: Result<Value, Value>) {
        let Some(n) = id.as_u64() else {
            return self.log.line(&format!("dropped a response for unknown request id {id}"));
        };
        let mut st = self.state();
        let Some(p) = st.pending.remove(&n) else {
            drop(st);
            return self.log.line(&format!("dropped a response for unknown request id {n}"));
        };
        match p {
            Pending::Initialize => {
                drop(st);
                self.initialized(result)
            }
            Pending::Discover { retried } => {
                drop(st);
                self.discovered(result, retried)
            }
            Pending::Tools => {
                let next = self.tools_page(&mut st, result);
                drop(st);
                self.write(next);
            }
            Pending::Prompts => {
                let next = self.prompts_page(&mut st, result);
                drop(st);
                self.write(next);
            }
            Pending::Listen => {
                drop(st);
                self.listen_ended(result)
            }
            Pending::Call { host_id, params, rounds } => {
                st.calls.remove(&host_id);
                drop(st);
                self.call_done(host_id, params, rounds, result);
            }
            Pending::Prompt { host_id, params, rounds } => {
                drop(st);
                self.prompt_done(host_id, params, rounds, result);
            }
            Pending::Resources | Pending::Templates => {
                let next = self.resource_page(&mut st, matches!(p, Pending::Templates), result);
                drop(st);
                self.write(next);
            }
            Pending::Read { host_id, params, rounds } => {
                st.calls.remove(&host_id);
                drop(st);
                self.read_done(host_id, params, rounds, result);
            }
        }
    }
}

impl Dialect for Edge {
    /// The handshake's first request, the first line the server reads.
    fn opening(&self) -> Vec<u8> {
        match self.era {
            Era::Legacy => self.initialize(),
            Era::Modern => self.discover(false),
        }
    }

    /// One line of the server's stdout.
    fn incoming(&self, line: &[u8]) {
        let m: Message = match serde_json::from_slice(line) {
            Ok(m) => m,
            // Invalid text in its strings is read as Go reads it (docs/protocol.md §2).
            Err(_) => match repaired(line) {
                Some((m, note)) => {
                    self.log.line(&note);
                    m
                }
                None if serde_json::from_slice::<Value>(line).is_ok() => return self.junk(line, "not a JSON-RPC object"),
                None => return self.junk(line, "not JSON"),
            },
        };
        match (m.method, m.id) {
            (Some(method), Some(id)) => self.server_request(&method, id),
            (Some(method), None) => self.notification(&method, m.params.unwrap_or(Value::Null)),
            (None, Some(id)) if m.result.is_some() || m.error.is_some() => {
                let result = match m.error {
                    Some(e) => Err(e),
                    None => Ok(m.result.unwrap_or(Value::Null)),
                };
                self.response(id, result)
            }
            _ => self.junk(line, "neither a request, a notification nor a response"),
        }
    }

    fn outgoing(&self, frame: &[u8]) -> Vec<u8> {
        self.translate(frame)
    }

    /// An answer over the line bound fails what asked for it, naming the
    /// method and the bound: the handshake, the listing (a relisting
    /// leaves the previous list in force), or the one call.
    fn too_long(&self, id: Option<&str>, len: usize) {
        let Some(n) = id.and_then(|i| i.parse::<u64>().ok()) else { return };
        let mut st = self.state();
        let Some(p) = st.pending.remove(&n) else { return };
        let over = |what: &str| format!("{what} of {len} bytes is over the limit of {} bytes", crate::child::MAX_LINE);
        match p {
            Pending::Initialize | Pending::Discover { .. } => {
                drop(st);
                let method = if matches!(p, Pending::Initialize) { "initialize" } else { "server/discover" };
                self.fail(format!("{method}: {}", over("its answer")));
            }
            Pending::Tools | Pending::Prompts => {
                let next = self.listing_failed(&mut st, matches!(p, Pending::Tools), &over("a page"));
                drop(st);
                self.write(next);
            }
            Pending::Listen => {
                drop(st);
                self.log.line(&format!("subscriptions/listen: {}", over("its answer")));
            }
            Pending::Resources | Pending::Templates => {
                let next = self.resource_listing_failed(&mut st, matches!(p, Pending::Templates), &over("a page"));
                drop(st);
                self.write(next);
            }
            Pending::Call { host_id, .. } | Pending::Prompt { host_id, .. } | Pending::Read { host_id, .. } => {
                st.calls.remove(&host_id);
                drop(st);
                self.send(ChildMsg::TooLong { id: Some(host_id), len });
            }
        }
    }
}

impl Edge {
    /// A remote server's login is no longer accepted after its handshake
    /// (`why`: the message of a login to run): told to the host.
    // Used by remote servers only (the default feature `remote`).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub fn login_lost(&self, why: &str) {
        self.log.line(why);
        self.tell(McpMsg::LoginLost(why.to_string()));
    }

    /// The request with id `id` got no answer from a remote server, for
    /// `why` (an HTTP status, a network error, a stream that ended): the
    /// handshake fails naming it, a listing fails as a bad page does (a
    /// relisting keeps the previous list), a call or a prompt fails alone.
    // Used by remote servers only (the default feature `remote`).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub fn unanswered(&self, id: u64, why: &str) {
        let mut st = self.state();
        let Some(p) = st.pending.remove(&id) else { return };
        match p {
            Pending::Initialize | Pending::Discover { .. } => {
                drop(st);
                let method = if matches!(p, Pending::Initialize) { "initialize" } else { "server/discover" };
                // A login to run is said as it is (docs/protocol.md §8.5 rule 11).
                self.fail(if crate::mcpserver::login::is_login_to_run(why) { why.to_string() } else { format!("{method}: {why}") });
            }
            Pending::Tools | Pending::Prompts => {
                let next = self.listing_failed(&mut st, matches!(p, Pending::Tools), why);
                drop(st);
                self.write(next);
            }
            Pending::Listen => {
                drop(st);
                self.log.line(&format!("subscriptions/listen: {why}"));
            }
            Pending::Resources | Pending::Templates => {
                let next = self.resource_listing_failed(&mut st, matches!(p, Pending::Templates), why);
                drop(st);
                self.write(next);
            }
            Pending::Call { host_id, .. } | Pending::Prompt { host_id, .. } | Pending::Read { host_id, .. } => {
                st.calls.remove(&host_id);
                drop(st);
                self.log.line(&format!("a call failed: {why}"));
                self.tell(McpMsg::CallFailed { id: host_id, why: why.to_string() });
            }
        }
    }
}

/// A line that is not JSON only because of invalid text, repaired and
/// read, with the log line that says so.
#[cold]
fn repaired(line: &[u8]) -> Option<(Message, String)> {
    let (fixed, n) = crate::protocol::repair(line)?;
    let m = serde_json::from_slice(&fixed).ok()?;
    Some((m, crate::protocol::repair_note(&fixed, n, "message")))
}

/// One JSON-RPC message from the server, read in one pass.
#[derive(serde::Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}
