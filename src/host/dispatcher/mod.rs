//! The dispatcher thread: the only owner of the extension table, the
//! command/tool indexes, the calls in flight and every deadline. It never
//! blocks on I/O: frames go out through each child's bounded queue, frames
//! and exits come in through one inbox, and timers are a min-heap that the
//! inbox wait is bounded by. This file holds the loop, loading, ends of
//! processes, timers and requests; [`frames`] the frames from extensions,
//! [`chain`] intercept chains, [`stop`] shutdown and reload, [`calls`] the
//! calls in flight, [`limits`] the per-extension bounds, [`listing`] the
//! listing.

mod calls;
mod chain;
mod frames;
mod limits;
mod listing;
mod stop;

use super::registry::{self, Registry};
use super::*;
use calls::{Call, CallKind, InFlight};
use chain::Chain;
use limits::Bucket;
use crate::child::{describe_status, kill_group, Bytes, Child, ChildMsg, Log, SendError};
use crate::discovery::{discover, Found};
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
pub const INTERCEPTABLE: [&str; 3] = ["tool_call", "turn_start", "assistant_message"];

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

/// How long to wait for a SIGKILLed process to be reaped before giving up.
const REAP_GRACE: Duration = Duration::from_secs(1);

pub(super) enum Inbox {
    Request(Request, Responder),
    Child(u64, ChildMsg),
}

pub(super) fn spawn(
    config: Config,
    tx: Sender<Inbox>,
    rx: Receiver<Inbox>,
    events: Sender<HostEvent>,
) -> Result<JoinHandle<()>, HostError> {
    std::thread::Builder::new()
        .name("zot-dispatcher".into())
        .spawn(move || {
            let mut d = Dispatcher::new(config, tx, events);
            d.load();
            d.run(&rx);
            // Anything still queued gets an answer.
            while let Ok(msg) = rx.try_recv() {
                if let Inbox::Request(_, done) = msg {
                    respond(done, Err(HostError::ShuttingDown));
                }
            }
        })
        .map_err(|e| HostError::Internal(format!("cannot start the dispatcher thread: {e}")))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Hello(u64),
    ReadyIdle(u64),
    LoadGrace(u64),
    LogCheck(u64),
    Eof(u64),
    EofKill(u64),
    Stop(u64, StopStage),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum StopStage {
    Term,
    Kill,
    GiveUp,
}

struct Ext {
    key: u64,
    found: Found,
    state: State,
    hello: bool,
    child: Option<Child>,
    /// The process has not been reaped yet.
    alive: bool,
    /// Commands, tools and subscriptions are in force and calls can be sent.
    live: bool,
    log: Option<Log>,
    commands: Vec<(String, String)>,
    tools: Vec<(String, String, Value)>,
    events: Vec<String>,
    intercepts: Vec<String>,
    error: Option<String>,
    last_frame: Instant,
    stopping: bool,
    stopped: bool,
    announced_exit: bool,
    /// Token bucket for spontaneous frames (notes, submits, panels).
    notes: Bucket,
    /// Registrations refused for being over a limit.
    refused: u64,
}

impl Ext {
    fn name(&self) -> &str {
        &self.found.manifest.name
    }

    fn log(&self, msg: &str) {
        if let Some(l) = &self.log {
            l.line(msg);
        }
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid)
    }

    fn send(&self, bytes: Bytes) -> Result<(), HostError> {
        let name = self.name().to_string();
        if !self.live {
            return Err(HostError::Exited { extension: name, detail: "not running".into() });
        }
        if self.stopping {
            return Err(HostError::Exited { extension: name, detail: "it is being stopped".into() });
        }
        match self.child.as_ref().map(|c| c.send(bytes)) {
            Some(Ok(())) => Ok(()),
            Some(Err(SendError::Full)) => Err(HostError::Busy { extension: name }),
            Some(Err(SendError::Closed)) | None => {
                Err(HostError::Exited { extension: name, detail: "its stdin is closed".into() })
            }
        }
    }
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
    inbox: Sender<Inbox>,
    events: Sender<HostEvent>,
    exts: Vec<Ext>,
    by_key: HashMap<u64, usize>,
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
    /// Calls that arrived during a reload, run once it is over.
    deferred: Vec<(Request, Responder)>,
}

