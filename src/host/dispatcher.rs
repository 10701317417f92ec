//! The dispatcher thread: the only owner of the extension table, the
//! command/tool indexes, the calls in flight and every deadline. It never
//! blocks on I/O: frames go out through each child's bounded queue, frames
//! and exits come in through one inbox, and timers are a min-heap that the
//! inbox wait is bounded by.

use super::registry::{self, Registry};
use super::*;
use crate::child::{describe_status, kill_group, Bytes, Child, ChildMsg, Log, SendError};
use crate::discovery::{discover, Found};
use crate::protocol::{encode, CommandResponse, Panel, ExtFrame, HelloAck, HostFrame, InterceptResponse, ToolResult, PROTOCOL_VERSION};
use crossbeam_channel::RecvTimeoutError;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
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

/// A token bucket: `burst` at once, then `rate` per second.
struct Bucket {
    tokens: f64,
    at: Instant,
    dropped: u64,
}

impl Bucket {
    fn new(burst: u32) -> Bucket {
        Bucket { tokens: f64::from(burst), at: Instant::now(), dropped: 0 }
    }

    fn take(&mut self, limits: &Limits) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.at).as_secs_f64() * f64::from(limits.notes_per_sec);
        self.tokens = (self.tokens + refill).min(f64::from(limits.notes_burst));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
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
        match self.child.as_ref().map(|c| c.send(bytes)) {
            Some(Ok(())) => Ok(()),
            Some(Err(SendError::Full)) => Err(HostError::Busy { extension: name }),
            Some(Err(SendError::Closed)) | None => {
                Err(HostError::Exited { extension: name, detail: "its stdin is closed".into() })
            }
        }
    }
}

enum CallKind {
    Command { name: String, done: Responder },
    Tool { name: String, tool_id: Option<String>, done: Responder },
    Intercept { chain: u64 },
}

struct Call {
    slot: usize,
    key: u64,
    kind: CallKind,
    deadline: Instant,
}

/// The calls in flight, by correlation id, with their deadlines in order.
/// A call's deadline leaves with the call, so a busy host holds nothing
/// for calls already answered.
#[derive(Default)]
struct InFlight {
    calls: HashMap<u64, Call>,
    deadlines: BTreeSet<(Instant, u64)>,
    per_slot: HashMap<usize, usize>,
}

impl InFlight {
    fn insert(&mut self, id: u64, call: Call) {
        self.deadlines.insert((call.deadline, id));
        *self.per_slot.entry(call.slot).or_default() += 1;
        self.calls.insert(id, call);
    }

    fn remove(&mut self, id: &u64) -> Option<Call> {
        let call = self.calls.remove(id)?;
        self.deadlines.remove(&(call.deadline, *id));
        if let Some(n) = self.per_slot.get_mut(&call.slot) {
            *n -= 1;
            if *n == 0 {
                self.per_slot.remove(&call.slot);
            }
        }
        Some(call)
    }

    fn get(&self, id: &u64) -> Option<&Call> {
        self.calls.get(id)
    }

    fn count(&self, slot: usize) -> usize {
        self.per_slot.get(&slot).copied().unwrap_or(0)
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(t, _)| *t)
    }

    /// The id of a call whose deadline is at or before `now`.
    fn expired(&self, now: Instant) -> Option<u64> {
        self.deadlines.first().filter(|(t, _)| *t <= now).map(|(_, id)| *id)
    }

    fn ids_for(&self, slot: usize) -> Vec<u64> {
        self.calls.iter().filter(|(_, c)| c.slot == slot).map(|(id, _)| *id).collect()
    }
}

