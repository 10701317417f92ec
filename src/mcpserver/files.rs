//! Where MCP servers are listed (docs/protocol.md §8.6): the files of a
//! project (`.zot/mcp.json`, Claude Code's `.mcp.json`, VS Code's
//! `.vscode/mcp.json`, Cursor's `.cursor/mcp.json`), the global
//! `$ZOT_HOME/mcp.json` and `--mcp-config` files, each read as the client
//! that writes it reads it: its top-level key, its variables, what its
//! relative paths are relative to, and the folder a server runs in.
//!
//! Decisions where the protocol is silent:
//! - Claude Code's `${VAR}` and `${VAR:-default}` are expanded in
//!   `command`, `args` and `cwd` of `.mcp.json` (its `env`, `url` and
//!   `headers` are expanded at start as every one is, §7.2, §8.5, their
//!   values never shown); an unset variable without a default fails that
//!   entry, naming the field and the variable.
//! - In VS Code and Cursor files an unset `${env:VAR}` is empty, as those
//!   clients make it (in `env` it is written `${VAR:-}` for the expansion
//!   at start), except in `url` and `headers`, where it is written `${VAR}`
//!   and an unset one fails the server naming it, as §8.5 says of every
//!   remote entry; listings show the `url` as the file wrote it. A
//!   `${...}` they do not define either is left as it is.
//! - VS Code's `"type": "http"` is a bare `url` (Streamable HTTP with the
//!   `sse` fallback), as VS Code reads it.

use super::config::{self, ConfigFile};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Which file, and so which client's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `--mcp-config FILE`.
    Given,
    /// `<project>/.zot/mcp.json`.
    Zot,
    /// `<project>/.mcp.json` (Claude Code).
    ClaudeCode,
    /// `<project>/.vscode/mcp.json` (VS Code).
    VsCode,
    /// `<project>/.cursor/mcp.json` (Cursor).
    Cursor,
    /// `$ZOT_HOME/mcp.json`.
    Global,
}

/// One server file and the folder it is read against: the project root for
/// a project's file, the session's directory otherwise.
#[derive(Debug, Clone)]
pub struct Place {
    /// Its rules.
    pub kind: Kind,
    /// The file (absolute).
    pub path: PathBuf,
    /// The project root or the session's directory.
    pub root: PathBuf,
}

/// The project's own server files in §8.6's order, highest first.
pub fn project_files(root: &Path) -> Vec<Place> {
    [
        (Kind::Zot, ".zot/mcp.json"),
        (Kind::ClaudeCode, ".mcp.json"),
        (Kind::VsCode, ".vscode/mcp.json"),
        (Kind::Cursor, ".cursor/mcp.json"),
    ]
    .into_iter()
    .map(|(kind, rel)| Place { kind, path: root.join(rel), root: root.to_path_buf() })
    .collect()
}

/// The paths of the project files, relative to its root, for the trust
/// fingerprint and messages.
pub const PROJECT_FILES: [&str; 4] = [".zot/mcp.json", ".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"];

/// Reads `place`: `Ok(None)` when the file does not exist.
pub fn read(place: &Place) -> Result<Option<ConfigFile>, String> {
    match config::read_bytes(&place.path)? {
        Some(bytes) => parse(&bytes, place).map(Some),
        None => Ok(None),
    }
}

/// Parses the bytes of the file at `place`.
pub fn parse(bytes: &[u8], place: &Place) -> Result<ConfigFile, String> {
    let Value::Object(mut top) = crate::jsonc::parse(bytes)? else { return Err("not a JSON object".into()) };
    let key = if place.kind == Kind::VsCode { "servers" } else { "mcpServers" };
    let file_dir = place.path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let base = match place.kind {
        Kind::VsCode | Kind::Cursor => place.root.clone(),
        _ => file_dir,
    };
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut used: Vec<(String, Vec<String>)> = Vec::new();
    let mut written: Vec<(String, String)> = Vec::new();
    if let Some(Value::Object(servers)) = top.get_mut(key) {
        for (name, entry) in servers.iter_mut() {
            let Value::Object(obj) = entry else { continue };
            used.push((name.clone(), parse_time_vars(obj, place.kind)));
            if place.kind == Kind::VsCode && obj.get("type").and_then(Value::as_str) == Some("http") {
                obj.remove("type");
            }
            if let Some(url) = obj.get("url").and_then(Value::as_str).filter(|u| u.contains("${")) {
                written.push((name.clone(), url.to_string()));
            }
            if let Err(why) = substitute(obj, place, &base) {
                failed.push((name.clone(), why));
            }
        }
    }
    let mut file = config::from_object(top, key, &place.path, &base, &place.root)?;
    for spec in &mut file.servers {
        if let Some((_, why)) = failed.iter().find(|(n, _)| *n == spec.name) {
            // §8.6 gives the message of `${input:ID}` whole.
            spec.error = Some(if why.starts_with("uses ${input:") { why.clone() } else { format!("{}: server \"{}\": {why}", place.path.display(), spec.name) });
        }
        if let (Some(r), Some((_, url))) = (spec.remote.as_mut(), written.iter().find(|(n, _)| *n == spec.name)) {
            r.written = Some(url.clone());
        }
        if let Some((_, vars)) = used.iter_mut().find(|(n, _)| *n == spec.name) {
            spec.expanded_vars = std::mem::take(vars);
        }
    }
    Ok(file)
}

