//! `zot ext doctor [session options] [--json]`: runs the same discovery and
//! load as a session with the same options, through the library's
//! [`Host`], then reports for every extension where it came from, its log,
//! its state, its commands and tools (in force, or shadowed by whom), the
//! name conflicts, and the `[zot]` lines the host logged for it during this
//! load; then stops everything. Every finding has a one-line fix hint, in
//! the vocabulary of `zot ext check` ([`Finding`]).
//!
//! What the host does not load (disabled, shadowed by a higher source,
//! broken manifests) comes from [`discover`], the same pass the host makes.
//! How an extension became ready is read from its `ready (...)` log line,
//! and the problems the host logged during the load become warnings.
//!
//! Exit code (PROTOCOL.md §5): 0 when every enabled extension loaded and no
//! name is in conflict, else 1. An untrusted extension did not load and a
//! shadowed one (same name from a higher source) is a name conflict: both
//! are errors. A disabled one is reported and does not fail.

use crate::check::{Finding, Severity};
use crate::discovery::{discover_with, Discovery};
use crate::host::{fmt_duration, Config, Host, Listing, State};
use crate::manifest::MANIFEST_FILE;
use crate::text::one_line;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `zot ext doctor --help`.
pub const HELP: &str = "Usage: zot ext doctor [OPTIONS] [--json]

Loads every extension and MCP server exactly as a session with the same
options would (--ext paths, --mcp-config files, project-local, global),
waits for the load to end, reports,
and stops them all. For each extension: source, folder, log file, state
(ready, auto_ready, ready_grace_exceeded, failed with the reason, broken
with why its exec cannot start, exited, disabled, shadowed, untrusted,
static), its commands and tools each in
force or shadowed by whom, and the [zot] lines the host logged for it
during this load (a problem the host logged, such as a refused
registration or a hello under another name, is a warning). Then the name
conflicts, and one finding per problem with a fix hint:
  <severity> <code> <extension>: <message> (fix: <what to do>)

Exit status: 0 when every enabled extension loaded and no extension,
command or tool name is in conflict, 1 otherwise (an untrusted or a
shadowed extension fails; a disabled one is reported and does not).

Options: every option of 'zot serve' (see 'zot serve --help'), and
  --json    print one JSON object instead:
            {\"ok\", \"errors\", \"warnings\", \"infos\", \"load_ms\", \"cwd\", \"home\",
             \"extensions\": [{\"name\", \"kind\", \"version\", \"source\", \"dir\", \"log\",
               \"state\", \"reason\"?, \"pid\"?, \"commands\": [{\"name\", \"in_force\",
               \"shadowed_by\"?}], \"tools\": [...], \"events\", \"intercepts\",
               \"log_lines\": [...], \"findings\": [...]}],
             \"conflicts\": [{\"kind\": \"command\"|\"tool\"|\"extension\", \"name\",
               \"winner\", \"shadowed\": [names or folders]}],
             \"findings\": [{\"severity\", \"code\", \"extension\", \"message\", \"hint\"}]}
";

/// A command or tool of one extension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Name {
    pub name: String,
    /// This extension's registration is the one in effect.
    pub in_force: bool,
    /// Who owns the name instead: an extension's name, or `the host` for a
    /// built-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<String>,
}

/// One extension as the doctor saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtReport {
    pub name: String,
    /// `extension`, or `mcp` for an MCP server (PROTOCOL.md §8).
    pub kind: &'static str,
    pub version: String,
    /// `ext`, `project` or `global`.
    pub source: String,
    pub dir: String,
    pub log: String,
    /// `ready`, `auto_ready`, `ready_grace_exceeded`, `failed`, `broken`
    /// (its exec cannot start), `exited`,
    /// `disabled`, `shadowed`, `untrusted`, `static`, or another state the
    /// host reports.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub commands: Vec<Name>,
    pub tools: Vec<Name>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
    /// The `[zot]` lines of this load, without the prefix.
    pub log_lines: Vec<String>,
    pub findings: Vec<Finding>,
    /// An MCP server's protocol version, once it answered `initialize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// An MCP server's `serverInfo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<serde_json::Value>,
    /// An MCP server's configuration file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// What is enforced of its confinement (PROTOCOL.md §9.3).
    pub confinement: serde_json::Value,
}

/// A name claimed more than once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    /// `command`, `tool` or `extension`.
    pub kind: &'static str,
    pub name: String,
    /// The extension in force (`the host` for a built-in command; the
    /// winner's folder for an extension name).
    pub winner: String,
    /// The losers (extension names; folders for an extension name).
    pub shadowed: Vec<String>,
}

