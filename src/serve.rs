//! `zot serve`: the host protocol of PROTOCOL.md §4 on stdin/stdout, so an
//! agent in any language can use zot as its extension subsystem. Requests
//! are handed to the host as they arrive and answered as each completes;
//! host events become notifications. Stdout carries protocol lines only.

use crate::host::{Config, Host, HostError, HostEvent, Request, Response};
use serde::Serialize;
use crate::protocol::Payload;
use crossbeam_channel::{select, unbounded, Receiver, Sender};
use serde_json::{json, Map, Value};
use std::io::{self, BufRead, BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

/// Longest request line accepted, in bytes.
const MAX_REQUEST: usize = 64 * 1024 * 1024;

enum Out {
    Line(Vec<u8>),
    /// Everything queued before this is written and flushed; then ack.
    Flush(Sender<()>),
}

/// Runs `zot serve` on the process's stdin/stdout until `shutdown` or end
/// of input; returns the exit code.
pub fn run(config: Config) -> i32 {
    let stdin = io::stdin();
    serve(config, stdin.lock(), io::stdout(), true)
}

/// Serves requests read from `input`, writing protocol lines to `output`.
/// With `exit_on_shutdown`, the process exits as soon as the host has
/// stopped, even if `input` never ends.
pub fn serve<R: BufRead, W: Write + Send + 'static>(config: Config, mut input: R, output: W, exit_on_shutdown: bool) -> i32 {
    let (host, events) = match Host::start(config) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("zot serve: {e}");
            return 1;
        }
    };
    let host = Arc::new(host);
    if exit_on_shutdown {
        let host = host.clone();
        let _ = crate::signals::on_termination(move |sig| {
            host.shutdown();
            std::process::exit(crate::signals::exit_code(sig));
        });
    }
    let (out_tx, out_rx) = unbounded::<Out>();
    let writer = thread::Builder::new().name("zot-serve-out".into()).spawn(move || write_loop(output, events, out_rx));
    if writer.is_err() {
        eprintln!("zot serve: cannot start threads");
        return 1;
    }
    // Requests are read once the initial load is over, so that commands
    // and tools registered at start-up are there for the first request.
    let _ = host.wait_ready();

    let stopping = Arc::new(AtomicBool::new(false));
    let pending = Arc::new(Pending::default());
    let mut stopper: Option<thread::JoinHandle<()>> = None;
    let start_stop = || {
        if stopping.swap(true, Ordering::SeqCst) {
            return None;
        }
        let (host, out, pending) = (host.clone(), out_tx.clone(), pending.clone());
        thread::Builder::new()
            .name("zot-serve-stop".into())
            .spawn(move || {
                // Requests already accepted are answered first; each is
                // bounded by its own timeout.
                pending.wait_idle();
                host.shutdown();
                let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
                let _ = out.send(Out::Flush(ack_tx));
                let _ = ack_rx.recv();
                if exit_on_shutdown {
                    std::process::exit(0);
                }
            })
            .ok()
    };

    let mut line = Vec::new();
    loop {
        line.clear();
        let n = match <&mut R as io::Read>::take(&mut input, MAX_REQUEST as u64 + 1).read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_REQUEST {
            let _ = input.skip_until(b'\n');
            let msg = format!("request line longer than {MAX_REQUEST} bytes");
            let _ = out_tx.send(Out::Line(err(Value::Null, "bad_request", &msg)));
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_request(text) {
            Err((id, msg)) => {
                let _ = out_tx.send(Out::Line(err(id, "bad_request", &msg)));
            }
            Ok((id, _)) if stopping.load(Ordering::SeqCst) => {
                let e = HostError::ShuttingDown;
                let _ = out_tx.send(Out::Line(err(id, e.code(), &e.to_string())));
            }
            Ok((id, Method::Ping)) => {
                let _ = out_tx.send(Out::Line(ok(id, json!({"pong": true}))));
            }
            Ok((id, Method::Shutdown)) => {
                let _ = out_tx.send(Out::Line(ok(id, json!({}))));
                if let Some(h) = start_stop() {
                    stopper = Some(h);
                }
            }
            Ok((id, Method::Host(req))) => {
                let out = out_tx.clone();
                let done = pending.begin();
                host.submit(
                    req,
                    Box::new(move |r| {
                        let _done = done;
                        let line = match r {
                            Ok(resp) => result_line(id, resp),
                            Err(e) => err(id, e.code(), &e.to_string()),
                        };
                        let _ = out.send(Out::Line(line));
                    }),
                );
            }
        }
    }
    // End of input means the same as `shutdown`.
    if let Some(h) = start_stop() {
        stopper = Some(h);
    }
    if let Some(h) = stopper {
        let _ = h.join();
    }
    0
}

/// How many requests are with the host, so that shutdown can wait for
/// their answers.
#[derive(Default)]
struct Pending {
    count: Mutex<usize>,
    idle: Condvar,
}

