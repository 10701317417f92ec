//! One check session, on a thread of its own that outlives the extension's
//! process: the state of the extension as the check drives it (the
//! handshake, then the stop), its output read past its exit as the host
//! reads it (to stdout's end, or [`EXIT_WAIT`] more); what it sends is
//! judged in [`frames`], what it is asked in [`calls`]; the state all
//! three share is in [`state`], below them.

mod calls;
mod frames;
mod state;

pub(super) use state::Session;
use state::Step;
use super::run::{group_members, group_running, spawn, Ev, Proc, Sandbox};
use super::findings::Findings;
use super::outcome::{fmt_ms, ms, Call, Deadlines, Timings};
use crate::child::MAX_LINE;
use crate::host::{fmt_duration, Limits};
use crate::manifest::Manifest;
use crate::protocol::{ExtFrame, HelloAck, HostFrame, PROTOCOL_VERSION};
use crossbeam_channel::RecvTimeoutError;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

/// How long the output is read past the exit when stdout does not end
/// with it (a grandchild holds it open). Longer than the host's
/// [`EXIT_GRACE`](crate::child::EXIT_GRACE): a report must not misjudge
/// what an extension wrote before its exit because the machine was busy
/// when it was read; only an extension whose grandchild keeps stdout open
/// pays for it, once.
const EXIT_WAIT: Duration = Duration::from_secs(2);