/// A finding with the extension it is about, for the flat list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flat {
    pub severity: Severity,
    pub code: &'static str,
    pub extension: String,
    pub message: String,
    pub hint: String,
}

/// Everything `zot ext doctor` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub ok: bool,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Start to the end of the initial load.
    pub load_ms: f64,
    pub cwd: String,
    pub home: String,
    /// What this kernel can enforce (PROTOCOL.md §9.3), said once.
    pub kernel: String,
    pub extensions: Vec<ExtReport>,
    pub conflicts: Vec<Conflict>,
    pub findings: Vec<Flat>,
}

/// Runs `zot ext doctor` with the session's `config`; returns the exit code.
pub fn run(config: Config, json: bool) -> i32 {
    let report = match doctor(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zot: {}", one_line(&e));
            return 1;
        }
    };
    crate::check::report::print(&report, json, report.ok, render)
}

/// Loads, inspects and stops the extensions of `config`. `Err` only when
/// the host cannot start at all.
pub fn doctor(mut config: Config) -> Result<Report, String> {
    config.reserved_commands = crate::console::BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
    let home = config.home.clone();
    let grace = config.timeouts.ready_grace;
    let disc = discover_with(&config.sources, &config.mcp_configs, &config.cwd, &home, config.trust_project);
    let mut logs = LogMarks::default();
    for f in disc.load.iter().chain(disc.shadowed.iter().map(|(f, _)| f)) {
        logs.mark(&f.log_path(&home));
    }
    let cwd = config.cwd.display().to_string();
    let started = Instant::now();
    let (host, _events) = Host::start(config).map_err(|e| e.to_string())?;
    let loaded = host.wait_ready();
    let load_ms = ms(started.elapsed());
    let listing = host.list();
    // Read before the stop, so that only this load's lines are reported;
    // the host's own lines are written by the logger thread.
    crate::log::flush();
    let lines: HashMap<PathBuf, Vec<String>> =
        logs.marks.keys().map(|p| (p.clone(), logs.appended(p))).collect();
    host.shutdown();
    let listing = match (loaded, listing) {
        (Ok(_), Ok(l)) => l,
        (Err(e), _) | (_, Err(e)) => return Err(format!("the host did not report its load: {e}")),
    };
    let mut r = build(&disc, &listing, &lines, grace, &home);
    r.load_ms = load_ms;
    r.cwd = cwd;
    r.home = home.root().display().to_string();
    Ok(r)
}

/// The report from the discovery, the host's listing after the load, and
/// the log lines of the load by log path.
fn build(
    disc: &Discovery,
    listing: &Listing,
    lines: &HashMap<PathBuf, Vec<String>>,
    grace: Duration,
    home: &crate::home::Home,
) -> Report {
    let mut exts = Vec::new();
    let mut conflicts = Vec::new();
    // Command names are matched without case (PROTOCOL.md §6.3).
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
        };
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
            Some(spec) => diagnose_server(&mut e, spec, listing),
            None => diagnose(&mut e, grace, disc.trust_problem.as_deref()),
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
            e.kind = "mcp";
            e.config = Some(spec.file.display().to_string());
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
        if b.dir.extension().is_some_and(|x| x == "json") {
            e.kind = "mcp";
            e.findings.push(finding(
                Severity::Error,
                "mcp_config",
                format!("unusable MCP configuration: {}", b.error),
                format!("fix {}: it must be {{\"mcpServers\": {{\"NAME\": {{\"command\": ...}}}}}} with names of letters, digits, '.', '_' and '-'", b.dir.display()),
            ));
            exts.push(e);
            continue;
        }
        let manifest = b.dir.join(MANIFEST_FILE);
        let (message, hint) = if manifest.exists() {
            (
                format!("invalid manifest: {}", b.error),
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
    }
}

/// Which of a server's log lines a doctor warning is about.
type Picks = fn(&str) -> bool;

fn finding(severity: Severity, code: &'static str, message: impl Into<String>, hint: impl Into<String>) -> Finding {
    Finding { severity, code, message: message.into(), hint: hint.into() }
}

