//! A remote MCP server (docs/protocol.md §8.5): the server's edge
//! ([`Edge`]) spoken over HTTP instead of a process's stdio. To the host
//! it is a child like any other ([`crate::child::Link`]): what the edge
//! writes is posted, what the server answers is handed to the edge as
//! lines, and the end of the session (a second 404, a GET stream that
//! cannot be resumed, a stop) is the child's end.
//!
//! Threads: each message is posted by one of at most [`MAX_WORKERS`]
//! request threads, started when messages wait and none is idle, each
//! ending after [`IDLE`] without work; the server's own stream (the GET
//! stream of Streamable HTTP, the event stream of the `sse` transport) has
//! one thread. A stop ends every connection at once (`Agent::shutdown`)
//! and joins every thread before the child's end is reported.
//!
//! Secrets: header values and the expanded url are held here only; logs
//! and errors name the url as the entry wrote it (without query, fragment
//! or user information), header names and variables, never values.

mod exchange;
pub mod oauth;
mod sse;
mod stream;

use super::config::{Remote, ServerSpec, Transport};
use super::edge::Edge;
use crate::child::{Bytes, ChildMsg, Log, SendError};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Requests in flight per server; more wait in order.
pub const MAX_WORKERS: usize = 8;
/// A request thread with nothing to do for this long ends.
const IDLE: Duration = Duration::from_secs(5);
/// Any one message from the server, in a JSON body or an event.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// One remote server's connection.
pub struct Link(Arc<Shared>);

struct Shared {
    name: String,
    log: Log,
    edge: Arc<Edge>,
    agent: ureq::Agent,
    /// The expanded url (never shown).
    url: String,
    /// `scheme://host:port` of `url`.
    origin: String,
    /// The url as listings show it.
    shown: String,
    /// Expanded headers, `Authorization` included (never shown).
    headers: Vec<(String, String)>,
    transport: Transport,
    connect_timeout: Duration,
    request_timeout: Duration,
    st: Mutex<State>,
    /// Signalled when the `sse` transport's endpoint is known, or the link ends.
    endpoint_known: Condvar,
    queue: (Sender<Vec<u8>>, Receiver<Vec<u8>>),
    /// Dropped at the end: every thread waiting on it wakes.
    stop: Mutex<Option<Sender<()>>>,
    stopped: Receiver<()>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    report: Box<dyn Fn(ChildMsg) + Send + Sync>,
    ended: AtomicBool,
    /// Held while the session is renewed: one renewal at a time.
    renewing: Mutex<()>,
    /// The login kept for the url (`zot mcp login NAME`), sent as
    /// `Authorization` to the url's origin alone.
    tokens: Option<oauth::Tokens>,
}

#[derive(Default)]
struct State {
    session: Option<String>,
    /// The protocol version `initialize` settled on.
    version: Option<String>,
    /// The `initialize` request as first sent, to initialize again.
    init: Option<Vec<u8>>,
    init_id: Option<u64>,
    /// Bumped each time the session is renewed.
    generation: u64,
    workers: usize,
    idle: usize,
    closed: bool,
    /// Speaking the 2024-11-05 transport, and the url it posts to once known.
    sse: bool,
    endpoint: Option<String>,
    /// Why the `sse` transport's stream gave no endpoint.
    endpoint_error: Option<String>,
    /// The server's own stream has a thread.
    streaming: bool,
}

impl Link {
    /// A connection to the remote server of `spec`, speaking through
    /// `edge`; `report` hands the child's end to the dispatcher.
    /// `call_timeout` bounds a request when the entry has no
    /// `requestTimeout`. Fails naming a header or variable it cannot expand.
    pub fn open(
        spec: &ServerSpec,
        edge: Arc<Edge>,
        log: Log,
        call_timeout: Duration,
        report: Box<dyn Fn(ChildMsg) + Send + Sync>,
    ) -> Result<Link, String> {
        let remote = spec.remote.as_ref().ok_or("not a remote server")?;
        let (url, headers) = expand(remote)?;
        let origin = origin(&url).ok_or_else(|| format!("url {:?} is not an http:// or https:// address", remote.shown_url()))?;
        let agent = exchange::agent(spec.connect_timeout);
        let tokens = login_of(spec, remote, &url, &log)?;
        let (stop, stopped) = crossbeam_channel::bounded(0);
        let shared = Arc::new(Shared {
            name: spec.name.clone(),
            log,
            edge,
            agent,
            url,
            origin,
            shown: remote.shown_url(),
            headers,
            transport: remote.transport,
            connect_timeout: spec.connect_timeout,
            request_timeout: spec.request_timeout.unwrap_or(call_timeout),
            st: Mutex::new(State { sse: remote.transport == Transport::Sse, ..State::default() }),
            endpoint_known: Condvar::new(),
            queue: crossbeam_channel::unbounded(),
            stop: Mutex::new(Some(stop)),
            stopped,
            threads: Mutex::new(Vec::new()),
            report,
            ended: AtomicBool::new(false),
            renewing: Mutex::new(()),
            tokens,
        });
        shared.log.line(&format!("connecting to {} ({})", shared.shown, remote.transport_name()));
        if remote.transport == Transport::Sse {
            stream::open_sse(&shared);
        }
        Ok(Link(shared))
    }
}

