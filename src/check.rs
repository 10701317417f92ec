//! `zot ext check <path> [--json] [--timeout SECS]`: runs one extension the
//! way the host would and reports what a user of it would trip over, one
//! finding per line with a severity (error, warning, info), a stable code
//! and a fix hint.
//!
//! The extension is driven directly over pipes, not through the
//! [`Host`](crate::host::Host), because the check must see raw lines and
//! their order: spawned in its own process group, cwd its manifest's
//! directory, `ZOT_HOME` a temporary directory (removed afterwards), stderr
//! to a file in it. The sequence:
//!
//! 1. the manifest ([`Manifest::load`], [`Manifest::resolve_exec`]);
//! 2. `hello` within 5 s, as the first frame;
//! 3. `hello_ack` held back for [`Deadlines::hold`] (200 ms) to see whether
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
//! missing or mistyped fields. Times are reported as the host would see
//! them: the 200 ms hold of `hello_ack` is not counted.
//!
//! Exit code: 0 when there is no error (warnings do not fail), 1 otherwise.

use crate::child::{group_alive, kill_group, MAX_LINE};
use crate::lines::{Line, LineBuf};
use crate::host::{fmt_duration, Limits};
use crate::manifest::{Manifest, MANIFEST_FILE};
use crate::protocol::{decode, CommandResponse, DecodeError, ExtFrame, HelloAck, HostFrame, Payload, PROTOCOL_VERSION};
use crate::text::one_line;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::thread;
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
to stderr. Deadlines: hello 5s, each call 5s, shutdown 2s.

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

/// How long the check waits for each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Spawn to `hello`.
    pub hello: Duration,
    /// How long `hello_ack` is held back to catch registrations sent
    /// before it.
    pub hold: Duration,
    /// Quiet time after the handshake that the host counts as ready.
    pub ready_idle: Duration,
    /// `hello_ack` to `ready` at most.
    pub ready_grace: Duration,
    /// Each command, tool and intercept.
    pub call: Duration,
    /// `shutdown` to exit.
    pub shutdown: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            hello: Duration::from_secs(5),
            hold: Duration::from_millis(200),
            ready_idle: Duration::from_millis(250),
            ready_grace: Duration::from_secs(3),
            call: Duration::from_secs(5),
            shutdown: Duration::from_secs(2),
        }
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One thing the check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// A stable identifier (`no_ready`, `schema_required`, ...).
    pub code: &'static str,
    pub message: String,
    /// How to fix it; empty when there is nothing to fix.
    pub hint: String,
}

/// Times, in milliseconds, as the host would see them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timings {
    pub hello_ms: Option<f64>,
    pub ready_ms: Option<f64>,
    /// `frame` (a `ready` frame) or `auto` (250 ms without frames).
    pub ready_by: Option<&'static str>,
    pub shutdown_ms: Option<f64>,
    pub total_ms: f64,
}

/// One call the check made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// `command`, `tool` or `intercept`.
    pub kind: &'static str,
    pub name: String,
    /// Time to the reply; `None` without one.
    pub ms: Option<f64>,
    /// Answered in time with a well-formed reply.
    pub ok: bool,
}

/// Everything the check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The manifest's name, when it could be read.
    pub extension: Option<String>,
    pub dir: String,
    pub ok: bool,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub timings: Timings,
    pub calls: Vec<Call>,
    pub findings: Vec<Finding>,
}

impl Report {
    /// The findings with `code`.
    pub fn with_code(&self, code: &str) -> Vec<&Finding> {
        self.findings.iter().filter(|f| f.code == code).collect()
    }
}

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
    let text = if opts.json {
        let mut s = serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    } else {
        render(&report)
    };
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if report.ok {
        0
    } else {
        1
    }
}

