//! What [`Extension::run`] does: the handshake in the modern order, then
//! the serving loop (see `crew`) that reads host frames and routes each:
//! requests to a handler on the reading thread, events and panel keys to
//! the in-order event thread, cancels to their flag; panic containment,
//! bounded line reading, and the shutdown sequence.

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use serde_json::Value;
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Stdin};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use super::crew::Crew;
use super::writer::Writer;
use super::{
    log, Cancel, CommandFn, EventFn, Extension, HostInfo, InterceptFn, PanelCloseFn, PanelKey, PanelKeyFn,
    Payload, Response, ToolFn, ToolResult, Verdict,
};
use crate::protocol::{decode, encode, DecodeError, ExtFrame, HostFrame, InterceptResponse};

/// Longest host line accepted; a longer one is discarded whole and logged.
const MAX_LINE: usize = 64 << 20;

/// A request, run by the thread that read it.
enum Job {
    Command { id: String, name: String, args: String, handler: CommandFn },
    Tool { id: String, name: String, args: Value, cancel: Option<Cancel>, handler: ToolFn },
    Intercept { id: String, event: String, payload: Payload, handler: InterceptFn },
}

/// Work for the event thread, run one at a time in arrival order.
enum Ev {
    Event { event: String, payload: Payload, handlers: Vec<EventFn> },
    PanelKey(PanelKey, PanelKeyFn),
    PanelClose(String, PanelCloseFn),
}

/// The handlers by name, frozen after the on-hello hook.
struct Router {
    commands: HashMap<String, CommandFn>,
    tools: HashMap<String, (ToolFn, bool)>,
    events: HashMap<String, Vec<EventFn>>,
    intercepts: HashMap<String, InterceptFn>,
    panel_key: Option<PanelKeyFn>,
    panel_close: Option<PanelCloseFn>,
}

/// What every serving thread shares.
struct Core {
    router: Router,
    writer: Arc<Writer>,
    /// Cancel flags of in-flight cancellable tool calls, by request id.
    cancels: Mutex<HashMap<String, Cancel>>,
    events: Sender<Ev>,
    done: Sender<io::Result<()>>,
}

impl Core {
    fn send(&self, frame: &ExtFrame) {
        self.writer.send(encode(frame));
    }

    /// Reads and handles frames until one needs a handler, or the end.
    fn read_to_request(&self, input: &mut Input) -> Next {
        loop {
            match input.next() {
                Ok(Some(frame)) => match self.route(frame) {
                    Routed::Handled => {}
                    Routed::Run(job) => return Next::Request(job),
                    Routed::Shutdown => return Next::Shutdown,
                },
                Ok(None) => return Next::End(Ok(())),
                Err(e) => return Next::End(Err(e)),
            }
        }
    }

    /// Cancels running tools, answers `shutdown`, flushes, and lets `run`
    /// return. Answers that handlers produce later are dropped.
    fn stop(&self, end: Next) {
        if let Ok(map) = self.cancels.lock() {
            map.values().for_each(Cancel::cancel);
        }
        let result = match end {
            Next::Shutdown => {
                self.send(&ExtFrame::ShutdownAck);
                Ok(())
            }
            Next::End(result) => result,
            Next::Request(_) => Ok(()),
        };
        self.writer.finish();
        let _ = self.done.try_send(result);
    }
}

/// The input stream, passed among the serving threads (see `crew`).
struct Input {
    reader: BufReader<Stdin>,
    line: Vec<u8>,
    /// Frames that came before `hello_ack`, served first.
    early: VecDeque<Result<HostFrame, DecodeError>>,
}

impl Input {
    fn next(&mut self) -> io::Result<Option<Result<HostFrame, DecodeError>>> {
        match self.early.pop_front() {
            Some(f) => Ok(Some(f)),
            None => read_frame(&mut self.reader, &mut self.line),
        }
    }
}

/// What a frame asks of the thread that read it.
enum Routed {
    Handled,
    Run(Job),
    Shutdown,
}

