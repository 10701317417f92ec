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
//!
//! Requests are handled as they arrive and answered as each completes.
//! Lenient where the specification allows: requests before `initialize`
//! are answered normally (but no notification is sent before it), and a
//! JSON-RPC batch (an array) is accepted and answered with an array.

use crate::host::{
    CommandReply, Config, Host, HostError, HostEvent, Listing, Request, Response, ToolCall, ToolReply,
};
use crate::stdio::{self, Done, Line, Lines, Out, Pending};
use crate::text::strip_controls;
use crossbeam_channel::Sender;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// The MCP revisions this server speaks, newest first. `initialize` answers
/// with the client's requested revision when it is one of these, else with
/// the newest. Their differences do not touch what this server implements
/// (tools, prompts, logging, ping, cancellation, list_changed); batches,
/// which only 2025-03-26 requires, are accepted whatever the revision.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// JSON-RPC 2.0 error codes used by `zot mcp`.
pub mod codes {
    /// Not JSON (answered with `"id": null`).
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request object (no `method`, bad `id`, wrong `jsonrpc`).
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Missing or mistyped params, an unknown tool or prompt, an unknown level.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A command that answered with an `error`, or a host error while
    /// getting a prompt (the message says which).
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// MCP's log levels (RFC 5424 severities), least severe first.
const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const DEBUG: u8 = 0;
const INFO: u8 = 1;
const NOTICE: u8 = 2;
const WARNING: u8 = 3;
const ERROR: u8 = 4;

/// The revision `initialize` answers with when the client asked for `requested`.
pub fn negotiate(requested: &str) -> &'static str {
    PROTOCOL_VERSIONS.iter().copied().find(|v| *v == requested).unwrap_or(PROTOCOL_VERSIONS[0])
}

/// The MCP level of a zot `notify` level: info→info, success→notice,
/// warn→warning, error→error; anything else is info.
pub fn notify_level(level: &str) -> &'static str {
    LEVELS[usize::from(zot_level(level))]
}

fn zot_level(level: &str) -> u8 {
    match level {
        "success" => NOTICE,
        "warn" | "warning" => WARNING,
        "error" => ERROR,
        _ => INFO,
    }
}

/// Whether notifications may be sent yet, and from which level.
struct Gate {
    open: AtomicBool,
    level: AtomicU8,
}

impl Gate {
    fn allows(&self, level: u8) -> bool {
        self.open.load(Ordering::SeqCst) && level >= self.level.load(Ordering::SeqCst)
    }
}

/// A request being handled.
#[derive(Default)]
struct Flight {
    cancelled: bool,
    /// Set once the tool call went to the host (`tools/call` only).
    tool_id: Option<String>,
}

/// State shared by the reader, the `tools/call` threads and the responders
/// (which run on the host's dispatcher thread, so nothing here holds the
/// host).
struct Shared {
    out: Sender<Out>,
    gate: Arc<Gate>,
    flights: Mutex<HashMap<String, Flight>>,
    pending: Arc<Pending>,
    seq: AtomicU64,
}

impl Shared {
    fn send(&self, line: Vec<u8>) {
        let _ = self.out.send(Out::Line(line));
    }

    /// A notification, when the gate is open.
    fn notify(&self, method: &str, params: Value) {
        if self.gate.open.load(Ordering::SeqCst) {
            self.send(encode(&notification(method, params)));
        }
    }

    /// A `notifications/message`, when its level passes.
    fn log(&self, level: u8, logger: &str, data: Value) {
        if self.gate.allows(level) {
            self.send(encode(&log_message(level, logger, data)));
        }
    }

    fn lists_changed(&self) {
        self.notify("notifications/tools/list_changed", json!({}));
        self.notify("notifications/prompts/list_changed", json!({}));
    }

    fn cancelled(&self, key: &str) -> bool {
        self.flights.lock().map(|f| f.get(key).is_some_and(|f| f.cancelled)).unwrap_or(false)
    }

    /// Runs `start` (which hands the tool call to the host) and records
    /// `tool_id`, unless the request was cancelled; under the lock, so that
    /// a cancel either comes first or finds the tool id.
    fn start_tool(&self, key: &str, tool_id: &str, start: impl FnOnce()) -> bool {
        let Ok(mut flights) = self.flights.lock() else { return false };
        match flights.get_mut(key) {
            Some(f) if !f.cancelled => {
                start();
                f.tool_id = Some(tool_id.to_string());
                true
            }
            _ => false,
        }
    }

