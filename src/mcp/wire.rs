//! The words of `zot mcp` on the wire, which every other room uses: the
//! JSON-RPC error codes, the log levels, the two eras and the modern
//! envelope's keys, a notification and a log message as JSON, one line of
//! output, the gate on notifications and an open subscription. Nothing
//! here acts.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// JSON-RPC 2.0 error codes used by `zot mcp`.
pub mod codes {
    /// Not JSON (answered with `"id": null`).
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request object (no `method`, bad `id`, wrong `jsonrpc`).
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Missing or mistyped params, an unknown tool or prompt, an unknown level.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A command that answered with an `error`, or a host error while
    /// getting a prompt (the message says which).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A modern request of a revision this server does not speak, or an
    /// `initialize` on a modern connection (docs/protocol.md §8.4).
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// What `initialize` and `server/discover` say about this server.
pub(super) const INSTRUCTIONS: &str = "Tools and prompts of zot extensions. A prompt is an extension's slash command; its one argument, args, is the text after the command name.";

/// JSON-RPC error of a `resources/read` no server can answer (MCP's
/// "resource not found").
pub(super) const RESOURCE_NOT_FOUND: i64 = -32002;

/// MCP's log levels (RFC 5424 severities), least severe first.
pub(super) const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
pub(super) const DEBUG: u8 = 0;
pub(super) const INFO: u8 = 1;
pub(super) const NOTICE: u8 = 2;
pub(super) const WARNING: u8 = 3;
pub(super) const ERROR: u8 = 4;

/// The one modern revision zot speaks.
pub const MODERN: &str = "2026-07-28";
/// The envelope's keys in `params._meta`.
pub const PV: &str = "io.modelcontextprotocol/protocolVersion";
pub const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The stamp on every modern result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The tag of a subscription's messages.
pub const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The era of a connection, decided once by its first request.
pub const UNDECIDED: u8 = 0;
pub const LEGACY: u8 = 1;
pub const MODERN_ERA: u8 = 2;

/// Whether notifications may be sent yet, and from which level; and the
/// connection's era ([`super::modern`]).
pub(super) struct Gate {
    pub(super) open: AtomicBool,
    pub(super) level: AtomicU8,
    pub(super) era: AtomicU8,
}

impl Gate {
    pub(super) fn allows(&self, level: u8) -> bool {
        self.open.load(Ordering::SeqCst) && level >= self.level.load(Ordering::SeqCst)
    }
}

pub(super) fn level_index(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).and_then(|i| u8::try_from(i).ok())
}

pub(super) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub(super) fn log_message(level: u8, logger: &str, data: Value) -> Value {
    let level = LEVELS[usize::from(level).min(LEVELS.len() - 1)];
    notification("notifications/message", json!({"level": level, "logger": logger, "data": data}))
}

/// An open `subscriptions/listen`.
pub(super) struct Sub {
    pub(super) id: Option<crate::protocol::WireId>,
    pub(super) key: String,
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
}

/// Rule 5: `resultType` and the server's stamp, beside the result's own `_meta`.
pub(super) fn stamp(result: &mut Value) {
    let Value::Object(r) = result else { return };
    r.insert("resultType".into(), json!("complete"));
    let info = json!({"name": "zot", "version": crate::VERSION});
    match r.get_mut("_meta") {
        Some(Value::Object(m)) => {
            m.insert(SERVER_INFO.into(), info);
        }
        _ => {
            r.insert("_meta".into(), json!({ SERVER_INFO: info }));
        }
    }
}

/// A message as one line of output.
pub(super) fn encode(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    b.push(b'\n');
    b
}
