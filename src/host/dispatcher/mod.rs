//! The dispatcher thread: the only owner of the extension table, the
//! command/tool indexes, the calls in flight and every deadline. It never
//! blocks on I/O: frames go out through each child's bounded queue, frames
//! and exits come in through one inbox, and timers are a min-heap that the
//! inbox wait is bounded by. This file holds the loop, loading, ends of
//! processes, timers and requests; [`frames`] the frames from extensions,
//! [`chain`] intercept chains, [`stop`] shutdown and reload, [`calls`] the
//! calls in flight, [`limits`] the per-extension bounds, [`listing`] the
//! listing.

mod blocks;
mod call_tool;
mod calls;
mod chain;
mod ext;
mod frames;
mod limits;
mod listing;
mod restart;
mod stop;

use super::registry::{self, Registry};
use super::*;
use calls::{Call, CallKind, InFlight};
use chain::Chain;
use ext::{Ext, ExtId, Life, Proc};
use limits::Bucket;
use crate::child::{describe_status, Child, ChildMsg, Log};
use crate::discovery::discover;
use crate::protocol::{encode, CommandResponse, Panel, ExtFrame, HelloAck, HostFrame, InterceptResponse, ToolResult, PROTOCOL_VERSION};
use crossbeam_channel::RecvTimeoutError;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::os::unix::process::ExitStatusExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Events an extension may intercept.
pub const INTERCEPTABLE: [&str; 4] = ["tool_call", "turn_start", "assistant_message", "before_agent_start"];

/// The longest `system_prompt` an interceptor may set, encoded.
pub const MAX_SYSTEM_PROMPT: usize = 1024 * 1024;

/// The levels of a `notify`; another is shown as `info` (and logged).
pub const NOTIFY_LEVELS: [&str; 4] = ["info", "success", "warn", "error"];

/// The actions of a `command_response`; another answers with an error.
pub const COMMAND_ACTIONS: [&str; 6] = ["prompt", "insert", "display", "open_panel", "noop", "tool_prompt"];

/// What the host tells extensions it supports, in `hello_ack`.
pub const HOST_CAPABILITIES: [&str; 1] = ["call_tool"];

/// Keys a panel may receive.
pub const PANEL_KEYS: [&str; 14] = [
    "up", "down", "left", "right", "enter", "esc", "tab", "pageup", "pagedown", "home", "end",
    "backspace", "delete", "rune",
];

/// How long after stdout closes to wait for the exit status before calls
/// in flight are failed without it.
const EOF_GRACE: Duration = Duration::from_millis(50);

/// How often log sizes are checked against the rotation limit.
const LOG_CHECK: Duration = Duration::from_secs(1);

/// Inbox messages handled at most before frames gathered for children are
/// written even though more messages wait: a busy inbox (a chatty
/// extension) must not hold back another extension's call.
const FLUSH_EVERY: u32 = 64;

/// How long after the exit was seen to wait for stdout to reach its end
/// (a grandchild may hold it) before the calls in flight fail.
const EXIT_GRACE: Duration = Duration::from_millis(100);

/// The largest frame written to an extension (PROTOCOL.md §3 rule 9):
/// current upstream SDKs read at most 4 MiB a line.
pub const MAX_FRAME_OUT: usize = 4 * 1024 * 1024;

/// How long to wait for a SIGKILLed process to be reaped before giving up.
const REAP_GRACE: Duration = Duration::from_secs(1);

pub(super) enum Inbox {
    Request(Request, Responder),
    Child(ExtId, ChildMsg),
    /// The outcome of an extension's `call_tool`, to answer it with.
    CallToolDone { caller: ExtId, id: String, name: String, result: Result<Response, HostError> },
}