    /// Marks the request cancelled; `cancel_tool` runs, under the lock, with
    /// the tool id when its tool call is with the host.
    fn cancel(&self, key: &str, cancel_tool: impl FnOnce(&str)) -> bool {
        let Ok(mut flights) = self.flights.lock() else { return false };
        let Some(f) = flights.get_mut(key) else { return false };
        f.cancelled = true;
        if let Some(t) = &f.tool_id {
            cancel_tool(t);
        }
        true
    }
}

/// Where a response goes: straight out, or into the answer to a batch.
#[derive(Clone)]
enum Sink {
    Direct,
    Batch(Arc<Batch>),
}

struct Batch {
    /// Elements not answered yet, and the answers so far.
    state: Mutex<(usize, Vec<Value>)>,
}

/// The answer to one message, sent when dropped: to the sink, unless the
/// request was cancelled (MCP: no response to a cancelled request). Every
/// message gets one (a notification's carries nothing), so a batch knows
/// when it is complete and shutdown when everything is answered.
struct Reply {
    shared: Arc<Shared>,
    sink: Sink,
    id: Value,
    /// Key in the flights table.
    key: Option<String>,
    msg: Option<Value>,
    /// The `initialize` answer: opens the gate once written.
    opens: bool,
    _done: Done,
}

impl Reply {
    fn new(shared: &Arc<Shared>, sink: &Sink, id: Value) -> Reply {
        let done = shared.pending.begin();
        Reply { shared: shared.clone(), sink: sink.clone(), id, key: None, msg: None, opens: false, _done: done }
    }

    fn with_id(mut self, id: Value) -> Reply {
        self.id = id;
        self
    }

    fn ok(mut self, result: Value) {
        self.msg = Some(json!({"jsonrpc": "2.0", "id": self.id, "result": result}));
    }

    fn err(mut self, code: i64, message: &str, data: Option<Value>) {
        self.msg = Some(error_message(&self.id, code, message, data));
    }

    fn key(&self) -> &str {
        self.key.as_deref().unwrap_or("")
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        let mut msg = self.msg.take();
        if let Some(key) = &self.key {
            let flight = self.shared.flights.lock().ok().and_then(|mut f| f.remove(key));
            if flight.is_some_and(|f| f.cancelled) {
                msg = None;
            }
        }
        match &self.sink {
            Sink::Direct => {
                if let Some(m) = msg {
                    let _ = self.shared.out.send(Out::Line(encode(&m)));
                    // Notifications may flow once the `initialize` answer is
                    // queued: whatever is queued after it is written after it.
                    if self.opens {
                        self.shared.gate.open.store(true, Ordering::SeqCst);
                    }
                }
            }
            Sink::Batch(b) => {
                if self.opens && msg.is_some() {
                    self.shared.gate.open.store(true, Ordering::SeqCst);
                }
                let Ok(mut st) = b.state.lock() else { return };
                st.0 -= 1;
                st.1.extend(msg);
                // JSON-RPC: a batch of notifications only gets nothing back.
                if st.0 == 0 && !st.1.is_empty() {
                    self.shared.send(encode(&Value::Array(std::mem::take(&mut st.1))));
                }
            }
        }
    }
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
pub fn serve<R: BufRead, W: Write + Send + 'static>(config: Config, mut input: R, output: W, exit_on_shutdown: bool) -> i32 {
    let Some((out_tx, writer)) = stdio::start_writer("zot mcp", output) else {
        return 1;
    };
    let gate = Arc::new(Gate { open: AtomicBool::new(false), level: AtomicU8::new(INFO) });
    let sink = {
        let (gate, out) = (gate.clone(), out_tx.clone());
        Box::new(move |ev| {
            for line in event_lines(ev, &gate) {
                let _ = out.send(Out::Line(line));
            }
        })
    };
    let Some(host) = stdio::start_host(config, "zot mcp", exit_on_shutdown, sink) else {
        return 1;
    };
    // Messages are read once the initial load is over, so that the first
    // tools/list already sees every extension's tools.
    if let Ok(r) = host.wait_ready() {
        let names = if r.ready.is_empty() { "none".to_string() } else { r.ready.join(", ") };
        eprintln!("zot mcp: {} extension(s) ready: {}", r.ready.len(), strip_controls(&names));
    }
    let shared = Arc::new(Shared {
        out: out_tx,
        gate,
        flights: Mutex::new(HashMap::new()),
        pending: Arc::new(Pending::default()),
        seq: AtomicU64::new(0),
    });
    let server = Server { host: host.clone(), shared: shared.clone() };