/// The text report: a header, one line per finding, the times, the verdict.
pub fn render(r: &Report) -> String {
    let mut s = match &r.extension {
        Some(n) => format!("zot ext check: {} ({})\n", one_line(n), one_line(&r.dir)),
        None => format!("zot ext check: {}\n", one_line(&r.dir)),
    };
    for f in &r.findings {
        let mut line = format!("{:<8}{:<20} {}", f.severity.as_str(), f.code, f.message);
        if !f.hint.is_empty() {
            let label = if f.severity == Severity::Info { "hint" } else { "fix" };
            line.push_str(&format!(" ({label}: {})", f.hint));
        }
        s.push_str(&one_line(&line));
        s.push('\n');
    }
    let ms = |v: Option<f64>| v.map_or("-".to_string(), fmt_ms);
    let t = &r.timings;
    if t.hello_ms.is_some() {
        let by = match t.ready_by {
            Some("frame") => " (ready frame)",
            Some(_) => " (auto-ready)",
            None => "",
        };
        s.push_str(&format!(
            "times:  hello {}, ready {}{by}, shutdown {}\n",
            ms(t.hello_ms),
            ms(t.ready_ms),
            ms(t.shutdown_ms)
        ));
    }
    if !r.calls.is_empty() {
        let calls: Vec<String> = r
            .calls
            .iter()
            .map(|c| {
                let what = match c.kind {
                    "command" => format!("/{}", c.name),
                    "intercept" => format!("intercept {}", c.name),
                    _ => c.name.clone(),
                };
                let res = if c.ok { ms(c.ms) } else { "FAILED".into() };
                format!("{what} {res}")
            })
            .collect();
        s.push_str(&one_line(&format!("calls:  {}", calls.join(", "))));
        s.push('\n');
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    s.push_str(&format!(
        "{}: {}, {}, {}\n",
        if r.ok { "ok" } else { "FAILED" },
        plural(r.errors, "error"),
        plural(r.warnings, "warning"),
        plural(r.infos, "info")
    ));
    s
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else if ms < 10.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{}ms", ms.round() as u64)
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
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
    let manifest = match Manifest::load(&dir) {
        Ok(m) => Some(m),
        Err(e) => {
            f.error("manifest", e.to_string(), manifest_hint(&dir));
            None
        }
    };
    let mut name = None;
    if let Some(m) = manifest {
        name = Some(m.name.clone());
        if !m.enabled {
            f.info("disabled", "the manifest says \"enabled\": false: zot installs it but does not load it", "set \"enabled\": true (zot ext enable NAME)");
        }
        match m.resolve_exec() {
            Err(e) => f.error("exec", e.to_string(), exec_hint(&m)),
            Ok(exec) => {
                let sandbox = Sandbox::new()?;
                let mut s = Session::new(&m, d, &mut f);
                s.run(&exec, &sandbox, &mut timings, &mut calls);
            }
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

fn exec_hint(m: &Manifest) -> String {
    if m.exec.contains('/') {
        format!("build it or fix the path (relative to {}), and chmod +x it", m.dir.display())
    } else {
        "install it, or use a path (./main.py) relative to the manifest".into()
    }
}

// ---------------------------------------------------------------------------
// Findings

/// Findings of a code past this many are counted, not listed.
const PER_CODE: usize = 5;

#[derive(Default)]
struct Findings {
    list: Vec<Finding>,
    seen: HashMap<&'static str, usize>,
}

impl Findings {
    fn add(&mut self, severity: Severity, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        let n = self.seen.entry(code).or_default();
        *n += 1;
        if *n <= PER_CODE {
            self.list.push(Finding { severity, code, message: message.into(), hint: hint.into() });
        }
    }
    fn error(&mut self, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        self.add(Severity::Error, code, message, hint);
    }
    fn warning(&mut self, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        self.add(Severity::Warning, code, message, hint);
    }
    fn info(&mut self, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        self.add(Severity::Info, code, message, hint);
    }
    /// Notes how many findings of each code were not listed.
    fn finish(&mut self) {
        let mut over: Vec<(&'static str, usize)> =
            self.seen.iter().filter(|(_, n)| **n > PER_CODE).map(|(c, n)| (*c, *n - PER_CODE)).collect();
        over.sort();
        for (code, n) in over {
            let sev = self.list.iter().find(|f| f.code == code).map_or(Severity::Info, |f| f.severity);
            self.list.push(Finding { severity: sev, code, message: format!("... and {n} more like this"), hint: String::new() });
        }
    }
}

// ---------------------------------------------------------------------------
// The sandbox and the child

/// A temporary `ZOT_HOME`, removed when dropped.
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new() -> Result<Sandbox, String> {
        let base = std::env::temp_dir();
        for n in 0..1000u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("zot-check-{}-{nanos}-{n}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(Sandbox { dir }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("cannot create a temporary directory in {}: {e}", base.display())),
            }
        }
        Err(format!("cannot create a temporary directory in {}", base.display()))
    }
    fn stderr_path(&self) -> PathBuf {
        self.dir.join("stderr.log")
    }
    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// What the reader and waiter threads report.
enum Ev {
    Line(Instant, Vec<u8>),
    /// A line over [`MAX_LINE`] bytes, discarded.
    TooLong(usize),
    Eof,
    Exited(Instant, ExitStatus),
}

/// Kills the process group when dropped, whatever happened.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        kill_group(self.0, libc::SIGKILL);
    }
}

fn spawn(m: &Manifest, exec: &Path, sandbox: &Sandbox) -> io::Result<(u32, ChildStdin, Receiver<Ev>)> {
    let home = sandbox.home();
    fs::create_dir_all(&home)?;
    let stderr = File::create(sandbox.stderr_path())?;
    let mut cmd = Command::new(exec);
    cmd.args(&m.args)
        .current_dir(&m.dir)
        .env("ZOT_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    parent_death_signal(&mut cmd);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let guard = Group(pid);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("child pipes missing"));
    };
    let (tx, rx) = unbounded();
    let rtx = tx.clone();
    thread::Builder::new().name("zot-check-r".into()).spawn(move || read_lines(stdout, &rtx))?;
    thread::Builder::new().name("zot-check-x".into()).spawn(move || {
        let status = loop {
            match child.wait() {
                Ok(s) => break s,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break ExitStatus::from_raw(0),
            }
        };
        let _ = tx.send(Ev::Exited(Instant::now(), status));
    })?;
    std::mem::forget(guard);
    Ok((pid, stdin, rx))
}

#[cfg(target_os = "linux")]
fn parent_death_signal(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn parent_death_signal(_cmd: &mut Command) {}

fn read_lines<R: Read>(input: R, tx: &Sender<Ev>) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut lines = LineBuf::new(MAX_LINE);
    while let Ok(Some(line)) = lines.next(&mut reader) {
        let ev = match line {
            Line::Text(l) => Ev::Line(Instant::now(), l.to_vec()),
            Line::TooLong(len) => Ev::TooLong(len),
        };
        if tx.send(ev).is_err() {
            return;
        }
    }
    let _ = tx.send(Ev::Eof);
}

// ---------------------------------------------------------------------------
// The session

/// What waiting produced.
enum Step {
    Frame(Box<ExtFrame>, Instant),
    Timeout,
    /// Stdout closed or the process exited.
    Gone,
    /// A malformed reply to a request in flight (already reported).
    Malformed,
}

/// How many calls may time out before the rest are skipped.
const MAX_TIMEOUTS: usize = 3;
/// Commands (and tools) invoked at most.
const MAX_CALLS: usize = 50;

/// Interceptable events and the harmless payload each is checked with.
fn intercept_payload(event: &str) -> Option<Payload> {
    let v = match event {
        "tool_call" => json!({"tool_id": "zot-check-1", "tool_name": "zot_check_noop", "tool_args": {}}),
        "turn_start" => json!({"step": 1}),
        "assistant_message" => json!({"text": "zot ext check: a harmless message"}),
        _ => return None,
    };
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

const KNOWN_EVENTS: [&str; 5] = ["session_start", "turn_start", "turn_end", "tool_call", "assistant_message"];
const ACTIONS: [&str; 5] = ["prompt", "insert", "display", "open_panel", "noop"];
const LEVELS: [&str; 4] = ["info", "success", "warn", "error"];

/// A reply the session is waiting for.
enum Reply {
    Frame(Box<ExtFrame>, Instant),
    /// A reply with this id that could not be decoded (already reported).
    Malformed,
}

struct Session<'a> {
    m: &'a Manifest,
    d: &'a Deadlines,
    f: &'a mut Findings,
    limits: Limits,
    start: Instant,
    rx: Option<Receiver<Ev>>,
    stdin: Option<ChildStdin>,
    pgid: u32,
    exited: Option<(Instant, ExitStatus)>,
    eof: bool,
    hello_at: Option<Instant>,
    ack_at: Option<Instant>,
    ready_at: Option<Instant>,
    /// The host would count it as ready now (frame or auto-ready).
    host_ready: bool,
    last_frame: Instant,
    commands: Vec<(String, String)>,
    tools: Vec<(String, String, Value)>,
    events: Vec<String>,
    intercepts: Vec<String>,
    /// Frame types sent after hello but before hello_ack.
    early: Vec<&'static str>,
    shutdown_sent: bool,
    shutdown_acked: bool,
    /// Ids asked and not yet answered, with the reply type expected.
    asked: HashMap<String, &'static str>,
    /// Ids given up on (timed out).
    late: HashSet<String>,
    replies: HashMap<String, Reply>,
    timeouts: usize,
    write_failed: bool,
}

impl<'a> Session<'a> {
    fn new(m: &'a Manifest, d: &'a Deadlines, f: &'a mut Findings) -> Session<'a> {
        let now = Instant::now();
        Session {
            m,
            d,
            f,
            limits: Limits::default(),
            start: now,
            rx: None,
            stdin: None,
            pgid: 0,
            exited: None,
            eof: false,
            hello_at: None,
            ack_at: None,
            ready_at: None,
            host_ready: false,
            last_frame: now,
            commands: Vec::new(),
            tools: Vec::new(),
            events: Vec::new(),
            intercepts: Vec::new(),
            early: Vec::new(),
            shutdown_sent: false,
            shutdown_acked: false,
            asked: HashMap::new(),
            late: HashSet::new(),
            replies: HashMap::new(),
            timeouts: 0,
            write_failed: false,
        }
    }

    fn run(&mut self, exec: &Path, sandbox: &Sandbox, timings: &mut Timings, calls: &mut Vec<Call>) {
        self.start = Instant::now();
        let (pgid, stdin, rx) = match spawn(self.m, exec, sandbox) {
            Ok(x) => x,
            Err(e) => {
                self.f.error("spawn", format!("cannot start {}: {e}", exec.display()), "check that exec is a program this system can run (a #! line, the right architecture)");
                return;
            }
        };
        let _group = Group(pgid);
        self.pgid = pgid;
        self.stdin = Some(stdin);
        self.rx = Some(rx);

        let greeted = self.handshake(timings);
        if greeted {
            self.check_registrations();
            self.calls(calls);
        }
        self.shutdown(timings, greeted);
        self.stderr(sandbox);
    }

    /// Time as the host would see it, in ms since spawn: the hold of
    /// `hello_ack` is left out of everything after it.
    fn host_ms(&self, at: Instant) -> f64 {
        match (self.hello_at, self.ack_at) {
            (Some(h), Some(a)) if at >= a => ms(h - self.start) + ms(at - a),
            _ => ms(at.saturating_duration_since(self.start)),
        }
    }

    // ----- low level ------------------------------------------------------

    fn send(&mut self, frame: &HostFrame) -> bool {
        let Some(stdin) = self.stdin.as_mut() else { return false };
        let bytes = crate::protocol::encode(frame);
        match stdin.write_all(&bytes).and_then(|()| stdin.flush()) {
            Ok(()) => true,
            Err(e) => {
                if !self.write_failed && self.exited.is_none() && !self.eof {
                    self.f.error("stdin_closed", format!("writing to its stdin failed: {e}"), "keep reading stdin until shutdown");
                }
                self.write_failed = true;
                self.stdin = None;
                false
            }
        }
    }

    fn gone(&self) -> bool {
        self.exited.is_some() || self.eof
    }

    /// Waits for the next frame until `deadline`; junk lines are reported
    /// and skipped on the way.
    fn next(&mut self, deadline: Instant) -> Step {
        loop {
            let Some(rx) = &self.rx else { return Step::Gone };
            let ev = match rx.recv_deadline(deadline) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => return Step::Timeout,
                Err(RecvTimeoutError::Disconnected) => {
                    self.eof = true;
                    self.rx = None;
                    return Step::Gone;
                }
            };
            match ev {
                Ev::Eof => {
                    self.eof = true;
                    return Step::Gone;
                }
                Ev::Exited(at, status) => {
                    self.exited = Some((at, status));
                    return Step::Gone;
                }
                Ev::TooLong(n) => self.f.error(
                    "line_too_long",
                    format!("a stdout line of {n} bytes (limit {MAX_LINE}); the host discards it whole"),
                    "send large data in smaller pieces",
                ),
                Ev::Line(at, line) => {
                    let pending = self.replies.len();
                    if let Some(frame) = self.classify(&line) {
                        self.last_frame = at;
                        return Step::Frame(Box::new(frame), at);
                    }
                    if self.replies.len() > pending {
                        return Step::Malformed;
                    }
                }
            }
        }
    }

    /// Decodes a line, reporting what is wrong with it.
    fn classify(&mut self, line: &[u8]) -> Option<ExtFrame> {
        match decode::<ExtFrame>(line) {
            Ok(frame) => {
                self.check_fields(line, &frame);
                Some(frame)
            }
            Err(DecodeError::BadFields { ty, id: Some(id), msg }) if is_reply(&ty) => {
                let expected = self.asked.remove(&id);
                self.f.error(
                    "bad_reply",
                    format!("malformed {ty} for request {id}: {msg}; the host fails that call"),
                    reply_hint(&ty),
                );
                if expected.is_some() {
                    self.replies.insert(id, Reply::Malformed);
                }
                None
            }
            Err(DecodeError::BadFields { ty, msg, .. }) => {
                self.f.error("bad_frame", format!("malformed {ty} frame: {msg}; the host skips it"), frame_hint(&ty));
                None
            }
            Err(DecodeError::UnknownType(ty)) => {
                self.f.warning(
                    "unknown_frame",
                    format!("a frame of unknown type {ty:?}; the host skips it"),
                    "see PROTOCOL.md 2.1 for the frames an extension may send",
                );
                None
            }
            Err(e) => {
                let what = if line.is_empty() { "an empty line".to_string() } else { format!("{e}: {}", crate::child::preview(line)) };
                self.f.warning(
                    "not_a_frame",
                    format!("stdout line is not a frame ({what}); the host skips it"),
                    "stdout is for protocol frames only: print logs to stderr",
                );
                None
            }
        }
    }

    /// Fields the decoder accepts leniently (display only) but that are
    /// missing or of the wrong type.
    fn check_fields(&mut self, line: &[u8], frame: &ExtFrame) {
        const STR: u8 = 0;
        const STRS: u8 = 1;
        let rules: &[(&str, u8, bool)] = match frame {
            ExtFrame::Hello { .. } => &[("name", STR, true), ("version", STR, false), ("capabilities", STRS, false)],
            ExtFrame::RegisterCommand { .. } | ExtFrame::RegisterTool { .. } => &[("description", STR, false)],
            ExtFrame::Subscribe { .. } => &[("events", STRS, false), ("intercept", STRS, false)],
            ExtFrame::Notify { .. } => &[("level", STR, true), ("message", STR, true)],
            ExtFrame::PanelRender { .. } => &[("title", STR, false), ("lines", STRS, false), ("footer", STR, false)],
            ExtFrame::EventInterceptResponse(_) => &[("reason", STR, false)],
            _ => &[],
        };
        if rules.is_empty() {
            return;
        }
        let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line.strip_suffix(b"\r").unwrap_or(line)) else {
            return;
        };
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("?").to_string();
        for (field, kind, required) in rules {
            let ok = match obj.get(*field) {
                None | Some(Value::Null) => {
                    if *required {
                        self.f.warning("missing_field", format!("{ty} has no {field:?}"), format!("add a string {field:?}"));
                    }
                    continue;
                }
                Some(Value::String(_)) => *kind == STR,
                Some(Value::Array(a)) => *kind == STRS && a.iter().all(Value::is_string),
                Some(_) => false,
            };
            if !ok {
                let want = if *kind == STR { "a string" } else { "an array of strings" };
                self.f.warning("mistyped_field", format!("{ty}.{field} is not {want}; the host ignores it"), format!("send {field:?} as {want}"));
            }
        }
        if let ExtFrame::Notify { level, .. } = frame {
            if !level.is_empty() && !LEVELS.contains(&level.as_str()) {
                self.f.warning("bad_level", format!("notify level {level:?} is not one of {}", LEVELS.join(", ")), "use info, success, warn or error");
            }
        }
    }

    /// Bookkeeping common to every frame.
    fn observe(&mut self, frame: Box<ExtFrame>, at: Instant) {
        let frame = *frame;
        let before_ack = self.ack_at.is_none();
        let registration = matches!(frame, ExtFrame::RegisterCommand { .. } | ExtFrame::RegisterTool { .. } | ExtFrame::Subscribe { .. });
        if registration && self.host_ready && self.ready_at.is_none_or(|r| r < at) {
            self.f.warning(
                "late_registration",
                format!("{} arrived after the host considered the extension ready ({} after hello_ack)", frame_type(&frame), fmt_ms(self.host_ms(at) - self.host_ms(self.ack_at.unwrap_or(at)))),
                "register everything before sending ready",
            );
        }
        if before_ack && self.hello_at.is_some() && !matches!(frame, ExtFrame::Hello { .. }) {
            let t = frame_type(&frame);
            if !self.early.contains(&t) {
                self.early.push(t);
            }
        }
        match frame {
            ExtFrame::Hello { .. } if self.hello_at.is_some() => {
                self.f.warning("second_hello", "sent hello twice; the host ignores the second", "send hello once, as the first frame");
            }
            ExtFrame::RegisterCommand { name, description } => match self.commands.iter_mut().find(|c| c.0 == name) {
                Some(c) => {
                    self.f.warning("duplicate_name", format!("command /{name} registered twice; the last one wins"), "register each command once");
                    c.1 = description;
                }
                None => self.commands.push((name, description)),
            },
            ExtFrame::RegisterTool { name, description, schema, .. } => match self.tools.iter_mut().find(|t| t.0 == name) {
                Some(t) => {
                    self.f.warning("duplicate_name", format!("tool {name} registered twice; the last one wins"), "register each tool once");
                    (t.1, t.2) = (description, schema);
                }
                None => self.tools.push((name, description, schema)),
            },
            ExtFrame::Subscribe { events, intercept } => {
                for e in events {
                    if !self.events.contains(&e) {
                        self.events.push(e);
                    }
                }
                for e in intercept {
                    if !self.intercepts.contains(&e) {
                        self.intercepts.push(e);
                    }
                }
            }
            ExtFrame::Ready => {
                if self.ready_at.is_some() {
                    self.f.info("second_ready", "sent ready more than once", "send ready once, after the initial registrations");
                } else {
                    self.ready_at = Some(at);
                    if self.host_ready {
                        self.f.warning(
                            "late_ready",
                            format!("ready came {} after hello_ack, after the host's 250ms auto-ready", fmt_ms(self.host_ms(at) - self.host_ms(self.ack_at.unwrap_or(at)))),
                            "send ready right after the initial registrations",
                        );
                    }
                }
            }
            ExtFrame::ShutdownAck => {
                if self.shutdown_sent {
                    self.shutdown_acked = true;
                } else {
                    self.f.warning("unasked_shutdown_ack", "sent shutdown_ack without being asked", "send shutdown_ack only in reply to shutdown");
                }
            }
            ExtFrame::CommandResponse(CommandResponse { ref id, .. })
            | ExtFrame::ToolResult(crate::protocol::ToolResult { ref id, .. })
            | ExtFrame::EventInterceptResponse(crate::protocol::InterceptResponse { ref id, .. }) => {
                let id = id.clone();
                let ty = frame_type(&frame);
                match self.asked.remove(&id) {
                    Some(_) => {
                        self.replies.insert(id, Reply::Frame(Box::new(frame), at));
                    }
                    None if self.late.remove(&id) => self.f.warning(
                        "late_reply",
                        format!("{ty} for request {id} came after its deadline; the host had given up on it"),
                        "answer within the host's timeouts (command 30s, tool 60s, intercept 5s)",
                    ),
                    None => self.f.error(
                        "stray_reply",
                        format!("{ty} with id {id:?}, which no request in flight has"),
                        "copy the id of the request into its reply, and answer each request once",
                    ),
                }
            }
            _ => {}
        }
    }

    // ----- phases ---------------------------------------------------------

    /// Hello, hello_ack, ready. False when the extension is gone or
    /// failed the handshake.
    fn handshake(&mut self, timings: &mut Timings) -> bool {
        let deadline = self.start + self.d.hello;
        loop {
            match self.next(deadline) {
                Step::Malformed => {}
                Step::Timeout => {
                    self.f.error("no_hello", format!("no hello within {}; the host gives up on it", fmt_duration(self.d.hello)), "send {\"type\":\"hello\",\"name\":...,\"version\":...} first, right at start-up, and flush stdout");
                    return false;
                }
                Step::Gone => {
                    self.report_gone("before hello");
                    return false;
                }
                Step::Frame(frame, at) if matches!(*frame, ExtFrame::Hello { .. }) => {
                    let ExtFrame::Hello { name, .. } = *frame else { continue };
                    self.hello_at = Some(at);
                    timings.hello_ms = Some(ms(at - self.start));
                    if name != self.m.name && !name.is_empty() {
                        self.f.warning("hello_name", format!("hello names {name:?} but the manifest says {:?}; the host uses the manifest's", self.m.name), "use the same name in both");
                    }
                    if at - self.start > Duration::from_secs(1) {
                        self.f.warning("slow_hello", format!("hello took {} (the host waits {})", fmt_ms(ms(at - self.start)), fmt_duration(self.d.hello)), "send hello before any slow set-up work");
                    }
                    break;
                }
                Step::Frame(other, _) => {
                    self.f.error("hello_not_first", format!("the first frame is {:?}, not hello; the host refuses to load it", frame_type(&other)), "send hello before anything else");
                    return false;
                }
            }
        }
        // Hold hello_ack back: what arrives meanwhile was sent before it.
        let hold_until = Instant::now() + self.d.hold;
        loop {
            match self.next(hold_until) {
                Step::Malformed => {}
                Step::Timeout => break,
                Step::Gone => {
                    self.report_gone("right after hello");
                    return false;
                }
                Step::Frame(frame, at) => self.observe(frame, at),
            }
        }
        let dir = self.m.dir.display().to_string();
        let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_else(|_| dir.clone());
        let ack = HostFrame::HelloAck(HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zot_version: env!("CARGO_PKG_VERSION").to_string(),
            provider: String::new(),
            model: String::new(),
            cwd,
            extension_dir: dir.clone(),
            data_dir: dir,
            capabilities: vec!["call_tool".into()],
        });
        self.send(&ack);
        let ack_at = Instant::now();
        self.ack_at = Some(ack_at);
        if !self.early.is_empty() {
            let types: Vec<&str> = self.early.clone();
            self.f.info(
                "early_registration",
                format!("sent {} before hello_ack (the legacy order; zot accepts it)", types.join(", ")),
                "newer SDKs wait for hello_ack, then register, then send ready",
            );
        }
        if let Some(r) = self.ready_at {
            self.host_ready = true;
            timings.ready_ms = Some(self.host_ms(r));
            timings.ready_by = Some("frame");
            return true;
        }
        // As the host does: ready on the frame, or after a quiet spell.
        let grace = ack_at + self.d.ready_grace;
        let mut last = ack_at;
        loop {
            let idle = last + self.d.ready_idle;
            match self.next(idle.min(grace)) {
                Step::Malformed => {}
                Step::Timeout if Instant::now() >= idle => {
                    self.host_ready = true;
                    timings.ready_ms = Some(self.host_ms(idle));
                    timings.ready_by = Some("auto");
                    self.f.warning(
                        "auto_ready",
                        format!("no ready frame: the host counted it ready after {} without frames", fmt_duration(self.d.ready_idle)),
                        "send {\"type\":\"ready\"} after the initial registrations",
                    );
                    return true;
                }
                Step::Timeout => {
                    self.host_ready = true;
                    self.f.error(
                        "no_ready",
                        format!("still not ready {} after hello_ack (frames kept coming, none of them ready)", fmt_duration(self.d.ready_grace)),
                        "send {\"type\":\"ready\"} after the initial registrations",
                    );
                    return true;
                }
                Step::Gone => {
                    self.report_gone("before ready");
                    return false;
                }
                Step::Frame(frame, at) => {
                    last = at;
                    let is_ready = *frame == ExtFrame::Ready && self.ready_at.is_none();
                    self.observe(frame, at);
                    if is_ready {
                        self.host_ready = true;
                        timings.ready_ms = Some(self.host_ms(at));
                        timings.ready_by = Some("frame");
                        if at - ack_at > Duration::from_secs(1) {
                            self.f.warning("slow_ready", format!("ready came {} after hello_ack (the host waits {} for all extensions together)", fmt_ms(ms(at - ack_at)), fmt_duration(self.d.ready_grace)), "register first, do slow set-up work after ready");
                        }
                        return true;
                    }
                }
            }
        }
    }

    fn check_registrations(&mut self) {
        let lim = self.limits;
        if self.commands.is_empty() && self.tools.is_empty() && self.events.is_empty() && self.intercepts.is_empty() {
            self.f.warning("nothing_registered", "registered no command, tool or subscription before ready", "send register_command / register_tool / subscribe before ready");
        }
        if self.commands.len() > lim.commands {
            self.f.error("too_many", format!("{} commands; the host takes the first {}", self.commands.len(), lim.commands), "register fewer commands");
        }
        if self.tools.len() > lim.tools {
            self.f.error("too_many", format!("{} tools; the host takes the first {}", self.tools.len(), lim.tools), "register fewer tools");
        }
        let commands = self.commands.clone();
        for (name, description) in &commands {
            if name.is_empty() {
                self.f.error("bad_name", "a command with an empty name; the host refuses it", "give every command a name");
                continue;
            }
            if name.len() > lim.name_bytes {
                self.f.error("bad_name", format!("command name of {} bytes; the host refuses names over {}", name.len(), lim.name_bytes), "use a shorter name");
            }
            if name.starts_with('/') || name.chars().any(char::is_whitespace) {
                self.f.warning("bad_name", format!("command name {name:?} has a '/' prefix or whitespace; users cannot type it"), "register the bare word: \"note\", not \"/note\"");
            }
            if description.trim().is_empty() {
                self.f.info("no_description", format!("command /{name} has no description"), "describe it: /help shows the description");
            }
        }
        let tools = self.tools.clone();
        for (name, description, schema) in &tools {
            if name.is_empty() {
                self.f.error("bad_name", "a tool with an empty name; the host refuses it", "give every tool a name");
                continue;
            }
            if name.len() > lim.name_bytes {
                self.f.error("bad_name", format!("tool name of {} bytes; the host refuses names over {}", name.len(), lim.name_bytes), "use a shorter name");
            } else if name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                self.f.warning("tool_name", format!("tool name {name:?}: model APIs accept only [A-Za-z0-9_-], at most 64 characters"), "rename it, e.g. with underscores");
            }
            if description.trim().is_empty() {
                self.f.warning("no_description", format!("tool {name} has no description; the model decides when to call it from that"), "describe what it does and when to use it");
            }
            for (sev, code, msg, hint) in schema_findings(schema) {
                self.f.add(sev, code, format!("tool {name}: {msg}"), hint);
            }
            let size = serde_json::to_vec(schema).map_or(0, |v| v.len());
            if size > lim.schema_bytes {
                self.f.error("schema_too_big", format!("tool {name}: a schema of {size} bytes; the host refuses over {}", lim.schema_bytes), "simplify the schema");
            }
        }
        for e in self.intercepts.clone() {
            if intercept_payload(&e).is_none() {
                self.f.warning("bad_intercept", format!("subscribes to intercept {e:?}, which cannot be intercepted; the host ignores it"), "intercept only tool_call, turn_start or assistant_message");
            }
        }
        for e in self.events.clone() {
            if !KNOWN_EVENTS.contains(&e.as_str()) {
                self.f.info("unknown_event", format!("subscribes to event {e:?}, which zot does not send itself (an agent may)"), "known events: session_start, turn_start, turn_end, tool_call, assistant_message");
            }
        }
    }

    fn calls(&mut self, calls: &mut Vec<Call>) {
        let mut n = 0u32;
        let mut id = || {
            n += 1;
            format!("zot-check-{n}")
        };
        let commands: Vec<String> = self.commands.iter().map(|c| c.0.clone()).filter(|c| !c.is_empty()).collect();
        let tools: Vec<String> = self.tools.iter().filter(|t| t.2.is_object() && !t.0.is_empty()).map(|t| t.0.clone()).collect();
        for (kind, list) in [("command", &commands), ("tool", &tools)] {
            if list.len() > MAX_CALLS {
                self.f.info("not_all_called", format!("{} {kind}s registered; only the first {MAX_CALLS} were called", list.len()), "");
            }
        }
        let intercepts: Vec<(String, Payload)> =
            self.intercepts.iter().filter_map(|e| intercept_payload(e).map(|p| (e.clone(), p))).collect();
        let mut plan: Vec<(&'static str, String, HostFrame)> = Vec::new();
        for name in commands.into_iter().take(MAX_CALLS) {
            plan.push(("command", name.clone(), HostFrame::CommandInvoked { id: id(), name, args: String::new() }));
        }
        for name in tools.into_iter().take(MAX_CALLS) {
            plan.push(("tool", name.clone(), HostFrame::ToolCall { id: id(), name, args: Value::Object(Map::new()), operation_key: None, reconcile: None }));
        }
        for (event, payload) in intercepts {
            plan.push(("intercept", event.clone(), HostFrame::EventIntercept { id: id(), event, payload }));
        }
        for (kind, name, frame) in plan {
            if self.gone() || self.timeouts >= MAX_TIMEOUTS {
                if !self.gone() {
                    self.f.info("not_all_called", format!("skipped {kind} {name}: {MAX_TIMEOUTS} calls timed out already"), "");
                }
                continue;
            }
            let call = self.call(kind, &name, &frame);
            calls.push(call);
        }
    }

    fn call(&mut self, kind: &'static str, name: &str, frame: &HostFrame) -> Call {
        let (id, expected, shown) = match frame {
            HostFrame::CommandInvoked { id, .. } => (id.clone(), "command_response", format!("/{name}")),
            HostFrame::ToolCall { id, .. } => (id.clone(), "tool_result", format!("tool {name}")),
            HostFrame::EventIntercept { id, .. } => (id.clone(), "event_intercept_response", format!("intercept {name}")),
            _ => (String::new(), "", name.to_string()),
        };
        let mut result = Call { kind, name: name.to_string(), ms: None, ok: false };
        self.asked.insert(id.clone(), expected);
        let sent_at = Instant::now();
        if !self.send(frame) {
            self.asked.remove(&id);
            return result;
        }
        let deadline = sent_at + self.d.call;
        loop {
            if let Some(reply) = self.replies.remove(&id) {
                let Reply::Frame(reply, at) = reply else { return result };
                result.ms = Some(ms(at - sent_at));
                result.ok = self.judge(&shown, expected, reply);
                return result;
            }
            match self.next(deadline) {
                Step::Malformed => {}
                Step::Timeout => {
                    self.asked.remove(&id);
                    self.late.insert(id);
                    self.timeouts += 1;
                    self.f.error("no_reply", format!("{shown}: no {expected} within {}", fmt_duration(self.d.call)), format!("answer every {} with {} {expected} carrying its id", frame_type_host(frame), if expected.starts_with('e') { "an" } else { "a" }));
                    return result;
                }
                Step::Gone => {
                    self.report_gone(&format!("while answering {shown}"));
                    return result;
                }
                Step::Frame(f, at) => self.observe(f, at),
            }
        }
    }

    /// Whether a reply is the right kind and well formed; reports what is not.
    fn judge(&mut self, shown: &str, expected: &str, reply: Box<ExtFrame>) -> bool {
        let reply = *reply;
        let got = frame_type(&reply);
        if got != expected {
            self.f.error("wrong_reply", format!("{shown} was answered with {got}, not {expected}"), format!("answer with a {expected}"));
            return false;
        }
        match reply {
            ExtFrame::CommandResponse(r) => {
                if let Some(e) = r.error.as_deref().filter(|e| !e.is_empty()) {
                    self.f.info("command_error", format!("{shown} with no arguments answered with the error {e:?}"), "fine if it needs arguments; otherwise see its log");
                    return true;
                }
                let field = match r.action.as_str() {
                    "" | "noop" => return true,
                    "prompt" => r.prompt.is_some(),
                    "insert" => r.insert.is_some(),
                    "display" => r.display.is_some(),
                    "open_panel" => r.open_panel.is_some(),
                    other => {
                        self.f.warning("bad_action", format!("{shown} answered with action {other:?}, which is not one of {}", ACTIONS.join(", ")), "use one of the protocol's actions");
                        return true;
                    }
                };
                if !field {
                    let a = r.action.as_str();
                    self.f.warning("bad_action", format!("{shown} answered action {a:?} without a {a:?} field"), format!("send {{\"action\":\"{a}\",\"{a}\":...}}"));
                }
                true
            }
            ExtFrame::ToolResult(r) => {
                if r.content.is_empty() {
                    self.f.warning("bad_content", format!("{shown} returned no content blocks"), "return at least one {\"type\":\"text\",\"text\":...} block");
                }
                for b in &r.content {
                    if let Some(why) = block_problem(b) {
                        self.f.warning("bad_content", format!("{shown}: content block {}: {why}", crate::child::preview(b.to_string().as_bytes())), "blocks are {\"type\":\"text\",\"text\":...} or {\"type\":\"image\",\"mime_type\":...,\"data\":<base64>}");
                    }
                }
                if r.is_error {
                    self.f.info("tool_error", format!("{shown} with {{}} answered is_error: true"), "fine if it needs arguments");
                }
                true
            }
            ExtFrame::EventInterceptResponse(r) => {
                if r.modified_args.as_ref().is_some_and(|v| !v.is_object()) {
                    self.f.warning("bad_intercept_reply", format!("{shown}: modified_args is not an object; the host ignores it"), "send modified_args as a JSON object, or leave it out");
                }
                if r.block {
                    let why = if r.reason.is_empty() { String::new() } else { format!(" ({})", r.reason) };
                    self.f.info("blocked", format!("{shown} blocked a harmless payload{why}"), "fine if intended; a block stops the user's action");
                }
                true
            }
            _ => true,
        }
    }

    /// Stops the extension: gracefully (`shutdown`, stdin closed) after a
    /// handshake, at once (SIGKILL, as the host does) after a failed one.
    fn shutdown(&mut self, timings: &mut Timings, graceful: bool) {
        if self.exited.is_some() {
            return self.leftovers();
        }
        if !graceful {
            self.stdin = None;
            return self.stop_hard(&[libc::SIGKILL]);
        }
        if !self.eof {
            self.shutdown_sent = true;
            self.send(&HostFrame::Shutdown);
        }
        self.stdin = None;
        let sent = Instant::now();
        let deadline = sent + self.d.shutdown;
        while self.exited.is_none() && self.rx.is_some() {
            match self.next(deadline) {
                Step::Malformed => {}
                Step::Frame(f, at) => self.observe(f, at),
                Step::Gone => {}
                Step::Timeout => {
                    self.f.error(
                        "shutdown_timeout",
                        format!("still running {} after shutdown; the host would SIGTERM its group", fmt_duration(self.d.shutdown)),
                        "on shutdown (or end of stdin), reply shutdown_ack and exit",
                    );
                    return self.stop_hard(&[libc::SIGTERM, libc::SIGKILL]);
                }
            }
        }
        // The exit and the last stdout lines come from different threads:
        // read what stdout still holds (its end, or a short while if a
        // leftover process keeps it open).
        let drain = Instant::now() + Duration::from_millis(500);
        while self.exited.is_some() && !self.eof && self.rx.is_some() {
            match self.next(drain) {
                Step::Frame(f, at) => self.observe(f, at),
                Step::Malformed => {}
                Step::Gone | Step::Timeout => break,
            }
        }
        let Some((at, status)) = self.exited else { return };
        if self.shutdown_sent {
            timings.shutdown_ms = Some(ms(at - sent));
            if !self.shutdown_acked {
                self.f.warning("no_shutdown_ack", "exited without a shutdown_ack", "reply {\"type\":\"shutdown_ack\"} before exiting");
            }
            if !status.success() {
                self.f.warning(
                    "exit_status",
                    format!("exited with {} after shutdown", crate::child::describe_status(status)),
                    "exit 0 after shutdown",
                );
            }
        }
        self.leftovers();
    }

    /// Sends each signal to the group in turn, waiting up to a second for
    /// the exit status after each.
    fn stop_hard(&mut self, signals: &[i32]) {
        for sig in signals {
            kill_group(self.pgid, *sig);
            let deadline = Instant::now() + Duration::from_secs(1);
            while self.exited.is_none() && self.rx.is_some() {
                if let Step::Timeout = self.next(deadline) {
                    break;
                }
            }
            if self.exited.is_some() {
                return;
            }
        }
    }

    /// After stdout closed: waits for the exit status until `deadline`.
    fn drain_exit(&mut self, deadline: Instant) {
        while self.exited.is_none() && self.rx.is_some() {
            if let Step::Timeout = self.next(deadline) {
                return;
            }
        }
    }

    /// Processes of its group still alive once the leader is gone.
    fn leftovers(&mut self) {
        if self.pgid == 0 || self.exited.is_none() {
            return;
        }
        let deadline = Instant::now() + Duration::from_millis(300);
        while group_running(self.pgid) {
            if Instant::now() >= deadline {
                let who = group_members(self.pgid);
                let who = if who.is_empty() { String::new() } else { format!(": {}", who.join(", ")) };
                self.f.error(
                    "leftover_processes",
                    format!("processes of its group were still running after it exited{who}; the host kills them"),
                    "wait for (or stop) the processes it started before exiting",
                );
                kill_group(self.pgid, libc::SIGKILL);
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn report_gone(&mut self, when: &str) {
        if self.exited.is_none() {
            // Stdout closed: the exit status usually follows at once.
            let deadline = Instant::now() + Duration::from_millis(500);
            self.drain_exit(deadline);
        }
        let how = match self.exited {
            Some((_, s)) => crate::child::describe_status(s),
            None => "its stdout closed".into(),
        };
        self.f.error("exited", format!("exited {when} ({how})"), "see the stderr lines below, or run it by hand");
    }

    fn stderr(&mut self, sandbox: &Sandbox) {
        let Ok(bytes) = fs::read(sandbox.stderr_path()) else { return };
        if bytes.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.is_empty() {
            return;
        }
        let first: Vec<String> = lines.iter().take(3).map(|l| crate::child::preview(l.as_bytes())).collect();
        let more = if lines.len() > 3 { format!(" (+{} more)", lines.len() - 3) } else { String::new() };
        self.f.info(
            "stderr",
            format!("wrote {} line(s) to stderr, zot keeps them in its log: {}{more}", lines.len(), first.join(" | ")),
            "",
        );
    }
}

fn is_reply(ty: &str) -> bool {
    matches!(ty, "command_response" | "tool_result" | "event_intercept_response")
}

fn reply_hint(ty: &str) -> String {
    match ty {
        "command_response" => "{\"type\":\"command_response\",\"id\":<the request's id>,\"action\":\"display\",\"display\":\"...\"}".into(),
        "tool_result" => "{\"type\":\"tool_result\",\"id\":<the request's id>,\"content\":[{\"type\":\"text\",\"text\":\"...\"}],\"is_error\":false}".into(),
        _ => "{\"type\":\"event_intercept_response\",\"id\":<the request's id>,\"block\":false}".into(),
    }
}

fn frame_hint(ty: &str) -> String {
    match ty {
        "register_command" => "{\"type\":\"register_command\",\"name\":\"...\",\"description\":\"...\"}".into(),
        "register_tool" => "{\"type\":\"register_tool\",\"name\":\"...\",\"description\":\"...\",\"schema\":{\"type\":\"object\",\"properties\":{}}}".into(),
        "open_panel" => "{\"type\":\"open_panel\",\"panel\":{\"id\":\"...\",\"title\":\"...\",\"lines\":[...]}}".into(),
        "submit" => "{\"type\":\"submit\",\"text\":\"...\"}".into(),
        _ => "see PROTOCOL.md 2.1 for the frame's fields".into(),
    }
}

/// The `type` of an extension frame.
fn frame_type(f: &ExtFrame) -> &'static str {
    f.kind()
}

fn frame_type_host(f: &HostFrame) -> &'static str {
    match f {
        HostFrame::CommandInvoked { .. } => "command_invoked",
        HostFrame::ToolCall { .. } => "tool_call",
        HostFrame::EventIntercept { .. } => "event_intercept",
        _ => "request",
    }
}

fn block_problem(b: &Value) -> Option<&'static str> {
    let Value::Object(o) = b else { return Some("not an object") };
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    match s("type") {
        Some("text") if s("text").is_some() => None,
        Some("text") => Some("a text block without a string \"text\""),
        Some("image") if s("mime_type").is_some() && s("data").is_some() => None,
        Some("image") => Some("an image block needs string \"mime_type\" and \"data\""),
        Some(_) => Some("type is neither \"text\" nor \"image\""),
        None => Some("no string \"type\""),
    }
}