pub(super) fn run(mut ext: Extension) -> io::Result<()> {
    let mut input = Input { reader: BufReader::with_capacity(64 << 10, io::stdin()), line: Vec::new(), early: VecDeque::new() };

    // 1. hello, alone, before anything else.
    let hello = ExtFrame::Hello { name: ext.name.clone(), version: ext.version.clone(), capabilities: capabilities(&ext) };
    write_now(&ext.writer, &[hello])?;

    // 2. wait for hello_ack; keep whatever else comes first for later.
    let info: HostInfo = loop {
        match read_frame(&mut input.reader, &mut input.line)? {
            None => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stdin closed before hello_ack")),
            Some(Ok(HostFrame::HelloAck(info))) => break info,
            Some(Ok(HostFrame::Shutdown)) => return write_now(&ext.writer, &[ExtFrame::ShutdownAck]),
            Some(other) => input.early.push_back(other),
        }
    };

    // 3. the on-hello hook may register more.
    if let Some(hook) = ext.on_hello.take() {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| hook(&info, &mut ext))) {
            log(format_args!("on_hello panicked: {}", panic_message(&*p)));
        }
    }

    // 4. registrations, one subscribe, ready; then what handles queued.
    write_now(&ext.writer, &registrations(&ext))?;
    ext.writer.open();

    // 5. serve until shutdown or the end of input.
    let router = Router::from(&mut ext);
    let (events, events_rx) = unbounded();
    if !router.events.is_empty() || router.panel_key.is_some() || router.panel_close.is_some() {
        std::thread::Builder::new().name("zot-ext-events".into()).spawn(move || event_loop(events_rx))?;
    }
    let (done, finished) = bounded(1);
    let core = Core {
        router,
        writer: Arc::clone(&ext.writer),
        cancels: Mutex::new(HashMap::new()),
        events,
        done,
    };
    drop(ext);
    let _crew = Crew::start(input, move |crew| serve(&core, crew))?;
    finished.recv().unwrap_or_else(|_| Err(io::Error::other("every serving thread ended")))
}

/// The loop of every serving thread: while holding the input, read and
/// handle frames; on a request, pass the input on, then answer it.
fn serve(core: &Core, crew: &Arc<Crew<Input>>) {
    while let Some(mut input) = crew.take() {
        match core.read_to_request(&mut input) {
            Next::Request(job) => {
                crew.hand_off(input);
                core.work(job);
            }
            end => {
                // Keep the input: nobody reads any more.
                crew.stop();
                core.stop(end);
                return;
            }
        }
    }
}

/// Where reading stopped.
enum Next {
    Request(Job),
    Shutdown,
    End(io::Result<()>),
}

fn capabilities(ext: &Extension) -> Vec<String> {
    let caps = [
        (!ext.commands.is_empty(), "commands"),
        (!ext.tools.is_empty(), "tools"),
        (!ext.events.is_empty(), "events"),
        (!ext.intercepts.is_empty(), "intercepts"),
        (ext.panel_key.is_some() || ext.panel_close.is_some(), "panels"),
    ];
    caps.iter().filter(|(on, _)| *on).map(|(_, c)| c.to_string()).collect()
}

fn registrations(ext: &Extension) -> Vec<ExtFrame> {
    let mut frames = Vec::new();
    for c in &ext.commands {
        frames.push(ExtFrame::RegisterCommand { name: c.name.clone(), description: c.description.clone() });
    }
    for t in &ext.tools {
        frames.push(ExtFrame::RegisterTool { name: t.name.clone(), description: t.description.clone(), schema: t.schema.clone(), more: Default::default() });
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
        Router {
            commands: ext.commands.drain(..).map(|c| (c.name, c.handler)).collect(),
            tools: ext.tools.drain(..).map(|t| (t.name, (t.handler, t.cancellable))).collect(),
            events,
            intercepts: ext.intercepts.drain(..).collect(),
            panel_key: ext.panel_key.take(),
            panel_close: ext.panel_close.take(),
        }
    }
}

