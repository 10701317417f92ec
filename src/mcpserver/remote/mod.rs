//! A remote MCP server (docs/protocol.md §8.5): the server's edge
//! ([`Edge`]) spoken over HTTP instead of a process's stdio. To the host
//! it is a child like any other ([`crate::child::Link`]): what the edge
//! writes is posted, what the server answers is handed to the edge as
//! lines, and the end of the session (a second 404, a GET stream that
//! cannot be resumed, a stop) is the child's end.
//!
//! Threads: each request is posted by one of at most [`MAX_WORKERS`]
//! request threads, started when requests wait and none is idle, each
//! ending after [`IDLE`] without work; notifications and answers to the
//! server have threads of their own, as many at most, started and ended
//! the same way, so that a `notifications/cancelled` never waits behind the requests in
//! flight (the cancelled call's stream is dropped at once: [`cancel`]);
//! the server's own stream (the GET stream of Streamable HTTP, the event
//! stream of the `sse` transport) has one thread. A stop ends every connection at once (`Agent::shutdown`)
//! and joins every thread before the child's end is reported.
//!
//! Secrets: header values and the expanded url are held here only; logs
//! and errors name the url as the entry wrote it (without query, fragment
//! or user information), header names and variables, never values.

mod address;
mod cancel;
mod exchange;
mod message;
mod params;
mod peek;
pub mod oauth;
mod proxy;
mod resolve;
mod shared;
mod sse;
mod stream;

use super::config::{Remote, ServerSpec, Transport};
use super::edge::Edge;
use address::{expand, origin, Secrets};
use cancel::Call;
use peek::{Kind, Peek};
use shared::{spawn, Queued, Shared, State, IDLE, MAX_WORKERS, NOTES, REQUESTS};
use crate::child::{Bytes, Charge, ChildMsg, Log, SendError};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One remote server's connection.
pub struct Link(Arc<Shared>);


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
        let agent = exchange::agent(spec.connect_timeout, true);
        let oauth_agent = exchange::agent(spec.connect_timeout, false);
        let tokens = login_of(remote, &url, &log)?;
        let (stop, stopped) = crossbeam_channel::bounded(0);
        let secrets = Secrets::of(remote, &url, &headers);
        let shared = Arc::new(Shared {
            name: spec.name.clone(),
            log,
            edge,
            agent,
            oauth_agent,
            url,
            origin,
            shown: remote.shown_url(),
            wants_login: remote.oauth.is_some(),
            may_log_in: remote.may_log_in(),
            secrets,
            headers,
            transport: remote.transport,
            connect_timeout: spec.connect_timeout,
            request_timeout: spec.request_timeout.unwrap_or(call_timeout),
            st: Mutex::new(State { sse: remote.transport == Transport::Sse, ..State::default() }),
            endpoint_known: Condvar::new(),
            lanes: [crossbeam_channel::unbounded(), crossbeam_channel::unbounded()],
            calls: Mutex::new(std::collections::HashMap::new()),
            stop: Mutex::new(Some(stop)),
            stopped,
            threads: Mutex::new(Vec::new()),
            report,
            ended: AtomicBool::new(false),
            renewing: Mutex::new(()),
            marks: Mutex::new(params::Known::default()),
            tokens,
            renew: exchange::renew,
        });
        shared.log.line(&format!("connecting to {} ({})", shared.shown, remote.transport_name()));
        if remote.transport == Transport::Sse {
            stream::open_sse(&shared);
        }
        Ok(Link(shared))
    }
}

