//! `zot serve`: the host protocol on stdin/stdout (stub).
use crate::host::Config;

/// Runs `zot serve` until shutdown or end of input; returns the exit code.
pub fn run(_config: Config) -> i32 {
    eprintln!("zot serve: not implemented yet");
    1
}
