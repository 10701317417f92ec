//! The interactive session (stub).
use crate::host::Config;

/// Runs the interactive session until `/exit` or end of input; returns the
/// exit code.
pub fn run(_config: Config) -> i32 {
    eprintln!("zot: interactive session not implemented yet");
    1
}
