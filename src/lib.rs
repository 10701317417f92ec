//! zot: a host for zot extensions.
//!
//! The library discovers extensions ([`discovery`]), validates their
//! manifests ([`manifest`]), runs them as child processes ([`child`]) and
//! talks to them over newline-delimited JSON ([`protocol`]) from one
//! dispatcher thread ([`host`]). [`ext`] is the SDK for writing extensions
//! in Rust; [`console`], [`serve`] and [`mcp`] are the front ends of the `zot`
//! binary.
//! [`scaffold`] (`zot ext new`), [`check`] (`zot ext check`), [`doctor`] (`zot ext doctor`) and [`trace`]
//! (`--trace`) are the tools for extension authors.

/// The crate version, as `zot --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod check;
pub mod child;
pub mod cli;
pub mod clidoc;
pub mod console;
pub mod discovery;
pub mod doctor;
pub mod envexpand;
pub mod ext;
pub mod home;
pub mod host;
pub mod lineedit;
pub mod lines;
pub mod log;
pub mod manage;
pub mod manifest;
pub mod mcp;
pub mod protocol;
pub mod scaffold;
pub mod serve;
pub mod signals;
pub mod stdio;
pub mod text;
pub mod trace;
pub mod trust;
pub mod wake;
