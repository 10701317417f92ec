//! `zot mcp`: the loaded extensions as an MCP server on stdin/stdout
//! (JSON-RPC 2.0, one message per line; stdout carries nothing else,
//! diagnostics go to stderr), so that any MCP client can use their tools
//! and commands.
//!
//! - tools: every extension tool; `tools/call` runs the `tool_call`
//!   intercept chain, then the `tool_call` event, then the call, exactly as
//!   the console's `/tool` does. A block, a host error (timeout, exit, busy)
//!   or an `is_error` reply is a tool result with `isError: true`.
//! - prompts: every extension command, with one optional argument `args`
//!   (the text after `/name`); `prompts/get` runs the command.
//! - logging: `notify` frames become `notifications/message`, filtered by
//!   `logging/setLevel` (default `info`); the server's own diagnostics are
//!   `debug` messages from logger `zot`.
//! - cancellation: `notifications/cancelled` drops the answer; for a tool
//!   call in flight the extension also gets `tool_cancel`.
//! - `notifications/tools/list_changed` and `notifications/prompts/list_changed`
//!   after `zot/reload` and when an extension exits.
//! - resources: every hosted MCP server's (`resources/list`,
//!   `resources/templates/list`, `resources/read`, cancellable as a call),
//!   `notifications/resources/list_changed` when they change.
//!
//! Requests are handled as they arrive and answered as each completes.
//! Lenient where the specification allows: requests before `initialize`
//! are answered normally (but no notification is sent before it), and a
//! JSON-RPC batch (an array) is accepted and answered with an array.
//!
//! The rooms, bottom-up: `wire` holds the words on the wire (error codes,
//! log levels, eras, the notification gate), `reply` the answer to each
//! message (the shared state, replies, batches, JSON-RPC errors, the list
//! changes sent to subscriptions), `results` the mapping of listings and
//! replies to MCP results, `events` the host's events as notifications,
//! `modern` the 2026-07-28 era; this file the server loop and the
//! requests.

mod events;
mod modern;
mod reply;
mod results;
mod wire;

use crate::host::{Config, Host, HostError, LoadReport, Request, Responder, Response, State, ToolCall};
use crate::protocol::{Element, IdField, Message};
use crate::stdio::{self, Line, Lines, Pending};
use crate::text::strip_controls;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use wire::{codes, level_index, Gate, DEBUG, INFO, INSTRUCTIONS, LEGACY, LEVELS, MODERN_ERA, RESOURCE_NOT_FOUND, UNDECIDED};
use reply::{bad_params, id_key, internal, invalid, Batch, Flight, Reply, Shared, Sink};
use results::{error_result, prompt_result, prompts_list, read_result, resources_list, templates_list, tool_result, tools_list};

/// The MCP revisions this server speaks, newest first. `initialize` answers
/// with the client's requested revision when it is one of these, else with
/// the newest. Their differences do not touch what this server implements
/// (tools, prompts, logging, ping, cancellation, list_changed); batches,
/// which only 2025-03-26 requires, are accepted whatever the revision.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision `initialize` answers with when the client asked for `requested`.
pub fn negotiate(requested: &str) -> &'static str {
    PROTOCOL_VERSIONS.iter().copied().find(|v| *v == requested).unwrap_or(PROTOCOL_VERSIONS[0])
}

/// Runs `zot mcp` on the process's stdin/stdout until end of input;
/// returns the exit code.
pub fn run(config: Config) -> i32 {
    let stdin = io::stdin();
    serve(config, stdin.lock(), io::stdout(), true)
}

