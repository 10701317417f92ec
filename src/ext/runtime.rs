//! What [`Extension::run`] does: the handshake in the modern order, then
//! one reading loop that routes each host frame: events and panel keys run
//! right there, in order; commands, tools and intercepts go to the handler
//! pool; cancels set their flag; answers to `call_tool` go to their waiter.
//! Also panic containment and the shutdown sequence.

use std::any::Any;
use std::collections::HashMap;
use std::io::{self, BufReader, Stdin};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::pool::Pool;
use super::call::ToolCall;
use super::defs::{CommandFn, EventFn, Extension, InterceptFn, PanelCloseFn, PanelKeyFn, ReconcileFn, ToolFn};
use super::handle::{Handle, Shared, CURRENT_CALL, ON_READER};
use super::log::log;
use super::types::{CallResult, Cancel, HostInfo, PanelKey, Response, ToolResult, Verdict};
use crate::child::MAX_LINE;
use crate::lines::{Line, LineBuf};
use crate::protocol::{decode, encode, DecodeError, ExtFrame, HostFrame, InterceptResponse};

/// What the SDK declares in `hello`, as upstream's current Go SDK does.
const CAPABILITIES: [&str; 6] = ["commands", "tools", "events", "panels", "tool_cancel", "call_tool"];

type Frame = Result<HostFrame, DecodeError>;

/// The host's frames, one line at a time, each at most [`MAX_LINE`] bytes.
struct Input {
    reader: BufReader<Stdin>,
    lines: LineBuf,
}

impl Input {
    /// The next frame; `None` at the end of input. Blank and over-long
    /// lines are skipped (the latter logged).
    fn next(&mut self) -> io::Result<Option<Frame>> {
        loop {
            match self.lines.next(&mut self.reader)? {
                None => return Ok(None),
                Some(Line::TooLong(n)) => log(format_args!("skipping a line of {n} bytes from the host (limit {MAX_LINE})")),
                Some(Line::Text(line)) if line.iter().all(u8::is_ascii_whitespace) => {}
                Some(Line::Text(line)) => return Ok(Some(decode::<HostFrame>(line))),
            }
        }
    }
}

struct Tool {
    handler: ToolFn,
    reconcile: Option<ReconcileFn>,
}

/// The handlers by name, frozen after the on-hello hook.
struct Router {
    commands: HashMap<String, CommandFn>,
    tools: HashMap<String, Tool>,
    events: HashMap<String, Vec<EventFn>>,
    intercepts: HashMap<String, InterceptFn>,
    panel_key: Option<PanelKeyFn>,
    panel_close: Option<PanelCloseFn>,
}

/// What the reading thread and the handler threads share.
struct Core {
    router: Router,
    shared: Arc<Shared>,
    /// Cancel flags of the tool calls in flight, by the host's id.
    cancels: Mutex<HashMap<String, Cancel>>,
    pool: Arc<Pool>,
}

/// Why reading stopped.
enum End {
    Shutdown,
    Eof(io::Result<()>),
}

pub(super) fn run(mut ext: Extension) -> io::Result<()> {
    let shared = Arc::clone(&ext.shared);
    // This thread reads the host's frames, the on-hello hook included: a
    // call_tool here could never see its answer.
    ON_READER.with(|r| r.set(true));
    let result = serve(&mut ext, &shared);
    ON_READER.with(|r| r.set(false));
    result
}

