//! A request cancelled in flight (docs/protocol.md §8.5 rules 3 and 5):
//! its answer stream is dropped at once, whether or not the server is
//! sending anything, and a resumed stream keeps the request's own
//! deadline. Each request posted is a [`Call`]; the thread working for it
//! says so ([`Call::enter`]). The HTTP client's connections are wrapped
//! ([`Cutting`]): each keeps the handle of the socket under it (the one
//! ureq registers to shut it down from another thread) and, before every
//! read or write, notes which call the thread using it works for.
//! Cancelling a call shuts down the socket of the connection it is using,
//! so that a read blocked on it returns at once; a connection that went
//! back to the pool and on to another request was claimed by that request
//! first, so a late cancel never cuts someone else's.

use crossbeam_channel::{Receiver, Sender};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, ShutdownHandle, Transport};

thread_local! {
    /// The call this thread works for now.
    static CURRENT: RefCell<Option<Arc<Call>>> = const { RefCell::new(None) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One request posted to the server, which the host may cancel.
pub(super) struct Call {
    id: u64,
    /// Past it the request fails, its resumed streams included.
    pub deadline: Instant,
    st: Mutex<CallState>,
    /// Dropped on cancel: a wait on [`Call::woken`] ends.
    wake: Mutex<Option<Sender<()>>>,
    pub woken: Receiver<()>,
}

#[derive(Default)]
struct CallState {
    cancelled: bool,
    /// The connection the call last used.
    conn: Option<Arc<Conn>>,
}

impl Call {
    pub fn new(deadline: Instant) -> Arc<Call> {
        let (wake, woken) = crossbeam_channel::bounded(0);
        Arc::new(Call { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), deadline, st: Mutex::default(), wake: Mutex::new(Some(wake)), woken })
    }

    pub fn cancelled(&self) -> bool {
        lock(&self.st).cancelled
    }

    /// The connection the call is using is shut down now; one it would
    /// use later, at once.
    pub fn cancel(&self) {
        let conn = {
            let mut st = lock(&self.st);
            st.cancelled = true;
            st.conn.take()
        };
        drop(lock(&self.wake).take());
        if let Some(c) = conn {
            let owner = lock(&c.owner);
            if *owner == self.id {
                c.cut();
            }
        }
    }

    /// Until the guard is dropped, this thread works for the call.
    pub fn enter(self: &Arc<Self>) -> Entered {
        Entered(CURRENT.with(|c| c.replace(Some(Arc::clone(self)))))
    }
}

/// While held, this thread works for a call (or for none: [`aside`]).
pub(super) struct Entered(Option<Arc<Call>>);

impl Drop for Entered {
    fn drop(&mut self) {
        let before = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = before);
    }
}

/// Until the guard is dropped, this thread works for no call: what it
/// does for the whole link (initializing the session again) is never cut.
pub(super) fn aside() -> Entered {
    Entered(CURRENT.with(|c| c.replace(None)))
}

/// The call this thread works for.
pub(super) fn current() -> Option<Arc<Call>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether the call this thread works for was cancelled.
pub(super) fn cancelled() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|c| c.cancelled()))
}

/// One connection: its socket, and the call whose thread used it last.
struct Conn {
    /// A [`Call`]'s id; 0 for none.
    owner: Mutex<u64>,
    socket: Option<Weak<dyn ShutdownHandle>>,
    dead: AtomicBool,
}

impl Conn {
    fn new(socket: Option<Weak<dyn ShutdownHandle>>) -> Arc<Conn> {
        Arc::new(Conn { owner: Mutex::new(0), socket, dead: AtomicBool::new(false) })
    }

    fn cut(&self) {
        self.dead.store(true, Ordering::Release);
        if let Some(s) = self.socket.as_ref().and_then(Weak::upgrade) {
            s.shutdown();
        }
    }

    /// The thread about to use the connection works for the current call:
    /// a cancelled one cuts it at once.
    fn claim(self: &Arc<Self>) {
        CURRENT.with(|c| {
            let cur = c.borrow();
            let id = cur.as_ref().map_or(0, |c| c.id);
            let mut owner = lock(&self.owner);
            if *owner == id {
                return;
            }
            *owner = id;
            if let Some(call) = cur.as_ref() {
                let mut st = lock(&call.st);
                if st.cancelled {
                    drop(st);
                    self.cut();
                } else {
                    st.conn = Some(Arc::clone(self));
                }
            }
        });
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

/// The connector of a link's HTTP client: `C`'s connections, each one
/// cuttable by the call using it.
#[derive(Debug)]
pub(super) struct Cutting<C>(pub C);

impl<C: Connector<(), Out = Box<dyn Transport>>> Connector<()> for Cutting<C> {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<()>) -> Result<Option<Self::Out>, ureq::Error> {
        // The first handle registered is the socket's, before a proxy's
        // tunnel or TLS: a cancel during their handshakes cuts it too.
        let seen: Arc<Mutex<Option<Arc<Conn>>>> = Arc::default();
        let outer = Arc::clone(&details.register_shutdown);
        let keep = Arc::clone(&seen);
        let register = Arc::new(move |h: Weak<dyn ShutdownHandle>| {
            let mut slot = lock(&keep);
            if slot.is_none() {
                let conn = Conn::new(Some(h.clone()));
                conn.claim();
                *slot = Some(conn);
            }
            drop(slot);
            outer(h)
        });
        let mine = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: Arc::clone(&details.current_time),
            run_connector: Arc::clone(&details.run_connector),
            register_shutdown: register,
        };
        let Some(inner) = self.0.connect(&mine, chained)? else { return Ok(None) };
        let conn = lock(&seen).take().unwrap_or_else(|| Conn::new(None));
        conn.claim();
        Ok(Some(Box::new(Tracked { inner, conn })))
    }
}

#[derive(Debug)]
struct Tracked {
    inner: Box<dyn Transport>,
    conn: Arc<Conn>,
}

impl Transport for Tracked {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.conn.claim();
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.conn.claim();
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.conn.claim();
        !self.conn.dead.load(Ordering::Acquire) && self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}
