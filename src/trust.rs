//! Trusted projects (PROTOCOL §7.3): the fingerprint of a project's
//! `.zot/extensions`, the record of trusted projects in
//! `$ZOT_HOME/trust.json`, and `zot trust` / `zot untrust`.
//!
//! Decisions where the protocol is silent:
//! - The fingerprint is a SHA-256 over, for every extension folder of
//!   `.zot/extensions` in folder order (hidden ones are never loaded and
//!   skipped): the folder's name, its manifest's bytes, and the path
//!   (relative to the project) and bytes of every file inside the project
//!   that the extension runs or reads first: what `exec` resolves to, every
//!   `args` entry that names a file (relative to the manifest's
//!   directory, where the extension runs), and its skills' `SKILL.md`. For
//!   a bare-name `exec` on `PATH` (`python3`, `node`) that is the manifest
//!   plus its script arguments: the interpreter is not the project's, and
//!   files a script loads later (imports) are not followed.
//! - Files outside the project are not part of it: they do not come with
//!   the repository.
//! - Projects are recorded by canonical path; `zot untrust` of a folder
//!   that no longer exists removes it by its absolute path.
//! - `trust.json` is rewritten through a temporary file and a rename
//!   under an exclusive lock (`trust.json.lock`), so a crash leaves the
//!   old file and two `zot trust` at once lose nothing. A `trust.json`
//!   that cannot be parsed is never overwritten (the commands fail naming
//!   it) and trusts nothing.

use crate::home::{project_extensions_dir, Home};
use crate::manifest::{Manifest, MANIFEST_FILE};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// What `zot trust` / `zot untrust` were asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustCommand {
    Trust(Option<PathBuf>),
    Untrust(Option<PathBuf>),
    List,
}

/// One trusted project as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub dir: PathBuf,
    pub fingerprint: String,
    /// Seconds since the Unix epoch.
    #[serde(default)]
    pub trusted_at: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    projects: Vec<Entry>,
}

/// Whether a project may run its extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Trusted,
    /// Never trusted (or untrusted since).
    Untrusted,
    /// Trusted once, but its extensions changed since.
    Changed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Trusted => "trusted",
            Status::Untrusted => "untrusted",
            Status::Changed => "changed since trusted",
        }
    }
}