fn respond(done: Responder, r: Result<Response, HostError>) {
    // A responder is the embedder's code; its panic must not stop the host.
    let _ = catch_unwind(AssertUnwindSafe(|| done(r)));
}

impl Dispatcher {
    fn new(cfg: Config, inbox: Sender<Inbox>, events: Sender<HostEvent>) -> Dispatcher {
        let registry = Registry::new(cfg.reserved_commands.clone());
        Dispatcher {
            cfg,
            inbox,
            events,
            exts: Vec::new(),
            by_key: HashMap::new(),
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

    fn emit(&self, e: HostEvent) {
        let _ = self.events.send(e);
    }

    fn run(&mut self, rx: &Receiver<Inbox>) {
        let mut unflushed = 0;
        while self.phase != Phase::Done {
            if rx.is_empty() || unflushed >= FLUSH_EVERY {
                // Out of work for now (or busy for a while): write what was
                // sent to children meanwhile, one write per child
                // (`Child::send` only gathers while nothing is queued).
                for c in self.exts.iter().filter_map(|e| e.child.as_ref()) {
                    c.flush();
                }
                unflushed = 0;
            }
            unflushed += 1;
            let next_timer = self.timers.peek().map(|Reverse((when, _, _))| *when);
            let next = match (next_timer, self.calls.next_deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let msg = match next {
                Some(when) => match rx.recv_deadline(when) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                None => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                },
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
            Inbox::Child(key, m) => {
                let Some(&slot) = self.by_key.get(&key) else { return };
                match m {
                    ChildMsg::Frame(f) => self.on_frame(slot, f),
                    ChildMsg::BadReply { id, error } => self.on_bad_reply(slot, &id, error.to_string()),
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
        self.by_key.clear();
        self.registry.clear();
        let disc = discover(&self.cfg.sources, &self.cfg.cwd, &self.cfg.home);
        for b in &disc.broken {
            let msg = b.error.to_string();
            self.load_errors.push(msg.clone());
            self.emit(HostEvent::LoadFailed { extension: b.label(), message: msg });
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
        let now = Instant::now();
        for found in disc.load {
            let key = self.next();
            self.by_key.insert(key, self.exts.len());
            self.exts.push(Ext {
                key,
                found,
                state: State::Starting,
                hello: false,
                child: None,
                alive: false,
                live: false,
                log: None,
                commands: Vec::new(),
                tools: Vec::new(),
                events: Vec::new(),
                intercepts: Vec::new(),
                error: None,
                last_frame: now,
                stopping: false,
                stopped: false,
                announced_exit: false,
                notes: Bucket::new(self.cfg.limits.notes_burst),
                refused: 0,
            });
        }
        // Every extension is listed as starting before any is started: one
        // that fails at once (exec missing) must not end the load while the
        // later ones are not even in the table yet.
        for slot in 0..self.exts.len() {
            self.start_ext(slot);
        }
        let grace = Instant::now() + self.cfg.timeouts.ready_grace;
        let gen = self.load_gen;
        self.at(grace, Timer::LoadGrace(gen));
        self.at(Instant::now() + LOG_CHECK, Timer::LogCheck(gen));
        self.check_load_done(false);
    }

    fn start_ext(&mut self, slot: usize) {
        let inbox = self.inbox.clone();
        let queue_limit = self.cfg.queue_limit;
        let trace = self.cfg.trace.clone();
        let hello_at = Instant::now() + self.cfg.timeouts.hello;
        let log_path = self.cfg.home.log_path(&self.exts[slot].found.manifest.name);
        let ext = &mut self.exts[slot];
        let key = ext.key;
        let m = &ext.found.manifest;
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
        log.line(&format!("starting {} from {}", m.name, m.dir.display()));
        let spawned = Child::spawn(m, &exec, &log, queue_limit, trace.as_ref(), inbox, move |msg| {
            Inbox::Child(key, msg)
        });
        ext.log = Some(log);
        match spawned {
            Ok(child) => {
                ext.child = Some(child);
                ext.alive = true;
                ext.live = true;
                self.at(hello_at, Timer::Hello(key));
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
        ext.state = State::Failed;
        ext.error = Some(why.clone());
        ext.log(&format!("failed to load: {why}"));
        if let Some(c) = &ext.child {
            c.signal_group(libc::SIGKILL);
        }
        self.load_errors.push(msg);
        self.emit(HostEvent::LoadFailed { extension: name, message: why });
        self.check_load_done(false);
    }

    fn mark_ready(&mut self, slot: usize, how: &str) {
        let ext = &mut self.exts[slot];
        if ext.state == State::Starting && ext.hello {
            ext.state = State::Ready;
            ext.log(&format!("ready ({how})"));
            self.check_load_done(false);
        }
    }

    fn check_load_done(&mut self, grace_over: bool) {
        if self.phase != Phase::Loading {
            return;
        }
        if !grace_over && self.exts.iter().any(|e| e.state == State::Starting) {
            return;
        }
        self.phase = Phase::Running;
        let ready: Vec<String> = self
            .exts
            .iter()
            .filter(|e| e.state == State::Ready)
            .map(|e| e.name().to_string())
            .collect();
        let report = LoadReport {
            loaded: self.exts.len(),
            ready: ready.clone(),
            errors: self.load_errors.clone(),
        };
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
        let ext = &mut self.exts[slot];
        if !ext.live {
            return;
        }
        ext.live = false;
        let extension = ext.name().to_string();
        self.registry.release(slot);
        let ids = self.calls.ids_where(|c| c.slot == slot);
        for id in ids {
            let Some(call) = self.calls.remove(&id) else { continue };
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

    /// Stdout closed. The process usually exits at the same moment; give
    /// its exit status a moment to arrive so the error can name it.
    fn on_eof(&mut self, slot: usize) {
        let ext = &self.exts[slot];
        if ext.stopping || !ext.live {
            return;
        }
        // Before hello nothing can be in flight, so waiting longer for the
        // exit status costs nothing and makes the load error name it.
        let grace = if ext.hello { EOF_GRACE } else { self.cfg.timeouts.term_grace };
        let key = ext.key;
        self.at(Instant::now() + grace, Timer::Eof(key));
    }

    fn on_eof_grace_over(&mut self, slot: usize) {
        let ext = &self.exts[slot];
        if ext.stopping || !ext.live {
            return;
        }
        ext.log("stdout closed while the process runs on");
        let key = ext.key;
        if ext.state == State::Starting && !ext.hello {
            return self.fail(slot, "closed its stdout before saying hello".into());
        }
        self.lose(slot, "closed its stdout");
        let ext = &mut self.exts[slot];
        if ext.state == State::Starting {
            return self.fail(slot, "closed its stdout during start-up".into());
        }
        ext.state = State::Exited;
        let when = Instant::now() + self.cfg.timeouts.term_grace;
        self.at(when, Timer::EofKill(key));
    }

    fn on_exit(&mut self, slot: usize, status: ExitStatus) {
        let ext = &mut self.exts[slot];
        ext.alive = false;
        // Whatever the leader left behind in its group goes with it.
        if let Some(pid) = ext.pid() {
            kill_group(pid, libc::SIGKILL);
        }
        let how = describe_status(status);
        if ext.stopping {
            ext.log(&format!("stopped ({how})"));
            return self.stop_done(slot);
        }
        match ext.state {
            State::Failed => ext.log(&format!("exited ({how})")),
            State::Starting => {
                let why = if ext.hello {
                    format!("exited during start-up ({how})")
                } else {
                    format!("exited before saying hello ({how})")
                };
                self.fail(slot, why);
            }
            State::Ready | State::Exited => {
                ext.log(&format!("exited ({how})"));
                ext.state = State::Exited;
                ext.error = Some(format!("exited ({how})"));
                // The notice goes out before the failed calls it explains.
                if !ext.announced_exit {
                    ext.announced_exit = true;
                    let extension = ext.name().to_string();
                    self.emit(HostEvent::Exited { extension, code: status.code(), signal: status.signal() });
                }
                self.lose(slot, &how);
            }
        }
    }

    // ----- timers ----------------------------------------------------------

    fn on_timer(&mut self, t: Timer, now: Instant) {
        match t {
            Timer::Hello(key) => {
                let Some(&slot) = self.by_key.get(&key) else { return };
                let ext = &self.exts[slot];
                if ext.live && !ext.hello && ext.state == State::Starting {
                    let after = fmt_duration(self.cfg.timeouts.hello);
                    self.fail(slot, format!("no hello within {after}"));
                }
            }
            Timer::ReadyIdle(key) => {
                let Some(&slot) = self.by_key.get(&key) else { return };
                let ext = &self.exts[slot];
                if ext.state != State::Starting || !ext.live {
                    return;
                }
                let due = ext.last_frame + self.cfg.timeouts.ready_idle;
                if due <= now {
                    self.mark_ready(slot, "no ready frame; quiet after the handshake");
                } else {
                    self.at(due, Timer::ReadyIdle(key));
                }
            }
            Timer::LoadGrace(gen) => {
                if gen == self.load_gen {
                    self.check_load_done(true);
                }
            }
            Timer::Eof(key) => {
                if let Some(&slot) = self.by_key.get(&key) {
                    self.on_eof_grace_over(slot);
                }
            }
            Timer::LogCheck(gen) => {
                if gen != self.load_gen || self.phase == Phase::Done {
                    return;
                }
                let max = self.cfg.limits.log_bytes;
                for ext in &self.exts {
                    if let Some(log) = &ext.log {
                        let _ = log.rotate_if_over(max);
                    }
                }
                self.at(now + LOG_CHECK, Timer::LogCheck(gen));
            }
            Timer::EofKill(key) => {
                let Some(&slot) = self.by_key.get(&key) else { return };
                let ext = &self.exts[slot];
                if ext.alive && !ext.stopping {
                    ext.log("still running after closing stdout; killing its process group");
                    if let Some(c) = &ext.child {
                        c.signal_group(libc::SIGKILL);
                    }
                }
            }
            Timer::Stop(key, stage) => self.on_stop_timer(key, stage),
        }
    }

    fn on_call_timeout(&mut self, id: u64) {
        let Some(call) = self.calls.remove(&id) else { return };
        let t = self.cfg.timeouts;
        let ext = &self.exts[call.slot];
        let extension = ext.name().to_string();
        match call.kind {
            CallKind::Command { name, done } => {
                ext.log(&format!("command /{name} (request {id}) timed out after {}", fmt_duration(t.command)));
                let what = format!("command /{name}");
                respond(done, Err(HostError::Timeout { extension, what, after: t.command }));
            }
            CallKind::Tool { name, done, .. } => {
                ext.log(&format!("tool {name} (request {id}) timed out after {}; cancelling", fmt_duration(t.tool)));
                let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                let what = format!("tool {name}");
                respond(done, Err(HostError::Timeout { extension, what, after: t.tool }));
            }
            CallKind::Intercept { chain } => {
                let why = format!("timed out after {}", fmt_duration(t.intercept));
                self.chain_failed(chain, call.slot, &why);
            }
        }
    }

    // ----- requests --------------------------------------------------------

    fn on_request(&mut self, req: Request, done: Responder) {
        if matches!(self.phase, Phase::Stopping { exit: true } | Phase::Done) {
            return respond(done, Err(HostError::ShuttingDown));
        }
        // During a reload the names are about to come back: calls wait for
        // the new load instead of failing as unknown.
        let reloading = matches!(self.phase, Phase::Stopping { exit: false })
            || (self.phase == Phase::Loading && self.last_load.is_some());
        if reloading
            && matches!(
                req,
                Request::Command { .. }
                    | Request::Tool { .. }
                    | Request::Intercept { .. }
                    | Request::Event { .. }
                    | Request::PanelKey { .. }
                    | Request::PanelClose { .. }
            )
        {
            return self.deferred.push((req, done));
        }
        match req {
            Request::WaitReady => match (&self.phase, &self.last_load) {
                (Phase::Running, Some(r)) => respond(done, Ok(Response::Load(r.clone()))),
                _ => self.waiters.push(Waiter::Ready(done)),
            },
            Request::List => respond(done, Ok(Response::List(self.listing()))),
            Request::Command { name, args } => self.start_command(name, args, done),
            Request::Tool { name, args, tool_id } => self.start_tool(name, args, tool_id, done),
            Request::CancelTool { tool_id } => self.cancel_tool(&tool_id, done),
            Request::Intercept { event, payload } => self.start_chain(event, payload, done),
            Request::Event { event, payload } => {
                let bytes = Arc::new(encode(&HostFrame::Event { event: event.clone(), payload }));
                let mut n = 0;
                for ext in self.exts.iter().filter(|e| e.live && !e.stopping && e.events.contains(&event)) {
                    match ext.send(bytes.clone()) {
                        Ok(()) => n += 1,
                        Err(e) => ext.log(&format!("event {event} not delivered: {e}")),
                    }
                }
                respond(done, Ok(Response::Delivered(n)))
            }
            Request::PanelKey { extension, panel_id, key, text } => {
                if !PANEL_KEYS.contains(&key.as_str()) {
                    let msg = format!("unknown key {key:?} (expected one of {})", PANEL_KEYS.join(", "));
                    return respond(done, Err(HostError::BadRequest(msg)));
                }
                let frame = HostFrame::PanelKey { panel_id, key, text };
                respond(done, self.send_to_named(&extension, &frame).map(|()| Response::Done))
            }
            Request::PanelClose { extension, panel_id } => {
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
            return respond(done, Err(HostError::UnknownCommand(name)));
        };
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        let id = self.next();
        let frame = HostFrame::CommandInvoked { id: id.to_string(), name: name.clone(), args: args.trim().to_string() };
        if let Err(e) = self.exts[slot].send(Arc::new(encode(&frame))) {
            return respond(done, Err(e));
        }
        let key = self.exts[slot].key;
        let deadline = Instant::now() + self.cfg.timeouts.command;
        self.calls.insert(id, Call { slot, key, kind: CallKind::Command { name, done }, deadline });
    }

    fn start_tool(&mut self, name: String, args: Option<Value>, tool_id: Option<String>, done: Responder) {
        let args = match args {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return respond(done, Err(HostError::BadRequest("tool args must be a JSON object".into()))),
        };
        let Some(slot) = self.registry.tool_owner(&name) else {
            return respond(done, Err(HostError::UnknownTool(name)));
        };
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        let id = self.next();
        let frame = HostFrame::ToolCall { id: id.to_string(), name: name.clone(), args };
        if let Err(e) = self.exts[slot].send(Arc::new(encode(&frame))) {
            return respond(done, Err(e));
        }
        let key = self.exts[slot].key;
        let deadline = Instant::now() + self.cfg.timeouts.tool;
        self.calls.insert(id, Call { slot, key, kind: CallKind::Tool { name, tool_id, done }, deadline });
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
            let ext = &self.exts[call.slot];
            if let CallKind::Tool { name, done: caller, .. } = call.kind {
                ext.log(&format!("tool {name} (request {id}) cancelled by the caller; sending tool_cancel"));
                let _ = ext.send(Arc::new(encode(&HostFrame::ToolCancel { id: id.to_string() })));
                let extension = ext.name().to_string();
                respond(caller, Err(HostError::Cancelled { extension, what: format!("tool {name}") }));
            }
        }
        respond(done, Ok(Response::Done))
    }
}

fn frame_type(f: &ExtFrame) -> String {
    match serde_json::to_value(f) {
        Ok(Value::Object(m)) => m.get("type").and_then(|t| t.as_str()).unwrap_or("?").to_string(),
        _ => "?".into(),
    }
}