fn serve(ext: &mut Extension, shared: &Arc<Shared>) -> io::Result<()> {
    let mut input = Input { reader: BufReader::with_capacity(64 << 10, io::stdin()), lines: LineBuf::new(MAX_LINE) };

    // 1. hello, alone, before anything else.
    let capabilities = CAPABILITIES.iter().map(|c| c.to_string()).collect();
    write_now(shared, &[ExtFrame::Hello { name: ext.name.clone(), version: ext.version.clone(), capabilities }])?;

    // 2. wait for hello_ack; keep whatever else comes first for later.
    let mut early = Vec::new();
    let info: HostInfo = loop {
        match input.next()? {
            None => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stdin closed before hello_ack")),
            Some(Ok(HostFrame::HelloAck(info))) => {
                let call_tool = info.capabilities.iter().any(|c| c == "call_tool");
                shared.call_tool_ok.store(call_tool, Ordering::Release);
                break info;
            }
            Some(Ok(HostFrame::Shutdown)) => return write_now(shared, &[ExtFrame::ShutdownAck]),
            Some(other) => early.push(other),
        }
    };

    // 3. the on-hello hook may register more.
    if let Some(hook) = ext.on_hello.take() {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| hook(&info, ext))) {
            log(format_args!("on_hello panicked: {}", panic_message(&*p)));
        }
    }

    // 4. registrations, one subscribe, ready; then what handles queued.
    write_now(shared, &registrations(ext))?;
    shared.writer.open();

    // 5. serve until shutdown or the end of input.
    let core = Arc::new(Core {
        router: Router::from(ext),
        shared: Arc::clone(shared),
        cancels: Mutex::new(HashMap::new()),
        pool: Pool::new(),
    });
    let mut end = None;
    for frame in early {
        if core.route(frame).is_some() {
            end = Some(End::Shutdown);
            break;
        }
    }
    let end = match end {
        Some(end) => end,
        None => loop {
            match input.next() {
                Ok(Some(frame)) => {
                    if let Some(end) = core.route(frame) {
                        break end;
                    }
                }
                Ok(None) => break End::Eof(Ok(())),
                Err(e) => break End::Eof(Err(e)),
            }
        },
    };
    core.stop(end)
}

fn registrations(ext: &Extension) -> Vec<ExtFrame> {
    let mut frames = Vec::new();
    for c in &ext.commands {
        frames.push(ExtFrame::RegisterCommand { name: c.name.clone(), description: c.description.clone() });
    }
    for t in &ext.tools {
        let mut more = t.more.clone();
        if more.replay.is_empty() && ext.reconcilers.iter().any(|(name, _)| *name == t.name) {
            more.replay = super::Replay::Reconcile.as_str().into();
        }
        let (name, description, schema) = (t.name.clone(), t.description.clone(), t.schema.clone());
        frames.push(ExtFrame::RegisterTool { name, description, schema, more });
    }
    let mut events: Vec<String> = Vec::new();
    for (e, _) in &ext.events {
        if !events.contains(e) {
            events.push(e.clone());
        }
    }
    let intercept = ext.intercepts.iter().map(|(e, _)| e.clone()).collect();
    frames.push(ExtFrame::Subscribe { events, intercept });
    frames.push(ExtFrame::Ready);
    frames
}

impl Router {
    fn from(ext: &mut Extension) -> Router {
        let mut events: HashMap<String, Vec<EventFn>> = HashMap::new();
        for (e, h) in ext.events.drain(..) {
            events.entry(e).or_default().push(h);
        }
        let mut reconcilers: HashMap<String, ReconcileFn> = ext.reconcilers.drain(..).collect();
        let tools = ext
            .tools
            .drain(..)
            .map(|t| {
                let reconcile = reconcilers.remove(&t.name);
                (t.name, Tool { handler: t.handler, reconcile })
            })
            .collect();
        Router {
            commands: ext.commands.drain(..).map(|c| (c.name, c.handler)).collect(),
            tools,
            events,
            intercepts: ext.intercepts.drain(..).collect(),
            panel_key: ext.panel_key.take(),
            panel_close: ext.panel_close.take(),
        }
    }
}

impl Core {
    fn send(&self, frame: &ExtFrame) {
        self.shared.writer.send(&encode(frame));
    }