/// The message of an entry that uses VS Code's `${input:ID}`.
pub fn input_message(id: &str) -> String {
    format!("uses ${{input:{id}}}, which only VS Code can ask for: set it in the environment and write ${{env:VAR}}")
}

/// Expands the variables of `place`'s client in the entry `obj`, and for
/// VS Code and Cursor makes a relative `command` with a `/` the project
/// root's (`base`), as those clients run it.
fn substitute(obj: &mut Map<String, Value>, place: &Place, base: &Path) -> Result<(), String> {
    for field in ["command", "args", "env", "cwd", "url", "headers", "envFile"] {
        let Some(v) = obj.get_mut(field) else { continue };
        let mut strings: Vec<&mut String> = Vec::new();
        match v {
            Value::String(s) => strings.push(s),
            Value::Array(a) => strings.extend(a.iter_mut().filter_map(|x| if let Value::String(s) = x { Some(s) } else { None })),
            Value::Object(o) => strings.extend(o.values_mut().filter_map(|x| if let Value::String(s) = x { Some(s) } else { None })),
            _ => {}
        }
        // `env`, `url` and `headers` are expanded at start as every one is
        // (§7.2, §8.5), their values never shown: an editor's
        // `${env:VAR}` there becomes `${VAR:-}` in `env` (unset: empty, as
        // there) and `${VAR}` in `url` and `headers` (unset: the server
        // fails naming it).
        let at_start = match field {
            "env" => Some(":-"),
            "url" | "headers" => Some(""),
            _ => None,
        };
        for s in strings {
            let expanded = match place.kind {
                Kind::VsCode | Kind::Cursor => editor_vars(s, &place.root, at_start),
                Kind::ClaudeCode if at_start.is_none() => shell_vars(s),
                _ => Ok(s.clone()),
            };
            *s = expanded.map_err(|why| if why.starts_with("uses ${input:") { why } else { format!("field `{field}`: {why}") })?;
        }
    }
    if matches!(place.kind, Kind::VsCode | Kind::Cursor) {
        if let Some(Value::String(c)) = obj.get_mut("command") {
            if c.contains('/') && !c.starts_with('/') && !c.starts_with('~') {
                *c = base.join(c.trim_start_matches("./")).display().to_string();
            }
        }
    }
    Ok(())
}

/// The host's variables that [`substitute`] expands from the fields read
/// once, when the file is read (`command`, `args`, `cwd`, `envFile`), by
/// name: Claude Code's `${VAR}` and `${VAR:-default}`, an editor's
/// `${env:VAR}` and `${userHome}` (`HOME`).
fn parse_time_vars(obj: &Map<String, Value>, kind: Kind) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for field in ["command", "args", "cwd", "envFile"] {
        let strings: Vec<&String> = match obj.get(field) {
            Some(Value::String(s)) => vec![s],
            Some(Value::Array(a)) => a.iter().filter_map(|v| if let Value::String(s) = v { Some(s) } else { None }).collect(),
            _ => Vec::new(),
        };
        for s in strings {
            let _ = replace_refs(s, |inner| {
                let name = match kind {
                    Kind::VsCode | Kind::Cursor if inner == "userHome" => Some("HOME"),
                    Kind::VsCode | Kind::Cursor => inner.strip_prefix("env:"),
                    Kind::ClaudeCode => Some(inner.split_once(":-").map_or(inner, |(n, _)| n)),
                    _ => None,
                };
                if let Some(n) = name.filter(|n| var_name(n)) {
                    if !names.iter().any(|x| x == n) {
                        names.push(n.to_string());
                    }
                }
                Ok(None)
            });
        }
    }
    names
}

