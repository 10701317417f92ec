//! The end of an extension's process: stdout read to its end and the exit
//! seen (without reaping, so the group can still be killed), calls in
//! flight failed only once both are known (or 100 ms after the exit when
//! a grandchild holds stdout), and the notice before the failures it
//! explains.

use super::*;

impl Dispatcher {
    /// Unregisters the extension and fails every call in flight to it.
    pub(super) fn lose(&mut self, slot: usize, detail: &str) {
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
            Life::Spawned => return self.fail(slot, "closed its stdout before saying hello".into()),
            Life::Registering => return self.fail(slot, "closed its stdout during start-up".into()),
            _ => {}
        }
        self.emit_exited(slot, None, false);
        self.lose(slot, "closed its stdout");
        self.tools_gone(slot);
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
    pub(super) fn end_process(&mut self, slot: usize) {
        let ext = &mut self.exts[slot];
        let Some(p) = ext.proc.as_mut() else { return };
        if p.ended {
            return;
        }
        p.ended = true;
        let status = p.exit.flatten();
        let how = status.map_or_else(|| "exit status unknown".to_string(), describe_status);
        match ext.life {
            Life::Stopping { .. } if ext.idle.stopping => self.went_idle(slot, &how),
            Life::Stopping { failed } => {
                ext.log(&format!("stopped ({how})"));
                self.lose(slot, self.stop_detail());
                self.exts[slot].life = if failed { Life::Failed } else { Life::Stopped };
                self.check_stopped();
            }
            Life::Failed | Life::Exited | Life::Stopped | Life::Restarting | Life::CrashLoop | Life::Idle => {
                ext.log(&format!("exited ({how})"))
            }
            Life::Spawned => self.fail(slot, format!("exited before saying hello ({how})")),
            Life::Registering => self.fail(slot, format!("exited during start-up ({how})")),
            Life::Ready => {
                ext.log(&format!("exited ({how})"));
                ext.life = Life::Exited;
                ext.error = Some(format!("exited ({how})"));
                // The notice goes out before the failed calls it explains.
                let restart_follows = self.restart_follows(slot, status);
                self.emit_exited(slot, status, restart_follows);
                self.lose(slot, &how);
                if !self.maybe_restart(slot, status) {
                    self.tools_gone(slot);
                }
            }
        }
    }

    pub(super) fn emit_exited(&self, slot: usize, status: Option<ExitStatus>, restart_follows: bool) {
        let extension = self.exts[slot].name().to_string();
        let (code, signal) = (status.and_then(|s| s.code()), status.and_then(|s| s.signal()));
        self.emit(HostEvent::Exited { extension, code, signal, restart_follows });
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
