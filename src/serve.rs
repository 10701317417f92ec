//! `zot serve`: the host protocol of docs/protocol.md §4 on stdin/stdout, so an
//! agent in any language can use zot as its extension subsystem. Requests
//! are handed to the host as they arrive and answered as each completes;
//! host events become notifications. Stdout carries protocol lines only.

use crate::host::{AgentTool, Config, HostError, HostEvent, Request, Response, ToolCall};
use crate::protocol::{Element, IdField, Message, Payload, WireId};
use crossbeam_channel::{Receiver, Sender};
use crate::stdio::{self, Line, Lines, Output, Pending};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

/// Runs `zot serve` on the process's stdin/stdout until `shutdown` or end
/// of input; returns the exit code.
pub fn run(config: Config) -> i32 {
    serve_with(config, io::stdin(), io::stdout(), stdio::nonblocking_stdout(), true)
}

/// Serves requests read from `input`, writing protocol lines to `output`.
/// With `exit_on_shutdown`, the process exits as soon as the host has
/// stopped, even if `input` never ends.
///
/// Responses and notifications are queued for the one writer thread from
/// the host's dispatcher thread, where they happen, so they are written in
/// that order (docs/protocol.md §4, order of output). Requests are read at once:
/// `ping` and `list` are answered during the initial load, the others wait
/// in the host for it to end.
/// With `direct`, a non-blocking description of the same output
/// ([`stdio::nonblocking_stdout`]), responses are written without a thread
/// hand-off when the pipe has room.
pub fn serve_with<R: Read, W: Write + Send + 'static>(
    mut config: Config,
    input: R,
    output: W,
    direct: Option<std::fs::File>,
    exit_on_shutdown: bool,
) -> i32 {
    config.hold_until_loaded = true;
    let Some((out_tx, writer)) = Output::start("zot serve", output, direct) else {
        return 1;
    };
    let sink = {
        let out = out_tx.clone();
        Box::new(move |ev| {
            // §4 has no notification for a server's prompts listed again.
            if !matches!(ev, HostEvent::CommandsListed { .. }) {
                out.line(&encode(&ev))
            }
        })
    };
    let idle = {
        let out = out_tx.clone();
        Box::new(move || out.write_ready())
    };
    let Some(host) = stdio::start_host_idle(config, "zot serve", exit_on_shutdown, sink, idle) else {
        return 1;
    };

    let stopping = Arc::new(AtomicBool::new(false));
    let mut in_flight = InFlight::default();
    let pending = Arc::new(Pending::default());
    // The thread that stops the host is started here, not at `shutdown`,
    // so that a stop does not wait for a thread to be created. A
    // `shutdown` request goes to the host at once, from the reading
    // thread; this thread gets its id and writes its response once every
    // extension has stopped and every request in flight is answered. At
    // the end of input (no id), accepted requests first run to their end.
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<Option<(WireId, Receiver<()>)>>(1);
    let stopper = {
        let (host, out, pending) = (host.clone(), out_tx.clone(), pending.clone());
        thread::Builder::new().name("zot-serve-stop".into()).spawn(move || {
            let Ok(cue) = stop_rx.recv() else { return };
            match cue {
                None => {
                    // Nobody is left to answer an interactive tool: those
                    // in flight are cancelled so that the rest can end.
                    let _ = host.call(Request::EndOfInput);
                    pending.wait_idle();
                    host.shutdown();
                }
                Some((id, stopped)) => {
                    let _ = stopped.recv();
                    // The process is about to exit: what the host wrote is
                    // made durable, and the dispatcher's own end (it has
                    // nothing left to answer) is not waited for.
                    if exit_on_shutdown {
                        host.flush_for_exit();
                    } else {
                        host.shutdown();
                    }
                    out.line(&ok(Some(&id), json!({})));
                }
            }
            out.flush();
            if exit_on_shutdown {
                std::process::exit(0);
            }
        })
    };
    let stopper = match stopper {
        Ok(h) => h,
        Err(e) => {
            eprintln!("zot serve: cannot start a thread: {e}");
            return 1;
        }
    };
    let start_stop = |reply: Option<WireId>| {
        if stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        let cue = reply.map(|id| {
            let (done, stopped) = crossbeam_channel::bounded(1);
            host.submit(Request::Shutdown, move |_| {
                let _ = done.send(());
            });
            (id, stopped)
        });
        let _ = stop_tx.send(cue);
    };

    // Read here, so that what is buffered can be seen: requests that
    // arrived together are handed over together, the dispatcher woken once
    // for all of them.
    let mut input = io::BufReader::with_capacity(64 * 1024, input);
    let mut lines = Lines::default();
    loop {
        if !input.buffer().contains(&b'\n') {
            host.wake();
        }
        let Some(line) = lines.next(&mut input) else { break };
        let more = input.buffer().contains(&b'\n');
        let text = match line {
            Line::Text(t) => t,
            Line::TooLong => {
                let msg = format!("request line longer than {} bytes", stdio::MAX_LINE);
                out_tx.line(&err(None, "bad_request", &msg));
                continue;
            }
        };
        match parse_request(text) {
            Err((id, msg)) => {
                out_tx.line(&err(id.as_ref(), "bad_request", &msg));
            }
            Ok((id, _)) if stopping.load(Ordering::SeqCst) => {
                let e = HostError::ShuttingDown;
                out_tx.line(&err(Some(&id), e.code(), &e.to_string()));
            }
            // Its cancel would be ambiguous (docs/protocol.md §4): not run.
            Ok((id, _)) if in_flight.busy(&id) => {
                let msg = format!("id {id} is already in use by a request still in flight");
                out_tx.line(&err(Some(&id), "bad_request", &msg));
            }
            Ok((id, Method::Ping)) => {
                out_tx.line(&ok(Some(&id), json!({"pong": true})));
            }
            Ok((id, Method::Shutdown)) => start_stop(Some(id)),
            Ok((id, Method::Cancel(target))) => match in_flight.key_of(&target) {
                // Already answered (or never asked): nothing to cancel.
                None => out_tx.line(&ok(Some(&id), json!({"cancelled": false}))),
                Some(key) => {
                    let out = out_tx.clone();
                    let done = pending.begin();
                    host.submit_quiet(Request::Cancel { key }, more, move |r| {
                        let _done = done;
                        let line = match r {
                            Ok(Response::Cancelled(c)) => ok(Some(&id), json!({"cancelled": c})),
                            Ok(other) => result_line(&id, other),
                            Err(e) => err(Some(&id), e.code(), &e.message()),
                        };
                        out.line(&line);
                    });
                }
            },
            Ok((id, Method::Host(req))) => {
                let out = out_tx.clone();
                let done = pending.begin();
                let (key, answered) = in_flight.begin(&id);
                let responder = crate::host::Responder::new(move |r| {
                    let _done = done;
                    let line = match r {
                        Ok(resp) => result_line(&id, resp),
                        Err(e) => err(Some(&id), e.code(), &e.message()),
                    };
                    // Before the line: an agent that reads the answer and
                    // reuses the id at once finds it free.
                    answered.send(id);
                    out.line(&line);
                })
                .with_key(key);
                host.submit_quiet_responder(req, more, responder);
            }
        }
    }
    // End of input means the same as `shutdown`.
    start_stop(None);
    let _ = stopper.join();
    drop(host);
    out_tx.finish(writer);
    0
}