    let mut lines = Lines::default();
    while let Some(line) = lines.next(&mut input) {
        let text = match line {
            Line::Text(t) => t,
            Line::TooLong => {
                let msg = format!("parse error: message longer than {} bytes", stdio::MAX_LINE);
                Reply::new(&shared, &Sink::Direct, Value::Null).err(codes::PARSE_ERROR, &msg, None);
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
        let v: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(e) => {
                let msg = format!("parse error: {e}");
                return Reply::new(&self.shared, &Sink::Direct, Value::Null).err(codes::PARSE_ERROR, &msg, None);
            }
        };
        match v {
            Value::Array(items) if items.is_empty() => Reply::new(&self.shared, &Sink::Direct, Value::Null).err(
                codes::INVALID_REQUEST,
                "invalid request: empty batch",
                None,
            ),
            Value::Array(items) => {
                let batch = Arc::new(Batch { state: Mutex::new((items.len(), Vec::new())) });
                let sink = Sink::Batch(batch);
                for item in items {
                    self.message(item, &sink);
                }
            }
            v => self.message(v, &Sink::Direct),
        }
    }

    /// One JSON-RPC message: a request, a notification, or a response (to
    /// nothing: this server sends no requests).
    fn message(&self, v: Value, sink: &Sink) {
        let reply = Reply::new(&self.shared, sink, Value::Null);
        let Value::Object(mut m) = v else {
            return reply.err(codes::INVALID_REQUEST, "invalid request: a message must be a JSON object", None);
        };
        let id = m.remove("id");
        let version_ok = m.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        let method = match m.remove("method") {
            Some(Value::String(s)) => s,
            Some(_) => return invalid(reply, id, "`method` must be a string"),
            None if id.is_some() && (m.contains_key("result") || m.contains_key("error")) => return,
            None => return invalid(reply, id, "missing `method`"),
        };
        let params = match m.remove("params") {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(p)) => Ok(p),
            Some(Value::Array(_)) => Err(false),
            Some(_) => Err(true),
        };
        let Some(id) = id else {
            if let (true, Ok(params)) = (version_ok, params) {
                self.notification(&method, params);
            }
            return;
        };
        if !matches!(id, Value::String(_) | Value::Number(_)) {
            return invalid(reply, None, "`id` must be a string or a number");
        }
        let mut reply = reply.with_id(id);
        if !version_ok {
            return invalid(reply, None, "`jsonrpc` must be \"2.0\"");
        }
        let params = match params {
            Ok(p) => p,
            Err(true) => return invalid(reply, None, "`params` must be an object"),
            Err(false) => return bad_params(reply, "`params` must be an object, not an array"),
        };
        let key = id_key(&reply.id);
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
        reply.key = Some(key);
        self.request(&method, params, reply);
    }