/// Marks one request as answered when dropped.
struct Done(Arc<Pending>);

impl Pending {
    fn begin(self: &Arc<Self>) -> Done {
        if let Ok(mut n) = self.count.lock() {
            *n += 1;
        }
        Done(self.clone())
    }

    fn wait_idle(&self) {
        let Ok(mut n) = self.count.lock() else { return };
        while *n > 0 {
            match self.idle.wait(n) {
                Ok(g) => n = g,
                Err(_) => return,
            }
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Ok(mut n) = self.0.count.lock() {
            *n -= 1;
            if *n == 0 {
                self.0.idle.notify_all();
            }
        }
    }
}

enum Method {
    Ping,
    Shutdown,
    Host(Request),
}

/// Parses one request line into its id and method; on failure, the id to
/// answer with (null when there is none) and a message.
fn parse_request(text: &[u8]) -> Result<(Value, Method), (Value, String)> {
    let v: Value = serde_json::from_slice(text).map_err(|e| (Value::Null, format!("invalid JSON: {e}")))?;
    let Value::Object(mut obj) = v else {
        return Err((Value::Null, "a request must be a JSON object".into()));
    };
    let id = match obj.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => return Err((Value::Null, "`id` must be a string or a number".into())),
        None => return Err((Value::Null, "missing `id`".into())),
    };
    let method = match obj.remove("type") {
        Some(Value::String(t)) => t,
        Some(_) => return Err((id, "`type` must be a string".into())),
        None => return Err((id, "missing `type`".into())),
    };
    match build(&method, obj) {
        Ok(m) => Ok((id, m)),
        Err(msg) => Err((id, msg)),
    }
}

fn build(method: &str, mut p: Map<String, Value>) -> Result<Method, String> {
    let req = match method {
        "ping" => return Ok(Method::Ping),
        "shutdown" => return Ok(Method::Shutdown),
        "list" => Request::List,
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
            Request::Tool { name: req_str(&mut p, "name")?, args, tool_id: opt_id(&mut p, "tool_id")? }
        }
        "intercept" | "event" => {
            let event = req_str(&mut p, "event")?;
            let payload: Payload = p;
            if method == "intercept" {
                Request::Intercept { event, payload }
            } else {
                Request::Event { event, payload }
            }
        }
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

/// A response line; fields in the order of PROTOCOL.md §4.
#[derive(Serialize)]
struct Reply<T: Serialize> {
    #[serde(rename = "type")]
    ty: &'static str,
    id: Value,
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

fn result_line(id: Value, r: Response) -> Vec<u8> {
    match r {
        Response::Delivered(n) => ok(id, json!({ "delivered": n })),
        Response::Done => ok(id, json!({})),
        other => ok(id, other),
    }
}

fn ok<T: Serialize>(id: Value, result: T) -> Vec<u8> {
    encode(&Reply { ty: "response", id, ok: true, result: Some(result), error: None })
}

fn err(id: Value, code: &'static str, message: &str) -> Vec<u8> {
    let error = Some(ErrorBody { code, message: message.to_string() });
    encode(&Reply::<()> { ty: "response", id, ok: false, result: None, error })
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    b.push(b'\n');
    b
}

/// Writes responses and notifications. A notification the host emitted
/// before a response was ready is written before that response, so an
/// agent sees causes before effects.
fn write_loop<W: Write>(output: W, events: Receiver<HostEvent>, rx: Receiver<Out>) {
    let mut w = BufWriter::with_capacity(64 * 1024, output);
    let mut broken = false;
    // After a failed write (the agent went away) lines are dropped, but
    // the loop goes on so that shutdown still completes.
    fn put<W: Write>(w: &mut BufWriter<W>, broken: &mut bool, bytes: &[u8]) {
        if !*broken && w.write_all(bytes).is_err() {
            *broken = true;
        }
    }
    let mut events_open = true;
    loop {
        let msg = if events_open {
            select! {
                recv(events) -> ev => match ev {
                    Ok(ev) => { put(&mut w, &mut broken, &encode(&ev)); None }
                    Err(_) => { events_open = false; None }
                },
                recv(rx) -> m => match m { Ok(m) => Some(m), Err(_) => break },
            }
        } else {
            match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => break,
            }
        };
        if let Some(m) = msg {
            while let Ok(ev) = events.try_recv() {
                put(&mut w, &mut broken, &encode(&ev));
            }
            match m {
                Out::Line(l) => put(&mut w, &mut broken, &l),
                Out::Flush(ack) => {
                    let _ = w.flush();
                    let _ = ack.send(());
                    continue;
                }
            }
        }
        if rx.is_empty() && events.is_empty() && w.flush().is_err() {
            broken = true;
        }
    }
    let _ = w.flush();
}
