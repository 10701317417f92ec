//! The text report of `zot ext check`: a header, one line per finding
//! with its fix, the times, the calls, the verdict.

use super::outcome::{fmt_ms, Report, Severity};
use crate::text::one_line;

/// The text report: a header, one line per finding, the times, the verdict.
/// Prints a report as text (`render`) or, with `json`, as one pretty JSON
/// document; the exit status is 0 when `ok`, else 1. Shared by `zot ext
/// check` and `zot ext doctor`.
pub fn print<T: serde::Serialize>(report: &T, json: bool, ok: bool, render: impl Fn(&T) -> String) -> i32 {
    use std::io::Write;
    let text = if json {
        let mut s = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    } else {
        render(report)
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if ok {
        0
    } else {
        1
    }
}

pub fn render(r: &Report) -> String {
    let mut s = match &r.extension {
        Some(n) => format!("zot ext check: {} ({})\n", one_line(n), one_line(&r.dir)),
        None => format!("zot ext check: {}\n", one_line(&r.dir)),
    };
    for f in &r.findings {
        let mut line = format!("{:<8}{:<20} {}", f.severity.as_str(), f.code, f.message);
        if !f.hint.is_empty() {
            let label = if f.severity == Severity::Info { "hint" } else { "fix" };
            line.push_str(&format!(" ({label}: {})", f.hint));
        }
        s.push_str(&one_line(&line));
        s.push('\n');
    }
    let ms = |v: Option<f64>| v.map_or("-".to_string(), fmt_ms);
    let t = &r.timings;
    if t.hello_ms.is_some() {
        let by = match t.ready_by {
            Some("frame") => " (ready frame)",
            Some(_) => " (auto-ready)",
            None => "",
        };
        s.push_str(&format!(
            "times:  hello {}, ready {}{by}, shutdown {}\n",
            ms(t.hello_ms),
            ms(t.ready_ms),
            ms(t.shutdown_ms)
        ));
    }
    if !r.calls.is_empty() {
        let calls: Vec<String> = r
            .calls
            .iter()
            .map(|c| {
                let what = match c.kind {
                    "command" => format!("/{}", c.name),
                    "intercept" => format!("intercept {}", c.name),
                    _ => c.name.clone(),
                };
                let res = if c.ok { ms(c.ms) } else { "FAILED".into() };
                format!("{what} {res}")
            })
            .collect();
        s.push_str(&one_line(&format!("calls:  {}", calls.join(", "))));
        s.push('\n');
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    s.push_str(&format!(
        "{}: {}, {}, {}\n",
        if r.ok { "ok" } else { "FAILED" },
        plural(r.errors, "error"),
        plural(r.warnings, "warning"),
        plural(r.infos, "info")
    ));
    s
}
