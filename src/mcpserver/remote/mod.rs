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

mod address;
mod exchange;
mod message;
pub mod oauth;
mod shared;
mod sse;
mod stream;

use super::config::{Remote, ServerSpec, Transport};
use super::edge::Edge;
use address::{expand, origin};
use shared::{spawn, Shared, State, MAX_WORKERS};
use crate::child::{Bytes, ChildMsg, Log, SendError};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A request thread with nothing to do for this long ends.
const IDLE: Duration = Duration::from_secs(5);

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

