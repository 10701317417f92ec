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
        let when = Instant::now() + self.cfg.timeouts.shutdown_grace;
        for slot in 0..self.exts.len() {
            // No new calls reach it; the calls in flight were written before
            // `shutdown`, so an extension that answers in order answers them
            // before it exits. What is still unanswered at its exit fails then.
            self.registry.release(slot);
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
                    self.lose(slot, self.stop_detail());
                }
                (None, _) => {
                    ext.stopped = true;
                    self.lose(slot, self.stop_detail());
                }
            }
        }
        self.check_stopped();
    }

    pub(super) fn on_stop_timer(&mut self, key: u64, stage: StopStage) {
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

    /// Why calls still in flight to a stopped extension fail.
    pub(super) fn stop_detail(&self) -> &'static str {
        if self.phase == (Phase::Stopping { exit: true }) {
            "the host is shutting down"
        } else {
            "stopped for reload"
        }
    }

    pub(super) fn stop_done(&mut self, slot: usize) {
        if self.exts[slot].stopped {
            return;
        }
        self.lose(slot, self.stop_detail());
        let ext = &mut self.exts[slot];
        ext.stopped = true;
        if ext.state != State::Failed {
            ext.state = State::Exited;
        }
        self.check_stopped();
    }

    pub(super) fn check_stopped(&mut self) {
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
}
