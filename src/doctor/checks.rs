//! The checks of one entry of `zot ext doctor`: an extension's or an MCP
//! server's state after the load, refined by the `[zot]` lines the host
//! logged for it, and the findings (code, message, fix) they call for.

use super::report::ExtReport;
use crate::check::{Finding, Severity};
use crate::host::{fmt_duration, Listing};
use crate::manifest::MANIFEST_FILE;
use std::time::Duration;

/// Which of a server's log lines a doctor warning is about.
type Picks = fn(&str) -> bool;

pub(super) fn finding(severity: Severity, code: &'static str, message: impl Into<String>, hint: impl Into<String>) -> Finding {
    Finding { severity, code, message: message.into(), hint: hint.into() }
}

/// Why a project's own extension or server was not loaded (§7.3): trust
/// that cannot be checked, a project changed since trusted, or one never
/// trusted.
fn untrusted(trust: &crate::discovery::Discovery) -> Finding {
    let fix = "zot trust (or --trust-project for one run)";
    match (&trust.trust_problem, trust.trust_changed) {
        // `zot trust` would fail: the fix is the file's.
        (Some(p), _) => finding(Severity::Error, "untrusted", "not loaded: trust cannot be checked (trust.json cannot be read)", p.clone()),
        (None, true) => finding(Severity::Error, "untrusted", "not loaded: the project changed since trusted", fix),
        (None, false) => finding(Severity::Error, "untrusted", "not loaded: the project is not trusted", fix),
    }
}

/// `[zot]` log lines of a load that point at a problem of the extension,
/// by their start: the code, and the fix.
const LOG_FINDINGS: [(&str, &str, &str); 7] = [
    ("ignored unknown fields of its manifest", "unknown_field", "fix the field's name (a field zot does not read is ignored)"),
    ("hello names ", "hello_name", "use the manifest's name in hello"),
    ("refused ", "refused", "fix that registration (zot ext check DIR shows each problem)"),
    ("ignored intercept ", "bad_intercept", "intercept only events the host lets extensions intercept (docs/protocol.md §2.1, §6.4)"),
    ("ignored a second hello", "second_hello", "send hello once, as the first frame"),
    ("skipped a stdout line", "not_a_frame", "stdout is for protocol frames only: print logs to stderr"),
    ("discarded a line of ", "line_too_long", "send large data in smaller pieces"),
];

/// Refines the host's state with the log of the load, and adds the
/// finding it calls for.
pub(super) fn diagnose(e: &mut ExtReport, grace: Duration, trust: &crate::discovery::Discovery) {
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
        "untrusted" => e.findings.push(untrusted(trust)),
        "static" => {}
        other => {
            let other = other.to_string();
            e.findings.push(finding(Severity::Error, "not_loaded", format!("state {other} after the load"), format!("see {logs}")));
        }
    }
}

/// An MCP server checked as an extension is (docs/protocol.md §8.3): its
/// handshake, its tools, their schemas and names, each problem with a fix
/// in the terms of its configuration file.
pub(super) fn diagnose_server(e: &mut ExtReport, spec: &crate::mcpserver::config::ServerSpec, listing: &Listing, trust: &crate::discovery::Discovery) {
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
                format!("see {logs}; a slow start (npx, uvx, node on a busy machine) needs a longer --ready-grace, such as 30 (and a start over 30 s a longer \"connectTimeout\" in {file})"),
            ));
        }
        "untrusted" => e.findings.push(untrusted(trust)),
        // Only a person logs in (docs/protocol.md §8.5 rule 11).
        "needs_login" => {
            let why = e.reason.clone().unwrap_or_else(|| crate::mcpserver::login::message(&e.name));
            let fix = format!("run zot mcp login {} in a terminal (it prints the address to open where no browser can be)", e.name);
            e.findings.push(finding(Severity::Warning, "needs_login", why, fix));
        }
        "failed" => {
            let why = e.reason.clone().unwrap_or_else(|| "failed to load".into());
            // What is wrong in the entry itself is not a handshake that failed.
            if let Some((code, fix)) = entry_fix(&why, &e.name, &file) {
                e.findings.push(finding(Severity::Error, code, format!("failed to load: {why}"), fix));
                return;
            }
            let hint = if why.contains("built without remote servers") {
                "use a zot built with the default features (cargo build), or run the server over stdio".to_string()
            } else if why.contains("is not supported (stdio, http") {
                format!("set \"type\" to stdio, http or sse in {file}")
            } else if why.contains("variable") && why.contains("is not set") {
                "set the variable in the environment zot runs in".to_string()
            } else if let Some(r) = &spec.remote {
                format!("see {logs}; check that {} answers MCP over {} from here (and its headers in {file})", r.shown_url(), r.transport_name())
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


/// The finding's code and fix for a server whose entry in `file` is what
/// keeps it from starting: no `command`, a `~` in it, a program that is
/// not there, a variable that is not set, VS Code's `${input:ID}`.
fn entry_fix(why: &str, name: &str, file: &str) -> Option<(&'static str, String)> {
    if why.contains("field `command` is missing") {
        return Some(("mcp_config", format!("add \"command\" to the entry {name:?} in {file}: the program that runs the server (\"npx\", \"uvx\", or an absolute path), its arguments in \"args\"")));
    }
    if why.contains("`~` is not expanded") {
        return Some(("mcp_config", format!("write \"command\" of {name:?} in {file} as an absolute path: nothing expands ~ there")));
    }
    // A client file's `${VAR}` (`FILE: server "NAME": field `args`: ${VAR} is not set ...`).
    if let Some(at) = why.find("} is not set (write ${") {
        let var = why[..at].rsplit_once("${").map_or("", |(_, v)| v);
        let field = why.split("field `").nth(1).and_then(|r| r.split('`').next()).unwrap_or("its field");
        return Some(("mcp_config", format!("export {var} before zot starts, or write ${{{var}:-DEFAULT}} in \"{field}\" of {name:?} in {file} for a default")));
    }
    // VS Code's `${input:ID}`, which only VS Code asks for.
    if let Some(id) = why.split("uses ${input:").nth(1).and_then(|r| r.split('}').next()) {
        return Some(("mcp_config", format!("set the value in the environment zot runs in and write ${{env:VAR}} for ${{input:{id}}} in the entry {name:?} in {file}")));
    }
    if why.contains("field `command`") {
        return Some(("mcp_command", format!("install the program, or correct \"command\" of {name:?} in {file} (an absolute path, or a program on PATH)")));
    }
    let var = why.split("variable ").nth(1).and_then(|r| r.strip_suffix(" is not set"))?;
    if ["header ", "url: ", "bearerTokenEnvVar: "].iter().any(|p| why.starts_with(p)) {
        // A remote server's header or url: the value is a secret, never written in the file.
        return Some(("mcp_config", format!("export {var} before zot starts: the entry {name:?} in {file} sends it")));
    }
    Some(("mcp_config", format!("export {var} before zot starts, or give it a default in \"env\" of {name:?} in {file}: ${{{var}:-value}}")))
}