    /// Handles one frame from the host; `Some` when reading should stop.
    fn route(self: &Arc<Self>, frame: Frame) -> Option<End> {
        let r = &self.router;
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                self.reject(e);
                return None;
            }
        };
        match frame {
            HostFrame::CommandInvoked { id, name, args } => match r.commands.get(&name) {
                Some(h) => {
                    let (core, h) = (Arc::clone(self), Arc::clone(h));
                    self.pool.run(Box::new(move || core.command(id, &name, &args, &h)));
                }
                None => {
                    let resp = Response::error(format!("unknown command /{name}"));
                    self.send(&ExtFrame::CommandResponse(resp.into_frame(id)));
                }
            },
            HostFrame::ToolCall { id, name, args, operation_key, reconcile } => match r.tools.get(&name) {
                Some(tool) => {
                    let (args, operation_key, reconcile) = call_fields(args, operation_key, reconcile);
                    let cancel = Cancel::new();
                    if let Ok(mut map) = self.cancels.lock() {
                        map.insert(id.clone(), cancel.clone());
                    }
                    let handle = Handle { shared: Arc::clone(&self.shared) };
                    let call = ToolCall { id, name, args, operation_key, reconcile, cancel, handle };
                    let handler = Arc::clone(&tool.handler);
                    let reconciler = tool.reconcile.as_ref().filter(|_| reconcile).map(Arc::clone);
                    let core = Arc::clone(self);
                    self.pool.run(Box::new(move || core.tool(call, &handler, reconciler.as_ref())));
                }
                None => {
                    let res = ToolResult::error_text(format!("unknown tool {name}"));
                    self.send(&ExtFrame::ToolResult(res.into_frame(id)));
                }
            },
            HostFrame::ToolCancel { id } => {
                if let Some(c) = self.cancels.lock().ok().and_then(|m| m.get(&id).cloned()) {
                    c.cancel();
                }
            }
            HostFrame::ToolResult { id, name, content, is_error, truncated, structured_content } => {
                self.shared.deliver(&id, CallResult { name, content, is_error, truncated, structured_content });
            }
            HostFrame::EventIntercept { id, event, payload } => match r.intercepts.get(&event) {
                Some(h) => {
                    let (core, h) = (Arc::clone(self), Arc::clone(h));
                    self.pool.run(Box::new(move || {
                        let verdict = catch_unwind(AssertUnwindSafe(|| h(&payload))).unwrap_or_else(|p| {
                            log(format_args!("{event} interceptor panicked (allowing): {}", panic_message(&*p)));
                            Verdict::Allow
                        });
                        core.send(&ExtFrame::EventInterceptResponse(verdict.into_frame(id)));
                    }));
                }
                None => self.send(&ExtFrame::EventInterceptResponse(InterceptResponse { id, ..Default::default() })),
            },
            HostFrame::Event { event, payload } => {
                for h in r.events.get(&event).into_iter().flatten() {
                    contain(&format!("{event} handler"), || h(&event, &payload));
                }
            }
            HostFrame::PanelKey { panel_id, key, text } => {
                if let Some(h) = &r.panel_key {
                    let text = text.unwrap_or_default();
                    contain("panel key handler", || h(&PanelKey { panel_id, key, text }));
                }
            }
            HostFrame::PanelClose { panel_id } => {
                if let Some(h) = &r.panel_close {
                    contain("panel close handler", || h(&panel_id));
                }
            }
            HostFrame::Shutdown => return Some(End::Shutdown),
            HostFrame::HelloAck(_) => log("ignoring a second hello_ack"),
            HostFrame::Unknown => {}
        }
        None
    }

    /// Logs an unusable line; a malformed request that carries an id still
    /// gets its one answer (an error, or allow for an intercept).
    fn reject(&self, e: DecodeError) {
        log(format_args!("skipping a line from the host: {e}"));
        if let DecodeError::BadFields { ty, id: Some(id), msg } = e {
            match ty.as_str() {
                "command_invoked" => {
                    let resp = Response::error(format!("malformed command_invoked: {msg}"));
                    self.send(&ExtFrame::CommandResponse(resp.into_frame(id)));
                }
                "tool_call" => {
                    let res = ToolResult::error_text(format!("malformed tool_call: {msg}"));
                    self.send(&ExtFrame::ToolResult(res.into_frame(id)));
                }
                "event_intercept" => self.send(&ExtFrame::EventInterceptResponse(InterceptResponse { id, ..Default::default() })),
                _ => {}
            }
        }
    }

    fn command(&self, id: String, name: &str, args: &str, handler: &CommandFn) {
        let resp = catch_unwind(AssertUnwindSafe(|| handler(args))).unwrap_or_else(|p| {
            log(format_args!("command /{name} panicked: {}", panic_message(&*p)));
            Response::error(format!("command /{name} failed: {}", panic_message(&*p)))
        });
        self.send(&ExtFrame::CommandResponse(resp.into_frame(id)));
    }

    fn tool(&self, call: ToolCall, handler: &ToolFn, reconciler: Option<&ReconcileFn>) {
        let (id, name) = (call.id.clone(), call.name.clone());
        CURRENT_CALL.with(|c| *c.borrow_mut() = Some((id.clone(), call.cancel.clone())));
        let res = catch_unwind(AssertUnwindSafe(|| match reconciler {
            Some(r) => r(&call).into_result(),
            None => handler(call),
        }));
        CURRENT_CALL.with(|c| *c.borrow_mut() = None);
        let res = res
        .unwrap_or_else(|p| {
            log(format_args!("tool {name} panicked: {}", panic_message(&*p)));
            ToolResult::error_text(format!("tool {name} failed: {}", panic_message(&*p)))
        });
        if let Ok(mut map) = self.cancels.lock() {
            map.remove(&id);
        }
        self.send(&ExtFrame::ToolResult(res.into_frame(id)));
    }

    /// Cancels running tools and waiting calls, answers `shutdown`, and
    /// lets `run` return. Answers that handlers produce later are dropped.
    /// At `shutdown`, handlers already running first get [`SHUTDOWN_WAIT`]
    /// to finish: a call the host sent before `shutdown` (a script that
    /// pipes its requests and then `shutdown` to `zot serve`) gets its
    /// real answer, well within the host's shutdown grace.
    fn stop(&self, end: End) -> io::Result<()> {
        if matches!(end, End::Shutdown) {
            self.pool.wait_idle(SHUTDOWN_WAIT);
        }
        if let Ok(map) = self.cancels.lock() {
            map.values().for_each(Cancel::cancel);
        }
        self.shared.stopping.cancel();
        let result = match end {
            End::Shutdown => {
                self.send(&ExtFrame::ShutdownAck);
                Ok(())
            }
            End::Eof(result) => result,
        };
        self.shared.writer.finish();
        result
    }
}

