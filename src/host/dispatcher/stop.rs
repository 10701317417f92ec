//! Stopping extensions, for shutdown and reload: `shutdown` and stdin
//! closed, the shutdown grace, SIGTERM to the group, the term grace,
//! SIGKILL, all extensions in parallel; then either the end of the
//! dispatcher or a new load.

use super::*;

impl Dispatcher {
    pub(super) fn begin_stop_all(&mut self, exit: bool) {
        self.phase = Phase::Stopping { exit };
        self.stopped_count = 0;
        let shutdown = Arc::new(encode(&HostFrame::Shutdown));
        let when = after(self.cfg.timeouts.shutdown_grace);
        for slot in 0..self.exts.len() {
            // No new calls reach it; the calls in flight were written before
            // `shutdown`, so an extension that answers in order answers them
            // before it exits. What is still unanswered at its end fails then.
            self.registry.release(slot);
            let ext = &mut self.exts[slot];
            if ext.proc.is_some() {
                self.stopped_count += 1;
            }
            let waiting = std::mem::take(&mut ext.parked);
            if matches!(ext.life, Life::Restarting | Life::CrashLoop) {
                ext.life = Life::Stopped;
            }
            ext.restart_names = None;
            for (req, done, _, _) in waiting {
                if exit {
                    respond(done, Err(HostError::ShuttingDown));
                } else {
                    self.deferred.push((req, done));
                }
            }
            let ext = &mut self.exts[slot];
            if ext.ended() {
                self.lose(slot, self.stop_detail());
                continue;
            }
            let failed = ext.life == Life::Failed;
            let was_running = ext.life.running();
            ext.life = Life::Stopping { failed };
            let Some(p) = ext.proc.as_ref() else { continue };
            if was_running && p.exit.is_none() {
                let _ = p.child.send(shutdown.clone());
                p.child.close_stdin();
            } else {
                p.child.signal_group(libc::SIGKILL);
            }
            let id = ext.id;
            self.at(when, Timer::Stop(id, StopStage::Term));
        }
        self.check_stopped();
    }

    pub(super) fn on_stop_timer(&mut self, id: ExtId, stage: StopStage) {
        let Some(slot) = self.slot_of(id) else { return };
        let t = self.cfg.timeouts;
        let ext = &self.exts[slot];
        if ext.ended() {
            return;
        }
        let next = match stage {
            StopStage::Term if ext.pid().is_some() => {
                ext.log(&format!("no exit {} after shutdown; sending SIGTERM to its process group", fmt_duration(t.shutdown_grace)));
                ext.signal(libc::SIGTERM);
                Some((t.term_grace, StopStage::Kill))
            }
            StopStage::Kill if ext.pid().is_some() => {
                ext.log(&format!("no exit {} after SIGTERM; sending SIGKILL to its process group", fmt_duration(t.term_grace)));
                ext.signal(libc::SIGKILL);
                Some((REAP_GRACE, StopStage::GiveUp))
            }
            StopStage::Term | StopStage::Kill => Some((REAP_GRACE, StopStage::GiveUp)),
            StopStage::GiveUp => {
                ext.log("did not end after SIGKILL; giving up on it");
                None
            }
        };
        match next {
            Some((wait, stage)) => self.at(after(wait), Timer::Stop(id, stage)),
            None => {
                if let Some(p) = self.exts[slot].proc.as_mut() {
                    p.exit.get_or_insert(None);
                }
                self.end_process(slot);
            }
        }
    }

    /// Why calls still in flight to a stopped extension fail.
    pub(super) fn stop_detail(&self) -> &'static str {
        if self.phase == (Phase::Stopping { exit: true }) {
            "the host is shutting down"
        } else {
            "stopped for reload"
        }
    }

    pub(super) fn check_stopped(&mut self) {
        let Phase::Stopping { exit } = self.phase else { return };
        if self.exts.iter().any(|e| !e.ended()) {
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
}
