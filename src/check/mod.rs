//! `zot ext check <path> [--json] [--timeout SECS]`: runs one extension the
//! way the host would and reports what a user of it would trip over, one
//! finding per line with a severity (error, warning, info), a stable code
//! and a fix hint.
//!
//! The extension runs as the host runs it, a
//! [`Child`](crate::child::Child), but the check drives it itself, not
//! through the [`Host`](crate::host::Host), because it must see raw lines
//! and their order: spawned in its own process group, cwd its manifest's
//! directory, its manifest's `env` added to its environment as the host
//! adds it (docs/protocol.md §7.2, expanded from the check's own environment),
//! `ZOT_HOME` a temporary directory (removed afterwards), stderr to a file
//! in it, stdout read as lines. The sequence:
//!
//! 1. the manifest ([`Manifest::load`], [`Manifest::resolve_exec`], then
//!    its `env` expanded: a reference to an unset variable without a
//!    default is an `env` error in the host's words, naming the entry and
//!    the variable, and nothing is started; values never appear in the
//!    report);
//! 2. `hello` within 5 s, as the first frame;
//! 3. `hello_ack` (listing the `call_tool` capability) held back for [`Deadlines::hold`] (200 ms) to see whether
//!    it registers before the ack (legal, legacy: info), then sent; then
//!    `ready`, or the host's 250 ms auto-ready (warning);
//! 4. the registrations: names, descriptions, tool schemas (JSON Schema
//!    shape: an object, `type` values, `properties`, `required` naming only
//!    properties), subscriptions;
//! 5. every command invoked with empty args, every tool called with `{}`,
//!    an `event_intercept` with a harmless payload for every subscribed
//!    interceptable event: each must be answered in time by a well-formed
//!    reply of the right type carrying the request's id;
//! 6. `shutdown` (and stdin closed): `shutdown_ack`, the process gone
//!    within 2 s, nothing left in its process group;
//! 7. whatever it wrote to stderr (info).
//!
//! Every stdout line is checked on the way: not a frame, an unknown type,
//! missing or mistyped fields. The lines written just before an exit count
//! too, as for the host (docs/protocol.md §3 rule 8): once the exit is seen,
//! stdout is read to its end, or for 2 s more when a grandchild holds it
//! open (longer than the host's 100 ms, so that a busy machine does not
//! make the report misjudge it), before the check concludes. Times are
//! reported as the host would see them: the 200 ms
//! hold of `hello_ack` is not counted.
//!
//! Exit code: 0 when there is no error (warnings do not fail), 1 otherwise.
//!
//! The parts: `findings.rs` (the list and its caps), `run.rs` (the
//! sandbox, the process and its lines), `session.rs` (the session's own
//! thread, the handshake and the stop; `session/frames.rs` what the
//! extension sends, `session/calls.rs` what it is asked), `schema.rs` (tool
//! schema rules), `report.rs` (the text).

mod findings;
mod outcome;
pub(crate) mod report;
mod run;
mod schema;
mod session;

pub use report::render;

use crate::envexpand::ExpandError;
use crate::manifest::{Manifest, MANIFEST_FILE};
use crate::text::one_line;
use findings::Findings;
pub use outcome::{Deadlines, Finding, Report, Severity, Timings};
use outcome::ms;
use run::Sandbox;
use session::Session;
use std::fs;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What `zot ext check` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    /// The extension's directory (or its `extension.json`).
    pub path: PathBuf,
    pub json: bool,
    /// Overrides [`Deadlines::call`].
    pub call_timeout: Option<Duration>,
}

/// `zot ext check --help`.
pub const HELP: &str = "Usage: zot ext check <path> [--json] [--timeout SECS]

Runs the extension in <path> (a folder holding extension.json) the way zot
would, in a throw-away ZOT_HOME, and reports one finding per line:
  <severity> <code> <message> (fix: <what to do>)