enum Method {
    Ping,
    Shutdown,
    /// `cancel`: the id of the request to give up on.
    Cancel(WireId),
    Host(Request),
}

/// The requests handed to the host and not answered yet, by id, with the
/// key each was submitted with: what a `cancel` names. Only the reading
/// thread looks an id up, so the map is its own, without a lock; an answer
/// (on the dispatcher thread) sends its id and key back on a channel,
/// which the map takes in before a `cancel` looks its target up, and
/// whenever it has doubled since it last did.
struct InFlight {
    next: u64,
    keys: HashMap<WireId, u64>,
    /// Taken in when `keys` reaches this size.
    take_in_at: usize,
    answered_tx: Sender<(WireId, u64)>,
    answered_rx: Receiver<(WireId, u64)>,
}

/// What an answer tells [`InFlight`]: its request is no longer in flight.
struct Answered {
    key: u64,
    tx: Sender<(WireId, u64)>,
}

impl Answered {
    fn send(&self, id: WireId) {
        let _ = self.tx.send((id, self.key));
    }
}

const TAKE_IN_MIN: usize = 1024;

impl Default for InFlight {
    fn default() -> InFlight {
        let (answered_tx, answered_rx) = crossbeam_channel::unbounded();
        InFlight { next: 0, keys: HashMap::new(), take_in_at: TAKE_IN_MIN, answered_tx, answered_rx }
    }
}

impl InFlight {
    /// A key for the request `id`, now in flight, and what its answer
    /// sends back. The id must not be [`busy`](Self::busy).
    fn begin(&mut self, id: &WireId) -> (u64, Answered) {
        if self.keys.len() >= self.take_in_at {
            self.take_in();
            self.take_in_at = (2 * self.keys.len()).max(TAKE_IN_MIN);
        }
        self.next += 1;
        let key = self.next;
        self.keys.insert(id.clone(), key);
        (key, Answered { key, tx: self.answered_tx.clone() })
    }

