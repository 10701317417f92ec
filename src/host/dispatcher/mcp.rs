//! What only MCP servers need of the dispatcher (docs/protocol.md §8): their
//! command resolved and their edge made at start, the messages of the edge
//! that have no zot frame (bytes to write back, a failed handshake, a new
//! tool or prompt list, progress of a call), their sleep and waking, and
//! their per-server call deadline. What a server's record keeps of its
//! eras and its sleep is in `ext`.

use super::ext::ToolEntry;
use super::table::{Pick, Taken};
use super::{after, respond, Call, CallKind, Dispatcher, Ext, ExtId, Inbox, Life, Origin, Phase, StopStage, Timer};
use crate::child::Log;
use crate::host::{fmt_duration, Config, HostError, HostEvent, Request, Responder};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use crate::mcpserver::config::{Protocol, ServerSpec};
use crate::mcpserver::edge::{Edge, EdgeMsg, Era, McpMsg, Tool};
use std::path::PathBuf;

/// The program to run: a manifest's `exec`, or a server's `command`
/// (docs/protocol.md §8.1), with the reason it cannot run in the server's own
/// terms.
pub(super) fn resolve(found: &crate::discovery::Found) -> Result<PathBuf, String> {
    let m = &found.manifest;
    match &found.mcp {
        Some(spec) => spec.resolve_command(),
        None => m.resolve_exec().map_err(|e| e.to_string()),
    }
}

/// Logs the unknown fields of a server's entry (docs/protocol.md §8.1: once)
/// or of an extension's manifest, each with the known field it is probably
/// a slip of, at its first start of the load, before anything can fail it.
/// `logged`: they were logged already.
pub(super) fn log_unknown(found: &crate::discovery::Found, logged: &mut bool, log: &Log) {
    use crate::nearest::unknown_fields;
    let line = match &found.mcp {
        Some(spec) if !spec.unknown.is_empty() => {
            format!("ignored unknown fields of its entry in {}: {}", spec.file.display(), unknown_fields(&spec.unknown, &crate::mcpserver::config::KNOWN))
        }
        None if !found.manifest.unknown.is_empty() => {
            format!("ignored unknown fields of its manifest: {}", unknown_fields(&found.manifest.unknown, &crate::manifest::FIELDS))
        }
        _ => return,
    };
    if !std::mem::replace(logged, true) {
        log.line(&line);
    }
}

/// The edge of a new process of server `spec`, spoken to in `era`.
pub(super) fn edge(spec: &Arc<ServerSpec>, era: Era, cfg: &Config, log: &Log, inbox: crate::wake::Tx<Inbox>, id: ExtId) -> Arc<Edge> {
    let emit = Arc::new(move |m| {
        let _ = inbox.send(match m {
            EdgeMsg::Child(m) => Inbox::Child(id, m),
            EdgeMsg::Mcp(m) => Inbox::Mcp(id, m),
        });
    });
    Arc::new(Edge::new(spec.clone(), era, &cfg.zot_version, &cfg.cwd, log.clone(), emit))
}

/// An era as listings and logs name it.
pub(super) fn era_name(era: Era) -> &'static str {
    match era {
        Era::Legacy => crate::mcpserver::edge::PROTOCOL,
        Era::Modern => crate::mcpserver::edge::MODERN,
    }
}

/// The first request of a handshake in `era`.
pub(super) fn opening_of(era: Era) -> &'static str {
    match era {
        Era::Legacy => "initialize",
        Era::Modern => "server/discover",
    }
}

/// A tool call's deadline: a server's `requestTimeout`, else `tool`.
pub(super) fn tool_timeout(ext: &Ext, tool: Duration) -> Duration {
    ext.found.mcp.as_ref().and_then(|s| s.request_timeout).unwrap_or(tool)
}

/// Why a process failed its handshake in time.
pub(super) fn no_hello(ext: &Ext, hello: Duration) -> String {
    match &ext.found.mcp {
        Some(s) => format!("no answer to initialize within {} (connectTimeout)", fmt_duration(s.connect_timeout)),
        None => format!("no hello within {}", fmt_duration(hello)),
    }
}

