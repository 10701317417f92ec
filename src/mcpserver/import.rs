//! `zot mcp import` (docs/protocol.md §8.6): the servers of another MCP
//! client's user-level file copied into `$ZOT_HOME/mcp.json`, each printed,
//! a name already there refused unless `--force`.
//!
//! Decisions where the protocol is silent:
//! - Without `--from`, the one user-level file of the four clients that
//!   exists is read; none or several is an error naming where it looked
//!   (several: which, and `--from`).
//! - Entries are copied as they are (a remote `url` entry included),
//!   except that VS Code's and Cursor's `${userHome}` becomes the home
//!   folder and `${env:VAR}` in `env`, `url` and `headers` becomes `${VAR}`
//!   (what zot expands there,
//!   §7.2); an entry with `${input:ID}` is not imported, saying why.
//! - A name already in `$ZOT_HOME/mcp.json` is not imported (§8.6 refuses
//!   it) and the exit status is 1; the other entries are still written.
//!   The refusal says whether the entry there is the same one, so that
//!   running the import again after adding a server to the source reads
//!   as what it is: the new one imported, the others already there.
//!   The file is rewritten whole (comments in it are not kept),
//!   atomically, `0600`.

use super::files::input_message;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The clients `--from` names.
pub const CLIENTS: [&str; 4] = ["claude-desktop", "claude-code", "cursor", "vscode"];

/// What `zot mcp import` was asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// `--from`: one of [`CLIENTS`] or a file (absolute); `None`: the one
    /// that exists.
    pub from: Option<String>,
    /// `--dry-run`: print what would be written, write nothing.
    pub dry_run: bool,
    /// `--force`: replace a name already there.
    pub force: bool,
}

/// Where `client` keeps its user-level file, for a user whose home is
/// `home`, on this system (`macos`: the macOS places).
pub fn user_file(client: &str, home: &Path, macos: bool) -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty() && !macos).map(PathBuf::from);
    let app = |name: &str| match (macos, &config) {
        (true, _) => home.join("Library/Application Support").join(name),
        (false, Some(c)) => c.join(name),
        (false, None) => home.join(".config").join(name),
    };
    Some(match client {
        "claude-desktop" => app("Claude").join("claude_desktop_config.json"),
        "claude-code" => home.join(".claude.json"),
        "cursor" => home.join(".cursor/mcp.json"),
        "vscode" => app("Code/User").join("mcp.json"),
        _ => return None,
    })
}

/// Runs `zot mcp import` into the global file `target`; the exit status.
pub fn run(opts: &ImportOptions, target: &Path) -> i32 {
    match import(opts, target) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("zot: {}", crate::text::one_line(&e));
            1
        }
    }
}

