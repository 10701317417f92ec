//! How to run a host: [`Config`], with its deadlines ([`Timeouts`]), its
//! per-extension bounds ([`Limits`]) and the default queue sizes.

use crate::discovery::Sources;
use crate::home::Home;
use std::path::PathBuf;
use std::time::Duration;

/// Every deadline the host enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Spawn to `hello`, per extension.
    pub hello: Duration,
    /// Quiet time after the handshake that counts as `ready` for
    /// extensions that never send it.
    pub ready_idle: Duration,
    /// Start-up wait for `ready`, all extensions together.
    pub ready_grace: Duration,
    /// Per command: `command_invoked` to its `command_response`.
    pub command: Duration,
    /// Per tool call, `tool_call` to its `tool_result`.
    pub tool: Duration,
    /// Per interceptor in a chain.
    pub intercept: Duration,
    /// After `shutdown` and closing stdin, before SIGTERM.
    pub shutdown_grace: Duration,
    /// After SIGTERM, before SIGKILL.
    pub term_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            hello: Duration::from_secs(5),
            ready_idle: Duration::from_millis(250),
            ready_grace: Duration::from_secs(3),
            command: Duration::from_secs(30),
            tool: Duration::from_secs(60),
            intercept: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(1),
        }
    }
}

/// Default number of frames queued for one child before calls to it fail
/// with `busy`. With [`DEFAULT_QUEUE_BYTES`] it lets a burst of thousands
/// of small calls wait for a single-threaded extension that is merely
/// slower than the agent for a moment (5,000 calls of 100 bytes are half a
/// MiB); the count bounds the bookkeeping of tiny frames.
pub const DEFAULT_QUEUE_LIMIT: usize = 16 * 1024;

/// Default bytes queued for one child's writer thread (beyond the 64 KiB
/// in the pipe and up to 64 KiB being gathered for it) before calls to it
/// fail with `busy`: 1.25 MiB, some 1,200 calls of 1 KiB behind a child
/// that stopped reading, or 12,000 of 100 bytes behind one that is only
/// slow. A frame that finds its child's queue empty is always taken,
/// whatever its size (up to the 4 MiB frame limit).
pub const DEFAULT_QUEUE_BYTES: usize = 1280 * 1024;

/// Default bytes queued for all children of one host together: 16 MiB
/// (upstream's bound for a single child), so that many stalled children
/// cannot add up to more than that.
pub const DEFAULT_QUEUE_BUDGET: usize = 16 * 1024 * 1024;

/// Bounds on what one extension can make the host hold. Past each, the
/// extension is refused (and told in its log) and the others carry on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Calls in flight to one extension; more fail with `busy`. As many as
    /// the frames its queue holds ([`DEFAULT_QUEUE_LIMIT`]), so a burst
    /// the queue absorbs is not refused here.
    pub in_flight: usize,
    /// Commands one extension may register.
    pub commands: usize,
    /// Tools one extension may register.
    pub tools: usize,
    /// Event and intercept subscriptions of one extension, together.
    pub subscriptions: usize,
    /// Longest name of a command, tool or event, in bytes; longer is refused.
    pub name_bytes: usize,
    /// Longest description, panel title, footer or panel line, in bytes;
    /// longer is cut.
    pub text_bytes: usize,
    /// Largest tool schema, serialized, in bytes; larger is refused.
    pub schema_bytes: usize,
    /// Lines kept of a panel; more are cut.
    pub panel_lines: usize,
    /// Spontaneous frames (notify, clear_notes, submit, panels) forwarded
    /// in a burst; past it, the sustained rate below applies and the excess
    /// is dropped and counted.
    pub notes_burst: u32,
    /// Sustained spontaneous frames forwarded per second.
    pub notes_per_sec: u32,
    /// A log file past this size is renamed to `ext-<name>.log.1` and a
    /// new one begun (docs/protocol.md §1); 0: never.
    pub log_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            in_flight: 16 * 1024,
            commands: 256,
            tools: 256,
            subscriptions: 64,
            name_bytes: 256,
            text_bytes: 4096,
            schema_bytes: 64 * 1024,
            panel_lines: 1000,
            notes_burst: 200,
            notes_per_sec: 100,
            log_bytes: crate::log::LOG_MAX,
        }
    }
}

