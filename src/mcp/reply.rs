//! Answering messages: the state the reader, the tool threads and the
//! responders share (the flights table of requests in progress), the
//! `Reply` that is sent when dropped (straight out or into a batch's
//! answer), and the JSON-RPC error answers.

use crate::protocol::WireId;
use crate::stdio::{Done, Out, Pending};
use crossbeam_channel::Sender;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::wire::{codes, encode, log_message, notification, stamp, Gate, Sub, MODERN_ERA, SUB_ID};

/// A request being handled.
#[derive(Default)]
pub(super) struct Flight {
    pub(super) cancelled: bool,
    /// Set once the tool call went to the host (`tools/call` only).
    pub(super) tool_id: Option<String>,
    /// Set once the read went to the host (`resources/read` only): its key.
    pub(super) read: Option<u64>,
    /// A modern request that asked for notes (rule 9 of docs/protocol.md
    /// §8.4.2): the extension running it and the least level.
    pub(super) notes: Option<(String, u8)>,
}

/// State shared by the reader, the `tools/call` threads and the responders
/// (which run on the host's dispatcher thread, so nothing here holds the
/// host).
pub(super) struct Shared {
    pub(super) out: Sender<Out>,
    pub(super) gate: Arc<Gate>,
    pub(super) flights: Mutex<HashMap<String, Flight>>,
    pub(super) pending: Arc<Pending>,
    pub(super) seq: AtomicU64,
    /// Open `subscriptions/listen` requests of a modern connection.
    pub(super) subs: Mutex<Vec<Sub>>,
}

impl Shared {
    pub(super) fn send(&self, line: Vec<u8>) {
        let _ = self.out.send(Out::Line(line));
    }

    /// A notification, when the gate is open.
    pub(super) fn notify(&self, method: &str, params: Value) {
        if self.gate.open.load(Ordering::SeqCst) {
            self.send(encode(&notification(method, params)));
        }
    }

    /// A `notifications/message`, when its level passes.
    pub(super) fn log(&self, level: u8, logger: &str, data: Value) {
        if self.gate.allows(level) {
            self.send(encode(&log_message(level, logger, data)));
        }
    }

    pub(super) fn modern(&self) -> bool {
        self.gate.era.load(Ordering::SeqCst) == MODERN_ERA
    }

    pub(super) fn lists_changed(&self) {
        if self.modern() {
            return changed(self, true, true);
        }
        self.notify("notifications/tools/list_changed", json!({}));
        self.notify("notifications/prompts/list_changed", json!({}));
    }

    /// A note of `extension` inside a modern request that asked for notes
    /// at or below `level`: sent, before that request's answer; false when
    /// no such request is in flight (the note goes to stderr).
    pub(super) fn note(&self, extension: &str, level: u8, message: &str) -> bool {
        let Ok(flights) = self.flights.lock() else { return false };
        let asked = flights.values().filter_map(|f| f.notes.as_ref()).any(|(e, least)| e == extension && level >= *least);
        if asked {
            self.send(encode(&log_message(level, extension, json!(message))));
        }
        asked
    }

    pub(super) fn cancelled(&self, key: &str) -> bool {
        self.flights.lock().map(|f| f.get(key).is_some_and(|f| f.cancelled)).unwrap_or(false)
    }

    /// Runs `start` (which hands the tool call to the host) and records
    /// `tool_id`, unless the request was cancelled; under the lock, so that
    /// a cancel either comes first or finds the tool id.
    pub(super) fn start_tool(&self, key: &str, tool_id: &str, start: impl FnOnce()) -> bool {
        let Ok(mut flights) = self.flights.lock() else { return false };
        match flights.get_mut(key) {
            Some(f) if !f.cancelled => {
                start();
                f.tool_id = Some(tool_id.to_string());
                true
            }
            _ => false,
        }
    }

    /// Runs `start` (which hands the read to the host with the key `read`)
    /// and records the key, unless the request was cancelled; under the
    /// lock, as [`Shared::start_tool`].
    pub(super) fn start_read(&self, key: &str, read: u64, start: impl FnOnce()) -> bool {
        let Ok(mut flights) = self.flights.lock() else { return false };
        match flights.get_mut(key) {
            Some(f) if !f.cancelled => {
                start();
                f.read = Some(read);
                true
            }
            _ => false,
        }
    }

    /// Marks the request cancelled; `cancel_tool` runs, under the lock, with
    /// the tool id when its tool call is with the host, `cancel_read` with
    /// the key of its read.
    pub(super) fn cancel(&self, key: &str, cancel_tool: impl FnOnce(&str), cancel_read: impl FnOnce(u64)) -> bool {
        let Ok(mut flights) = self.flights.lock() else { return false };
        let Some(f) = flights.get_mut(key) else { return false };
        f.cancelled = true;
        if let Some(t) = &f.tool_id {
            cancel_tool(t);
        }
        if let Some(k) = f.read {
            cancel_read(k);
        }
        true
    }
}

/// Where a response goes: straight out, or into the answer to a batch.
#[derive(Clone)]
pub(super) enum Sink {
    Direct,
    Batch(Arc<Batch>),
}

pub(super) struct Batch {
    /// Elements not answered yet, and the answers so far (each encoded).
    pub(super) state: Mutex<(usize, Vec<Vec<u8>>)>,
}

