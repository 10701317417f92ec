//! The handshake of a server in either era and its listings: `initialize`
//! (docs/protocol.md §8.2) or `server/discover` (§8.4.3 rule 13), the `hello`
//! the host is told, `tools/list` and `prompts/list` through `nextCursor`
//! within their bounds, `ready`, and the modern `subscriptions/listen`
//! that brings list changes.

use super::resources::{list_resources, list_templates};
use super::state::{cursor_params, gather, request, Edge, EdgeMsg, Era, Listing, McpMsg, Pending, Prompt, State, Tool};
use super::wire::{error_text, frame, line, no_params, NOT_FOUND};
use crate::mcpserver::names;
use crate::protocol::{ExtFrame, ToolMore};
use serde_json::{json, Map, Value};

/// The protocol version the host asks for in the handshake era.
pub const PROTOCOL: &str = "2025-11-25";

/// The versions a server may answer `initialize` with.
pub const ACCEPTED: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The modern revision zot speaks.
pub const MODERN: &str = "2026-07-28";

/// The envelope's keys, and the server's stamp on a modern result.
const PV: &str = "io.modelcontextprotocol/protocolVersion";
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC's "unsupported protocol version" (2026-07-28).
const UNSUPPORTED: i64 = -32022;

/// How often zot reopens a subscription the server ended, per process.
const MAX_REOPEN: u8 = 5;

impl Edge {
    fn capabilities(&self) -> Map<String, Value> {
        let mut capabilities = Map::new();
        if self.roots.is_some() {
            let roots = if self.era == Era::Modern { json!({}) } else { json!({"listChanged": false}) };
            capabilities.insert("roots".into(), roots);
        }
        capabilities
    }

    /// The `initialize` request.
    pub(super) fn initialize(&self) -> Vec<u8> {
        let params = json!({
            "protocolVersion": PROTOCOL,
            "capabilities": self.capabilities(),
            "clientInfo": {"name": "zot", "version": self.client_version},
        });
        let mut st = self.state();
        request(&mut st, Pending::Initialize, "initialize", params)
    }

    /// `server/discover` (`retried`: the second one, after a -32022 that
    /// named this version); from here on every request carries the envelope.
    pub(super) fn discover(&self, retried: bool) -> Vec<u8> {
        let mut st = self.state();
        st.envelope = Some(json!({
            PV: MODERN,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities(),
            "io.modelcontextprotocol/clientInfo": {"name": "zot", "version": self.client_version},
        }));
        request(&mut st, Pending::Discover { retried }, "server/discover", no_params())
    }