    fn notification(&self, method: &str, params: Map<String, Value>) {
        match method {
            // Notifications flow from the `initialize` answer on (they are
            // not requests, which MCP holds back until this one).
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let key = match params.get("requestId") {
                    Some(id @ (Value::String(_) | Value::Number(_))) => id_key(id),
                    _ => return,
                };
                let host = &self.host;
                let found = self.shared.cancel(&key, |tool_id| {
                    host.submit(Request::CancelTool { tool_id: tool_id.to_string() }, |_| {});
                });
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
                        "logging": {},
                    },
                    "serverInfo": {"name": "zot", "version": crate::cli::VERSION},
                    "instructions": "Tools and prompts of zot extensions. A prompt is an extension's slash command; its one argument, args, is the text after the command name.",
                }));
            }
            "ping" => reply.ok(json!({})),
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
                self.host.submit(
                    Request::List,
                    move |r: Result<Response, HostError>| match r {
                        Ok(Response::List(l)) if tools => reply.ok(tools_list(&l)),
                        Ok(Response::List(l)) => reply.ok(prompts_list(&l)),
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
                let call = ToolCall { name: name.clone(), args: Some(args), tool_id: Some(tool_id.clone()), as_model: true, ..Default::default() };
                // The chain, the event and the call all run in the host; the
                // answer comes back on its dispatcher thread.
                self.shared.log(DEBUG, "zot", json!(format!("tools/call {name}: calling the tool (tool_id {tool_id})")));
                self.shared.start_tool(&key, &tool_id, || {
                    self.host.submit(Request::ToolCall(call), move |r: Result<Response, HostError>| match r {
                        Ok(Response::Tool(t)) => {
                            if let Some(reason) = &t.blocked {
                                shared.log(DEBUG, "zot", json!(format!("tools/call {name}: blocked: {reason}")));
                            }
                            reply.ok(tool_result(&t))
                        }
                        Ok(other) => reply.ok(error_result(&format!("internal error: unexpected response {other:?}"))),
                        Err(HostError::UnknownTool(_)) => bad_params(reply, &format!("unknown tool {name:?}")),
                        Err(e) => reply.ok(error_result(&e.to_string())),
                    });
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

fn tools_list(l: &Listing) -> Value {
    // A deferred tool is offered once a result activates it.
    let tools: Vec<Value> = l
        .tools
        .iter()
        .filter(|t| t.active)
        .map(|t| {
            let mut schema = t.schema.clone();
            // MCP wants an object schema; a registered schema without a
            // `type` gets `"type": "object"`, nothing else changes.
            if let Value::Object(s) = &mut schema {
                s.entry("type").or_insert_with(|| json!("object"));
            }
            let mut tool = json!({"name": t.name, "description": t.description, "inputSchema": schema});
            if let Some(o) = &t.output_schema {
                tool["outputSchema"] = o.clone();
            }
            tool
        })
        .collect();
    json!({ "tools": tools })
}

fn prompts_list(l: &Listing) -> Value {
    let prompts: Vec<Value> = l
        .commands
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "description": c.description,
                "arguments": [{
                    "name": "args",
                    "description": format!("the text after /{}", c.name),
                    "required": false,
                }],
            })
        })
        .collect();
    json!({ "prompts": prompts })
}

/// A command's answer as `prompts/get` result: the prompt, insert or
/// display text (an open panel as its title, lines and footer; nothing for
/// noop) as one user message.
fn prompt_result(reply: Reply, name: &str, c: CommandReply) {
    if let Some(e) = c.error {
        return reply.err(codes::INTERNAL_ERROR, &e, Some(json!({"extension": c.extension, "prompt": name})));
    }
    let text = match c.action.as_str() {
        // The tool it names is not run: an MCP prompt is text only.
        "prompt" | "tool_prompt" => c.prompt,
        "insert" => c.insert,
        "display" => c.display,
        "open_panel" => c.open_panel.map(|p| {
            let mut parts = vec![p.title];
            parts.extend(p.lines);
            parts.push(p.footer);
            parts.retain(|s| !s.is_empty());
            parts.join("\n")
        }),
        _ => None,
    };
    let messages: Vec<Value> =
        text.into_iter().map(|t| json!({"role": "user", "content": {"type": "text", "text": t}})).collect();
    let description = format!("/{name} of extension {} ({})", c.extension, c.action);
    reply.ok(json!({"description": description, "messages": messages}))
}

/// An extension's tool result as MCP's: text and image blocks mapped, any
/// other block as the text of its JSON.
fn tool_result(t: &ToolReply) -> Value {
    let content: Vec<Value> = t
        .content
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or("")}),
            Some("image") => json!({
                "type": "image",
                "data": b.get("data").and_then(Value::as_str).unwrap_or(""),
                "mimeType": b.get("mime_type").and_then(Value::as_str).unwrap_or("application/octet-stream"),
            }),
            _ => json!({"type": "text", "text": b.to_string()}),
        })
        .collect();
    let mut result = json!({"content": content, "isError": t.is_error});
    if let Some(sc) = &t.structured_content {
        result["structuredContent"] = sc.clone();
    }
    result
}

fn error_result(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

fn bad_params(reply: Reply, message: &str) {
    reply.err(codes::INVALID_PARAMS, &format!("invalid params: {message}"), None);
}

fn internal(reply: Reply, message: &str) {
    reply.err(codes::INTERNAL_ERROR, message, None);
}

/// -32600, with `id` when it is a usable one (else the reply's own id).
fn invalid(reply: Reply, id: Option<Value>, message: &str) {
    let reply = match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => reply.with_id(id),
        _ => reply,
    };
    reply.err(codes::INVALID_REQUEST, &format!("invalid request: {message}"), None);
}

fn level_index(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).and_then(|i| u8::try_from(i).ok())
}

/// The flights-table key of a request id: `7` and `"7"` are different ids.
fn id_key(id: &Value) -> String {
    id.to_string()
}