/// How to run a host.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where installed extensions, logs and trust live.
    pub home: Home,
    /// Where to discover extensions: `--ext` paths, project-local, global.
    pub sources: Sources,
    /// `--mcp-config` files, in command-line order (docs/protocol.md §8.1);
    /// the project and global `mcp.json` are read unless `--no-ext`.
    pub mcp_configs: Vec<PathBuf>,
    /// The project directory: project-local discovery and `cwd` in `hello_ack`.
    pub cwd: PathBuf,
    /// The model provider, passed on in `hello_ack`.
    pub provider: String,
    /// The model, passed on in `hello_ack`.
    pub model: String,
    /// The host's version, passed on in `hello_ack`.
    pub zot_version: String,
    /// Every deadline the host enforces.
    pub timeouts: Timeouts,
    /// A failed or late interceptor blocks instead of allowing.
    pub fail_closed: bool,
    /// Frames queued per child before calls to it fail with `busy`
    /// ([`DEFAULT_QUEUE_LIMIT`]).
    pub queue_limit: usize,
    /// Bytes queued per child before calls to it fail with `busy`
    /// ([`DEFAULT_QUEUE_BYTES`]).
    pub queue_bytes: usize,
    /// Bytes queued for all children together before calls to a child
    /// with something queued already fail with `busy`
    /// ([`DEFAULT_QUEUE_BUDGET`]).
    pub queue_budget: usize,
    /// Bounds on what one extension can make the host hold.
    pub limits: Limits,
    /// Command names owned by the embedding program (its built-ins); an
    /// extension registering one of them is shadowed.
    pub reserved_commands: Vec<String>,
    /// Requests about extensions (commands, tools, events, intercepts,
    /// panels) that arrive during the initial load wait for it to end, as
    /// `zot serve` promises (docs/protocol.md §4, start-up); otherwise they run
    /// at once against what has registered so far. During a reload they
    /// always wait.
    pub hold_until_loaded: bool,
    /// `interactive` tools run with no reply deadline; without it they are
    /// refused at once (docs/protocol.md §6.2).
    pub interactive_tools: bool,
    /// `--trace FILE`: every frame in and out, recorded where each child's
    /// lines are read and its frames sent ([`Tracer`](crate::host::Tracer)); flushed by
    /// [`Host::shutdown`](crate::host::Host::shutdown).
    pub trace: Option<std::sync::Arc<crate::trace::Tracer>>,
    /// `--trust-project`: load the project's extensions for this run even
    /// if the project is not trusted (`zot trust`).
    pub trust_project: bool,
    /// `--restart`: overrides every manifest's `restart` for this run.
    pub restart: Option<crate::manifest::RestartPolicy>,
    /// `--confine` (docs/protocol.md §9.3): `declared` unless set.
    pub confine: crate::confine::Mode,
}

impl Config {
    /// A config with defaults for everything but where to look.
    pub fn new(home: Home, cwd: PathBuf) -> Config {
        Config {
            home,
            sources: Sources::default(),
            mcp_configs: Vec::new(),
            cwd,
            provider: String::new(),
            model: String::new(),
            zot_version: env!("CARGO_PKG_VERSION").to_string(),
            timeouts: Timeouts::default(),
            fail_closed: false,
            queue_limit: DEFAULT_QUEUE_LIMIT,
            queue_bytes: DEFAULT_QUEUE_BYTES,
            queue_budget: DEFAULT_QUEUE_BUDGET,
            limits: Limits::default(),
            reserved_commands: Vec::new(),
            hold_until_loaded: false,
            interactive_tools: false,
            trace: None,
            trust_project: false,
            restart: None,
            confine: crate::confine::Mode::Declared,
        }
    }
}
