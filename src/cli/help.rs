//! The usage texts: `zot --help`, `zot ext --help`, each command's
//! `--help` and the about text above its options.

use super::flags::{Cmd, Flag, COMMANDS, HELP_FLAG, SESSION_FLAGS, VERSION_FLAG};
use super::topics;
use crate::home::Home;
use crate::manage::sanitize;
use crate::VERSION;

/// `zot --help`.
pub fn top_help() -> String {
    let mut s = format!("zot {VERSION}: a host for zot extensions\n\nUsage:\n");
    for c in COMMANDS.iter() {
        let words = if c.name.is_empty() { String::new() } else { format!(" {}", c.name) };
        let usage = format!("zot{words} {}", c.usage).trim_end().to_string();
        if c.summary.is_empty() {
            s.push_str(&format!("  {usage}\n"));
        } else if usage.len() <= 34 {
            s.push_str(&format!("  {usage:<34}  {}\n", c.summary));
        } else {
            s.push_str(&format!("  {usage}\n  {:<34}  {}\n", "", c.summary));
        }
    }
    s.push('\n');
    s.push_str(&session_options(""));
    for f in [HELP_FLAG, VERSION_FLAG] {
        s.push_str(&flag_lines(&f));
    }
    s.push_str("SECS accepts fractions (0.5).\n\nRun 'zot ext --help' or 'zot <command> --help' for more.\n");
    s.push_str(&environment());
    s.push_str(&files());
    s.push_str(&console());
    s
}

/// Two columns: `left` padded to `width`, `right` wrapped to the rest of
/// 80 columns, on a line of its own below when `left` is too long.
fn columns(left: &str, right: &str, width: usize) -> String {
    let mut s = String::new();
    let mut rows = wrap(right, 76 - width).into_iter();
    if left.len() > width {
        s.push_str(&format!("  {left}\n"));
    } else if let Some(first) = rows.next() {
        s.push_str(&format!("  {left:<width$}  {first}\n"));
    }
    for r in rows {
        s.push_str(&format!("  {:<width$}  {r}\n", ""));
    }
    s
}

/// The files zot reads and writes.
fn files() -> String {
    let mut s = String::from("\nFiles:\n");
    for (path, what) in topics::FILES {
        s.push_str(&columns(path, what, 32));
    }
    s
}

/// The console's commands and keys.
fn console() -> String {
    let mut s = String::from("\nThe console:\n");
    for l in wrap(topics::CONSOLE_ABOUT, 76) {
        s.push_str(&format!("  {l}\n"));
    }
    s.push_str("\n  Commands:\n");
    for (name, what) in crate::console::BUILTINS {
        s.push_str(&columns(&format!("  /{name}"), what, 14));
    }
    s.push_str("\n  Keys on a terminal:\n");
    for (keys, what) in topics::KEYS {
        s.push_str(&columns(&format!("  {keys}"), what, 30));
    }
    s
}