/// `[zot]` log lines of a load that point at a problem of the extension,
/// by their start: the code, and the fix.
const LOG_FINDINGS: [(&str, &str, &str); 6] = [
    ("hello names ", "hello_name", "use the manifest's name in hello"),
    ("refused ", "refused", "fix that registration (zot ext check DIR shows each problem)"),
    ("ignored intercept ", "bad_intercept", "intercept only events the host lets extensions intercept (PROTOCOL.md 2.1, 6.4)"),
    ("ignored a second hello", "second_hello", "send hello once, as the first frame"),
    ("skipped a stdout line", "not_a_frame", "stdout is for protocol frames only: print logs to stderr"),
    ("discarded a line of ", "line_too_long", "send large data in smaller pieces"),
];

/// Refines the host's state with the log of the load, and adds the
/// finding it calls for.
fn diagnose(e: &mut ExtReport, grace: Duration, trust_problem: Option<&str>) {
    let check = format!("zot ext check {}", e.dir);
    let logs = format!("zot ext logs {}", e.name);
    for (start, code, hint) in LOG_FINDINGS {
        let hits: Vec<&String> = e.log_lines.iter().filter(|l| l.starts_with(start)).collect();
        if let Some(first) = hits.first() {
            let more = if hits.len() > 1 { format!(" (and {} more like it)", hits.len() - 1) } else { String::new() };
            let msg = format!("the host logged: {first}{more}");
            e.findings.push(finding(Severity::Warning, code, msg, hint.replace("DIR", &e.dir)));
        }
    }
    match e.state.as_str() {
        "ready" => {
            if e.log_lines.iter().any(|l| l.starts_with("ready (no ready frame")) {
                e.state = "auto_ready".into();
                e.findings.push(finding(
                    Severity::Warning,
                    "auto_ready",
                    "no ready frame: the host counted it ready after 250ms without frames",
                    "send {\"type\":\"ready\"} after the initial registrations",
                ));
            }
        }
        "starting" => {
            e.state = "ready_grace_exceeded".into();
            let why = format!("not ready when the ready grace ({}) ran out", fmt_duration(grace));
            e.reason = Some(why.clone());
            e.findings.push(finding(
                Severity::Error,
                "ready_grace_exceeded",
                why,
                format!("send hello at once and ready right after registering ({check}); or raise --ready-grace"),
            ));
        }
        "failed" => {
            let why = e.reason.clone().unwrap_or_else(|| "failed to load".into());
            let hint = if why.starts_with("no hello") {
                format!("send {{\"type\":\"hello\",...}} first, right at start-up, and flush stdout ({check})")
            } else if why.contains("exec") || why.starts_with("cannot start") {
                format!("fix \"exec\" in {}/{MANIFEST_FILE}: the program must exist and be executable", e.dir)
            } else {
                format!("see {logs}, or run {check}")
            };
            e.findings.push(finding(Severity::Error, "failed", format!("failed to load: {why}"), hint));
        }
        "broken" => {
            let why = e.reason.clone().unwrap_or_default();
            let hint = format!("fix \"exec\" in {}/{MANIFEST_FILE}, or build or install the program it names", e.dir);
            e.findings.push(finding(Severity::Error, "broken", format!("cannot start: {why}"), hint));
        }
        "exited" => {
            let how = e.log_lines.iter().rev().find_map(|l| l.strip_prefix("exited (")).map(|s| s.trim_end_matches(')').to_string());
            let why = format!("exited during the load ({})", how.as_deref().unwrap_or("no status"));
            e.reason = Some(why.clone());
            e.findings.push(finding(Severity::Error, "exited", why, format!("see {logs}, or run {check}")));
        }
        "untrusted" => e.findings.push(match trust_problem {
            // `zot trust` would fail: the fix is the file's.
            Some(p) => finding(Severity::Error, "untrusted", "not loaded: trust cannot be checked (trust.json cannot be read)", p),
            None => finding(
                Severity::Error,
                "untrusted",
                "not loaded: the project is not trusted",
                "zot trust (or --trust-project for one run)",
            ),
        }),
        "static" => {}
        other => {
            let other = other.to_string();
            e.findings.push(finding(Severity::Error, "not_loaded", format!("state {other} after the load"), format!("see {logs}")));
        }
    }
}

/// The log of an extension or a server, by the kind a listing gives.
fn log_of(home: &crate::home::Home, kind: &str, name: &str) -> PathBuf {
    if kind == "mcp" {
        home.logs_dir().join(format!("mcp-{name}.log"))
    } else {
        home.log_path(name)
    }
}

