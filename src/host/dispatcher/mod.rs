//! The dispatcher thread: the only owner of the extension table, the
//! command/tool indexes, the calls in flight and every deadline. It never
//! blocks on I/O: frames go out through each child's bounded queue, frames
//! and exits come in through one inbox, and timers are a min-heap that the
//! inbox wait is bounded by. This file holds the thread, its loop (which
//! hands each inbox message to its handler), loading, and the confinement
//! of a start.
//!
//! The folder reads top-down as a call travels: a request comes in
//! ([`requests`], or a frame from an extension, [`frames`]), the table
//! says where the call is ([`table`]), a rule decides (an intercept chain,
//! [`chain`]; a call in flight, [`calls`]; an ending, [`ending`]), and a
//! frame goes out through the extension's queue ([`ext`]). Each file uses
//! only the ones below it:
//!
//! - the handlers, one `impl Dispatcher` each, for one kind of event:
//!   [`intercept`] running chains, [`requests`] the embedder's requests,
//!   [`frames`] the frames from extensions, [`call_tool`] tools called by
//!   extensions, [`timers`] deadlines, [`ends`] the end of a process,
//!   [`starting`] calls for a name a starting server may bring,
//!   [`ending`] how a call ends without its answer, [`mcp`] what only
//!   MCP servers do (their start, live tool lists, progress), [`resources`]
//!   their resources (lists, listing, reads), [`restart`]
//!   supervision, [`stop`] shutdown and reload, [`listing`] the listing,
//!   [`lifecycle`] the end of a model's call;
//! - [`state`]: the `Dispatcher` itself, the state those handlers share;
//! - what it holds, each type with its rules and unit tests: [`load`] (the
//!   phase, loads and reloads, who waits for them), [`hooks`] (the
//!   embedder's sink and idle hook), [`ext_calls`] (extensions'
//!   `call_tool`s under way), [`envelope`] (events' session id and
//!   sequence), [`clock`] (timers and ids), [`table`] (every call at its
//!   stage), [`chain`] (an intercept chain's state and rules), [`calls`]
//!   (the calls in flight), [`blocks`] (result content);
//! - at the bottom, what every file shares: [`base`] (the inbox's
//!   messages, the timers, a model's call and its origin, the protocol's
//!   fixed lists, `respond` and `after`), [`stop_stage`] (the stages of a
//!   stop), [`ext`] (one extension and its lifecycle), [`supervisor`]
//!   (restarts), [`limits`] (the per-extension bounds).
//!
//! The names are in [`super::registry`], beside the dispatcher.

mod intercept;
mod requests;
mod frames;
mod call_tool;
mod timers;
mod ends;
mod starting;
mod ending;
mod mcp;
mod resources;
mod restart;
mod stop;
mod listing;
mod lifecycle;
mod state;
mod load;
mod hooks;
mod ext_calls;
mod envelope;
mod clock;
mod table;
mod chain;
mod calls;
mod blocks;
mod base;
mod stop_stage;
mod ext;
mod supervisor;
mod limits;

use super::registry::{self, Registry};
use crate::host::{Config, EventSink, HostError, HostEvent, IdleHook};
use std::thread::JoinHandle;
use calls::{Call, CallKind};
use table::CallTable;
use ext::{Ext, ExtId, Life, Proc};
use clock::Clock;
use envelope::Envelope;
use ext_calls::ExtCalls;
use hooks::Hooks;
use limits::Bucket;
use load::{Load, Phase};
pub(super) use base::Inbox;
use base::{after, respond, ModelCall, Origin, Timer, COMMAND_ACTIONS, EOF_GRACE, HOST_CAPABILITIES, INTERCEPTABLE, MAX_FRAME_OUT, MAX_SYSTEM_PROMPT, NOTIFY_LEVELS, PANEL_KEYS};
use state::Dispatcher;
use stop_stage::StopStage;
use crate::child::{Child, ChildMsg, Log};
use crate::discovery::discover_with;
use crate::protocol::HostFrame;
use crossbeam_channel::RecvTimeoutError;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// Inbox messages handled at most before frames gathered for children are
/// written even though more messages wait: a busy inbox (a chatty
/// extension) must not hold back another extension's call.
const FLUSH_EVERY: u32 = 64;

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
            // No orphan of an extension outlives the host.
            crate::child::settle_orphans();
            d.hooks.idle();
            crate::log::flush();
        })
        .map_err(|e| HostError::Internal(format!("cannot start the dispatcher thread: {e}")))
}

