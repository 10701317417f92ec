//! The extension's own log: one line on stderr, which the host appends to
//! `ext-<name>.log`, prefixed with the extension's name.

use std::fmt::Display;
use std::io::Write;
use std::sync::OnceLock;

pub(super) static LOG_NAME: OnceLock<String> = OnceLock::new();

/// Writes one line to the extension's log (stderr, which the host appends
/// to `ext-<name>.log`), prefixed with `[name]`.
pub fn log(msg: impl Display) {
    let name = LOG_NAME.get().map(String::as_str).unwrap_or("ext");
    let line = format!("[{name}] {msg}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
