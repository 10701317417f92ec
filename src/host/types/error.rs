//! Why a request failed: [`HostError`], with its protocol codes and
//! messages.

#[cfg(doc)]
use super::Request;
use std::fmt;
use std::time::Duration;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum HostError {
    /// A malformed request.
    BadRequest(String),
    /// No command of that name is registered.
    UnknownCommand(String),
    /// No tool of that name is registered.
    UnknownTool(String),
    /// No extension of that name is loaded.
    UnknownExtension(String),
    /// No answer in time.
    Timeout {
        /// The extension that did not answer.
        extension: String,
        /// The call that timed out, e.g. `tool x`.
        what: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The extension exited or closed its stdout before answering.
    Exited {
        /// The extension that exited.
        extension: String,
        /// How it exited.
        detail: String,
    },
    /// The extension's write queue is full.
    Busy {
        /// The extension whose queue is full.
        extension: String,
    },
    /// The extension already has as many calls in flight as allowed.
    TooManyCalls {
        /// The extension with too many calls.
        extension: String,
        /// Calls in flight allowed to one extension.
        limit: usize,
    },
    /// The host is shutting down and takes no more requests.
    ShuttingDown,
    /// The caller gave up on the call ([`Request::Cancel`], [`Request::CancelTool`]).
    Cancelled {
        /// The extension the call went to.
        extension: String,
        /// The call given up on, e.g. `tool x`.
        what: String,
    },
    /// The host could not start (home, threads) or broke an invariant.
    Internal(String),
    /// A remote server needs a person to log in again (docs/protocol.md
    /// §8.5 rule 12): `NAME needs you to log in: zot mcp login NAME`.
    NeedsLogin(String),
    /// No such call waits for an answer.
    UnknownCall(String),
    /// No hosted server lists the resource of this URI, nor has a template
    /// matching it (docs/protocol.md §8.6).
    UnknownResource(String),
    /// The server a resource was routed to could not read it: it answered
    /// `resources/read` with an error, or with something else than contents
    /// (`unknown_resource`, naming the server and its reason).
    ReadFailed {
        /// The server that was asked.
        server: String,
        /// The resource's URI.
        uri: String,
        /// The server's reason.
        why: String,
    },
    /// No tool (or command) of that name, once the MCP servers that were
    /// still starting when it was asked for are ready or failed
    /// (docs/protocol.md §8.2): `unknown_tool` (`unknown_command`).
    NotOffered {
        /// The name asked for.
        name: String,
        /// A command's name, not a tool's.
        command: bool,
        /// The servers that were still starting.
        starting: Vec<String>,
    },
    /// A frame over the limits of docs/protocol.md §3 rule 9: a call whose frame
    /// to the extension would be too big, or a reply line over the cap.
    TooLarge {
        /// The extension the frame was for or from.
        extension: String,
        /// The frame that was too large, and the limit.
        what: String,
    },
}

impl HostError {
    /// The message beside [`HostError::code`]: the text without the words the
    /// code already says (`bad request: `).
    pub fn message(&self) -> String {
        match self {
            HostError::BadRequest(m) => m.clone(),
            other => other.to_string(),
        }
    }

    /// The error code of the `zot serve` protocol.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::BadRequest(_) => "bad_request",
            HostError::Internal(_) => "internal",
            HostError::TooLarge { .. } => "too_large",
            HostError::UnknownCall(_) => "unknown_call",
            HostError::UnknownResource(_) | HostError::ReadFailed { .. } => "unknown_resource",
            HostError::UnknownCommand(_) => "unknown_command",
            HostError::UnknownTool(_) | HostError::NotOffered { command: false, .. } => "unknown_tool",
            HostError::NotOffered { command: true, .. } => "unknown_command",
            HostError::UnknownExtension(_) => "unknown_extension",
            HostError::Timeout { .. } => "timeout",
            HostError::Exited { .. } => "extension_exited",
            HostError::Busy { .. } | HostError::TooManyCalls { .. } => "busy",
            HostError::ShuttingDown => "shutting_down",
            HostError::Cancelled { .. } => "cancelled",
            HostError::NeedsLogin(_) => "needs_login",
        }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::BadRequest(m) => write!(f, "bad request: {m}"),
            HostError::NeedsLogin(m) => f.write_str(m),
            HostError::UnknownCommand(n) => write!(f, "unknown command /{n}"),
            HostError::UnknownTool(n) => write!(f, "unknown tool {n:?}"),
            HostError::NotOffered { name, command, starting } => {
                match command {
                    true => write!(f, "unknown command /{name}")?,
                    false => write!(f, "unknown tool {name:?}")?,
                }
                write!(f, " (not offered by the MCP servers that were still starting: {})", starting.join(", "))
            }
            HostError::UnknownExtension(n) => write!(f, "unknown extension {n:?}"),
            HostError::Timeout { extension, what, after } => write!(
                f,
                "extension {extension:?} did not answer {what} within {}",
                fmt_duration(*after)
            ),
            HostError::Exited { extension, detail } => {
                write!(f, "extension {extension:?} exited: {detail}")
            }
            HostError::Busy { extension } => write!(
                f,
                "extension {extension:?} is busy: its input queue is full (it is not reading stdin)"
            ),
            HostError::TooManyCalls { extension, limit } => write!(
                f,
                "extension {extension:?} is busy: {limit} calls already in flight"
            ),
            HostError::ShuttingDown => write!(f, "the host is shutting down"),
            HostError::Cancelled { extension, what } if extension.is_empty() => {
                write!(f, "{what} was cancelled by the caller")
            }
            HostError::Cancelled { extension, what } => {
                write!(f, "{what} of extension {extension:?} was cancelled by the caller")
            }
            HostError::Internal(m) => write!(f, "internal error: {m}"),
            HostError::TooLarge { extension, what } => write!(f, "extension {extension:?}: {what}"),
            HostError::UnknownCall(id) => write!(f, "no call {id:?} waits for an answer"),
            HostError::UnknownResource(uri) => write!(f, "no server offers resource {uri:?}"),
            HostError::ReadFailed { server, uri, why } => write!(f, "server {server:?} could not read resource {uri:?}: {why}"),
        }
    }
}

impl std::error::Error for HostError {}

/// `1.5s`, `250ms`.
pub fn fmt_duration(d: Duration) -> String {
    if d.as_millis() % 1000 == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}