/// One start as confinement makes it (docs/protocol.md §9): its plan (data
/// folder, `${TMP}`), its environment (the host's additions, then the
/// manifest's `env` with the placeholders expanded), its arguments with
/// the placeholders expanded, and its jail.
struct Confined {
    plan: crate::confine::Plan,
    env: Vec<(String, String)>,
    args: Vec<String>,
    jail: Option<crate::confine::Jail>,
}

fn confine_start(found: &crate::discovery::Found, cfg: &Config, exec: &std::path::Path, log: &Log) -> Result<Confined, String> {
    let m = &found.manifest;
    let project_local = found.source == crate::discovery::Source::Project;
    let project_id = project_local.then(|| crate::trust::project_id(&cfg.cwd));
    let who = crate::confine::Who {
        name: &m.name,
        dir: &m.dir,
        declared: m.confine.as_ref(),
        project_local,
        project_id: project_id.as_deref(),
        is_server: found.mcp.is_some(),
        uses: crate::confine::placeholders_in(&m.args, &m.env),
    };
    let plan = crate::confine::Plan::new(&who, cfg.confine, cfg.home.root(), &cfg.cwd)?;
    if let Some(note) = &plan.data_note {
        log.line(note);
    }
    let mut env = plan.env();
    // A server's unset variable names its file and field.
    let expand_err = |e: crate::envexpand::ExpandError| match &e {
        // Unset only to it: said as what it is, with the fix.
        crate::envexpand::ExpandError::Unset { key, var } if plan.withholds(var) => format!(
            "env {key}: ${{{var}}} is a variable of your environment that its confine.env does not pass on (name \"{var}\" in confine.env to hand it over)"
        ),
        _ => found.mcp.as_ref().map_or_else(|| e.to_string(), |s| s.env_error(&e)),
    };
    env.extend(crate::envexpand::expand_all(m.env(), |n| plan.lookup(n)).map_err(expand_err)?);
    // A client file's `args`, `command` and `cwd` were expanded when it was
    // read: a variable withheld from this start stops it as in `env`.
    if let Some(var) = found.mcp.as_ref().and_then(|s| s.expanded_vars.iter().find(|v| plan.withholds(v))) {
        return Err(format!(
            "${{{var}}} in its args, command or cwd is a variable of your environment that its confine.env does not pass on (name \"{var}\" in confine.env to hand it over)"
        ));
    }
    let args = plan.args(&m.args);
    let jail = plan.jail(exec, &args, &crate::child::child_env("", &env), &mut |l| log.line(l))?;
    if project_local && !cfg.trust_project {
        if let (Some(j), Some(d)) = (&jail, &plan.rules) {
            as_trusted(cfg, &m.name, d, j)?;
        }
    }
    Ok(Confined { plan, env, args, jail })
}

/// A project's confined start runs only with the grants `zot trust`
/// showed: its line is made again from the grants this start resolved (the
/// descriptors the kernel is handed), so a link swapped after the trust
/// check and before this resolution is caught here, not granted
/// (docs/protocol.md §9.1). Under another `--confine` mode than the one it
/// was trusted under, the trust check itself stands.
fn as_trusted(cfg: &Config, name: &str, d: &crate::confine::Declared, jail: &crate::confine::Jail) -> Result<(), String> {
    let Some((mode, recorded)) = crate::trust::recorded_lines(&cfg.home, &cfg.cwd, name) else { return Ok(()) };
    if mode != cfg.confine.as_str() {
        return Ok(());
    }
    let now = crate::confine::trust_line_of(name, d, &jail.report);
    if recorded.contains(&now) {
        return Ok(());
    }
    let dir = cfg.cwd.display();
    let was = recorded.iter().map(|l| format!("{:?}", l.trim())).collect::<Vec<_>>().join(" or ");
    Err(format!(
        "not started: what it may reach changed since the project was trusted: it was shown as {was}, it now resolves to {:?} (zot trust {dir} shows it again)",
        now.trim()
    ))
}

