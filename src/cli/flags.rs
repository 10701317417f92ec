//! The flag and command tables, defined once: the parser, every `--help`
//! text, the man page and the shell completions ([`super::doc`]) are made
//! from them.

use super::args::{Args, Tok};
use super::command::{SessionArgs, UsageError};
use crate::host::{fmt_duration, Timeouts};
use std::path::PathBuf;

pub(super) type Setter = fn(&mut Args, &mut SessionArgs, &Tok) -> Result<(), UsageError>;

/// How a flag takes effect.
#[derive(Clone, Copy)]
pub(super) enum Set {
    /// A session option: sets its field of [`SessionArgs`].
    Session(Setter),
    /// A flag of one subcommand, read by that subcommand's parser by its
    /// long name.
    Local,
}

/// One command-line flag.
#[derive(Clone, Copy)]
pub struct Flag {
    /// Without the dashes: `ext` for `--ext`.
    pub long: &'static str,
    pub short: Option<char>,
    /// The value's name in usage texts (`PATH`, `SECS`), `None` for a switch.
    /// `PATH`, `DIR` and `FILE` values complete as file names, `SOURCE`
    /// (`--from`) as a client's name or a file name.
    pub value: Option<&'static str>,
    pub help: &'static str,
    /// The values it accepts, when it accepts only a few.
    pub choices: &'static [&'static str],
    default: Option<fn() -> String>,
    pub(super) set: Set,
    /// The commands (as in [`Cmd::name`]) a session option does not apply
    /// to, with why: refused there as a usage error, and left out of their
    /// help and completions.
    pub not_for: &'static [(&'static str, &'static str)],
}

impl Flag {
    /// `-e, --ext PATH` or `    --no-ext`.
    pub fn spelled(&self) -> String {
        let short = match self.short {
            Some(c) => format!("-{c}, "),
            None => "    ".to_string(),
        };
        let value = self.value.map(|v| format!(" {v}")).unwrap_or_default();
        format!("{short}--{}{value}", self.long)
    }

    /// False for a session option that `command` refuses.
    pub fn applies(&self, command: &str) -> bool {
        !self.not_for.iter().any(|(c, _)| *c == command)
    }

    /// The help text with the default, when there is one.
    pub fn full_help(&self) -> String {
        let mut help = match self.default {
            Some(d) => format!("{} (default {})", self.help, d()),
            None => self.help.to_string(),
        };
        for (c, _) in self.not_for {
            help.push_str(&format!("; not for zot {c}"));
        }
        help
    }
}

const fn local(long: &'static str, value: Option<&'static str>, help: &'static str) -> Flag {
    Flag { long, short: None, value, help, choices: &[], default: None, set: Set::Local, not_for: &[] }
}

const fn session(long: &'static str, value: Option<&'static str>, help: &'static str, set: Setter) -> Flag {
    Flag { long, short: None, value, help, choices: &[], default: None, set: Set::Session(set), not_for: &[] }
}

const fn secs(long: &'static str, help: &'static str, default: fn() -> String, set: Setter) -> Flag {
    Flag { long, short: None, value: Some("SECS"), help, choices: &[], default: Some(default), set: Set::Session(set), not_for: &[] }
}

/// The restart policies of docs/protocol.md §7.1.
pub const RESTART_POLICIES: [&str; 3] = ["never", "on-failure", "always"];

/// The confinement modes of docs/protocol.md §9.3.
pub const CONFINE_MODES: [&str; 3] = ["declared", "all", "off"];