impl Dispatcher {
    /// Ready: a server with an `idleTimeout` starts counting, and calls that
    /// woke it go to it.
    pub(super) fn mcp_ready(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        ext.eras.found = ext.eras.current;
        ext.eras.first = None;
        let Some(d) = ext.found.mcp.as_ref().and_then(|s| s.idle_timeout) else { return };
        ext.idle.last_used = Some(Instant::now());
        let id = ext.id;
        self.at(after(d), Timer::Idle(id));
        // A restart asked for meanwhile announces itself and sends the
        // calls on (`restarted`).
        if std::mem::take(&mut self.exts[slot].idle.waking) && self.exts[slot].restart_names.is_none() {
            self.woke(slot);
        }
    }

    /// Woken and ready: what it lists now is what it offers (names it no
    /// longer lists are given up), the difference from what it offered
    /// asleep is announced (`listed`), and the calls that woke it go to it.
    fn woke(&mut self, slot: usize) {
        let ext = &self.exts[slot];
        let (commands, tools) = (ext.command_names(), ext.tool_names());
        self.registry.keep_only(slot, &commands, &tools);
        let before = self.exts[slot].idle.slept_with.take().map(|(_, t)| tool_keys(&t)).unwrap_or_default();
        let changed = changed_tools(&before, &tool_keys(&self.exts[slot].tools));
        self.announce_listed(slot, changed, "tools listed on waking");
        self.route_parked(slot);
    }

    pub(super) fn on_idle_timer(&mut self, id: ExtId, now: Instant) {
        let Some(slot) = self.slot_of(id) else { return };
        let ext = &mut self.exts[slot];
        let Some(d) = ext.found.mcp.as_ref().and_then(|s| s.idle_timeout) else { return };
        if ext.life != Life::Ready || self.load.phase != Phase::Running {
            return;
        }
        if self.table.sent.count(slot) > 0 {
            ext.idle.last_used = Some(now);
        }
        let due = ext.idle.last_used.and_then(|t| t.checked_add(d)).unwrap_or(now);
        if due > now {
            return self.at(due, Timer::Idle(id));
        }
        ext.log(&format!("unused for {} (idleTimeout): stopping; its tools stay offered and the next call starts it", fmt_duration(d)));
        ext.idle.stopping = true;
        ext.life = Life::Stopping { failed: false };
        if let Some(p) = ext.proc.as_ref() {
            p.child.close_stdin();
        }
        self.at(after(self.cfg.timeouts.shutdown_grace), Timer::Stop(id, StopStage::Term));
    }

    /// The process stopped for being idle has ended.
    pub(super) fn went_idle(&mut self, slot: usize, how: &str) {
        let ext = &mut self.exts[slot];
        ext.idle.stopping = false;
        ext.life = Life::Idle;
        ext.log(&format!("idle ({how})"));
        let id = ext.id;
        self.cancel_calls_of(id);
        if self.table.parked.iter().any(|p| p.slot == slot) {
            self.wake(slot);
        }
    }

    /// A call for a server that is idle (or on its way there, or waking):
    /// it waits for the server, which is started if it sleeps.
    pub(super) fn wake_for(&mut self, slot: usize, req: Request, origin: Option<Origin>, done: Responder) {
        let timeout = match &req {
            Request::Command { .. } => self.cfg.timeouts.command,
            _ => tool_timeout(&self.exts[slot], self.cfg.timeouts.tool),
        };
        self.park_call(slot, req, origin, done, timeout);
        if self.exts[slot].life == Life::Idle {
            self.wake(slot);
        }
    }

    /// Started again as a restart starts it; its names stay in force for it
    /// (calls for them wait, as while it slept) until it is ready.
    fn wake(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        ext.log("called while idle: starting it again");
        ext.idle.waking = true;
        ext.idle.slept_with = Some((std::mem::take(&mut ext.commands), std::mem::take(&mut ext.tools)));
        self.start_again(slot);
    }

