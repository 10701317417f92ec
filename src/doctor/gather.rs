//! The report gathered from the discovery, the host's listing after the
//! load and the load's log lines: one entry per extension the host ran or
//! left out, the name conflicts between them, and the flat list of
//! findings. Each entry's own checks are in [`super::checks`].

use super::checks::{diagnose, diagnose_server, finding};
use super::report::{Conflict, ExtReport, Flat, Name, Report};
use crate::check::Severity;
use crate::discovery::Discovery;
use crate::host::{Listing, State};
use crate::manifest::MANIFEST_FILE;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The report from the discovery, the host's listing after the load, and
/// the log lines of the load by log path.
pub(super) fn build(
    disc: &Discovery,
    listing: &Listing,
    lines: &HashMap<PathBuf, Vec<String>>,
    grace: Duration,
    home: &crate::home::Home,
) -> Report {
    let mut exts = Vec::new();
    let mut conflicts = Vec::new();
    // Command names are matched without case (docs/protocol.md §6.3).
    let cmd_owner: HashMap<String, &str> =
        listing.commands.iter().map(|c| (c.name.to_lowercase(), c.extension.as_str())).collect();
    let tool_owner: HashMap<String, &str> =
        listing.tools.iter().map(|t| (t.name.clone(), t.extension.as_str())).collect();
    let skipped_dirs: Vec<String> =
        disc.shadowed.iter().map(|(f, _)| format!("skipped {} (", f.manifest.dir.display())).collect();
    let broken_dirs: Vec<String> = disc.broken.iter().map(|b| b.dir.display().to_string()).collect();
    // A broken manifest is reported below, from discovery, with its own fix.
    for info in listing.extensions.iter().filter(|i| !(i.state == State::Failed && broken_dirs.contains(&i.dir))) {
        let log = log_of(home, info.kind, &info.name);
        let own: Vec<String> = lines
            .get(&log)
            .map(|l| l.iter().filter(|l| !skipped_dirs.iter().any(|s| l.starts_with(s.as_str()))).cloned().collect())
            .unwrap_or_default();
        let spec = disc.load.iter().chain(&disc.untrusted).find(|f| f.manifest.name == info.name).and_then(|f| f.mcp.clone());
        let mut e = ExtReport {
            name: info.name.clone(),
            kind: info.kind,
            protocol_version: info.protocol_version.clone(),
            server_info: info.server_info.clone(),
            config: spec.as_ref().map(|s| s.file.display().to_string()),
            shadowed_by: None,
            transport: info.transport,
            url: info.url.clone(),
            auth: info.auth,
            login: info.login,
            login_detail: login_detail(spec.as_deref(), home),
            version: info.version.clone(),
            source: info.source.to_string(),
            dir: info.dir.clone(),
            log: log.display().to_string(),
            state: info.state.as_str().to_string(),
            reason: info.error.clone(),
            pid: info.pid,
            commands: Vec::new(),
            tools: Vec::new(),
            events: info.events.clone(),
            intercepts: info.intercepts.clone(),
            confinement: info.confinement.clone(),
            log_lines: own,
            findings: Vec::new(),
            tries: Vec::new(),
        };
        if spec.as_ref().is_some_and(|s| s.protocol == crate::mcpserver::config::Protocol::Auto || s.remote.is_some()) {
            e.tries = super::tries::tries(&e.log_lines, &e.state);
        }
        if info.is_static && e.state == "ready" {
            e.state = "static".into();
        }
        let mark = |list: &[String], shadowed: &[String], owners: &HashMap<String, &str>, command: bool| {
            list.iter()
                .map(|n| {
                    let lost = shadowed.contains(n);
                    let key = if command { n.to_lowercase() } else { n.clone() };
                    let by = lost.then(|| match owners.get(&key) {
                        Some(o) => o.to_string(),
                        None if command => "the host".to_string(),
                        None => "an extension that has since stopped".to_string(),
                    });
                    Name { name: n.clone(), in_force: !lost, shadowed_by: by }
                })
                .collect::<Vec<_>>()
        };
        // A manifest whose exec cannot start is broken, and says why (a
        // server's own error says what is wrong with its entry).
        let found = disc.load.iter().find(|f| f.manifest.dir.display().to_string() == info.dir && f.mcp.is_none());
        if let (true, Some(why)) = (e.state == "failed", found.and_then(|f| crate::manage::exec_problem(&f.manifest))) {
            e.state = "broken".into();
            e.reason = Some(why);
        }
        e.commands = mark(&info.commands, &info.shadowed_commands, &cmd_owner, true);
        e.tools = mark(&info.tools, &info.shadowed_tools, &tool_owner, false);
        match &spec {
            Some(spec) => diagnose_server(&mut e, spec, listing, disc),
            None => diagnose(&mut e, grace, disc),
        }
        exts.push(e);
    }
    for (kind, pick) in [("command", 0), ("tool", 1)] {
        let mut by_name: Vec<Conflict> = Vec::new();
        for e in &exts {
            let names = if pick == 0 { &e.commands } else { &e.tools };
            for n in names.iter().filter(|n| !n.in_force) {
                let winner = n.shadowed_by.clone().unwrap_or_default();
                match by_name.iter_mut().find(|c| c.name == n.name) {
                    Some(c) => c.shadowed.push(e.name.clone()),
                    None => by_name.push(Conflict { kind, name: n.name.clone(), winner, shadowed: vec![e.name.clone()] }),
                }
            }
        }
        conflicts.extend(by_name);
    }
    let sources: HashMap<String, String> = exts.iter().map(|e| (e.name.clone(), e.source.clone())).collect();
    for c in &conflicts {
        let shown = if c.kind == "command" { format!("/{}", c.name) } else { c.name.clone() };
        for loser in &c.shadowed {
            let Some(e) = exts.iter_mut().find(|e| &e.name == loser) else { continue };
            let (msg, hint) = if c.winner == "the host" {
                (
                    format!("its {} {shown} is a built-in of the host; the extension's is never run", c.kind),
                    format!("rename the {} in {loser}", c.kind),
                )
            } else {
                // `zot ext disable` applies to an installed extension only;
                // one given with --ext is left out by not giving it.
                let installed = [c.winner.as_str(), loser.as_str()]
                    .into_iter()
                    .find(|n| sources.get(*n).is_some_and(|s| s != "ext"));
                let or = match installed {
                    Some(n) => format!("or disable {n} (zot ext disable {n})"),
                    None => "or leave one of their --ext paths out".to_string(),
                };
                (
                    format!("its {} {shown} is shadowed by extension {:?}, earlier in load order", c.kind, c.winner),
                    format!("rename the {} in one of them, {or}", c.kind),
                )
            };
            e.findings.push(finding(Severity::Error, "name_conflict", msg, hint));
        }
    }
    for (found, winner) in &disc.shadowed {
        let m = &found.manifest;
        let log = found.log_path(home);
        let dir = m.dir.display().to_string();
        let prefix = format!("skipped {dir} (");
        let mut e = skipped(m, found.source.as_str(), &log, "shadowed");
        e.shadowed_by = Some(winner.display().to_string());
        if let Some(spec) = &found.mcp {
            server_fields(&mut e, spec, home);
        }
        e.reason = Some(format!("extension {:?} is already loaded from {}", m.name, winner.display()));
        e.log_lines = lines.get(&log).map(|l| l.iter().filter(|l| l.starts_with(&prefix)).cloned().collect()).unwrap_or_default();
        e.findings.push(finding(
            Severity::Error,
            "shadowed_extension",
            format!("not loaded: the name {:?} is taken by {} (a higher source)", m.name, winner.display()),
            "remove or rename one of them if this one is meant to run",
        ));
        let winner = winner.display().to_string();
        match conflicts.iter_mut().find(|c| c.kind == "extension" && c.name == m.name) {
            Some(c) => c.shadowed.push(dir),
            None => conflicts.push(Conflict { kind: "extension", name: m.name.clone(), winner, shadowed: vec![dir] }),
        }
        exts.push(e);
    }
    for found in &disc.disabled {
        let m = &found.manifest;
        let mut e = skipped(m, found.source.as_str(), &found.log_path(home), "disabled");
        if let Some(spec) = &found.mcp {
            server_fields(&mut e, spec, home);
            e.reason = Some(format!("\"disabled\": true in {}", spec.file.display()));
            e.findings.push(finding(
                Severity::Info,
                "disabled",
                "not loaded: disabled",
                format!("set \"disabled\": false for {} in {}", m.name, spec.file.display()),
            ));
            exts.push(e);
            continue;
        }
        e.reason = Some("\"enabled\": false in its manifest".into());
        e.findings.push(finding(
            Severity::Info,
            "disabled",
            "not loaded: disabled",
            if found.source == crate::discovery::Source::Ext {
                format!("set \"enabled\": true in {}", m.dir.join(MANIFEST_FILE).display())
            } else {
                format!("zot ext enable {} (or set \"enabled\": true in {})", m.name, m.dir.join(MANIFEST_FILE).display())
            },
        ));
        exts.push(e);
    }
    for b in &disc.broken {
        let label = b.label();
        let dir = b.dir.display().to_string();
        let mut e = ext_report(label.clone(), String::new(), b.source.as_str(), dir, String::new(), "failed");
        e.reason = Some(b.error.to_string());
        if let crate::manifest::ManifestError::Config { msg, .. } = &b.error {
            // Named by its path already: the reason does not repeat it.
            e.reason = Some(format!("{}: {msg}", crate::manifest::BROKEN_CONFIG));
        }
        if b.dir.extension().is_some_and(|x| x == "json") {
            e.kind = "mcp";
            e.findings.push(finding(
                Severity::Error,
                "mcp_config",
                e.reason.clone().unwrap_or_default(),
                format!("fix {}: it must be {{\"mcpServers\": {{\"NAME\": {{\"command\": ...}}}}}} with names of letters, digits, '.', '_' and '-'", b.dir.display()),
            ));
            exts.push(e);
            continue;
        }
        let manifest = b.dir.join(MANIFEST_FILE);
        let (message, hint) = if manifest.exists() {
            (
                // The error may say "invalid manifest" itself: said once.
                match &b.error {
                    crate::manifest::ManifestError::Parse { .. } => b.error.to_string(),
                    _ => format!("invalid manifest: {}", b.error),
                },
                format!("fix {} (zot ext check {} says what is wrong)", manifest.display(), b.dir.display()),
            )
        } else {
            (
                format!("no {MANIFEST_FILE} in {}", b.dir.display()),
                "add one (zot ext new NAME writes a working extension), or remove the folder".to_string(),
            )
        };
        e.findings.push(finding(Severity::Error, "manifest", message, hint));
        exts.push(e);
    }
    // Installed extensions' files, as StrictModes would check them.
    for e in exts.iter_mut().filter(|e| e.source == "global") {
        let dir = Path::new(&e.dir);
        for (msg, fix) in crate::strict::describe(dir, &crate::strict::check(dir)) {
            e.findings.push(finding(Severity::Warning, "file_modes", msg, fix));
        }
    }
    let flat: Vec<Flat> = exts
        .iter()
        .flat_map(|e| {
            e.findings.iter().map(|f| Flat {
                severity: f.severity,
                code: f.code,
                extension: e.name.clone(),
                message: f.message.clone(),
                hint: f.hint.clone(),
            })
        })
        .collect();
    let count = |s: Severity| flat.iter().filter(|f| f.severity == s).count();
    let (errors, warnings, infos) = (count(Severity::Error), count(Severity::Warning), count(Severity::Info));
    Report {
        ok: errors == 0,
        errors,
        warnings,
        infos,
        load_ms: 0.0,
        cwd: String::new(),
        home: String::new(),
        kernel: crate::confine::kernel_support(),
        extensions: exts,
        conflicts,
        findings: flat,
    }
}