severity: error (it will not work right in zot), warning (it works, but
something is off), info (worth knowing; its advice reads 'hint:'), then the
times, the calls made and a verdict line. Checked: the manifest and exec; time
to hello and to ready, and whether it relied on the 250 ms auto-ready (no
ready frame); stdout lines that are not frames, unknown frame types, missing
or mistyped fields; registrations before hello_ack (legacy order); tool
schemas; every command run with empty args and every tool called with {},
answered in time with a well-formed reply carrying the right id; subscribed
intercepts answered (a harmless payload each); shutdown acknowledged, the
process gone within 2s, nothing left in its process group; anything written
to stderr. Frames and fields of the current upstream revision are known:
call_tool (answered with an error result: the check runs no other tool;
flagged without the call_tool capability or with a wrong parent_id),
call_tool_cancel, submit_slash (must start with /), register_tool's
output_schema, deferred, exposure and replay (unknown values flagged),
interactive (such tools are not called), namespace fields, tool_result's
structured_content, activate_tools and text format, the tool_prompt action
(needs tool_name); a tool slower than 1s without the tool_cancel
capability is flagged. Deadlines: hello 5s, each call 5s, shutdown 2s.

Exit status: 0 when there are no errors (warnings do not fail), 1 otherwise.

Options:
  --json           print one JSON object instead:
                   {\"extension\": name|null, \"dir\": path, \"ok\": bool,
                    \"errors\": n, \"warnings\": n, \"infos\": n,
                    \"timings\": {\"hello_ms\", \"ready_ms\", \"ready_by\":
                      \"frame\"|\"auto\"|null, \"shutdown_ms\", \"total_ms\"},
                    \"calls\": [{\"kind\": \"command\"|\"tool\"|\"intercept\",
                      \"name\", \"ms\": number|null, \"ok\": bool}],
                    \"findings\": [{\"severity\", \"code\", \"message\", \"hint\"}]}
                   (times in milliseconds, null when it never happened)
  --timeout SECS   the deadline of each call (default 5; fractions accepted)
";

/// Runs `zot ext check`; returns the exit code.
pub fn run(opts: &CheckOptions) -> i32 {
    let mut d = Deadlines::default();
    if let Some(t) = opts.call_timeout {
        d.call = t;
    }
    let report = match check(&opts.path, &d) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zot: {}", one_line(&e));
            return 1;
        }
    };
    crate::check::report::print(&report, opts.json, report.ok, render)
}

/// Checks the extension in `path`. `Err` only when the check itself cannot
/// run (no temporary directory); everything about the extension is a
/// finding.
pub fn check(path: &Path, d: &Deadlines) -> Result<Report, String> {
    let started = Instant::now();
    let dir = if path.file_name().is_some_and(|n| n == MANIFEST_FILE) && path.is_file() {
        path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        path.to_path_buf()
    };
    let mut f = Findings::default();
    let mut timings = Timings::default();
    let mut calls = Vec::new();
    let shown_dir = fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone()).display().to_string();
    // A file that is not a manifest: said as such, not as a folder that
    // cannot be read.
    let not_a_manifest = path.is_file().then(|| crate::argpath::problem(path, crate::argpath::Expect::Extension).err()).flatten();
    let manifest = match not_a_manifest {
        Some(why) => {
            f.error("manifest", format!("{}: {why}", path.display()), manifest_hint(&dir));
            None
        }
        None => match Manifest::load(&dir) {
            Ok(m) => Some(m),
            Err(e) => {
                f.error("manifest", e.to_string(), manifest_fix(&e, &dir));
                None
            }
        },
    };
    let mut name = None;
    if let Some(m) = manifest {
        name = Some(m.name.clone());
        if !m.unknown.is_empty() {
            // Not an error: upstream's manifests may carry fields zot does not read.
            let what = crate::nearest::unknown_fields(&m.unknown, &crate::manifest::FIELDS);
            f.warning("unknown_field", format!("{MANIFEST_FILE} has fields zot does not read: {what}"), "fix the field's name; the fields zot reads: see docs/protocol.md §1 (Manifest)");
        }
        if !m.enabled {
            f.info("disabled", "the manifest says \"enabled\": false: zot installs it but does not load it", "set \"enabled\": true (zot ext enable NAME)");
        }
        // As the host starts it: exec, then env, then the process.
        match m.resolve_exec() {
            Err(e) => f.error("exec", e.to_string(), exec_hint(&m)),
            Ok(exec) => match crate::envexpand::expand_from_env(m.env()) {
                // The host's own words: they name the entry and the
                // variable, never a value.
                Err(e) => f.error("env", e.to_string(), env_hint(&e)),
                Ok(env) => {
                    let sandbox = Sandbox::new()?;
                    let mut s = Session::new(&m, d, &mut f);
                    s.run(&exec, &env, &sandbox, &mut timings, &mut calls);
                }
            },
        }
    }
    f.finish();
    timings.total_ms = ms(started.elapsed());
    let count = |s: Severity| f.list.iter().filter(|x| x.severity == s).count();
    let (errors, warnings, infos) = (count(Severity::Error), count(Severity::Warning), count(Severity::Info));
    Ok(Report { extension: name, dir: shown_dir, ok: errors == 0, errors, warnings, infos, timings, calls, findings: f.list })
}

