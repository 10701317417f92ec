//! What the command line asks for ([`Command`]), the session options
//! ([`SessionArgs`]) turned into a [`host::Config`](crate::host::Config),
//! and the usage error: what every other file of `cli` shares.

use crate::discovery::Sources;
use crate::VERSION;
use crate::home::Home;
use crate::host::Config;
use crate::manage::{sanitize, ExtCommand};
use std::env;
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
    /// `zot mcp login NAME` (`logout`: `zot mcp logout NAME`).
    McpLogin { session: SessionArgs, name: String, logout: bool },
    /// `zot ext ...`; `cwd` is `--cwd` as given (not yet checked).
    Ext { cwd: Option<PathBuf>, cmd: ExtCommand },
    /// `zot ext new`.
    ExtNew(crate::scaffold::NewOptions),
    /// `zot ext check`.
    ExtCheck(crate::check::CheckOptions),
    /// `zot ext doctor [OPTIONS] [--json]`.
    ExtDoctor { session: SessionArgs, json: bool },
    /// `zot trust [DIR]`, `zot untrust [DIR]`, `zot trust --list`, with
    /// `zot trust`'s `--confine` mode as given.
    Trust(crate::trust::TrustCommand, Option<String>),
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
    /// The command the error is about: `zot`, `zot serve`, `zot ext install`;
    /// empty for one whose message is the same in every command
    /// (`zot: --confine: unknown mode ...`, docs/protocol.md §9.3).
    pub context: String,
    pub message: String,
}

impl UsageError {
    /// `zot: <message>`, whatever the command.
    pub fn bare(message: String) -> UsageError {
        UsageError { context: String::new(), message }
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.context.as_str() {
            "" => write!(f, "zot: {}", sanitize(&self.message)),
            c => write!(f, "{c}: {} (see '{c} --help')", sanitize(&self.message)),
        }
    }
}

/// The home from the environment; one that exists as something other than
/// a directory is an error (it would read as a home with nothing in it).
pub(super) fn home() -> Result<Home, String> {
    let home = Home::from_env().map_err(|e| e.to_string())?;
    match std::fs::metadata(home.root()) {
        Ok(m) if !m.is_dir() => {
            let which = if env::var_os("ZOT_HOME").is_some_and(|v| !v.is_empty()) { "ZOT_HOME" } else { "the zot home" };
            Err(format!("{which} {}: not a directory", home.root().display()))
        }
        _ => Ok(home),
    }
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
pub(super) fn absolute(p: &Path) -> Result<PathBuf, String> {
    let joined = if p.is_absolute() { p.to_path_buf() } else { current_dir()?.join(p) };
    Ok(joined.components().filter(|c| *c != Component::CurDir).collect())
}

/// One line on stderr when the zot home is writable by other users.
pub(super) fn warn_shared_home(home: &Home) {
    if let Some(w) = crate::home::shared_home_warning(home) {
        eprintln!("zot: {}", crate::text::one_line(&w));
    }
}