/// The answer to one message, sent when dropped: to the sink, unless the
/// request was cancelled (MCP: no response to a cancelled request). Every
/// message gets one (a notification's carries nothing), so a batch knows
/// when it is complete and shutdown when everything is answered.
pub(super) struct Reply {
    shared: Arc<Shared>,
    sink: Sink,
    /// Kept as its JSON text, echoed exactly; `None` is `null`.
    pub(super) id: Option<WireId>,
    /// Key in the flights table.
    pub(super) key: Option<String>,
    /// The answer, encoded (without a newline).
    msg: Option<Vec<u8>>,
    /// The `initialize` answer: opens the gate once written.
    pub(super) opens: bool,
    /// On a modern connection: every result is stamped (docs/protocol.md §8.4.2 rule 5).
    modern: bool,
    _done: Done,
}

impl Reply {
    pub(super) fn new(shared: &Arc<Shared>, sink: &Sink, id: Option<WireId>) -> Reply {
        let done = shared.pending.begin();
        let modern = shared.modern();
        Reply { shared: shared.clone(), sink: sink.clone(), id, key: None, msg: None, opens: false, modern, _done: done }
    }

    /// A reply on a connection that has just become modern.
    pub(super) fn modern(mut self) -> Reply {
        self.modern = true;
        self
    }

    pub(super) fn with_id(mut self, id: WireId) -> Reply {
        self.id = Some(id);
        self
    }

    pub(super) fn ok(mut self, mut result: Value) {
        if self.modern {
            stamp(&mut result);
        }
        self.msg = Some(answer(self.id.as_ref(), Some(result), None));
    }

    pub(super) fn err(mut self, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({"code": code, "message": message});
        if let Some(d) = data {
            error["data"] = d;
        }
        self.msg = Some(answer(self.id.as_ref(), None, Some(error)));
    }

    pub(super) fn key(&self) -> &str {
        self.key.as_deref().unwrap_or("")
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        let mut msg = self.msg.take();
        if let Some(key) = &self.key {
            let flight = self.shared.flights.lock().ok().and_then(|mut f| f.remove(key));
            if flight.is_some_and(|f| f.cancelled) {
                msg = None;
            }
        }
        match &self.sink {
            Sink::Direct => {
                if let Some(mut m) = msg {
                    m.push(b'\n');
                    let _ = self.shared.out.send(Out::Line(m));
                    // Notifications may flow once the `initialize` answer is
                    // queued: whatever is queued after it is written after it.
                    if self.opens {
                        self.shared.gate.open.store(true, Ordering::SeqCst);
                    }
                }
            }
            Sink::Batch(b) => {
                if self.opens && msg.is_some() {
                    self.shared.gate.open.store(true, Ordering::SeqCst);
                }
                let Ok(mut st) = b.state.lock() else { return };
                st.0 -= 1;
                st.1.extend(msg);
                // JSON-RPC: a batch of notifications only gets nothing back.
                if st.0 == 0 && !st.1.is_empty() {
                    let mut line = b"[".to_vec();
                    for (i, m) in std::mem::take(&mut st.1).into_iter().enumerate() {
                        if i > 0 {
                            line.push(b',');
                        }
                        line.extend_from_slice(&m);
                    }
                    line.extend_from_slice(b"]\n");
                    self.shared.send(line);
                }
            }
        }
    }
}

pub(super) fn bad_params(reply: Reply, message: &str) {
    reply.err(codes::INVALID_PARAMS, &format!("invalid params: {message}"), None);
}

pub(super) fn internal(reply: Reply, message: &str) {
    reply.err(codes::INTERNAL_ERROR, message, None);
}

/// -32600, with `id` when it is a usable one (else the reply's own id).
pub(super) fn invalid(reply: Reply, id: Option<WireId>, message: &str) {
    let reply = match id {
        Some(id) => reply.with_id(id),
        None => reply,
    };
    reply.err(codes::INVALID_REQUEST, &format!("invalid request: {message}"), None);
}

/// The flights-table key of a request id, its JSON text: `7` and `"7"`
/// are different ids, and so are `1` and `1.0`.
pub(super) fn id_key(id: &WireId) -> String {
    id.text().to_string()
}

/// A response, encoded, its id written as the text it came as.
fn answer(id: Option<&WireId>, result: Option<Value>, error: Option<Value>) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        jsonrpc: &'static str,
        id: Option<&'a WireId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<Value>,
    }
    serde_json::to_vec(&Answer { jsonrpc: "2.0", id, result, error }).unwrap_or_else(|_| b"{}".to_vec())
}

/// A change of the resources on offer, to every open subscription that
/// asked for it.
pub(super) fn resources_changed(shared: &Shared) {
    let Ok(subs) = shared.subs.lock() else { return };
    for s in subs.iter().filter(|s| s.resources) {
        let params = json!({"_meta": { SUB_ID: s.id }});
        shared.send(encode(&json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed", "params": params})));
    }
}

/// A change of the tools (and/or prompts) on offer, to every open
/// subscription that asked for it.
pub(super) fn changed(shared: &Shared, tools: bool, prompts: bool) {
    let Ok(subs) = shared.subs.lock() else { return };
    for s in subs.iter() {
        for (asked, changed, method) in [(s.tools, tools, "notifications/tools/list_changed"), (s.prompts, prompts, "notifications/prompts/list_changed")] {
            if asked && changed {
                shared.send(encode(&json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": { SUB_ID: s.id }}})));
            }
        }
    }
}