fn manifest_hint(dir: &Path) -> String {
    if !dir.join(MANIFEST_FILE).exists() {
        return format!("point at a folder holding {MANIFEST_FILE}, or create one with 'zot ext new NAME'");
    }
    "extension.json must be a JSON object with a string name ([A-Za-z0-9._-], at most 64 bytes) and a string exec".into()
}

/// The fix for a manifest that failed: the field at fault and what it
/// accepts.
fn manifest_fix(e: &crate::manifest::ManifestError, dir: &Path) -> String {
    use crate::manifest::ManifestError as E;
    let field = match e {
        E::Field { field, .. } => *field,
        E::Name { .. } => "name",
        E::Confine { .. } => "confine",
        E::Parse { msg, .. } if msg.contains("exec, theme, or skills") => {
            return "add \"exec\" (the program to run: ./run.sh relative to this folder, or a command on PATH such as python3), or \"skills\" or a theme.json for a static extension".into();
        }
        _ => return manifest_hint(dir),
    };
    let accepts = match field {
        "name" => "a string of letters, digits, '.', '_' and '-', at most 64 bytes, not . or ..",
        "exec" => "a string: the program to run, ./run.sh relative to this folder or a command on PATH such as python3",
        "args" => "an array of strings",
        "enabled" => "true or false",
        "restart" => "one of \"never\", \"on-failure\", \"always\"",
        "skills" => "an array of paths inside this folder (folders holding a SKILL.md, or SKILL.md files)",
        "env" => "an object of string values (${VAR} and ${VAR:-default} are expanded)",
        "confine" => "an object of read, write, deny, net, unix, limits, call, watch, env, prompt, namespaces, required (docs/trust-and-confinement.md)",
        _ => "a string",
    };
    format!("fix \"{field}\" in {MANIFEST_FILE}: it takes {accepts}")
}

fn env_hint(e: &ExpandError) -> String {
    match e {
        ExpandError::Unset { var, .. } => {
            format!("set {var} in the environment zot runs in, or give it a default: ${{{var}:-value}}")
        }
        ExpandError::Syntax { .. } => "write ${VAR} or ${VAR:-default} (a name of letters, digits and _), and $$ for a literal $".into(),
    }
}

fn exec_hint(m: &Manifest) -> String {
    if m.exec.contains('/') {
        format!("build it or fix the path (relative to {}), and chmod +x it", m.dir.display())
    } else {
        let how = match m.exec.as_str() {
            "tsx" => " (npm install -g tsx)",
            "node" => " (Node.js)",
            "python3" | "python" => " (Python 3)",
            "go" => " (the Go toolchain)",
            _ => "",
        };
        format!("install {}{how} so that it is on PATH, or set \"exec\" to the program's path relative to the manifest", m.exec)
    }
}
