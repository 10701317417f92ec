//! `zot ext list`: the table (or JSON array) of project-local and global
//! extensions, broken ones and shadowed ones included, with the trust note.

use crate::discovery::Source;
use crate::home::Home;
use crate::manifest::Manifest;
use crate::trust::Status as Trust;
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

use super::lookup::{entries, project_dir};
use super::out::{out_err, say, show, Fail, Res};
use super::sanitize;

/// Longest description shown in the `list` table (the JSON has it whole).
const DESCRIPTION_WIDTH: usize = 60;

#[derive(Serialize)]
struct Row {
    scope: &'static str,
    /// The same as `scope`, named as in `zot serve`'s `list`.
    source: &'static str,
    name: String,
    /// `extension`, or `mcp` for an MCP server from an `mcp.json`.
    kind: &'static str,
    /// What a session started here would do with it: `enabled` (it loads),
    /// `disabled`, `untrusted` (a project-local one in an untrusted
    /// project), `shadowed` (a higher source has the name) or `broken` (an
    /// invalid manifest, or an `exec` that cannot start: `exec_error`).
    state: &'static str,
    version: String,
    enabled: bool,
    language: String,
    description: String,
    dir: String,
    /// A server's file: where it is listed (docs/protocol.md §8.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The directory of the extension that wins over this one (same name,
    /// higher precedence); the file of a server that wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    shadowed_by: Option<String>,
    /// Project-local rows: whether the project is trusted to run them.
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted: Option<bool>,
    /// Why its `exec` cannot run now ([`super::exec_problem`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    exec_error: Option<String>,
    #[serde(rename = "static", skip_serializing_if = "std::ops::Not::not")]
    is_static: bool,
    /// A static extension's skills, absolute.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skills: Vec<String>,
    /// A static extension's theme file, absolute.
    #[serde(skip_serializing_if = "Option::is_none")]
    theme: Option<String>,
    /// What is enforced of its confinement (docs/protocol.md §9.3), under `ZOT_CONFINE`.
    confinement: serde_json::Value,
    /// An MCP server's transport: `stdio`, `http` or `sse` (docs/protocol.md §8.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    transport: Option<&'static str>,
    /// A remote server's `url` as written (no query, fragment or user information).
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// A remote server's authentication: `none`, `headers` or `oauth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<&'static str>,
    /// For `auth` `oauth`: `logged_in` (a login is kept) or `needs_login`.
    #[serde(skip_serializing_if = "Option::is_none")]
    login: Option<&'static str>,
}

/// Whether a login is kept for an `oauth` server.
#[cfg(feature = "remote")]
fn kept_login(spec: &crate::mcpserver::config::ServerSpec, home: &Home) -> &'static str {
    match crate::mcpserver::remote::login_state(spec, home.root()) {
        Some(d) if d.starts_with("logged in") => "logged_in",
        _ => "needs_login",
    }
}

#[cfg(not(feature = "remote"))]
fn kept_login(_: &crate::mcpserver::config::ServerSpec, _: &Home) -> &'static str {
    "needs_login"
}