/// Serves MCP messages read from `input`, writing to `output`. With
/// `exit_on_shutdown`, the process exits once the host has stopped (and
/// on SIGINT/SIGTERM/SIGHUP, after stopping the extensions).
pub fn serve<R: BufRead, W: Write + Send + 'static>(mut config: Config, mut input: R, output: W, exit_on_shutdown: bool) -> i32 {
    // No person answers an interactive tool's panel over MCP (docs/protocol.md
    // §6.2): such tools are answered at once as tool errors.
    config.interactive_tools = false;
    let Some((out_tx, writer)) = stdio::start_writer("zot mcp", output) else {
        return 1;
    };
    let gate = Arc::new(Gate { open: AtomicBool::new(false), level: AtomicU8::new(INFO), era: AtomicU8::new(UNDECIDED) });
    let shared = Arc::new(Shared {
        out: out_tx,
        gate,
        flights: Mutex::new(HashMap::new()),
        pending: Arc::new(Pending::default()),
        seq: AtomicU64::new(0),
        subs: Mutex::new(Vec::new()),
    });
    let sink = {
        let shared = shared.clone();
        Box::new(move |ev| events::event(ev, &shared))
    };
    let Some(host) = stdio::start_host(config, "zot mcp", false, sink) else {
        return 1;
    };
    if exit_on_shutdown {
        // A signal ends the open subscriptions gracefully (docs/protocol.md
        // §8.4.2 rule 6), then stops every extension.
        let (host, shared) = (host.clone(), shared.clone());
        let _ = crate::signals::on_termination(move |sig| {
            modern::end_all(&shared);
            stdio::flush(&shared.out);
            host.shutdown();
            std::process::exit(crate::signals::exit_code(sig));
        });
    }
    // Messages are read once the initial load is over, so that the first
    // tools/list already sees every extension's tools.
    if let Ok(r) = host.wait_ready() {
        let listed: Vec<_> = host.list().map(|l| l.extensions.into_iter().filter(|e| e.kind == "mcp").collect()).unwrap_or_default();
        let servers: Vec<String> = listed.iter().map(|e| e.name.clone()).collect();
        eprintln!("zot mcp: {}", strip_controls(&r.ready_line(&servers)));
        let starting: Vec<String> = listed.into_iter().filter(|e| e.state == State::Starting).map(|e| e.name).collect();
        if let Some(line) = LoadReport::starting_line(&starting) {
            eprintln!("zot mcp: {}", strip_controls(&line));
        }
    }
    let server = Server { host: host.clone(), shared: shared.clone() };

    let mut lines = Lines::default();
    while let Some(line) = lines.next(&mut input) {
        let text = match line {
            Line::Text(t) => t,
            Line::TooLong => {
                let msg = format!("parse error: message longer than {} bytes", stdio::MAX_LINE);
                Reply::new(&shared, &Sink::Direct, None).err(codes::PARSE_ERROR, &msg, None);
                continue;
            }
        };
        server.line(text);
    }
    // End of input: answer what was accepted (each bounded by its own
    // timeout), stop every extension, flush, exit.
    shared.pending.wait_idle();
    host.shutdown();
    stdio::flush(&shared.out);
    if exit_on_shutdown {
        std::process::exit(0);
    }
    drop((server, shared, host));
    let _ = writer.join();
    0
}

struct Server {
    host: Arc<Host>,
    shared: Arc<Shared>,
}

impl Server {
    fn line(&self, text: &[u8]) {
        // Ids are kept as their JSON text (an integer beyond 64 bits is
        // echoed digit for digit).
        let v: Message = match serde_json::from_slice(text) {
            Ok(v) => v,
            // A client's invalid text is refused, never repaired (docs/protocol.md §2).
            Err(e) => {
                let msg = format!("parse error: {e}");
                return Reply::new(&self.shared, &Sink::Direct, None).err(codes::PARSE_ERROR, &msg, None);
            }
        };
        match v {
            // 2026-07-28 has no batches; a batch as the first frame is legacy.
            Message::Batch(_) if self.shared.modern() => Reply::new(&self.shared, &Sink::Direct, None).err(
                codes::INVALID_REQUEST,
                "invalid request: batches are not accepted on a 2026-07-28 connection",
                None,
            ),
            Message::Batch(items) if items.is_empty() => Reply::new(&self.shared, &Sink::Direct, None).err(
                codes::INVALID_REQUEST,
                "invalid request: empty batch",
                None,
            ),
            Message::Batch(items) => {
                let _ = self.shared.gate.era.compare_exchange(UNDECIDED, LEGACY, Ordering::SeqCst, Ordering::SeqCst);
                let batch = Arc::new(Batch { state: Mutex::new((items.len(), Vec::new())) });
                let sink = Sink::Batch(batch);
                for item in items {
                    self.message(item, &sink);
                }
            }
            Message::One(v) => self.message(v, &Sink::Direct),
        }
    }

