//! The threads that run handlers: a worker is reused when one is idle,
//! else a new one is started, up to [`CAP`]; past the cap, tasks wait in
//! order for the next free worker. Workers beyond [`KEEP`] exit after
//! [`LINGER`] without work. One mutex guards the counts.

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Most handlers running at once. Nested `call_tool`s each hold a worker
/// while they wait, so this is also the deepest fan-out that cannot stall.
pub(crate) const CAP: usize = 256;
/// Idle workers kept for the next burst.
const KEEP: usize = 4;
/// How long a worker beyond [`KEEP`] waits for work before it exits.
const LINGER: Duration = Duration::from_secs(10);

pub(crate) type Task = Box<dyn FnOnce() + Send>;

pub(crate) struct Pool {
    tx: Sender<Task>,
    rx: Receiver<Task>,
    counts: Mutex<Counts>,
    /// Signalled each time a task is over.
    finished: Condvar,
}

struct Counts {
    threads: usize,
    /// Idle workers minus queued tasks nobody has taken yet.
    idle: isize,
}

impl Pool {
    pub(crate) fn new() -> Arc<Pool> {
        let (tx, rx) = unbounded();
        Arc::new(Pool { tx, rx, counts: Mutex::new(Counts { threads: 0, idle: 0 }), finished: Condvar::new() })
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `task` on a worker. When no thread can be started at all, it
    /// runs here, so that its call is still answered.
    pub(crate) fn run(self: &Arc<Self>, task: Task) {
        let spawn = {
            let mut c = self.counts();
            if c.idle <= 0 && c.threads < CAP {
                c.threads += 1;
                true
            } else {
                c.idle -= 1;
                false
            }
        };
        // Never disconnected: the pool holds the receiver.
        let _ = self.tx.send(task);
        if !spawn {
            return;
        }
        let pool = Arc::clone(self);
        if let Err(e) = std::thread::Builder::new().name("zot-ext-handler".into()).spawn(move || pool.work()) {
            super::log(format_args!("cannot start a handler thread: {e}"));
            {
                let mut c = self.counts();
                c.threads -= 1;
                c.idle -= 1;
            }
            if let Ok(task) = self.rx.try_recv() {
                self.counts().idle += 1;
                task();
            }
        }
    }

    /// Waits until no task runs or waits, at most `limit`; whether that
    /// came.
    pub(crate) fn wait_idle(&self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut c = self.counts();
        while c.idle < c.threads as isize {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            c = match self.finished.wait_timeout(c, left) {
                Ok((c, _)) => c,
                Err(p) => p.into_inner().0,
            };
        }
        true
    }

    fn work(&self) {
        loop {
            match self.rx.recv_timeout(LINGER) {
                Ok(task) => {
                    // Tasks answer their own panics; this keeps the counts right.
                    let _ = catch_unwind(AssertUnwindSafe(task));
                    self.counts().idle += 1;
                    self.finished.notify_all();
                }
                Err(RecvTimeoutError::Timeout) => {
                    let mut c = self.counts();
                    if c.idle > 0 && c.threads > KEEP {
                        c.idle -= 1;
                        c.threads -= 1;
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    #[cfg(test)]
    fn threads(&self) -> usize {
        self.counts().threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_task_runs_once_and_idle_workers_are_reused() {
        let pool = Pool::new();
        let (tx, rx) = unbounded();
        for n in 0..10_000 {
            let tx = tx.clone();
            pool.run(Box::new(move || {
                let _ = tx.send(n);
            }));
        }
        let mut seen: Vec<i32> = (0..10_000).map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("a task ran")).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..10_000).collect::<Vec<_>>());
        assert!(pool.threads() <= CAP, "{} threads", pool.threads());
    }

    #[test]
    fn blocked_workers_do_not_hold_up_new_tasks_below_the_cap() {
        let pool = Pool::new();
        let (release_tx, release_rx) = unbounded::<()>();
        let started = Arc::new(AtomicUsize::new(0));
        for _ in 0..20 {
            let (rx, started) = (release_rx.clone(), Arc::clone(&started));
            pool.run(Box::new(move || {
                started.fetch_add(1, Ordering::SeqCst);
                let _ = rx.recv();
            }));
        }
        let (tx, rx) = unbounded();
        pool.run(Box::new(move || {
            let _ = tx.send(());
        }));
        assert!(rx.recv_timeout(Duration::from_secs(10)).is_ok(), "a new task ran while 20 were blocked");
        drop(release_tx);
    }
}
