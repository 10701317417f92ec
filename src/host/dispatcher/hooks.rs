//! The embedder's code the dispatcher runs: the event sink and the idle
//! hook. Either may panic; the panic stops neither the dispatcher nor the
//! host (the event is lost, the hook runs again next time).

use crate::host::{EventSink, HostEvent, IdleHook};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub(super) struct Hooks {
    sink: EventSink,
    idle: IdleHook,
}

impl Hooks {
    pub(super) fn new(sink: EventSink, idle: IdleHook) -> Hooks {
        Hooks { sink, idle }
    }

    pub(super) fn emit(&self, e: HostEvent) {
        let _ = catch_unwind(AssertUnwindSafe(|| (self.sink)(e)));
    }

    /// Out of work for now.
    pub(super) fn idle(&self) {
        let _ = catch_unwind(AssertUnwindSafe(|| (self.idle)()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_panicking_sink_or_hook_is_contained() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (r1, r2) = (runs.clone(), runs.clone());
        let hooks = Hooks::new(
            Box::new(move |_| {
                r1.fetch_add(1, Ordering::SeqCst);
                panic!("sink");
            }),
            Box::new(move || {
                r2.fetch_add(1, Ordering::SeqCst);
                panic!("idle");
            }),
        );
        hooks.emit(HostEvent::Ready { extensions: Vec::new() });
        hooks.idle();
        hooks.emit(HostEvent::Ready { extensions: Vec::new() });
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }
}
