//! `zot ext doctor [session options] [--json]`: runs the same discovery and
//! load as a session with the same options, through the library's
//! [`Host`], then reports for every extension where it came from, its log,
//! its state, its commands and tools (in force, or shadowed by whom), the
//! name conflicts, and the `[zot]` lines the host logged for it during this
//! load; then stops everything. Every finding has a one-line fix hint, in
//! the vocabulary of `zot ext check` ([`Finding`](crate::check::Finding)).
//!
//! What the host does not load (disabled, shadowed by a higher source,
//! broken manifests) comes from [`discover`](crate::discovery::discover), the same pass the host makes.
//! How an extension became ready is read from its `ready (...)` log line,
//! and the problems the host logged during the load become warnings.
//!
//! Exit code (docs/protocol.md §5): 0 when every enabled extension loaded and no
//! name is in conflict, else 1. An untrusted extension did not load and a
//! shadowed one (same name from a higher source) is a name conflict: both
//! are errors. A disabled one is reported and does not fail.
//!
//! [`gather`] builds the report, [`checks`] holds the findings of one
//! entry, [`report`] the report's shape and its text form.

mod checks;
mod gather;
mod report;
mod tries;

pub use report::{render, Report};

use crate::discovery::discover_with;
use crate::host::{Config, Host};
use crate::text::one_line;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `zot ext doctor --help`.
pub const HELP: &str = "Usage: zot ext doctor [OPTIONS] [--json]

Loads every extension and MCP server exactly as a session with the same
options would (--ext paths, --mcp-config files, project-local, global),
waits for the load to end, reports,
and stops them all. For each extension: source, folder, log file, state
(ready, auto_ready, ready_grace_exceeded, failed with the reason, broken
with why its exec cannot start, exited, disabled, shadowed, untrusted,
static), its commands and tools each in
force or shadowed by whom, and the [zot] lines the host logged for it
during this load (a problem the host logged, such as a refused
registration or a hello under another name, is a warning). Then the name
conflicts, and one finding per problem with a fix hint:
  <severity> <code> <extension>: <message> (fix: <what to do>)

Exit status: 0 when every enabled extension loaded and no extension,
command or tool name is in conflict, 1 otherwise (an untrusted or a
shadowed extension fails; a disabled one is reported and does not).

Options: every option of 'zot serve' (see 'zot serve --help'), and
  --json    print one JSON object instead:
            {\"ok\", \"errors\", \"warnings\", \"infos\", \"load_ms\", \"cwd\", \"home\",
             \"extensions\": [{\"name\", \"kind\", \"version\", \"source\", \"dir\", \"log\",
               \"state\", \"reason\"?, \"pid\"?, \"commands\": [{\"name\", \"in_force\",
               \"shadowed_by\"?}], \"tools\": [...], \"events\", \"intercepts\",
               \"log_lines\": [...], \"findings\": [...]}],
             \"conflicts\": [{\"kind\": \"command\"|\"tool\"|\"extension\", \"name\",
               \"winner\", \"shadowed\": [names or folders]}],
             \"findings\": [{\"severity\", \"code\", \"extension\", \"message\", \"hint\"}]}
";

/// Runs `zot ext doctor` with the session's `config`; returns the exit code.
pub fn run(config: Config, json: bool) -> i32 {
    let report = match doctor(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zot: {}", one_line(&e));
            return 1;
        }
    };
    crate::check::report::print(&report, json, report.ok, render)
}

/// Loads, inspects and stops the extensions of `config`. `Err` only when
/// the host cannot start at all.
pub fn doctor(mut config: Config) -> Result<Report, String> {
    config.reserved_commands = crate::console::BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
    let home = config.home.clone();
    let grace = config.timeouts.ready_grace;
    let disc = discover_with(&config.sources, &config.mcp_configs, &config.cwd, &home, config.trust_project);
    let mut logs = LogMarks::default();
    for f in disc.load.iter().chain(disc.shadowed.iter().map(|(f, _)| f)) {
        logs.mark(&f.log_path(&home));
    }
    let cwd = config.cwd.display().to_string();
    let started = Instant::now();
    let (host, _events) = Host::start(config).map_err(|e| e.to_string())?;
    let loaded = host.wait_ready();
    let load_ms = ms(started.elapsed());
    let listing = host.list();
    // Read before the stop, so that only this load's lines are reported;
    // the host's own lines are written by the logger thread.
    crate::log::flush();
    let lines: HashMap<PathBuf, Vec<String>> =
        logs.marks.keys().map(|p| (p.clone(), logs.appended(p))).collect();
    host.shutdown();
    let listing = match (loaded, listing) {
        (Ok(_), Ok(l)) => l,
        (Err(e), _) | (_, Err(e)) => return Err(format!("the host did not report its load: {e}")),
    };
    let mut r = gather::build(&disc, &listing, &lines, grace, &home);
    r.load_ms = load_ms;
    r.cwd = cwd;
    r.home = home.root().display().to_string();
    Ok(r)
}

/// Log sizes before the load, so that only what it appended is read.
#[derive(Default)]
struct LogMarks {
    marks: HashMap<PathBuf, u64>,
}

/// At most this much of one log is read back.
const LOG_READ: u64 = 256 * 1024;

impl LogMarks {
    fn mark(&mut self, path: &Path) {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        self.marks.insert(path.to_path_buf(), len);
    }

    /// The `[zot]` lines appended since [`LogMarks::mark`], prefix removed.
    fn appended(&self, path: &Path) -> Vec<String> {
        let Ok(mut f) = std::fs::File::open(path) else { return Vec::new() };
        let len = f.metadata().map_or(0, |m| m.len());
        let mut from = self.marks.get(path).copied().unwrap_or(0);
        // Rotated meanwhile: the file starts over.
        if len < from {
            from = 0;
        }
        from = from.max(len.saturating_sub(LOG_READ));
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_err() || f.take(LOG_READ).read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        String::from_utf8_lossy(&buf)
            .lines()
            .filter_map(|l| l.strip_prefix("[zot] "))
            .map(one_line)
            .collect()
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
