//! Stopping extensions, for shutdown and reload: `shutdown` and stdin
//! closed, the shutdown grace, SIGTERM to the group, the term grace,
//! SIGKILL, all extensions in parallel; then either the end of the
//! dispatcher or a new load. Which stage follows which, after what wait,
//! with which signal, is [`StopStage::action`] (in `stop_stage`).

use super::{Dispatcher, ExtId, Life, Phase, Timer, after, respond};
use super::stop_stage::{StopAction, StopStage};
use crate::child::Bytes;
use crate::host::{HostError, Request};
use crate::protocol::{HostFrame, encode};
use std::sync::Arc;
use std::time::Instant;

impl Dispatcher {
    pub(super) fn begin_stop_all(&mut self, exit: bool) {
        let exts = &self.exts;
        let tools = || exts.iter().filter(|e| e.life.running()).map(|e| (e.name().to_string(), e.tool_names())).collect();
        self.load.begin_stop(exit, tools);
        self.shutdown_calls(exit);
        let shutdown = Arc::new(encode(&HostFrame::Shutdown));
        let when = after(self.cfg.timeouts.shutdown_grace);
        for slot in 0..self.exts.len() {
            // No new calls reach it; the calls in flight were written before
            // `shutdown`, so an extension that answers in order answers them
            // before it exits. What is still unanswered at its end fails then.
            self.registry.release(slot);
            let ext = &mut self.exts[slot];
            if ext.proc.is_some() {
                self.load.count_stopped();
            }
            if matches!(ext.life, Life::Restarting | Life::CrashLoop | Life::Idle) {
                ext.life = Life::Stopped;
            }
            ext.restart_names = None;
            if ext.ended() {
                self.lose(slot, self.stop_detail());
                continue;
            }
            let waiters = std::mem::take(&mut ext.restart_waiters);
            for done in waiters {
                if exit {
                    respond(done, Err(HostError::ShuttingDown));
                } else {
                    self.table.waiting.push((Request::Restart { name: self.exts[slot].name().to_string() }, done));
                }
            }
            self.stop_at(slot, &shutdown, when);
        }
        self.check_stopped();
    }

    /// Stops the extension in `slot` alone (a `restart` request), as at
    /// shutdown; its end starts it again.
    pub(super) fn stop_one(&mut self, slot: usize) {
        let shutdown = Arc::new(encode(&HostFrame::Shutdown));
        let when = after(self.cfg.timeouts.shutdown_grace);
        self.stop_at(slot, &shutdown, when);
    }

    /// `shutdown` and stdin closed (SIGKILL for one that is not running),
    /// the later stages from `when`.
    fn stop_at(&mut self, slot: usize, shutdown: &Bytes, when: Instant) {
        let ext = &mut self.exts[slot];
        let failed = ext.life == Life::Failed;
        let was_running = ext.life.running();
        ext.life = Life::Stopping { failed };
        let Some(p) = ext.proc.as_ref() else { return };
        if was_running && p.exit.is_none() {
            let _ = p.child.send(shutdown.clone());
            p.child.close_stdin();
        } else {
            p.child.signal_group(libc::SIGKILL);
        }
        let id = ext.id;
        self.at(when, Timer::Stop(id, StopStage::Term));
    }

    pub(super) fn on_stop_timer(&mut self, id: ExtId, stage: StopStage) {
        let Some(slot) = self.slot_of(id) else { return };
        let t = self.cfg.timeouts;
        let ext = &self.exts[slot];
        if ext.ended() {
            return;
        }
        // A remote server has no process: at the first signal its link is
        // ended at once (the answers it was still waiting for are given up).
        if ext.pid().is_none() && matches!(stage, StopStage::Term | StopStage::Kill) {
            ext.signal(libc::SIGKILL);
        }
        let StopAction { log, signal, next } = stage.action(ext.pid().is_some(), &t);
        if let Some(line) = log {
            ext.log(&line);
        }
        if let Some(sig) = signal {
            ext.signal(sig);
        }
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
        if self.load.phase == (Phase::Stopping { exit: true }) {
            "the host is shutting down"
        } else {
            "stopped for reload"
        }
    }

    pub(super) fn check_stopped(&mut self) {
        if !matches!(self.load.phase, Phase::Stopping { .. }) || self.exts.iter().any(|e| !e.ended()) {
            return;
        }
        if self.load.phase == (Phase::Stopping { exit: true }) {
            // A shutdown is answered once every start's last process has
            // ended, `setsid` descendants too, and its ${TMP} is gone.
            crate::child::settle_orphans();
        }
        if self.load.all_stopped() {
            self.load();
        }
    }
}