    pub(super) fn initialized(&self, result: Result<Value, Value>) {
        let r = match result {
            Ok(r) => r,
            Err(e) => return self.refused(format!("initialize failed: {}", error_text(&e))),
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
        let opening = line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self.handshaken(version, info, &caps, opening);
    }

    pub(super) fn discovered(&self, result: Result<Value, Value>, retried: bool) {
        let r = match result {
            Ok(r) => r,
            Err(e) => {
                let supported = e.get("data").and_then(|d| d.get("supported")).and_then(Value::as_array);
                let names_modern = supported.is_some_and(|s| s.iter().any(|v| v == MODERN));
                if e.get("code").and_then(Value::as_i64) == Some(UNSUPPORTED) && names_modern && !retried {
                    // Named among its versions after all: one retry at it.
                    return self.write(self.discover(true));
                }
                return self.refused(format!("server/discover failed: {}", error_text(&e)));
            }
        };
        let versions = r.get("supportedVersions").and_then(Value::as_array);
        if !versions.is_some_and(|v| v.iter().any(|v| v == MODERN)) {
            let shown = versions.map(|v| Value::Array(v.clone()).to_string()).unwrap_or_else(|| "none".into());
            return self.refused(format!("server/discover: the server supports {shown}, not {MODERN}"));
        }
        let info = r.get("_meta").and_then(|m| m.get(SERVER_INFO)).filter(|v| v.is_object()).cloned();
        let caps = r.get("capabilities").filter(|v| v.is_object()).cloned().unwrap_or_else(|| json!({}));
        self.handshaken(MODERN, info, &caps, Vec::new());
    }

    /// The handshake is answered: `hello`, then the lists it declares.
    fn handshaken(&self, version: &str, info: Option<Value>, caps: &Value, mut out: Vec<u8>) {
        let name = info.as_ref().and_then(|i| i.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
        let sversion = info.as_ref().and_then(|i| i.get("version")).and_then(Value::as_str).unwrap_or("").to_string();
        let verb = if self.era == Era::Modern { "discovered" } else { "initialized" };
        self.log.line(&format!("{verb}: protocol {version}, server {name:?} {sversion}"));
        let (has_tools, has_prompts) = (caps.get("tools").is_some(), caps.get("prompts").is_some());
        let changes = |k: &str| caps.get(k).and_then(|c| c.get("listChanged")).and_then(Value::as_bool) == Some(true);
        let mut st = self.state();
        st.protocol_version = Some(version.to_string());
        st.server_info = info;
        let has_resources = caps.get("resources").is_some();
        st.has_resources = has_resources;
        if self.era == Era::Modern && (changes("tools") || changes("prompts") || (has_resources && changes("resources"))) {
            let mut filter = Map::new();
            if changes("tools") {
                filter.insert("toolsListChanged".into(), json!(true));
            }
            if changes("prompts") {
                filter.insert("promptsListChanged".into(), json!(true));
            }
            if has_resources && changes("resources") {
                filter.insert("resourcesListChanged".into(), json!(true));
            }
            st.listen = Some(Value::Object(filter));
        }
        let mut capabilities = vec!["tools".to_string(), "tool_cancel".to_string()];
        if has_prompts {
            capabilities.push("commands".into());
        }
        if has_tools {
            st.outstanding += 1;
            out.extend(list_tools(&mut st, None));
        }
        if has_prompts {
            st.outstanding += 1;
            out.extend(list_prompts(&mut st, None));
        }
        // Resources only of a server that declared them (docs/protocol.md
        // §8.6); ready waits for them, but a failed listing fails nothing.
        if has_resources {
            st.outstanding += 2;
            out.extend(list_resources(&mut st, None));
            out.extend(list_templates(&mut st, None));
        }
        let done = st.outstanding == 0;
        drop(st);
        // The entry's name is the server's identity; serverInfo is listed as given.
        self.send(frame(ExtFrame::Hello { name: self.spec.name.clone(), version: sversion, capabilities }));
        self.write(out);
        if done {
            self.become_ready();
        }
    }

    pub(super) fn fail(&self, why: String) {
        self.log.line(&why);
        self.tell(McpMsg::Fail(why));
    }

    /// The server answered the handshake with an error.
    fn refused(&self, why: String) {
        self.log.line(&why);
        self.tell(McpMsg::Refused(why));
    }

    /// One page of `tools/list`: the next page's request, or, at the end,
    /// the tools registered (first listing) or replaced (later ones).
    pub(super) fn tools_page(&self, st: &mut State, result: Result<Value, Value>) -> Vec<u8> {
        let page = self.page(result, "tools");
        let listing = st.gathering.get_or_insert_with(Listing::default);
        match gather(listing, &page, "tools") {
            Ok(Some(c)) => return list_tools(st, Some(c)),
            Ok(None) => {
                let listed = st.gathering.take().map(|l| l.items).unwrap_or_default();
                st.tools = self.offer(listed, st.ready);
                if st.ready {
                    let tools = st.tools.iter().map(|(t, _)| t.clone()).collect();
                    self.tell(McpMsg::Tools(tools));
                } else {
                    self.listed(st);
                }
            }
            Err(why) => return self.listing_failed(st, true, &why),
        }
        if std::mem::take(&mut st.list_again) {
            return list_tools(st, None);
        }
        Vec::new()
    }

    /// One page of `prompts/list`, as [`Edge::tools_page`].
    pub(super) fn prompts_page(&self, st: &mut State, result: Result<Value, Value>) -> Vec<u8> {
        let page = self.page(result, "prompts");
        let listing = st.prompt_pages.get_or_insert_with(Listing::default);
        match gather(listing, &page, "prompts") {
            Ok(Some(c)) => return list_prompts(st, Some(c)),
            Ok(None) => {
                let listed = st.prompt_pages.take().map(|l| l.items).unwrap_or_default();
                let (prompts, commands) = self.offer_prompts(listed, st.ready);
                st.prompts = prompts;
                if st.ready {
                    self.tell(McpMsg::Prompts(commands));
                } else {
                    for (name, description) in commands {
                        self.send(frame(ExtFrame::RegisterCommand { name, description }));
                    }
                    self.listed(st);
                }
            }
            Err(why) => return self.listing_failed(st, false, &why),
        }
        if std::mem::take(&mut st.prompts_again) {
            return list_prompts(st, None);
        }
        Vec::new()
    }

    /// A page's result; an error (other than -32601) is logged and counts
    /// as an empty last page.
    fn page(&self, result: Result<Value, Value>, what: &str) -> Value {
        match result {
            Ok(r) => r,
            Err(e) => {
                if e.get("code").and_then(Value::as_i64) != Some(NOT_FOUND) {
                    self.log.line(&format!("{what}/list failed: {}; no {what}", error_text(&e)));
                }
                json!({ what: [] })
            }
        }
    }

    /// A `tools/list` (`tools`) or `prompts/list` that cannot go on for
    /// `why`: its pages are dropped, and unless the load failed, a relisting
    /// asked for meanwhile starts (what to write).
    pub(super) fn listing_failed(&self, st: &mut State, tools: bool, why: &str) -> Vec<u8> {
        let method = if tools { "tools/list" } else { "prompts/list" };
        if tools {
            st.gathering = None;
        } else {
            st.prompt_pages = None;
        }
        if self.unended(method, why, st) {
            return Vec::new();
        }
        match (tools, std::mem::take(if tools { &mut st.list_again } else { &mut st.prompts_again })) {
            (_, false) => Vec::new(),
            (true, true) => list_tools(st, None),
            (false, true) => list_prompts(st, None),
        }
    }

    /// A listing that did not end: the load fails, or a relisting leaves
    /// the previous list in force. True when the load failed.
    fn unended(&self, method: &str, why: &str, st: &State) -> bool {
        let msg = format!("{method} did not end: {why}");
        if st.ready {
            self.log.line(&format!("{msg}; the previous list stays in force"));
            return false;
        }
        self.fail(msg);
        true
    }

    /// One of the first listings is complete.
    pub(super) fn listed(&self, st: &mut State) {
        st.outstanding = st.outstanding.saturating_sub(1);
        self.maybe_ready(st);
    }

    fn maybe_ready(&self, st: &mut State) {
        if st.outstanding > 0 || st.ready {
            return;
        }
        for (t, _) in &st.tools {
            let (name, description, schema, more) = (t.name.clone(), t.description.clone(), t.schema.clone(), t.more.clone());
            self.send(frame(ExtFrame::RegisterTool { name, description, schema, more }));
        }
        st.ready = true;
        self.send(frame(ExtFrame::Ready));
        if let Some(filter) = st.listen.clone() {
            let bytes = request(st, Pending::Listen, "subscriptions/listen", json!({ "notifications": filter }));
            self.write(bytes);
        }
    }

    fn become_ready(&self) {
        let mut st = self.state();
        self.maybe_ready(&mut st);
    }

    /// The server ended zot's subscription: list again, and open it again
    /// a second later, at most [`MAX_REOPEN`] times per process.
    pub(super) fn listen_ended(&self, result: Result<Value, Value>) {
        let how = match &result {
            Ok(_) => "ended".to_string(),
            Err(e) => format!("failed: {}", error_text(e)),
        };
        let mut st = self.state();
        let mut out = Vec::new();
        if st.gathering.is_none() {
            out.extend(list_tools(&mut st, None));
        }
        if !st.prompts.is_empty() && st.prompt_pages.is_none() {
            out.extend(list_prompts(&mut st, None));
        }
        if st.has_resources && st.resource_pages.is_none() && st.template_pages.is_none() {
            out.extend(list_resources(&mut st, None));
            out.extend(list_templates(&mut st, None));
        }
        let Some(filter) = st.listen.clone().filter(|_| st.reopened < MAX_REOPEN) else {
            drop(st);
            self.log.line(&format!("the server's subscription {how}; not reopened (at most {MAX_REOPEN} times)"));
            return self.write(out);
        };
        st.reopened += 1;
        let again = request(&mut st, Pending::Listen, "subscriptions/listen", json!({ "notifications": filter }));
        drop(st);
        self.log.line(&format!("the server's subscription {how}; listing again and reopening it in 1 s"));
        self.write(out);
        let emit = self.emit.clone();
        let _ = std::thread::Builder::new().name("zot-mcp-relisten".into()).stack_size(64 * 1024).spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            emit(EdgeMsg::Mcp(McpMsg::Write(again)));
        });
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

    /// The prompts listed, under their offered names, and the commands
    /// they are offered as.
    fn offer_prompts(&self, listed: Vec<Value>, again: bool) -> (Vec<Prompt>, Vec<(String, String)>) {
        let mut prompts: Vec<Prompt> = Vec::new();
        let mut commands: Vec<(String, String)> = Vec::new();
        for p in listed {
            let Some(own) = p.get("name").and_then(Value::as_str) else { continue };
            let offered = self.offered("prompt", own, again);
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
        (prompts, commands)
    }
}

pub(super) fn list_tools(st: &mut State, cursor: Option<String>) -> Vec<u8> {
    st.gathering.get_or_insert_with(Listing::default);
    request(st, Pending::Tools, "tools/list", cursor_params(cursor))
}

pub(super) fn list_prompts(st: &mut State, cursor: Option<String>) -> Vec<u8> {
    st.prompt_pages.get_or_insert_with(Listing::default);
    request(st, Pending::Prompts, "prompts/list", cursor_params(cursor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcpserver::edge::state::{MAX_ENTRIES, MAX_PAGES};

    #[test]
    fn a_listing_ends_at_a_repeated_cursor_or_past_its_bounds() {
        let mut l = Listing::default();
        assert_eq!(gather(&mut l, &json!({"tools": [1], "nextCursor": "a"}), "tools"), Ok(Some("a".into())));
        assert_eq!(gather(&mut l, &json!({"tools": [2], "nextCursor": "b"}), "tools"), Ok(Some("b".into())));
        assert_eq!(gather(&mut l, &json!({"tools": [], "nextCursor": "a"}), "tools"), Err("the cursor \"a\" came again".into()));
        let mut l = Listing::default();
        let mut last = Ok(None);
        for i in 0..MAX_PAGES {
            last = gather(&mut l, &json!({"tools": [], "nextCursor": format!("c{i}")}), "tools");
            if last.is_err() {
                break;
            }
        }
        assert_eq!(last, Err(format!("more than {MAX_PAGES} pages")));
        let mut l = Listing::default();
        let big: Vec<Value> = (0..MAX_ENTRIES).map(|i| json!(i)).collect();
        assert_eq!(gather(&mut l, &json!({"tools": big, "nextCursor": "x"}), "tools"), Ok(Some("x".into())));
        assert_eq!(gather(&mut l, &json!({"tools": [0]}), "tools"), Err(format!("more than {MAX_ENTRIES} entries")));
    }
}