/// The options of `zot`, `zot serve`, `zot mcp` and `zot ext doctor`.
pub const SESSION_FLAGS: [Flag; 17] = [
    Flag {
        short: Some('e'),
        ..session("ext", Some("PATH"), "load the extension in PATH (a folder or its extension.json) for this run; repeatable, wins over installed ones", |a, s, _| {
            s.ext_paths.push(PathBuf::from(a.value()?));
            Ok(())
        })
    },
    session("no-ext", None, "skip project-local and global discovery", |_, s, _| {
        s.no_ext = true;
        Ok(())
    }),
    session("mcp-config", Some("FILE"), "MCP servers from FILE ({\"mcpServers\":{...}}) for this run; repeatable, wins over the project and global files", |a, s, _| {
        s.mcp_configs.push(PathBuf::from(a.value()?));
        Ok(())
    }),
    session("cwd", Some("DIR"), "the project directory (default: the nearest folder holding .zot or a client's mcp.json at or above the current one, else the current directory)", |a, s, _| {
        s.cwd = Some(PathBuf::from(a.value()?));
        Ok(())
    }),
    session("provider", Some("NAME"), "provider name passed to extensions", |a, s, t| {
        s.provider = Some(a.string(t)?);
        Ok(())
    }),
    session("model", Some("NAME"), "model name passed to extensions", |a, s, t| {
        s.model = Some(a.string(t)?);
        Ok(())
    }),
    secs("hello-timeout", "spawn to hello, per extension", || fmt_duration(Timeouts::default().hello), |a, s, t| {
        s.hello_timeout = Some(a.secs(t)?);
        Ok(())
    }),
    secs("ready-grace", "wait for ready, all extensions together", || fmt_duration(Timeouts::default().ready_grace), |a, s, t| {
        s.ready_grace = Some(a.secs(t)?);
        Ok(())
    }),
    secs("command-timeout", "per command", || fmt_duration(Timeouts::default().command), |a, s, t| {
        s.command_timeout = Some(a.secs(t)?);
        Ok(())
    }),
    secs("tool-timeout", "per tool call", || fmt_duration(Timeouts::default().tool), |a, s, t| {
        s.tool_timeout = Some(a.secs(t)?);
        Ok(())
    }),
    secs("intercept-timeout", "per interceptor", || fmt_duration(Timeouts::default().intercept), |a, s, t| {
        s.intercept_timeout = Some(a.secs(t)?);
        Ok(())
    }),
    session("fail-closed", None, "a failed or late interceptor blocks instead of allowing", |_, s, _| {
        s.fail_closed = true;
        Ok(())
    }),
    session("trust-project", None, "load the project-local extensions of the project directory for this run even if the project is not trusted (nothing is recorded)", |_, s, _| {
        s.trust_project = true;
        Ok(())
    }),
    Flag {
        choices: &RESTART_POLICIES,
        ..session("restart", Some("POLICY"), "never, on-failure or always: the restart policy of every extension of this run (default: each manifest's)", |a, s, t| {
            let v = a.choice(t, &RESTART_POLICIES)?;
            s.restart = crate::manifest::RestartPolicy::parse(&v);
            Ok(())
        })
    },
    Flag {
        choices: &CONFINE_MODES,
        ..session("confine", Some("MODE"), "declared, all or off: confine each extension and MCP server as it declares, confine all of them (those that declare nothing get the project to read and no network), or none (default: $ZOT_CONFINE, else declared)", |a, s, t| {
            let v = a.string(t)?;
            s.confine = Some(crate::confine::Mode::named(&v, "--confine").map_err(UsageError::bare)?);
            Ok(())
        })
    },
    Flag {
        not_for: &[("mcp", "an MCP client has no one to answer an interactive tool's panel")],
        ..session("interactive-tools", None, "run interactive tools with no reply deadline instead of refusing them (always on in the console)", |_, s, _| {
            s.interactive_tools = true;
            Ok(())
        })
    },
    session("trace", Some("FILE"), "write every frame in and out to FILE, one JSON line each (default: $ZOT_TRACE)", |a, s, _| {
        s.trace = Some(PathBuf::from(a.value()?));
        Ok(())
    }),
];

pub(super) const HELP_FLAG: Flag = Flag { short: Some('h'), ..local("help", None, "print this help") };
pub(super) const VERSION_FLAG: Flag = Flag { short: Some('V'), ..local("version", None, "print the version") };
const JSON: Flag = local("json", None, "print JSON instead of text");
const NAMES: Flag = local("names", None, "print only the names, one per line (what shell completion offers)");
const CWD_DIR: Flag = local("cwd", Some("DIR"), "the project directory (default: the nearest folder holding .zot or a client's mcp.json at or above the current one, else the current directory)");
const YES: Flag = Flag { short: Some('y'), ..local("yes", None, "do not ask") };
const FOLLOW: Flag = Flag {
    short: Some('f'),
    ..local("follow", None, "keep printing what is appended (survives truncation and rotation) until interrupted")
};
const LANG: Flag = Flag {
    choices: &crate::scaffold::LANGS,
    ..local("lang", Some("LANG"), "python (default), node, typescript, shell, rust or go")
};
const NEW_DIR: Flag = local("dir", Some("DIR"), "the existing directory to create <name>/ in");
const CHECK_TIMEOUT: Flag = local("timeout", Some("SECS"), "the deadline of each call (default 5s)");
const LIST: Flag = local("list", None, "list the trusted projects");
const TRUST_CONFINE: Flag = Flag {
    choices: &CONFINE_MODES,
    ..local("confine", Some("MODE"), "show what each may reach under this mode: declared, all or off (default: $ZOT_CONFINE, else declared)")
};
const FROM: Flag = local("from", Some("SOURCE"), "claude-desktop, claude-code, cursor, vscode or a FILE: whose user-level MCP file to copy (default: the one that exists)");
const DRY_RUN: Flag = local("dry-run", None, "print what would be written, write nothing");
const FORCE: Flag = local("force", None, "replace a server of the same name already in $ZOT_HOME/mcp.json");
const LOGS_MCP: Flag = local("mcp-config", Some("FILE"), "also find the MCP servers of FILE, as the session given it does; repeatable");