pub(super) fn list(home: &Home, cwd: Option<&Path>, json: bool, names_only: bool) -> Res {
    let project = project_dir(cwd)?;
    let all = entries(home, &project);
    let trust = all
        .iter()
        .any(|e| e.scope == Source::Project)
        .then(|| crate::trust::status(home, &project, &|d, confine| crate::discovery::project_reach_named(d, home.root(), confine)));
    let trusted = trust == Some(Trust::Trusted);
    // Shadowing follows discovery order, before sorting for display, and
    // discovery's rule: only an extension that loads (enabled, and trusted
    // when project-local) hides the same name further down.
    let mode = crate::confine::Mode::from_env().map_err(Fail::Msg)?;
    let mut winners: Vec<(&str, &Path)> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for e in &all {
        let m = e.manifest.as_ref();
        let shadowed_by = m.and_then(|m| winners.iter().find(|(n, _)| *n == m.name)).map(|(_, d)| show(d));
        let untrusted = e.scope == Source::Project && !trusted;
        let exec_error = match &e.mcp {
            Some(s) if s.error.is_some() => None,
            // A remote one cannot connect without the variables its url and headers send.
            Some(s) => match &s.remote {
                Some(r) => r.expand().err(),
                None => s.resolve_command().err(),
            },
            None => m.and_then(super::exec_problem),
        };
        // What confinement resolves of it, as its start would.
        let subject = m.map(|m| crate::confine::Subject {
            name: &m.name,
            dir: &m.dir,
            declared: m.confine.as_ref(),
            is_server: e.mcp.is_some(),
            project_id: (e.scope == Source::Project).then(|| crate::trust::project_id(&project)),
            exec: match &e.mcp {
                Some(s) => s.resolve_command().ok(),
                None => m.resolve_exec().ok(),
            },
            args: &m.args,
            env: m.env(),
        });
        let confine_error = subject.as_ref().filter(|s| s.declared.is_some()).and_then(|s| s.reach(crate::confine::Mode::Declared, home.root(), &project).err());
        let error = e.error.clone().or_else(|| {
            let path = m.filter(|_| e.mcp.is_none()).map(|m| format!("{}: ", m.path().display())).unwrap_or_default();
            confine_error.map(|c| format!("{path}{c}"))
        });
        let state = match m {
            None => "broken",
            Some(_) if shadowed_by.is_some() => "shadowed",
            Some(_) if error.is_some() => "broken",
            Some(m) if !m.enabled => "disabled",
            Some(_) if untrusted => "untrusted",
            Some(m) => {
                // It still takes its name: the host loads it (and fails).
                winners.push((&m.name, e.mcp.as_ref().map_or(&m.dir, |s| &s.file)));
                if exec_error.is_some() { "broken" } else { "enabled" }
            }
        };
        let field = |f: fn(&Manifest) -> &String| m.map(|m| f(m).clone()).unwrap_or_default();
        let is_static = m.is_some_and(Manifest::is_static);
        let (transport, url, auth) = crate::mcpserver::listed_fields(e.mcp.as_deref(), home.root());
        rows.push(Row {
            scope: e.scope.as_str(),
            source: e.scope.as_str(),
            name: e.name.clone(),
            kind: e.kind(),
            state,
            version: field(|m| &m.version),
            enabled: m.is_some_and(|m| m.enabled),
            language: field(|m| &m.language),
            description: match &e.mcp {
                Some(s) if s.remote.is_some() => s.remote.as_ref().map(|r| r.shown_url()).unwrap_or_default(),
                Some(s) => std::iter::once(s.command.as_str()).chain(s.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" "),
                None => field(|m| &m.description),
            },
            dir: show(&e.dir),
            file: e.mcp.as_ref().map(|s| show(&s.file)),
            error,
            shadowed_by,
            trusted: trust.filter(|_| e.scope == Source::Project).map(|t| t == Trust::Trusted),
            exec_error,
            is_static,
            skills: m.filter(|_| is_static).map(|m| m.skills().iter().map(|p| show(p)).collect()).unwrap_or_default(),
            theme: m.filter(|_| is_static).and_then(|m| m.theme().map(show)),
            confinement: subject.map_or(serde_json::Value::Null, |s| s.listed(mode, home.root(), &project).to_json()),
            login: e.mcp.as_ref().filter(|_| auth == Some("oauth")).map(|s| kept_login(s, home)),
            transport,
            url,
            auth,
        });
    }
    crate::order::sort_by(&mut rows, |a, b| {
        let rank = |r: &Row| if r.scope == Source::Project.as_str() { 0 } else { 1 };
        (rank(a), &a.name, &a.dir).cmp(&(rank(b), &b.name, &b.dir))
    });
    if names_only {
        // The names `enable`, `disable`, `remove` and `logs` take, once each.
        let mut names: Vec<String> = rows.iter().filter(|r| r.error.is_none() || r.kind == "mcp").map(|r| sanitize(&r.name)).collect();
        crate::order::sort(&mut names);
        names.dedup();
        let mut out = io::stdout().lock();
        return names.iter().try_for_each(|n| writeln!(out, "{n}")).and_then(|()| out.flush()).map_err(out_err);
    }
    if json {
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|e| Fail::Msg(format!("cannot encode the list: {e}")))?;
        let mut out = io::stdout().lock();
        return writeln!(out, "{}", escape_json_controls(&text))
            .and_then(|()| out.flush())
            .map_err(out_err);
    }
    if rows.is_empty() {
        say("no extensions installed")?;
        return say("install one with: zot ext install <path|git-url>");
    }
    let trust_note = trust.map(|t| match t {
        Trust::Trusted => format!("project {} is trusted: its extensions run", show(&project)),
        Trust::Unreadable => format!(
            "project {}: its extensions do not run, trust cannot be checked: {}",
            show(&project),
            crate::trust::file_problem(home).unwrap_or_else(|| "trust.json cannot be read".into())
        ),
        Trust::Changed => {
            let what = crate::trust::changed_parts(home, &project, &|d, confine| crate::discovery::project_reach_named(d, home.root(), confine));
            let what = if what.is_empty() { String::new() } else { format!("; what changed: {}", what.join(", ")) };
            format!("project {} has changed since it was trusted: its extensions do not run (run 'zot trust' in it, or pass --trust-project){what}", show(&project))
        }
        _ => format!("project {} is not trusted: its extensions do not run (run 'zot trust' in it, or pass --trust-project)", show(&project)),
    });
    print_table(&rows, trust_note)
}