fn error_message(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(d) = data {
        error["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn log_message(level: u8, logger: &str, data: Value) -> Value {
    let level = LEVELS[usize::from(level).min(LEVELS.len() - 1)];
    notification("notifications/message", json!({"level": level, "logger": logger, "data": data}))
}

fn encode(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    b.push(b'\n');
    b
}

/// A host event as MCP notifications (none while the gate is closed or
/// below the level); load failures and exits also go to stderr.
fn event_lines(ev: HostEvent, gate: &Gate) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut log = |level: u8, logger: &str, data: String| {
        if gate.allows(level) {
            out.push(encode(&log_message(level, logger, json!(data))));
        }
    };
    match ev {
        HostEvent::Notify { extension, level, message } => {
            if !gate.open.load(Ordering::SeqCst) {
                eprintln!("zot mcp: [{}] {level}: {}", strip_controls(&extension), strip_controls(&message));
            }
            log(zot_level(&level), &extension, message);
        }
        HostEvent::LoadFailed { extension, message, .. } => {
            eprintln!("zot mcp: {}", strip_controls(&message));
            log(ERROR, &extension, message);
        }
        HostEvent::Exited { extension, code, signal } => {
            let how = match (code, signal) {
                (_, Some(s)) => format!("killed by signal {s}"),
                (Some(c), None) => format!("exit code {c}"),
                (None, None) => "exit status unknown".into(),
            };
            let msg = format!("extension {extension} exited ({how}); its tools and prompts are gone");
            eprintln!("zot mcp: {}", strip_controls(&msg));
            log(WARNING, &extension, msg);
            if gate.open.load(Ordering::SeqCst) {
                out.push(encode(&notification("notifications/tools/list_changed", json!({}))));
                out.push(encode(&notification("notifications/prompts/list_changed", json!({}))));
            }
        }
        HostEvent::Submit { extension, text } => {
            log(DEBUG, &extension, format!("asked to submit a prompt (not supported over MCP): {text}"));
        }
        HostEvent::ExtensionRestarting { extension, attempt, delay_ms, .. } => {
            log(WARNING, &extension, format!("extension {extension} exited; restart {attempt} in {delay_ms} ms"));
        }
        HostEvent::ExtensionCrashLoop { extension, restarts } => {
            let msg = format!("extension {extension} gave up after {restarts} restarts (crash loop); see 'zot ext logs {extension}'");
            eprintln!("zot mcp: {}", strip_controls(&msg));
            log(ERROR, &extension, msg);
        }
        HostEvent::ToolsChanged { .. } => {
            if gate.open.load(Ordering::SeqCst) {
                out.push(encode(&notification("notifications/tools/list_changed", json!({}))));
            }
        }
        HostEvent::UntrustedProject { dir, extensions } => {
            eprintln!("zot mcp: {}", strip_controls(&crate::trust::not_loaded_line(&dir, &extensions)));
        }
        HostEvent::Ready { .. }
        | HostEvent::ExtensionReady { .. }
        | HostEvent::SubmitSlash { .. }
        | HostEvent::CallTool { .. }
        | HostEvent::CallToolCancel { .. }
        | HostEvent::ClearNotes { .. }
        | HostEvent::OpenPanel { .. }
        | HostEvent::PanelRender { .. }
        | HostEvent::PanelClose { .. } => {}
    }
    out
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

    #[test]
    fn levels() {
        assert_eq!(notify_level("info"), "info");
        assert_eq!(notify_level("success"), "notice");
        assert_eq!(notify_level("warn"), "warning");
        assert_eq!(notify_level("error"), "error");
        assert_eq!(notify_level("???"), "info");
        assert_eq!(level_index("debug"), Some(0));
        assert_eq!(level_index("emergency"), Some(7));
        assert_eq!(level_index("loud"), None);
    }

    #[test]
    fn tool_blocks() {
        let t = ToolReply {
            extension: "x".into(),
            content: vec![
                json!({"type": "text", "text": "hi"}),
                json!({"type": "image", "mime_type": "image/png", "data": "AAAA"}),
                json!({"type": "weird", "n": 1}),
            ],
            is_error: true,
            ..Default::default()
        };
        let r = tool_result(&t);
        assert_eq!(r["isError"], true);
        assert_eq!(r["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(r["content"][1], json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}));
        assert_eq!(r["content"][2]["type"], "text");
    }
}