thread_local! {
    static DISPATCHER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is the dispatcher thread, where a blocking host call would
/// wait for itself.
pub(super) fn on_dispatcher_thread() -> bool {
    DISPATCHER.with(|d| d.get())
}

impl Dispatcher {
    fn new(cfg: Config, inbox: crate::wake::Tx<Inbox>, sink: EventSink, idle: IdleHook) -> Dispatcher {
        let registry = Registry::new(cfg.reserved_commands.clone());
        let envelope = Envelope::new(&cfg.cwd);
        let queue = crate::child::QueueBounds {
            frames: cfg.queue_limit,
            bytes: cfg.queue_bytes,
            shared: crate::child::Budget::new(cfg.queue_budget),
        };
        Dispatcher {
            queue,
            cfg,
            inbox,
            hooks: Hooks::new(sink, idle),
            exts: Vec::new(),
            registry,
            table: CallTable::default(),
            clock: Clock::new(),
            load: Load::new(),
            ext_calls: ExtCalls::default(),
            unreaped: HashMap::new(),
            envelope,
        }
    }

    fn next(&mut self) -> u64 {
        self.clock.next()
    }

    fn at(&mut self, when: Instant, t: Timer) {
        self.clock.at(when, t);
    }

    fn emit(&self, e: HostEvent) {
        self.hooks.emit(e);
    }

    /// The slot of extension `id`, if it is still of this load.
    fn slot_of(&self, id: ExtId) -> Option<usize> {
        self.exts.get(id.slot).filter(|e| e.id == id).map(|_| id.slot)
    }

    fn run(&mut self, rx: &crate::wake::Rx<Inbox>) {
        let mut unflushed = 0;
        while self.load.phase != Phase::Done {
            if rx.is_empty() || unflushed >= FLUSH_EVERY {
                // Out of work for now (or busy for a while): write what was
                // sent to children meanwhile, one write per child
                // (`Child::send` only gathers while nothing is queued).
                for c in self.exts.iter().filter_map(|e| e.child()) {
                    c.flush();
                }
                self.hooks.idle();
                unflushed = 0;
            }
            unflushed += 1;
            let next_timer = self.clock.next_due();
            let next = match (next_timer, self.table.sent.next_deadline()) {
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
        while let Some(id) = self.table.sent.expired(now) {
            self.on_call_timeout(id);
        }
        while let Some(t) = self.clock.due(now) {
            self.on_timer(t, now);
        }
    }

    fn handle(&mut self, msg: Inbox) {
        match msg {
            Inbox::Request(req, done) => self.on_request(req, done),
            Inbox::CallToolDone { caller, id, name, result } => self.on_call_tool_done(caller, id, name, result),
            Inbox::Mcp(id, m) => {
                if let Some(slot) = self.slot_of(id) {
                    self.on_mcp(slot, m);
                }
            }
            Inbox::Child(id, m) => {
                let Some(slot) = self.slot_of(id) else {
                    // A process given up on before its exit (no end after
                    // SIGKILL, then restarted or reloaded): reaped now.
                    if let (ChildMsg::Exited(_), Some(c)) = (&m, self.unreaped.remove(&id)) {
                        c.reap();
                    }
                    return;
                };
                match m {
                    ChildMsg::Frame(f) => self.on_frame(slot, f),
                    ChildMsg::BadReply { id, error } => self.on_bad_reply(slot, &id, error.to_string()),
                    ChildMsg::TooLong { id, len } => self.on_too_long(slot, id, len),
                    ChildMsg::Eof => self.on_eof(slot),
                    ChildMsg::Exited(status) => self.on_exit(slot, status),
                    // Sent only by a child read as lines (`zot ext check`).
                    ChildMsg::Line(_) => {}
                }
            }
        }
    }

    // ----- loading -------------------------------------------------------

    fn load(&mut self) {
        let gen = self.load.begin();
        for slot in 0..self.exts.len() {
            self.bury(slot);
        }
        self.exts.clear();
        self.registry.clear();
        let disc = discover_with(&self.cfg.sources, &self.cfg.mcp_configs, &self.cfg.cwd, &self.cfg.home, self.cfg.trust_project);
        self.load.untrusted = disc.untrusted.clone();
        self.load.trust_problem = disc.trust_problem.clone();
        self.load.trust_changed = disc.trust_changed;
        if !self.load.untrusted.is_empty() {
            let extensions = self.load.untrusted.iter().map(|f| f.manifest.name.clone()).collect();
            let (error, changed) = (disc.trust_problem.clone(), disc.trust_changed);
            self.emit(HostEvent::UntrustedProject { dir: self.cfg.cwd.display().to_string(), extensions, error, changed });
        }
        self.load.broken.clear();
        for b in &disc.broken {
            let msg = b.error.to_string();
            let (name, dir, source) = (b.label(), b.dir.display().to_string(), b.source.as_str());
            self.load.broken.push(load::Broken { name, dir, source, error: msg.clone() });
            self.load.error(msg.clone());
            self.emit(HostEvent::LoadFailed { extension: b.label(), message: msg, log: None });
        }
        for (found, winner) in &disc.shadowed {
            let m = &found.manifest;
            if let Ok(log) = Log::open(&found.log_path(&self.cfg.home)) {
                log.line(&format!(
                    "skipped {} ({}): extension {:?} is already loaded from {}",
                    m.dir.display(),
                    found.source.as_str(),
                    m.name,
                    winner.display()
                ));
            }
        }
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
        self.check_load_done(false);
    }

    fn start_ext(&mut self, slot: usize) {
        let inbox = self.inbox.clone();
        let queue = self.queue.clone();
        let trace = self.cfg.trace.clone();
        let hello_at = after(self.cfg.timeouts.hello);
        let log_path = self.exts[slot].found.log_path(&self.cfg.home);
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
        let log = match Log::open_limited(&log_path, self.cfg.limits.log_bytes) {
            Ok(l) => l,
            Err(e) => {
                let why = format!("cannot open its log file {}: {e}", log_path.display());
                return self.fail(slot, why);
            }
        };
        mcp::log_unknown(&ext.found, &mut ext.unknown_logged, &log);
        #[cfg(feature = "remote")]
        if ext.found.mcp.as_ref().is_some_and(|s| s.remote.is_some() && s.error.is_none()) {
            return self.start_remote(slot, id, log);
        }
        let exec = match mcp::resolve(&ext.found) {
            Ok(p) => p,
            Err(e) => {
                ext.log = Some(log);
                return self.fail(slot, e);
            }
        };
        log.line(&format!("starting {} from {} at {}", m.name, m.dir.display(), crate::log::utc(std::time::SystemTime::now())));
        let Confined { plan, env, args, jail } = match confine_start(&ext.found, &self.cfg, &exec, &log) {
            Ok(started) => started,
            Err(e) => {
                ext.log = Some(log);
                return self.fail(slot, e);
            }
        };
        ext.data_dir = plan.data_dir().to_path_buf();
        ext.rules = plan.rules.clone();
        ext.confinement = Some(jail.as_ref().map_or_else(|| plan.report(), |j| j.report.clone()));
        let expanded;
        let m = if args == m.args {
            m
        } else {
            expanded = crate::manifest::Manifest { args, ..m.clone() };
            &expanded
        };
        let wrap = move |msg| Inbox::Child(id, msg);
        let mut edge = None;
        let (spawned, hello_at) = match &ext.found.mcp {
            Some(spec) => {
                let era = ext.eras.next(spec.protocol);
                log.line(&format!("handshake: trying {} ({})", mcp::era_name(era), mcp::opening_of(era)));
                let e = mcp::edge(spec, era, &self.cfg, &log, inbox.clone(), id);
                edge = Some(e.clone());
                let at = after(spec.connect_timeout);
                (Child::spawn_dialect(m, &exec, &env, &log, &queue, trace.as_ref(), e, jail.as_ref(), inbox, wrap), at)
            }
            None => (Child::spawn(m, &exec, &env, &log, &queue, trace.as_ref(), jail.as_ref(), inbox, wrap), hello_at),
        };
        ext.log = Some(log);
        match spawned {
            Ok(child) => {
                // Its ${TMP} and cgroup last as long as its last process.
                child.hold(crate::confine::Remains::of(plan.tmp, jail));
                ext.proc = Some(Proc { child, edge, exit: None, eof: false, ended: false });
                self.at(hello_at, Timer::Hello(id));
            }
            Err(e) => self.fail(slot, format!("cannot start {}: {e}", exec.display())),
        }
    }

    /// The extension failed to load: say why everywhere, stop its group.
    fn fail(&mut self, slot: usize, why: String) {
        let name = self.exts[slot].name().to_string();
        self.lose(slot, &why);
        let ext = &mut self.exts[slot];
        ext.log(&format!("failed to load: {why}"));
        // What the extension itself said on stderr during this start.
        let tail = ext.log.as_ref().map(crate::log::Log::stderr_tail).unwrap_or_default();
        let why = if tail.is_empty() { why } else { format!("{why}; its stderr: {}", tail.join(" | ")) };
        let msg = format!("extension {name:?} failed to load: {why}");
        ext.life = Life::Failed;
        ext.error = Some(why.clone());
        ext.signal(libc::SIGKILL);
        self.load.error(msg);
        let log = self.exts[slot].log.as_ref().map(|l| l.path().to_path_buf());
        self.emit(HostEvent::LoadFailed { extension: name, message: why.clone(), log });
        // Calls that woke an idle server fail with it.
        if std::mem::take(&mut self.exts[slot].idle.waking) {
            self.exts[slot].idle.slept_with = None;
            let extension = self.exts[slot].name().to_string();
            self.unpark_failed(slot, HostError::Exited { extension, detail: "it failed to start again after being idle".into() });
        }
        if !self.exts[slot].restart_waiters.is_empty() {
            let extension = self.exts[slot].name().to_string();
            self.restart_failed(slot, HostError::Exited { extension, detail: format!("its restart failed: {why}") });
            self.give_up_names(slot);
        }
        // A restart that fails to load is one more exit; one that waits
        // for a person's login (docs/protocol.md §8.5 rule 11) is not tried again.
        let needs_login = crate::mcpserver::login::is_login_to_run(&why);
        if self.exts[slot].restart_names.is_none() || needs_login || !self.maybe_restart(slot, None) {
            self.give_up_names(slot);
        }
        self.check_load_done(false);
    }

    /// Drops the process of the extension in `slot` from its record; one
    /// not reaped yet is kept until its exit, so that it leaves no zombie.
    fn bury(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        if let Some(p) = ext.proc.take() {
            if !p.child.is_reaped() {
                self.unreaped.insert(ext.id, p.child);
            }
        }
    }

    fn mark_ready(&mut self, slot: usize, how: &str) {
        let ext = &mut self.exts[slot];
        if ext.life != Life::Registering {
            return;
        }
        ext.life = Life::Ready;
        ext.log(&format!("ready ({how})"));
        let extension = ext.name().to_string();
        let (commands, tools) = (ext.command_names(), ext.tool_names());
        // A server that was still connecting when the load ended brings its
        // tools now (docs/protocol.md §8.2).
        let late = !self.load.loading() && ext.restart_names.is_none() && ext.found.mcp.is_some();
        self.emit(HostEvent::ExtensionReady { extension: extension.clone(), commands, tools: tools.clone() });
        if late && !tools.is_empty() && !self.exts[slot].idle.waking {
            self.emit(HostEvent::ToolsChanged { extension, reason: "listed".into(), tools });
        }
        self.mcp_ready(slot);
        self.restarted(slot);
        // The requests for a name nobody had, waiting for it (docs/protocol.md §8.2).
        self.route_parked(slot);
        self.check_load_done(false);
    }

    fn check_load_done(&mut self, grace_over: bool) {
        if !self.load.loading() || (!grace_over && self.exts.iter().any(Ext::starting)) {
            return;
        }
        let ready: Vec<String> =
            self.exts.iter().filter(|e| e.life == Life::Ready).map(|e| e.name().to_string()).collect();
        if self.load.end(self.exts.len(), ready.clone()) {
            self.emit(HostEvent::Ready { extensions: ready });
        } else {
            let now = self.exts.iter().map(|e| {
                let tools = if e.life == Life::Ready { e.tool_names() } else { Vec::new() };
                (e.name().to_string(), tools)
            });
            for (extension, tools) in self.load.reloaded_tools(now.collect()) {
                self.emit(HostEvent::ToolsChanged { extension, reason: "reloaded".into(), tools });
            }
        }
        self.load.answer_waiters();
        for (req, done) in std::mem::take(&mut self.table.waiting) {
            self.on_request(req, done);
        }
        if self.load.reload_again() {
            self.begin_stop_all(false);
        }
    }
}
