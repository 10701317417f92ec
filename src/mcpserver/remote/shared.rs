//! What every thread of one remote server's connection shares: the
//! link's settings and secrets ([`Shared`]), its session state
//! ([`State`]), and the ends of the link (a stop, a kill, a lost
//! session), which end every connection and join every thread.

use super::super::config::Transport;
use super::super::edge::Edge;
use super::oauth;
use crate::child::{ChildMsg, Log};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Requests in flight per server; more wait in order.
pub const MAX_WORKERS: usize = 8;
/// Any one message from the server, in a JSON body or an event.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

pub(super) struct Shared {
    pub name: String,
    pub log: Log,
    pub edge: Arc<Edge>,
    pub agent: ureq::Agent,
    /// The expanded url (never shown).
    pub url: String,
    /// `scheme://host:port` of `url`.
    pub origin: String,
    /// The url as listings show it.
    pub shown: String,
    /// Expanded headers, `Authorization` included (never shown).
    pub headers: Vec<(String, String)>,
    pub transport: Transport,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub st: Mutex<State>,
    /// Signalled when the `sse` transport's endpoint is known, or the link ends.
    pub endpoint_known: Condvar,
    pub queue: (Sender<Vec<u8>>, Receiver<Vec<u8>>),
    /// Dropped at the end: every thread waiting on it wakes.
    pub stop: Mutex<Option<Sender<()>>>,
    pub stopped: Receiver<()>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub report: Box<dyn Fn(ChildMsg) + Send + Sync>,
    pub ended: AtomicBool,
    /// Held while the session is renewed: one renewal at a time.
    pub renewing: Mutex<()>,
    /// The login kept for the url (`zot mcp login NAME`), sent as
    /// `Authorization` to the url's origin alone.
    pub tokens: Option<oauth::Tokens>,
    /// `exchange::renew`, set by `Link::open`: renewing the session posts
    /// and reopens the GET stream, so the GET stream (which renews on a
    /// 404) naming it would close a circle between the two files.
    pub renew: fn(&Arc<Shared>, u64) -> bool,
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
    pub workers: usize,
    pub idle: usize,
    pub closed: bool,
    /// Speaking the 2024-11-05 transport, and the url it posts to once known.
    pub sse: bool,
    pub endpoint: Option<String>,
    /// Why the `sse` transport's stream gave no endpoint.
    pub endpoint_error: Option<String>,
    /// The server's own stream has a thread.
    pub streaming: bool,
}

impl Shared {
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn closed(&self) -> bool {
        self.state().closed
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
        self.log.line(&format!("{}: {why}; counted as the server's exit", self.shown));
        self.kill_now();
    }

    /// Connections closed, threads joined (but the caller's), then Eof and
    /// Exited, once.
    pub(super) fn finish(&self, how: &str) {
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
    pub(super) fn pause(&self, d: Duration) -> bool {
        !matches!(self.stopped.recv_timeout(d), Err(crossbeam_channel::RecvTimeoutError::Disconnected)) && !self.closed()
    }
}

pub(super) fn spawn(sh: &Arc<Shared>, what: &str, f: impl FnOnce() + Send + 'static) {
    let started = std::thread::Builder::new().name(format!("zot-ext-{}-{what}", sh.name)).stack_size(crate::child::THREAD_STACK).spawn(f);
    let mut threads = sh.threads.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain(|t| !t.is_finished());
    match started {
        Ok(t) => threads.push(t),
        Err(e) => sh.log.line(&format!("cannot start a thread: {e}")),
    }
}