    /// Starts a remote server (docs/protocol.md §8.5): no process, its edge
    /// spoken over HTTP by a [`crate::mcpserver::remote::Link`].
    #[cfg(feature = "remote")]
    pub(super) fn start_remote(&mut self, slot: usize, id: ExtId, log: Log) {
        let inbox = self.inbox.clone();
        let ext = &mut self.exts[slot];
        let Some(spec) = ext.found.mcp.clone() else { return };
        let shown = spec.remote.as_ref().map(|r| r.shown_url()).unwrap_or_default();
        log.line(&format!("starting {} (remote: {shown}) at {}", spec.name, crate::log::utc(std::time::SystemTime::now())));
        let era = ext.eras.next(spec.protocol);
        log.line(&format!("handshake: trying {} ({})", era_name(era), opening_of(era)));
        let e = edge(&spec, era, &self.cfg, &log, inbox.clone(), id);
        let report = Box::new(move |m| drop(inbox.send(Inbox::Child(id, m))));
        let link = crate::mcpserver::remote::Link::open(&spec, e.clone(), log.clone(), self.cfg.timeouts.tool, report);
        let child = link.and_then(|l| crate::child::Child::linked(&spec.name, Arc::new(l), e.clone(), self.cfg.trace.as_ref(), &self.queue).map_err(|e| e.to_string()));
        ext.log = Some(log);
        match child {
            Ok(child) => {
                ext.proc = Some(super::ext::Proc { child, edge: Some(e), exit: None, eof: false, ended: false });
                self.at(after(spec.connect_timeout), Timer::Hello(id));
            }
            Err(why) => self.fail(slot, why),
        }
    }

    pub(super) fn on_mcp(&mut self, slot: usize, m: McpMsg) {
        match m {
            McpMsg::Write(bytes) => {
                let Some(c) = self.exts[slot].child() else { return };
                if c.send_raw(Arc::new(bytes)).is_err() {
                    self.exts[slot].log("could not write an answer to the server: its queue is full or stdin closed");
                }
            }
            McpMsg::Fail(why) => {
                if self.exts[slot].life.starting() {
                    self.handshake_failed(slot, why, false);
                }
            }
            McpMsg::Refused(why) => {
                if self.exts[slot].life.starting() {
                    self.handshake_failed(slot, why, true);
                }
            }
            McpMsg::Tools(tools) => self.replace_tools(slot, tools),
            McpMsg::Prompts(commands) => self.replace_commands(slot, commands),
            McpMsg::Progress { id, progress, total, message } => self.on_progress(slot, &id, progress, total, message),
            McpMsg::CallFailed { id, why } => self.on_call_failed(slot, &id, why),
            McpMsg::LoginLost(why) => self.login_lost(slot, why),
            McpMsg::Resources { resources, templates } => self.on_resources(slot, resources, templates),
            McpMsg::Read { id, result } => self.on_read(slot, &id, result),
        }
    }

    /// A remote server's request for call `id` failed in transport: that
    /// call fails `extension_exited`, naming why; the server stays ready.
    fn on_call_failed(&mut self, slot: usize, id: &str, why: String) {
        let ext_id = self.exts[slot].id;
        let Some(n) = id.parse::<u64>().ok().filter(|n| self.table.sent.get(n).is_some_and(|c| c.ext == ext_id)) else {
            return;
        };
        let Some(call) = self.table.sent.remove(&n) else { return };
        let extension = self.exts[slot].name().to_string();
        match call.kind {
            CallKind::Command { done, .. } | CallKind::Tool(super::calls::ToolStage { done, .. }) | CallKind::Read { done, .. }
                if crate::mcpserver::login::is_login_of(&extension, &why) =>
            {
                respond(done, Err(HostError::NeedsLogin(why)))
            }
            CallKind::Command { done, .. } | CallKind::Tool(super::calls::ToolStage { done, .. }) | CallKind::Read { done, .. } => {
                respond(done, Err(HostError::Exited { extension, detail: why }))
            }
            CallKind::Intercept { chain } => self.chain_failed(chain, slot, &why),
        }
    }