    /// Lets go of the requests answered so far.
    fn take_in(&mut self) {
        for (id, key) in self.answered_rx.try_iter() {
            if self.keys.get(&id) == Some(&key) {
                self.keys.remove(&id);
            }
        }
    }

    /// Whether a request with the id `id` is still in flight (compared as
    /// JSON text: `1` and `"1"` are two ids).
    fn busy(&mut self, id: &WireId) -> bool {
        self.keys.contains_key(id) && {
            self.take_in();
            self.keys.contains_key(id)
        }
    }

    fn key_of(&mut self, id: &WireId) -> Option<u64> {
        self.take_in();
        self.keys.get(id).copied()
    }
}

/// Parses one request line into its id, kept as its JSON text, and its
/// method; on failure, the id to answer with (null when there is none)
/// and a message.
fn parse_request(text: &[u8]) -> Result<(WireId, Method), (Option<WireId>, String)> {
    // A client's invalid text is refused, never repaired (docs/protocol.md §2).
    let m: Message = serde_json::from_slice(text).map_err(|e| (None, format!("invalid JSON: {e}")))?;
    let Message::One(Element::Object(mut obj)) = m else {
        return Err((None, "a request must be a JSON object".into()));
    };
    let id = match std::mem::replace(&mut obj.id, IdField::Absent) {
        IdField::Id(id) => id,
        IdField::Other(_) => return Err((None, "`id` must be a string or a number".into())),
        IdField::Absent => return Err((None, "missing `id`".into())),
    };
    let method = match obj.rest.remove("type") {
        Some(Value::String(t)) => t,
        Some(_) => return Err((Some(id), "`type` must be a string".into())),
        None => return Err((Some(id), "missing `type`".into())),
    };
    if method == "cancel" {
        return match obj.target {
            IdField::Id(t) => Ok((id, Method::Cancel(t))),
            IdField::Absent => Err((Some(id), "missing param `target`".into())),
            IdField::Other(_) => Err((Some(id), "param `target` must be a string or a number".into())),
        };
    }
    obj.target_to_rest();
    match build(&method, obj.rest) {
        // Progress of the call is told with the request's own id (tool_progress).
        Ok(Method::Host(Request::ToolCall(mut call))) => {
            call.progress_key = Some(id.clone());
            Ok((id, Method::Host(Request::ToolCall(call))))
        }
        Ok(m) => Ok((id, m)),
        Err(msg) => Err((Some(id), msg)),
    }
}

fn build(method: &str, mut p: Map<String, Value>) -> Result<Method, String> {
    let req = match method {
        "ping" => return Ok(Method::Ping),
        "shutdown" => return Ok(Method::Shutdown),
        "restart" => Request::Restart { name: req_str(&mut p, "name")? },
        "list" => Request::List,
        "resources" => Request::Resources,
        "read_resource" => Request::ReadResource { uri: req_str(&mut p, "uri")? },
        "reload" => Request::Reload,
        "command" => Request::Command {
            name: req_str(&mut p, "name")?,
            args: opt_str(&mut p, "args")?.unwrap_or_default(),
        },
        "tool" => {
            let args = match p.remove("args") {
                None | Some(Value::Null) => None,
                Some(v @ Value::Object(_)) => Some(v),
                Some(_) => return Err("param `args` must be an object".into()),
            };
            Request::ToolCall(ToolCall {
                name: req_str(&mut p, "name")?,
                args,
                tool_id: opt_id(&mut p, "tool_id")?,
                operation_key: p.remove("operation_key").filter(|v| !v.is_null()),
                reconcile: p.remove("reconcile").filter(|v| !v.is_null()),
                as_model: false,
                progress_key: None,
            })
        }
        "intercept" | "event" => {
            let event = req_str(&mut p, "event")?;
            if event == "before_agent_start" && p.get("system_prompt").is_some_and(|v| !v.is_string() && !v.is_null()) {
                return Err("param `system_prompt` must be a string".into());
            }
            let payload: Payload = p;
            if method == "intercept" {
                Request::Intercept { event, payload }
            } else {
                Request::Event { event, payload }
            }
        }
        "agent_tools" => {
            let Some(Value::Array(list)) = p.remove("tools") else {
                return Err("param `tools` must be an array".into());
            };
            let mut tools = Vec::new();
            for (i, t) in list.into_iter().enumerate() {
                let Value::Object(mut t) = t else { return Err(format!("tools[{i}] must be an object")) };
                let name = req_str(&mut t, "name").map_err(|e| format!("tools[{i}]: {e}"))?;
                let description = opt_str(&mut t, "description").map_err(|e| format!("tools[{i}]: {e}"))?.unwrap_or_default();
                let schema = match t.remove("schema") {
                    None | Some(Value::Null) => json!({"type": "object"}),
                    Some(s @ Value::Object(_)) => s,
                    Some(_) => return Err(format!("tools[{i}]: param `schema` must be an object")),
                };
                tools.push(AgentTool { name, description, schema });
            }
            Request::AgentTools(tools)
        }
        "call_tool_result" => Request::CallToolResult {
            call_id: req_str(&mut p, "call_id")?,
            content: match p.remove("content") {
                Some(Value::Array(c)) => c,
                None => return Err("missing param `content`".into()),
                Some(_) => return Err("param `content` must be an array".into()),
            },
            is_error: match p.remove("is_error") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(_) => return Err("param `is_error` must be a boolean".into()),
            },
            structured_content: p.remove("structured_content").filter(|v| !v.is_null()),
        },
        "panel_key" => Request::PanelKey {
            extension: req_str(&mut p, "extension")?,
            panel_id: req_str(&mut p, "panel_id")?,
            key: req_str(&mut p, "key")?,
            text: opt_str(&mut p, "text")?,
        },
        "panel_close" => Request::PanelClose {
            extension: req_str(&mut p, "extension")?,
            panel_id: req_str(&mut p, "panel_id")?,
        },
        other => return Err(format!("unknown method {other:?}")),
    };
    Ok(Method::Host(req))
}