    /// One JSON-RPC message: a request, a notification, or a response (to
    /// nothing: this server sends no requests).
    fn message(&self, v: Element, sink: &Sink) {
        let reply = Reply::new(&self.shared, sink, None);
        let Element::Object(mut k) = v else {
            return reply.err(codes::INVALID_REQUEST, "invalid request: a message must be a JSON object", None);
        };
        k.target_to_rest();
        let mut m = k.rest;
        let (has_id, id) = match k.id {
            IdField::Absent => (false, Err(false)),
            IdField::Id(id) => (true, Ok(id)),
            IdField::Other(_) => (true, Err(true)),
        };
        let version_ok = m.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        let method = match m.remove("method") {
            Some(Value::String(s)) => s,
            Some(_) => return invalid(reply, id.ok(), "`method` must be a string"),
            None if has_id && (m.contains_key("result") || m.contains_key("error")) => return,
            None => return invalid(reply, id.ok(), "missing `method`"),
        };
        let params = match m.remove("params") {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(p)) => Ok(p),
            Some(Value::Array(_)) => Err(false),
            Some(_) => Err(true),
        };
        let id = match id {
            Ok(id) => id,
            Err(false) => {
                if let (true, Ok(params)) = (version_ok, params) {
                    self.notification(&method, params, &k.request_id);
                }
                return;
            }
            Err(true) => return invalid(reply, None, "`id` must be a string or a number"),
        };
        let key = id_key(&id);
        let reply = reply.with_id(id);
        if !version_ok {
            return invalid(reply, None, "`jsonrpc` must be \"2.0\"");
        }
        let params = match params {
            Ok(p) => p,
            Err(true) => return invalid(reply, None, "`params` must be an object"),
            Err(false) => return bad_params(reply, "`params` must be an object, not an array"),
        };
        // An id in use is not a valid request (rule 4a): answered before the
        // envelope's checks. An open subscription's id stays in use.
        let fresh = match self.shared.flights.lock() {
            Ok(mut f) if !f.contains_key(&key) => {
                f.insert(key.clone(), Flight::default());
                true
            }
            _ => false,
        };
        if !fresh {
            return invalid(reply, None, &format!("request id {key} is already in use"));
        }
        let mut reply = reply;
        reply.key = Some(key);
        let era = modern::decide(&self.shared, &method, &params);
        let mut notes = None;
        if era == MODERN_ERA {
            // The reply was made before the era was known.
            reply = reply.modern();
            if method == "initialize" {
                return modern::refuse_initialize(reply, &params);
            }
            match modern::check(&method, &params, reply) {
                Some((r, level)) => (reply, notes) = (r, level),
                None => return,
            }
        } else if method != "initialize" && modern::has_pv(&params) {
            return invalid(reply, None, "this connection serves the handshake era; requests carrying the 2026-07-28 envelope are not accepted on it");
        }
        if let Some(level) = notes {
            self.route_notes(&method, &params, reply.key(), level);
        }
        self.request(&method, params, reply);
    }

    /// A modern `tools/call` or `prompts/get` whose envelope has a
    /// `logLevel`: the notes of the extension that runs it come back inside
    /// it (docs/protocol.md §8.4.2 rule 9). Its owner is looked up by the
    /// dispatcher, never waited for here: the reader goes on reading. The
    /// look-up is asked before the request itself, and the dispatcher
    /// answers in order, so the owner is known before the call can note.
    fn route_notes(&self, method: &str, params: &Map<String, Value>, key: &str, level: u8) {
        let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_string) else { return };
        let tool = match method {
            "tools/call" => true,
            "prompts/get" => false,
            _ => return,
        };
        let (key, shared) = (key.to_string(), self.shared.clone());
        // The owner, or the extension a call parked for its restart will run on.
        self.host.submit(Request::Owner { name, tool }, move |r| {
            let Ok(Response::Owner(ext)) = r else { return };
            if let (Some(ext), Ok(mut f)) = (ext, shared.flights.lock()) {
                if let Some(f) = f.get_mut(&key) {
                    f.notes = Some((ext, level));
                }
            }
        });
    }

    /// `request_id` is `params.requestId` as its JSON text, when there is one.
    fn notification(&self, method: &str, params: Map<String, Value>, request_id: &IdField) {
        match method {
            // Notifications flow from the `initialize` answer on (they are
            // not requests, which MCP holds back until this one).
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                // Compared as text: 2^64+1 is not 2^64.
                let IdField::Id(id) = request_id else { return };
                let key = id_key(id);
                if modern::cancel(&self.shared, &key) {
                    return;
                }
                let host = &self.host;
                let found = self.shared.cancel(
                    &key,
                    |tool_id| host.submit(Request::CancelTool { tool_id: tool_id.to_string() }, |_| {}),
                    |read| host.submit(Request::Cancel { key: read }, |_| {}),
                );
                if found {
                    let why = params.get("reason").and_then(Value::as_str).unwrap_or("no reason given");
                    self.shared.log(DEBUG, "zot", json!(format!("request {key} cancelled by the client: {why}")));
                }
            }
            // Everything else (progress, roots/list_changed, unknown ones)
            // needs nothing from this server; notifications get no answer.
            _ => {}
        }
    }

    fn request(&self, method: &str, mut p: Map<String, Value>, reply: Reply) {
        match method {
            "initialize" => {
                let requested = match p.get("protocolVersion") {
                    Some(Value::String(v)) => v.clone(),
                    _ => return bad_params(reply, "missing string param `protocolVersion`"),
                };
                let version = negotiate(&requested);
                let client = p.get("clientInfo").and_then(|c| c.get("name")).and_then(Value::as_str).unwrap_or("?");
                eprintln!(
                    "zot mcp: initialize from {} (asked {}, speaking {version})",
                    strip_controls(client),
                    strip_controls(&requested)
                );
                let mut reply = reply;
                reply.opens = true;
                reply.ok(json!({
                    "protocolVersion": version,
                    "capabilities": {
                        "tools": {"listChanged": true},
                        "prompts": {"listChanged": true},
                        "resources": {"listChanged": true},
                        "logging": {},
                    },
                    "serverInfo": {"name": "zot", "version": crate::VERSION},
                    "instructions": INSTRUCTIONS,
                }));
            }
            "ping" => reply.ok(json!({})),
            "server/discover" if self.shared.modern() => reply.ok(modern::discover()),
            "subscriptions/listen" if self.shared.modern() => modern::listen(&self.shared, &p, reply),
            "logging/setLevel" => match p.get("level").and_then(Value::as_str).and_then(level_index) {
                Some(l) => {
                    self.shared.gate.level.store(l, Ordering::SeqCst);
                    reply.ok(json!({}));
                }
                None => bad_params(reply, &format!("param `level` must be one of {}", LEVELS.join(", "))),
            },
            "tools/list" | "prompts/list" => {
                if !matches!(p.get("cursor"), None | Some(Value::String(_) | Value::Null)) {
                    return bad_params(reply, "param `cursor` must be a string");
                }
                let tools = method == "tools/list";
                let fresh = if self.shared.modern() { modern::uncached } else { |v| v };
                self.host.submit(
                    Request::List,
                    move |r: Result<Response, HostError>| match r {
                        Ok(Response::List(l)) if tools => reply.ok(fresh(tools_list(&l))),
                        Ok(Response::List(l)) => reply.ok(fresh(prompts_list(&l))),
                        Ok(other) => internal(reply, &format!("unexpected response {other:?}")),
                        Err(e) => internal(reply, &e.to_string()),
                    },
                );
            }
            "tools/call" => {
                let name = match p.remove("name") {
                    Some(Value::String(n)) => n,
                    _ => return bad_params(reply, "missing string param `name`"),
                };
                let args = match p.remove("arguments") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(a @ Value::Object(_)) => a,
                    Some(_) => return bad_params(reply, "param `arguments` must be an object"),
                };
                let key = reply.key().to_string();
                if self.shared.cancelled(&key) {
                    return;
                }
                let tool_id = format!("mcp-{}", self.shared.seq.fetch_add(1, Ordering::Relaxed) + 1);
                let shared = self.shared.clone();
                // The client's progress token: a tool's progress (an MCP
                // server's) comes back to it as notifications/progress.
                let progress_key = p.get("_meta").and_then(|m| m.get("progressToken")).and_then(crate::protocol::WireId::from_value);
                let call = ToolCall { name: name.clone(), args: Some(args), tool_id: Some(tool_id.clone()), as_model: true, progress_key, ..Default::default() };
                // The chain, the `tool_call` event, the call and the
                // `tool_result` event all run in the host, as for every
                // caller (docs/protocol.md §8.3); the answer comes back on its
                // dispatcher thread.
                self.shared.log(DEBUG, "zot", json!(format!("tools/call {name}: calling the tool (tool_id {tool_id})")));
                self.shared.start_tool(&key, &tool_id, || {
                    let done = Responder::new(move |r: Result<Response, HostError>| match r {
                        Ok(Response::Tool(t)) => {
                            if let Some(reason) = &t.blocked {
                                shared.log(DEBUG, "zot", json!(format!("tools/call {name}: blocked: {reason}")));
                            }
                            reply.ok(tool_result(&t))
                        }
                        Ok(other) => reply.ok(error_result(&format!("internal error: unexpected response {other:?}"))),
                        Err(HostError::UnknownTool(_)) => bad_params(reply, &format!("unknown tool {name:?}")),
                        Err(e @ HostError::NotOffered { .. }) => bad_params(reply, &e.to_string()),
                        Err(e) => reply.ok(error_result(&e.to_string())),
                    });
                    self.host.submit_responder(Request::ToolCall(call), done);
                });
            }
            "resources/list" | "resources/templates/list" => {
                if !matches!(p.get("cursor"), None | Some(Value::String(_) | Value::Null)) {
                    return bad_params(reply, "param `cursor` must be a string");
                }
                let templates = method == "resources/templates/list";
                let fresh = if self.shared.modern() { modern::uncached } else { |v| v };
                self.host.submit(Request::Resources, move |r: Result<Response, HostError>| match r {
                    Ok(Response::Resources(l)) if templates => reply.ok(fresh(templates_list(&l))),
                    Ok(Response::Resources(l)) => reply.ok(fresh(resources_list(&l))),
                    Ok(other) => internal(reply, &format!("unexpected response {other:?}")),
                    Err(e) => internal(reply, &e.to_string()),
                });
            }
            "resources/read" => {
                let uri = match p.remove("uri") {
                    Some(Value::String(u)) => u,
                    _ => return bad_params(reply, "missing string param `uri`"),
                };
                let key = reply.key().to_string();
                let read = self.shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
                // Cancellable as a call is: the key is recorded before a
                // cancel can look for it.
                self.shared.start_read(&key, read, || {
                    let asked = uri.clone();
                    let done = Responder::new(move |r: Result<Response, HostError>| match r {
                        Ok(Response::Resource(c)) => reply.ok(read_result(&c)),
                        Ok(other) => internal(reply, &format!("unexpected response {other:?}")),
                        Err(e @ (HostError::UnknownResource(_) | HostError::ReadFailed { .. })) => {
                            reply.err(RESOURCE_NOT_FOUND, &e.to_string(), Some(json!({"uri": asked})))
                        }
                        Err(e) => internal(reply, &e.to_string()),
                    })
                    .with_key(read);
                    self.host.submit_responder(Request::ReadResource { uri }, done);
                });
            }
            "prompts/get" => {
                let name = match p.remove("name") {
                    Some(Value::String(n)) => n,
                    _ => return bad_params(reply, "missing string param `name`"),
                };
                let args = match p.remove("arguments") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::Object(mut a)) => match a.remove("args") {
                        None | Some(Value::Null) => String::new(),
                        Some(Value::String(s)) => s,
                        Some(_) => return bad_params(reply, "argument `args` must be a string"),
                    },
                    Some(_) => return bad_params(reply, "param `arguments` must be an object"),
                };
                let req = Request::Command { name: name.clone(), args };
                self.host.submit(
                    req,
                    move |r: Result<Response, HostError>| match r {
                        Ok(Response::Command(c)) => prompt_result(reply, &name, c),
                        Ok(other) => internal(reply, &format!("unexpected response {other:?}")),
                        Err(HostError::UnknownCommand(_)) => bad_params(reply, &format!("unknown prompt {name:?}")),
                        Err(e @ HostError::NotOffered { .. }) => bad_params(reply, &e.to_string()),
                        Err(e) => internal(reply, &e.to_string()),
                    },
                );
            }
            "zot/reload" => {
                let shared = self.shared.clone();
                self.host.submit(
                    Request::Reload,
                    move |r: Result<Response, HostError>| match r {
                        Ok(Response::Reload(rep)) => {
                            shared.lists_changed();
                            reply.ok(serde_json::to_value(rep).unwrap_or_default());
                        }
                        Ok(other) => internal(reply, &format!("unexpected response {other:?}")),
                        Err(e) => internal(reply, &e.to_string()),
                    },
                );
            }
            other => {
                let msg = format!("method not found: {other:?}");
                reply.err(codes::METHOD_NOT_FOUND, &msg, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(negotiate("2024-11-05"), "2024-11-05");
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2025-11-25"), "2025-11-25");
        assert_eq!(negotiate("1999-01-01"), PROTOCOL_VERSIONS[0]);
    }
}
