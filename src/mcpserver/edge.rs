//! The edge of one MCP server's process: JSON-RPC 2.0 on its stdio
//! translated into the host's own messages, so that nothing above the
//! child knows the dialect (PROTOCOL.md §8.2, §8.3).
//!
//! From the server (the reader thread, [`Edge::incoming`]): the
//! `initialize` answer becomes `hello`, the tools and prompts it lists
//! become `register_tool` and `register_command`, the end of the first
//! listing `ready`, a `tools/call` answer `tool_result`, a `prompts/get`
//! answer `command_response`; a later listing replaces the tools
//! ([`McpMsg::Tools`]) or the prompts ([`McpMsg::Prompts`]), progress is
//! [`McpMsg::Progress`]. Its own requests are answered here (`ping`,
//! `roots/list`, refusals).
//!
//! To the server (the dispatcher's sends, [`Edge::outgoing`]): `tool_call`
//! becomes `tools/call` with a `progressToken`, `tool_cancel`
//! `notifications/cancelled`, `command_invoked` `prompts/get`; `hello_ack`
//! and `shutdown` write nothing (the stop closes stdin, MCP's shutdown).
//!
//! Request ids are this edge's own counter, so none collides with another
//! and a server's answer is matched to what was asked.

use super::config::{Roots, ServerSpec};
use super::{content, names};
use crate::child::{ChildMsg, Log};
use crate::protocol::{CommandResponse, DecodeError, ExtFrame, HostFrame, ToolMore, ToolResult};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The protocol version the host asks for.
pub const PROTOCOL: &str = "2025-11-25";

/// The versions a server may answer with.
pub const ACCEPTED: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// JSON-RPC's "method not found".
const NOT_FOUND: i64 = -32601;

/// What the edge tells the dispatcher beside frames.
#[derive(Debug)]
pub enum McpMsg {
    /// Bytes to write to the server (answers to its requests, further
    /// pages, the lists after `list_changed`).
    Write(Vec<u8>),
    /// The handshake failed; the load fails with this reason.
    Fail(String),
    /// The server listed its tools again: the whole new set.
    Tools(Vec<Tool>),
    /// The server listed its prompts again: the whole new set of commands,
    /// each with its description.
    Prompts(Vec<(String, String)>),
    /// `notifications/progress` for the tool call with host id `id`.
    Progress { id: String, progress: Value, total: Option<Value>, message: Option<String> },
}

/// A tool as offered to the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub more: ToolMore,
}

/// A prompt, offered as a command.
#[derive(Debug, Clone)]
struct Prompt {
    offered: String,
    own: String,
    /// Its arguments in declared order, and whether each is required.
    args: Vec<(String, bool)>,
}

enum Pending {
    Initialize,
    Tools,
    Prompts,
    Call { host_id: String },
    Prompt { host_id: String },
}

#[derive(Default)]
struct State {
    next: u64,
    pending: HashMap<u64, Pending>,
    /// `ready` was sent: later listings replace the tools.
    ready: bool,
    /// Initial lists still to be answered.
    outstanding: u8,
    caps: Value,
    protocol_version: Option<String>,
    server_info: Option<Value>,
    /// The tools offered, with the server's own name of each.
    tools: Vec<(Tool, String)>,
    /// Tools gathered over the pages of a listing under way.
    gathering: Option<Vec<Value>>,
    /// A `list_changed` came while a listing was under way.
    list_again: bool,
    prompts: Vec<Prompt>,
    /// Prompts gathered over the pages of a listing under way.
    prompt_pages: Option<Vec<Value>>,
    /// A prompts `list_changed` came while a listing was under way.
    prompts_again: bool,
    /// Tool calls in flight: host id → request id.
    calls: HashMap<String, u64>,
}