impl Core {
/// Handles one frame from the host, or says what remains to do.
fn route(&self, frame: Result<HostFrame, DecodeError>) -> Routed {
    let (r, ev) = (&self.router, &self.events);
    let frame = match frame {
        Ok(f) => f,
        Err(e) => {
            self.reject(e);
            return Routed::Handled;
        }
    };
    match frame {
        HostFrame::CommandInvoked { id, name, args } => match r.commands.get(&name) {
            Some(h) => return Routed::Run(Job::Command { id, name, args, handler: Arc::clone(h) }),
            None => {
                let resp = Response::error(format!("unknown command /{name}"));
                self.send(&ExtFrame::CommandResponse(resp.into_frame(id)));
            }
        },
        HostFrame::ToolCall { id, name, args, .. } => match r.tools.get(&name) {
            Some((h, cancellable)) => {
                let cancel = cancellable.then(|| {
                    let c = Cancel::new();
                    if let Ok(mut map) = self.cancels.lock() {
                        map.insert(id.clone(), c.clone());
                    }
                    c
                });
                return Routed::Run(Job::Tool { id, name, args, cancel, handler: Arc::clone(h) });
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
        HostFrame::EventIntercept { id, event, payload } => match r.intercepts.get(&event) {
            Some(h) => return Routed::Run(Job::Intercept { id, event, payload, handler: Arc::clone(h) }),
            None => self.send(&ExtFrame::EventInterceptResponse(InterceptResponse { id, ..Default::default() })),
        },
        HostFrame::Event { event, payload } => {
            if let Some(handlers) = r.events.get(&event) {
                let _ = ev.send(Ev::Event { event, payload, handlers: handlers.clone() });
            }
        }
        HostFrame::PanelKey { panel_id, key, text } => {
            if let Some(h) = &r.panel_key {
                let _ = ev.send(Ev::PanelKey(PanelKey { panel_id, key, text: text.unwrap_or_default() }, Arc::clone(h)));
            }
        }
        HostFrame::PanelClose { panel_id } => {
            if let Some(h) = &r.panel_close {
                let _ = ev.send(Ev::PanelClose(panel_id, Arc::clone(h)));
            }
        }
        HostFrame::Shutdown => return Routed::Shutdown,
        HostFrame::HelloAck(_) => log("ignoring a second hello_ack"),
        HostFrame::Unknown | HostFrame::ToolResult { .. } => {}
    }
    Routed::Handled
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
            "event_intercept" => {
                self.send(&ExtFrame::EventInterceptResponse(InterceptResponse { id, ..Default::default() }));
            }
            _ => {}
        }
    }
}

/// Runs one request and sends its one answer.
fn work(&self, job: Job) {
    match job {
        Job::Command { id, name, args, handler } => {
            let resp = catch_unwind(AssertUnwindSafe(|| handler(&args))).unwrap_or_else(|p| {
                log(format_args!("command /{name} panicked: {}", panic_message(&*p)));
                Response::error(format!("command /{name} failed: {}", panic_message(&*p)))
            });
            self.send(&ExtFrame::CommandResponse(resp.into_frame(id)));
        }
        Job::Tool { id, name, args, cancel, handler } => {
            let flag = cancel.clone().unwrap_or_default();
            let res = catch_unwind(AssertUnwindSafe(|| handler(args, &flag))).unwrap_or_else(|p| {
                log(format_args!("tool {name} panicked: {}", panic_message(&*p)));
                ToolResult::error_text(format!("tool {name} failed: {}", panic_message(&*p)))
            });
            if cancel.is_some() {
                if let Ok(mut map) = self.cancels.lock() {
                    map.remove(&id);
                }
            }
            self.send(&ExtFrame::ToolResult(res.into_frame(id)));
        }
        Job::Intercept { id, event, payload, handler } => {
            let verdict = catch_unwind(AssertUnwindSafe(|| handler(&payload))).unwrap_or_else(|p| {
                log(format_args!("{event} interceptor panicked (allowing): {}", panic_message(&*p)));
                Verdict::Allow
            });
            self.send(&ExtFrame::EventInterceptResponse(verdict.into_frame(id)));
        }
    }
}
}

fn event_loop(rx: Receiver<Ev>) {
    for ev in rx {
        let what = match &ev {
            Ev::Event { event, .. } => format!("{event} handler"),
            Ev::PanelKey(..) => "panel key handler".into(),
            Ev::PanelClose(..) => "panel close handler".into(),
        };
        let res = catch_unwind(AssertUnwindSafe(|| match ev {
            Ev::Event { event, payload, handlers } => handlers.iter().for_each(|h| h(&event, &payload)),
            Ev::PanelKey(key, h) => h(&key),
            Ev::PanelClose(id, h) => h(&id),
        }));
        if let Err(p) = res {
            log(format_args!("{what} panicked: {}", panic_message(&*p)));
        }
    }
}

/// Writes handshake frames at once, ahead of anything queued.
fn write_now(writer: &Writer, frames: &[ExtFrame]) -> io::Result<()> {
    let lines: Vec<u8> = frames.iter().flat_map(encode).collect();
    writer.write_now(&lines)
}

/// Reads the next frame; `None` at end of input. Blank and over-long lines
/// are skipped (the latter logged).
fn read_frame(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<Result<HostFrame, DecodeError>>> {
    loop {
        line.clear();
        let mut too_long = false;
        let mut eof = false;
        loop {
            let buf = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                eof = true;
                break;
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if line.len() + chunk.len() > MAX_LINE {
                too_long = true;
                line.clear();
            } else if !too_long {
                line.extend_from_slice(chunk);
            }
            let used = done.unwrap_or(buf.len());
            input.consume(used);
            if done.is_some() {
                break;
            }
        }
        if too_long {
            log(format_args!("skipping a line from the host longer than {MAX_LINE} bytes"));
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            return Ok(Some(decode::<HostFrame>(line)));
        }
        if eof {
            return Ok(None);
        }
    }
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

    fn frames(input: &[u8]) -> Vec<Result<HostFrame, DecodeError>> {
        let mut r = io::BufReader::with_capacity(7, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        while let Some(f) = read_frame(&mut r, &mut line).expect("in-memory read") {
            out.push(f);
        }
        out
    }

    #[test]
    fn reads_lines_across_buffer_boundaries() {
        let got = frames(b"{\"type\":\"shutdown\"}\r\n\n  \n{\"type\":\"tool_cancel\",\"id\":\"12\"}");
        assert_eq!(got, vec![Ok(HostFrame::Shutdown), Ok(HostFrame::ToolCancel { id: "12".into() })]);
        assert!(matches!(frames(b"nope\n")[..], [Err(DecodeError::NotJson(_))]));
    }
}
