//! The threads that serve requests: a leader/follower crew.
//!
//! One *token* (the input stream) is passed among identical threads. The
//! holder reads frames; on a request it hands the token on, then runs the
//! handler itself and writes the answer (see `writer`). So a call costs no
//! thread hand-off on its way in or out (a lone call runs as if the
//! extension were single-threaded), while a slow handler never keeps the
//! input from being read: the next frame is read by whichever thread takes
//! the token. Under a burst of cheap calls one thread often takes its own
//! token back, so bursts cost no wake-ups either.
//!
//! When a token is handed on with no thread waiting, a watchdog checks
//! every [`GRACE`]: if the token is still untaken (every thread is in a
//! slow handler), it starts another thread. [`START`] threads start with
//! the crew, so the first slow handlers hand over at once; threads beyond
//! [`CORE`] leave after [`LINGER`] without work.

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Threads started with the crew.
const START: usize = 2;
/// Threads kept when idle.
const CORE: usize = 4;
/// How long a handed-on token may stay untaken before a thread is added.
const GRACE: Duration = Duration::from_millis(2);
/// How long a thread beyond [`CORE`] waits for the token before it exits.
const LINGER: Duration = Duration::from_secs(5);

type Body<T> = Arc<dyn Fn(&Arc<Crew<T>>) + Send + Sync>;

pub(crate) struct Crew<T: Send + 'static> {
    token_tx: Sender<T>,
    token_rx: Receiver<T>,
    body: Body<T>,
    /// Threads blocked waiting for the token.
    waiting: AtomicUsize,
    /// Live threads.
    threads: AtomicUsize,
    /// Times the token was taken.
    taken: AtomicU64,
    stopped: AtomicBool,
    dog: Sender<()>,
}

impl<T: Send + 'static> Crew<T> {
    /// Starts the crew with `token`; each thread runs `body`, which loops
    /// on [`take`](Self::take) until it returns `None`. Fails when not even
    /// one thread can be started.
    pub(crate) fn start(token: T, body: impl Fn(&Arc<Crew<T>>) + Send + Sync + 'static) -> std::io::Result<Arc<Crew<T>>> {
        let (token_tx, token_rx) = bounded(1);
        let (dog, dog_rx) = bounded(1);
        let crew = Arc::new(Crew {
            token_tx,
            token_rx,
            body: Arc::new(body),
            waiting: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
            taken: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            dog,
        });
        // The channel holds one token and this is the only one.
        let _ = crew.token_tx.try_send(token);
        let c = Arc::clone(&crew);
        if let Err(e) = std::thread::Builder::new().name("zot-ext-watchdog".into()).spawn(move || watchdog(&c, &dog_rx)) {
            super::log(format_args!("cannot start the watchdog: {e}"));
        }
        let started = (0..START).filter(|_| crew.spawn()).count();
        if started == 0 {
            crew.stop();
            return Err(std::io::Error::other("cannot start any serving thread"));
        }
        Ok(crew)
    }

    fn spawn(self: &Arc<Self>) -> bool {
        self.threads.fetch_add(1, Ordering::AcqRel);
        let crew = Arc::clone(self);
        let started = std::thread::Builder::new().name("zot-ext-worker".into()).spawn(move || (crew.body)(&crew));
        if let Err(e) = &started {
            self.threads.fetch_sub(1, Ordering::AcqRel);
            super::log(format_args!("cannot start a thread: {e}"));
        }
        started.is_ok()
    }

    /// Waits for the token. `None`: this thread should exit (the crew
    /// stopped, or it is surplus and idle).
    pub(crate) fn take(&self) -> Option<T> {
        loop {
            if self.stopped.load(Ordering::Acquire) {
                return None;
            }
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let got = self.token_rx.recv_timeout(LINGER);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            match got {
                Ok(token) => return Some(self.took(token)),
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {
                    let surplus = self.threads.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n > CORE).then(|| n - 1));
                    if surplus.is_ok() {
                        // Pairs with the fence in `hand_off`: a token sent
                        // while we stopped waiting is seen here.
                        fence(Ordering::SeqCst);
                        if let Ok(token) = self.token_rx.try_recv() {
                            self.threads.fetch_add(1, Ordering::AcqRel);
                            return Some(self.took(token));
                        }
                        return None;
                    }
                }
            }
        }
    }

    fn took(&self, token: T) -> T {
        self.taken.fetch_add(1, Ordering::Relaxed);
        token
    }

    /// Passes the token to the next thread (before running a handler).
    pub(crate) fn hand_off(&self, token: T) {
        // Never full: there is one token and its holder is sending it.
        let _ = self.token_tx.try_send(token);
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) == 0 {
            let _ = self.dog.try_send(());
        }
    }

    /// Keeps the token (the input ended): the watchdog exits now, every
    /// thread once idle (within [`LINGER`]).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let _ = self.dog.try_send(());
    }
}

/// Woken by hand-offs that found no thread waiting: while the token sits
/// untaken, checks every [`GRACE`] and adds a thread when nothing took it.
fn watchdog<T: Send + 'static>(crew: &Arc<Crew<T>>, wake: &Receiver<()>) {
    while wake.recv().is_ok() {
        if crew.stopped.load(Ordering::Acquire) {
            return;
        }
        while !crew.token_rx.is_empty() {
            let before = crew.taken.load(Ordering::Relaxed);
            std::thread::sleep(GRACE);
            if crew.stopped.load(Ordering::Acquire) {
                return;
            }
            if !crew.token_rx.is_empty() && crew.taken.load(Ordering::Relaxed) == before {
                // On failure: logged, and tried again after the next GRACE.
                crew.spawn();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;
    use std::time::Instant;

    /// A crew whose token is a queue of sleep times; each result is sent
    /// to the returned receiver.
    fn crew(jobs: Vec<u64>) -> (Arc<Crew<std::vec::IntoIter<u64>>>, Receiver<u64>) {
        let (tx, rx) = unbounded();
        let crew = Crew::start(jobs.into_iter(), move |crew| {
            while let Some(mut jobs) = crew.take() {
                match jobs.next() {
                    Some(ms) => {
                        crew.hand_off(jobs);
                        std::thread::sleep(Duration::from_millis(ms));
                        let _ = tx.send(ms);
                    }
                    None => crew.stop(),
                }
            }
        })
        .expect("threads start");
        (crew, rx)
    }

    #[test]
    fn slow_jobs_do_not_block_fast_ones() {
        let t = Instant::now();
        let (_crew, rx) = crew(vec![500, 500, 500, 500, 500, 500, 500, 500, 0]);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(0));
        assert!(t.elapsed() < Duration::from_millis(300), "{:?}", t.elapsed());
    }

    #[test]
    fn every_job_runs_once_without_a_thread_per_job() {
        let (crew, rx) = crew(vec![0; 10_000]);
        for _ in 0..10_000 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(0));
        }
        let threads = crew.threads.load(Ordering::Acquire);
        assert!(threads < 50, "{threads} threads");
    }
}