/// How long handlers already running at `shutdown` get to finish.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// A `tool_call`'s arguments (`null` means none: `{}`), `operation_key`
/// (a string that is not empty, else none) and `reconcile` (`true`, else
/// false), as its handler sees them.
fn call_fields(args: Value, operation_key: Option<Value>, reconcile: Option<Value>) -> (Value, Option<String>, bool) {
    let args = if args.is_null() { Value::Object(Map::new()) } else { args };
    let operation_key = operation_key.as_ref().and_then(Value::as_str).filter(|k| !k.is_empty()).map(String::from);
    (args, operation_key, reconcile.as_ref().and_then(Value::as_bool).unwrap_or(false))
}

/// Runs an event or panel handler; a panic is logged and goes no further.
fn contain(what: &str, f: impl FnOnce()) {
    if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
        log(format_args!("{what} panicked: {}", panic_message(&*p)));
    }
}

/// Writes handshake frames at once, ahead of anything held.
fn write_now(shared: &Shared, frames: &[ExtFrame]) -> io::Result<()> {
    let lines: Vec<u8> = frames.iter().flat_map(encode).collect();
    shared.writer.write_now(&lines)
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn host(line: &str) -> HostFrame {
        decode(line.as_bytes()).expect("a host frame")
    }

    #[test]
    fn a_tool_call_reads_as_its_handler_sees_it() {
        let HostFrame::ToolCall { args, operation_key, reconcile, .. } =
            host(r#"{"type":"tool_call","id":7,"name":"x","args":null,"operation_key":"op-1","reconcile":true}"#)
        else {
            panic!("a tool_call")
        };
        assert_eq!(call_fields(args, operation_key, reconcile), (json!({}), Some("op-1".into()), true));
        let HostFrame::ToolCall { args, operation_key, reconcile, .. } =
            host(r#"{"type":"tool_call","id":"8","name":"x","args":5,"operation_key":"","reconcile":"yes"}"#)
        else {
            panic!("a tool_call")
        };
        assert_eq!(call_fields(args, operation_key, reconcile), (json!(5), None, false));
        assert_eq!(call_fields(json!({"a": 1}), Some(json!(3)), None), (json!({"a": 1}), None, false));
        let HostFrame::HelloAck(info) = host(r#"{"type":"hello_ack","protocol_version":1,"cwd":"/p","capabilities":["call_tool"]}"#) else {
            panic!("a hello_ack")
        };
        assert_eq!((info.cwd.as_str(), info.capabilities), ("/p", vec!["call_tool".to_string()]));
        assert!(matches!(decode::<HostFrame>(br#"{"type":"tool_call","id":"9"}"#), Err(DecodeError::BadFields { id: Some(_), .. })));
        assert!(matches!(decode::<HostFrame>(br#"{"type":"later"}"#), Err(DecodeError::UnknownType(_))));
    }

    #[test]
    fn an_answer_is_read_into_a_call_result() {
        let shared = Extension::new("t", "1").shared;
        let answers = [
            r#"{"type":"tool_result","id":"sdk-3","name":"w","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"is_error":true,"truncated":true,"structured_content":{"k":1}}"#,
            r#"{"type":"tool_result","id":"sdk-4","name":5,"content":"x","is_error":"yes","truncated":1,"structured_content":null}"#,
        ];
        let mut got = Vec::new();
        for line in answers {
            let HostFrame::ToolResult { id, name, content, is_error, truncated, structured_content } = host(line) else {
                panic!("a tool_result: {line}")
            };
            let (tx, rx) = crossbeam_channel::bounded(1);
            shared.calls.lock().expect("not poisoned").insert(id.clone(), tx);
            shared.deliver(&id, CallResult { name, content, is_error, truncated, structured_content });
            got.push(rx.try_recv().expect("delivered"));
        }
        let r = &got[0];
        assert_eq!((r.name.as_str(), r.text().as_str(), r.is_error, r.truncated), ("w", "a\nb", true, true));
        assert_eq!(r.structured_content, Some(json!({"k": 1})));
        assert_eq!(got[1], CallResult::default(), "a field of the wrong shape reads as its default");
        assert!(shared.calls.lock().expect("not poisoned").is_empty());
    }

    #[test]
    fn a_panel_key_with_text_of_the_wrong_shape_still_arrives() {
        let f = host(r#"{"type":"panel_key","panel_id":"p","key":"rune","text":5}"#);
        assert_eq!(f, HostFrame::PanelKey { panel_id: "p".into(), key: "rune".into(), text: None });
    }

    #[test]
    fn call_tool_refuses_what_could_never_be_answered() {
        let ext = Extension::new("t", "1");
        let h = ext.handle();
        assert_eq!(h.call_tool("x", serde_json::json!({})), Err(super::super::CallError::Unsupported), "before hello_ack");
        ext.shared.call_tool_ok.store(true, Ordering::Release);
        assert_eq!(h.call_tool("x", serde_json::json!([1])), Err(super::super::CallError::BadArgs));
        ON_READER.with(|r| r.set(true));
        assert_eq!(h.call_tool("x", serde_json::json!({})), Err(super::super::CallError::OnReaderThread));
        ON_READER.with(|r| r.set(false));
        assert!(ext.shared.calls.lock().expect("not poisoned").is_empty(), "nothing was left waiting");
    }
}
