//! Process groups: signalling one, whether one is alive, and the grace
//! after an exit.

/// How long after a child's exit was seen its stdout may stay open (a
/// grandchild holding it) before its output counts as over (docs/protocol.md
/// §3 rule 8): what it wrote before exiting is read to stdout's end, or
/// until this much later. The host fails the calls in flight then, and
/// `zot ext check` concludes.
pub const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Sends `sig` to process group `pgid`; a group that is gone is not an error.
pub fn kill_group(pgid: u32, sig: i32) {
    if pgid == 0 || pgid > i32::MAX as u32 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals that process group only.
    unsafe {
        libc::kill(-(pgid as i32), sig);
    }
}

/// True while any process of group `pgid` exists.
pub fn group_alive(pgid: u32) -> bool {
    if pgid == 0 || pgid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-(pgid as i32), 0) == 0 }
}
