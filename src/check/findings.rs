//! The findings of one check: each with a severity, a stable code and a
//! fix hint; past [`PER_CODE`] of one code they are counted, not listed.

use super::outcome::{Finding, Severity};
use std::collections::HashMap;

/// Findings of a code past this many are counted, not listed.
const PER_CODE: usize = 5;

#[derive(Default)]
pub(super) struct Findings {
    pub(super) list: Vec<Finding>,
    seen: HashMap<&'static str, usize>,
}

impl Findings {
    pub(super) fn add(&mut self, severity: Severity, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        let n = self.seen.entry(code).or_default();
        *n += 1;
        if *n <= PER_CODE {
            self.list.push(Finding { severity, code, message: message.into(), hint: hint.into() });
        }
    }
    pub(super) fn error(&mut self, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        self.add(Severity::Error, code, message, hint);
    }
    pub(super) fn warning(&mut self, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        self.add(Severity::Warning, code, message, hint);
    }
    pub(super) fn info(&mut self, code: &'static str, message: impl Into<String>, hint: impl Into<String>) {
        self.add(Severity::Info, code, message, hint);
    }
    /// Notes how many findings of each code were not listed.
    pub(super) fn finish(&mut self) {
        let mut over: Vec<(&'static str, usize)> =
            self.seen.iter().filter(|(_, n)| **n > PER_CODE).map(|(c, n)| (*c, *n - PER_CODE)).collect();
        crate::order::sort(&mut over);
        for (code, n) in over {
            let sev = self.list.iter().find(|f| f.code == code).map_or(Severity::Info, |f| f.severity);
            self.list.push(Finding { severity: sev, code, message: format!("... and {n} more like this"), hint: String::new() });
        }
    }
}
