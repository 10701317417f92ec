//! zot: a host for zot extensions, and a Rust SDK for writing them.
//!
//! The library discovers extensions ([`discovery`]), validates their
//! manifests ([`manifest`]), runs them as child processes and talks to them
//! over newline-delimited JSON ([`protocol`]) from one dispatcher thread
//! ([`host`]); [`home`] is where they live on disk. [`ext`] is the SDK for
//! writing an extension in Rust. An embedding program needs only these
//! (see `examples/embed.rs`); the `zot` binary's front ends (the console,
//! `zot serve`, `zot mcp`, extension management and the author tools) are
//! private to it.

#![warn(missing_docs)]

/// The crate version, as `zot --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod discovery;
pub mod ext;
pub mod home;
pub mod host;
pub mod manifest;
pub mod mcpserver;
pub mod protocol;

// What the public modules are built on.
mod child;
mod confine;
mod envexpand;
mod instance;
mod jsonc;
mod lexical;
mod lines;
mod log;
mod nearest;
mod order;
mod sha256;
mod project;
mod text;
mod trace;
mod trust;
mod wake;
mod which;

// The `zot` binary: its front ends and tools.
mod argpath;
// Without the `author` feature only doctor's share of it (findings and
// their report) is used.
#[cfg_attr(not(feature = "author"), allow(dead_code))]
mod check;
mod cli;
mod console;
mod doctor;
mod lineedit;
mod manage;
mod mcp;
#[cfg_attr(not(feature = "author"), allow(dead_code))]
mod scaffold;
mod serve;
mod signals;
mod stdio;
mod strict;

/// The `zot` command line, for the binary's `main`: runs it on the
/// process's arguments and returns the exit code. Not part of the
/// library's API.
#[doc(hidden)]
pub fn cli_main() -> i32 {
    cli::main()
}
