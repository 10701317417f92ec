//! The report of `zot ext doctor`: what it holds per extension, per name
//! conflict and per finding (its `--json` shape), and its text form.

use crate::check::{Finding, Severity};
use crate::text::one_line;
use serde::Serialize;

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
    /// `extension`, or `mcp` for an MCP server (docs/protocol.md §8).
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
    /// A shadowed one: the folder (for a server, the file) that won.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<String>,
    /// An MCP server's transport: `stdio`, `http` or `sse` (docs/protocol.md §8.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    /// A remote server's `url` as written (no query, fragment or user information).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A remote server's authentication: `none`, `headers` or `oauth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<&'static str>,
    /// For `auth` `oauth`: `logged_in` or `needs_login`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login: Option<&'static str>,
    /// The kept login in words: `logged in, expires in 52 min` (never a token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login_detail: Option<String>,
    /// What is enforced of its confinement (docs/protocol.md §9.3).
    pub confinement: serde_json::Value,
    /// An MCP server under `auto`: each handshake try and its end
    /// (docs/protocol.md §8.4.3).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tries: Vec<super::tries::HandshakeTry>,
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
    /// What this kernel can enforce (docs/protocol.md §9.3), said once.
    pub kernel: String,
    pub extensions: Vec<ExtReport>,
    pub conflicts: Vec<Conflict>,
    pub findings: Vec<Flat>,
}

/// The text report.
pub fn render(r: &Report) -> String {
    // Servers are counted as servers, a broken configuration file as neither.
    let broken_file = |e: &ExtReport| e.reason.as_deref().is_some_and(|x| x.contains(crate::manifest::BROKEN_CONFIG));
    let servers = r.extensions.iter().filter(|e| e.kind == "mcp" && !broken_file(e)).count();
    let files = r.extensions.iter().filter(|e| e.kind == "mcp" && broken_file(e)).count();
    let mut counted = format!("{} extension(s)", r.extensions.len() - servers - files);
    if servers > 0 {
        counted.push_str(&format!(", {servers} MCP server(s)"));
    }
    if files > 0 {
        counted.push_str(&format!(", {files} broken config file(s)"));
    }
    let mut s = format!(
        "zot ext doctor: {counted}, load {:.0}ms (home {}, project {})\n",
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
        let kind = match e.kind {
            "mcp" if broken_file(e) => " (MCP config file)",
            "mcp" => " (MCP server)",
            _ => "",
        };
        s.push_str(&one_line(&format!("{}{version}{kind} [{}{}]", e.name, e.state, reason)));
        s.push('\n');
        if let Some(c) = &e.config {
            let proto = e.protocol_version.as_deref().map(|p| format!(", protocol {p}")).unwrap_or_default();
            s.push_str(&one_line(&format!("  config {c}{proto}")));
            s.push('\n');
        }
        if let (Some(url), Some(t)) = (&e.url, e.transport) {
            let login = e.login_detail.as_deref().map(|d| format!(", {d}")).unwrap_or_default();
            s.push_str(&one_line(&format!("  remote {url} ({t}, auth {}{login})", e.auth.unwrap_or("none"))));
            s.push('\n');
        }
        for (i, t) in e.tries.iter().enumerate() {
            let over = match (&t.transport, &t.url) {
                (Some(tr), Some(url)) => format!(" over {tr} to {url}"),
                _ => String::new(),
            };
            let what = if t.protocol.is_empty() { String::new() } else { format!(" {} ({})", t.protocol, t.method) };
            s.push_str(&one_line(&format!("  try {}   {what}{over}: {}", i + 1, t.outcome)));
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
            if c.contains_key("reads") {
                let or_nothing = |k: &str| Some(list(k)).filter(|l| !l.is_empty()).unwrap_or_else(|| "nothing".into());
                s.push_str(&one_line(&format!("  confine reads {}; writes {}", or_nothing("reads"), or_nothing("writes"))));
                s.push('\n');
            }
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