impl crate::child::Link for Link {
    fn send(&self, bytes: Bytes) -> Result<(), SendError> {
        let sh = &self.0;
        let mut st = sh.state();
        if st.closed {
            return Err(SendError::Closed);
        }
        // One POST per message: the edge may write several lines at once.
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
            if sh.queue.0.send(line.to_vec()).is_err() {
                return Err(SendError::Closed);
            }
        }
        if sh.queue.1.len() > st.idle && st.workers < MAX_WORKERS {
            st.workers += 1;
            drop(st);
            let s = Arc::clone(sh);
            spawn(sh, "post", move || worker(&s));
        }
        Ok(())
    }

    /// A stop: the session is ended (`DELETE`), then every connection.
    fn close(&self) {
        let sh = &self.0;
        if std::mem::replace(&mut sh.state().closed, true) {
            return;
        }
        let s = Arc::clone(sh);
        // Not one of the joined threads: it joins them.
        let started = std::thread::Builder::new().name(format!("zot-ext-{}-stop", sh.name)).stack_size(crate::child::THREAD_STACK).spawn(move || {
            exchange::end_session(&s);
            s.finish("stopped");
        });
        if started.is_err() {
            sh.kill_now();
        }
    }

    fn kill(&self) {
        self.0.kill_now();
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn closed(&self) -> bool {
        self.state().closed
    }

    /// Ends every connection and thread now, then reports the end.
    fn kill_now(self: &Arc<Self>) {
        self.state().closed = true;
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        let s = Arc::clone(self);
        let _ = std::thread::Builder::new().name(format!("zot-ext-{}-end", self.name)).stack_size(crate::child::THREAD_STACK).spawn(move || s.finish("ended"));
    }

    /// The session is over for good (`why`, logged): the child's end.
    fn lost(self: &Arc<Self>, why: &str) {
        if std::mem::replace(&mut self.state().closed, true) {
            return;
        }
        self.log.line(&format!("{}: {why}; counted as the server's exit", self.shown));
        self.kill_now();
    }

    /// Connections closed, threads joined (but the caller's), then Eof and
    /// Exited, once.
    fn finish(&self, how: &str) {
        self.state().closed = true;
        drop(self.stop.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.endpoint_known.notify_all();
        self.agent.clone().shutdown();
        let me = std::thread::current().id();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        if !self.ended.swap(true, Ordering::AcqRel) {
            self.log.line(&format!("{}: connection {how}", self.shown));
            (self.report)(ChildMsg::Eof);
            (self.report)(ChildMsg::Exited(None));
        }
    }

    /// Waits `d`, or less when the link ends; false when it ended.
    fn pause(&self, d: Duration) -> bool {
        !matches!(self.stopped.recv_timeout(d), Err(crossbeam_channel::RecvTimeoutError::Disconnected)) && !self.closed()
    }
}

fn spawn(sh: &Arc<Shared>, what: &str, f: impl FnOnce() + Send + 'static) {
    let started = std::thread::Builder::new().name(format!("zot-ext-{}-{what}", sh.name)).stack_size(crate::child::THREAD_STACK).spawn(f);
    let mut threads = sh.threads.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain(|t| !t.is_finished());
    match started {
        Ok(t) => threads.push(t),
        Err(e) => sh.log.line(&format!("cannot start a thread: {e}")),
    }
}

/// A request thread: posts messages in order while there are any.
fn worker(sh: &Arc<Shared>) {
    loop {
        sh.state().idle += 1;
        let msg = crossbeam_channel::select! {
            recv(sh.queue.1) -> m => m.ok(),
            recv(sh.stopped) -> _ => None,
            default(IDLE) => None,
        };
        let mut st = sh.state();
        st.idle -= 1;
        let Some(msg) = msg else {
            if st.closed || sh.queue.1.is_empty() {
                st.workers -= 1;
                return;
            }
            continue;
        };
        if st.closed {
            st.workers -= 1;
            return;
        }
        drop(st);
        exchange::deliver(sh, &msg);
    }
}

/// `zot mcp login NAME`: a person logs in to the server of `spec` through
/// the browser, told on `out` what to open; the tokens are kept under
/// `home` (`$ZOT_HOME`).
pub fn login(spec: &ServerSpec, home: &std::path::Path, out: &mut dyn std::io::Write) -> Result<(), String> {
    let remote = spec.remote.as_ref().ok_or_else(|| format!("{} is not a remote server", spec.name))?;
    let (url, headers) = expand(remote).map_err(|e| format!("{}: {e}", spec.name))?;
    let o = remote.oauth.clone().unwrap_or_default();
    let opts = oauth::login::Options {
        name: spec.name.clone(),
        url,
        headers,
        client_id: o.client_id,
        client_secret: o.client_secret,
        scopes: o.scopes,
        callback_port: o.callback_port,
        as_metadata: o.auth_server_metadata_url,
    };
    oauth::login::login(home, &opts, &exchange::agent(spec.connect_timeout), out)
}

/// `zot mcp logout NAME`: the tokens of the server of `spec` forgotten;
/// whether there were any.
pub fn logout(spec: &ServerSpec, home: &std::path::Path) -> Result<bool, String> {
    let remote = spec.remote.as_ref().ok_or_else(|| format!("{} is not a remote server", spec.name))?;
    let (url, _) = expand(remote).map_err(|e| format!("{}: {e}", spec.name))?;
    oauth::store::forget(home, &url)
}

/// What doctor says of the login of the server of `spec`: `logged in,
/// expires in 52 min`, `not logged in`; none for a server without `oauth`
/// and no kept login.
pub fn login_state(spec: &ServerSpec, home: &std::path::Path) -> Option<String> {
    let remote = spec.remote.as_ref()?;
    let saved = expand(remote).ok().and_then(|(url, _)| oauth::store::load(home, &url)).filter(|s| !s.access_token.is_empty());
    match saved {
        Some(s) => Some(oauth::describe(&s)),
        None if remote.oauth.is_some() => Some("not logged in".into()),
        None => None,
    }
}

/// The login kept for the server at `url` (expanded): for an `oauth`
/// entry, and for an entry that sends no credentials of its own. An
/// `oauth` entry with none fails naming the login to run.
fn login_of(spec: &ServerSpec, remote: &Remote, url: &str, log: &Log) -> Result<Option<oauth::Tokens>, String> {
    let wanted = remote.oauth.is_some() || remote.auth_name() == "none";
    let home = crate::home::Home::from_env().ok().map(|h| h.root().to_path_buf());
    let Some(tokens) = home.filter(|_| wanted).and_then(|h| oauth::Tokens::load(h, url)) else {
        if remote.oauth.is_some() {
            log.line("no login kept for this server");
            return Err(oauth::needs_login(&spec.name));
        }
        return Ok(None);
    };
    // A token about to expire is refreshed by the first request, on its
    // own thread: opening a link never waits on the network.
    Ok(Some(tokens))
}

/// The url and headers with their variables expanded; `bearerTokenEnvVar`
/// as `Authorization`. Errors name the header and the variable.
fn expand(remote: &Remote) -> Result<(String, Vec<(String, String)>), String> {
    let lookup = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    let why = |what: String, e: crate::envexpand::ExpandError| match e {
        crate::envexpand::ExpandError::Unset { var, .. } => format!("{what}: variable {var} is not set"),
        crate::envexpand::ExpandError::Syntax { msg, .. } => format!("{what}: {msg}"),
    };
    let url = crate::envexpand::expand("url", &remote.url, &lookup).map_err(|e| why("url".into(), e))?;
    let mut headers = Vec::new();
    for (k, v) in &remote.headers {
        let value = crate::envexpand::expand(k, v, &lookup).map_err(|e| why(format!("header {k}"), e))?;
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(format!("header {k}: its value holds a line break"));
        }
        headers.push((k.clone(), value));
    }
    if let Some(var) = &remote.bearer_env {
        let token = lookup(var).filter(|t| !t.is_empty()).ok_or_else(|| format!("bearerTokenEnvVar: variable {var} is not set"))?;
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".into(), format!("Bearer {token}")));
    }
    Ok((url, headers))
}