struct Chain {
    event: String,
    payload: Payload,
    order: Vec<usize>,
    pos: usize,
    args_changed: bool,
    text_changed: bool,
    done: Option<Responder>,
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
        if !self.reload_after_load.is_empty() {
            for d in std::mem::take(&mut self.reload_after_load) {
                self.waiters.push(Waiter::Reload(d));
            }
            self.begin_stop_all(false);
        }
    }

    // ----- frames from extensions ----------------------------------------

    fn on_frame(&mut self, slot: usize, frame: ExtFrame) {
        let ext = &mut self.exts[slot];
        if !ext.live {
            if ext.stopping && frame == ExtFrame::ShutdownAck {
                ext.log("shutdown acknowledged");
            }
            return;
        }
        ext.last_frame = Instant::now();
        if !ext.hello {
            let ExtFrame::Hello { name, .. } = frame else {
                let why = format!("first frame was {:?}, expected \"hello\"", frame_type(&frame));
                return self.fail(slot, why);
            };
            ext.hello = true;
            if name != ext.name() {
                ext.log(&format!(
                    "hello names {name:?} but the manifest says {:?}; using the manifest's",
                    ext.name()
                ));
            }
            let m = &ext.found.manifest;
            let dir = m.dir.display().to_string();
            let ack = HostFrame::HelloAck(HelloAck {
                protocol_version: PROTOCOL_VERSION,
                zot_version: self.cfg.zot_version.clone(),
                provider: self.cfg.provider.clone(),
                model: self.cfg.model.clone(),
                cwd: self.cfg.cwd.display().to_string(),
                extension_dir: dir.clone(),
                data_dir: dir,
            });
            if let Err(e) = ext.send(Arc::new(encode(&ack))) {
                return self.fail(slot, format!("cannot send hello_ack: {e}"));
            }
            let (key, when) = (ext.key, ext.last_frame + self.cfg.timeouts.ready_idle);
            self.at(when, Timer::ReadyIdle(key));
            return;
        }
        match frame {
            ExtFrame::Hello { .. } => ext.log("ignored a second hello"),
            ExtFrame::RegisterCommand { name, description } => self.register_command(slot, name, description),
            ExtFrame::RegisterTool { name, description, schema } => {
                self.register_tool(slot, name, description, schema)
            }
            ExtFrame::Subscribe { events, intercept } => self.subscribe(slot, events, intercept),
            ExtFrame::Ready => self.mark_ready(slot, "ready frame"),
            ExtFrame::CommandResponse(r) => self.on_command_response(slot, r),
            ExtFrame::ToolResult(r) => self.on_tool_result(slot, r),
            ExtFrame::EventInterceptResponse(r) => self.on_intercept_response(slot, r),
            ExtFrame::Notify { .. }
            | ExtFrame::ClearNotes
            | ExtFrame::OpenPanel { .. }
            | ExtFrame::PanelRender { .. }
            | ExtFrame::PanelClose { .. }
            | ExtFrame::Submit { .. } => self.spontaneous(slot, frame),
            ExtFrame::ShutdownAck => ext.log("shutdown acknowledged"),
            ExtFrame::Unknown => {}
        }
    }

    /// Forwards a frame the extension sent of its own accord, within its
    /// rate; what is over the rate is dropped and counted.
    fn spontaneous(&mut self, slot: usize, frame: ExtFrame) {
        let limits = self.cfg.limits;
        let ext = &mut self.exts[slot];
        if !ext.notes.take(&limits) {
            if ext.notes.dropped == 1 {
                ext.log(&format!(
                    "over {} notes/s (burst {}): dropping notes, panels and submits until the rate falls",
                    limits.notes_per_sec, limits.notes_burst
                ));
            }
            return;
        }
        let extension = ext.name().to_string();
        if ext.notes.dropped > 0 {
            let n = std::mem::take(&mut ext.notes.dropped);
            ext.log(&format!("dropped {n} notes, panels and submits over the rate limit"));
            let message = format!("zot: dropped {n} notes from this extension (over {} per second)", limits.notes_per_sec);
            self.emit(HostEvent::Notify { extension: extension.clone(), level: "warn".into(), message });
        }
        let t = limits.text_bytes;
        let ev = match frame {
            ExtFrame::Notify { level, message } => HostEvent::Notify { extension, level: cut(level, t), message },
            ExtFrame::ClearNotes => HostEvent::ClearNotes { extension },
            ExtFrame::OpenPanel { panel } => HostEvent::OpenPanel { extension, panel: trim_panel(panel, &limits) },
            ExtFrame::PanelRender { panel_id, title, lines, footer } => {
                let p = trim_panel(Panel { id: panel_id, title, lines, footer }, &limits);
                HostEvent::PanelRender { extension, panel_id: p.id, title: p.title, lines: p.lines, footer: p.footer }
            }
            ExtFrame::PanelClose { panel_id } => HostEvent::PanelClose { extension, panel_id: cut(panel_id, t) },
            ExtFrame::Submit { text } => HostEvent::Submit { extension, text },
            _ => return,
        };
        self.emit(ev);
    }

    /// Refuses a registration over a limit: logged the first time, counted
    /// always, and the embedding program is told once.
    fn refuse(&mut self, slot: usize, what: String) {
        let ext = &mut self.exts[slot];
        ext.refused += 1;
        if ext.refused == 1 {
            ext.log(&format!("refused {what}; further refusals are counted, not logged"));
            let extension = ext.name().to_string();
            let message = format!("zot: refused {what}");
            self.emit(HostEvent::Notify { extension, level: "warn".into(), message });
        }
    }

    fn register_command(&mut self, slot: usize, name: String, description: String) {
        let limits = self.cfg.limits;
        let ext = &mut self.exts[slot];
        if name.is_empty() {
            return ext.log("refused register_command with an empty name");
        }
        if name.len() > limits.name_bytes {
            return self.refuse(slot, format!("a command name of {} bytes (limit {})", name.len(), limits.name_bytes));
        }
        let description = cut(description, limits.text_bytes);
        let full = ext.commands.len() >= limits.commands;
        match ext.commands.iter_mut().find(|(n, _)| *n == name) {
            Some(c) => c.1 = description,
            None if full => {
                return self.refuse(slot, format!("command /{name}: over {} commands", limits.commands));
            }
            None => ext.commands.push((name.clone(), description)),
        }
        let msgs = self.registry.claim_command(&name, slot);
        self.log_claims(msgs);
    }

    fn register_tool(&mut self, slot: usize, name: String, description: String, schema: Value) {
        let limits = self.cfg.limits;
        let ext = &mut self.exts[slot];
        if name.is_empty() {
            return ext.log("refused register_tool with an empty name");
        }
        if !schema.is_object() {
            return ext.log(&format!("refused tool {name:?}: its schema is not a JSON object"));
        }
        if name.len() > limits.name_bytes {
            return self.refuse(slot, format!("a tool name of {} bytes (limit {})", name.len(), limits.name_bytes));
        }
        let size = serde_json::to_vec(&schema).map_or(usize::MAX, |v| v.len());
        if size > limits.schema_bytes {
            return self.refuse(slot, format!("tool {name:?}: a schema of {size} bytes (limit {})", limits.schema_bytes));
        }
        let description = cut(description, limits.text_bytes);
        let full = ext.tools.len() >= limits.tools;
        match ext.tools.iter_mut().find(|(n, _, _)| *n == name) {
            Some(t) => (t.1, t.2) = (description, schema),
            None if full => {
                return self.refuse(slot, format!("tool {name:?}: over {} tools", limits.tools));
            }
            None => ext.tools.push((name.clone(), description, schema)),
        }
        let msgs = self.registry.claim_tool(&name, slot);
        self.log_claims(msgs);
    }

    /// Writes shadowing news into the log of the extension that lost.
    fn log_claims(&self, shadowed: Option<registry::Shadowed>) {
        let Some(s) = shadowed else { return };
        let text = match s.by.and_then(|w| self.exts.get(w)) {
            Some(w) => format!("{} is shadowed by extension {:?} (earlier in load order)", s.what, w.name()),
            None => format!("{} is shadowed by a host built-in", s.what),
        };
        self.exts[s.slot].log(&text);
    }

    fn subscribe(&mut self, slot: usize, events: Vec<String>, intercept: Vec<String>) {
        let limits = self.cfg.limits;
        let mut over = 0;
        let ext = &mut self.exts[slot];
        for e in events {
            if e.is_empty() || e.len() > limits.name_bytes || ext.events.contains(&e) {
                continue;
            }
            if ext.events.len() + ext.intercepts.len() >= limits.subscriptions {
                over += 1;
            } else {
                ext.events.push(e);
            }
        }
        if over > 0 {
            self.refuse(slot, format!("{over} event subscriptions: over {} subscriptions", limits.subscriptions));
        }
        let ext = &mut self.exts[slot];
        for e in intercept {
            if !INTERCEPTABLE.contains(&e.as_str()) {
                ext.log(&format!("ignored intercept {e:?}: only tool_call, turn_start and assistant_message can be intercepted"));
            } else if !ext.intercepts.contains(&e) {
                ext.intercepts.push(e);
            }
        }
    }

    /// Takes the call `id` if it was sent to the extension in `slot`.
    fn take_call(&mut self, slot: usize, id: &str, frame: &str) -> Option<Call> {
        let key = self.exts[slot].key;
        let found = id.parse::<u64>().ok().filter(|n| self.calls.get(n).is_some_and(|c| c.key == key));
        let Some(n) = found else {
            self.exts[slot].log(&format!("dropped {frame} for unknown request id {id:?}"));
            return None;
        };
        let matches = matches!(
            (self.calls.get(&n).map(|c| &c.kind), frame),
            (Some(CallKind::Command { .. }), "command_response")
                | (Some(CallKind::Tool { .. }), "tool_result")
                | (Some(CallKind::Intercept { .. }), "event_intercept_response")
        );
        if !matches {
            self.exts[slot].log(&format!("dropped {frame} for request {id}, which is not a {frame} request"));
            return None;
        }
        self.calls.remove(&n)
    }

    fn on_command_response(&mut self, slot: usize, r: CommandResponse) {
        let Some(call) = self.take_call(slot, &r.id, "command_response") else { return };
        if let CallKind::Command { done, .. } = call.kind {
            let action = if r.action.is_empty() { "noop".to_string() } else { r.action };
            let reply = CommandReply {
                extension: self.exts[slot].name().to_string(),
                action,
                prompt: r.prompt,
                insert: r.insert,
                display: r.display,
                open_panel: r.open_panel.map(|p| trim_panel(p, &self.cfg.limits)),
                error: r.error.filter(|e| !e.is_empty()),
            };
            respond(done, Ok(Response::Command(reply)));
        }
    }

    fn on_tool_result(&mut self, slot: usize, r: ToolResult) {
        let Some(call) = self.take_call(slot, &r.id, "tool_result") else { return };
        if let CallKind::Tool { done, .. } = call.kind {
            let reply = ToolReply {
                extension: self.exts[slot].name().to_string(),
                content: r.content,
                is_error: r.is_error,
            };
            respond(done, Ok(Response::Tool(reply)));
        }
    }

    fn on_bad_reply(&mut self, slot: usize, id: &str, error: String) {
        let Some(n) = id.parse::<u64>().ok() else { return };
        let key = self.exts[slot].key;
        if self.calls.get(&n).is_none_or(|c| c.key != key) {
            return self.exts[slot].log(&format!("dropped a malformed reply for unknown request id {id:?}"));
        }
        let Some(call) = self.calls.remove(&n) else { return };
        let extension = self.exts[slot].name().to_string();
        let msg = format!("malformed reply from extension {extension:?}: {error}");
        match call.kind {
            CallKind::Command { done, .. } => {
                let reply = CommandReply {
                    extension,
                    action: "noop".into(),
                    prompt: None,
                    insert: None,
                    display: None,
                    open_panel: None,
                    error: Some(msg),
                };
                respond(done, Ok(Response::Command(reply)));
            }
            CallKind::Tool { done, .. } => {
                let content = vec![serde_json::json!({"type": "text", "text": msg})];
                respond(done, Ok(Response::Tool(ToolReply { extension, content, is_error: true })));
            }
            CallKind::Intercept { chain } => self.chain_failed(chain, slot, "sent a malformed reply"),
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
        let ids = self.calls.ids_for(slot);
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
                for ext in self.exts.iter().filter(|e| e.live && e.events.contains(&event)) {
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
        let ids: Vec<u64> = self.calls.calls.iter().filter(|(_, c)| mine(c)).map(|(id, _)| *id).collect();
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

    // ----- intercept chains -------------------------------------------------

    fn start_chain(&mut self, event: String, payload: Payload, done: Responder) {
        if !INTERCEPTABLE.contains(&event.as_str()) {
            let msg = format!("event {event:?} cannot be intercepted (tool_call, turn_start, assistant_message)");
            return respond(done, Err(HostError::BadRequest(msg)));
        }
        let order: Vec<usize> = (0..self.exts.len())
            .filter(|&s| self.exts[s].live && self.exts[s].intercepts.contains(&event))
            .collect();
        let id = self.next();
        let chain = Chain { event, payload, order, pos: 0, args_changed: false, text_changed: false, done: Some(done) };
        self.chains.insert(id, chain);
        self.step_chain(id);
    }

    /// Asks the next interceptor in the chain, or finishes it.
    fn step_chain(&mut self, id: u64) {
        loop {
            let Some(chain) = self.chains.get_mut(&id) else { return };
            let Some(&slot) = chain.order.get(chain.pos) else {
                let outcome = InterceptOutcome {
                    block: false,
                    reason: None,
                    modified_args: chain.args_changed.then(|| chain.payload.get("tool_args").cloned()).flatten(),
                    replace_text: chain
                        .text_changed
                        .then(|| chain.payload.get("text").and_then(|t| t.as_str().map(str::to_owned)))
                        .flatten(),
                };
                return self.finish_chain(id, outcome);
            };
            chain.pos += 1;
            let ext = &self.exts[slot];
            if !ext.live || !ext.intercepts.contains(&chain.event) {
                continue;
            }
            let call_id = self.next_id;
            self.next_id += 1;
            let frame = HostFrame::EventIntercept {
                id: call_id.to_string(),
                event: chain.event.clone(),
                payload: chain.payload.clone(),
            };
            match self.has_room(slot).and_then(|()| ext.send(Arc::new(encode(&frame)))) {
                Ok(()) => {
                    let key = ext.key;
                    let deadline = Instant::now() + self.cfg.timeouts.intercept;
                    let call = Call { slot, key, kind: CallKind::Intercept { chain: id }, deadline };
                    self.calls.insert(call_id, call);
                    return;
                }
                Err(e) => {
                    if self.interceptor_failed(id, slot, &e.to_string()) {
                        return;
                    }
                }
            }
        }
    }

    /// Records an interceptor's failure. Returns true when the chain is over
    /// (fail-closed blocks).
    fn interceptor_failed(&mut self, id: u64, slot: usize, why: &str) -> bool {
        let ext = &self.exts[slot];
        let event = self.chains.get(&id).map(|c| c.event.clone()).unwrap_or_default();
        ext.log(&format!("intercept of {event} failed: {why}"));
        if self.cfg.fail_closed {
            let reason = format!("intercept by extension {:?} failed ({why}); blocking (fail-closed)", ext.name());
            self.finish_chain(id, InterceptOutcome { block: true, reason: Some(reason), ..Default::default() });
            return true;
        }
        false
    }

    fn chain_failed(&mut self, id: u64, slot: usize, why: &str) {
        if !self.interceptor_failed(id, slot, why) {
            self.step_chain(id);
        }
    }

    fn on_intercept_response(&mut self, slot: usize, r: InterceptResponse) {
        let Some(call) = self.take_call(slot, &r.id, "event_intercept_response") else { return };
        let CallKind::Intercept { chain: id } = call.kind else { return };
        let name = self.exts[slot].name().to_string();
        let Some(chain) = self.chains.get_mut(&id) else { return };
        if r.block {
            let reason = if r.reason.is_empty() { format!("blocked by extension {name:?}") } else { r.reason };
            return self.finish_chain(id, InterceptOutcome { block: true, reason: Some(reason), ..Default::default() });
        }
        // Arguments can only be rewritten for a tool call, text only replaced
        // for an assistant message; anything else is ignored.
        match (chain.event.as_str(), r.modified_args, r.replace_text) {
            ("tool_call", Some(args @ Value::Object(_)), _) => {
                chain.payload.insert("tool_args".into(), args);
                chain.args_changed = true;
            }
            ("assistant_message", _, Some(text)) => {
                chain.payload.insert("text".into(), Value::String(text));
                chain.text_changed = true;
            }
            _ => {}
        }
        self.step_chain(id);
    }

    fn finish_chain(&mut self, id: u64, outcome: InterceptOutcome) {
        if let Some(done) = self.chains.remove(&id).and_then(|mut c| c.done.take()) {
            respond(done, Ok(Response::Intercept(outcome)));
        }
    }

    // ----- stopping ----------------------------------------------------------

    fn begin_stop_all(&mut self, exit: bool) {
        self.phase = Phase::Stopping { exit };
        self.stopped_count = 0;
        let shutdown = Arc::new(encode(&HostFrame::Shutdown));
        let when = Instant::now() + self.cfg.timeouts.shutdown_grace;
        for slot in 0..self.exts.len() {
            let detail = if exit { "the host is shutting down" } else { "stopped for reload" };
            self.lose(slot, detail);
            let ext = &mut self.exts[slot];
            ext.stopping = true;
            if ext.child.is_some() {
                self.stopped_count += 1;
            }
            match (&ext.child, ext.alive) {
                (Some(c), true) => {
                    let _ = c.send(shutdown.clone());
                    c.close_stdin();
                    let key = ext.key;
                    self.at(when, Timer::Stop(key, StopStage::Term));
                }
                (Some(c), false) => {
                    c.signal_group(libc::SIGKILL);
                    ext.stopped = true;
                }
                (None, _) => ext.stopped = true,
            }
        }
        self.check_stopped();
    }

    fn on_stop_timer(&mut self, key: u64, stage: StopStage) {
        let Some(&slot) = self.by_key.get(&key) else { return };
        let t = self.cfg.timeouts;
        let ext = &self.exts[slot];
        if ext.stopped {
            return;
        }
        let Some(child) = &ext.child else { return };
        let next = match stage {
            StopStage::Term => {
                ext.log(&format!("no exit {} after shutdown; sending SIGTERM to its process group", fmt_duration(t.shutdown_grace)));
                child.signal_group(libc::SIGTERM);
                Some((t.term_grace, StopStage::Kill))
            }
            StopStage::Kill => {
                ext.log(&format!("no exit {} after SIGTERM; sending SIGKILL to its process group", fmt_duration(t.term_grace)));
                child.signal_group(libc::SIGKILL);
                Some((REAP_GRACE, StopStage::GiveUp))
            }
            StopStage::GiveUp => {
                ext.log("not reaped after SIGKILL; giving up on it");
                None
            }
        };
        match next {
            Some((after, stage)) => self.at(Instant::now() + after, Timer::Stop(key, stage)),
            None => self.stop_done(slot),
        }
    }

    fn stop_done(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        if ext.stopped {
            return;
        }
        ext.stopped = true;
        if ext.state != State::Failed {
            ext.state = State::Exited;
        }
        self.check_stopped();
    }

    fn check_stopped(&mut self) {
        let Phase::Stopping { exit } = self.phase else { return };
        if self.exts.iter().any(|e| !e.stopped) {
            return;
        }
        if exit {
            self.phase = Phase::Done;
            for done in std::mem::take(&mut self.exit_waiters) {
                respond(done, Ok(Response::Done));
            }
        } else {
            self.load();
        }
    }

    // ----- listing -------------------------------------------------------------

    fn listing(&self) -> Listing {
        let mut out = Listing::default();
        for (slot, e) in self.exts.iter().enumerate() {
            let m = &e.found.manifest;
            let owns_cmd = |n: &str| self.registry.command_owner(n) == Some(slot);
            let owns_tool = |n: &str| self.registry.tool_owner(n) == Some(slot);
            for (n, d) in &e.commands {
                if owns_cmd(n) {
                    out.commands.push(CommandInfo { name: n.clone(), description: d.clone(), extension: m.name.clone() });
                }
            }
            for (n, d, s) in &e.tools {
                if owns_tool(n) {
                    out.tools.push(ToolInfo {
                        name: n.clone(),
                        description: d.clone(),
                        schema: s.clone(),
                        extension: m.name.clone(),
                    });
                }
            }
            out.extensions.push(ExtInfo {
                name: m.name.clone(),
                version: m.version.clone(),
                dir: m.dir.display().to_string(),
                source: e.found.source.as_str(),
                state: e.state,
                pid: if e.alive { e.pid() } else { None },
                commands: e.commands.iter().map(|c| c.0.clone()).collect(),
                tools: e.tools.iter().map(|t| t.0.clone()).collect(),
                events: e.events.clone(),
                intercepts: e.intercepts.clone(),
                error: e.error.clone(),
                shadowed_commands: if e.live {
                    e.commands.iter().filter(|c| !owns_cmd(&c.0)).map(|c| c.0.clone()).collect()
                } else {
                    Vec::new()
                },
                shadowed_tools: if e.live {
                    e.tools.iter().filter(|t| !owns_tool(&t.0)).map(|t| t.0.clone()).collect()
                } else {
                    Vec::new()
                },
            });
        }
        out
    }
}

fn frame_type(f: &ExtFrame) -> String {
    match serde_json::to_value(f) {
        Ok(Value::Object(m)) => m.get("type").and_then(|t| t.as_str()).unwrap_or("?").to_string(),
        _ => "?".into(),
    }
}

/// `s` cut to at most `max` bytes, at a character boundary, with an
/// ellipsis when something was cut.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max.saturating_sub(3);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// A panel within the limits: at most `panel_lines` lines, each text cut.
fn trim_panel(p: Panel, limits: &Limits) -> Panel {
    let t = limits.text_bytes;
    Panel {
        id: cut(p.id, t),
        title: cut(p.title, t),
        lines: p.lines.into_iter().take(limits.panel_lines).map(|l| cut(l, t)).collect(),
        footer: cut(p.footer, t),
    }
}
