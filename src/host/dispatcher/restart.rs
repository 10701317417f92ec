//! Supervision, the dispatcher's side (docs/protocol.md §7.1): an extension
//! that exits on its own is started again as its [`Supervisor`] schedule
//! says, its names held meanwhile and requests for them parked on it (each
//! bounded by its own timeout); serve's `restart` request.
//!
//! [`Supervisor`]: super::supervisor::Supervisor

use super::{Dispatcher, ExtId, Life, Origin, Phase, Timer, after, respond};
use super::supervisor::{MAX_RESTARTS, RESET_AFTER, Verdict};
use super::table::Parked;
use crate::child::describe_status;
use crate::host::{HostError, HostEvent, Request, Responder, Response, fmt_duration};
use crate::manifest::RestartPolicy;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

impl Dispatcher {
    /// The process of the extension in `slot` ended on its own (or failed
    /// while being restarted). Starts it again when its policy says so;
    /// returns whether it did (or gave up as `crash_loop`).
    pub(super) fn maybe_restart(&mut self, slot: usize, status: Option<ExitStatus>) -> bool {
        let verdict = self.verdict(slot, status);
        if verdict == Verdict::Down {
            return false;
        }
        let policy = self.policy(slot);
        let ext = &mut self.exts[slot];
        ext.supervisor.exited(verdict, Instant::now());
        let how = status.map_or_else(|| "it failed to start".to_string(), describe_status);
        let extension = ext.name().to_string();
        if ext.restart_names.is_none() {
            ext.restart_names = Some((ext.command_names(), ext.tool_names()));
        }
        let Verdict::Restart { attempt, delay } = verdict else {
            ext.life = Life::CrashLoop;
            ext.log(&format!(
                "{how} after {MAX_RESTARTS} restarts without staying ready for {}s: crash loop, down until a reload",
                RESET_AFTER.as_secs()
            ));
            let restarts = ext.supervisor.restarts();
            self.emit(HostEvent::ExtensionCrashLoop { extension, restarts });
            self.tools_gone(slot);
            // Given up for good: its names go to whoever is next.
            self.give_up_names(slot);
            return true;
        };
        self.registry.hold(slot);
        let ext = &mut self.exts[slot];
        ext.life = Life::Restarting;
        ext.log(&format!(
            "{how}; restart policy {}: restart {attempt} of {MAX_RESTARTS} in {}",
            policy.as_str(),
            fmt_duration(delay)
        ));
        let (code, signal) = (status.and_then(|s| s.code()), status.and_then(|s| s.signal()));
        let delay_ms = delay.as_millis() as u64;
        self.emit(HostEvent::ExtensionRestarting { extension, attempt, delay_ms, code, signal });
        let id = self.exts[slot].id;
        self.at(after(delay), Timer::Restart(id));
        true
    }

    fn policy(&self, slot: usize) -> RestartPolicy {
        self.cfg.restart.unwrap_or(self.exts[slot].found.manifest.restart)
    }

    /// What this exit of the extension in `slot` leads to; an exit while
    /// the host stops or reloads is one it asked for.
    fn verdict(&self, slot: usize, status: Option<ExitStatus>) -> Verdict {
        let asked = !matches!(self.load.phase, Phase::Running | Phase::Loading);
        self.exts[slot].supervisor.verdict(self.policy(slot), status, asked, Instant::now())
    }

    /// Whether [`Dispatcher::maybe_restart`] will restart the extension in
    /// `slot` after this exit (not give up on it): an
    /// `extension_restarting` follows the `extension_exited`.
    /// And whether it stays down because its restart policy says so (not
    /// a crash loop given up on).
    pub(super) fn after_exit(&self, slot: usize, status: Option<ExitStatus>) -> (bool, bool) {
        match self.verdict(slot, status) {
            Verdict::Restart { .. } => (true, false),
            Verdict::Down => (false, true),
            Verdict::CrashLoop { .. } => (false, false),
        }
    }

    pub(super) fn on_restart_timer(&mut self, id: ExtId) {
        let Some(slot) = self.slot_of(id) else { return };
        if self.exts[slot].life != Life::Restarting || !matches!(self.load.phase, Phase::Running | Phase::Loading) {
            return;
        }
        self.start_again(slot);
    }

