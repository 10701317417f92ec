//! One server process's edge as data: the era it is spoken to in, what it
//! hands the dispatcher ([`EdgeMsg`], [`McpMsg`]), the tools and prompts it
//! offers, the requests it waits on, and [`Edge`] itself with the state
//! its reader thread and the dispatcher's sends share. A request line is
//! made here ([`request`]), so that its id and what it asks are kept
//! together.

use super::wire::line;
use crate::mcpserver::config::{Roots, ServerSpec};
use crate::child::{ChildMsg, Log};
use crate::protocol::ToolMore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The era a process is spoken to in (docs/protocol.md §8.4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` first (`2025-11-25` and before).
    Legacy,
    /// `server/discover` first, the envelope on every request (`2026-07-28`).
    Modern,
}

/// What the edge hands the dispatcher.
#[derive(Debug)]
pub enum EdgeMsg {
    /// What a zot extension would have said.
    Child(ChildMsg),
    Mcp(McpMsg),
}

/// What the edge tells the dispatcher beside frames.
#[derive(Debug)]
pub enum McpMsg {
    /// Bytes to write to the server (answers to its requests, further
    /// pages, the lists after `list_changed`).
    Write(Vec<u8>),
    /// The handshake failed; the load fails with this reason.
    Fail(String),
    /// The server refused the handshake with a JSON-RPC error: under
    /// `auto` the other era may be tried (docs/protocol.md §8.4.3 rule 12b).
    Refused(String),
    /// The server listed its tools again: the whole new set.
    Tools(Vec<Tool>),
    /// The server listed its prompts again: the whole new set of commands,
    /// each with its description.
    Prompts(Vec<(String, String)>),
    /// A remote server's request for the call with host id `id` failed in
    /// transport (an HTTP status, a network error): that call alone fails,
    /// `extension_exited`, and the server stays ready (docs/protocol.md §8.5
    /// rule 4).
    // Used by remote servers only (the default feature `remote`).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    CallFailed { id: String, why: String },
    /// A remote server's login is no longer accepted after its handshake
    /// (a refresh refused, a 403 `insufficient_scope`): the server is
    /// `needs_login` (this message) until a person logs in, and its calls
    /// in flight fail with it (docs/protocol.md §8.5 rules 10 and 12).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    LoginLost(String),
    /// `notifications/progress` for the tool call with host id `id`.
    Progress { id: String, progress: Value, total: Option<Value>, message: Option<String> },
    /// The server's resources and templates as listed now (docs/protocol.md
    /// §8.6): at load, before `ready`, and after each relisting.
    Resources { resources: Vec<Resource>, templates: Vec<Template> },
    /// The answer to the `resources/read` with host id `id`: its contents
    /// (`{"uri", "mime_type"?, "text"}` or `{"uri", "mime_type"?, "blob"}`),
    /// or why it failed.
    Read { id: String, result: Result<Vec<Value>, String> },
}

/// A resource as a server listed it (MCP's `mimeType` as `mime_type`).
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
}

/// A resource template as a server listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub uri_template: String,
    pub name: String,
    pub title: Option<String>,
    pub mime_type: Option<String>,
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
pub(super) struct Prompt {
    pub(super) offered: String,
    pub(super) own: String,
    /// Its arguments in declared order, and whether each is required.
    pub(super) args: Vec<(String, bool)>,
}

pub(super) enum Pending {
    Initialize,
    Discover { retried: bool },
    Tools,
    Prompts,
    Listen,
    /// `params` kept to ask again after `input_required`, with the rounds so far.
    Call { host_id: String, params: Option<Value>, rounds: u8 },
    Prompt { host_id: String, params: Value, rounds: u8 },
    Resources,
    Templates,
    /// A `resources/read`, kept as a call is.
    Read { host_id: String, params: Value, rounds: u8 },
}

/// A listing under way (docs/protocol.md §8.2: bounded by a repeated cursor,
/// a page count and an entry count).
#[derive(Default)]
pub(super) struct Listing {
    pub(super) items: Vec<Value>,
    pub(super) cursors: Vec<String>,
    pub(super) pages: usize,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) next: u64,
    pub(super) pending: HashMap<u64, Pending>,
    /// `ready` was sent: later listings replace the tools.
    pub(super) ready: bool,
    /// Initial lists still to be answered.
    pub(super) outstanding: u8,
    pub(super) protocol_version: Option<String>,
    pub(super) server_info: Option<Value>,
    /// The tools offered, with the server's own name of each.
    pub(super) tools: Vec<(Tool, String)>,
    /// Tools gathered over the pages of a listing under way.
    pub(super) gathering: Option<Listing>,
    /// A `list_changed` came while a listing was under way.
    pub(super) list_again: bool,
    pub(super) prompts: Vec<Prompt>,
    /// Prompts gathered over the pages of a listing under way.
    pub(super) prompt_pages: Option<Listing>,
    /// A prompts `list_changed` came while a listing was under way.
    pub(super) prompts_again: bool,
    /// Tool calls in flight: host id → request id.
    pub(super) calls: HashMap<String, u64>,
    /// Modern: the envelope every request carries.
    pub(super) envelope: Option<Value>,
    /// Modern: the filter of the subscription zot keeps open, and how often
    /// it was reopened.
    pub(super) listen: Option<Value>,
    pub(super) reopened: u8,
    /// The server declared `resources` (docs/protocol.md §8.6): only then are
    /// they listed.
    pub(super) has_resources: bool,
    pub(super) resources: Vec<Resource>,
    pub(super) templates: Vec<Template>,
    /// Resources and templates gathered over the pages of a listing under way.
    pub(super) resource_pages: Option<Listing>,
    pub(super) template_pages: Option<Listing>,
    /// A resources `list_changed` came while a listing was under way.
    pub(super) resources_again: bool,
}

/// The per-process translator, shared by the reader thread and the
/// dispatcher's sends.
pub struct Edge {
    pub(super) spec: Arc<ServerSpec>,
    pub(super) era: Era,
    pub(super) client_version: String,
    /// `file://` URIs for `roots/list`, when the entry opts in.
    pub(super) roots: Option<Vec<String>>,
    pub(super) log: Log,
    pub(super) emit: Arc<dyn Fn(EdgeMsg) + Send + Sync>,
    pub(super) st: Mutex<State>,
}