    /// A ready remote server's login is no longer accepted: its calls in
    /// flight fail `needs_login` with `why`, and it is `needs_login` (a
    /// failed load with that message, its tools gone, not restarted)
    /// until a person logs in (docs/protocol.md §8.5 rule 12).
    fn login_lost(&mut self, slot: usize, why: String) {
        if self.exts[slot].life != Life::Ready {
            return;
        }
        let ext_id = self.exts[slot].id;
        for n in self.table.sent.ids_where(|c| c.ext == ext_id) {
            let Some(call) = self.table.sent.remove(&n) else { continue };
            match call.kind {
                CallKind::Command { done, .. } | CallKind::Tool(super::calls::ToolStage { done, .. }) | CallKind::Read { done, .. } => {
                    respond(done, Err(HostError::NeedsLogin(why.clone())))
                }
                CallKind::Intercept { chain } => self.chain_failed(chain, slot, &why),
            }
        }
        self.tools_gone(slot);
        let ext = &mut self.exts[slot];
        ext.tools.clear();
        ext.commands.clear();
        self.fail(slot, why);
    }

    /// A handshake try failed (`ended`: the server refused it or ended
    /// before answering). Under `auto`, an `initialize` try that ended so
    /// gets one modern try in a fresh process, once this one is gone; any
    /// other failure fails the load, naming every try (docs/protocol.md §8.4.3
    /// rule 12). A try is never a crash.
    pub(super) fn handshake_failed(&mut self, slot: usize, why: String, ended: bool) {
        let ext = &mut self.exts[slot];
        let Some(spec) = ext.found.mcp.as_ref() else { return self.fail(slot, why) };
        let first_try = ext.eras.first.is_none() && ext.eras.current == Some(Era::Legacy);
        let auto = spec.protocol == Protocol::Auto && ext.life == Life::Spawned && matches!(self.load.phase, Phase::Running | Phase::Loading);
        if auto && ext.eras.found == Some(Era::Modern) && ext.eras.first.is_none() {
            // The era found before failed on a restart: both tries again.
            ext.log(&format!("{why}; trying initialize first again"));
            ext.eras.found = None;
            return self.try_again(slot);
        }
        if auto && first_try && ended {
            ext.log(&format!("the initialize try failed; trying {} in a fresh process", era_name(Era::Modern)));
            ext.eras.first = Some(why);
            ext.eras.retry = true;
            ext.eras.found = None;
            return self.try_again(slot);
        }
        let why = match ext.eras.first.take() {
            Some(first) => {
                let (first, why) = (first.strip_prefix("initialize failed: ").unwrap_or(&first), why.strip_prefix("server/discover failed: ").unwrap_or(&why));
                format!("initialize: {first}; server/discover: {why}")
            }
            None => why,
        };
        self.fail(slot, why);
    }

    /// Starts the server anew once its process is gone.
    fn try_again(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        if ext.proc.as_ref().is_none_or(|p| p.ended) {
            ext.eras.retry_after_stop = false;
            return self.start_again(slot);
        }
        ext.eras.retry_after_stop = true;
        self.stop_one(slot);
    }

    /// The server listed its tools again: the new set replaces the old in
    /// the registry, and what changed is announced (`listed`).
    fn replace_tools(&mut self, slot: usize, tools: Vec<Tool>) {
        if !self.exts[slot].life.running() {
            return;
        }
        let before = tool_keys(&self.exts[slot].tools);
        let after_: Vec<(String, Value)> = tools.iter().map(|t| (t.name.clone(), tool_key(&t.description, &t.schema, &t.more))).collect();
        for (name, _) in &before {
            if !after_.iter().any(|(n, _)| n == name) {
                self.registry.release_tool(name, slot);
            }
        }
        self.exts[slot].tools.clear();
        for t in tools {
            self.register_tool(slot, t.name, t.description, t.schema, t.more);
        }
        self.announce_listed(slot, changed_tools(&before, &after_), "tools listed again");
    }