/// An MCP server checked as an extension is (PROTOCOL.md §8.3): its
/// handshake, its tools, their schemas and names, each problem with a fix
/// in the terms of its configuration file.
fn diagnose_server(e: &mut ExtReport, spec: &crate::mcpserver::config::ServerSpec, listing: &Listing) {
    let file = spec.file.display().to_string();
    let by_hand = std::iter::once(spec.command.as_str()).chain(spec.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
    let logs = format!("zot ext logs {}", e.name);
    for l in e.log_lines.iter().filter(|l| l.starts_with("skipped a stdout line")).take(1) {
        let msg = format!("the host logged: {l}");
        e.findings.push(finding(Severity::Warning, "not_json_rpc", msg, "the server's stdout is for JSON-RPC only: print logs to stderr"));
    }
    // Warnings the host's own log lines carry: (which lines, code, fix).
    let name = &e.name;
    let logged: [(Picks, &'static str, String); 4] = [
        (
            |l| l.starts_with("ignored unknown fields of its entry"),
            "mcp_unknown_field",
            format!("correct the spelling of those fields of {name:?} in {file}, or remove them: they change nothing"),
        ),
        (
            |l| l.starts_with("cut the name of "),
            "mcp_name",
            "a name over 64 bytes is offered cut, ending in a hash: give the tool (or prompt) a shorter name in the server, or the server a shorter name".into(),
        ),
        (
            |l| l.contains("is shadowed by tool"),
            "mcp_name",
            format!("rename one of the tools in the server, or leave one out with \"disabledTools\" in {file}"),
        ),
        (
            // A tool refused at registration is not listed.
            |l| l.starts_with("refused tool "),
            "mcp_schema",
            "fix the tool's inputSchema in the server: the tool is not offered until it is a JSON object".into(),
        ),
    ];
    let mut found = Vec::new();
    for (picks, code, fix) in &logged {
        for l in e.log_lines.iter().filter(|l| picks(l)) {
            found.push(finding(Severity::Warning, code, format!("the host logged: {l}"), fix.clone()));
        }
    }
    e.findings.extend(found);
    match e.state.as_str() {
        "ready" => {}
        "starting" => {
            e.state = "ready_grace_exceeded".into();
            e.findings.push(finding(
                Severity::Error,
                "mcp_handshake",
                "still connecting when the ready grace ran out; its tools come later",
                format!("see {logs}; a slow start (npx, uvx) may need --ready-grace, or \"connectTimeout\" in {file}"),
            ));
        }
        "untrusted" => e.findings.push(finding(
            Severity::Error,
            "untrusted",
            "not loaded: the project is not trusted",
            "zot trust (or --trust-project for one run)",
        )),
        "failed" => {
            let why = e.reason.clone().unwrap_or_else(|| "failed to load".into());
            let hint = if why.contains("not supported (stdio only)") {
                format!("run the server over stdio (\"command\" and \"args\") in {file}, or remove the entry")
            } else if why.contains("initialize") && why.contains("connectTimeout") {
                format!("run it by hand ({by_hand}) to see that it speaks MCP on stdio; or raise \"connectTimeout\" in {file}")
            } else if why.contains("protocol version") {
                "update the server: this host speaks MCP 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05".to_string()
            } else if why.contains("command") || why.contains("field") {
                format!("fix the entry {:?} in {file}", e.name)
            } else {
                format!("see {logs}, or run it by hand: {by_hand}")
            };
            e.findings.push(finding(Severity::Error, "mcp_handshake", format!("failed to load: {why}"), hint));
        }
        other => {
            let other = other.to_string();
            e.findings.push(finding(Severity::Error, "not_loaded", format!("state {other} after the load"), format!("see {logs}")));
        }
    }
    if e.state != "ready" {
        return;
    }
    if e.tools.is_empty() {
        e.findings.push(finding(
            Severity::Warning,
            "mcp_no_tools",
            "the server offers no tools",
            format!("check \"enabledTools\" and \"disabledTools\" in {file}, and the server's own options"),
        ));
    }
    for t in listing.tools.iter().filter(|t| t.extension == e.name) {
        let ok = t.schema.get("type").and_then(serde_json::Value::as_str) == Some("object");
        if !ok {
            e.findings.push(finding(
                Severity::Warning,
                "mcp_schema",
                format!("tool {}: its inputSchema is not an object schema ({{\"type\": \"object\", ...}})", t.name),
                "fix the tool's inputSchema in the server; models are given it as is",
            ));
        }
    }
}

/// Log sizes before the load, so that only what it appended is read.
#[derive(Default)]
struct LogMarks {
    marks: HashMap<PathBuf, u64>,
}

/// At most this much of one log is read back.
const LOG_READ: u64 = 256 * 1024;

impl LogMarks {
    fn mark(&mut self, path: &Path) {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        self.marks.insert(path.to_path_buf(), len);
    }

    /// The `[zot]` lines appended since [`LogMarks::mark`], prefix removed.
    fn appended(&self, path: &Path) -> Vec<String> {
        let Ok(mut f) = std::fs::File::open(path) else { return Vec::new() };
        let len = f.metadata().map_or(0, |m| m.len());
        let mut from = self.marks.get(path).copied().unwrap_or(0);
        // Rotated meanwhile: the file starts over.
        if len < from {
            from = 0;
        }
        from = from.max(len.saturating_sub(LOG_READ));
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_err() || f.take(LOG_READ).read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        String::from_utf8_lossy(&buf)
            .lines()
            .filter_map(|l| l.strip_prefix("[zot] "))
            .map(one_line)
            .collect()
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// The text report.
pub fn render(r: &Report) -> String {
    let mut s = format!(
        "zot ext doctor: {} extension(s), load {:.0}ms (home {}, project {})\n",
        r.extensions.len(),
        r.load_ms,
        one_line(&r.home),
        one_line(&r.cwd)
    );
    s.push_str(&r.kernel);
    s.push('\n');
    for e in &r.extensions {
        let reason = e.reason.as_deref().map(|x| format!(": {x}")).unwrap_or_default();
        s.push('\n');
        let version = if e.version.is_empty() { String::new() } else { format!(" {}", e.version) };
        let kind = if e.kind == "mcp" { " (MCP server)" } else { "" };
        s.push_str(&one_line(&format!("{}{version}{kind} [{}{}]", e.name, e.state, reason)));
        s.push('\n');
        if let Some(c) = &e.config {
            let proto = e.protocol_version.as_deref().map(|p| format!(", protocol {p}")).unwrap_or_default();
            s.push_str(&one_line(&format!("  config {c}{proto}")));
            s.push('\n');
        }
        s.push_str(&one_line(&format!("  source {}, folder {}", e.source, e.dir)));
        s.push('\n');
        if !e.log.is_empty() {
            s.push_str(&one_line(&format!("  log    {}", e.log)));
            s.push('\n');
        }
        for (what, names, slash) in [("commands", &e.commands, "/"), ("tools", &e.tools, "")] {
            if names.is_empty() {
                continue;
            }
            let shown: Vec<String> = names
                .iter()
                .map(|n| match &n.shadowed_by {
                    Some(by) => format!("{slash}{} (shadowed by {by})", n.name),
                    None => format!("{slash}{}", n.name),
                })
                .collect();
            s.push_str(&one_line(&format!("  {what:<8} {}", shown.join(", "))));
            s.push('\n');
        }
        if !e.events.is_empty() || !e.intercepts.is_empty() {
            s.push_str(&one_line(&format!("  events   {}; intercepts {}", e.events.join(", "), e.intercepts.join(", "))));
            s.push('\n');
        }
        if let Some(c) = e.confinement.as_object() {
            let list = |k: &str| c[k].as_array().map(|a| a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(", ")).unwrap_or_default();
            s.push_str(&format!("  confine enforced: {}; not enforced: {}\n", list("enforced"), list("not_enforced")));
        }
        for l in &e.log_lines {
            s.push_str(&one_line(&format!("  [zot] {l}")));
            s.push('\n');
        }
    }
    if !r.conflicts.is_empty() {
        s.push_str("\nconflicts:\n");
        for c in &r.conflicts {
            let shown = if c.kind == "command" { format!("/{}", c.name) } else { c.name.clone() };
            s.push_str(&one_line(&format!("  {} {shown}: {} in force; shadowed: {}", c.kind, c.winner, c.shadowed.join(", "))));
            s.push('\n');
        }
    }
    if !r.findings.is_empty() {
        s.push('\n');
    }
    for f in &r.findings {
        let label = if f.severity == Severity::Info { "hint" } else { "fix" };
        let line = format!("{:<8}{:<22} {}: {} ({label}: {})", f.severity.as_str(), f.code, f.extension, f.message, f.hint);
        s.push_str(&one_line(&line));
        s.push('\n');
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    s.push_str(&format!(
        "\n{}: {}, {}, {}\n",
        if r.ok { "ok" } else { "FAILED" },
        plural(r.errors, "error"),
        plural(r.warnings, "warning"),
        plural(r.infos, "info")
    ));
    s
}