pub(super) fn spawn(
    config: Config,
    tx: crate::wake::Tx<Inbox>,
    rx: crate::wake::Rx<Inbox>,
    sink: EventSink,
    idle: IdleHook,
) -> Result<JoinHandle<()>, HostError> {
    std::thread::Builder::new()
        .name("zot-dispatcher".into())
        .spawn(move || {
            DISPATCHER.with(|d| d.set(true));
            crate::child::spawn_from_this_thread();
            let mut d = Dispatcher::new(config, tx, sink, idle);
            if catch_unwind(AssertUnwindSafe(|| d.load())).is_err() {
                eprintln!("zot: internal error while loading extensions; continuing");
            }
            d.run(&rx);
            // Anything still queued gets an answer.
            while let Ok(msg) = rx.try_recv() {
                if let Inbox::Request(_, done) = msg {
                    respond(done, Err(HostError::ShuttingDown));
                }
            }
            d.idle();
            crate::log::flush();
        })
        .map_err(|e| HostError::Internal(format!("cannot start the dispatcher thread: {e}")))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Hello(ExtId),
    ReadyIdle(ExtId),
    LoadGrace(u64),
    LogCheck(u64),
    /// Stdout closed; the exit status has had its moment to arrive.
    Eof(ExtId),
    /// The exit was seen; stdout (held by a grandchild) has had its
    /// moment to reach its end.
    ExitGrace(ExtId),
    EofKill(ExtId),
    Stop(ExtId, StopStage),
    /// Start an extension again (PROTOCOL.md §7.1).
    Restart(ExtId),
    /// A request waiting for a restart reaches its own timeout.
    Parked(usize, u64),
    /// A call of an agent tool reaches the tool timeout.
    AgentCall(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum StopStage {
    Term,
    Kill,
    GiveUp,
}

enum Waiter {
    Ready(Responder),
    Reload(Responder),
}

#[derive(PartialEq, Eq)]
enum Phase {
    Loading,
    Running,
    Stopping { exit: bool },
    Done,
}

struct Dispatcher {
    cfg: Config,
    inbox: crate::wake::Tx<Inbox>,
    sink: EventSink,
    idle: IdleHook,
    /// The bounds of every child's queue, with the budget they share.
    queue: crate::child::QueueBounds,
    exts: Vec<Ext>,
    registry: Registry,
    calls: InFlight,
    chains: HashMap<u64, Chain>,
    timers: BinaryHeap<Reverse<(Instant, u64, Timer)>>,
    next_id: u64,
    phase: Phase,
    load_gen: u64,
    load_errors: Vec<String>,
    last_load: Option<LoadReport>,
    waiters: Vec<Waiter>,
    stopped_count: usize,
    exit_waiters: Vec<Responder>,
    /// Reloads asked for while a load was under way: its discovery is
    /// older than the request, so another reload follows it.
    reload_after_load: Vec<Responder>,
    /// Requests that arrived during a load or a reload, run once it is over.
    deferred: Vec<(Request, Responder)>,
    /// The session id of the envelope when the agent gives none.
    session_id: String,
    /// The last `sequence` of the envelope.
    sequence: u64,
    /// The agent's own tools (`agent_tools`), for extensions' `call_tool`.
    agent_tools: Vec<AgentTool>,
    /// Calls of agent tools waiting for the agent's answer, by call id.
    agent_calls: HashMap<String, call_tool::AgentCall>,
    /// Extensions' `call_tool`s under way, by caller and its id.
    ext_calls: HashMap<(ExtId, String), call_tool::ExtCall>,
    /// Project-local extensions of an untrusted project: listed, never started.
    untrusted: Vec<crate::discovery::Found>,
}

fn respond(done: Responder, r: Result<Response, HostError>) {
    done.answer(r);
}

thread_local! {
    static DISPATCHER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is the dispatcher thread, where a blocking host call would
/// wait for itself.
pub(super) fn on_dispatcher_thread() -> bool {
    DISPATCHER.with(|d| d.get())
}

/// One id per host run: the process and the time it started.
fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("zot-{:x}-{:x}", std::process::id(), nanos)
}

/// `d` from now; a duration too long for the clock means "as good as never".
fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86400)))
        .unwrap_or(now)
}

impl Dispatcher {
    fn new(cfg: Config, inbox: crate::wake::Tx<Inbox>, sink: EventSink, idle: IdleHook) -> Dispatcher {
        let registry = Registry::new(cfg.reserved_commands.clone());
        let queue = crate::child::QueueBounds {
            frames: cfg.queue_limit,
            bytes: cfg.queue_bytes,
            shared: crate::child::Budget::new(cfg.queue_budget),
        };
        Dispatcher {
            queue,
            cfg,
            inbox,
            sink,
            idle,
            exts: Vec::new(),
            registry,
            calls: InFlight::default(),
            chains: HashMap::new(),
            timers: BinaryHeap::new(),
            next_id: 1,
            phase: Phase::Loading,
            load_gen: 0,
            load_errors: Vec::new(),
            last_load: None,
            waiters: Vec::new(),
            stopped_count: 0,
            exit_waiters: Vec::new(),
            reload_after_load: Vec::new(),
            deferred: Vec::new(),
            ext_calls: HashMap::new(),
            agent_tools: Vec::new(),
            agent_calls: HashMap::new(),
            session_id: new_session_id(),
            sequence: 0,
            untrusted: Vec::new(),
        }
    }

