//! The dispatcher's deadlines and ids: a min-heap of [`Timer`]s the inbox
//! wait is bounded by (timers due at the same instant fire in the order
//! they were set), and the one counter every id the dispatcher makes
//! comes from (process generations, call keys, chain and agent call
//! numbers), so that no two are ever equal.

use super::Timer;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

pub(super) struct Clock {
    timers: BinaryHeap<Reverse<(Instant, u64, Timer)>>,
    next_id: u64,
}

impl Clock {
    pub(super) fn new() -> Clock {
        Clock { timers: BinaryHeap::new(), next_id: 1 }
    }

    /// A new id, never given before.
    pub(super) fn next(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// `t` fires at `when`.
    pub(super) fn at(&mut self, when: Instant, t: Timer) {
        let seq = self.next();
        self.timers.push(Reverse((when, seq, t)));
    }

    /// When the first timer is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((when, _, _))| *when)
    }

    /// The first timer due by `now`, taken out.
    pub(super) fn due(&mut self, now: Instant) -> Option<Timer> {
        match self.timers.peek() {
            Some(Reverse((when, _, _))) if *when <= now => self.timers.pop().map(|Reverse((_, _, t))| t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timers_fire_by_deadline_then_in_the_order_they_were_set() {
        let mut c = Clock::new();
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        c.at(later, Timer::LoadGrace(3));
        c.at(now, Timer::LoadGrace(2));
        c.at(now, Timer::LoadGrace(1));
        assert_eq!(c.next_due(), Some(now));
        assert_eq!(c.due(now), Some(Timer::LoadGrace(2)));
        assert_eq!(c.due(now), Some(Timer::LoadGrace(1)));
        assert_eq!(c.due(now), None, "the last one is not due yet");
        assert_eq!(c.next_due(), Some(later));
        assert_eq!(c.due(later), Some(Timer::LoadGrace(3)));
        assert_eq!(c.next_due(), None);
    }

    #[test]
    fn ids_are_never_given_twice() {
        let mut c = Clock::new();
        let a = c.next();
        c.at(Instant::now(), Timer::LoadGrace(0));
        let b = c.next();
        assert!(a >= 1 && b > a + 1, "{a} {b}: a timer takes an id too");
    }
}