    /// A `restart` request (docs/protocol.md §4): the extension is stopped as at
    /// shutdown (§3 rule 10) and started anew with a fresh count, its
    /// names reserved and its requests parked meanwhile; answered once it
    /// is ready again.
    pub(super) fn restart_request(&mut self, name: String, done: Responder) {
        let Some(slot) = self.exts.iter().position(|e| e.name() == name) else {
            return respond(done, Err(HostError::UnknownExtension(name)));
        };
        let ext = &mut self.exts[slot];
        ext.supervisor.reset();
        if ext.found.manifest.is_static() {
            // Nothing runs: it is as ready as it was.
            let extension = ext.name().to_string();
            return respond(done, Ok(Response::Restarted { extension, pid: None }));
        }
        ext.restart_waiters.push(done);
        if ext.restart_waiters.len() > 1 {
            return; // a restart asked for already is under way
        }
        ext.log("restart asked for");
        // An idle server's tools are still offered: they are held as a
        // running one's are, and its return is announced as a restart.
        if ext.life.running() || ext.life == Life::Idle {
            self.hold_names(slot);
        }
        let ext = &self.exts[slot];
        if ext.ended() || !ext.life.running() {
            return self.start_again(slot);
        }
        self.stop_one(slot);
    }

    /// Starts the extension in `slot` anew, as it was first started.
    pub(super) fn start_again(&mut self, slot: usize) {
        self.bury(slot);
        let ext = &mut self.exts[slot];
        ext.life = Life::Spawned;
        ext.commands.clear();
        ext.tools.clear();
        ext.events.clear();
        ext.intercepts.clear();
        ext.capabilities.clear();
        ext.panels.clear();
        ext.error = None;
        if let Some(why) = self.untrusted_since(slot) {
            return self.fail(slot, why);
        }
        self.start_ext(slot);
    }

    /// Why a project extension (or server) in `slot` must not be started
    /// again: its project no longer matches what `zot trust` recorded
    /// (docs/protocol.md §7.3), so its files changed since this run loaded it.
    /// `None` for others, and with `--trust-project`.
    pub(super) fn untrusted_since(&self, slot: usize) -> Option<String> {
        use crate::trust::Status;
        if !matches!(self.exts[slot].found.source, crate::discovery::Source::Project) || self.cfg.trust_project {
            return None;
        }
        let dir = self.cfg.cwd.display();
        let home = &self.cfg.home;
        match crate::trust::status(home, &self.cfg.cwd, &|d, confine| crate::discovery::project_reach_named(d, home.root(), confine)) {
            Status::Trusted => None,
            Status::Unreadable => Some(format!(
                "not started again: trust cannot be checked: {}",
                crate::trust::file_problem(&self.cfg.home).unwrap_or_default()
            )),
            _ => Some(format!(
                "not started again: the project {dir} has changed since it was trusted (zot trust {dir} allows it again)"
            )),
        }
    }

    /// A `restart` request could not be carried out: its waiters and the
    /// requests parked meanwhile are answered `e`.
    pub(super) fn restart_failed(&mut self, slot: usize, e: HostError) {
        for done in std::mem::take(&mut self.exts[slot].restart_waiters) {
            respond(done, Err(e.clone()));
        }
    }

    /// Became ready after a restart: announce it, and the requests that
    /// waited go to it (or fail as unknown when it no longer has the name).
    pub(super) fn restarted(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        ext.supervisor.ready(Instant::now());
        let extension = ext.name().to_string();
        let pid = ext.pid();
        for done in std::mem::take(&mut ext.restart_waiters) {
            respond(done, Ok(Response::Restarted { extension: extension.clone(), pid }));
        }
        let ext = &mut self.exts[slot];
        let Some((_, old_tools)) = ext.restart_names.take() else { return };
        let (commands, tools) = (ext.command_names(), ext.tool_names());
        self.registry.keep_only(slot, &commands, &tools);
        let ext = &mut self.exts[slot];
        let mut tools = ext.tool_names();
        tools.extend(old_tools.into_iter().filter(|t| !ext.tools.iter().any(|n| n.name == *t)));
        let extension = ext.name().to_string();
        self.emit(HostEvent::ToolsChanged { extension, reason: "restarted".into(), tools });
        self.route_parked(slot);
    }

    /// The slot of an extension being restarted that command (or tool)
    /// `name` is reserved for.
    pub(super) fn restarting_owner(&self, name: &str, tool: bool) -> Option<usize> {
        if tool {
            self.registry.tool_holder(name)
        } else {
            self.registry.command_holder(name)
        }
    }

    /// Keeps a request for an extension being restarted, until it is ready
    /// or the request's own timeout.
    pub(super) fn park(&mut self, slot: usize, req: Request, done: Responder, timeout: Duration) {
        self.park_call(slot, req, None, done, timeout);
    }

    /// [`Dispatcher::park`], for a call an extension made with `call_tool`.
    pub(super) fn park_call(&mut self, slot: usize, req: Request, origin: Option<Origin>, done: Responder, timeout: Duration) {
        let key = self.next();
        let deadline = after(timeout);
        self.table.parked.push(Parked { slot, req, origin, done, key, starting: None });
        self.at(deadline, Timer::Parked(key));
    }

    pub(super) fn on_parked_timer(&mut self, key: u64) {
        self.time_out(super::ending::Pick::ParkedKey(key));
    }
}