/// The canonical form of a project directory, or `dir` itself when it
/// cannot be resolved.
pub fn canonical(dir: &Path) -> PathBuf {
    fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The trust status of the project at `dir`. A broken `trust.json` trusts
/// nothing.
pub fn status(home: &Home, dir: &Path) -> Status {
    let dir = canonical(dir);
    let Ok(file) = read(home) else { return Status::Untrusted };
    let Some(e) = file.projects.iter().find(|e| e.dir == dir) else { return Status::Untrusted };
    match fingerprint(&dir) {
        Ok(f) if f == e.fingerprint => Status::Trusted,
        _ => Status::Changed,
    }
}

fn read(home: &Home) -> Result<TrustFile, String> {
    let path = home.trust_path();
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            format!("{}: not a valid trust file ({e}); fix or remove it", path.display())
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(TrustFile::default()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Writes `file` to `trust.json` atomically: a fresh temporary sibling,
/// synced, then renamed over it.
fn write(home: &Home, file: &TrustFile) -> Result<(), String> {
    let path = home.trust_path();
    let mut bytes = serde_json::to_vec_pretty(file).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    let err = |e: io::Error| format!("cannot write {}: {e}", path.display());
    let (tmp, mut f) = (0u32..1000)
        .find_map(|n| {
            let tmp = home.root().join(format!(".trust.json.{}.{n}.tmp", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => Some(Ok((tmp, f))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => None,
                Err(e) => Some(Err(e)),
            }
        })
        .unwrap_or_else(|| Err(io::Error::from(io::ErrorKind::AlreadyExists)))
        .map_err(err)?;
    let done = f.write_all(&bytes).and_then(|()| f.sync_all()).and_then(|()| fs::rename(&tmp, &path));
    if let Err(e) = done {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}

/// Holds `trust.json.lock` exclusively while alive.
struct Lock(#[allow(dead_code)] File);

fn lock(home: &Home) -> Result<Lock, String> {
    fs::create_dir_all(home.root())
        .map_err(|e| format!("cannot create {}: {e}", home.root().display()))?;
    let path = home.root().join("trust.json.lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    loop {
        // SAFETY: flock only acts on the descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(Lock(f));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(format!("cannot lock {}: {e}", path.display()));
        }
    }
}

/// Records the project at `dir` as trusted with its current fingerprint.
pub fn trust(home: &Home, dir: &Path) -> Result<Entry, String> {
    let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let fingerprint = fingerprint(&dir)?;
    let _lock = lock(home)?;
    let mut file = read(home)?;
    file.version = 1;
    let trusted_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let entry = Entry { dir: dir.clone(), fingerprint, trusted_at };
    file.projects.retain(|e| e.dir != dir);
    file.projects.push(entry.clone());
    file.projects.sort_by(|a, b| a.dir.cmp(&b.dir));
    write(home, &file)?;
    Ok(entry)
}

/// Forgets the project at `dir`; false when it was not recorded.
pub fn untrust(home: &Home, dir: &Path) -> Result<bool, String> {
    let dir = canonical(dir);
    let _lock = lock(home)?;
    let mut file = read(home)?;
    let before = file.projects.len();
    file.projects.retain(|e| e.dir != dir);
    if file.projects.len() == before {
        return Ok(false);
    }
    file.version = 1;
    write(home, &file)?;
    Ok(true)
}

/// Every recorded project with its status now.
pub fn list(home: &Home) -> Result<Vec<(Entry, Status)>, String> {
    let file = read(home)?;
    Ok(file
        .projects
        .into_iter()
        .map(|e| {
            let s = match fingerprint(&e.dir) {
                Ok(f) if f == e.fingerprint => Status::Trusted,
                _ => Status::Changed,
            };
            (e, s)
        })
        .collect())
}

/// The fingerprint of `project`'s `.zot/extensions` (see the module
/// header): `sha256:<hex>`.
pub fn fingerprint(project: &Path) -> Result<String, String> {
    let project = canonical(project);
    let root = project_extensions_dir(&project);
    let mut h = Sha256::new();
    let mut feed = |tag: &str, bytes: &[u8]| {
        h.update(tag.as_bytes());
        h.update(&(bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    let mut dirs: Vec<PathBuf> = match fs::read_dir(&root) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", root.display())),
    };
    dirs.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    for dir in dirs {
        let name = dir.file_name().map(|n| n.as_encoded_bytes().to_vec()).unwrap_or_default();
        feed("folder", &name);
        feed("manifest", &fs::read(dir.join(MANIFEST_FILE)).unwrap_or_default());
        let Ok(m) = Manifest::load(&dir) else { continue };
        for file in files_of(&m, &project) {
            let rel = file.strip_prefix(&project).unwrap_or(&file);
            feed("path", rel.as_os_str().as_encoded_bytes());
            feed("file", &read_file(&file)?);
        }
    }
    Ok(format!("sha256:{}", h.hex()))
}

/// The files inside `project` that `m` runs or reads first, sorted and
/// without repeats.
fn files_of(m: &Manifest, project: &Path) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(p) = m.resolve_exec() {
        candidates.push(p);
    } else if !m.exec.is_empty() {
        candidates.push(m.dir.join(&m.exec));
    }
    candidates.extend(m.args.iter().filter(|a| !a.is_empty()).map(|a| m.dir.join(a)));
    for s in m.skills() {
        candidates.push(if s.is_dir() { s.join("SKILL.md") } else { s.clone() });
    }
    let mut out: Vec<PathBuf> = candidates
        .into_iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .filter(|p| p.starts_with(project) && p.is_file())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn read_file(p: &Path) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    File::open(p)
        .and_then(|mut f| f.read_to_end(&mut buf))
        .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    Ok(buf)
}

/// The one line front ends print for an untrusted project.
pub fn not_loaded_line(dir: &str, names: &[String]) -> String {
    crate::text::one_line(&format!(
        "{}: the project {dir} is not trusted (zot trust {dir} allows {})",
        match names {
            [one] => format!("project extension {one} not loaded"),
            _ => format!("{} project extensions not loaded ({})", names.len(), names.join(", ")),
        },
        if names.len() == 1 { "it" } else { "them" }
    ))
}

/// `zot trust` / `zot untrust`; returns the exit code.
pub fn run(cmd: TrustCommand, home: &Home) -> i32 {
    let here = |d: Option<PathBuf>| match d {
        Some(d) => Ok(d),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot determine the current directory: {e}")),
    };
    let result = match cmd {
        TrustCommand::Trust(d) => here(d).and_then(|d| {
            if d.exists() && !d.is_dir() {
                return Err(format!("{}: not a directory (zot trust takes the project's folder)", d.display()));
            }
            if !d.is_dir() {
                return Err(format!("{}: no such directory", d.display()));
            }
            let e = trust(home, &d)?;
            let names: Vec<String> = crate::discovery::scan_dir(
                &project_extensions_dir(&e.dir),
                crate::discovery::Source::Project,
            )
            .into_iter()
            .map(|r| match r {
                Ok(f) => f.manifest.name,
                Err(b) => b.label(),
            })
            .collect();
            let what = if names.is_empty() {
                "no project extensions yet".to_string()
            } else {
                format!("{} project extension(s): {}", names.len(), names.join(", "))
            };
            Ok(vec![format!("trusted {} ({what})", e.dir.display())])
        }),
        TrustCommand::Untrust(d) => here(d).and_then(|d| {
            let dir = canonical(&d);
            Ok(vec![if untrust(home, &dir)? {
                format!("untrusted {}", dir.display())
            } else {
                format!("{} was not trusted; nothing changed", dir.display())
            }])
        }),
        TrustCommand::List => list(home).map(|all| {
            if all.is_empty() {
                return vec!["no trusted projects (trust one with: zot trust [DIR])".to_string()];
            }
            all.iter()
                .map(|(e, s)| match s {
                    Status::Trusted => format!("{}  trusted", e.dir.display()),
                    _ => format!(
                        "{}  {} (run 'zot trust {}' to allow it again)",
                        e.dir.display(),
                        s.as_str(),
                        e.dir.display()
                    ),
                })
                .collect()
        }),
    };
    match result {
        Ok(lines) => {
            let mut out = io::stdout().lock();
            for l in lines {
                if writeln!(out, "{}", crate::text::one_line(&l)).is_err() {
                    break;
                }
            }
            0
        }
        Err(e) => {
            eprintln!("zot: {}", crate::text::one_line(&e));
            1
        }
    }
}

// ---------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), for the fingerprint.

struct Sha256 {
    state: [u32; 8],
    buf: Vec<u8>,
    len: u64,
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

impl Sha256 {
    fn new() -> Sha256 {
        Sha256 {
            state: [
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
                0x5be0cd19,
            ],
            buf: Vec::with_capacity(64),
            len: 0,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if !self.buf.is_empty() {
            let take = (64 - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == 64 {
                let block = std::mem::take(&mut self.buf);
                self.block(&block);
            }
        }
        let mut chunks = data.chunks_exact(64);
        for c in &mut chunks {
            self.block(c);
        }
        self.buf.extend_from_slice(chunks.remainder());
    }

    fn block(&mut self, b: &[u8]) {
        let mut w = [0u32; 64];
        for (i, c) in b.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b2, mut c, mut d, mut e, mut f, mut g, mut h] = self.state;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = h.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b2) ^ (a & c) ^ (b2 & c);
            let t2 = s0.wrapping_add(maj);
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b2;
            b2 = a;
            a = t1.wrapping_add(t2);
        }
        for (s, v) in self.state.iter_mut().zip([a, b2, c, d, e, f, g, h]) {
            *s = s.wrapping_add(v);
        }
    }

    fn hex(mut self) -> String {
        let bits = self.len.wrapping_mul(8);
        let mut pad = vec![0x80u8];
        let rem = (self.len + 1) % 64;
        pad.resize(1 + if rem <= 56 { 56 - rem } else { 120 - rem } as usize, 0);
        pad.extend_from_slice(&bits.to_be_bytes());
        let len = self.len;
        self.update(&pad);
        self.len = len;
        self.state.iter().map(|w| format!("{w:08x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(data: &[u8]) -> String {
        let mut h = Sha256::new();
        h.update(data);
        h.hex()
    }

    #[test]
    fn sha256_vectors() {
        assert_eq!(sha(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            sha(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let mut h = Sha256::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        let mut h = Sha256::new();
        h.update(b"ab");
        h.update(b"c");
        assert_eq!(h.hex(), sha(b"abc"));
    }
}