/// `scheme://host[:port]` of an http(s) url, lower-cased, without user
/// information.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host = authority.rsplit('@').next()?.to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    let default = if scheme == "http" { ":80" } else { ":443" };
    let host = host.strip_suffix(default).unwrap_or(&host).to_string();
    Some(format!("{scheme}://{host}"))
}

/// `reference` resolved against `base` (absolute, `/path`, or relative to
/// the base's folder).
fn resolve(base: &str, reference: &str) -> String {
    if reference.contains("://") {
        return reference.to_string();
    }
    let Some(origin_end) = base.find("://").map(|i| i + 3 + base[i + 3..].find('/').unwrap_or(base.len() - i - 3)) else {
        return reference.to_string();
    };
    if reference.starts_with('/') {
        return format!("{}{reference}", &base[..origin_end]);
    }
    let path = &base[..base[..base.find(['?', '#']).unwrap_or(base.len())].rfind('/').filter(|&i| i >= origin_end).map_or(base.len(), |i| i + 1)];
    if path.len() == origin_end {
        return format!("{path}/{reference}");
    }
    format!("{path}{reference}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_references() {
        assert_eq!(origin("HTTP://u:p@Example.com:80/mcp?x").as_deref(), Some("http://example.com"));
        assert_eq!(origin("https://h:8443").as_deref(), Some("https://h:8443"));
        assert_eq!(origin("ftp://h/"), None);
        assert_eq!(resolve("http://h:1/sse", "/messages/?s=1"), "http://h:1/messages/?s=1");
        assert_eq!(resolve("http://h:1/a/sse?k=1", "msg?s=1"), "http://h:1/a/msg?s=1");
        assert_eq!(resolve("http://h:1", "msg"), "http://h:1/msg");
        assert_eq!(resolve("http://h:1/sse", "http://o/x"), "http://o/x");
    }
}