/// What every listing carries of a server the host did not start: its
/// file, `transport`, and a remote one's `url` and `auth` (§8.5).
fn server_fields(e: &mut ExtReport, spec: &crate::mcpserver::config::ServerSpec, home: &crate::home::Home) {
    e.kind = "mcp";
    e.config = Some(spec.file.display().to_string());
    (e.transport, e.url, e.auth) = crate::mcpserver::listed_fields(Some(spec), home.root());
}

/// An extension the host did not start.
fn skipped(m: &crate::manifest::Manifest, source: &str, log: &Path, state: &str) -> ExtReport {
    let (dir, log) = (m.dir.display().to_string(), log.display().to_string());
    ext_report(m.name.clone(), m.version.clone(), source, dir, log, state)
}

/// A report with nothing registered, no pid and no findings yet.
fn ext_report(name: String, version: String, source: &str, dir: String, log: String, state: &str) -> ExtReport {
    ExtReport {
        name,
        kind: "extension",
        protocol_version: None,
        server_info: None,
        config: None,
        shadowed_by: None,
        transport: None,
        url: None,
        auth: None,
        login: None,
        login_detail: None,
        version,
        source: source.to_string(),
        dir,
        log,
        state: state.into(),
        reason: None,
        pid: None,
        commands: Vec::new(),
        tools: Vec::new(),
        events: Vec::new(),
        intercepts: Vec::new(),
        log_lines: Vec::new(),
        findings: Vec::new(),
        confinement: serde_json::Value::Null,
        tries: Vec::new(),
    }
}


/// The log of an extension or a server, by the kind a listing gives.
/// How the kept login of a remote server stands, in words.
#[cfg(feature = "remote")]
fn login_detail(spec: Option<&crate::mcpserver::config::ServerSpec>, home: &crate::home::Home) -> Option<String> {
    crate::mcpserver::remote::login_state(spec?, home.root())
}

#[cfg(not(feature = "remote"))]
fn login_detail(_: Option<&crate::mcpserver::config::ServerSpec>, _: &crate::home::Home) -> Option<String> {
    None
}

fn log_of(home: &crate::home::Home, kind: &str, name: &str) -> PathBuf {
    if kind == "mcp" {
        home.logs_dir().join(format!("mcp-{name}.log"))
    } else {
        home.log_path(name)
    }
}