    fn next(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn at(&mut self, when: Instant, t: Timer) {
        let seq = self.next();
        self.timers.push(Reverse((when, seq, t)));
    }

    /// The embedder's idle hook; its panic must not stop the host.
    fn idle(&self) {
        let _ = catch_unwind(AssertUnwindSafe(|| (self.idle)()));
    }

    fn emit(&self, e: HostEvent) {
        // The sink is the embedder's code; its panic must not stop the host.
        let _ = catch_unwind(AssertUnwindSafe(|| (self.sink)(e)));
    }

    /// The slot of extension `id`, if it is still of this load.
    fn slot_of(&self, id: ExtId) -> Option<usize> {
        self.exts.get(id.slot).filter(|e| e.id == id).map(|_| id.slot)
    }

    fn run(&mut self, rx: &crate::wake::Rx<Inbox>) {
        let mut unflushed = 0;
        while self.phase != Phase::Done {
            if rx.is_empty() || unflushed >= FLUSH_EVERY {
                // Out of work for now (or busy for a while): write what was
                // sent to children meanwhile, one write per child
                // (`Child::send` only gathers while nothing is queued).
                for c in self.exts.iter().filter_map(|e| e.child()) {
                    c.flush();
                }
                self.idle();
                unflushed = 0;
            }
            unflushed += 1;
            let next_timer = self.timers.peek().map(|Reverse((when, _, _))| *when);
            let next = match (next_timer, self.calls.next_deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let msg = match rx.recv_deadline(next) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let step = catch_unwind(AssertUnwindSafe(|| {
                if let Some(m) = msg {
                    self.handle(m);
                }
                self.fire_due_timers();
            }));
            if step.is_err() {
                eprintln!("zot: internal error in the dispatcher; continuing");
            }
        }
    }

    fn fire_due_timers(&mut self) {
        let now = Instant::now();
        while let Some(id) = self.calls.expired(now) {
            self.on_call_timeout(id);
        }
        while let Some(Reverse((when, _, t))) = self.timers.peek().copied() {
            if when > now {
                break;
            }
            self.timers.pop();
            self.on_timer(t, now);
        }
    }

    fn handle(&mut self, msg: Inbox) {
        match msg {
            Inbox::Request(req, done) => self.on_request(req, done),
            Inbox::CallToolDone { caller, id, name, result } => self.on_call_tool_done(caller, id, name, result),
            Inbox::Child(id, m) => {
                let Some(slot) = self.slot_of(id) else { return };
                match m {
                    ChildMsg::Frame(f) => self.on_frame(slot, f),
                    ChildMsg::BadReply { id, error } => self.on_bad_reply(slot, &id, error.to_string()),
                    ChildMsg::TooLong { id, len } => self.on_too_long(slot, id, len),
                    ChildMsg::Eof => self.on_eof(slot),
                    ChildMsg::Exited(status) => self.on_exit(slot, status),
                }
            }
        }
    }

    // ----- loading -------------------------------------------------------

    fn load(&mut self) {
        self.phase = Phase::Loading;
        self.load_gen += 1;
        self.load_errors.clear();
        self.exts.clear();
        self.registry.clear();
        let disc = discover(&self.cfg.sources, &self.cfg.cwd, &self.cfg.home, self.cfg.trust_project);
        self.untrusted = disc.untrusted.clone();
        if !self.untrusted.is_empty() {
            let extensions = self.untrusted.iter().map(|f| f.manifest.name.clone()).collect();
            self.emit(HostEvent::UntrustedProject { dir: self.cfg.cwd.display().to_string(), extensions });
        }
        for b in &disc.broken {
            let msg = b.error.to_string();
            self.load_errors.push(msg.clone());
            self.emit(HostEvent::LoadFailed { extension: b.label(), message: msg, log: None });
        }
        for (found, winner) in &disc.shadowed {
            let m = &found.manifest;
            if let Ok(log) = Log::open(&self.cfg.home.log_path(&m.name)) {
                log.line(&format!(
                    "skipped {} ({}): extension {:?} is already loaded from {}",
                    m.dir.display(),
                    found.source.as_str(),
                    m.name,
                    winner.display()
                ));
            }
        }
        let gen = self.load_gen;
        for found in disc.load {
            let id = ExtId { slot: self.exts.len(), gen };
            self.exts.push(Ext::new(id, found, Bucket::new(self.cfg.limits.notes_burst)));
        }
        // Every extension is listed as starting before any is started: one
        // that fails at once (exec missing) must not end the load while the
        // later ones are not even in the table yet.
        for slot in 0..self.exts.len() {
            self.start_ext(slot);
        }
        self.at(after(self.cfg.timeouts.ready_grace), Timer::LoadGrace(gen));
        self.at(after(LOG_CHECK), Timer::LogCheck(gen));
        self.check_load_done(false);
    }

    fn start_ext(&mut self, slot: usize) {
        let inbox = self.inbox.clone();
        let queue = self.queue.clone();
        let trace = self.cfg.trace.clone();
        let hello_at = after(self.cfg.timeouts.hello);
        let log_path = self.cfg.home.log_path(&self.exts[slot].found.manifest.name);
        // Each process its own id: messages of an earlier one (before a
        // restart) never reach this one.
        let id = ExtId { slot, gen: self.next() };
        let ext = &mut self.exts[slot];
        ext.id = id;
        let m = &ext.found.manifest;
        if m.is_static() {
            // Nothing to run: its skills and theme are there at once.
            let extension = m.name.clone();
            ext.life = Life::Ready;
            return self.emit(HostEvent::ExtensionReady { extension, commands: Vec::new(), tools: Vec::new() });
        }
        let log = match Log::open(&log_path) {
            Ok(l) => l,
            Err(e) => {
                let why = format!("cannot open its log file {}: {e}", log_path.display());
                return self.fail(slot, why);
            }
        };
        let exec = match m.resolve_exec() {
            Ok(p) => p,
            Err(e) => {
                ext.log = Some(log);
                return self.fail(slot, e.to_string());
            }
        };
        let env = match crate::envexpand::expand_from_env(m.env()) {
            Ok(env) => env,
            Err(e) => {
                ext.log = Some(log);
                return self.fail(slot, e.to_string());
            }
        };
        log.line(&format!("starting {} from {}", m.name, m.dir.display()));
        let spawned = Child::spawn(m, &exec, &env, &log, &queue, trace.as_ref(), inbox, move |msg| {
            Inbox::Child(id, msg)
        });
        ext.log = Some(log);
        match spawned {
            Ok(child) => {
                ext.proc = Some(Proc { child, exit: None, eof: false, ended: false });
                self.at(hello_at, Timer::Hello(id));
            }
            Err(e) => self.fail(slot, format!("cannot start {}: {e}", exec.display())),
        }
    }

    /// The extension failed to load: say why everywhere, stop its group.
    fn fail(&mut self, slot: usize, why: String) {
        let name = self.exts[slot].name().to_string();
        let msg = format!("extension {name:?} failed to load: {why}");
        self.lose(slot, &why);
        let ext = &mut self.exts[slot];
        ext.life = Life::Failed;
        ext.error = Some(why.clone());
        ext.log(&format!("failed to load: {why}"));
        ext.signal(libc::SIGKILL);
        self.load_errors.push(msg);
        let log = self.exts[slot].log.as_ref().map(|l| l.path().to_path_buf());
        self.emit(HostEvent::LoadFailed { extension: name, message: why, log });
        // A restart that fails to load is one more exit.
        if self.exts[slot].restart_names.is_some() && !self.maybe_restart(slot, None) {
            self.exts[slot].restart_names = None;
            let extension = self.exts[slot].name().to_string();
            self.unpark_failed(slot, HostError::Exited { extension, detail: "its restart failed".into() });
        }
        self.check_load_done(false);
    }

    fn mark_ready(&mut self, slot: usize, how: &str) {
        let ext = &mut self.exts[slot];
        if ext.life != Life::Registering {
            return;
        }
        ext.life = Life::Ready;
        ext.log(&format!("ready ({how})"));
        let extension = ext.name().to_string();
        let commands = ext.commands.iter().map(|c| c.0.clone()).collect();
        let tools = ext.tools.iter().map(|t| t.name.clone()).collect();
        self.emit(HostEvent::ExtensionReady { extension, commands, tools });
        self.restarted(slot);
        self.check_load_done(false);
    }

    fn check_load_done(&mut self, grace_over: bool) {
        if self.phase != Phase::Loading {
            return;
        }
        if !grace_over && self.exts.iter().any(|e| e.life.starting()) {
            return;
        }
        self.phase = Phase::Running;
        let ready: Vec<String> =
            self.exts.iter().filter(|e| e.life == Life::Ready).map(|e| e.name().to_string()).collect();
        let report = LoadReport { loaded: self.exts.len(), ready: ready.clone(), errors: self.load_errors.clone() };
        let first = self.last_load.is_none();
        self.last_load = Some(report.clone());
        if first {
            self.emit(HostEvent::Ready { extensions: ready });
        }
        for w in std::mem::take(&mut self.waiters) {
            match w {
                Waiter::Ready(done) => respond(done, Ok(Response::Load(report.clone()))),
                Waiter::Reload(done) => respond(
                    done,
                    Ok(Response::Reload(ReloadReport {
                        stopped: self.stopped_count,
                        loaded: report.loaded,
                        ready: report.ready.len(),
                        errors: report.errors.clone(),
                    })),
                ),
            }
        }
        for (req, done) in std::mem::take(&mut self.deferred) {
            self.on_request(req, done);
        }
        if !self.reload_after_load.is_empty() {
            for d in std::mem::take(&mut self.reload_after_load) {
                self.waiters.push(Waiter::Reload(d));
            }
            self.begin_stop_all(false);
        }
    }

    // ----- end of a process ----------------------------------------------

    /// Unregisters the extension and fails every call in flight to it.
    fn lose(&mut self, slot: usize, detail: &str) {
        self.registry.release(slot);
        let id = self.exts[slot].id;
        self.cancel_calls_of(id);
        let extension = self.exts[slot].name().to_string();
        for cid in self.calls.ids_where(|c| c.ext == id) {
            let Some(call) = self.calls.remove(&cid) else { continue };
            let err = || {
                if self.phase == (Phase::Stopping { exit: true }) {
                    HostError::ShuttingDown
                } else {
                    HostError::Exited { extension: extension.clone(), detail: detail.to_string() }
                }
            };
            match call.kind {
                CallKind::Command { done, .. } | CallKind::Tool { done, .. } => respond(done, Err(err())),
                CallKind::Intercept { chain } => self.chain_failed(chain, slot, &format!("exited ({detail})")),
            }
        }
    }

    /// Stdout reached its end. An exit already seen ends the extension now;
    /// otherwise its exit status has a moment to arrive, so the error can
    /// name it.
    fn on_eof(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        let Some(p) = ext.proc.as_mut() else { return };
        p.eof = true;
        if p.exit.is_some() {
            return self.end_process(slot);
        }
        if !ext.life.running() {
            return;
        }
        // Before hello nothing can be in flight, so waiting longer for the
        // exit status costs nothing and makes the load error name it.
        let grace = if ext.life == Life::Spawned { self.cfg.timeouts.term_grace } else { EOF_GRACE };
        let id = ext.id;
        self.at(after(grace), Timer::Eof(id));
    }

    /// Stdout closed while the process runs on.
    fn on_eof_grace_over(&mut self, slot: usize) {
        let ext = &self.exts[slot];
        if !ext.life.running() || ext.proc.as_ref().is_none_or(|p| p.exit.is_some()) {
            return;
        }
        ext.log("stdout closed while the process runs on");
        let id = ext.id;
        match ext.life {
            Life::Spawned => return self.fail(slot, "closed its stdout before saying hello".into()),
            Life::Registering => return self.fail(slot, "closed its stdout during start-up".into()),
            _ => {}
        }
        self.emit_exited(slot, None);
        self.lose(slot, "closed its stdout");
        self.exts[slot].life = Life::Exited;
        self.at(after(self.cfg.timeouts.term_grace), Timer::EofKill(id));
    }

    /// The process exited: its group goes with it while the zombie still
    /// pins the group id, then it is reaped. What it wrote before exiting
    /// still counts: the extension ends once stdout is read to its end, or
    /// [`EXIT_GRACE`] later when a grandchild holds stdout open.
    fn on_exit(&mut self, slot: usize, status: Option<ExitStatus>) {
        let ext = &mut self.exts[slot];
        let Some(p) = ext.proc.as_mut() else { return };
        p.child.signal_group(libc::SIGKILL);
        p.child.reap();
        p.exit = Some(status);
        if ext.life.running() {
            // No new call reaches it; the calls in flight wait for stdout.
            self.registry.release(slot);
        }
        if self.exts[slot].proc.as_ref().is_some_and(|p| p.eof) {
            self.end_process(slot);
        } else {
            let id = self.exts[slot].id;
            self.at(after(EXIT_GRACE), Timer::ExitGrace(id));
        }
    }

    /// The process exited and its output is read: every call still in
    /// flight fails, and the extension is done.
    fn end_process(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        let Some(p) = ext.proc.as_mut() else { return };
        if p.ended {
            return;
        }
        p.ended = true;
        let status = p.exit.flatten();
        let how = status.map_or_else(|| "exit status unknown".to_string(), describe_status);
        match ext.life {
            Life::Stopping { failed } => {
                ext.log(&format!("stopped ({how})"));
                self.lose(slot, self.stop_detail());
                self.exts[slot].life = if failed { Life::Failed } else { Life::Stopped };
                self.check_stopped();
            }
            Life::Failed | Life::Exited | Life::Stopped | Life::Restarting | Life::CrashLoop => {
                ext.log(&format!("exited ({how})"))
            }
            Life::Spawned => self.fail(slot, format!("exited before saying hello ({how})")),
            Life::Registering => self.fail(slot, format!("exited during start-up ({how})")),
            Life::Ready => {
                ext.log(&format!("exited ({how})"));
                ext.life = Life::Exited;
                ext.error = Some(format!("exited ({how})"));
                // The notice goes out before the failed calls it explains.
                self.emit_exited(slot, status);
                self.lose(slot, &how);
                self.maybe_restart(slot, status);
            }
        }
    }

    fn emit_exited(&self, slot: usize, status: Option<ExitStatus>) {
        let extension = self.exts[slot].name().to_string();
        let (code, signal) = (status.and_then(|s| s.code()), status.and_then(|s| s.signal()));
        self.emit(HostEvent::Exited { extension, code, signal });
    }

    // ----- timers ----------------------------------------------------------

    fn on_timer(&mut self, t: Timer, now: Instant) {
        let ext_timer = |d: &Self, id: ExtId| d.slot_of(id);
        match t {
            Timer::Hello(id) => {
                let Some(slot) = ext_timer(self, id) else { return };
                if self.exts[slot].life == Life::Spawned && self.exts[slot].proc.as_ref().is_some_and(|p| p.exit.is_none()) {
                    let after = fmt_duration(self.cfg.timeouts.hello);
                    self.fail(slot, format!("no hello within {after}"));
                }
            }
            Timer::ReadyIdle(id) => {
                let Some(slot) = ext_timer(self, id) else { return };
                let ext = &self.exts[slot];
                if ext.life != Life::Registering {
                    return;
                }
                let due = ext.last_frame.checked_add(self.cfg.timeouts.ready_idle).unwrap_or(now);
                if due <= now {
                    self.mark_ready(slot, "no ready frame; quiet after the handshake");
                } else {
                    self.at(due, Timer::ReadyIdle(id));
                }
            }
            Timer::LoadGrace(gen) => {
                if gen == self.load_gen {
                    self.check_load_done(true);
                }
            }
            Timer::Eof(id) => {
                if let Some(slot) = ext_timer(self, id) {
                    self.on_eof_grace_over(slot);
                }
            }
            Timer::ExitGrace(id) => {
                if let Some(slot) = ext_timer(self, id) {
                    let ext = &self.exts[slot];
                    if ext.proc.as_ref().is_some_and(|p| !p.ended) {
                        ext.log("exited while something else holds its stdout open");
                        self.end_process(slot);
                    }
                }
            }
            Timer::LogCheck(gen) => {
                if gen != self.load_gen || self.phase == Phase::Done {
                    return;
                }
                let max = self.cfg.limits.log_bytes;
                for log in self.exts.iter().filter_map(|e| e.log.as_ref()) {
                    log.rotate_later(max);
                }
                self.at(after(LOG_CHECK), Timer::LogCheck(gen));
            }
            Timer::EofKill(id) => {
                let Some(slot) = ext_timer(self, id) else { return };
                let ext = &self.exts[slot];
                if ext.life == Life::Exited && ext.pid().is_some() {
                    ext.log("still running after closing stdout; killing its process group");
                    ext.signal(libc::SIGKILL);
                }
            }
            Timer::Stop(id, stage) => self.on_stop_timer(id, stage),
            Timer::Restart(id) => self.on_restart_timer(id),
            Timer::Parked(slot, key) => self.on_parked_timer(slot, key),
            Timer::AgentCall(n) => self.on_agent_call_timeout(n),
        }
    }

    fn on_call_timeout(&mut self, id: u64) {
        let Some(call) = self.calls.remove(&id) else { return };
        let t = self.cfg.timeouts;
        let slot = call.ext.slot;
        let ext = &self.exts[slot];
        let extension = ext.name().to_string();
        match call.kind {
            CallKind::Command { name, done } => {
                ext.log(&format!("command /{name} (request {id}) timed out after {}", fmt_duration(t.command)));
                let what = format!("command /{name}");
                respond(done, Err(HostError::Timeout { extension, what, after: t.command }));
            }
            CallKind::Tool { name, done, .. } => {
                ext.log(&format!("tool {name} (request {id}) timed out after {}", fmt_duration(t.tool)));
                if ext.can("tool_cancel") {
                    let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                }
                let what = format!("tool {name}");
                respond(done, Err(HostError::Timeout { extension, what, after: t.tool }));
            }
            CallKind::Intercept { chain } => {
                let why = format!("timed out after {}", fmt_duration(t.intercept));
                self.chain_failed(chain, slot, &why);
            }
        }
    }

    /// A reply line over the cap: the call it answers fails at once.
    fn on_too_long(&mut self, slot: usize, id: Option<String>, len: usize) {
        let Some(id) = id else { return };
        let ext_id = self.exts[slot].id;
        let Some(n) = id.parse::<u64>().ok().filter(|n| self.calls.get(n).is_some_and(|c| c.ext == ext_id)) else {
            return;
        };
        let Some(call) = self.calls.remove(&n) else { return };
        let extension = self.exts[slot].name().to_string();
        let what = format!("its reply of {len} bytes is over the limit of {} bytes", crate::child::MAX_LINE);
        match call.kind {
            CallKind::Command { done, .. } | CallKind::Tool { done, .. } => {
                respond(done, Err(HostError::TooLarge { extension, what }))
            }
            CallKind::Intercept { chain } => self.chain_failed(chain, slot, &what),
        }
    }

    // ----- requests --------------------------------------------------------

    fn on_request(&mut self, req: Request, done: Responder) {
        if matches!(self.phase, Phase::Stopping { exit: true } | Phase::Done) {
            return respond(done, Err(HostError::ShuttingDown));
        }
        // During a load or a reload the names are about to be there: calls
        // wait for it instead of failing as unknown.
        let loading = match self.phase {
            Phase::Loading => self.last_load.is_some() || self.cfg.hold_until_loaded,
            Phase::Stopping { exit } => !exit,
            _ => false,
        };
        if loading && req.needs_extensions() {
            return self.deferred.push((req, done));
        }
        if let Request::Event { payload, .. } | Request::Intercept { payload, .. } = &req {
            if let Some(k) = ["type", "id"].into_iter().find(|k| payload.contains_key(*k)) {
                let msg = format!("an event payload may not set `{k}`");
                return respond(done, Err(HostError::BadRequest(msg)));
            }
        }
        match req {
            Request::WaitReady => match (&self.phase, &self.last_load) {
                (Phase::Running, Some(r)) => respond(done, Ok(Response::Load(r.clone()))),
                _ => self.waiters.push(Waiter::Ready(done)),
            },
            Request::List => respond(done, Ok(Response::List(self.listing()))),
            Request::Command { name, args } => self.start_command(name, args, done),
            Request::Tool { name, args, tool_id } => {
                self.start_tool(ToolCall { name, args, tool_id, ..Default::default() }, None, done)
            }
            Request::ToolCall(call) => self.start_tool(call, None, done),
            Request::AgentTools(tools) => {
                self.agent_tools = tools;
                respond(done, Ok(Response::Done))
            }
            Request::CallToolResult { call_id, content, is_error, structured_content } => {
                self.on_agent_result(&call_id, content, is_error, structured_content, done)
            }
            Request::CancelTool { tool_id } => self.cancel_tool(&tool_id, done),
            Request::Intercept { event, payload } => self.start_chain(event, payload, done),
            Request::Event { event, payload } => {
                let n = self.deliver_event(&event, payload);
                respond(done, Ok(Response::Delivered(n)))
            }
            Request::PanelKey { extension, panel_id, key, text } => {
                if !PANEL_KEYS.contains(&key.as_str()) {
                    let msg = format!("unknown key {key:?} (expected one of {})", PANEL_KEYS.join(", "));
                    return respond(done, Err(HostError::BadRequest(msg)));
                }
                if let Err(e) = self.open_panel_of(&extension, &panel_id) {
                    return respond(done, Err(e));
                }
                let frame = HostFrame::PanelKey { panel_id, key, text };
                respond(done, self.send_to_named(&extension, &frame).map(|()| Response::Done))
            }
            Request::PanelClose { extension, panel_id } => {
                let slot = match self.open_panel_of(&extension, &panel_id) {
                    Ok(slot) => slot,
                    Err(e) => return respond(done, Err(e)),
                };
                self.exts[slot].panels.retain(|p| *p != panel_id);
                let frame = HostFrame::PanelClose { panel_id };
                respond(done, self.send_to_named(&extension, &frame).map(|()| Response::Done))
            }
            Request::Reload => match self.phase {
                Phase::Loading => self.reload_after_load.push(done),
                _ => {
                    self.waiters.push(Waiter::Reload(done));
                    if self.phase == Phase::Running {
                        self.begin_stop_all(false);
                    }
                }
            },
            Request::Shutdown => {
                self.exit_waiters.push(done);
                for w in std::mem::take(&mut self.waiters) {
                    let (Waiter::Ready(d) | Waiter::Reload(d)) = w;
                    respond(d, Err(HostError::ShuttingDown));
                }
                for d in std::mem::take(&mut self.reload_after_load) {
                    respond(d, Err(HostError::ShuttingDown));
                }
                for (_, d) in std::mem::take(&mut self.deferred) {
                    respond(d, Err(HostError::ShuttingDown));
                }
                self.begin_stop_all(true);
            }
        }
    }

    /// The slot of extension `name` when its panel `panel_id` is open.
    fn open_panel_of(&self, name: &str, panel_id: &str) -> Result<usize, HostError> {
        let slot = self.exts.iter().position(|e| e.name() == name).ok_or_else(|| HostError::UnknownExtension(name.to_string()))?;
        if !self.exts[slot].panels.iter().any(|p| p == panel_id) {
            return Err(HostError::BadRequest(format!("extension {name:?} has no open panel {panel_id:?}")));
        }
        Ok(slot)
    }

    fn send_to_named(&self, name: &str, frame: &HostFrame) -> Result<(), HostError> {
        let ext = self
            .exts
            .iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| HostError::UnknownExtension(name.to_string()))?;
        ext.send(Arc::new(encode(frame)))
    }

    /// Whether one more call may be sent to the extension in `slot`.
    fn has_room(&self, slot: usize) -> Result<(), HostError> {
        let limit = self.cfg.limits.in_flight;
        if self.calls.count(slot) >= limit {
            let extension = self.exts[slot].name().to_string();
            return Err(HostError::TooManyCalls { extension, limit });
        }
        Ok(())
    }

    fn start_command(&mut self, name: String, args: String, done: Responder) {
        let Some(slot) = self.registry.command_owner(&name) else {
            if let Some(r) = self.restarting_owner(&name, false) {
                let timeout = self.cfg.timeouts.command;
                return self.park(r, Request::Command { name, args }, done, timeout);
            }
            return respond(done, Err(HostError::UnknownCommand(name)));
        };
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        // The spelling the owner registered, whatever the user typed.
        let lower = name.to_lowercase();
        let name = self.exts[slot].commands.iter().find(|c| c.0.to_lowercase() == lower).map_or(name, |c| c.0.clone());
        let id = self.next();
        let frame = HostFrame::CommandInvoked { id: id.to_string(), name: name.clone(), args: args.trim().to_string() };
        if let Err(e) = self.exts[slot].send(Arc::new(encode(&frame))) {
            return respond(done, Err(e));
        }
        let ext = self.exts[slot].id;
        let deadline = after(self.cfg.timeouts.command);
        self.calls.insert(id, Call { ext, kind: CallKind::Command { name, done }, deadline });
    }

    /// A tool call: through the intercept chain and the event first when
    /// it is run as the model's; `origin` when an extension made it.
    fn start_tool(&mut self, call: ToolCall, origin: Option<Origin>, done: Responder) {
        let args = match call.args.clone() {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return respond(done, Err(HostError::BadRequest("tool args must be a JSON object".into()))),
        };
        let agent_tool = origin.is_some() && self.agent_tools.iter().any(|t| t.name == call.name);
        if self.registry.tool_owner(&call.name).is_none() && !agent_tool {
            if let (Some(r), None) = (self.restarting_owner(&call.name, true), &origin) {
                let timeout = self.cfg.timeouts.tool;
                return self.park(r, Request::ToolCall(call), done, timeout);
            }
            return respond(done, Err(HostError::UnknownTool(call.name)));
        }
        if !call.as_model {
            return self.send_tool(call, args, origin, done);
        }
        let tool_id = call.tool_id.clone().unwrap_or_else(|| format!("call-{}", self.next()));
        let mut payload = Payload::new();
        payload.insert("tool_id".into(), Value::String(tool_id));
        payload.insert("tool_name".into(), Value::String(call.name.clone()));
        payload.insert("tool_args".into(), args);
        if let Some(o) = &origin {
            payload.insert("origin_extension".into(), Value::String(o.name.clone()));
        }
        self.run_chain("tool_call".into(), payload, chain::Then::Tool(Box::new(ModelCall { call, origin, done })));
    }

    /// The chain of a model's call is over: blocked, or the event and then
    /// the tool with the arguments after the chain.
    fn after_tool_chain(&mut self, m: ModelCall, mut payload: Payload, outcome: InterceptOutcome) {
        let ModelCall { call, origin, done } = m;
        if outcome.block {
            let reason = outcome.reason.filter(|r| !r.is_empty()).unwrap_or_else(|| "no reason given".into());
            let content = vec![serde_json::json!({"type": "text", "text": format!("tool call blocked: {reason}")})];
            let reply = ToolReply { content, is_error: true, blocked: Some(reason), ..Default::default() };
            return respond(done, Ok(Response::Tool(reply)));
        }
        let args = payload.remove("tool_args").unwrap_or_else(|| Value::Object(Default::default()));
        let mut ev = Payload::new();
        for k in ["tool_id", "tool_name"] {
            if let Some(v) = payload.get(k) {
                ev.insert(k.into(), v.clone());
            }
        }
        ev.insert("tool_args".into(), args.clone());
        if let Some(o) = payload.get("origin_extension") {
            ev.insert("origin_extension".into(), o.clone());
        }
        self.deliver_event("tool_call", ev);
        if self.registry.tool_owner(&call.name).is_none() {
            if let Some(o) = origin.filter(|_| self.agent_tools.iter().any(|t| t.name == call.name)) {
                return self.call_agent_tool(call, args, o, done);
            }
            return respond(done, Err(HostError::UnknownTool(call.name)));
        }
        self.send_tool(call, args, origin, done);
    }

    fn send_tool(&mut self, call: ToolCall, args: Value, origin: Option<Origin>, done: Responder) {
        let ToolCall { name, tool_id, operation_key, reconcile, .. } = call;
        let Some(slot) = self.registry.tool_owner(&name) else {
            return respond(done, Err(HostError::UnknownTool(name)));
        };
        let interactive = self.exts[slot].tool(&name).is_some_and(|t| t.more.interactive);
        if interactive && !self.cfg.interactive_tools {
            let text = "interactive extension tools require an interactive host";
            let content = vec![serde_json::json!({"type": "text", "text": text})];
            let extension = self.exts[slot].name().to_string();
            return respond(done, Ok(Response::Tool(ToolReply { extension, content, is_error: true, ..Default::default() })));
        }
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        let id = self.next();
        let frame = HostFrame::ToolCall { id: id.to_string(), name: name.clone(), args, operation_key, reconcile };
        let bytes = encode(&frame);
        if bytes.len() > MAX_FRAME_OUT {
            let extension = self.exts[slot].name().to_string();
            let what = format!("a tool_call frame of {} bytes is over the limit of {MAX_FRAME_OUT} bytes", bytes.len());
            return respond(done, Err(HostError::TooLarge { extension, what }));
        }
        if let Err(e) = self.exts[slot].send(Arc::new(bytes)) {
            return respond(done, Err(e));
        }
        let ext = self.exts[slot].id;
        // An interactive tool waits for the user: only cancellation ends it.
        let deadline = after(if interactive { Duration::MAX } else { self.cfg.timeouts.tool });
        let parents = origin.map(|o| o.parents).unwrap_or_default();
        self.calls.insert(id, Call { ext, kind: CallKind::Tool { name, tool_id, done, parents }, deadline });
    }

    /// The payload of an `event` or `event_intercept` frame with its
    /// envelope (PROTOCOL.md §6.4): the agent's `session_id` and `cwd` or
    /// the host's, a strictly increasing `sequence`, and a `tool_result`'s
    /// content bounded as a `call_tool` result is.
    fn enveloped(&mut self, event: &str, mut payload: Payload) -> Payload {
        self.sequence += 1;
        if !payload.get("session_id").is_some_and(Value::is_string) {
            payload.insert("session_id".into(), Value::String(self.session_id.clone()));
        }
        if !payload.get("cwd").is_some_and(Value::is_string) {
            payload.insert("cwd".into(), Value::String(self.cfg.cwd.display().to_string()));
        }
        payload.insert("sequence".into(), Value::from(self.sequence));
        if event == "tool_result" {
            if let Some(Value::Object(result)) = payload.get_mut("result") {
                if let Some(Value::Array(content)) = result.remove("content") {
                    let (content, truncated) = blocks::bound(content);
                    result.insert("content".into(), Value::Array(content));
                    if truncated {
                        result.insert("truncated".into(), Value::Bool(true));
                    }
                }
            }
        }
        payload
    }

    /// Sends `event` to its subscribers; how many it reached.
    fn deliver_event(&mut self, event: &str, payload: Payload) -> usize {
        if !self.exts.iter().any(|e| e.life.running() && e.events.iter().any(|x| x == event)) {
            return 0;
        }
        let payload = self.enveloped(event, payload);
        let bytes = encode(&HostFrame::Event { event: event.to_string(), payload });
        if bytes.len() > MAX_FRAME_OUT {
            for ext in self.exts.iter().filter(|e| e.life.running() && e.events.iter().any(|x| x == event)) {
                ext.log(&format!("event {event} not delivered: {} bytes (limit {MAX_FRAME_OUT} bytes)", bytes.len()));
            }
            return 0;
        }
        let bytes = Arc::new(bytes);
        let mut n = 0;
        for ext in self.exts.iter().filter(|e| e.life.running() && e.events.iter().any(|x| x == event)) {
            match ext.send(bytes.clone()) {
                Ok(()) => n += 1,
                Err(e) => ext.log(&format!("event {event} not delivered: {e}")),
            }
        }
        n
    }

    /// [`Request::CancelTool`]: every tool call in flight started with
    /// `tool_id` is dropped, cancelled at its extension, and failed.
    fn cancel_tool(&mut self, tool_id: &str, done: Responder) {
        let mine = |c: &Call| matches!(&c.kind, CallKind::Tool { tool_id: Some(t), .. } if t == tool_id);
        let ids = self.calls.ids_where(mine);
        if ids.is_empty() {
            return respond(done, Err(HostError::BadRequest(format!("no tool call {tool_id:?} in flight"))));
        }
        for id in ids {
            let Some(call) = self.calls.remove(&id) else { continue };
            let ext = &self.exts[call.ext.slot];
            if let CallKind::Tool { name, done: caller, .. } = call.kind {
                if ext.can("tool_cancel") {
                    ext.log(&format!("tool {name} (request {id}) cancelled by the caller; sending tool_cancel"));
                    let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                } else {
                    ext.log(&format!("tool {name} (request {id}) cancelled by the caller (it takes no tool_cancel)"));
                }
                let extension = ext.name().to_string();
                respond(caller, Err(HostError::Cancelled { extension, what: format!("tool {name}") }));
            }
        }
        respond(done, Ok(Response::Done))
    }
}

/// A model's call waiting for its intercept chain.
pub(super) struct ModelCall {
    call: ToolCall,
    origin: Option<Origin>,
    done: Responder,
}

/// The extension that made a call with `call_tool`, and the names of the
/// tool calls above it (the root first).
pub(super) struct Origin {
    pub name: String,
    pub parents: Vec<String>,
    /// For an agent tool: the `tool_id` of the call it was made inside.
    pub parent_tool_id: Option<String>,
}