/// Every `${...}` of `s` replaced by what `each` makes of its inside;
/// `None` keeps it as written, as does an unclosed `${`.
fn replace_refs(s: &str, mut each: impl FnMut(&str) -> Result<Option<String>, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return Ok(out);
        };
        match each(&after[..end])? {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[at..at + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// VS Code's and Cursor's variables: `${workspaceFolder}`,
/// `${workspaceFolderBasename}`, `${userHome}`, `${env:VAR}` (with
/// `defer_env` `Some(":-")`, written `${VAR:-}` for the expansion at
/// start; with `Some("")`, `${VAR}`), `${pathSeparator}`; `${input:ID}`
/// is refused.
fn editor_vars(s: &str, root: &Path, defer_env: Option<&str>) -> Result<String, String> {
    replace_refs(s, |name| {
        Ok(Some(match name {
            "workspaceFolder" | "workspaceRoot" => root.display().to_string(),
            "workspaceFolderBasename" => root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            "userHome" => std::env::var("HOME").unwrap_or_default(),
            "pathSeparator" | "/" => "/".to_string(),
            _ if name.starts_with("env:") && defer_env.is_some() => format!("${{{}{}}}", &name[4..], defer_env.unwrap_or_default()),
            _ if name.starts_with("env:") => std::env::var(&name[4..]).unwrap_or_default(),
            _ if name.starts_with("input:") => return Err(input_message(&name[6..])),
            _ => return Ok(None),
        }))
    })
}

/// Whether `s` is a variable name as Claude Code's `${VAR}` takes one.
fn var_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Claude Code's variables: `${VAR}` and `${VAR:-default}`.
fn shell_vars(s: &str) -> Result<String, String> {
    replace_refs(s, |inner| {
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let valid = var_name(name);
        match (valid, std::env::var(name).ok().filter(|v| !v.is_empty() || default.is_none()), default) {
            (false, _, _) => Ok(None),
            (true, Some(v), _) => Ok(Some(v)),
            (true, None, Some(d)) => Ok(Some(d.to_string())),
            (true, None, None) => Err(format!("${{{name}}} is not set (write ${{{name}:-DEFAULT}} for a default)")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(kind: Kind, rel: &str) -> Place {
        Place { kind, path: PathBuf::from("/p").join(rel), root: PathBuf::from("/p") }
    }

    #[test]
    fn each_file_is_read_as_its_client_reads_it() {
        let vs = br#"{
            // VS Code keeps servers under `servers`
            "servers": {"fs": {"type": "stdio", "command": "./bin/s", "args": ["${workspaceFolder}/d", "${pathSeparator}x",],},},
            "inputs": [],
        }"#;
        let f = parse(vs, &place(Kind::VsCode, ".vscode/mcp.json")).unwrap();
        let s = &f.servers[0];
        assert_eq!((s.error.as_deref(), s.args.clone()), (None, vec!["/p/d".to_string(), "/x".to_string()]));
        assert_eq!((s.manifest().exec, s.cwd.clone()), ("/p/bin/s".to_string(), PathBuf::from("/p")));
        let z = parse(br#"{"mcpServers": {"a": {"command": "./run"}}}"#, &place(Kind::Zot, ".zot/mcp.json")).unwrap();
        assert_eq!((z.servers[0].manifest().exec, z.servers[0].cwd.clone()), ("/p/.zot/run".to_string(), PathBuf::from("/p")));
        let g = Place { kind: Kind::Global, path: "/home/z/mcp.json".into(), root: "/work/session".into() };
        let g = parse(br#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "x", "cwd": "sub"}}}"#, &g).unwrap();
        assert_eq!(g.servers[0].cwd, PathBuf::from("/work/session"));
        assert_eq!(g.servers[1].cwd, PathBuf::from("/home/z/sub"));
    }

    #[test]
    fn variables_and_their_refusals() {
        let f = parse(br#"{"servers": {"k": {"command": "x", "env": {"T": "${input:token}"}}}}"#, &place(Kind::VsCode, ".vscode/mcp.json")).unwrap();
        assert_eq!(
            f.servers[0].error.as_deref(),
            Some("uses ${input:token}, which only VS Code can ask for: set it in the environment and write ${env:VAR}")
        );
        assert!(parse(br#"{"mcpServers": {}}"#, &place(Kind::VsCode, ".vscode/mcp.json")).unwrap_err().contains("no `servers` object"));
        assert_eq!(shell_vars("a${ZOT_SURELY_UNSET_X:-d}b").unwrap(), "adb");
        assert!(shell_vars("${ZOT_SURELY_UNSET_X}").unwrap_err().contains("${ZOT_SURELY_UNSET_X} is not set"));
        assert_eq!(shell_vars("${not a var} $X").unwrap(), "${not a var} $X");
        assert_eq!(editor_vars("${command:x}${env:ZOT_SURELY_UNSET_X}", Path::new("/p"), None).unwrap(), "${command:x}");
        assert_eq!(editor_vars("Bearer ${env:TOKEN}", Path::new("/p"), Some(":-")).unwrap(), "Bearer ${TOKEN:-}");
        assert_eq!(editor_vars("Bearer ${env:TOKEN}", Path::new("/p"), Some("")).unwrap(), "Bearer ${TOKEN}");
        assert_eq!(editor_vars("${workspaceFolderBasename}", Path::new("/a/proj"), None).unwrap(), "proj");
        // VS Code's `http` is a bare url; the url is listed as written.
        let f = parse(br#"{"servers": {"v": {"type": "http", "url": "http://h:${env:P}/mcp"}}}"#, &place(Kind::VsCode, ".vscode/mcp.json")).unwrap();
        let r = f.servers[0].remote.as_ref().unwrap();
        assert_eq!((r.transport, r.url.as_str(), r.shown_url().as_str()), (config::Transport::Auto, "http://h:${P}/mcp", "http://h:${env:P}/mcp"));
    }
}
