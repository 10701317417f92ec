//! The Rust SDK for writing zot extensions (being written).
