//! What every thread of one remote server's connection shares: the
//! link's settings and secrets ([`Shared`]), its session state
//! ([`State`]), and the ends of the link (a stop, a kill, a lost
//! session), which end every connection and join every thread.

use super::super::config::Transport;
use super::super::edge::Edge;
use super::address::Secrets;
use super::cancel::Call;
use super::oauth;
use super::params;
use crate::child::{ChildMsg, Log};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Requests in flight per server; more wait in order.
pub const MAX_WORKERS: usize = 8;
/// A request thread with nothing to do for this long ends, and a kept-alive
/// connection unused this long is not used again (closed when the pool is
/// next looked at; uvicorn, for one, closes its side after 5 s).
pub const IDLE: Duration = Duration::from_secs(5);
/// Any one message from the server, in a JSON body or an event.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The lane of requests (at most [`MAX_WORKERS`] in flight).
pub const REQUESTS: usize = 0;
/// The lane of notifications and answers (as many again).
pub const NOTES: usize = 1;
/// Messages waiting to be posted beyond which the server's own stream is
/// not read on: a server flooding it with requests is slowed (its writes
/// wait in its socket), the host's memory is not grown.
pub const WAIT_AT: usize = 4 * MAX_WORKERS;

pub(super) struct Shared {
    pub name: String,
    pub log: Log,
    pub edge: Arc<Edge>,
    /// The client of the server's own requests ([`super::cancel::Cutting`]).
    pub agent: ureq::Agent,
    /// The client of OAuth's requests (a token's refresh), never cut.
    pub oauth_agent: ureq::Agent,
    /// The expanded url (never shown).
    pub url: String,
    /// `scheme://host:port` of `url`.
    pub origin: String,
    /// The url as listings show it.
    pub shown: String,
    /// Expanded headers, `Authorization` included (never shown).
    pub headers: Vec<(String, String)>,
    /// What of the url, its variables and headers no message may show.
    pub secrets: Secrets,
    pub transport: Transport,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub st: Mutex<State>,
    /// Signalled when the `sse` transport's endpoint is known, or the link ends.
    pub endpoint_known: Condvar,
    /// Messages to post, each with its place in the host's queue bounds
    /// (given back once it is posted), by lane: [`REQUESTS`], and
    /// [`NOTES`] (notifications and answers to the server's requests, with
    /// threads of their own: a cancel never waits behind the requests in
    /// flight).
    pub lanes: [(Sender<Queued>, Receiver<Queued>); 2],
    /// The requests queued or in flight, by their id's JSON text.
    pub calls: Mutex<HashMap<String, Arc<Call>>>,
    /// Dropped at the end: every thread waiting on it wakes.
    pub stop: Mutex<Option<Sender<()>>>,
    pub stopped: Receiver<()>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub report: Box<dyn Fn(ChildMsg) + Send + Sync>,
    pub ended: AtomicBool,
    /// Held while the session is renewed: one renewal at a time.
    pub renewing: Mutex<()>,
    /// The `x-mcp-header` marks of the tools a modern server listed.
    pub marks: Mutex<params::Known>,
    /// The login kept for the url (`zot mcp login NAME`), sent as
    /// `Authorization` to the url's origin alone.
    pub tokens: Option<oauth::Tokens>,
    /// The entry has `oauth`: a 401 asks for a login, challenge or not.
    pub wants_login: bool,
    /// A login can serve it: an `oauth` entry, or one that sends no
    /// credentials of its own (one with headers keeps to them).
    pub may_log_in: bool,
    /// `exchange::renew`, set by `Link::open`: renewing the session posts
    /// and reopens the GET stream, so the GET stream (which renews on a
    /// 404) naming it would close a circle between the two files. Its
    /// `bool`: the 404 answered the GET stream.
    pub renew: fn(&Arc<Shared>, u64, bool) -> bool,
}

/// One message to post, and what it holds of the host's queue bounds.
pub(super) struct Queued {
    pub line: Vec<u8>,
    /// A request's key among [`Shared::calls`], and its cancel handle.
    pub call: Option<(String, Arc<Call>)>,
    pub _held: Option<crate::child::Charge>,
}

