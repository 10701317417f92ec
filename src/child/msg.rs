//! What a child's threads hand over: [`ChildMsg`] to the dispatcher, read
//! as [`Reading`] says, or lines to a [`Dialect`].

use crate::protocol::{DecodeError, ExtFrame};
use std::process::ExitStatus;

/// What a child's threads report to the dispatcher.
// Frames are nearly every message: boxing them would cost an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum ChildMsg {
    Frame(ExtFrame),
    /// A line that decoded to a known reply type with bad fields but a
    /// usable id: a malformed reply to that request.
    BadReply { id: String, error: DecodeError },
    /// A reply line over [`MAX_LINE`](crate::protocol::MAX_LINE): the `id` read from its head, when
    /// there was one, and its length.
    TooLong { id: Option<String>, len: usize },
    /// A stdout line as it is, without its `\n`: sent instead of frames by
    /// a child started with [`Child::spawn_lines`](super::Child::spawn_lines).
    #[cfg_attr(not(feature = "author"), allow(dead_code))]
    Line(Vec<u8>),
    /// Stdout closed (or the reader thread failed).
    Eof,
    /// The process exited; it is not reaped yet ([`Child::reap`](super::Child::reap)). `None`
    /// when its status could not be read.
    Exited(Option<ExitStatus>),
}

/// A dialect other than zot frames, chosen when the child is spawned: what
/// its stdout lines mean and what the host's frames become on its stdin.
/// The process layer moves lines; the dialect (an MCP server's JSON-RPC,
/// in `mcpserver`) translates them into the host's own messages and hands
/// those on itself.
pub trait Dialect: Send + Sync {
    /// The bytes written first, before any frame (empty: none).
    fn opening(&self) -> Vec<u8>;
    /// One stdout line, without its `\n`.
    fn incoming(&self, line: &[u8]);
    /// What to write for an encoded host frame (empty: nothing).
    fn outgoing(&self, frame: &[u8]) -> Vec<u8>;
    /// A stdout line over [`MAX_LINE`](crate::protocol::MAX_LINE) bytes, with the `id` read from its
    /// head: the dialect says what it answered, in its own words.
    fn too_long(&self, id: Option<&str>, len: usize);
}

/// How the reader thread hands stdout over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Decoded: [`ChildMsg::Frame`] and [`ChildMsg::BadReply`], junk and
    /// over-long lines logged (the host).
    Frames,
    /// Every line as it is ([`ChildMsg::Line`]), over-long ones as
    /// [`ChildMsg::TooLong`], nothing logged: for a driver that judges each
    /// line itself and keeps the log for the child's stderr alone.
    #[cfg_attr(not(feature = "author"), allow(dead_code))]
    Lines,
}
