//! The digests of file contents the fingerprint already hashed, keyed by
//! each file's device, inode, size, mtime and ctime, so that checking trust
//! on every start only stats the files. One file per project under
//! `$ZOT_HOME/cache/`, mode `0600`, rewritten whole (temporary file and
//! rename) when what it holds changed; a missing or unreadable cache only
//! makes the check slower.
//!
//! Format: `ZOTFPC2\n`, then one segment per walk (the project's top, each
//! extension folder): its name (u32 LE length, bytes) and body (u64 LE
//! length, bytes); the body holds one record per file in the order the walk
//! met them: the key (7 i64 LE), the digest (32 bytes), the path (u32 LE
//! length, bytes). A walk that meets the same files again reads its
//! segment front to back, with no lookups.

use std::collections::HashMap;
use std::fs::{self, Metadata};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"ZOTFPC2\n";
const KEY_LEN: usize = 56;

/// What must not have changed for a cached digest to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key([i64; 7]);

impl Key {
    pub fn of(m: &Metadata) -> Key {
        Key([m.dev() as i64, m.ino() as i64, m.size() as i64, m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()])
    }

    fn bytes(&self) -> [u8; KEY_LEN] {
        let mut b = [0u8; KEY_LEN];
        for (o, v) in b.chunks_exact_mut(8).zip(self.0) {
            o.copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// The cache of one project, as loaded.
#[derive(Default)]
pub struct Cache {
    file: Option<PathBuf>,
    data: Vec<u8>,
    /// Segment name -> its body's range in `data`.
    segments: Vec<(Vec<u8>, std::ops::Range<usize>)>,
}

impl Cache {
    /// Loads the cache kept in `file` (empty if it cannot be read).
    pub fn load(file: PathBuf) -> Cache {
        // Its folder is zot's own: through a link (planted in a home others
        // can write) its digests are not ours to believe.
        let own = file.parent().is_some_and(|d| fs::symlink_metadata(d).map_or(true, |m| m.is_dir()));
        let data = if own { fs::read(&file).unwrap_or_default() } else { Vec::new() };
        let segments = parse(&data).unwrap_or_default();
        Cache { file: Some(file), data, segments }
    }

    /// The reader and writer of the segment `name`.
    pub fn segment(&self, name: &[u8]) -> Segment<'_> {
        let old = self.segments.iter().find(|(n, _)| n == name).map(|(_, r)| &self.data[r.clone()]).unwrap_or(&[]);
        Segment { name: name.to_vec(), old, pos: 0, index: None, new: Vec::new() }
    }

    /// Rewrites the cache with `segments` (what one fingerprint hashed, in
    /// walk order), unless it holds just that already.
    pub fn save(&self, segments: &[Segment<'_>]) {
        let Some(file) = &self.file else { return };
        let same = segments.len() == self.segments.len()
            && segments.iter().zip(&self.segments).all(|(s, (n, r))| s.name == *n && s.new == self.data[r.clone()]);
        if same {
            return;
        }
        let mut out = Vec::with_capacity(MAGIC.len() + segments.iter().map(|s| s.new.len() + s.name.len() + 12).sum::<usize>());
        out.extend_from_slice(MAGIC);
        for s in segments {
            out.extend_from_slice(&(s.name.len() as u32).to_le_bytes());
            out.extend_from_slice(&s.name);
            out.extend_from_slice(&(s.new.len() as u64).to_le_bytes());
            out.extend_from_slice(&s.new);
        }
        let Some(dir) = file.parent() else { return };
        // Never written through a link or into another user's folder.
        let made = match dir.parent() {
            Some(home) => crate::home::create_own_dir(home, dir),
            None => crate::home::create_private_dir(dir),
        };
        if made.is_err() {
            return;
        }
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = crate::home::private_file()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&out))
            .and_then(|()| fs::rename(&tmp, file));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
}

/// One walk's part of the cache: the records it met last time, read in
/// order, and the ones it meets now.
pub struct Segment<'a> {
    name: Vec<u8>,
    old: &'a [u8],
    pos: usize,
    /// Built on the first record out of order: path -> record offset.
    index: Option<HashMap<&'a [u8], usize>>,
    new: Vec<u8>,
}

impl<'a> Segment<'a> {
    /// The digest remembered for `path`, if its key still matches.
    pub fn get(&mut self, path: &Path, key: &Key) -> Option<[u8; 32]> {
        let p = path.as_os_str().as_bytes();
        let rec = match record(self.old, self.pos) {
            Some(r) if r.0 == p => {
                self.pos = r.3;
                r
            }
            _ => {
                let old = self.old;
                let index = self.index.get_or_insert_with(|| {
                    let mut m = HashMap::new();
                    let mut at = 0;
                    while let Some((rp, _, _, next)) = record(old, at) {
                        m.insert(rp, at);
                        at = next;
                    }
                    m
                });
                record(old, *index.get(p)?)?
            }
        };
        (rec.1 == key.bytes()).then_some(rec.2)
    }