/// What listings show of a server once it answered its handshake.
#[derive(Debug, Clone, Default)]
pub struct Info {
    pub protocol_version: Option<String>,
    pub server_info: Option<Value>,
}

impl Edge {
    /// An edge for one process of `spec`, spoken to in `era`; `emit` hands
    /// messages to the dispatcher; `project` is `--cwd` (for `"roots": true`).
    pub fn new(spec: Arc<ServerSpec>, era: Era, client_version: &str, project: &Path, log: Log, emit: Arc<dyn Fn(EdgeMsg) + Send + Sync>) -> Edge {
        let uri = |p: &Path| format!("file://{}", p.display());
        let roots = match &spec.roots {
            Roots::Off => None,
            Roots::Project => Some(vec![uri(project)]),
            Roots::Dirs(d) => Some(d.iter().map(|p| uri(p)).collect()),
        };
        Edge { spec, era, client_version: client_version.to_string(), roots, log, emit, st: Mutex::new(State::default()) }
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The protocol version and server info, once known.
    pub fn info(&self) -> Info {
        let st = self.state();
        Info { protocol_version: st.protocol_version.clone(), server_info: st.server_info.clone() }
    }

    pub(super) fn send(&self, m: ChildMsg) {
        (self.emit)(EdgeMsg::Child(m))
    }

    pub(super) fn tell(&self, m: McpMsg) {
        (self.emit)(EdgeMsg::Mcp(m))
    }

    pub(super) fn write(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.tell(McpMsg::Write(bytes));
        }
    }

}

/// A listing ends with an error past these (docs/protocol.md §8.2).
pub(super) const MAX_PAGES: usize = 100;
pub(super) const MAX_ENTRIES: usize = 10_000;

/// Adds a page to a listing: the cursor of the next page, none at the
/// end, or why the listing does not end (docs/protocol.md §8.2).
pub(super) fn gather(l: &mut Listing, page: &Value, key: &str) -> Result<Option<String>, String> {
    l.pages += 1;
    if let Some(Value::Array(items)) = page.get(key) {
        if l.items.len() + items.len() > MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries"));
        }
        l.items.extend(items.iter().cloned());
    }
    let Some(c) = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()) else { return Ok(None) };
    if l.cursors.iter().any(|s| s == c) {
        return Err(format!("the cursor {c:?} came again"));
    }
    if l.pages >= MAX_PAGES {
        return Err(format!("more than {MAX_PAGES} pages"));
    }
    l.cursors.push(c.to_string());
    Ok(Some(c.to_string()))
}

/// The params of a listing's page.
pub(super) fn cursor_params(cursor: Option<String>) -> Value {
    match cursor {
        Some(c) => json!({ "cursor": c }),
        None => Value::Object(serde_json::Map::new()),
    }
}

/// A request line with the next id, carrying the envelope of a modern
/// server; what it asks is remembered.
pub(super) fn request(st: &mut State, p: Pending, method: &str, mut params: Value) -> Vec<u8> {
    st.next += 1;
    let id = st.next;
    st.pending.insert(id, p);
    if let (Some(env), Value::Object(o)) = (&st.envelope, &mut params) {
        let meta = o.entry("_meta").or_insert_with(|| json!({}));
        if let (Value::Object(m), Value::Object(e)) = (meta, env) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}