fn import(opts: &ImportOptions, target: &Path) -> Result<i32, String> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let macos = cfg!(target_os = "macos");
    let (source, client) = match opts.from.as_deref() {
        Some(c) if CLIENTS.contains(&c) => {
            let home = home.ok_or("HOME is not set: cannot find the client's file (give it as --from FILE)")?;
            (user_file(c, &home, macos).unwrap_or_default(), Some(c))
        }
        Some(file) => (PathBuf::from(file), None),
        None => {
            let home = home.ok_or("HOME is not set: give the file with --from")?;
            let found: Vec<(&str, PathBuf)> = CLIENTS
                .iter()
                .filter_map(|c| user_file(c, &home, macos).map(|p| (*c, p)))
                .filter(|(_, p)| p.is_file())
                .collect();
            match found.as_slice() {
                [(c, p)] => (p.clone(), Some(*c)),
                [] => {
                    let looked: Vec<String> = CLIENTS.iter().filter_map(|c| user_file(c, &home, macos)).map(|p| p.display().to_string()).collect();
                    return Err(format!("no MCP client's file found (looked for {}); name one with --from", looked.join(", ")));
                }
                many => {
                    let names: Vec<String> = many.iter().map(|(c, p)| format!("{c} ({})", p.display())).collect();
                    return Err(format!("several MCP clients' files found: {}; choose one with --from", names.join(", ")));
                }
            }
        }
    };
    let bytes = match super::config::read_bytes(&source) {
        Ok(Some(b)) => b,
        Ok(None) => return Err(format!("{}: no such file", source.display())),
        Err(e) => return Err(format!("{}: {e}", source.display())),
    };
    let Value::Object(mut top) = crate::jsonc::parse(&bytes).map_err(|e| format!("{}: {e}", source.display()))? else {
        return Err(format!("{}: not a JSON object", source.display()));
    };
    // VS Code's file lists them under `servers`; the others under `mcpServers`.
    let editor = matches!(client, Some("vscode" | "cursor")) || (client.is_none() && !top.contains_key("mcpServers"));
    let vscode = client == Some("vscode") || (client.is_none() && !top.contains_key("mcpServers"));
    let servers = match top.remove("mcpServers").or_else(|| top.remove("servers")) {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(format!("{}: its servers must be an object", source.display())),
        None => return Err(format!("{}: no `mcpServers` (or VS Code's `servers`) object", source.display())),
    };
    let mut global = read_global(target)?;
    let Some(Value::Object(have)) = global.get_mut("mcpServers") else {
        return Err(format!("{}: `mcpServers` must be an object", target.display()));
    };
    let mut out = String::new();
    let mut refused = false;
    let mut count = 0;
    let verb = if opts.dry_run { "would import" } else { "imported" };
    for (name, mut entry) in servers {
        if let Err(e) = crate::home::validate_name(&name) {
            eprintln!("zot: {}: server {name:?} not imported: invalid name: {e}", source.display());
            refused = true;
            continue;
        }
        if editor {
            if let Err(why) = editor_entry(&mut entry, home_str().as_deref(), vscode) {
                eprintln!("zot: {}: server \"{name}\" not imported: {why}", source.display());
                refused = true;
                continue;
            }
        }
        if have.contains_key(&name) && !opts.force {
            let which = if have.get(&name) == Some(&entry) { "the same entry" } else { "a different entry" };
            eprintln!("zot: {name} is already in {} ({which}): not imported (--force replaces it)", target.display());
            refused = true;
            continue;
        }
        let replaced = if have.contains_key(&name) { " (replacing the one there)" } else { "" };
        out.push_str(&format!("{verb} {name}: {}{replaced}\n", describe(&entry)));
        have.insert(name, entry);
        count += 1;
    }
    let text = serde_json::to_string_pretty(&Value::Object(global)).map_err(|e| e.to_string())? + "\n";
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    if opts.dry_run {
        let _ = writeln!(stdout, "would write {}:", target.display());
        let _ = stdout.write_all(text.as_bytes());
    } else if count > 0 {
        write_atomic(target, text.as_bytes()).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        let _ = writeln!(stdout, "{count} server(s) from {} written to {}", source.display(), target.display());
    } else {
        let _ = writeln!(stdout, "nothing imported from {}", source.display());
    }
    let _ = stdout.flush();
    Ok(if refused { 1 } else { 0 })
}

fn home_str() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| !h.is_empty())
}

/// The global file as it is, or an empty one.
fn read_global(target: &Path) -> Result<Map<String, Value>, String> {
    let mut top = match super::config::read_bytes(target).map_err(|e| format!("{}: {e}", target.display()))? {
        None => Map::new(),
        Some(b) => match crate::jsonc::parse(&b).map_err(|e| format!("{}: {e} (fix it before importing)", target.display()))? {
            Value::Object(m) => m,
            _ => return Err(format!("{}: not a JSON object (fix it before importing)", target.display())),
        },
    };
    top.entry("mcpServers").or_insert_with(|| Value::Object(Map::new()));
    Ok(top)
}