/// Escapes DEL, C1 controls and bidi overrides that `serde_json` leaves
/// raw. They can only occur inside JSON strings, where `\uXXXX` is valid.
fn escape_json_controls(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && !c.is_ascii()) || c == '\u{7f}' || crate::text::is_bidi_control(c) {
            s.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            s.push(c);
        }
    }
    s
}

fn print_table(rows: &[Row], trust_note: Option<String>) -> Res {
    // One column per fact: STATE says `disabled` (the JSON keeps `enabled`).
    let header = ["SCOPE", "NAME", "VERSION", "STATE", "LANGUAGE", "DESCRIPTION", "DIRECTORY"];
    let dash = |s: &str| if s.is_empty() { "-".to_string() } else { sanitize(s) };
    let mut table: Vec<[String; 7]> = vec![header.map(str::to_string)];
    for r in rows {
        let description = if r.error.is_some() && r.kind == "mcp" {
            "(unusable entry, see below)".to_string()
        } else if r.error.as_deref().is_some_and(|e| e.contains(crate::manifest::BROKEN_CONFIG)) {
            "(broken config file, see below)".to_string()
        } else if r.error.is_some() {
            "(broken manifest, see below)".to_string()
        } else {
            truncate(&dash(&r.description), DESCRIPTION_WIDTH)
        };
        table.push([
            r.scope.to_string(),
            sanitize(&r.name),
            dash(&r.version),
            if r.is_static && r.state == "enabled" { "static".to_string() } else { r.state.to_string() },
            // A server has no language: the column names its kind.
            if r.kind == "mcp" { "mcp".to_string() } else { dash(&r.language) },
            description,
            // A server is found by its file; its folder is where it runs.
            sanitize(r.file.as_deref().unwrap_or(&r.dir)),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in &table {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let mut notes: Vec<String> = trust_note.map(|n| format!("note: {}", sanitize(&n))).into_iter().collect();
    for r in rows {
        if let Some(err) = &r.exec_error {
            let level = if r.state == "broken" { "error" } else { "warning" };
            notes.push(format!("{level}: {} {} cannot start: {}", r.scope, sanitize(&r.name), sanitize(err)));
        }
    }
    for r in rows {
        if let Some(err) = &r.error {
            // A broken configuration file is named by its path already.
            let err = err.strip_prefix(&format!("{}: ", r.name)).unwrap_or(err);
            notes.push(format!("error: {} {}: {}", r.scope, sanitize(&r.name), sanitize(err)));
        }
    }
    for r in rows {
        if let Some(by) = &r.shadowed_by {
            notes.push(format!(
                "note: {} {} ({}) is shadowed by {} and not loaded",
                r.scope,
                sanitize(&r.name),
                sanitize(r.file.as_deref().unwrap_or(&r.dir)),
                sanitize(by)
            ));
        }
    }
    if !notes.is_empty() {
        text.push('\n');
        for n in notes {
            text.push_str(&n);
            text.push('\n');
        }
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(out_err)
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(3)).collect();
    t.push_str("...");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_strips_controls() {
        assert_eq!(sanitize("a\x1b[31mb\x07c\u{7f}e\u{202e}f\tg\nh"), "abcef g h");
        assert_eq!(escape_json_controls("\"a\u{9b}b\u{7f}\""), "\"a\\u009bb\\u007f\"");
    }
}
