//! The listing: every extension in load order with its state and
//! registrations, then the untrusted ones and those whose manifest could
//! not be loaded (failed, named by their folder), and the commands and
//! tools in effect.

use super::{Dispatcher, Life};
use crate::host::{CommandInfo, ExtInfo, Listing, State, ToolInfo};

impl Dispatcher {
    pub(super) fn listing(&self) -> Listing {
        let mut out = Listing::default();
        for (slot, e) in self.exts.iter().enumerate() {
            let m = &e.found.manifest;
            let owns_cmd = |n: &str| self.registry.command_owner(n) == Some(slot);
            let owns_tool = |n: &str| self.registry.tool_owner(n) == Some(slot);
            let (commands, tools) = e.offered();
            for (n, d) in commands {
                if owns_cmd(n) && e.command_spelled(n) == Some(n.as_str()) {
                    out.commands.push(CommandInfo { name: n.clone(), description: d.clone(), extension: m.name.clone() });
                }
            }
            for t in tools {
                if owns_tool(&t.name) {
                    let opt = |s: &String| (!s.is_empty()).then(|| s.clone());
                    out.tools.push(ToolInfo {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        schema: t.schema.clone(),
                        extension: m.name.clone(),
                        exposure: if t.more.exposure.is_empty() { "direct".into() } else { t.more.exposure.clone() },
                        active: t.active,
                        interactive: t.more.interactive,
                        output_schema: t.more.output_schema.clone(),
                        replay: opt(&t.more.replay),
                        namespace: opt(&t.more.namespace),
                        namespace_description: opt(&t.more.namespace_description),
                        namespace_instructions: opt(&t.more.namespace_instructions),
                        title: opt(&t.more.title),
                        annotations: t.more.annotations.clone(),
                    });
                }
            }
            let info = e.proc.as_ref().and_then(|p| p.edge.as_ref()).map(|edge| edge.info()).unwrap_or_default();
            out.extensions.push(ExtInfo {
                protocol_version: info.protocol_version,
                server_info: info.server_info,
                name: m.name.clone(),
                version: if m.version.is_empty() { e.hello_version.clone() } else { m.version.clone() },
                dir: m.dir.display().to_string(),
                source: e.found.source.as_str(),
                // Stopped by a `restart` request, it is coming back.
                state: if matches!(e.life, Life::Stopping { .. }) && !e.restart_waiters.is_empty() {
                    State::Restarting
                } else if e.eras.retry_after_stop {
                    // Between two handshake tries (docs/protocol.md §8.4.3 rule 12).
                    State::Starting
                } else {
                    e.life.state()
                },
                pid: e.pid(),
                capabilities: e.capabilities.clone(),
                restarts: e.supervisor.restarts(),
                commands: commands.iter().map(|c| c.0.clone()).collect(),
                tools: tools.iter().map(|t| t.name.clone()).collect(),
                events: e.events.clone(),
                intercepts: e.intercepts.clone(),
                error: e.error.clone(),
                shadowed_commands: if e.life.running() {
                    // A second spelling of its own command is shadowed by the first.
                    commands
                        .iter()
                        .filter(|c| !owns_cmd(&c.0) || e.command_spelled(&c.0) != Some(c.0.as_str()))
                        .map(|c| c.0.clone())
                        .collect()
                } else {
                    Vec::new()
                },
                shadowed_tools: if e.life.running() {
                    tools.iter().filter(|t| !owns_tool(&t.name)).map(|t| t.name.clone()).collect()
                } else {
                    Vec::new()
                },
                // A running start shows what its enforcement resolved.
                ..static_info(&e.found, &self.cfg, e.confinement.as_ref().filter(|_| e.proc.is_some()))
            });
        }
        for f in &self.load.untrusted {
            out.extensions.push(ExtInfo {
                source: f.source.as_str(),
                state: State::Untrusted,
                error: Some(match &self.load.trust_problem {
                    Some(p) => format!("trust cannot be checked: {p}"),
                    None if self.load.trust_changed => "the project changed since trusted: run 'zot trust' in it to allow it again".into(),
                    None => "the project is not trusted: run 'zot trust' in it".into(),
                }),
                ..static_info(f, &self.cfg, None)
            });
        }
        for b in &self.load.broken {
            out.extensions.push(ExtInfo {
                source: b.source,
                // An MCP configuration file that could not be used.
                kind: if b.dir.ends_with(".json") { "mcp" } else { "extension" },
                state: State::Failed,
                error: Some(b.error.clone()),
                ..bare_info(b.name.clone(), String::new(), b.dir.clone())
            });
        }
        out.orphans = crate::child::unattributed_orphans();
        out.extensions.iter_mut().for_each(login_state);
        out
    }
}

/// A remote server that failed for want of a login is `needs_login`, with
/// the message alone (docs/protocol.md §8.5 rule 11); an `oauth` one says
/// whether it is logged in.
fn login_state(info: &mut ExtInfo) {
    if info.url.is_none() {
        return;
    }
    if let (State::Failed, Some(e)) = (info.state, &info.error) {
        // The host's words whole: a server's text holding them elsewhere
        // is not a login to run.
        if crate::mcpserver::login::is_login_of(&info.name, e) {
            info.state = State::NeedsLogin;
            // Its server asked for OAuth, whatever the entry sends.
            info.auth = Some("oauth");
        }
    }
    if info.auth == Some("oauth") || info.state == State::NeedsLogin {
        info.login = Some(if info.state == State::NeedsLogin { "needs_login" } else { "logged_in" });
    }
}

/// The listing fields taken from the manifest alone, the state `starting`
/// and nothing registered; its confinement is `started`'s (that of its
/// running start), else resolved now.
fn static_info(f: &crate::discovery::Found, cfg: &super::Config, started: Option<&crate::confine::Report>) -> ExtInfo {
    let m = &f.manifest;
    let show = |p: &std::path::Path| p.display().to_string();
    let confinement = match started {
        Some(r) => r.clone(),
        None => crate::discovery::subject(f, &cfg.cwd).listed(cfg.confine, cfg.home.root(), &cfg.cwd),
    };
    let (transport, url, auth) = crate::mcpserver::listed_fields(f.mcp.as_deref(), cfg.home.root());
    ExtInfo {
        confinement: confinement.to_json(),
        confinement_mark: confinement.mark(),
        kind: f.kind(),
        transport,
        url,
        auth,
        is_static: m.is_static(),
        skills: if m.is_static() { m.skills().iter().map(|p| show(p)).collect() } else { Vec::new() },
        theme: if m.is_static() { m.theme().map(show) } else { None },
        config_file: f.mcp.as_ref().map(|s| show(&s.file)),
        ..bare_info(m.name.clone(), m.version.clone(), show(&m.dir))
    }
}

/// An extension known by name and folder only: `starting`, nothing
/// registered, no process.
fn bare_info(name: String, version: String, dir: String) -> ExtInfo {
    ExtInfo {
        name,
        version,
        dir,
        source: "",
        kind: "extension",
        protocol_version: None,
        server_info: None,
        transport: None,
        url: None,
        auth: None,
        login: None,
        state: State::Starting,
        pid: None,
        capabilities: Vec::new(),
        restarts: 0,
        commands: Vec::new(),
        tools: Vec::new(),
        events: Vec::new(),
        intercepts: Vec::new(),
        error: None,
        shadowed_commands: Vec::new(),
        shadowed_tools: Vec::new(),
        is_static: false,
        skills: Vec::new(),
        theme: None,
        confinement: serde_json::Value::Null,
        // Nothing of it could be read, and nothing of it runs.
        confinement_mark: "-",
        config_file: None,
    }
}