impl crate::child::Link for Link {
    fn send(&self, bytes: Bytes, held: Charge) -> Result<(), SendError> {
        let sh = &self.0;
        let mut st = sh.state();
        if st.closed {
            return Err(SendError::Closed);
        }
        // One POST per message: the edge may write several lines at once;
        // the last holds the frame's place until it is posted.
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).collect();
        let mut held = Some(held);
        let mut waiting = [false; 2];
        for (i, line) in lines.iter().enumerate() {
            let kind = Kind::of(line);
            let _held = if i + 1 == lines.len() { held.take() } else { None };
            if let Some(call) = kind.cancels.as_ref().and_then(|id| sh.calls.lock().unwrap_or_else(|e| e.into_inner()).get(&peek::key(id)).cloned()) {
                call.cancel();
            }
            let lane = if kind.note { NOTES } else { REQUESTS };
            let call = kind.request.as_ref().map(|id| {
                let call = Call::new(Instant::now() + sh.request_timeout);
                sh.calls.lock().unwrap_or_else(|e| e.into_inner()).insert(peek::key(id), Arc::clone(&call));
                (peek::key(id), call)
            });
            if sh.lanes[lane].0.send(Queued { line: line.to_vec(), call, _held }).is_err() {
                return Err(SendError::Closed);
            }
            waiting[lane] = true;
        }
        for lane in [NOTES, REQUESTS].into_iter().filter(|&l| waiting[l]) {
            staff(sh, &mut st, lane);
        }
        Ok(())
    }

    /// A stop: what was sent before it is posted and answered first, as a
    /// process answers what it read before its stdin closed (the host's
    /// kill at the end of its grace cuts this short); then the session is
    /// ended (`DELETE`), then every connection.
    fn close(&self) {
        let sh = &self.0;
        if sh.closed() || std::mem::replace(&mut sh.state().draining, true) {
            return;
        }
        let s = Arc::clone(sh);
        // Not one of the joined threads: it joins them.
        let started = std::thread::Builder::new().name(format!("zot-ext-{}-stop", sh.name)).stack_size(crate::child::THREAD_STACK).spawn(move || {
            while s.busy() && s.pause(Duration::from_millis(10)) {}
            if std::mem::replace(&mut s.state().closed, true) {
                return;
            }
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


/// Starts a thread of `lane` when more messages wait than threads are
/// idle to take them (`st` is held: the counts and the queue agree). A
/// thread counts as idle from its start until it has taken a message, so
/// a message sent while a thread is between taking one and saying so is
/// seen by that thread, which staffs the lane again.
fn staff(sh: &Arc<Shared>, st: &mut State, lane: usize) {
    if sh.lanes[lane].1.len() > st.idle[lane] && st.workers[lane] < MAX_WORKERS {
        let s = Arc::clone(sh);
        if spawn(sh, if lane == NOTES { "note" } else { "post" }, move || worker(&s, lane)) {
            st.workers[lane] += 1;
            st.idle[lane] += 1;
        }
    }
}

/// A thread of `lane`: posts its messages in order while there are any.
fn worker(sh: &Arc<Shared>, lane: usize) {
    let queue = &sh.lanes[lane].1;
    loop {
        let msg = crossbeam_channel::select! {
            recv(queue) -> m => m.ok(),
            recv(sh.stopped) -> _ => None,
            default(IDLE) => None,
        };
        let mut st = sh.state();
        st.idle[lane] -= 1;
        let msg = match msg {
            Some(msg) if !st.closed => msg,
            _ if st.closed || queue.is_empty() => {
                st.workers[lane] -= 1;
                return;
            }
            _ => {
                st.idle[lane] += 1;
                continue;
            }
        };
        staff(sh, &mut st, lane);
        drop(st);
        let Queued { line, call, _held } = msg;
        let peek = Peek::of(&line);
        match call {
            None => post_one(sh, &line, &peek),
            Some((key, call)) => {
                if call.cancelled() {
                    message::failed(sh, &peek, "cancelled before it was sent");
                } else {
                    let _for = call.enter();
                    post_one(sh, &line, &peek);
                }
                sh.calls.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            }
        }
        sh.state().idle[lane] += 1;
    }
}

/// Posts one message; a fault here (a bug, an answer no one foresaw)
/// still answers the request, and the thread goes on with the next.
fn post_one(sh: &Arc<Shared>, line: &[u8], peek: &Peek) {
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exchange::deliver(sh, line, peek))) {
        message::failed(sh, peek, &format!("the host failed on it: {}", shared::panic_text(p.as_ref())));
    }
}

/// `zot mcp login NAME`: a person logs in to the server of `spec` through
/// the browser, told on `out` what to open; the tokens are kept under
/// `home` (`$ZOT_HOME`).
pub fn login(spec: &ServerSpec, home: &std::path::Path, out: &mut dyn std::io::Write) -> Result<(), String> {
    let remote = spec.remote.as_ref().ok_or_else(|| format!("{} is not a remote server", spec.name))?;
    let (url, headers) = expand(remote).map_err(|e| format!("{}: {e}", spec.name))?;
    let o = remote.oauth.clone().unwrap_or_default();
    let secrets = Secrets::of(remote, &url, &headers);
    let opts = oauth::login::Options {
        name: spec.name.clone(),
        url,
        headers,
        client_id: o.client_id,
        client_secret: o.client_secret,
        scopes: o.scopes,
        callback_port: o.callback_port,
        as_metadata: o.auth_server_metadata_url,
        secrets,
    };
    let agent = exchange::agent(spec.connect_timeout, false);
    oauth::login::login(home, &opts, &agent, out)
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
/// entry, and for an entry that sends no credentials of its own. Without
/// one the server is asked all the same: only its 401 makes it
/// `needs_login` (docs/protocol.md §8.5 rule 11).
fn login_of(remote: &Remote, url: &str, log: &Log) -> Result<Option<oauth::Tokens>, String> {
    let wanted = remote.may_log_in();
    let home = crate::home::Home::from_env().ok().map(|h| h.root().to_path_buf());
    let Some(tokens) = home.filter(|_| wanted).and_then(|h| oauth::Tokens::load(h, url)) else {
        if remote.oauth.is_some() {
            log.line("no login kept for this server: connecting without one");
        }
        return Ok(None);
    };
    // A token about to expire is refreshed by the first request, on its
    // own thread: opening a link never waits on the network.
    Ok(Some(tokens))
}

