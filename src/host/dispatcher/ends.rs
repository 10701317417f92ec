//! The end of an extension's process: stdout read to its end and the exit
//! seen (without reaping, so the group can still be killed), calls in
//! flight failed only once both are known (or 100 ms after the exit when
//! a grandchild holds stdout), and the notice before the failures it
//! explains.

use super::{Dispatcher, EOF_GRACE, Life, Phase, Timer, after};
use crate::child::{EXIT_GRACE, describe_status};
use crate::host::HostEvent;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

impl Dispatcher {
    /// Fails every call in flight to the extension, and cancels the calls
    /// it made (its names are the caller's to release or hold).
    pub(super) fn lose(&mut self, slot: usize, detail: &str) {
        let id = self.exts[slot].id;
        self.cancel_calls_of(id);
        self.target_gone(slot, detail);
    }

    /// Stdout reached its end. An exit already seen ends the extension now;
    /// otherwise its exit status has a moment to arrive, so the error can
    /// name it.
    pub(super) fn on_eof(&mut self, slot: usize) {
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
    pub(super) fn on_eof_grace_over(&mut self, slot: usize) {
        let ext = &self.exts[slot];
        if !ext.life.running() || ext.proc.as_ref().is_none_or(|p| p.exit.is_some()) {
            return;
        }
        ext.log("stdout closed while the process runs on");
        let id = ext.id;
        match ext.life {
            Life::Spawned => {
                let why = format!("closed its stdout before {}", handshake_of(ext));
                return self.handshake_failed(slot, why, true);
            }
            Life::Registering => return self.fail(slot, "closed its stdout during start-up".into()),
            _ => {}
        }
        // Its calls fail now; whether it restarts is decided at its real
        // exit (docs/protocol.md §7.1), its names held for it until then.
        self.hold_names(slot);
        self.lose(slot, "closed its stdout");
        self.exts[slot].life = Life::Exited;
        self.at(after(self.cfg.timeouts.term_grace), Timer::EofKill(id));
    }

    /// The process exited: its group goes with it while the zombie still
    /// pins the group id, then it is reaped. What it wrote before exiting
    /// still counts: the extension ends once stdout is read to its end, or
    /// [`EXIT_GRACE`] later when a grandchild holds stdout open.
    pub(super) fn on_exit(&mut self, slot: usize, status: Option<ExitStatus>) {
        let ext = &mut self.exts[slot];
        let Some(p) = ext.proc.as_mut() else { return };
        p.child.signal_group(libc::SIGKILL);
        p.child.reap();
        p.exit = Some(status);
        if ext.life == Life::Ready || (ext.life.starting() && ext.restart_names.is_some()) {
            // No new call reaches it (the calls in flight wait for stdout);
            // its names wait for the decision at the end.
            self.hold_names(slot);
        } else if ext.life.running() {
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
    pub(super) fn end_process(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        let Some(p) = ext.proc.as_mut() else { return };
        if p.ended {
            return;
        }
        p.ended = true;
        let status = p.exit.flatten();
        // A remote server has no process: its end is its connection's.
        let unknown = if p.child.pid == 0 { "connection closed" } else { "exit status unknown" };
        let how = status.map_or_else(|| unknown.to_string(), describe_status);
        match ext.life {
            Life::Stopping { .. } if ext.idle.stopping => self.went_idle(slot, &how),
            // The next handshake try, unless the host is stopping meanwhile.
            Life::Stopping { .. }
                if matches!(self.load.phase, Phase::Running | Phase::Loading) && std::mem::take(&mut ext.eras.retry_after_stop) =>
            {
                ext.log(&format!("stopped ({how})"));
                self.start_again(slot);
            }
            Life::Stopping { failed } => {
                ext.log(&format!("stopped ({how})"));
                let restart_asked = !ext.restart_waiters.is_empty() && matches!(self.load.phase, Phase::Running | Phase::Loading);
                if !restart_asked {
                    self.registry.release(slot);
                }
                let why = if restart_asked { "stopped for restart" } else { self.stop_detail() };
                self.lose(slot, why);
                self.exts[slot].life = if failed { Life::Failed } else { Life::Stopped };
                if restart_asked {
                    return self.start_again(slot);
                }
                self.check_stopped();
            }
            // Its stdout closed first: the calls failed then; the restart
            // is decided now, at the real exit.
            Life::Exited => {
                ext.log(&format!("exited ({how})"));
                ext.error = Some(format!("exited ({how})"));
                self.emit_exited(slot, status);
                if !self.maybe_restart(slot, status) {
                    self.give_up_names(slot);
                    self.tools_gone(slot);
                }
            }
            Life::Failed | Life::Stopped | Life::Restarting | Life::CrashLoop | Life::Idle => ext.log(&format!("exited ({how})")),
            Life::Spawned => {
                let why = format!("exited before {} ({how})", handshake_of(ext));
                self.handshake_failed(slot, why, true)
            }
            Life::Registering if ext.found.mcp.is_some() => self.handshake_failed(slot, format!("exited during start-up ({how})"), false),
            Life::Registering => self.fail(slot, format!("exited during start-up ({how})")),
            Life::Ready => {
                ext.log(&format!("exited ({how})"));
                ext.life = Life::Exited;
                ext.error = Some(format!("exited ({how})"));
                // The notice goes out before the failed calls it explains.
                self.emit_exited(slot, status);
                self.lose(slot, &how);
                if !self.maybe_restart(slot, status) {
                    self.give_up_names(slot);
                    self.tools_gone(slot);
                }
            }
        }
    }

    /// The extension's names wait for it (it may restart): reserved, in
    /// force for nobody, requests for them parked on it.
    pub(super) fn hold_names(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        if ext.restart_names.is_none() {
            ext.restart_names = Some((ext.command_names(), ext.tool_names()));
        }
        self.registry.hold(slot);
    }

    /// The extension is not coming back (for now): its names go to whoever
    /// is next in load order, and the requests that waited for it fail as
    /// unknown (they asked for this one's names). Tools it had before a restart that failed to load (one waiting for
    /// a login, docs/protocol.md §8.5 rule 11) are gone: `tools_changed`
    /// with reason `exited` says so (those it has now, [`Self::tools_gone`]).
    pub(super) fn give_up_names(&mut self, slot: usize) {
        self.registry.release(slot);
        let ext = &mut self.exts[slot];
        if let Some((_, held)) = ext.restart_names.take() {
            let tools: Vec<String> = held.into_iter().filter(|t| !ext.tools.iter().any(|n| n.name == *t)).collect();
            if !tools.is_empty() {
                let extension = ext.name().to_string();
                self.emit(HostEvent::ToolsChanged { extension, reason: "exited".into(), tools });
            }
        }
        self.route_parked(slot);
    }

    pub(super) fn emit_exited(&self, slot: usize, status: Option<ExitStatus>) {
        let extension = self.exts[slot].name().to_string();
        let (code, signal) = (status.and_then(|s| s.code()), status.and_then(|s| s.signal()));
        let (restart_follows, not_by_policy) = self.after_exit(slot, status);
        self.emit(HostEvent::Exited { extension, code, signal, restart_follows, not_by_policy });
    }

    /// An extension that ended and is not coming back: its tools are gone
    /// (`tools_changed` with reason `exited`).
    pub(super) fn tools_gone(&self, slot: usize) {
        let ext = &self.exts[slot];
        if !ext.tools.is_empty() {
            let tools = ext.tool_names();
            self.emit(HostEvent::ToolsChanged { extension: ext.name().to_string(), reason: "exited".into(), tools });
        }
    }
}

/// What an extension in [`Life::Spawned`] has yet to do: a server answers
/// `initialize` (docs/protocol.md §8.2), an extension says `hello`.
fn handshake_of(ext: &super::Ext) -> String {
    match (&ext.found.mcp, ext.eras.current) {
        (Some(_), Some(era)) => format!("answering {}", super::mcp::opening_of(era)),
        (Some(_), None) => "answering initialize".into(),
        (None, _) => "saying hello".into(),
    }
}