/// The about text of a command's `--help`, above its options.
pub fn about(name: &str) -> &'static str {
    match name {
        "serve" => "Runs the extension host and speaks JSON lines on stdin/stdout, so that an
agent in any language can use it as its extension subsystem. Requests are
{\"id\":..,\"type\":<method>,...}; methods: ping, list, command, tool,
intercept, event, agent_tools, call_tool_result, panel_key, panel_close,
resources, read_resource, cancel, reload, restart, shutdown. Diagnostics go to stderr. End of stdin
shuts the host down. Options may come before or after the word 'serve'.

Example: the weather extension of the source tree, one request (>) and its
answer, after the lines that say it is ready:
  $ zot serve --no-ext --ext examples/rust/weather
  {\"type\":\"extension_ready\",\"extension\":\"weather\",\"commands\":[\"weather\",\"cwd\"],\"tools\":[\"weather\"]}
  {\"type\":\"ready\",\"extensions\":[\"weather\"]}
  > {\"id\":1,\"type\":\"tool\",\"name\":\"weather\",\"args\":{\"city\":\"Berlin\"}}
  {\"type\":\"response\",\"id\":1,\"ok\":true,\"result\":{\"extension\":\"weather\",\"content\":[{\"text\":\"Berlin: sunny, 21°C (fake)\",\"type\":\"text\"}],\"is_error\":false}}
",
        "mcp login" => "Logs in to the remote MCP server NAME (an entry with a url, found as a
session would find it: --mcp-config, the project's and the global mcp.json)
through the browser, with OAuth 2.1: prints the address to open (and opens
it where a display is set), waits up to 5 minutes for the browser's
redirect to http://localhost:PORT/callback (the entry's oauth.callbackPort,
else any free port), and keeps the tokens in $ZOT_HOME/auth/ (0600). The
sessions that follow use them, and refresh them. A session never opens a
browser: a server that needs a login is listed needs_login, with this
command to run.
",
        "mcp logout" => "Forgets the tokens kept for the remote MCP server NAME; it needs a login
again.
",
        "mcp" => "Runs the extension host as an MCP server on stdin/stdout (JSON-RPC 2.0, one
message per line), so that any MCP client can use what a session hosts: the
extensions' tools as MCP tools (the tool_call intercept chain and event run
first), their commands as MCP prompts with one optional argument, args, and
their notes as log messages; and the MCP servers it hosts itself (local or
remote, from mcp.json files and a trusted project's .mcp.json,
.vscode/mcp.json and .cursor/mcp.json), their tools, prompts and resources
(resources/list, resources/templates/list, resources/read). It speaks both
revisions, chosen by the client's first request: 2025-11-25 (initialize;
also 2025-06-18, 2025-03-26 and 2024-11-05) and 2026-07-28 (server/discover).
Diagnostics go to stderr. End of stdin shuts the host down. Options may come
before or after the word 'mcp'.

Register it in a client's configuration, for example:
  {\"mcpServers\": {\"zot\": {\"command\": \"zot\",
                    \"args\": [\"mcp\", \"--ext\", \"/path/to/extension\"]}}}
",
        "mcp import" => "Copies the MCP servers of another client's user-level file into
$ZOT_HOME/mcp.json, printing each: Claude Desktop's claude_desktop_config.json,
Claude Code's ~/.claude.json (user scope), Cursor's ~/.cursor/mcp.json or
VS Code's Code/User/mcp.json (under ~/.config on Linux, ~/Library/Application
Support on macOS), or any FILE in that format. A name already in
$ZOT_HOME/mcp.json is not imported (exit 1; the refusal says whether the
entry there is the same) unless --force. Servers a
project lists (.mcp.json, .vscode/mcp.json, .cursor/mcp.json) need no
import: zot reads them in a trusted project.
",
        "ext list" => "Lists the project-local (<cwd>/.zot/extensions) and global
($ZOT_HOME/extensions) extensions, including disabled ones and broken
manifests, sorted by name, project-local first. A global extension with the
same name as a project-local one is shadowed by it (noted below the table).
--json prints a JSON array of {scope, name, version, enabled, language,
description, dir, error?, shadowed_by?}.
",
        "ext install" => "Installs an extension into $ZOT_HOME/extensions/<name>, <name> being the
manifest's name (not the folder's or repository's).

A git URL (https://, http://, ssh://, git@, file://, or anything ending in
.git) is shallow-cloned with the system git. Anything else is a local folder
holding extension.json (or that file's path); it is copied recursively keeping
file modes, except a top-level .git, and a top-level target/ and node_modules/
of which only the files the manifest's exec and args name are copied. A
symbolic link is copied as a link only if it stays inside the
extension; otherwise the install is refused. The result must hold a valid
manifest; on any failure nothing is left behind. An extension that is already
installed is never overwritten: remove it first.
",
        "ext remove" => "Deletes the extension's directory (a manifest or folder name). Asks
for confirmation on a terminal; without a terminal, --yes is required. An
extension directory that is a symbolic link is unlinked, its target is left
alone. The extension's log is kept.
",
        "ext enable" => "Sets \"enabled\": true in the extension's manifest (an atomic rewrite that keeps
every other field and byte), so it is loaded on launch again.
",
        "ext disable" => "Sets \"enabled\": false in the extension's manifest (an atomic rewrite that
keeps every other field and byte): it stays installed and listed but is not
loaded on launch.
",
        "ext logs" => "Prints the log of an extension, $ZOT_HOME/logs/ext-<name>.log, or of an MCP
server, $ZOT_HOME/logs/mcp-<name>.log: its stderr plus the host's lines
prefixed [zot]. Servers are found in the project's and the global mcp.json,
and in each --mcp-config FILE given as the session was; a log whose
extension or server is gone is still shown.
",
        "untrust" => "Forgets the project DIR (default: the current directory) in
$ZOT_HOME/trust.json, so that its project-local extensions (DIR/.zot/extensions)
no longer run until it is trusted again with 'zot trust'. Nothing else
changes. A project that was not trusted is left as it is, and said so.
",
        "trust" => "Project-local extensions (DIR/.zot/extensions) come with the repository you
are in, so they run only in a trusted project. 'zot trust' records the
project's canonical path and a fingerprint of its extensions (manifests and
the files they run inside the project) in $ZOT_HOME/trust.json; when they
change, the project is untrusted again until trusted anew. 'zot untrust'
forgets it; '--list' shows every trusted project and whether it changed.
DIR defaults to the current directory. '--trust-project' (zot, zot serve,
zot mcp) runs them for one run without recording anything.
",
        "completions" => "Prints the completion script for bash, zsh or fish, for example:
  zot completions bash > ~/.local/share/bash-completion/completions/zot
  zot completions zsh > \"${fpath[1]}/_zot\"
  zot completions fish > ~/.config/fish/completions/zot.fish
