//! The stages of stopping one extension, as rules without processes:
//! which stage follows which, after what wait, with which signal
//! ([`StopStage::action`]). The stopping itself is in `stop`.

use crate::host::{fmt_duration, Timeouts};
use std::time::Duration;

/// How long to wait for a SIGKILLed process to be reaped before giving up.
const REAP_GRACE: Duration = Duration::from_secs(1);

/// A stage of stopping one extension, reached when its timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StopStage {
    /// The shutdown grace is over: SIGTERM.
    Term,
    /// The term grace is over: SIGKILL.
    Kill,
    /// The reap grace is over: the process is given up on.
    GiveUp,
}

/// What a stop stage does.
#[derive(Debug, PartialEq)]
pub(super) struct StopAction {
    /// The line for the extension's log, written first.
    pub(super) log: Option<String>,
    /// The signal for its process group.
    pub(super) signal: Option<libc::c_int>,
    /// The next stage and the wait before it; None: give up on the process.
    pub(super) next: Option<(Duration, StopStage)>,
}

impl StopStage {
    /// What this stage does; `unreaped`: the process has not been reaped
    /// (a reaped one is not signalled, only given its reap grace).
    pub(super) fn action(self, unreaped: bool, t: &Timeouts) -> StopAction {
        match self {
            StopStage::Term if unreaped => StopAction {
                log: Some(format!(
                    "no exit {} after shutdown; sending SIGTERM to its process group",
                    fmt_duration(t.shutdown_grace)
                )),
                signal: Some(libc::SIGTERM),
                next: Some((t.term_grace, StopStage::Kill)),
            },
            StopStage::Kill if unreaped => StopAction {
                log: Some(format!(
                    "no exit {} after SIGTERM; sending SIGKILL to its process group",
                    fmt_duration(t.term_grace)
                )),
                signal: Some(libc::SIGKILL),
                next: Some((REAP_GRACE, StopStage::GiveUp)),
            },
            StopStage::Term | StopStage::Kill => {
                StopAction { log: None, signal: None, next: Some((REAP_GRACE, StopStage::GiveUp)) }
            }
            StopStage::GiveUp => {
                StopAction { log: Some("did not end after SIGKILL; giving up on it".into()), signal: None, next: None }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{StopAction, StopStage, REAP_GRACE};
    use crate::host::{fmt_duration, Timeouts};
    use std::time::Duration;

    fn timeouts() -> Timeouts {
        Timeouts { shutdown_grace: Duration::from_millis(1500), term_grace: Duration::from_secs(2), ..Timeouts::default() }
    }

    #[test]
    fn term_then_kill_then_give_up() {
        let t = timeouts();
        let term = StopStage::Term.action(true, &t);
        let log = format!("no exit {} after shutdown; sending SIGTERM to its process group", fmt_duration(t.shutdown_grace));
        let next = Some((t.term_grace, StopStage::Kill));
        assert_eq!(term, StopAction { log: Some(log), signal: Some(libc::SIGTERM), next });
        let kill = StopStage::Kill.action(true, &t);
        let log = format!("no exit {} after SIGTERM; sending SIGKILL to its process group", fmt_duration(t.term_grace));
        let next = Some((REAP_GRACE, StopStage::GiveUp));
        assert_eq!(kill, StopAction { log: Some(log), signal: Some(libc::SIGKILL), next });
        for unreaped in [true, false] {
            let give_up = StopStage::GiveUp.action(unreaped, &t);
            let log = Some("did not end after SIGKILL; giving up on it".to_string());
            assert_eq!(give_up, StopAction { log, signal: None, next: None });
        }
    }

    #[test]
    fn a_reaped_process_is_not_signalled_only_given_the_reap_grace() {
        let t = timeouts();
        for stage in [StopStage::Term, StopStage::Kill] {
            let quiet = StopAction { log: None, signal: None, next: Some((REAP_GRACE, StopStage::GiveUp)) };
            assert_eq!(stage.action(false, &t), quiet);
        }
    }
}
