//! The state of one walk: the hash, the counts shared across threads,
//! and what the walk saw; the fingerprint and what runs from beyond
//! `.zot` ([`reach`](super::reach)) each add their own `impl`.

use crate::trust::cache::Segment;
use crate::sha256::Sha256;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize};

/// Entries and bytes counted so far, across threads.
#[derive(Default)]
pub(super) struct Counts {
    pub(super) entries: AtomicUsize,
    pub(super) bytes: AtomicU64,
}

/// One walk's hash and what it saw.
pub(super) struct Walk<'a, 'c> {
    pub(super) h: Sha256,
    /// The project's walk only: the same items but the extensions' digests,
    /// the part of the fingerprint that is not theirs.
    pub(super) rest: Option<Sha256>,
    pub(super) buf: Vec<u8>,
    pub(super) project: &'a Path,
    pub(super) counts: &'a Counts,
    pub(super) seg: Segment<'c>,
    pub(super) outside: Vec<String>,
    /// Canonical folders reached through links and walked already.
    pub(super) walked: HashSet<PathBuf>,
    /// The canonical folder of the extension being walked.
    pub(super) root: PathBuf,
    /// Folders the walk leaves out (walked on their own already).
    pub(super) skip: Vec<PathBuf>,
    /// Canonical folders the walk itself leaves out (a `.git`): what a
    /// link reaches inside them is walked all the same.
    pub(super) left_out: Vec<PathBuf>,
    /// See [`Print::not_covered`](super::Print::not_covered).
    pub(super) not_covered: Vec<String>,
}
