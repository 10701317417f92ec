//! An unbounded channel (crossbeam's, underneath) whose one receiving
//! thread sleeps without spinning. crossbeam's blocking `recv` first spins
//! and then calls `sched_yield` a few times before it parks; on a busy
//! machine each of those yields is a context switch that gives the core
//! away, several per message to a thread that mostly waits (the
//! dispatcher waits twice per call). Here the receiver announces that it
//! is about to sleep, looks once more, and parks; a sender unparks it only
//! when it announced that: one futex wake, and none at all while the
//! receiver is busy.

use crossbeam_channel::{RecvTimeoutError, Sender, TryRecvError};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::Instant;

struct Waker {
    /// The receiver is asleep, or about to be.
    sleeping: AtomicBool,
    /// The receiving thread, set the first time it waits.
    thread: OnceLock<Thread>,
}

impl Waker {
    fn wake(&self) {
        // Pairs with the fence in `Rx::wait`: either the receiver sees the
        // message on its second look, or this sees `sleeping`.
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::SeqCst) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }
}

/// The sending side; clone it freely.
pub struct Tx<T> {
    /// Always `Some` until dropped: taken in `drop` so that the receiver,
    /// woken after it, can see the disconnection.
    tx: Option<Sender<T>>,
    waker: Arc<Waker>,
}

/// The receiving side, for one thread.
pub struct Rx<T> {
    rx: crossbeam_channel::Receiver<T>,
    waker: Arc<Waker>,
}

/// A new channel.
pub fn channel<T>() -> (Tx<T>, Rx<T>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let waker = Arc::new(Waker { sleeping: AtomicBool::new(false), thread: OnceLock::new() });
    (Tx { tx: Some(tx), waker: waker.clone() }, Rx { rx, waker })
}

impl<T> Clone for Tx<T> {
    fn clone(&self) -> Tx<T> {
        Tx { tx: self.tx.clone(), waker: self.waker.clone() }
    }
}

impl<T> Drop for Tx<T> {
    fn drop(&mut self) {
        drop(self.tx.take());
        self.waker.wake();
    }
}

impl<T> Tx<T> {
    /// Sends `v`; gives it back when the receiver is gone.
    pub fn send(&self, v: T) -> Result<(), T> {
        let Some(tx) = &self.tx else { return Err(v) };
        tx.send(v).map_err(|e| e.into_inner())?;
        self.waker.wake();
        Ok(())
    }
}

impl<T> Tx<T> {
    /// Sends `v` without waking the receiver: for a sender with more
    /// messages ready at once, whose last [`Tx::send`] (or [`Tx::wake`])
    /// wakes it once for all of them.
    pub fn send_quiet(&self, v: T) -> Result<(), T> {
        let Some(tx) = &self.tx else { return Err(v) };
        tx.send(v).map_err(|e| e.into_inner())
    }

    /// Wakes the receiver if it sleeps.
    pub fn wake(&self) {
        self.waker.wake();
    }
}

impl<T> Rx<T> {
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.rx.try_recv()
    }

    /// The next message, waiting until `deadline` (forever with `None`).
    pub fn recv_deadline(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        loop {
            match self.rx.try_recv() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(w) if !w.is_zero() => Some(w),
                    _ => return Err(RecvTimeoutError::Timeout),
                },
                None => None,
            };
            self.waker.thread.get_or_init(thread::current);
            self.waker.sleeping.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            match self.rx.try_recv() {
                Err(TryRecvError::Empty) => {}
                other => {
                    self.waker.sleeping.store(false, Ordering::Relaxed);
                    return other.map_err(|_| RecvTimeoutError::Disconnected);
                }
            }
            match wait {
                Some(w) => thread::park_timeout(w),
                None => thread::park(),
            }
            self.waker.sleeping.store(false, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_message_arrives_across_threads_and_the_end_is_seen() {
        let (tx, rx) = channel::<u32>();
        let senders: Vec<_> = (0..4)
            .map(|k| {
                let tx = tx.clone();
                thread::spawn(move || {
                    for i in 0..10_000 {
                        tx.send(k * 10_000 + i).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let mut seen = vec![false; 40_000];
        while let Ok(v) = rx.recv_deadline(None) {
            seen[v as usize] = true;
        }
        for s in senders {
            s.join().unwrap();
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn a_deadline_ends_the_wait() {
        let (_tx, rx) = channel::<u32>();
        let r = rx.recv_deadline(Some(Instant::now() + Duration::from_millis(20)));
        assert!(matches!(r, Err(RecvTimeoutError::Timeout)));
    }
}
