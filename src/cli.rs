//! The `zot` command line: parsing arguments with `lexopt` into a
//! [`Command`], the usage texts, turning session options into a
//! [`host::Config`](crate::host::Config), and dispatching to the console,
//! `zot serve` or the `zot ext` subcommands ([`crate::manage`]).
//!
//! Exit codes: 0 success (and `--help`/`--version`), 1 a runtime error
//! (one line `zot: <message>` on stderr), 2 a usage error (one line naming
//! the offending argument and the help to read).

use crate::discovery::Sources;
use crate::home::Home;
use crate::host::{fmt_duration, Config, Timeouts};
use crate::manage::{self, sanitize, ExtCommand};
use lexopt::{Arg, Parser};
use std::env;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The crate version, as `zot --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The longest duration option, in seconds: one day.
pub const MAX_SECS: f64 = 86400.0;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Print this usage text to stdout and exit 0.
    Help(String),
    /// Print `zot <version>` and exit 0.
    Version,
    /// `zot [OPTIONS]`: the interactive session.
    Session(SessionArgs),
    /// `zot serve [OPTIONS]`: the host protocol on stdio.
    Serve(SessionArgs),
    /// `zot mcp [OPTIONS]`: the extensions as an MCP server on stdio.
    Mcp(SessionArgs),
    /// `zot ext ...`; `cwd` is `--cwd` as given (not yet checked).
    Ext { cwd: Option<PathBuf>, cmd: ExtCommand },
    /// `zot ext new`.
    ExtNew(crate::scaffold::NewOptions),
    /// `zot ext check`.
    ExtCheck(crate::check::CheckOptions),
    /// `zot ext doctor [OPTIONS] [--json]`.
    ExtDoctor { session: SessionArgs, json: bool },
    /// `zot trust [DIR]`, `zot untrust [DIR]`, `zot trust --list`.
    Trust(crate::trust::TrustCommand),
    /// `zot completions SHELL`: one of [`SHELLS`].
    Completions(String),
    /// `zot man`: the man page in roff.
    Man,
}

/// The options shared by `zot` and `zot serve`, as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionArgs {
    pub ext_paths: Vec<PathBuf>,
    pub no_ext: bool,
    pub cwd: Option<PathBuf>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub hello_timeout: Option<Duration>,
    pub ready_grace: Option<Duration>,
    pub command_timeout: Option<Duration>,
    pub tool_timeout: Option<Duration>,
    pub intercept_timeout: Option<Duration>,
    pub fail_closed: bool,
    /// `--trust-project`: run the project's extensions even if untrusted.
    pub trust_project: bool,
    /// `--restart POLICY`.
    pub restart: Option<crate::manifest::RestartPolicy>,
    /// `--interactive-tools`.
    pub interactive_tools: bool,
    /// `--trace FILE` (else `ZOT_TRACE`): every frame, one JSON line each.
    pub trace: Option<PathBuf>,
    /// The long names of the options that were given, in order (`ext`,
    /// `model`, ...), to refuse them where they do not apply.
    pub given: Vec<&'static str>,
}

impl SessionArgs {
    /// Builds the host configuration: `ZOT_HOME` from the environment, the
    /// project directory (`--cwd`, checked, or the current directory),
    /// `--ext` paths made absolute against the process's current directory,
    /// and the timeouts over [`Timeouts::default`].
    pub fn into_config(self) -> Result<Config, String> {
        let home = Home::from_env().map_err(|e| e.to_string())?;
        let cwd = match &self.cwd {
            Some(dir) => resolve_dir(dir)?,
            None => current_dir()?,
        };
        let ext_paths =
            self.ext_paths.iter().map(|p| absolute(p)).collect::<Result<Vec<_>, _>>()?;
        let mut config = Config::new(home, cwd);
        config.sources = Sources { ext_paths, no_ext: self.no_ext };
        config.provider = self.provider.unwrap_or_default();
        config.model = self.model.unwrap_or_default();
        config.zot_version = VERSION.to_string();
        let t = &mut config.timeouts;
        let set = |slot: &mut Duration, v: Option<Duration>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        set(&mut t.hello, self.hello_timeout);
        set(&mut t.ready_grace, self.ready_grace);
        set(&mut t.command, self.command_timeout);
        set(&mut t.tool, self.tool_timeout);
        set(&mut t.intercept, self.intercept_timeout);
        config.fail_closed = self.fail_closed;
        config.trust_project = self.trust_project;
        config.restart = self.restart;
        config.interactive_tools = self.interactive_tools;
        let trace = self.trace.or_else(|| {
            env::var_os(crate::trace::TRACE_ENV).filter(|v| !v.is_empty()).map(PathBuf::from)
        });
        if let Some(path) = trace {
            let tracer = crate::trace::Tracer::create(&path)
                .map_err(|e| format!("trace file {}: {e}", path.display()))?;
            config.trace = Some(tracer);
        }
        Ok(config)
    }
}

/// A usage error: `<context>: <message> (see '<context> --help')`, exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The command the error is about: `zot`, `zot serve`, `zot ext install`.
    pub context: String,
    pub message: String,
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (see '{} --help')", self.context, sanitize(&self.message), self.context)
    }
}

/// Entry point of the binary: parses the process's arguments, runs what
/// they ask for and returns the exit code.
pub fn main() -> i32 {
    run(env::args_os().skip(1))
}

/// Parses `args` (without the program name), runs the command and returns
/// the exit code.
pub fn run<I>(args: I) -> i32
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let command = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    match command {
        Command::Help(text) => {
            print!("{text}");
            0
        }
        Command::Version => {
            println!("zot {VERSION}");
            0
        }
        Command::Session(s) => match s.into_config() {
            Ok(config) => crate::console::run(config),
            Err(e) => fail(&e),
        },
        Command::Serve(s) => match s.into_config() {
            Ok(config) => crate::serve::run(config),
            Err(e) => fail(&e),
        },
        Command::Mcp(s) => match s.into_config() {
            Ok(config) => crate::mcp::run(config),
            Err(e) => fail(&e),
        },
        Command::Ext { cwd, cmd } => {
            let home = match Home::from_env() {
                Ok(h) => h,
                Err(e) => return fail(&e.to_string()),
            };
            let cwd = match cwd.as_deref().map(resolve_dir).transpose() {
                Ok(c) => c,
                Err(e) => return fail(&e),
            };
            manage::run(cmd, &home, cwd.as_deref())
        }
        Command::ExtNew(opts) => crate::scaffold::run(&opts),
        Command::ExtCheck(opts) => crate::check::run(&opts),
        Command::Completions(shell) => {
            print!("{}", crate::clidoc::completions(&shell));
            0
        }
        Command::Man => {
            print!("{}", crate::clidoc::man_page());
            0
        }
        Command::ExtDoctor { session, json } => match session.into_config() {
            Ok(config) => crate::doctor::run(config, json),
            Err(e) => fail(&e),
        },
        Command::Trust(cmd) => match Home::from_env() {
            Ok(home) => crate::trust::run(cmd, &home),
            Err(e) => fail(&e.to_string()),
        },
    }
}

fn fail(msg: &str) -> i32 {
    eprintln!("zot: {}", sanitize(msg));
    1
}

/// `dir` made absolute against the current directory; it must exist and be
/// a directory.
pub fn resolve_dir(dir: &Path) -> Result<PathBuf, String> {
    let abs = absolute(dir)?;
    match std::fs::metadata(&abs) {
        Ok(m) if m.is_dir() => Ok(abs),
        Ok(_) => Err(format!("--cwd {}: not a directory", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("--cwd {}: no such directory", dir.display()))
        }
        Err(e) => Err(format!("--cwd {}: {e}", dir.display())),
    }
}

fn current_dir() -> Result<PathBuf, String> {
    env::current_dir().map_err(|e| format!("cannot determine the current directory: {e}"))
}

/// `p` joined to the current directory when relative, with `.` components
/// dropped (`..` is kept: it means something else behind a symlink).
fn absolute(p: &Path) -> Result<PathBuf, String> {
    let joined = if p.is_absolute() { p.to_path_buf() } else { current_dir()?.join(p) };
    Ok(joined.components().filter(|c| *c != Component::CurDir).collect())
}

// ---------------------------------------------------------------------------
// The flags, defined once: the parser, every --help text, the man page and
// the shell completions ([`crate::clidoc`]) are made from these tables.

type Setter = fn(&mut Args, &mut SessionArgs, &Tok) -> Result<(), UsageError>;

/// How a flag takes effect.
#[derive(Clone, Copy)]
enum Set {
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
    /// `PATH`, `DIR` and `FILE` values complete as file names.
    pub value: Option<&'static str>,
    pub help: &'static str,
    /// The values it accepts, when it accepts only a few.
    pub choices: &'static [&'static str],
    default: Option<fn() -> String>,
    set: Set,
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

    /// The help text with the default, when there is one.
    pub fn full_help(&self) -> String {
        match self.default {
            Some(d) => format!("{} (default {})", self.help, d()),
            None => self.help.to_string(),
        }
    }
}

const fn local(long: &'static str, value: Option<&'static str>, help: &'static str) -> Flag {
    Flag { long, short: None, value, help, choices: &[], default: None, set: Set::Local }
}

const fn session(long: &'static str, value: Option<&'static str>, help: &'static str, set: Setter) -> Flag {
    Flag { long, short: None, value, help, choices: &[], default: None, set: Set::Session(set) }
}

const fn secs(long: &'static str, help: &'static str, default: fn() -> String, set: Setter) -> Flag {
    Flag { long, short: None, value: Some("SECS"), help, choices: &[], default: Some(default), set: Set::Session(set) }
}

/// The restart policies of PROTOCOL.md §7.1.
pub const RESTART_POLICIES: [&str; 3] = ["never", "on-failure", "always"];

/// The options of `zot`, `zot serve`, `zot mcp` and `zot ext doctor`.
pub const SESSION_FLAGS: [Flag; 15] = [
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
    session("cwd", Some("DIR"), "the project directory (default: the current directory)", |a, s, _| {
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
    session("interactive-tools", None, "run interactive tools with no reply deadline instead of refusing them (always on in the console)", |_, s, _| {
        s.interactive_tools = true;
        Ok(())
    }),
    session("trace", Some("FILE"), "write every frame in and out to FILE, one JSON line each (default: $ZOT_TRACE)", |a, s, _| {
        s.trace = Some(PathBuf::from(a.value()?));
        Ok(())
    }),
];

const HELP_FLAG: Flag = Flag { short: Some('h'), ..local("help", None, "print this help") };
const VERSION_FLAG: Flag = Flag { short: Some('V'), ..local("version", None, "print the version") };
const JSON: Flag = local("json", None, "print JSON instead of text");
const CWD_DIR: Flag = local("cwd", Some("DIR"), "the project directory (default: the current directory)");
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
    /// Left out of the usage texts (`zot man`).
    pub hidden: bool,
}

const fn cmd(name: &'static str, usage: &'static str, summary: &'static str, flags: &'static [Flag]) -> Cmd {
    Cmd { name, usage, summary, session: false, flags, hidden: false }
}

/// Every command, in the order `zot --help` lists them.
pub const COMMANDS: [Cmd; 17] = [
    Cmd { session: true, ..cmd("", "[OPTIONS]", "interactive session", &[]) },
    Cmd { session: true, ..cmd("serve", "[OPTIONS]", "host protocol (JSON lines) on stdin/stdout", &[]) },
    Cmd { session: true, ..cmd("mcp", "[OPTIONS]", "the extensions as an MCP server on stdio", &[]) },
    cmd("ext list", "[--json]", "installed extensions and their state", &[JSON, CWD_DIR]),
    cmd("ext install", "<path|git-url>", "copy or clone into $ZOT_HOME/extensions", &[]),
    cmd("ext remove", "<name> [-y|--yes]", "delete an installed extension", &[YES, CWD_DIR]),
    cmd("ext enable", "<name>", "load it again on launch", &[CWD_DIR]),
    cmd("ext disable", "<name>", "keep it installed but skip it on launch", &[CWD_DIR]),
    cmd("ext logs", "<name> [-f|--follow]", "print (or follow) the extension's log", &[FOLLOW, CWD_DIR]),
    cmd("ext new", "<name> [--lang LANG] [--dir DIR]", "write a working extension to start from", &[LANG, NEW_DIR]),
    cmd("ext check", "<path> [--json] [--timeout SECS]", "run an extension and report its problems", &[JSON, CHECK_TIMEOUT]),
    Cmd { session: true, ..cmd("ext doctor", "[OPTIONS] [--json]", "load everything as a session would, report, stop", &[JSON]) },
    cmd("trust", "[DIR] | zot trust --list", "let the project's own extensions run", &[LIST]),
    cmd("untrust", "[DIR]", "stop trusting the project", &[]),
    cmd("completions", "bash|zsh|fish", "print a shell completion script", &[]),
    Cmd { hidden: true, ..cmd("man", "", "print the man page (roff)", &[]) },
    cmd("", "--help | zot --version", "", &[HELP_FLAG, VERSION_FLAG]),
];

/// The shells `zot completions` writes for.
pub const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

/// The command named `name` in [`COMMANDS`].
pub fn command(name: &str) -> &'static Cmd {
    COMMANDS.iter().find(|c| c.name == name && !c.usage.starts_with("--")).unwrap_or(&COMMANDS[0])
}

fn find<'a>(flags: &'a [Flag], tok: &Tok) -> Option<&'a Flag> {
    flags.iter().find(|f| match tok {
        Tok::Short(c) => f.short == Some(*c),
        Tok::Long(l) => f.long == l,
        Tok::Value(_) => false,
    })
}

// ---------------------------------------------------------------------------
// Parsing

/// An argument with nothing borrowed from the parser, so the parser can be
/// asked for an option's value while the argument is still in hand.
#[derive(Debug)]
enum Tok {
    Short(char),
    Long(String),
    Value(OsString),
}

impl Tok {
    /// The option as typed (`-e`, `--ext`), or the value.
    fn spelled(&self) -> String {
        match self {
            Tok::Short(c) => format!("-{c}"),
            Tok::Long(l) => format!("--{l}"),
            Tok::Value(v) => v.to_string_lossy().into_owned(),
        }
    }
}

struct Args {
    parser: Parser,
    context: String,
}

impl Args {
    fn err(&self, message: impl Into<String>) -> UsageError {
        UsageError { context: self.context.clone(), message: message.into() }
    }

    fn lexopt_err(&self, e: lexopt::Error) -> UsageError {
        use lexopt::Error as E;
        let q = |s: &str| format!("'{s}'");
        let message = match e {
            E::MissingValue { option: Some(o) } => format!("missing value for {}", q(&o)),
            E::MissingValue { option: None } => "missing value".to_string(),
            E::UnexpectedOption(o) => format!("unexpected argument {}", q(&o)),
            E::UnexpectedArgument(v) => format!("unexpected argument {}", q(&v.to_string_lossy())),
            E::UnexpectedValue { option, value } => format!(
                "option {} takes no value (got {})",
                q(&option),
                q(&value.to_string_lossy())
            ),
            E::NonUnicodeValue(v) => {
                format!("argument {} is not valid UTF-8", q(&v.to_string_lossy()))
            }
            other => other.to_string(),
        };
        self.err(message)
    }

    fn next(&mut self) -> Result<Option<Tok>, UsageError> {
        let arg = match self.parser.next() {
            Ok(a) => a,
            Err(e) => return Err(self.lexopt_err(e)),
        };
        Ok(arg.map(|a| match a {
            Arg::Short(c) => Tok::Short(c),
            Arg::Long(l) => Tok::Long(l.to_string()),
            Arg::Value(v) => Tok::Value(v),
        }))
    }

    fn value(&mut self) -> Result<OsString, UsageError> {
        self.parser.value().map_err(|e| self.lexopt_err(e))
    }

    fn string(&mut self, opt: &Tok) -> Result<String, UsageError> {
        let v = self.value()?;
        v.into_string().map_err(|v| {
            self.err(format!(
                "value {:?} for '{}' is not valid UTF-8",
                v.to_string_lossy(),
                opt.spelled()
            ))
        })
    }

    fn choice(&mut self, opt: &Tok, choices: &[&str]) -> Result<String, UsageError> {
        let v = self.string(opt)?;
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            let (last, rest) = choices.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
            let list = if rest.is_empty() { last.to_string() } else { format!("{} or {last}", rest.join(", ")) };
            Err(self.err(format!("invalid value '{v}' for '{}': expected {list}", opt.spelled())))
        }
    }

    /// A duration option: a positive number of seconds, at most
    /// [`MAX_SECS`] (PROTOCOL.md §3 rule 6).
    fn secs(&mut self, opt: &Tok) -> Result<Duration, UsageError> {
        let v = self.value()?;
        let text = v.to_string_lossy();
        let bad = || {
            self.err(format!(
                "invalid value '{text}' for '{}': expected seconds, a positive number up to {MAX_SECS} like 5 or 0.5",
                opt.spelled()
            ))
        };
        let secs: f64 = text.trim().parse().map_err(|_| bad())?;
        if !secs.is_finite() || secs <= 0.0 || secs > MAX_SECS {
            return Err(bad());
        }
        Duration::try_from_secs_f64(secs).map_err(|_| bad())
    }

    fn unexpected(&self, tok: &Tok) -> UsageError {
        self.err(format!("unexpected argument '{}'", tok.spelled()))
    }

    /// `command`, provided nothing follows: `zot --version extra` is a
    /// usage error, not a version.
    fn last(mut self, command: Command) -> Result<Command, UsageError> {
        match self.next()? {
            None => Ok(command),
            Some(tok) => Err(self.unexpected(&tok)),
        }
    }
}

/// Parses the arguments (without the program name).
pub fn parse<I>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let mut a = Args { parser: Parser::from_args(args), context: "zot".into() };
    let mut s = SessionArgs::default();
    while let Some(tok) = a.next()? {
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        match &tok {
            _ if is_help(&tok) => return a.last(Command::Help(top_help())),
            Tok::Short('V') => return a.last(Command::Version),
            Tok::Long(l) if l == "version" => return a.last(Command::Version),
            Tok::Value(v) => {
                let word = v.to_string_lossy().into_owned();
                let context = format!("zot {word}");
                return match word.as_str() {
                    "serve" | "mcp" => {
                        a.context = context;
                        parse_session(a, s, &word)
                    }
                    "ext" => {
                        a.context = context;
                        parse_ext(a, s)
                    }
                    "trust" | "untrust" | "completions" | "man" => {
                        if let Some(opt) = s.given.first() {
                            return Err(a.err(format!("option '--{opt}' does not apply to '{context}'")));
                        }
                        a.context = context;
                        parse_simple(a, &word)
                    }
                    _ => Err(a.unexpected(&tok)),
                };
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(Command::Session(s))
}

fn is_help(tok: &Tok) -> bool {
    matches!(tok, Tok::Short('h')) || matches!(tok, Tok::Long(l) if l == "help")
}

/// Handles one of [`SESSION_FLAGS`]; false when `tok` is not one of them.
fn session_option(a: &mut Args, s: &mut SessionArgs, tok: &Tok) -> Result<bool, UsageError> {
    let Some(flag) = find(&SESSION_FLAGS, tok) else { return Ok(false) };
    if let Set::Session(set) = flag.set {
        set(a, s, tok)?;
    }
    s.given.push(flag.long);
    Ok(true)
}

/// `zot serve`, `zot mcp` and `zot ext doctor`: the session options, and
/// `--json` for the doctor.
fn parse_session(mut a: Args, mut s: SessionArgs, word: &str) -> Result<Command, UsageError> {
    let mut json = false;
    while let Some(tok) = a.next()? {
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        if is_help(&tok) {
            let help = if word == "ext doctor" { crate::doctor::HELP.to_string() } else { command_help(command(word)) };
            return a.last(Command::Help(help));
        }
        match &tok {
            Tok::Long(l) if l == "json" && word == "ext doctor" => json = true,
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(match word {
        "serve" => Command::Serve(s),
        "mcp" => Command::Mcp(s),
        _ => Command::ExtDoctor { session: s, json },
    })
}

/// `zot trust`, `zot untrust`, `zot completions` and `zot man`.
fn parse_simple(mut a: Args, word: &str) -> Result<Command, UsageError> {
    let mut positional: Option<OsString> = None;
    let mut list = false;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(command_help(command(word))));
        }
        match &tok {
            Tok::Long(l) if l == "list" && word == "trust" => list = true,
            Tok::Value(v) if positional.is_none() && word != "man" => positional = Some(v.clone()),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    use crate::trust::TrustCommand as T;
    let dir = || positional.as_deref().map(|d| absolute(Path::new(d))).transpose().map_err(|e| a.err(e));
    match word {
        "trust" if list && positional.is_some() => Err(a.err("'--list' takes no DIR")),
        "trust" if list => Ok(Command::Trust(T::List)),
        "trust" => Ok(Command::Trust(T::Trust(dir()?))),
        "untrust" => Ok(Command::Trust(T::Untrust(dir()?))),
        "man" => Ok(Command::Man),
        _ => {
            let shell = positional.map(|v| v.to_string_lossy().into_owned());
            match shell {
                Some(sh) if SHELLS.contains(&sh.as_str()) => Ok(Command::Completions(sh)),
                Some(sh) => Err(a.err(format!("unknown shell '{sh}': expected one of {}", SHELLS.join(", ")))),
                None => Err(a.err(format!("missing shell ({})", SHELLS.join(", ")))),
            }
        }
    }
}

fn parse_ext(mut a: Args, mut s: SessionArgs) -> Result<Command, UsageError> {
    let mut cwd = s.cwd.clone();
    while let Some(tok) = a.next()? {
        match &tok {
            _ if is_help(&tok) => return a.last(Command::Help(ext_help())),
            Tok::Long(l) if l == "cwd" => cwd = Some(PathBuf::from(a.value()?)),
            Tok::Value(v) => {
                let sub = v.to_string_lossy().into_owned();
                if !EXT_SUBCOMMANDS.contains(&sub.as_str()) {
                    return Err(a.err(format!("unknown subcommand '{sub}'")));
                }
                a.context = format!("zot ext {sub}");
                if sub == "doctor" {
                    s.cwd = cwd;
                    return parse_session(a, s, "ext doctor");
                }
                if let Some(opt) = s.given.iter().find(|o| **o != "cwd") {
                    return Err(a.err(format!("option '--{opt}' does not apply to 'zot ext'")));
                }
                return parse_ext_sub(a, &sub, cwd);
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    if let Some(opt) = s.given.iter().find(|o| **o != "cwd") {
        return Err(a.err(format!("option '--{opt}' does not apply to 'zot ext'")));
    }
    Err(a.err("missing subcommand (list, install, remove, enable, disable, logs, new, check, doctor)"))
}

const EXT_SUBCOMMANDS: &[&str] = &["list", "install", "remove", "enable", "disable", "logs", "new", "check", "doctor"];

fn parse_ext_sub(mut a: Args, sub: &str, mut cwd: Option<PathBuf>) -> Result<Command, UsageError> {
    let spec = command(&format!("ext {sub}"));
    if sub == "new" || sub == "check" {
        if cwd.is_some() {
            return Err(a.err(format!("option '--cwd' does not apply to 'zot ext {sub}'")));
        }
        return if sub == "new" { parse_new(a, spec) } else { parse_check(a, spec) };
    }
    let mut json = false;
    let mut yes = false;
    let mut follow = false;
    let mut positional: Option<OsString> = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(command_help(spec)));
        }
        match (find(spec.flags, &tok).map(|f| f.long), &tok) {
            (Some("cwd"), _) => cwd = Some(PathBuf::from(a.value()?)),
            (Some("json"), _) => json = true,
            (Some("yes"), _) => yes = true,
            (Some("follow"), _) => follow = true,
            (None, Tok::Value(v)) if sub != "list" && positional.is_none() => {
                positional = Some(v.clone());
            }
            (None, Tok::Long(l)) if l == "cwd" => {
                return Err(a.err(format!("option '--cwd' does not apply to 'zot ext {sub}'")));
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    if sub == "install" && cwd.is_some() {
        return Err(a.err("option '--cwd' does not apply to 'zot ext install'"));
    }
    let what = if sub == "install" { "<path|git-url>" } else { "<name>" };
    let Some(positional) = positional.or_else(|| (sub == "list").then(OsString::new)) else {
        return Err(a.err(format!("missing {what}")));
    };
    // Names are checked at run time (validate_name), so a hostile one gets a
    // clear runtime error; a non-UTF-8 one is made lossy and fails there.
    let name = positional.to_string_lossy().into_owned();
    let cmd = match sub {
        "list" => ExtCommand::List { json },
        "install" => ExtCommand::Install { source: positional },
        "remove" => ExtCommand::Remove { name, yes },
        "enable" => ExtCommand::Enable { name },
        "disable" => ExtCommand::Disable { name },
        _ => ExtCommand::Logs { name, follow },
    };
    Ok(Command::Ext { cwd, cmd })
}

/// `zot ext new <name> [--lang LANG] [--dir DIR]`.
fn parse_new(mut a: Args, spec: &Cmd) -> Result<Command, UsageError> {
    let mut name: Option<String> = None;
    let mut lang = "python".to_string();
    let mut dir = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(crate::scaffold::HELP.to_string()));
        }
        match (find(spec.flags, &tok).map(|f| f.long), &tok) {
            (Some("lang"), _) => lang = a.choice(&tok, &crate::scaffold::LANGS)?,
            (Some("dir"), _) => dir = Some(PathBuf::from(a.value()?)),
            // Checked at run time (validate_name), like every other name.
            (None, Tok::Value(v)) if name.is_none() => name = Some(v.to_string_lossy().into_owned()),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    let Some(name) = name else { return Err(a.err("missing <name>")) };
    Ok(Command::ExtNew(crate::scaffold::NewOptions { name, lang, dir }))
}

/// `zot ext check <path> [--json] [--timeout SECS]`.
fn parse_check(mut a: Args, spec: &Cmd) -> Result<Command, UsageError> {
    let mut path = None;
    let mut json = false;
    let mut call_timeout = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(crate::check::HELP.to_string()));
        }
        match (find(spec.flags, &tok).map(|f| f.long), &tok) {
            (Some("json"), _) => json = true,
            (Some("timeout"), _) => call_timeout = Some(a.secs(&tok)?),
            (None, Tok::Value(v)) if path.is_none() => path = Some(PathBuf::from(v)),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    let Some(path) = path else { return Err(a.err("missing <path>")) };
    Ok(Command::ExtCheck(crate::check::CheckOptions { path, json, call_timeout }))
}

// ---------------------------------------------------------------------------
// Usage texts

/// `zot --help`.
pub fn top_help() -> String {
    let mut s = format!("zot {VERSION}: a host for zot extensions\n\nUsage:\n");
    for c in COMMANDS.iter().filter(|c| !c.hidden) {
        let words = if c.name.is_empty() { String::new() } else { format!(" {}", c.name) };
        let usage = format!("zot{words} {}", c.usage);
        if c.summary.is_empty() {
            s.push_str(&format!("  {usage}\n"));
        } else if usage.len() <= 34 {
            s.push_str(&format!("  {usage:<34}  {}\n", c.summary));
        } else {
            s.push_str(&format!("  {usage}\n  {:<34}  {}\n", "", c.summary));
        }
    }
    s.push('\n');
    s.push_str(&session_options());
    for f in [HELP_FLAG, VERSION_FLAG] {
        s.push_str(&flag_lines(&f));
    }
    s.push_str("SECS accepts fractions (0.5).\n\nRun 'zot ext --help' or 'zot <command> --help' for more.\n");
    s.push_str(&environment());
    s
}

/// The about text of a command's `--help`, above its options.
pub fn about(name: &str) -> &'static str {
    match name {
        "serve" => "Runs the extension host and speaks JSON lines on stdin/stdout, so that an
agent in any language can use it as its extension subsystem. Requests are
{\"id\":..,\"type\":<method>,...}; methods: ping, list, command, tool,
intercept, event, agent_tools, call_tool_result, panel_key, panel_close,
reload, shutdown. Diagnostics go to stderr. End of stdin shuts the host
down. Options may come before or after the word 'serve'.
",
        "mcp" => "Runs the extension host as an MCP server on stdin/stdout (JSON-RPC 2.0, one
message per line; MCP revisions 2025-11-25, 2025-06-18, 2025-03-26 and
2024-11-05), so that any MCP client can use the extensions: their tools as
MCP tools (the tool_call intercept chain and event run first), their
commands as MCP prompts with one optional argument, args, and their notes
as log messages. Diagnostics go to stderr. End of stdin shuts the host
down. Options may come before or after the word 'mcp'.

Register it in a client's configuration, for example:
  {\"mcpServers\": {\"zot\": {\"command\": \"zot\",
                    \"args\": [\"mcp\", \"--ext\", \"/path/to/extension\"]}}}
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
        "ext logs" => "Prints the extension's log, $ZOT_HOME/logs/ext-<name>.log: its stderr plus
the host's lines prefixed [zot].
",
        "trust" | "untrust" => "Project-local extensions (DIR/.zot/extensions) come with the repository you
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
        "man" => "Prints the zot(1) man page in roff: zot man | man -l -\n",
        _ => "",
    }
}

/// `zot <command> --help` for every command but `zot` itself, `zot ext`,
/// `new` and `check`.
pub fn command_help(c: &Cmd) -> String {
    let mut s = format!("Usage: zot {} {}\n\n{}\n", c.name, c.usage, about(c.name));
    if c.session {
        s.push_str(&session_options());
    } else {
        s.push_str("Options:\n");
    }
    for f in c.flags {
        s.push_str(&flag_lines(f));
    }
    s.push_str(&flag_lines(&HELP_FLAG));
    if c.session {
        s.push_str("SECS accepts fractions (0.5).\n");
        s.push_str(&environment());
    }
    s
}

fn session_options() -> String {
    let mut s = String::from("Options (zot, zot serve, zot mcp, zot ext doctor):\n");
    for f in &SESSION_FLAGS {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn session_options_before_and_after_serve() {
        let Ok(Command::Serve(s)) =
            p(&["-e", "a", "serve", "--ext=b", "--tool-timeout", "0.5", "--fail-closed"])
        else {
            panic!("not serve");
        };
        assert_eq!(s.ext_paths, vec![PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(s.tool_timeout, Some(Duration::from_millis(500)));
        assert!(s.fail_closed);
        assert!(matches!(p(&[]), Ok(Command::Session(_))));
    }

    #[test]
    fn errors() {
        let e = p(&["--bogus"]).unwrap_err();
        assert_eq!(e.to_string(), "zot: unexpected argument '--bogus' (see 'zot --help')");
        let e = p(&["ext", "install"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "zot ext install: missing <path|git-url> (see 'zot ext install --help')"
        );
        for bad in ["-1", "NaN", "inf", "x", "1e400"] {
            assert!(p(&["--hello-timeout", bad]).is_err(), "{bad}");
        }
        assert!(p(&["--model", "m", "ext", "list"]).is_err());
        assert!(matches!(
            p(&["--cwd", "d", "ext", "list", "--json"]),
            Ok(Command::Ext { cmd: ExtCommand::List { json: true }, .. })
        ));
        assert!(p(&["ext", "remove", "a", "b"]).is_err());
        assert!(p(&["ext", "frob"]).is_err());
        assert!(p(&["--version", "extra"]).is_err());
        assert!(p(&["--help", "--bogus"]).is_err());
        assert!(p(&["--restart", "sometimes"]).is_err());
    }

    #[test]
    fn declared_options_of_other_commands() {
        let Ok(Command::Serve(s)) = p(&["serve", "--trust-project", "--restart", "on-failure", "--interactive-tools"])
        else {
            panic!("not serve");
        };
        assert!(s.trust_project && s.interactive_tools);
        assert_eq!(s.restart, Some(crate::manifest::RestartPolicy::OnFailure));
        assert!(matches!(
            p(&["ext", "--cwd", "d", "doctor"]),
            Ok(Command::ExtDoctor { json: false, session }) if session.cwd == Some(PathBuf::from("d"))
        ));
        assert!(matches!(
            p(&["--no-ext", "ext", "doctor", "--json", "-e", "x"]),
            Ok(Command::ExtDoctor { json: true, session }) if session.no_ext && session.ext_paths.len() == 1
        ));
        use crate::trust::TrustCommand as T;
        assert!(matches!(p(&["trust", "d"]), Ok(Command::Trust(T::Trust(Some(d)))) if d.ends_with("d")));
        assert_eq!(p(&["trust", "--list"]), Ok(Command::Trust(T::List)));
        assert_eq!(p(&["untrust"]), Ok(Command::Trust(T::Untrust(None))));
        assert!(p(&["trust", "--list", "d"]).is_err());
        assert_eq!(p(&["completions", "zsh"]), Ok(Command::Completions("zsh".into())));
        assert!(p(&["completions", "tcsh"]).is_err());
        assert!(p(&["--model", "m", "completions", "bash"]).is_err());
    }
}
