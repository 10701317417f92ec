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
    /// `zot ext doctor [session options] [--json]`.
    ExtDoctor(SessionArgs, bool),
    /// `zot trust [DIR]`, `zot untrust [DIR]`, `zot trust --list`.
    Trust(crate::trust::TrustCommand),
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
    /// `--trace FILE` (else `ZOT_TRACE`): every frame, one JSON line each.
    pub trace: Option<PathBuf>,
    /// `--trust-project`: run the project's extensions even if untrusted.
    pub trust_project: bool,
    /// `--restart POLICY`.
    pub restart: Option<crate::manifest::RestartPolicy>,
    /// The options that were given, in order, as spelled in the usage
    /// (`--ext`, `--model`, ...), to refuse them where they do not apply.
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
        Command::ExtDoctor(s, json) => match s.into_config() {
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
            _ if is_help(&tok) => return Ok(Command::Help(top_help())),
            Tok::Short('V') => return Ok(Command::Version),
            Tok::Long(l) if l == "version" => return Ok(Command::Version),
            Tok::Value(v) if v == "serve" => {
                a.context = "zot serve".into();
                return parse_serve(a, s);
            }
            Tok::Value(v) if v == "mcp" => {
                a.context = "zot mcp".into();
                return parse_mcp(a, s);
            }
            Tok::Value(v) if v == "ext" => {
                a.context = "zot ext".into();
                return parse_ext(a, s);
            }
            Tok::Value(v) if (v == "trust" || v == "untrust") && s.given.is_empty() => {
                a.context = format!("zot {}", v.to_string_lossy());
                return parse_trust(a);
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(Command::Session(s))
}

fn is_help(tok: &Tok) -> bool {
    matches!(tok, Tok::Short('h')) || matches!(tok, Tok::Long(l) if l == "help")
}

/// Handles one of the options shared by `zot` and `zot serve`; false when
/// `tok` is not one of them.
fn session_option(a: &mut Args, s: &mut SessionArgs, tok: &Tok) -> Result<bool, UsageError> {
    let long = match tok {
        Tok::Short('e') => "ext",
        Tok::Long(l) => l.as_str(),
        _ => return Ok(false),
    };
    let name: &'static str = match long {
        "ext" => {
            s.ext_paths.push(PathBuf::from(a.value()?));
            "--ext"
        }
        "no-ext" => {
            s.no_ext = true;
            "--no-ext"
        }
        "cwd" => {
            s.cwd = Some(PathBuf::from(a.value()?));
            "--cwd"
        }
        "provider" => {
            s.provider = Some(a.string(tok)?);
            "--provider"
        }
        "model" => {
            s.model = Some(a.string(tok)?);
            "--model"
        }
        "hello-timeout" => {
            s.hello_timeout = Some(a.secs(tok)?);
            "--hello-timeout"
        }
        "ready-grace" => {
            s.ready_grace = Some(a.secs(tok)?);
            "--ready-grace"
        }
        "command-timeout" => {
            s.command_timeout = Some(a.secs(tok)?);
            "--command-timeout"
        }
        "tool-timeout" => {
            s.tool_timeout = Some(a.secs(tok)?);
            "--tool-timeout"
        }
        "intercept-timeout" => {
            s.intercept_timeout = Some(a.secs(tok)?);
            "--intercept-timeout"
        }
        "fail-closed" => {
            s.fail_closed = true;
            "--fail-closed"
        }
        "trace" => {
            s.trace = Some(PathBuf::from(a.value()?));
            "--trace"
        }
        "trust-project" => {
            s.trust_project = true;
            "--trust-project"
        }
        "restart" => {
            let v = a.string(tok)?;
            s.restart = Some(crate::manifest::RestartPolicy::parse(&v).ok_or_else(|| {
                a.err(format!(
                    "invalid value '{v}' for '--restart': expected never, on-failure or always"
                ))
            })?);
            "--restart"
        }
        _ => return Ok(false),
    };
    s.given.push(name);
    Ok(true)
}