/// A VS Code or Cursor entry made one zot reads the same way: `${userHome}`
/// made the home folder, `${env:VAR}` in `env` made `${VAR}`; `${input:ID}`
/// refused; VS Code's `"type": "http"` left out (a bare `url`: Streamable
/// HTTP with the `sse` fallback, as VS Code reads it).
fn editor_entry(entry: &mut Value, home: Option<&str>, vscode: bool) -> Result<(), String> {
    fn walk(v: &mut Value, home: Option<&str>, in_env: bool) -> Result<(), String> {
        match v {
            Value::String(s) => {
                if let Some(at) = s.find("${input:") {
                    let id: String = s[at + 8..].chars().take_while(|c| *c != '}').collect();
                    return Err(input_message(&id));
                }
                if let Some(h) = home {
                    *s = s.replace("${userHome}", h);
                }
                if in_env {
                    *s = s.replace("${env:", "${");
                }
                Ok(())
            }
            Value::Array(a) => a.iter_mut().try_for_each(|x| walk(x, home, in_env)),
            Value::Object(o) => o.iter_mut().try_for_each(|(k, x)| walk(x, home, in_env || matches!(k.as_str(), "env" | "url" | "headers"))),
            _ => Ok(()),
        }
    }
    walk(entry, home, false)?;
    if let Value::Object(o) = entry {
        if vscode && o.get("type").and_then(Value::as_str) == Some("http") && o.contains_key("url") {
            o.remove("type");
        }
    }
    Ok(())
}

/// `command args...`, or the `url` of a remote entry.
fn describe(entry: &Value) -> String {
    let command = entry.get("command").and_then(Value::as_str);
    let url = entry.get("url").and_then(Value::as_str);
    match (command, url) {
        (Some(c), _) => {
            let args = entry.get("args").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "));
            crate::text::one_line(&match args {
                Some(a) if !a.is_empty() => format!("{c} {a}"),
                _ => c.to_string(),
            })
        }
        (None, Some(u)) => crate::text::one_line(u),
        (None, None) => "(no command or url)".to_string(),
    }
}

/// Writes `path` whole through a temporary file beside it, `0600`.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::home::create_private_dir(dir)?;
    }
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    let mut f = crate::home::private_file().write(true).create_new(true).open(&tmp)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_has_its_place() {
        let h = Path::new("/home/u");
        assert_eq!(user_file("claude-desktop", h, true).unwrap(), Path::new("/home/u/Library/Application Support/Claude/claude_desktop_config.json"));
        assert_eq!(user_file("claude-code", h, false).unwrap(), Path::new("/home/u/.claude.json"));
        assert_eq!(user_file("cursor", h, true).unwrap(), Path::new("/home/u/.cursor/mcp.json"));
        assert_eq!(user_file("vscode", h, true).unwrap(), Path::new("/home/u/Library/Application Support/Code/User/mcp.json"));
        assert_eq!(user_file("other", h, false), None);
    }

    #[test]
    fn editor_entries_are_made_zot_entries() {
        let mut e = serde_json::json!({"command": "${userHome}/bin/s", "env": {"T": "${env:TOKEN}"}});
        editor_entry(&mut e, Some("/home/u"), true).unwrap();
        assert_eq!(e, serde_json::json!({"command": "/home/u/bin/s", "env": {"T": "${TOKEN}"}}));
        let mut e = serde_json::json!({"type": "http", "url": "https://e.com/mcp", "headers": {"A": "${env:K}"}});
        editor_entry(&mut e, None, true).unwrap();
        assert_eq!(e, serde_json::json!({"url": "https://e.com/mcp", "headers": {"A": "${K}"}}));
        let mut e = serde_json::json!({"type": "http", "url": "https://e.com/mcp"});
        editor_entry(&mut e, None, false).unwrap();
        assert_eq!(e["type"], "http", "Cursor's type is kept");
        let mut e = serde_json::json!({"command": "s", "args": ["${input:key}"]});
        assert!(editor_entry(&mut e, None, true).unwrap_err().starts_with("uses ${input:key}, which only VS Code"));
    }
}
