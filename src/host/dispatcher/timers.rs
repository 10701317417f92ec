//! What the dispatcher does when a deadline comes: hello, the quiet spell
//! that counts as ready, the ready grace, the ends of stdout and of the
//! process, log rotation, stop stages, restarts, waiting requests, and
//! calls that timed out (ended in `ending.rs`); plus a reply line over the cap, which fails its
//! call at once.

use super::{CallKind, Dispatcher, ExtId, Life, Timer, respond};
use super::calls::ToolStage;
use crate::host::HostError;
use std::time::Instant;

impl Dispatcher {
    pub(super) fn on_timer(&mut self, t: Timer, now: Instant) {
        let ext_timer = |d: &Self, id: ExtId| d.slot_of(id);
        match t {
            Timer::Hello(id) => {
                let Some(slot) = ext_timer(self, id) else { return };
                let ext = &self.exts[slot];
                // A server's whole handshake, its listing included, is
                // bounded by its connectTimeout (docs/protocol.md §8.2).
                let waiting = ext.life == Life::Spawned || (ext.life == Life::Registering && ext.found.mcp.is_some());
                if waiting && ext.proc.as_ref().is_some_and(|p| p.exit.is_none()) {
                    let why = super::mcp::no_hello(ext, self.cfg.timeouts.hello);
                    self.handshake_failed(slot, why, false);
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
                if self.load.is_current(gen) {
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
            Timer::Parked(key) => self.on_parked_timer(key),
            Timer::AgentCall(n) => self.on_agent_call_timeout(n),
            Timer::Idle(id) => self.on_idle_timer(id, now),
        }
    }

    pub(super) fn on_call_timeout(&mut self, id: u64) {
        self.time_out(super::ending::Pick::Sent(id));
    }

    /// A reply line over the cap: the call it answers fails at once.
    pub(super) fn on_too_long(&mut self, slot: usize, id: Option<String>, len: usize) {
        let Some(id) = id else { return };
        let ext_id = self.exts[slot].id;
        let Some(n) = id.parse::<u64>().ok().filter(|n| self.table.sent.get(n).is_some_and(|c| c.ext == ext_id)) else {
            return;
        };
        let Some(call) = self.table.sent.remove(&n) else { return };
        let extension = self.exts[slot].name().to_string();
        let what = format!("its reply of {len} bytes is over the limit of {} bytes", crate::child::MAX_LINE);
        match call.kind {
            CallKind::Command { done, .. } | CallKind::Tool(ToolStage { done, .. }) | CallKind::Read { done, .. } => {
                respond(done, Err(HostError::TooLarge { extension, what }))
            }
            CallKind::Intercept { chain } => self.chain_failed(chain, slot, &what),
        }
    }
}
