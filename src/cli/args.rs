//! The arguments as the parser hands them out ([`Tok`]) and the reader
//! over them ([`Args`]): values, choices and durations, each with its usage
//! error. The flag table's setters use it; the parser drives it.

use super::command::{UsageError, MAX_SECS};
use lexopt::{Arg, Parser};
use std::ffi::OsString;
use std::time::Duration;

/// An argument with nothing borrowed from the parser, so the parser can be
/// asked for an option's value while the argument is still in hand.
#[derive(Debug)]
pub(super) enum Tok {
    Short(char),
    Long(String),
    Value(OsString),
}

impl Tok {
    /// The option as typed (`-e`, `--ext`), or the value.
    pub(super) fn spelled(&self) -> String {
        match self {
            Tok::Short(c) => format!("-{c}"),
            Tok::Long(l) => format!("--{l}"),
            Tok::Value(v) => v.to_string_lossy().into_owned(),
        }
    }
}

pub(super) struct Args {
    pub(super) parser: Parser,
    pub(super) context: String,
}

impl Args {
    pub(super) fn err(&self, message: impl Into<String>) -> UsageError {
        UsageError { context: self.context.clone(), message: message.into() }
    }

    fn lexopt_err(&self, e: lexopt::Error) -> UsageError {
        use lexopt::Error as E;
        let q = |s: &str| format!("'{s}'");
        let message = match e {
            E::MissingValue { option: Some(o) } => format!("missing value for {}", q(&o)),
            E::MissingValue { option: None } => "missing value".to_string(),
            E::UnexpectedOption(o) => format!("unexpected argument {}", q(&o)),
            E::UnexpectedArgument(v) => format!("unexpected argument {}", q(&v.to_string_lossy())),
            E::UnexpectedValue { option, value } => format!(
                "option {} takes no value (got {})",
                q(&option),
                q(&value.to_string_lossy())
            ),
            E::NonUnicodeValue(v) => {
                format!("argument {} is not valid UTF-8", q(&v.to_string_lossy()))
            }
            other => other.to_string(),
        };
        self.err(message)
    }

    pub(super) fn next(&mut self) -> Result<Option<Tok>, UsageError> {
        let arg = match self.parser.next() {
            Ok(a) => a,
            Err(e) => return Err(self.lexopt_err(e)),
        };
        Ok(arg.map(|a| match a {
            Arg::Short(c) => Tok::Short(c),
            Arg::Long(l) => Tok::Long(l.to_string()),
            Arg::Value(v) => Tok::Value(v),
        }))
    }

    pub(super) fn value(&mut self) -> Result<OsString, UsageError> {
        self.parser.value().map_err(|e| self.lexopt_err(e))
    }

    pub(super) fn string(&mut self, opt: &Tok) -> Result<String, UsageError> {
        let v = self.value()?;
        v.into_string().map_err(|v| {
            self.err(format!(
                "value {:?} for '{}' is not valid UTF-8",
                v.to_string_lossy(),
                opt.spelled()
            ))
        })
    }

    pub(super) fn choice(&mut self, opt: &Tok, choices: &[&str]) -> Result<String, UsageError> {
        let v = self.string(opt)?;
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            let (last, rest) = choices.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
            let list = if rest.is_empty() { last.to_string() } else { format!("{} or {last}", rest.join(", ")) };
            Err(self.err(format!("invalid value '{v}' for '{}': expected {list}", opt.spelled())))
        }
    }

    /// A duration option: a positive number of seconds, at most
    /// [`MAX_SECS`] (docs/protocol.md §3 rule 6).
    pub(super) fn secs(&mut self, opt: &Tok) -> Result<Duration, UsageError> {
        let v = self.value()?;
        let text = v.to_string_lossy();
        let bad = || {
            self.err(format!(
                "invalid value '{text}' for '{}': expected seconds, a positive number up to {MAX_SECS} like 5 or 0.5",
                opt.spelled()
            ))
        };
        let secs: f64 = text.trim().parse().map_err(|_| bad())?;
        if !secs.is_finite() || secs <= 0.0 || secs > MAX_SECS {
            return Err(bad());
        }
        Duration::try_from_secs_f64(secs).map_err(|_| bad())
    }
}
