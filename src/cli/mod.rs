//! The `zot` command line: parsing arguments with `lexopt` into a
//! [`Command`], the usage texts, turning session options into a
//! [`host::Config`](crate::host::Config), and dispatching to the console,
//! `zot serve` or the `zot ext` subcommands ([`crate::manage`]).
//!
//! Exit codes: 0 success (and `--help`/`--version`), 1 a runtime error
//! (one line `zot: <message>` on stderr), 2 a usage error (one line naming
//! the offending argument and the help to read).
//!
//! The rooms: `flags` holds the flag and command tables, `parse` the
//! parser, `help` the usage texts, `doc` the man page and the completion
//! scripts (the last three read the tables, and nothing reads them back),
//! `topics` the files and console keys that `help` and `doc` describe;
//! this file the session options, the usage error and the dispatch.

mod doc;
mod flags;
mod help;
mod parse;
mod topics;

pub use parse::parse;

use crate::discovery::Sources;
use crate::VERSION;
use crate::home::Home;
use crate::host::Config;
use crate::manage::{self, sanitize, ExtCommand};
use std::env;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

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
    /// `zot mcp import`: another MCP client's servers into the global file.
    McpImport(crate::mcpserver::import::ImportOptions),
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
    /// `--mcp-config FILE`, in order.
    pub mcp_configs: Vec<PathBuf>,
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
    /// `--confine MODE` (else `ZOT_CONFINE`).
    pub confine: Option<crate::confine::Mode>,
    /// `--interactive-tools`.
    pub interactive_tools: bool,
    /// `--trace FILE` (else `ZOT_TRACE`): every frame, one JSON line each.
    pub trace: Option<PathBuf>,
    /// The long names of the options that were given, in order (`ext`,
    /// `model`, ...), to refuse them where they do not apply.
    pub given: Vec<&'static str>,
}

impl SessionArgs {
    /// Builds the host configuration (after checking every `--ext` path,
    /// [`crate::argpath`]): `ZOT_HOME` from the environment, the
    /// project directory (`--cwd`, checked, or the current directory),
    /// `--ext` paths made absolute against the process's current directory,
    /// and the timeouts over [`Timeouts::default`](crate::host::Timeouts::default).
    pub fn into_config(self) -> Result<Config, String> {
        for p in &self.ext_paths {
            crate::argpath::check("ext", p, crate::argpath::Expect::Extension)?;
        }
        let home = home()?;
        warn_shared_home(&home);
        let cwd = match &self.cwd {
            Some(dir) => resolve_dir(dir)?,
            None => crate::project::root(&current_dir()?, home.root()),
        };
        let ext_paths =
            self.ext_paths.iter().map(|p| absolute(p)).collect::<Result<Vec<_>, _>>()?;
        // A server file named on the command line must be there and be
        // one, before anything is started (docs/protocol.md §4).
        let mut mcp_configs = Vec::new();
        for p in &self.mcp_configs {
            let abs = absolute(p)?;
            crate::mcpserver::config::check_given(&abs).map_err(|why| format!("--mcp-config {}: {why}", p.display()))?;
            mcp_configs.push(abs);
        }
        let mut config = Config::new(home, cwd);
        config.sources = Sources { ext_paths, no_ext: self.no_ext };
        config.mcp_configs = mcp_configs;
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
        config.confine = match self.confine {
            Some(m) => m,
            None => crate::confine::Mode::from_env()?,
        };
        if config.confine == crate::confine::Mode::Off {
            eprintln!("{}", crate::confine::OFF_NOTICE);
        }
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
        Command::McpImport(opts) => match home() {
            Ok(home) => crate::mcpserver::import::run(&opts, &home.root().join(crate::mcpserver::config::MCP_FILE)),
            Err(e) => fail(&e),
        },
        Command::Ext { cwd, cmd } => {
            let home = match home() {
                Ok(h) => h,
                Err(e) => return fail(&e),
            };
            warn_shared_home(&home);
            let cwd = match cwd.as_deref().map(resolve_dir).transpose() {
                Ok(Some(c)) => Some(c),
                Ok(None) => std::env::current_dir().ok().map(|d| crate::project::root(&d, home.root())),
                Err(e) => return fail(&e),
            };
            manage::run(cmd, &home, cwd.as_deref())
        }
        Command::ExtNew(opts) => crate::scaffold::run(&opts),
        Command::ExtCheck(opts) => crate::check::run(&opts),
        Command::Completions(shell) => {
            print!("{}", doc::completions(&shell));
            0
        }
        Command::Man => {
            print!("{}", doc::man_page());
            0
        }
        Command::ExtDoctor { session, json } => match session.into_config() {
            Ok(config) => crate::doctor::run(config, json),
            Err(e) => fail(&e),
        },
        Command::Trust(cmd) => match home() {
            Ok(home) => {
                warn_shared_home(&home);
                crate::trust::run(cmd, &home, &crate::discovery::project_names, &crate::discovery::project_reach)
            }
            Err(e) => fail(&e),
        },
    }
}

/// The home from the environment; one that exists as something other than
/// a directory is an error (it would read as a home with nothing in it).
fn home() -> Result<Home, String> {
    let home = Home::from_env().map_err(|e| e.to_string())?;
    match std::fs::metadata(home.root()) {
        Ok(m) if !m.is_dir() => {
            let which = if env::var_os("ZOT_HOME").is_some_and(|v| !v.is_empty()) { "ZOT_HOME" } else { "the zot home" };
            Err(format!("{which} {}: not a directory", home.root().display()))
        }
        _ => Ok(home),
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

/// One line on stderr when the zot home is writable by other users.
fn warn_shared_home(home: &Home) {
    if let Some(w) = crate::home::shared_home_warning(home) {
        eprintln!("zot: {}", crate::text::one_line(&w));
    }
}