/// The per-process translator, shared by the reader thread and the
/// dispatcher's sends.
pub struct Edge {
    spec: Arc<ServerSpec>,
    client_version: String,
    /// `file://` URIs for `roots/list`, when the entry opts in.
    roots: Option<Vec<String>>,
    log: Log,
    emit: Box<dyn Fn(ChildMsg) + Send + Sync>,
    st: Mutex<State>,
}

/// What listings show of a server once it answered `initialize`.
#[derive(Debug, Clone, Default)]
pub struct Info {
    pub protocol_version: Option<String>,
    pub server_info: Option<Value>,
}

impl Edge {
    /// An edge for one process of `spec`; `emit` hands messages to the
    /// dispatcher; `project` is `--cwd` (for `"roots": true`).
    pub fn new(spec: Arc<ServerSpec>, client_version: &str, project: &Path, log: Log, emit: Box<dyn Fn(ChildMsg) + Send + Sync>) -> Edge {
        let uri = |p: &Path| format!("file://{}", p.display());
        let roots = match &spec.roots {
            Roots::Off => None,
            Roots::Project => Some(vec![uri(project)]),
            Roots::Dirs(d) => Some(d.iter().map(|p| uri(p)).collect()),
        };
        Edge { spec, client_version: client_version.to_string(), roots, log, emit, st: Mutex::new(State::default()) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The protocol version and server info, once known.
    pub fn info(&self) -> Info {
        let st = self.state();
        Info { protocol_version: st.protocol_version.clone(), server_info: st.server_info.clone() }
    }

    /// The `initialize` request, the first line the server reads.
    pub fn initialize(&self) -> Vec<u8> {
        let mut capabilities = Map::new();
        if self.roots.is_some() {
            capabilities.insert("roots".into(), json!({"listChanged": false}));
        }
        let params = json!({
            "protocolVersion": PROTOCOL,
            "capabilities": capabilities,
            "clientInfo": {"name": "zot", "version": self.client_version},
        });
        let mut st = self.state();
        request(&mut st, Pending::Initialize, "initialize", params)
    }

    fn send(&self, m: ChildMsg) {
        (self.emit)(m)
    }

    fn write(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.send(ChildMsg::Mcp(McpMsg::Write(bytes)));
        }
    }

    // ----- from the server ------------------------------------------------

    /// One line of the server's stdout.
    pub fn incoming(&self, line: &[u8]) {
        let m: Message = match serde_json::from_slice(line) {
            Ok(m) => m,
            Err(_) if serde_json::from_slice::<Value>(line).is_ok() => return self.junk(line, "not a JSON-RPC object"),
            Err(_) => return self.junk(line, "not JSON"),
        };
        match (m.method, m.id) {
            (Some(method), Some(id)) => self.server_request(&method, id, m.params),
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

    fn junk(&self, line: &[u8], why: &str) {
        self.log.line(&format!("skipped a stdout line ({why}): {}", crate::child::preview(line)));
    }

    fn server_request(&self, method: &str, id: Value, _params: Option<Value>) {
        let reply = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "roots/list" if self.roots.is_some() => {
                let roots: Vec<Value> = self.roots.iter().flatten().map(|u| json!({"uri": u})).collect();
                json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}})
            }
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
                self.send(ChildMsg::Mcp(McpMsg::Progress { id: token, progress, total, message }));
            }
            "notifications/tools/list_changed" => {
                let mut st = self.state();
                if !st.ready || st.gathering.is_some() {
                    st.list_again = true;
                    return;
                }
                let bytes = list_tools(&mut st, None);
                drop(st);
                self.write(bytes);
            }
            "notifications/prompts/list_changed" => {
                let mut st = self.state();
                if !st.ready || st.prompt_pages.is_some() {
                    st.prompts_again = true;
                    return;
                }
                let bytes = list_prompts(&mut st, None);
                drop(st);
                self.write(bytes);
            }
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
            "notifications/cancelled" => {}
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
            Pending::Call { host_id } => {
                st.calls.remove(&host_id);
                drop(st);
                self.call_done(host_id, result);
            }
            Pending::Prompt { host_id } => {
                drop(st);
                let r = match result {
                    Ok(r) => content::prompt_text(&r),
                    Err(e) => Err(error_text(&e)),
                };
                let resp = match r {
                    Ok(text) => CommandResponse { id: host_id, action: "prompt".into(), prompt: Some(text), ..Default::default() },
                    Err(e) => CommandResponse { id: host_id, action: "noop".into(), error: Some(e), ..Default::default() },
                };
                self.send(ChildMsg::Frame(ExtFrame::CommandResponse(resp)));
            }
        }
    }

    fn initialized(&self, result: Result<Value, Value>) {
        let r = match result {
            Ok(r) => r,
            Err(e) => return self.fail(format!("initialize failed: {}", error_text(&e))),
        };
        let version = r.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        if !ACCEPTED.contains(&version) {
            let shown = if version.is_empty() { "(none)".to_string() } else { format!("{version:?}") };
            return self.fail(format!(
                "the server answered initialize with protocol version {shown}, which this host does not speak (it speaks {})",
                ACCEPTED.join(", ")
            ));
        }
        let info = r.get("serverInfo").filter(|v| v.is_object()).cloned();
        let caps = r.get("capabilities").filter(|v| v.is_object()).cloned().unwrap_or_else(|| json!({}));
        let name = info.as_ref().and_then(|i| i.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
        let sversion = info.as_ref().and_then(|i| i.get("version")).and_then(Value::as_str).unwrap_or("").to_string();
        self.log.line(&format!("initialized: protocol {version}, server {name:?} {sversion}"));
        let (has_tools, has_prompts) = (caps.get("tools").is_some(), caps.get("prompts").is_some());
        let mut st = self.state();
        st.protocol_version = Some(version.to_string());
        st.server_info = info;
        st.caps = caps;
        let mut capabilities = vec!["tools".to_string(), "tool_cancel".to_string()];
        if has_prompts {
            capabilities.push("commands".into());
        }
        let mut out = line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        if has_tools {
            st.outstanding += 1;
            out.extend(list_tools(&mut st, None));
        }
        if has_prompts {
            st.outstanding += 1;
            out.extend(list_prompts(&mut st, None));
        }
        let done = st.outstanding == 0;
        drop(st);
        // The entry's name is the server's identity; serverInfo is listed as given.
        self.send(ChildMsg::Frame(ExtFrame::Hello { name: self.spec.name.clone(), version: sversion, capabilities }));
        self.write(out);
        if done {
            self.become_ready();
        }
    }

    fn fail(&self, why: String) {
        self.log.line(&why);
        self.send(ChildMsg::Mcp(McpMsg::Fail(why)));
    }

    /// One page of `tools/list`: the next page's request, or, at the end,
    /// the tools registered (first listing) or replaced (later ones).
    fn tools_page(&self, st: &mut State, result: Result<Value, Value>) -> Vec<u8> {
        let page = match result {
            Ok(r) => r,
            Err(e) => {
                if e.get("code").and_then(Value::as_i64) != Some(NOT_FOUND) {
                    self.log.line(&format!("tools/list failed: {}; no tools", error_text(&e)));
                }
                json!({"tools": []})
            }
        };
        if let Some(Value::Array(t)) = page.get("tools") {
            st.gathering.get_or_insert_with(Vec::new).extend(t.iter().cloned());
        }
        if let Some(c) = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()) {
            return list_tools(st, Some(c.to_string()));
        }
        let listed = st.gathering.take().unwrap_or_default();
        st.tools = self.offer(listed, st.ready);
        let mut out = Vec::new();
        if st.ready {
            let tools = st.tools.iter().map(|(t, _)| t.clone()).collect();
            self.send(ChildMsg::Mcp(McpMsg::Tools(tools)));
        } else {
            st.outstanding = st.outstanding.saturating_sub(1);
            self.maybe_ready(st);
        }
        if std::mem::take(&mut st.list_again) {
            out = list_tools(st, None);
        }
        out
    }

    fn prompts_page(&self, st: &mut State, result: Result<Value, Value>) -> Vec<u8> {
        let page = match result {
            Ok(r) => r,
            Err(e) => {
                if e.get("code").and_then(Value::as_i64) != Some(NOT_FOUND) {
                    self.log.line(&format!("prompts/list failed: {}; no prompts", error_text(&e)));
                }
                json!({"prompts": []})
            }
        };
        if let Some(Value::Array(p)) = page.get("prompts") {
            st.prompt_pages.get_or_insert_with(Vec::new).extend(p.iter().cloned());
        }
        if let Some(c) = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()) {
            return list_prompts(st, Some(c.to_string()));
        }
        let mut prompts: Vec<Prompt> = Vec::new();
        let mut commands: Vec<(String, String)> = Vec::new();
        for p in st.prompt_pages.take().unwrap_or_default() {
            let Some(own) = p.get("name").and_then(Value::as_str) else { continue };
            let offered = self.offered("prompt", own, st.ready);
            if prompts.iter().any(|q| q.offered == offered) {
                self.log.line(&format!("prompt {own:?} is shadowed: its name {offered} is taken by an earlier prompt of this server"));
                continue;
            }
            let args = match p.get("arguments") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|a| {
                        let n = a.get("name")?.as_str()?.to_string();
                        Some((n, a.get("required").and_then(Value::as_bool).unwrap_or(false)))
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let description = p.get("description").and_then(Value::as_str).unwrap_or("").to_string();
            commands.push((offered.clone(), description));
            prompts.push(Prompt { offered, own: own.to_string(), args });
        }
        st.prompts = prompts;
        if st.ready {
            self.send(ChildMsg::Mcp(McpMsg::Prompts(commands)));
        } else {
            for (name, description) in commands {
                self.send(ChildMsg::Frame(ExtFrame::RegisterCommand { name, description }));
            }
            st.outstanding = st.outstanding.saturating_sub(1);
            self.maybe_ready(st);
        }
        if std::mem::take(&mut st.prompts_again) {
            return list_prompts(st, None);
        }
        Vec::new()
    }

    fn maybe_ready(&self, st: &mut State) {
        if st.outstanding > 0 || st.ready {
            return;
        }
        for (t, _) in &st.tools {
            let (name, description, schema, more) = (t.name.clone(), t.description.clone(), t.schema.clone(), t.more.clone());
            self.send(ChildMsg::Frame(ExtFrame::RegisterTool { name, description, schema, more }));
        }
        st.ready = true;
        self.send(ChildMsg::Frame(ExtFrame::Ready));
    }

    fn become_ready(&self) {
        let mut st = self.state();
        self.maybe_ready(&mut st);
    }

    /// The name `own` (a `tool` or `prompt` of the server) is offered by; a
    /// name cut to its limit is logged with the full one, at the first
    /// listing (`again`: a later one).
    fn offered(&self, what: &str, own: &str, again: bool) -> String {
        let name = names::offered(&self.spec.name, own);
        let full = names::full(&self.spec.name, own);
        if full != name && !again {
            self.log.line(&format!("cut the name of {what} {own:?} to {} bytes: {full} is offered as {name}", names::MAX_NAME));
        }
        name
    }

    /// The tools listed, filtered by `enabledTools`/`disabledTools`, under
    /// their offered names; the first of two that end up with one name wins.
    fn offer(&self, listed: Vec<Value>, again: bool) -> Vec<(Tool, String)> {
        let mut out: Vec<(Tool, String)> = Vec::new();
        for t in listed {
            let Some(own) = t.get("name").and_then(Value::as_str).map(str::to_string) else {
                self.log.line("skipped a listed tool without a name");
                continue;
            };
            if !self.spec.offers(&own) {
                continue;
            }
            let name = self.offered("tool", &own, again);
            if let Some((_, first)) = out.iter().find(|(o, _)| o.name == name) {
                self.log.line(&format!("tool {own:?} is shadowed by tool {first:?} of the same server: both are offered as {name}"));
                continue;
            }
            let schema = t.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"}));
            let more = ToolMore {
                output_schema: t.get("outputSchema").filter(|v| v.is_object()).cloned(),
                title: t.get("title").and_then(Value::as_str).unwrap_or("").to_string(),
                annotations: t.get("annotations").filter(|v| v.is_object()).cloned(),
                ..Default::default()
            };
            let description = t.get("description").and_then(Value::as_str).unwrap_or("").to_string();
            out.push((Tool { name, description, schema, more }, own));
        }
        out
    }

    fn call_done(&self, host_id: String, result: Result<Value, Value>) {
        let frame = match result {
            Err(e) => ExtFrame::ToolResult(ToolResult {
                id: host_id,
                content: vec![json!({"type": "text", "text": error_text(&e)})],
                is_error: true,
                structured_content: None,
                activate_tools: Vec::new(),
            }),
            Ok(r) => match content::tool_result(r) {
                Ok(m) => ExtFrame::ToolResult(ToolResult {
                    id: host_id,
                    content: m.content,
                    is_error: m.is_error,
                    structured_content: m.structured,
                    activate_tools: Vec::new(),
                }),
                Err(msg) => {
                    self.log.line(&format!("malformed tools/call result for request {host_id}: {msg}"));
                    let error = DecodeError::BadFields { ty: "tools/call result".into(), id: None, msg };
                    return self.send(ChildMsg::BadReply { id: host_id, error });
                }
            },
        };
        self.send(ChildMsg::Frame(frame));
    }

    // ----- to the server --------------------------------------------------

    /// The bytes to write for a host frame (empty: nothing to write).
    /// Answers the host can have at once (an unknown tool, a missing
    /// argument) are handed to the dispatcher instead.
    pub fn outgoing(&self, frame: &[u8]) -> Vec<u8> {
        let text = frame.strip_suffix(b"\n").unwrap_or(frame);
        // The calls, read with a struct of their own (the tagged enum's
        // reader buffers every field first); the rest as frames.
        if text.starts_with(br#"{"type":"tool_call","#) {
            if let Ok(c) = serde_json::from_slice::<OutCall>(text) {
                return self.tool_call(c.id, &c.name, c.args);
            }
        }
        let Ok(f) = serde_json::from_slice::<HostFrame>(text) else { return Vec::new() };
        match f {
            HostFrame::ToolCall { id, name, args, .. } => self.tool_call(id, &name, args),
            HostFrame::ToolCancel { id } => {
                let mut st = self.state();
                let Some(n) = st.calls.remove(&id) else { return Vec::new() };
                if let Some(p) = st.pending.get_mut(&n) {
                    // A late answer is dropped quietly.
                    *p = Pending::Call { host_id: format!("cancelled-{id}") };
                }
                line(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": n, "reason": "cancelled by the host"}}))
            }
            HostFrame::CommandInvoked { id, name, args } => self.prompt_get(id, &name, &args),
            _ => Vec::new(),
        }
    }

    fn tool_call(&self, id: String, name: &str, args: Value) -> Vec<u8> {
        let mut st = self.state();
        let Some(own) = st.tools.iter().find(|(t, _)| t.name == name).map(|(_, o)| o.clone()) else {
            drop(st);
            let text = format!("server {:?} no longer offers tool {name:?}", self.spec.name);
            let r = ToolResult { id, content: vec![json!({"type": "text", "text": text})], is_error: true, structured_content: None, activate_tools: Vec::new() };
            self.send(ChildMsg::Frame(ExtFrame::ToolResult(r)));
            return Vec::new();
        };
        st.next += 1;
        let n = st.next;
        st.pending.insert(n, Pending::Call { host_id: id.clone() });
        // Written directly: the one request on every call's path.
        let mut b = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"#).into_bytes();
        let _ = serde_json::to_writer(&mut b, &own);
        b.extend_from_slice(br#","arguments":"#);
        let _ = serde_json::to_writer(&mut b, &args);
        b.extend_from_slice(br#","_meta":{"progressToken":"#);
        let _ = serde_json::to_writer(&mut b, &id);
        b.extend_from_slice(b"}}}\n");
        st.calls.insert(id, n);
        b
    }

    fn prompt_get(&self, id: String, name: &str, args: &str) -> Vec<u8> {
        let mut st = self.state();
        let lower = name.to_lowercase();
        let Some(p) = st.prompts.iter().find(|p| p.offered.to_lowercase() == lower).cloned() else {
            drop(st);
            let error = Some(format!("server {:?} has no prompt {name:?}", self.spec.name));
            self.send(ChildMsg::Frame(ExtFrame::CommandResponse(CommandResponse { id, action: "noop".into(), error, ..Default::default() })));
            return Vec::new();
        };
        match split_args(&p.args, args) {
            Ok(arguments) => request(&mut st, Pending::Prompt { host_id: id }, "prompts/get", json!({"name": p.own, "arguments": arguments})),
            Err(error) => {
                drop(st);
                let r = CommandResponse { id, action: "noop".into(), error: Some(error), ..Default::default() };
                self.send(ChildMsg::Frame(ExtFrame::CommandResponse(r)));
                Vec::new()
            }
        }
    }
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

/// A `tool_call` frame of the host.
#[derive(serde::Deserialize)]
struct OutCall {
    id: String,
    name: String,
    #[serde(default)]
    args: Value,
}

/// A command's text as a prompt's arguments: split on spaces in declared
/// order, the rest to the last; a missing required one is an error.
fn split_args(declared: &[(String, bool)], text: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let mut rest = text.trim();
    for (i, (name, required)) in declared.iter().enumerate() {
        let value = if i + 1 == declared.len() {
            std::mem::take(&mut rest).to_string()
        } else {
            let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            rest = tail.trim_start();
            word.to_string()
        };
        if value.is_empty() {
            if *required {
                return Err(format!("missing required argument {name:?}"));
            }
            continue;
        }
        out.insert(name.clone(), Value::String(value));
    }
    Ok(out)
}

fn list_tools(st: &mut State, cursor: Option<String>) -> Vec<u8> {
    st.gathering.get_or_insert_with(Vec::new);
    let params = match cursor {
        Some(c) => json!({"cursor": c}),
        None => json!({}),
    };
    request(st, Pending::Tools, "tools/list", params)
}

fn list_prompts(st: &mut State, cursor: Option<String>) -> Vec<u8> {
    st.prompt_pages.get_or_insert_with(Vec::new);
    let params = match cursor {
        Some(c) => json!({"cursor": c}),
        None => json!({}),
    };
    request(st, Pending::Prompts, "prompts/list", params)
}

/// A request line with the next id; what it asks is remembered.
fn request(st: &mut State, p: Pending, method: &str, params: Value) -> Vec<u8> {
    st.next += 1;
    let id = st.next;
    st.pending.insert(id, p);
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn error_reply(id: Value, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": NOT_FOUND, "message": message}})
}

/// A JSON-RPC error's message (its code when there is none).
fn error_text(e: &Value) -> String {
    match e.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("error {}", e.get("code").map(Value::to_string).unwrap_or_else(|| e.to_string())),
    }
}

fn line(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_in_declared_order() {
        let d = vec![("city".to_string(), true), ("note".to_string(), false)];
        let a = split_args(&d, "Oslo  rain all day").unwrap();
        assert_eq!(a["city"], "Oslo");
        assert_eq!(a["note"], "rain all day");
        assert_eq!(split_args(&d, "").unwrap_err(), "missing required argument \"city\"");
        let a = split_args(&d, "Oslo").unwrap();
        assert!(!a.contains_key("note"));
    }
}
