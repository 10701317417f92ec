//! What a check finds and reports, which every room of `check` shares:
//! the deadlines it keeps, a finding and its severity, the timings and
//! calls, the report, and how a time in milliseconds is written.

use serde::Serialize;
use std::time::Duration;

/// How long the check waits for each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Spawn to `hello`.
    pub hello: Duration,
    /// How long `hello_ack` is held back to catch registrations sent
    /// before it.
    pub hold: Duration,
    /// Quiet time after the handshake that the host counts as ready.
    pub ready_idle: Duration,
    /// `hello_ack` to `ready` at most.
    pub ready_grace: Duration,
    /// Each command, tool and intercept.
    pub call: Duration,
    /// `shutdown` to exit.
    pub shutdown: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            hello: Duration::from_secs(5),
            hold: Duration::from_millis(200),
            ready_idle: Duration::from_millis(250),
            ready_grace: Duration::from_secs(3),
            call: Duration::from_secs(5),
            shutdown: Duration::from_secs(2),
        }
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One thing the check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// A stable identifier (`no_ready`, `schema_required`, ...).
    pub code: &'static str,
    pub message: String,
    /// How to fix it; empty when there is nothing to fix.
    pub hint: String,
}

/// Times, in milliseconds, as the host would see them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timings {
    pub hello_ms: Option<f64>,
    pub ready_ms: Option<f64>,
    /// `frame` (a `ready` frame) or `auto` (250 ms without frames).
    pub ready_by: Option<&'static str>,
    pub shutdown_ms: Option<f64>,
    pub total_ms: f64,
}

/// One call the check made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// `command`, `tool` or `intercept`.
    pub kind: &'static str,
    pub name: String,
    /// Time to the reply; `None` without one.
    pub ms: Option<f64>,
    /// Answered in time with a well-formed reply.
    pub ok: bool,
}

/// Everything the check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The manifest's name, when it could be read.
    pub extension: Option<String>,
    pub dir: String,
    pub ok: bool,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub timings: Timings,
    pub calls: Vec<Call>,
    pub findings: Vec<Finding>,
}

/// A duration in milliseconds as a person reads it.
pub(super) fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else if ms < 10.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{}ms", ms.round() as u64)
    }
}

/// A duration in milliseconds, to the microsecond.
pub(super) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