    /// The server listed its prompts again: the new set of commands
    /// replaces the old in the registry (no event names commands; the next
    /// listing shows them).
    fn replace_commands(&mut self, slot: usize, commands: Vec<(String, String)>) {
        let ext = &self.exts[slot];
        // Held for a restart under way, the names wait for that instead.
        if !ext.life.running() || ext.restart_names.is_some() {
            return;
        }
        let before = ext.commands.clone();
        let names: Vec<String> = commands.iter().map(|(n, _)| n.clone()).collect();
        self.registry.keep_only(slot, &names, &ext.tool_names());
        self.exts[slot].commands.clear();
        for (name, description) in commands {
            self.register_command(slot, name, description);
        }
        let now = &self.exts[slot].commands;
        let mut changed: Vec<String> = now.iter().filter(|c| !before.contains(c)).map(|(n, _)| n.clone()).collect();
        changed.extend(before.iter().filter(|(n, _)| !now.iter().any(|(m, _)| m == n)).map(|(n, _)| n.clone()));
        if !changed.is_empty() {
            self.exts[slot].log(&format!("prompts listed again; changed commands: {}", changed.join(", ")));
            let extension = self.exts[slot].name().to_string();
            self.emit(HostEvent::CommandsListed { extension, commands: changed });
        }
    }

    /// `tools_changed` (`listed`) for the tools in `changed`, if any.
    fn announce_listed(&mut self, slot: usize, changed: Vec<String>, what: &str) {
        if changed.is_empty() {
            return;
        }
        self.exts[slot].log(&format!("{what}; changed: {}", changed.join(", ")));
        let extension = self.exts[slot].name().to_string();
        self.emit(HostEvent::ToolsChanged { extension, reason: "listed".into(), tools: changed });
    }

    /// Progress of a tool call in flight to this server, passed on with the
    /// caller's key for it.
    fn on_progress(&mut self, slot: usize, id: &str, progress: Value, total: Option<Value>, message: Option<String>) {
        let Ok(n) = id.parse::<u64>() else { return };
        let ext = self.exts[slot].id;
        let Some(Call { kind: CallKind::Tool(stage), .. }) = self.table.sent.get(&n).filter(|c| c.ext == ext) else {
            return;
        };
        let tool_id = stage.agent_tool_id.clone();
        let Some(key) = stage.progress_key.clone() else { return };
        let extension = self.exts[slot].name().to_string();
        self.emit(HostEvent::ToolProgress { id: key, tool_id, extension, progress, total, message });
    }

    /// Fails every request parked on the server in `slot` with `e`.
    pub(super) fn unpark_failed(&mut self, slot: usize, e: HostError) {
        for t in self.table.take(Pick::ParkedOn(slot)) {
            if let Taken::Parked(p) = t {
                respond(p.done, Err(e.clone()));
            }
        }
    }
}

impl Ext {
    /// The commands and tools it offers as listings show them: while it
    /// wakes, those it offered asleep (docs/protocol.md §8.1: they stay offered).
    pub(super) fn offered(&self) -> (&[(String, String)], &[ToolEntry]) {
        match &self.idle.slept_with {
            Some((commands, tools)) if self.idle.waking => (commands, tools),
            _ => (&self.commands, &self.tools),
        }
    }
}

/// Each tool's name with what of it counts as a change.
fn tool_keys(tools: &[ToolEntry]) -> Vec<(String, Value)> {
    tools.iter().map(|t| (t.name.clone(), tool_key(&t.description, &t.schema, &t.more))).collect()
}

/// The names of the tools new or different in `after`, then those gone
/// from it.
fn changed_tools(before: &[(String, Value)], after: &[(String, Value)]) -> Vec<String> {
    let mut changed: Vec<String> =
        after.iter().filter(|(n, k)| !before.iter().any(|(m, j)| m == n && j == k)).map(|(n, _)| n.clone()).collect();
    changed.extend(before.iter().filter(|(n, _)| !after.iter().any(|(m, _)| m == n)).map(|(n, _)| n.clone()));
    changed
}

/// What of a tool counts as a change when it is listed again.
fn tool_key(description: &str, schema: &Value, more: &crate::protocol::ToolMore) -> Value {
    serde_json::json!([description, schema, serde_json::to_value(more).unwrap_or(Value::Null)])
}