/// One command: `zot`, `zot serve`, `zot ext install`, ...
pub struct Cmd {
    /// The words after `zot`: `""` for the session, `"ext install"`.
    pub name: &'static str,
    /// Its arguments as the usage shows them.
    pub usage: &'static str,
    pub summary: &'static str,
    /// Takes [`SESSION_FLAGS`] as well as its own.
    pub session: bool,
    pub flags: &'static [Flag],
}

const fn cmd(name: &'static str, usage: &'static str, summary: &'static str, flags: &'static [Flag]) -> Cmd {
    Cmd { name, usage, summary, session: false, flags }
}

/// Every command, in the order `zot --help` lists them.
pub const COMMANDS: [Cmd; 21] = [
    Cmd { session: true, ..cmd("", "[OPTIONS]", "interactive session", &[]) },
    Cmd { session: true, ..cmd("serve", "[OPTIONS]", "host protocol (JSON lines) on stdin/stdout", &[]) },
    Cmd { session: true, ..cmd("mcp", "[OPTIONS]", "the extensions as an MCP server on stdio", &[]) },
    cmd("mcp import", "[--from SOURCE] [--dry-run] [--force]", "copy another MCP client's servers into $ZOT_HOME/mcp.json", &[FROM, DRY_RUN, FORCE]),
    Cmd { session: true, ..cmd("mcp login", "<name> [OPTIONS]", "log in to a remote MCP server through the browser (OAuth)", &[]) },
    Cmd { session: true, ..cmd("mcp logout", "<name> [OPTIONS]", "forget the tokens of a remote MCP server", &[]) },
    cmd("ext list", "[--json] [--names]", "installed extensions and their state", &[JSON, NAMES, CWD_DIR]),
    cmd("ext install", "<path|git-url>", "copy or clone into $ZOT_HOME/extensions", &[]),
    cmd("ext remove", "<name> [-y|--yes]", "delete an installed extension", &[YES, CWD_DIR]),
    cmd("ext enable", "<name>", "load it again on launch", &[CWD_DIR]),
    cmd("ext disable", "<name>", "keep it installed but skip it on launch", &[CWD_DIR]),
    cmd("ext logs", "<name> [-f|--follow]", "print (or follow) the extension's or MCP server's log", &[FOLLOW, CWD_DIR, LOGS_MCP]),
    cmd("ext new", "<name> [--lang LANG] [--dir DIR]", "write a working extension to start from", &[LANG, NEW_DIR]),
    cmd("ext check", "<path> [--json] [--timeout SECS]", "run an extension and report its problems", &[JSON, CHECK_TIMEOUT]),
    Cmd { session: true, ..cmd("ext doctor", "[OPTIONS] [--json]", "load everything as a session would, report, stop", &[JSON]) },
    cmd("trust", "[DIR] | zot trust --list", "let the project's own extensions run", &[LIST, TRUST_CONFINE]),
    cmd("untrust", "[DIR]", "stop trusting the project", &[]),
    cmd("completions", "bash|zsh|fish", "print a shell completion script", &[]),
    cmd("help", "[COMMAND]", "the help of zot or of a command", &[]),
    cmd("man", "", "zot(1), this help as a man page in roff: zot man | man -l -", &[]),
    cmd("", "--help | zot --version", "", &[HELP_FLAG, VERSION_FLAG]),
];

/// The shells `zot completions` writes for.
pub const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

/// The command named `name` in [`COMMANDS`].
pub fn command(name: &str) -> &'static Cmd {
    COMMANDS.iter().find(|c| c.name == name && !c.usage.starts_with("--")).unwrap_or(&COMMANDS[0])
}

pub(super) fn find<'a>(flags: &'a [Flag], tok: &Tok) -> Option<&'a Flag> {
    flags.iter().find(|f| match tok {
        Tok::Short(c) => f.short == Some(*c),
        Tok::Long(l) => f.long == l,
        Tok::Value(_) => false,
    })
}