#[derive(Default)]
pub(super) struct State {
    pub session: Option<String>,
    /// The protocol version `initialize` settled on.
    pub version: Option<String>,
    /// The `initialize` request as first sent, to initialize again.
    pub init: Option<Vec<u8>>,
    pub init_id: Option<u64>,
    /// Bumped each time the session is renewed.
    pub generation: u64,
    /// Threads of each lane, and how many of them wait for work.
    pub workers: [usize; 2],
    pub idle: [usize; 2],
    pub closed: bool,
    /// Speaking the 2024-11-05 transport, and the url it posts to once known.
    pub sse: bool,
    pub endpoint: Option<String>,
    /// Why the `sse` transport's stream gave no endpoint.
    pub endpoint_error: Option<String>,
    /// The server's own stream has a thread.
    pub streaming: bool,
    /// Spoken to in the 2026-07-28 era (its requests carry the version).
    pub modern: bool,
    /// The session was renewed after a 404 and has not yet answered a GET
    /// (`untried_get`) or a POST (`untried_post`) with 2xx: a 404 there now
    /// is the second in a row, the server's exit.
    pub untried_get: bool,
    pub untried_post: bool,
    /// The host was told the login is no longer accepted (once).
    pub login_lost: bool,
    /// A stop is under way: what was sent is posted and answered first.
    pub draining: bool,
}

impl Shared {
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `text` without a secret: the expanded url, a variable's or header's
    /// value, user information, a token.
    pub(super) fn scrub(&self, text: &str) -> String {
        let text = self.secrets.scrub(text);
        match &self.tokens {
            Some(t) => t.scrub(&text),
            None => text,
        }
    }

    /// A line of the server's log, scrubbed.
    pub(super) fn say(&self, text: &str) {
        self.log.line(&self.scrub(text));
    }

    pub(super) fn closed(&self) -> bool {
        self.state().closed
    }

    /// Whether a message waits to be posted or a request for its answer.
    pub(super) fn busy(&self) -> bool {
        self.lanes.iter().any(|l| !l.1.is_empty()) || !self.calls.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Ends every connection and thread now, then reports the end.
    pub(super) fn kill_now(self: &Arc<Self>) {
        self.state().closed = true;
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        let s = Arc::clone(self);
        let _ = std::thread::Builder::new().name(format!("zot-ext-{}-end", self.name)).stack_size(crate::child::THREAD_STACK).spawn(move || s.finish("ended"));
    }

    /// The session is over for good (`why`, logged): the child's end.
    pub(super) fn lost(self: &Arc<Self>, why: &str) {
        if std::mem::replace(&mut self.state().closed, true) {
            return;
        }
        self.say(&format!("{}: {why}; counted as the server's exit", self.shown));
        self.kill_now();
    }

    /// Connections closed, threads joined (but the caller's), then Eof and
    /// Exited, once.
    pub(super) fn finish(&self, how: &str) {
        self.state().closed = true;
        drop(self.stop.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.endpoint_known.notify_all();
        self.agent.clone().shutdown();
        self.oauth_agent.clone().shutdown();
        let me = std::thread::current().id();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        if !self.ended.swap(true, Ordering::AcqRel) {
            self.say(&format!("{}: connection {how}", self.shown));
            (self.report)(ChildMsg::Eof);
            (self.report)(ChildMsg::Exited(None));
        }
    }

    /// Waits while [`WAIT_AT`] messages wait to be posted (or until the
    /// link ends): the reader of the server's own stream reads no further.
    pub(super) fn wait_for_room(&self) {
        while self.lanes.iter().map(|l| l.1.len()).sum::<usize>() >= WAIT_AT && self.pause(Duration::from_millis(20)) {}
    }

    /// Waits `d`, or less when the link ends; false when it ended.
    pub(super) fn pause(&self, d: Duration) -> bool {
        !matches!(self.stopped.recv_timeout(d), Err(crossbeam_channel::RecvTimeoutError::Disconnected)) && !self.closed()
    }
}

/// The message of a panic's payload.
pub(super) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "a panic".into())
}

/// A thread of the link, named for `what`; a panic in it is logged.
/// Whether the thread started (a failure is said in the log).
pub(super) fn spawn(sh: &Arc<Shared>, what: &str, f: impl FnOnce() + Send + 'static) -> bool {
    let s = Arc::clone(sh);
    let body = move || {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            s.say(&format!("a thread of the connection failed: {}", panic_text(p.as_ref())));
        }
    };
    let started = std::thread::Builder::new().name(format!("zot-ext-{}-{what}", sh.name)).stack_size(crate::child::THREAD_STACK).spawn(body);
    let mut threads = sh.threads.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain(|t| !t.is_finished());
    match started {
        Ok(t) => {
            threads.push(t);
            true
        }
        Err(e) => {
            sh.say(&format!("cannot start a thread: {e}"));
            false
        }
    }
}