",
        "help" => "Prints the same help as --help: 'zot help' as 'zot --help', 'zot help ext'
as 'zot ext --help', 'zot help ext install' (or 'zot ext help install') as
'zot ext install --help'. A subcommand alone is its group's: 'zot help
import' as 'zot mcp import --help'.
",
        "man" => "Prints the zot(1) man page in roff: zot man | man -l -\n",
        _ => "",
    }
}

/// `zot <command> --help` for every command but `zot` itself, `zot ext`,
/// `new` and `check`.
pub fn command_help(c: &Cmd) -> String {
    let mut s = format!("Usage: zot {} {}\n\n{}\n", c.name, c.usage, about(c.name));
    if c.session {
        s.push_str(&session_options(c.name));
    } else {
        s.push_str("Options:\n");
    }
    for f in c.flags {
        s.push_str(&flag_lines(f));
    }
    s.push_str(&flag_lines(&HELP_FLAG));
    if c.session {
        s.push_str("SECS accepts fractions (0.5).\n");
    }
    s.push_str(&subcommands(c));
    if c.session {
        s.push_str(&environment());
    }
    s
}

/// The subcommands of `c` (`zot mcp`'s import, login and logout), each
/// with its summary; nothing for a command without any.
fn subcommands(c: &Cmd) -> String {
    let prefix = format!("{} ", c.name);
    let subs: Vec<&Cmd> = COMMANDS.iter().filter(|d| !c.name.is_empty() && d.name.starts_with(&prefix)).collect();
    if subs.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nSubcommands (each with its own --help):\n");
    for d in subs {
        s.push_str(&columns(&format!("zot {}", d.name), d.summary, 16));
    }
    s
}

/// The session options `command` takes (all of them for `zot --help`).
fn session_options(command: &str) -> String {
    let mut s = String::from("Options (zot, zot serve, zot mcp, zot ext doctor):\n");
    for f in SESSION_FLAGS.iter().filter(|f| f.applies(command)) {
        s.push_str(&flag_lines(f));
    }
    s
}

/// A flag and its help, wrapped to 80 columns.
fn flag_lines(f: &Flag) -> String {
    let mut out = String::new();
    let mut first = Some(f.spelled());
    for line in wrap(&f.full_help(), 48) {
        let opt = first.take().unwrap_or_default();
        out.push_str(&format!("  {opt:<28}  {line}\n"));
    }
    out
}

/// `text` cut into lines of at most `width` characters at spaces.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let cur = lines.last_mut().map(|l| l.len()).unwrap_or(0);
        if cur > 0 && cur + 1 + word.len() > width {
            lines.push(String::new());
        }
        if let Some(l) = lines.last_mut() {
            if !l.is_empty() {
                l.push(' ');
            }
            l.push_str(word);
        }
    }
    lines
}

fn environment() -> String {
    let home = match Home::from_env() {
        Ok(h) => sanitize(&h.root().display().to_string()),
        Err(e) => e.to_string(),
    };
    format!(
        "
Environment:
  ZOT_HOME   where installed extensions and logs live
             (now: {home})
  ZOT_TRACE  a trace file, when --trace is not given:
             {{\"t\":secs,\"ext\":name,\"dir\":\"in\"|\"out\",\"frame\":{{...}}}} per line
Project-local extensions live in <cwd>/.zot/extensions.
"
    )
}

/// `zot ext --help`.
pub fn ext_help() -> String {
    let mut s = String::from(
        "Usage: zot ext <command> [--cwd DIR]

Manage extensions: global ones in $ZOT_HOME/extensions and project-local ones
in <cwd>/.zot/extensions (cwd: --cwd DIR or the current directory). A name is
the manifest name that 'zot ext list' shows or the name of the extension's
folder, looked up in the project-local and the global extensions; a name that
matches more than one is refused (the matching folders are listed) and
nothing changes.

Commands:
",
    );
    for c in COMMANDS.iter().filter(|c| c.name.starts_with("ext ")) {
        let usage = format!("{} {}", &c.name[4..], c.usage);
        if usage.len() <= 26 {
            s.push_str(&format!("  {usage:<26}  {}\n", c.summary));
        } else {
            s.push_str(&format!("  {usage}\n  {:<26}  {}\n", "", c.summary));
        }
    }
    s.push_str("\nRun 'zot ext <command> --help' for more.\n");
    s
}
