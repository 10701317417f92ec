//! The instance of one start of an extension or server: the number of its
//! lineage, taken before it starts, and the marker `ZOT_EXT_INSTANCE`
//! gives its processes (docs/protocol.md §3 rule 10), which a confined
//! start's `${TMP}` is named after (§9.1). Below the child and confine
//! layers, which both name it.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(1);

/// A lineage's number, taken before its start.
#[derive(Debug, Clone, Copy)]
pub struct Instance(u64);

impl Instance {
    pub fn reserve() -> Instance {
        Instance(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    pub fn number(self) -> u64 {
        self.0
    }

    /// The value of `ZOT_EXT_INSTANCE` that marks it: `<host pid>.<number>`.
    pub fn marker(self) -> String {
        format!("{}.{}", std::process::id(), self.0)
    }
}