    /// Remembers that `path` with `key` has content `digest`.
    pub fn put(&mut self, path: &Path, key: &Key, digest: &[u8; 32]) {
        let p = path.as_os_str().as_bytes();
        let Ok(len) = u32::try_from(p.len()) else { return };
        self.new.extend_from_slice(&key.bytes());
        self.new.extend_from_slice(digest);
        self.new.extend_from_slice(&len.to_le_bytes());
        self.new.extend_from_slice(p);
    }
}

/// A record read back: path, key bytes, digest, next record's offset.
type Record<'a> = (&'a [u8], &'a [u8], [u8; 32], usize);

/// The record at `at` in a segment body: path, key bytes, digest, and
/// where the next one starts.
fn record(body: &[u8], at: usize) -> Option<Record<'_>> {
    let key = body.get(at..at + KEY_LEN)?;
    let d: [u8; 32] = body.get(at + KEY_LEN..at + KEY_LEN + 32)?.try_into().ok()?;
    let l = at + KEY_LEN + 32;
    let len = u32::from_le_bytes(body.get(l..l + 4)?.try_into().ok()?) as usize;
    let path = body.get(l + 4..l + 4 + len)?;
    Some((path, key, d, l + 4 + len))
}

/// The segments of a cache file; `None` when it is not one.
fn parse(data: &[u8]) -> Option<Vec<(Vec<u8>, std::ops::Range<usize>)>> {
    let mut at = MAGIC.len();
    if data.get(..at)? != MAGIC {
        return None;
    }
    let mut out = Vec::new();
    while at < data.len() {
        let nl = u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?) as usize;
        let name = data.get(at + 4..at + 4 + nl)?.to_vec();
        at += 4 + nl;
        let bl = usize::try_from(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?)).ok()?;
        at += 8;
        data.get(at..at.checked_add(bl)?)?;
        out.push((name, at..at + bl));
        at += bl;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{Cache, Key};
    use std::path::Path;

    #[test]
    fn saved_entries_load_back_in_and_out_of_order() {
        let dir = std::env::temp_dir().join(format!("zot-cache-test-{}", std::process::id()));
        let file = dir.join("c");
        let key = Key::of(&std::fs::metadata("/").expect("stat /"));
        let c = Cache::load(file.clone());
        let mut s = c.segment(b"x");
        s.put(Path::new("/a b/c"), &key, &[7; 32]);
        s.put(Path::new("/d"), &key, &[8; 32]);
        c.save(&[s]);
        let c = Cache::load(file.clone());
        let mut s = c.segment(b"x");
        assert_eq!(s.get(Path::new("/a b/c"), &key), Some([7; 32]));
        assert_eq!(s.get(Path::new("/d"), &key), Some([8; 32]));
        let mut s = c.segment(b"x");
        assert_eq!(s.get(Path::new("/d"), &key), Some([8; 32]));
        assert_eq!(s.get(Path::new("/e"), &key), None);
        assert!(c.segment(b"y").get(Path::new("/d"), &key).is_none());
        std::fs::write(&file, b"ZOTFPC2\n\x05").expect("write");
        assert!(Cache::load(file).segment(b"x").get(Path::new("/d"), &key).is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
