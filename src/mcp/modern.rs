//! `zot mcp` in MCP's 2026-07-28 era (docs/protocol.md §8.4.1–8.4.2): which era
//! a connection speaks, the envelope every modern request carries and its
//! checks in order, the stamp on every modern result, `server/discover`,
//! and `subscriptions/listen` (acknowledgment, tagged list changes, the
//! client's cancel, the graceful end on a signal).

use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;

use super::reply::{bad_params, Reply, Shared};
use super::wire::{codes, encode, stamp, level_index, Sub, CAPS, CLIENT_INFO, INSTRUCTIONS, LEGACY, LEVELS, LOG_LEVEL, MODERN, MODERN_ERA, PV, SUB_ID, UNDECIDED};

/// The methods a modern connection serves.
const SERVED: [&str; 10] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "tools/call",
    "prompts/get",
    "zot/reload",
    "subscriptions/listen",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Whether `params._meta` carries the protocol version key, whatever its
/// value: the key alone marks a modern request.
pub(super) fn has_pv(params: &Map<String, Value>) -> bool {
    params.get("_meta").and_then(Value::as_object).is_some_and(|m| m.contains_key(PV))
}

/// The client's name from the envelope, for stderr.
pub(super) fn client_name(params: &Map<String, Value>) -> String {
    let meta = params.get("_meta").and_then(Value::as_object);
    let name = meta.and_then(|m| m.get(CLIENT_INFO)).and_then(|i| i.get("name")).and_then(Value::as_str);
    name.unwrap_or("unknown").to_string()
}

/// Decides the era on a connection's first request (rule 1); returns the era.
pub(super) fn decide(shared: &Shared, method: &str, params: &Map<String, Value>) -> u8 {
    let era = shared.gate.era.load(Ordering::SeqCst);
    if era != UNDECIDED {
        return era;
    }
    let pv = has_pv(params);
    let era = if method == "initialize" {
        LEGACY
    } else if pv {
        eprintln!("zot mcp: {MODERN} from {}", crate::text::strip_controls(&client_name(params)));
        MODERN_ERA
    } else if method == "server/discover" {
        // An older probe: -32601 as before, and the era stays open.
        return LEGACY;
    } else {
        LEGACY
    };
    shared.gate.era.store(era, Ordering::SeqCst);
    era
}

/// The refusal of an `initialize` on a modern connection (rule 2).
pub(super) fn refuse_initialize(reply: Reply, params: &Map<String, Value>) {
    let mut data = json!({"supported": [MODERN]});
    if let Some(v) = params.get("protocolVersion") {
        data["requested"] = v.clone();
    }
    let msg = format!("this connection serves the {MODERN} protocol; initialize is not accepted on it");
    reply.err(codes::UNSUPPORTED_VERSION, &msg, Some(data));
}

/// Rule 4 b–e for a modern request; the request's `logLevel` (its index)
/// when it passes, else the answer is given and `None` returned.
pub(super) fn check(method: &str, params: &Map<String, Value>, reply: Reply) -> Option<(Reply, Option<u8>)> {
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        bad_params(reply, &format!("`_meta` must be an object carrying {PV:?} and {CAPS:?}"));
        return None;
    };
    let pv = match meta.get(PV) {
        Some(Value::String(v)) => v,
        _ => {
            bad_params(reply, &format!("`_meta` key {PV:?} must be a string"));
            return None;
        }
    };
    if !meta.get(CAPS).is_some_and(Value::is_object) {
        bad_params(reply, &format!("`_meta` key {CAPS:?} must be an object"));
        return None;
    }
    if pv != MODERN {
        let msg = format!("unsupported protocol version {pv:?} (supported: {MODERN})");
        reply.err(codes::UNSUPPORTED_VERSION, &msg, Some(json!({"supported": [MODERN], "requested": pv})));
        return None;
    }
    let level = match meta.get(LOG_LEVEL) {
        None => None,
        Some(l) => match l.as_str().and_then(level_index) {
            Some(i) => Some(i),
            None => {
                bad_params(reply, &format!("`_meta` key {LOG_LEVEL:?} must be one of {}", LEVELS.join(", ")));
                return None;
            }
        },
    };
    if !SERVED.contains(&method) {
        reply.err(codes::METHOD_NOT_FOUND, &format!("method not found: {method:?}"), None);
        return None;
    }
    Some((reply, level))
}

/// The `server/discover` result (before the stamp).
pub(super) fn discover() -> Value {
    json!({
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {"listChanged": true}, "prompts": {"listChanged": true}, "resources": {"listChanged": true}, "logging": {}},
        "instructions": INSTRUCTIONS,
        "ttlMs": 3_600_000,
        "cacheScope": "public",
    })
}

/// A list result as a modern client caches it: never, and only for itself.
pub(super) fn uncached(mut list: Value) -> Value {
    list["ttlMs"] = json!(0);
    list["cacheScope"] = json!("private");
    list
}

/// `subscriptions/listen` (rule 6): the acknowledgment, then the
/// subscription is in force; the request itself is answered only at the
/// graceful end.
pub(super) fn listen(shared: &Shared, params: &Map<String, Value>, reply: Reply) {
    let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
        return bad_params(reply, "param `notifications` must be an object");
    };
    let want = |k: &str| filter.get(k).and_then(Value::as_bool) == Some(true);
    let (tools, prompts, resources) = (want("toolsListChanged"), want("promptsListChanged"), want("resourcesListChanged"));
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), json!(true));
    }
    if prompts {
        honoured.insert("promptsListChanged".into(), json!(true));
    }
    if resources {
        honoured.insert("resourcesListChanged".into(), json!(true));
    }
    let id = reply.id.clone();
    let key = reply.key().to_string();
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": { SUB_ID: id }, "notifications": honoured}});
    let Ok(mut subs) = shared.subs.lock() else { return };
    // Written before the subscription is in force: no change overtakes it.
    shared.send(encode(&ack));
    subs.push(Sub { id, key, tools, prompts, resources });
    drop(subs);
    // The request stays open, answered only at the graceful end: its id
    // stays in use (its flight is kept) until the client cancels it.
    let mut reply = reply;
    reply.key = None;
    drop(reply);
}

/// The client's cancel of a subscription: nothing more is written for it.
pub(super) fn cancel(shared: &Shared, key: &str) -> bool {
    let Ok(mut subs) = shared.subs.lock() else { return false };
    let before = subs.len();
    subs.retain(|s| s.key != key);
    let ended = before != subs.len();
    drop(subs);
    if ended {
        if let Ok(mut f) = shared.flights.lock() {
            f.remove(key);
        }
    }
    ended
}

/// The graceful end (a termination signal): each open subscription is
/// answered, and none is open after.
pub(super) fn end_all(shared: &Shared) {
    let Ok(mut subs) = shared.subs.lock() else { return };
    for s in subs.drain(..) {
        // A result like any other: stamped (rule 5) beside its own tag.
        let mut result = json!({"_meta": { SUB_ID: s.id }});
        stamp(&mut result);
        shared.send(encode(&json!({"jsonrpc": "2.0", "id": s.id, "result": result})));
    }
}
