//! Expanding a manifest's `env` values at spawn (PROTOCOL §7.2): `${VAR}`
//! and `${VAR:-default}` from the host's environment, `$$` for a literal
//! `$`. Errors name variables, never values, so they may be logged.
//!
//! Decisions where the protocol is silent:
//! - A `$` followed by anything other than `{` or `$` is kept literally
//!   (`$HOME` stays `$HOME`): only the braced form expands.
//! - `${VAR:-default}` uses the default when `VAR` is unset or empty, as
//!   the shell does; the default itself is not expanded further.
//! - An unclosed `${`, or a name that is not `[A-Za-z_][A-Za-z0-9_]*`,
//!   fails the extension like an unset variable does.

use std::fmt;

/// Why one `env` entry could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// `${VAR}` without a default, and `VAR` is not set.
    Unset { key: String, var: String },
    /// A malformed reference.
    Syntax { key: String, msg: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::Unset { key, var } => write!(f, "env {key}: variable {var} is not set"),
            ExpandError::Syntax { key, msg } => write!(f, "env {key}: {msg}"),
        }
    }
}

impl std::error::Error for ExpandError {}

/// Expands every entry with `lookup` (the host's environment in
/// [`expand_from_env`]).
pub fn expand_all(
    entries: &[(String, String)],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, ExpandError> {
    entries.iter().map(|(k, v)| Ok((k.clone(), expand(k, v, &lookup)?))).collect()
}

/// [`expand_all`] against the process's environment.
pub fn expand_from_env(entries: &[(String, String)]) -> Result<Vec<(String, String)>, ExpandError> {
    expand_all(entries, |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Expands one value; `key` only names the entry in errors.
pub fn expand(
    key: &str,
    value: &str,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let syntax = |msg: String| ExpandError::Syntax { key: key.to_string(), msg };
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(syntax("unclosed ${".into()));
            };
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if !valid_name(name) {
                return Err(syntax(format!("invalid variable name {name:?} in ${{...}}")));
            }
            match (lookup(name), default) {
                (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(ExpandError::Unset { key: key.to_string(), var: name.to_string() })
                }
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn x(v: &str) -> Result<String, ExpandError> {
        expand("K", v, &env)
    }

    #[test]
    fn expands_references_defaults_and_dollars() {
        assert_eq!(x("plain").unwrap(), "plain");
        assert_eq!(x("${HOME}/bin").unwrap(), "/home/u/bin");
        assert_eq!(x("a${HOME}b${HOME}").unwrap(), "a/home/ub/home/u");
        assert_eq!(x("${NOPE:-fallback}").unwrap(), "fallback");
        assert_eq!(x("${NOPE:-}").unwrap(), "");
        assert_eq!(x("${EMPTY:-d}").unwrap(), "d");
        assert_eq!(x("${EMPTY}").unwrap(), "");
        assert_eq!(x("${HOME:-d}").unwrap(), "/home/u");
        assert_eq!(x("$$").unwrap(), "$");
        assert_eq!(x("$${HOME}").unwrap(), "${HOME}");
        assert_eq!(x("cost: 5$").unwrap(), "cost: 5$");
        assert_eq!(x("$HOME").unwrap(), "$HOME");
        assert_eq!(x("${NOPE:-a:-b}").unwrap(), "a:-b");
    }

    #[test]
    fn errors_name_the_variable_not_the_value() {
        let e = expand("FOO", "secret ${BAR}", &env).unwrap_err();
        assert_eq!(e.to_string(), "env FOO: variable BAR is not set");
        assert!(matches!(x("${HOME"), Err(ExpandError::Syntax { .. })));
        assert!(matches!(x("${}"), Err(ExpandError::Syntax { .. })));
        assert!(matches!(x("${1X}"), Err(ExpandError::Syntax { .. })));
        let all = expand_all(&[("A".into(), "${HOME}".into()), ("B".into(), "${Z}".into())], env);
        assert_eq!(all.unwrap_err().to_string(), "env B: variable Z is not set");
    }
}
