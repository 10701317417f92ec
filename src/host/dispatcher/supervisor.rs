//! The restart schedule of one extension (docs/protocol.md §7.1), without
//! processes: whether an exit restarts it (by its policy, and whether the
//! host asked for the exit), after which delay (250 ms, doubling to 30 s),
//! and when it gives up (`crash_loop` after 5 restarts without staying
//! ready for 60 s). The names it keeps meanwhile are the registry's held
//! claims (`registry.rs`); the dispatcher's side (timers, events, parked
//! requests) is `restart.rs`.

use crate::manifest::RestartPolicy;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// The first restart's delay; each further one doubles it.
pub(super) const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The longest delay between restarts.
pub(super) const MAX_DELAY: Duration = Duration::from_secs(30);
/// Restarts without a reset before `crash_loop`.
pub(super) const MAX_RESTARTS: u32 = 5;
/// Ready this long and the count starts again.
pub(super) const RESET_AFTER: Duration = Duration::from_secs(60);

/// What an exit leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Not restarted: the policy does not want it back (or the host asked
    /// for the exit).
    Down,
    /// Started again after `delay`; `attempt` counts from 1.
    Restart { attempt: u32, delay: Duration },
    /// Restarted too often: down until a reload or a `restart` request.
    CrashLoop { restarts: u32 },
}

/// One extension's restarts.
#[derive(Debug, Default, Clone)]
pub(super) struct Supervisor {
    /// Restarts since the count was last reset.
    restarts: u32,
    /// When it last became ready.
    ready_at: Option<Instant>,
}

impl Supervisor {
    /// The restarts listings show.
    pub(super) fn restarts(&self) -> u32 {
        self.restarts
    }

    /// The restarts that count towards a crash loop at `now`: none once
    /// the extension stayed ready for [`RESET_AFTER`].
    fn counted(&self, now: Instant) -> u32 {
        match self.ready_at {
            Some(t) if now.saturating_duration_since(t) >= RESET_AFTER => 0,
            _ => self.restarts,
        }
    }

    /// What an exit with `status` (None: it failed to start, or its status
    /// is unknown) leads to under `policy`; `asked`: the host asked for it
    /// (stop, reload, shutdown, a kill for a violation).
    pub(super) fn verdict(&self, policy: RestartPolicy, status: Option<ExitStatus>, asked: bool, now: Instant) -> Verdict {
        let failed = status.is_none_or(|s| s.code() != Some(0));
        let wanted = !asked
            && match policy {
                RestartPolicy::Never => false,
                RestartPolicy::OnFailure => failed,
                RestartPolicy::Always => true,
            };
        if !wanted {
            return Verdict::Down;
        }
        let n = self.counted(now);
        if n >= MAX_RESTARTS {
            return Verdict::CrashLoop { restarts: n };
        }
        let delay = FIRST_DELAY.saturating_mul(1u32 << n.min(16)).min(MAX_DELAY);
        Verdict::Restart { attempt: n + 1, delay }
    }

    /// Takes the verdict of an exit at `now`: the count it leads to.
    pub(super) fn exited(&mut self, v: Verdict, now: Instant) {
        let n = self.counted(now);
        self.restarts = match v {
            Verdict::Down => n,
            Verdict::Restart { attempt, .. } => attempt,
            Verdict::CrashLoop { restarts } => restarts,
        };
        self.ready_at = None;
    }

    /// It became ready at `now`.
    pub(super) fn ready(&mut self, now: Instant) {
        self.ready_at = Some(now);
    }

    /// A fresh start (a `restart` request): no restarts counted.
    pub(super) fn reset(&mut self) {
        *self = Supervisor::default();
    }
}

#[cfg(test)]
mod tests {
    use super::{Supervisor, Verdict, FIRST_DELAY, MAX_DELAY, RESET_AFTER};
    use crate::manifest::RestartPolicy;
    use std::process::ExitStatus;
    use std::time::{Duration, Instant};
    use std::os::unix::process::ExitStatusExt;

    fn code(c: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(c << 8))
    }

    fn signal(s: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(s))
    }

    #[test]
    fn delays_double_from_250ms_then_a_crash_loop_after_five() {
        let mut s = Supervisor::default();
        let now = Instant::now();
        let mut delays = Vec::new();
        loop {
            match s.verdict(RestartPolicy::Always, code(1), false, now) {
                Verdict::Restart { attempt, delay } => {
                    assert_eq!(attempt as usize, delays.len() + 1);
                    delays.push(delay.as_millis());
                    s.exited(Verdict::Restart { attempt, delay }, now);
                    // Ready again for a moment: not long enough to reset.
                    s.ready(now);
                }
                v => {
                    assert_eq!(v, Verdict::CrashLoop { restarts: 5 });
                    break;
                }
            }
        }
        assert_eq!(delays, [250, 500, 1000, 2000, 4000]);
        assert_eq!(s.restarts(), 5);
    }

    #[test]
    fn the_delay_stops_growing_at_30s() {
        let s = Supervisor { restarts: 4, ready_at: None };
        let v = s.verdict(RestartPolicy::Always, code(1), false, Instant::now());
        assert_eq!(v, Verdict::Restart { attempt: 5, delay: Duration::from_secs(4) });
        // The cap, for a schedule that would go on.
        assert_eq!(FIRST_DELAY.saturating_mul(1 << 16).min(MAX_DELAY), MAX_DELAY);
    }

    #[test]
    fn ready_for_60s_resets_the_count() {
        let start = Instant::now();
        let mut s = Supervisor { restarts: 5, ready_at: None };
        s.ready(start);
        let later = start + RESET_AFTER;
        assert_eq!(s.verdict(RestartPolicy::Always, code(1), false, later), Verdict::Restart { attempt: 1, delay: FIRST_DELAY });
        let sooner = start + RESET_AFTER - Duration::from_millis(1);
        assert_eq!(s.verdict(RestartPolicy::Always, code(1), false, sooner), Verdict::CrashLoop { restarts: 5 });
        s.exited(Verdict::Restart { attempt: 1, delay: FIRST_DELAY }, later);
        assert_eq!(s.restarts(), 1);
    }

    #[test]
    fn policies_judge_the_exit_and_an_exit_the_host_asked_for_never_restarts() {
        let s = Supervisor::default();
        let now = Instant::now();
        let restarts = |p, st, asked| matches!(s.verdict(p, st, asked, now), Verdict::Restart { .. });
        for st in [code(0), code(3), signal(9), None] {
            assert!(!restarts(RestartPolicy::Never, st, false));
            assert!(restarts(RestartPolicy::Always, st, false));
            for p in [RestartPolicy::Never, RestartPolicy::OnFailure, RestartPolicy::Always] {
                assert!(!restarts(p, st, true), "{p:?} {st:?} asked");
            }
        }
        assert!(!restarts(RestartPolicy::OnFailure, code(0), false));
        assert!(restarts(RestartPolicy::OnFailure, code(3), false));
        assert!(restarts(RestartPolicy::OnFailure, signal(9), false));
        assert!(restarts(RestartPolicy::OnFailure, None, false));
    }

    #[test]
    fn a_reset_forgets_the_count() {
        let mut s = Supervisor { restarts: 5, ready_at: None };
        s.reset();
        assert_eq!(s.restarts(), 0);
        assert_eq!(s.verdict(RestartPolicy::Always, code(1), false, Instant::now()), Verdict::Restart { attempt: 1, delay: FIRST_DELAY });
    }
}