fn req_str(p: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match p.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("param `{key}` must be a string")),
        None => Err(format!("missing param `{key}`")),
    }
}

fn opt_str(p: &mut Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match p.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("param `{key}` must be a string")),
    }
}

fn opt_id(p: &mut Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match p.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("param `{key}` must be a string")),
    }
}

/// A response line; fields in the order of docs/protocol.md §4.
#[derive(Serialize)]
struct Reply<'a, T: Serialize> {
    #[serde(rename = "type")]
    ty: &'static str,
    /// `null` for a line that has no usable id.
    id: Option<&'a WireId>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody>,
}

#[derive(Serialize)]
struct ErrorBody {
    code: &'static str,
    message: String,
}

fn result_line(id: &WireId, r: Response) -> Vec<u8> {
    let id = Some(id);
    match r {
        Response::Delivered(n) => ok(id, json!({ "delivered": n })),
        Response::Done => ok(id, json!({})),
        Response::Cancelled(c) => ok(id, json!({ "cancelled": c })),
        other => ok(id, other),
    }
}

fn ok<T: Serialize>(id: Option<&WireId>, result: T) -> Vec<u8> {
    encode(&Reply { ty: "response", id, ok: true, result: Some(result), error: None })
}

fn err(id: Option<&WireId>, code: &'static str, message: &str) -> Vec<u8> {
    let error = Some(ErrorBody { code, message: message.to_string() });
    encode(&Reply::<()> { ty: "response", id, ok: false, result: None, error })
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    b.push(b'\n');
    b
}

#[cfg(test)]
mod tests {
    use super::InFlight;
    use crate::protocol::WireId;
    use serde_json::{json, Value};

    fn id(v: Value) -> WireId {
        WireId::from_value(&v).unwrap()
    }

    #[test]
    fn an_id_is_busy_until_its_request_is_answered() {
        let mut f = InFlight::default();
        let (k1, a1) = f.begin(&id(json!("a")));
        let (k3, _a3) = f.begin(&id(json!(1)));
        assert!(f.busy(&id(json!("a"))));
        assert_eq!(f.key_of(&id(json!("a"))), Some(k1));
        // `1` and `"1"` are two ids.
        assert_eq!(f.key_of(&id(json!(1))), Some(k3));
        assert_eq!(f.key_of(&id(json!("1"))), None);
        assert!(!f.busy(&id(json!("1"))));
        a1.send(id(json!("a")));
        assert!(!f.busy(&id(json!("a"))));
        assert_eq!(f.key_of(&id(json!("a"))), None);
        assert_eq!(f.key_of(&id(json!(1))), Some(k3));
    }

    #[test]
    fn answered_requests_are_let_go_while_requests_keep_coming() {
        let mut f = InFlight::default();
        let held: Vec<(WireId, u64)> = (0..10).map(|i| (id(json!(format!("held{i}"))), f.begin(&id(json!(format!("held{i}")))).0)).collect();
        for i in 0..50_000 {
            let i = id(json!(i));
            let (_, answered) = f.begin(&i);
            answered.send(i);
        }
        assert!(f.keys.len() < 2100, "{} ids kept", f.keys.len());
        for (i, key) in held {
            assert_eq!(f.key_of(&i), Some(key));
        }
        assert_eq!(f.key_of(&id(json!(49_999))), None);
    }
}