// ---------------------------------------------------------------------------
// Tool schemas

const SCHEMA_TYPES: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];

type SchemaFinding = (Severity, &'static str, String, String);

/// What is wrong with a tool's schema, as JSON Schema and as tool
/// arguments.
fn schema_findings(schema: &Value) -> Vec<SchemaFinding> {
    let mut out = Vec::new();
    let Value::Object(obj) = schema else {
        let what = match schema {
            Value::Null => "missing".to_string(),
            other => format!("a {}, not a JSON object", kind(other)),
        };
        out.push((
            Severity::Error,
            "schema_not_object",
            format!("the schema is {what}; the host refuses the tool"),
            "send \"schema\":{\"type\":\"object\",\"properties\":{...}}".to_string(),
        ));
        return out;
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None => out.push((
            Severity::Warning,
            "schema_not_object_type",
            "the schema has no \"type\":\"object\"; model APIs expect tool arguments to be an object".into(),
            "add \"type\":\"object\" at the top of the schema".into(),
        )),
        Some(Value::String(t)) if SCHEMA_TYPES.contains(&t.as_str()) => out.push((
            Severity::Warning,
            "schema_not_object_type",
            format!("the schema's type is {t:?}; tool arguments are always an object"),
            "use \"type\":\"object\" with properties".into(),
        )),
        Some(_) => {}
    }
    walk(schema, "schema", 0, &mut out);
    out
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(v: &Value, path: &str, depth: usize, out: &mut Vec<SchemaFinding>) {
    if depth > 32 {
        return;
    }
    let Value::Object(obj) = v else {
        if !v.is_boolean() {
            out.push((Severity::Error, "schema_invalid", format!("{path} is a {}, not a schema object", kind(v)), "every subschema is a JSON object (or true/false)".into()));
        }
        return;
    };
    if let Some(t) = obj.get("type") {
        let ok = match t {
            Value::String(s) => SCHEMA_TYPES.contains(&s.as_str()),
            Value::Array(a) => !a.is_empty() && a.iter().all(|x| x.as_str().is_some_and(|s| SCHEMA_TYPES.contains(&s))),
            _ => false,
        };
        if !ok {
            out.push((
                Severity::Error,
                "schema_type",
                format!("{path}.type is {t}, which is not a JSON Schema type"),
                format!("use one of {}", SCHEMA_TYPES.join(", ")),
            ));
        }
    }
    let props = match obj.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(other) => {
            out.push((Severity::Error, "schema_properties", format!("{path}.properties is a {}, not an object", kind(other)), "\"properties\":{\"name\":{\"type\":\"string\"}}".into()));
            None
        }
    };
    if let Some(p) = props {
        for (k, sub) in p {
            walk(sub, &format!("{path}.properties.{k}"), depth + 1, out);
        }
    }
    match obj.get("required") {
        None => {}
        Some(Value::Array(items)) => {
            for item in items {
                match item.as_str() {
                    None => out.push((Severity::Error, "schema_required", format!("{path}.required holds {item}, not a property name"), "list property names as strings".into())),
                    Some(name) if !props.is_some_and(|p| p.contains_key(name)) => out.push((
                        Severity::Error,
                        "schema_required",
                        format!("{path}.required names {name:?}, which is not in its properties"),
                        format!("add {name:?} to properties, or remove it from required"),
                    )),
                    Some(_) => {}
                }
            }
        }
        Some(other) => out.push((Severity::Error, "schema_required", format!("{path}.required is a {}, not an array of names", kind(other)), "\"required\":[\"name\"]".into())),
    }
    match obj.get("items") {
        Some(Value::Array(items)) => {
            for (i, sub) in items.iter().enumerate() {
                walk(sub, &format!("{path}.items[{i}]"), depth + 1, out);
            }
        }
        Some(sub) => walk(sub, &format!("{path}.items"), depth + 1, out),
        None => {}
    }
    if let Some(sub @ Value::Object(_)) = obj.get("additionalProperties") {
        walk(sub, &format!("{path}.additionalProperties"), depth + 1, out);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        match obj.get(key) {
            Some(Value::Array(items)) => {
                for (i, sub) in items.iter().enumerate() {
                    walk(sub, &format!("{path}.{key}[{i}]"), depth + 1, out);
                }
            }
            Some(other) => out.push((Severity::Error, "schema_invalid", format!("{path}.{key} is a {}, not an array", kind(other)), format!("\"{key}\":[{{...}}, ...]"))),
            None => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Process groups

/// Some process of group `pgid` has not exited (zombies do not count where
/// `/proc` tells them apart).
fn group_running(pgid: u32) -> bool {
    group_alive(pgid) && (!Path::new("/proc/self").exists() || !group_members(pgid).is_empty())
}

/// `pid (comm)` of the live processes in group `pgid`, from `/proc` (empty
/// where there is no `/proc`).
fn group_members(pgid: u32) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().filter(|s| s.bytes().all(|b| b.is_ascii_digit())) else { continue };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = &stat[open + 1..close];
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // A zombie has exited; only its reaping is late (an init that does
        // not reap orphans).
        if rest.first() == Some(&"Z") {
            continue;
        }
        if rest.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            out.push(format!("{pid} ({})", one_line(comm)));
        }
        if out.len() >= 5 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(schema: Value) -> Vec<&'static str> {
        schema_findings(&schema).into_iter().map(|f| f.1).collect()
    }

    #[test]
    fn schemas() {
        assert!(codes(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})).is_empty());
        assert_eq!(codes(json!("x")), ["schema_not_object"]);
        assert_eq!(codes(Value::Null), ["schema_not_object"]);
        assert_eq!(codes(json!({"type": "object", "properties": {}, "required": ["a"]})), ["schema_required"]);
        assert_eq!(codes(json!({"type": "object", "properties": {"a": {"type": "text"}}})), ["schema_type"]);
        assert_eq!(codes(json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}})), Vec::<&str>::new());
        assert_eq!(codes(json!({"properties": {}})), ["schema_not_object_type"]);
        assert_eq!(codes(json!({"type": "object", "properties": [1]})), ["schema_properties"]);
        assert_eq!(
            codes(json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "str"}}}})),
            ["schema_type"]
        );
    }

    #[test]
    fn blocks() {
        assert_eq!(block_problem(&json!({"type": "text", "text": "x"})), None);
        assert!(block_problem(&json!({"type": "text"})).is_some());
        assert!(block_problem(&json!({"type": "image", "data": "x"})).is_some());
        assert!(block_problem(&json!("x")).is_some());
    }
}