fn parse_serve(mut a: Args, mut s: SessionArgs) -> Result<Command, UsageError> {
    while let Some(tok) = a.next()? {
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        if is_help(&tok) {
            return Ok(Command::Help(serve_help()));
        }
        return Err(a.unexpected(&tok));
    }
    Ok(Command::Serve(s))
}

fn parse_mcp(mut a: Args, mut s: SessionArgs) -> Result<Command, UsageError> {
    while let Some(tok) = a.next()? {
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        if is_help(&tok) {
            return Ok(Command::Help(mcp_help()));
        }
        return Err(a.unexpected(&tok));
    }
    Ok(Command::Mcp(s))
}

fn parse_ext(mut a: Args, s: SessionArgs) -> Result<Command, UsageError> {
    if let Some(opt) = s.given.iter().find(|o| **o != "--cwd") {
        return Err(a.err(format!("option '{opt}' does not apply to 'zot ext'")));
    }
    let mut cwd = s.cwd;
    while let Some(tok) = a.next()? {
        match &tok {
            _ if is_help(&tok) => return Ok(Command::Help(ext_help())),
            Tok::Long(l) if l == "cwd" => cwd = Some(PathBuf::from(a.value()?)),
            Tok::Value(v) => {
                let sub = v.to_string_lossy().into_owned();
                if !EXT_SUBCOMMANDS.contains(&sub.as_str()) {
                    return Err(a.err(format!("unknown subcommand '{sub}'")));
                }
                a.context = format!("zot ext {sub}");
                return parse_ext_sub(a, &sub, cwd);
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Err(a.err("missing subcommand (list, install, remove, enable, disable, logs, new, check, doctor)"))
}

const EXT_SUBCOMMANDS: &[&str] = &["list", "install", "remove", "enable", "disable", "logs", "new", "check", "doctor"];

fn parse_ext_sub(mut a: Args, sub: &str, mut cwd: Option<PathBuf>) -> Result<Command, UsageError> {
    if sub == "doctor" {
        return parse_doctor(a, cwd);
    }
    if sub == "new" || sub == "check" {
        if cwd.is_some() {
            return Err(a.err(format!("option '--cwd' does not apply to 'zot ext {sub}'")));
        }
        return if sub == "new" { parse_new(a) } else { parse_check(a) };
    }
    let mut json = false;
    let mut yes = false;
    let mut follow = false;
    let mut positional: Option<OsString> = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return Ok(Command::Help(ext_sub_help(sub)));
        }
        match (&tok, sub) {
            (Tok::Long(l), _) if l == "cwd" && sub != "install" => {
                cwd = Some(PathBuf::from(a.value()?));
            }
            (Tok::Long(l), "list") if l == "json" => json = true,
            (Tok::Short('y'), "remove") => yes = true,
            (Tok::Long(l), "remove") if l == "yes" => yes = true,
            (Tok::Short('f'), "logs") => follow = true,
            (Tok::Long(l), "logs") if l == "follow" => follow = true,
            (Tok::Value(v), _) if sub != "list" && positional.is_none() => {
                positional = Some(v.clone());
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

/// `zot ext doctor [session options] [--json]`; `cwd` is a `--cwd` given
/// before `doctor`.
fn parse_doctor(mut a: Args, cwd: Option<PathBuf>) -> Result<Command, UsageError> {
    let mut s = SessionArgs { cwd, ..SessionArgs::default() };
    let mut json = false;
    while let Some(tok) = a.next()? {
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        match &tok {
            _ if is_help(&tok) => return Ok(Command::Help(crate::doctor::HELP.to_string())),
            Tok::Long(l) if l == "json" => json = true,
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(Command::ExtDoctor(s, json))

}

/// `zot trust [DIR] | zot trust --list | zot untrust [DIR]`.
fn parse_trust(mut a: Args) -> Result<Command, UsageError> {
    let untrust = a.context == "zot untrust";
    let mut dir: Option<PathBuf> = None;
    let mut list = false;
    while let Some(tok) = a.next()? {
        match &tok {
            _ if is_help(&tok) => return Ok(Command::Help(trust_help())),
            Tok::Long(l) if l == "list" && !untrust => list = true,
            Tok::Value(v) if dir.is_none() => dir = Some(PathBuf::from(v)),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    if list && dir.is_some() {
        return Err(a.err("'--list' takes no DIR"));
    }
    let dir = dir.map(|d| absolute(&d)).transpose().map_err(|e| a.err(e))?;
    use crate::trust::TrustCommand as T;
    Ok(Command::Trust(if untrust {
        T::Untrust(dir)
    } else if list {
        T::List
    } else {
        T::Trust(dir)
    }))
}

/// `zot trust --help`.
pub fn trust_help() -> String {
    String::from(
        "Usage: zot trust [DIR] | zot untrust [DIR] | zot trust --list

Project-local extensions (DIR/.zot/extensions) come with the repository you
are in, so they run only in a trusted project. 'zot trust' records the
project's canonical path and a fingerprint of its extensions (manifests and
the files they run inside the project) in $ZOT_HOME/trust.json; when they
change, the project is untrusted again until trusted anew. 'zot untrust'
forgets it; '--list' shows every trusted project and whether it changed.
DIR defaults to the current directory. '--trust-project' (zot, zot serve,
zot mcp) runs them for one run without recording anything.
",
    )
}

/// `zot ext new <name> [--lang LANG] [--dir PATH]`.
fn parse_new(mut a: Args) -> Result<Command, UsageError> {
    let mut name: Option<String> = None;
    let mut lang = "python".to_string();
    let mut dir = None;
    while let Some(tok) = a.next()? {
        match &tok {
            _ if is_help(&tok) => return Ok(Command::Help(crate::scaffold::HELP.to_string())),
            Tok::Long(l) if l == "lang" => {
                lang = a.string(&tok)?;
                if !crate::scaffold::LANGS.contains(&lang.as_str()) {
                    return Err(a.err(format!(
                        "invalid value '{lang}' for '--lang': expected one of {}",
                        crate::scaffold::LANGS.join(", ")
                    )));
                }
            }
            Tok::Long(l) if l == "dir" => dir = Some(PathBuf::from(a.value()?)),
            // Checked at run time (validate_name), like every other name.
            Tok::Value(v) if name.is_none() => name = Some(v.to_string_lossy().into_owned()),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    let Some(name) = name else { return Err(a.err("missing <name>")) };
    Ok(Command::ExtNew(crate::scaffold::NewOptions { name, lang, dir }))
}

/// `zot ext check <path> [--json] [--timeout SECS]`.
fn parse_check(mut a: Args) -> Result<Command, UsageError> {
    let mut path = None;
    let mut json = false;
    let mut call_timeout = None;
    while let Some(tok) = a.next()? {
        match &tok {
            _ if is_help(&tok) => return Ok(Command::Help(crate::check::HELP.to_string())),
            Tok::Long(l) if l == "json" => json = true,
            Tok::Long(l) if l == "timeout" => call_timeout = Some(a.secs(&tok)?),
            Tok::Value(v) if path.is_none() => path = Some(PathBuf::from(v)),
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
    let mut s = format!(
        "zot {VERSION}: a host for zot extensions

Usage:
  zot [OPTIONS]                       interactive session
  zot serve [OPTIONS]                 host protocol (JSON lines) on stdin/stdout
  zot mcp [OPTIONS]                   the extensions as an MCP server on stdio
  zot ext list [--json]               installed extensions and their state
  zot ext install <path|git-url>      copy or clone into $ZOT_HOME/extensions
  zot ext remove <name> [-y|--yes]    delete an installed extension
  zot ext enable <name>               load it again on launch
  zot ext disable <name>              keep it installed but skip it on launch
  zot ext logs <name> [-f|--follow]   print (or follow) the extension's log
  zot ext new <name> [--lang LANG] [--dir PATH]
                                      write a working extension to start from
  zot ext check <path> [--json]       run an extension and report its problems
  zot ext doctor [OPTIONS] [--json]   load as a session would, report, stop
  zot trust [DIR] | zot untrust [DIR] allow (or stop) the project's own extensions
  zot trust --list                    the trusted projects
  zot --help | zot --version

"
    );
    s.push_str(&session_options());
    s.push_str(&opt_line("-h, --help", "print this help"));
    s.push_str(&opt_line("-V, --version", "print the version"));
    s.push_str("SECS accepts fractions (0.5).\n\nRun 'zot ext --help' or 'zot <command> --help' for more.\n");
    s.push_str(&environment());
    s
}

/// `zot serve --help`.
pub fn serve_help() -> String {
    let mut s = String::from(
        "Usage: zot serve [OPTIONS]

Runs the extension host and speaks JSON lines on stdin/stdout, so that an
agent in any language can use it as its extension subsystem. Requests are
{\"id\":..,\"type\":<method>,...}; methods: ping, list, command, tool,
intercept, event, panel_key, panel_close, reload, shutdown. Diagnostics go
to stderr. End of stdin shuts the host down. Options may come before or
after the word 'serve'.

",
    );
    s.push_str(&session_options());
    s.push_str(&opt_line("-h, --help", "print this help"));
    s.push_str("SECS accepts fractions (0.5).\n");
    s.push_str(&environment());
    s
}

/// `zot mcp --help`.
pub fn mcp_help() -> String {
    let mut s = String::from(
        "Usage: zot mcp [OPTIONS]

Runs the extension host as an MCP server on stdin/stdout (JSON-RPC 2.0, one
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
    );
    s.push_str(&session_options());
    s.push_str(&opt_line("-h, --help", "print this help"));
    s.push_str("SECS accepts fractions (0.5).\n");
    s.push_str(&environment());
    s
}

fn session_options() -> String {
    let d = Timeouts::default();
    let f = fmt_duration;
    let mut s = String::from("Options (zot and zot serve):\n");
    let rows: [(&str, String); 19] = [
        ("-e, --ext PATH", "load the extension in PATH for this run".into()),
        ("", "(repeatable; wins over installed ones)".into()),
        ("    --no-ext", "skip project-local and global discovery".into()),
        ("    --cwd DIR", "project directory (default: current dir)".into()),
        ("    --provider NAME", "provider name passed to extensions".into()),
        ("    --model NAME", "model name passed to extensions".into()),
        (
            "    --hello-timeout SECS",
            format!("spawn to hello, per extension (default {})", f(d.hello)),
        ),
        (
            "    --ready-grace SECS",
            format!("wait for ready, all together (default {})", f(d.ready_grace)),
        ),
        ("    --command-timeout SECS", format!("per command (default {})", f(d.command))),
        ("    --tool-timeout SECS", format!("per tool call (default {})", f(d.tool))),
        ("    --intercept-timeout SECS", format!("per interceptor (default {})", f(d.intercept))),
        ("    --fail-closed", "a failed or late interceptor blocks instead".into()),
        ("", "of allowing".into()),
        ("    --trace FILE", "write every frame in and out to FILE, one JSON".into()),
        ("", "line each (default: $ZOT_TRACE)".into()),
        ("    --trust-project", "run the project's extensions for this run".into()),
        ("", "even if it is not trusted (see 'zot trust')".into()),
        ("    --restart POLICY", "never, on-failure or always, for every".into()),
        ("", "extension (default: each manifest's restart)".into()),
    ];
    for (opt, help) in rows {
        s.push_str(&opt_line(opt, &help));
    }
    s
}

fn opt_line(opt: &str, help: &str) -> String {
    format!("  {opt:<28}  {help}\n")
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
    String::from(
        "Usage: zot ext <command> [--cwd DIR]

Manage extensions: global ones in $ZOT_HOME/extensions and project-local ones
in <cwd>/.zot/extensions (cwd: --cwd DIR or the current directory). A name is
the manifest name that 'zot ext list' shows or the name of the extension's
folder, looked up in the project-local and the global extensions; a name that
matches more than one is refused (the matching folders are listed) and
nothing changes.

Commands:
  list [--json]               installed extensions (project first, then global),
                              including disabled ones and broken manifests
  install <path|git-url>      copy a local folder, or shallow-clone a git URL,
                              into $ZOT_HOME/extensions/<manifest name>
  remove <name> [-y|--yes]    delete an extension (asks first on a terminal)
  enable <name>               load it on launch again
  disable <name>              keep it installed but skip it on launch
  logs <name> [-f|--follow]   print $ZOT_HOME/logs/ext-<name>.log, or follow it
  doctor [OPTIONS] [--json]   load every extension as a session with the same
                              options would, report each one's state, names
                              and log lines of the load, then stop them

For extension authors:
  new <name> [--lang LANG] [--dir PATH]
                              write a working extension folder <PATH>/<name>
                              (python, node, typescript, shell, rust, go)
  check <path> [--json] [--timeout SECS]
                              run the extension in <path> in a throw-away
                              ZOT_HOME and report problems, with fixes

Run 'zot ext <command> --help' for more.
",
    )
}

fn ext_sub_help(sub: &str) -> String {
    let text = match sub {
        "new" => crate::scaffold::HELP,
        "check" => crate::check::HELP,
        "list" => {
            "Usage: zot ext list [--json] [--cwd DIR]

Lists the project-local (<cwd>/.zot/extensions) and global
($ZOT_HOME/extensions) extensions, including disabled ones and broken
manifests, sorted by name, project-local first. A global extension with the
same name as a project-local one is shadowed by it (noted below the table).

Options:
  --json       print a JSON array of {scope, name, version, enabled, language,
               description, dir, error?, shadowed_by?}
  --cwd DIR    the project directory (default: the current directory)
"
        }
        "install" => {
            "Usage: zot ext install <path|git-url>

Installs an extension into $ZOT_HOME/extensions/<name>, <name> being the
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
"
        }
        "remove" => {
            "Usage: zot ext remove <name> [-y|--yes] [--cwd DIR]

Deletes the extension's directory (a manifest or folder name). Asks
for confirmation on a terminal; without a terminal, --yes is required. An
extension directory that is a symbolic link is unlinked, its target is left
alone. The extension's log is kept.

Options:
  -y, --yes    do not ask
  --cwd DIR    the project directory (default: the current directory)
"
        }
        "enable" => {
            "Usage: zot ext enable <name> [--cwd DIR]

Sets \"enabled\": true in the extension's manifest (an atomic rewrite that keeps
every other field and byte), so it is loaded on launch again.

Options:
  --cwd DIR    the project directory (default: the current directory)
"
        }
        "disable" => {
            "Usage: zot ext disable <name> [--cwd DIR]

Sets \"enabled\": false in the extension's manifest (an atomic rewrite that
keeps every other field and byte): it stays installed and listed but is not
loaded on launch.

Options:
  --cwd DIR    the project directory (default: the current directory)
"
        }
        _ => {
            "Usage: zot ext logs <name> [-f|--follow] [--cwd DIR]

Prints the extension's log, $ZOT_HOME/logs/ext-<name>.log: its stderr plus
the host's lines prefixed [zot].

Options:
  -f, --follow   keep printing what is appended (survives truncation and
                 rotation) until interrupted
  --cwd DIR      the project directory (default: the current directory)
"
        }
    };
    text.to_string()
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
    }
}
