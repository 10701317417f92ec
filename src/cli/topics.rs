//! What `zot --help` and the man page say beyond the options: the files
//! zot reads and writes, and the console's keys (its commands are the
//! console's own table, [`crate::console::BUILTINS`]). One table each, so
//! that the two texts cannot disagree.

/// The files and folders zot reads and writes, with what each holds.
pub const FILES: [(&str, &str); 11] = [
    ("$ZOT_HOME/extensions/<name>/", "an installed extension, with its extension.json (zot ext install, zot ext list)"),
    ("<project>/.zot/extensions/<name>/", "a project's own extension; it runs only in a trusted project (zot trust)"),
    (
        "$ZOT_HOME/mcp.json",
        "MCP servers for every session, {\"mcpServers\":{...}} as Claude Desktop, Cursor and Claude Code write it; --mcp-config FILE adds a file for one run",
    ),
    ("<project>/.zot/mcp.json", "a project's MCP servers; they run only in a trusted project"),
    ("$ZOT_HOME/trust.json", "the trusted projects, each with a fingerprint of its .zot folder (zot trust, zot untrust)"),
    ("$ZOT_HOME/logs/ext-<name>.log", "an extension's stderr, and the host's lines about it prefixed [zot] (zot ext logs NAME)"),
    ("$ZOT_HOME/logs/mcp-<name>.log", "an MCP server's stderr, its log messages, and the host's [zot] lines (zot ext logs NAME)"),
    (
        "$ZOT_HOME/data/<name>/",
        "the data folder of a project extension or one that declares confine or runs confined (the data_dir it is told), kept across starts",
    ),
    ("$ZOT_HOME/history", "the console's line history, the last 1000 lines"),
    ("$ZOT_HOME/cache/", "digests of project files, so that checking trust on every start is quick"),
    ("$ZOT_HOME/tmp/", "a confined extension's temporary folder while it runs (its TMPDIR)"),
];

/// The console's keys on a terminal, and what each does.
pub const KEYS: [(&str, &str); 12] = [
    ("Left, Right, Ctrl-B, Ctrl-F", "move one character"),
    ("Home, End, Ctrl-A, Ctrl-E", "go to the start or the end of the line"),
    ("Backspace, Delete", "delete before or under the cursor"),
    ("Ctrl-K, Ctrl-U", "delete to the end or to the start of the line"),
    ("Ctrl-W", "delete the word before the cursor"),
    ("Up, Down", "walk the history"),
    ("Tab", "complete a /command, or a tool name after /tool"),
    ("Enter", "run the line"),
    ("Ctrl-C", "clear the line; cancel the /tool call in flight; twice on an empty line, leave"),
    ("Ctrl-D", "on an empty line, leave"),
    ("Ctrl-O", "move the keys between the prompt and an open panel, which stays open"),
    (
        "in a panel",
        "the arrows, Enter, Tab, PageUp, PageDown, Home, End, Backspace, Delete and printable keys go to its extension; Esc and Ctrl-C close it",
    ),
];

/// What the console does with a line that is not a command.
pub const CONSOLE_ABOUT: &str = "Run without a command, zot is a console to try extensions by hand; there is no model in it. A line starting with / runs a built-in or an extension's command; any other line stands for a prompt, with the events an agent would send around it. Piped input is read line by line, without a prompt.";