impl<'a> Session<'a> {
    pub(super) fn new(m: &'a Manifest, d: &'a Deadlines, f: &'a mut Findings) -> Session<'a> {
        let now = Instant::now();
        Session {
            m,
            d,
            f,
            limits: Limits::default(),
            start: now,
            proc: None,
            exited: None,
            eof: false,
            exit_grace: None,
            output_over: false,
            gone_reported: false,
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
            caps: Vec::new(),
            interactive: HashSet::new(),
            refused: HashSet::new(),
            shutdown_sent: false,
            shutdown_acked: false,
            asked: HashMap::new(),
            late: HashSet::new(),
            replies: HashMap::new(),
            timeouts: 0,
            write_failed: false,
        }
    }

    /// Runs the whole check of the process on a thread of its own, marked
    /// as one that starts extensions: the parent-death signal is tied to
    /// the thread that starts the process, and this one ends it (SIGKILL to
    /// its group, reaped: [`Proc`]) before it returns.
    /// `env`: the manifest's, expanded.
    pub(super) fn run(&mut self, exec: &Path, env: &[(String, String)], sandbox: &Sandbox, timings: &mut Timings, calls: &mut Vec<Call>) {
        let ran = thread::scope(|s| {
            thread::Builder::new()
                .name("zot-check".into())
                // As much as a main thread has: it decodes and walks
                // whatever the extension sends.
                .stack_size(8 * 1024 * 1024)
                .spawn_scoped(s, || {
                    crate::child::spawn_from_this_thread();
                    self.drive(exec, env, sandbox, timings, calls);
                    self.proc = None;
                    // Nothing the extension left behind outlives the check.
                    crate::child::settle_orphans();
                })
                .map(|t| t.join())
        });
        match ran {
            Ok(Ok(())) => {}
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(e) => self.cannot_start(exec, &e),
        }
    }

    fn drive(&mut self, exec: &Path, env: &[(String, String)], sandbox: &Sandbox, timings: &mut Timings, calls: &mut Vec<Call>) {
        self.start = Instant::now();
        match spawn(self.m, exec, env, sandbox) {
            Ok(p) => self.proc = Some(p),
            Err(e) => return self.cannot_start(exec, &e),
        }

        let greeted = self.handshake(timings);
        if greeted {
            self.check_registrations();
            self.calls(calls);
        }
        self.shutdown(timings, greeted);
        self.stderr(sandbox);
    }

    fn cannot_start(&mut self, exec: &Path, e: &std::io::Error) {
        self.f.error("spawn", format!("cannot start {}: {e}", exec.display()), "check that exec is a program this system can run (a #! line, the right architecture)");
    }

    /// Time as the host would see it, in ms since spawn: the hold of
    /// `hello_ack` is left out of everything after it.
    fn host_ms(&self, at: Instant) -> f64 {
        match (self.hello_at, self.ack_at) {
            (Some(h), Some(a)) if at >= a => ms(h - self.start) + ms(at - a),
            _ => ms(at.saturating_duration_since(self.start)),
        }
    }

    fn send(&mut self, frame: &HostFrame) -> bool {
        self.send_bytes(&crate::protocol::encode(frame))
    }

    fn send_bytes(&mut self, bytes: &[u8]) -> bool {
        let Some(p) = self.proc.as_mut().filter(|p| p.stdin_open()) else { return false };
        match p.write(bytes) {
            Ok(()) => true,
            Err(e) => {
                if !self.write_failed && self.exited.is_none() && !self.eof {
                    self.f.error("stdin_closed", format!("writing to its stdin failed: {e}"), "keep reading stdin until shutdown");
                }
                self.write_failed = true;
                false
            }
        }
    }

    fn close_stdin(&mut self) {
        if let Some(p) = self.proc.as_mut() {
            p.close_stdin();
        }
    }

    /// Some thread of the process may still report.
    fn connected(&self) -> bool {
        self.proc.as_ref().is_some_and(Proc::connected)
    }

    fn signal(&self, sig: i32) {
        if let Some(p) = &self.proc {
            p.signal(sig);
        }
    }

    fn gone(&self) -> bool {
        self.exited.is_some() || self.eof
    }

    /// Waits for the next frame until `deadline`; junk lines are reported
    /// and skipped on the way. The exit and the last stdout lines come
    /// from different threads, so the exit may be seen first: as the host
    /// does (docs/protocol.md §3 rule 8), what it wrote before exiting is still
    /// read, up to stdout's end or [`EXIT_WAIT`] after the exit was seen
    /// (a grandchild holding stdout open), whatever `deadline` says, and
    /// only then is it [`Step::Gone`].
    fn next(&mut self, deadline: Instant) -> Step {
        loop {
            if self.output_over {
                return Step::Gone;
            }
            let Some(p) = self.proc.as_mut() else { return Step::Gone };
            let ev = match p.next(self.exit_grace.unwrap_or(deadline)) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) if self.exit_grace.is_some() => {
                    self.output_over = true;
                    return Step::Gone;
                }
                Err(RecvTimeoutError::Timeout) => return Step::Timeout,
                Err(RecvTimeoutError::Disconnected) => {
                    self.eof = true;
                    self.output_over = self.exited.is_some();
                    return Step::Gone;
                }
            };
            match ev {
                Ev::Eof => {
                    self.eof = true;
                    self.output_over = self.exited.is_some();
                    return Step::Gone;
                }
                Ev::Exited(at, status) => {
                    self.exited = Some((at, status));
                    if self.eof {
                        self.output_over = true;
                        return Step::Gone;
                    }
                    self.exit_grace = Some(Instant::now() + EXIT_WAIT);
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
                    let ExtFrame::Hello { name, capabilities, .. } = *frame else { continue };
                    self.caps = capabilities;
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
                    self.f.error("hello_not_first", format!("the first frame is {:?}, not hello; the host refuses to load it", other.kind()), "send hello before anything else");
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
        let data_dir = self.proc.as_ref().map_or(dir.clone(), |p| p.data_dir.display().to_string());
        let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_else(|_| dir.clone());
        let ack = HostFrame::HelloAck(HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zot_version: env!("CARGO_PKG_VERSION").to_string(),
            provider: String::new(),
            model: String::new(),
            cwd,
            extension_dir: dir,
            data_dir,
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

    /// Stops the extension: gracefully (`shutdown`, stdin closed) after a
    /// handshake, at once (SIGKILL, as the host does) after a failed one.
    fn shutdown(&mut self, timings: &mut Timings, graceful: bool) {
        if self.exited.is_some() {
            self.drain_output();
            // Its last frames were read after the exit was seen (a reply,
            // then the exit): the exit is still reported.
            if graceful && !self.gone_reported {
                self.report_gone("before shutdown");
            }
            return self.leftovers();
        }
        if !graceful {
            self.close_stdin();
            return self.stop_hard(&[libc::SIGKILL]);
        }
        if !self.eof {
            self.shutdown_sent = true;
            self.send(&HostFrame::Shutdown);
        }
        self.close_stdin();
        let sent = Instant::now();
        let deadline = sent + self.d.shutdown;
        while self.exited.is_none() && self.connected() {
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
        self.drain_output();
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

    /// Once the exit is seen: reads (and judges) what is left of its
    /// output, to stdout's end or the end of [`EXIT_WAIT`].
    fn drain_output(&mut self) {
        while self.exited.is_some() && !self.output_over {
            match self.next(Instant::now()) {
                Step::Frame(f, at) => self.observe(f, at),
                Step::Malformed => {}
                Step::Gone | Step::Timeout => break,
            }
        }
    }

    /// Sends each signal to the group in turn, waiting up to a second for
    /// the exit status after each.
    fn stop_hard(&mut self, signals: &[i32]) {
        for sig in signals {
            self.signal(*sig);
            let deadline = Instant::now() + Duration::from_secs(1);
            while self.exited.is_none() && self.connected() {
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
        while self.exited.is_none() && self.connected() {
            if let Step::Timeout = self.next(deadline) {
                return;
            }
        }
    }

    /// Processes of its group still alive once the leader is gone (it is
    /// not reaped yet, so its group id is still its own).
    fn leftovers(&mut self) {
        let Some(pgid) = self.proc.as_ref().map(Proc::pgid) else { return };
        if self.exited.is_none() {
            return;
        }
        let deadline = Instant::now() + Duration::from_millis(300);
        while group_running(pgid) {
            if Instant::now() >= deadline {
                let who = group_members(pgid);
                let who = if who.is_empty() { String::new() } else { format!(": {}", who.join(", ")) };
                self.f.error(
                    "leftover_processes",
                    format!("processes of its group were still running after it exited{who}; the host kills them"),
                    "wait for (or stop) the processes it started before exiting",
                );
                self.signal(libc::SIGKILL);
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn report_gone(&mut self, when: &str) {
        self.gone_reported = true;
        if self.exited.is_none() {
            // Stdout closed: the exit status usually follows at once, but
            // a busy machine may report it late; only a process that runs
            // on without its stdout waits this out.
            let deadline = Instant::now() + Duration::from_secs(5);
            self.drain_exit(deadline);
        }
        let how = match self.exited {
            Some((_, s)) => crate::child::describe_status(s),
            None => "its stdout closed".into(),
        };
        self.f.error("exited", format!("exited {when} ({how})"), "see the stderr lines below, or run it by hand");
    }

    fn stderr(&mut self, sandbox: &Sandbox) {
        // Its stderr reaches the file through the host's logger thread;
        // the file's `[zot]` lines (a rotation, a line cut) are not its own.
        crate::log::flush();
        let Ok(bytes) = fs::read(sandbox.stderr_path()) else { return };
        if bytes.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("[zot] ")).collect();
        if lines.is_empty() {
            return;
        }
        // A crash is read as a traceback is: the last lines say what
        // happened (Python's ModuleNotFoundError comes last).
        let crashed = self.f.list.iter().any(|x| x.code == "exited");
        let (shown, more) = if crashed {
            let skip = lines.len().saturating_sub(5);
            let more = if skip > 0 { format!("(+{skip} earlier) ") } else { String::new() };
            (&lines[skip..], more)
        } else {
            (&lines[..lines.len().min(3)], String::new())
        };
        let shown: Vec<String> = shown.iter().map(|l| crate::child::preview(l.as_bytes())).collect();
        let after = if !crashed && lines.len() > 3 { format!(" (+{} more)", lines.len() - 3) } else { String::new() };
        self.f.info(
            "stderr",
            format!("wrote {} line(s) to stderr, zot keeps them in its log: {more}{}{after}", lines.len(), shown.join(" | ")),
            "",
        );
    }
}
