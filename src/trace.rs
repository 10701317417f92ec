//! Frame tracing (`--trace FILE`, or `ZOT_TRACE=FILE` when the flag is
//! absent): every frame between the host and its extensions, in both
//! directions, as one JSON line each:
//!
//! ```text
//! {"t":0.012345,"ext":"weather","dir":"out","frame":{"type":"hello_ack",...}}
//! ```
//!
//! `t` is seconds since the tracer was created (the host's start), `dir` is
//! `in` (extension → host, a line read from its stdout) or `out` (host →
//! extension, a frame handed to its stdin). `frame` is the line exactly as
//! it went over the wire when it is valid JSON of at most [`MAX_FRAME`]
//! bytes; otherwise it is replaced by
//! `{"truncated":true,"bytes":N,"head":"<first 1 KiB>"}` (too long) or
//! `{"not_json":true,"bytes":N,"head":"<first 1 KiB>"}` (junk on stdout).
//!
//! Cost: the hooks are in [`crate::child`]: the reader thread (each line in,
//! before it is decoded) and [`Child::send`](crate::child::Child::send)
//! (each frame out, before it is written), so that causes precede effects
//! in the file. With tracing off each is one `Option` check. With it on,
//! a hook takes the time, clones the frame's shared bytes (out) or copies
//! the line (in; at most [`MAX_FRAME`] bytes), and hands the record to a
//! dedicated writer thread through a bounded queue without ever waiting:
//! the dispatcher never touches the disk. When the disk cannot keep up
//! (more than [`QUEUE_RECORDS`] records or [`QUEUE_BYTES`] bytes queued),
//! records are dropped and the file says so with a
//! `{"t":..,"dropped":N}` line. The writer flushes whenever its queue is
//! empty, and [`Tracer::flush`] (called by
//! [`Host::shutdown`](crate::host::Host::shutdown)) waits for everything
//! queued to be on disk. The file is created (or truncated) when the
//! tracer is. A write error stops tracing after one message on stderr.

use crossbeam_channel::{bounded, Sender, TrySendError};
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Frames longer than this (bytes, without the `\n`) are replaced by a
/// `truncated` summary.
pub const MAX_FRAME: usize = 64 * 1024;

/// How much of a replaced frame is kept in `head`, in bytes.
pub const HEAD: usize = 1024;

/// Records queued for the writer thread at most.
pub const QUEUE_RECORDS: usize = 16 * 1024;

/// Bytes of frames queued for the writer thread at most.
pub const QUEUE_BYTES: usize = 32 * 1024 * 1024;

/// The environment variable naming a trace file when `--trace` is absent.
pub const TRACE_ENV: &str = "ZOT_TRACE";

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Extension → host.
    In,
    /// Host → extension.
    Out,
}

impl Dir {
    fn as_str(self) -> &'static str {
        match self {
            Dir::In => "in",
            Dir::Out => "out",
        }
    }
}

/// A frame's bytes: shared with the child's queue (out) or copied (in).
enum Data {
    Shared(Arc<Vec<u8>>),
    Owned(Vec<u8>),
    /// A line too long to keep: its first bytes and its length.
    Head(Vec<u8>, usize),
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::Shared(b) => b.len(),
            Data::Owned(b) => b.len(),
            Data::Head(b, _) => b.len(),
        }
    }
}

enum Rec {
    Frame { t: f64, ext: Arc<str>, dir: Dir, data: Data },
    /// Write out everything before this, then answer.
    Flush(Sender<()>),
}

/// A trace file shared by every child of a host; records are written by
/// its own thread.
pub struct Tracer {
    start: Instant,
    path: PathBuf,
    tx: Sender<Rec>,
    queued_bytes: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
    /// Reader threads still running (their [`Tap::for_reader`] alive).
    readers: Arc<(Mutex<usize>, Condvar)>,
}

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Tracer {
    /// Creates (or truncates) the trace file at `path` and starts its
    /// writer thread; `t` counts from now.
    pub fn create(path: &Path) -> io::Result<Arc<Tracer>> {
        let file = crate::home::open_private(path, File::options().write(true).create(true).truncate(true))?;
        let start = Instant::now();
        let (tx, rx) = bounded::<Rec>(QUEUE_RECORDS);
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicU64::new(0));
        let (q, d, shown) = (queued_bytes.clone(), dropped.clone(), path.display().to_string());
        thread::Builder::new().name("zot-trace".into()).spawn(move || {
            let mut out = BufWriter::with_capacity(64 * 1024, file);
            let mut broken = false;
            let fail = |e: io::Error, broken: &mut bool| {
                if !*broken {
                    *broken = true;
                    eprintln!("zot: trace {shown}: {e}; tracing stopped");
                }
            };
            while let Ok(rec) = rx.recv() {
                match rec {
                    Rec::Frame { t, ext, dir, data } => {
                        q.fetch_sub(data.len(), Ordering::Relaxed);
                        let n = d.swap(0, Ordering::Relaxed);
                        if broken {
                            continue;
                        }
                        let mut buf = Vec::new();
                        if n > 0 {
                            buf.extend_from_slice(format!("{{\"t\":{t:.6},\"dropped\":{n}}}\n").as_bytes());
                        }
                        buf.extend_from_slice(&entry(t, &ext, dir, &data));
                        if let Err(e) = out.write_all(&buf) {
                            fail(e, &mut broken);
                        }
                    }
                    Rec::Flush(ack) => {
                        if let Err(e) = out.flush() {
                            fail(e, &mut broken);
                        }
                        let _ = ack.send(());
                        continue;
                    }
                }
                if rx.is_empty() && !broken {
                    if let Err(e) = out.flush() {
                        fail(e, &mut broken);
                    }
                }
            }
            let _ = out.flush();
        })?;
        let readers = Arc::new((Mutex::new(0), Condvar::new()));
        Ok(Arc::new(Tracer { start, path: path.to_path_buf(), tx, queued_bytes, dropped, readers }))
    }

    /// The trace file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle for one extension's hooks.
    pub fn tap(self: &Arc<Tracer>, ext: &str) -> Tap {
        Tap { tracer: Arc::clone(self), ext: Arc::from(ext), _reader: None }
    }

    fn push(&self, ext: &Arc<str>, dir: Dir, data: Data) {
        let t = self.start.elapsed().as_secs_f64();
        let len = data.len();
        if self.queued_bytes.fetch_add(len, Ordering::Relaxed) + len > QUEUE_BYTES {
            self.queued_bytes.fetch_sub(len, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let rec = Rec::Frame { t, ext: Arc::clone(ext), dir, data };
        if let Err(e) = self.tx.try_send(rec) {
            self.queued_bytes.fetch_sub(len, Ordering::Relaxed);
            if matches!(e, TrySendError::Full(_)) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Waits (at most `timeout`) until every record queued so far is
    /// written and the file flushed. The children's reader threads are
    /// given a quarter of it to finish first: a child's last lines (its
    /// `shutdown_ack`) may still be on their way when its exit is known.
    pub fn flush(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let (lock, cvar) = &*self.readers;
        let readers_deadline = Instant::now() + timeout / 4;
        let mut open = lock.lock().unwrap_or_else(|e| e.into_inner());
        while *open > 0 {
            let left = readers_deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            open = cvar.wait_timeout(open, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        drop(open);
        let (ack_tx, ack_rx) = bounded(1);
        if self.tx.send_deadline(Rec::Flush(ack_tx), deadline).is_ok() {
            let _ = ack_rx.recv_deadline(deadline);
        }
    }
}

/// One extension's view of the tracer.
#[derive(Debug, Clone)]
pub struct Tap {
    tracer: Arc<Tracer>,
    ext: Arc<str>,
    /// Set on a reader thread's tap: counted until the last clone drops.
    _reader: Option<Arc<ReaderMark>>,
}

/// Counts a running reader thread in its tracer while it lives.
#[derive(Debug)]
struct ReaderMark(Arc<(Mutex<usize>, Condvar)>);

impl Drop for ReaderMark {
    fn drop(&mut self) {
        let (lock, cvar) = &*self.0;
        let mut open = lock.lock().unwrap_or_else(|e| e.into_inner());
        *open = open.saturating_sub(1);
        cvar.notify_all();
    }
}

impl Tap {
    /// The tap of a reader thread: [`Tracer::flush`] waits a little for
    /// it to be dropped (at the end of the child's stdout).
    pub fn for_reader(&self) -> Tap {
        let (lock, _) = &*self.tracer.readers;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let mark = ReaderMark(Arc::clone(&self.tracer.readers));
        Tap { tracer: Arc::clone(&self.tracer), ext: Arc::clone(&self.ext), _reader: Some(Arc::new(mark)) }
    }

    /// A frame to the extension, as encoded (with its `\n`).
    pub fn frame_out(&self, bytes: &Arc<Vec<u8>>) {
        self.tracer.push(&self.ext, Dir::Out, Data::Shared(Arc::clone(bytes)));
    }

    /// A line from the extension (without its `\n`).
    pub fn line_in(&self, line: &[u8]) {
        let data = if line.len() > MAX_FRAME {
            Data::Head(line[..HEAD].to_vec(), line.len())
        } else {
            Data::Owned(line.to_vec())
        };
        self.tracer.push(&self.ext, Dir::In, data);
    }

    /// A line from the extension too long to be kept: its first bytes and
    /// its whole length.
    pub fn discarded_in(&self, head: &[u8], bytes: usize) {
        let head = head[..head.len().min(HEAD)].to_vec();
        self.tracer.push(&self.ext, Dir::In, Data::Head(head, bytes));
    }
}

fn prefix(t: f64, ext: &str, dir: Dir) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(format!("{{\"t\":{t:.6},\"ext\":").as_bytes());
    json_string(&mut buf, ext);
    buf.extend_from_slice(format!(",\"dir\":\"{}\",\"frame\":", dir.as_str()).as_bytes());
    buf
}

/// One trace line, `\n` included.
fn entry(t: f64, ext: &str, dir: Dir, data: &Data) -> Vec<u8> {
    let line: &[u8] = match data {
        Data::Shared(b) => b,
        Data::Owned(b) => b,
        Data::Head(head, bytes) => {
            let mut buf = prefix(t, ext, dir);
            summary(&mut buf, "truncated", *bytes, head);
            buf.extend_from_slice(b"}\n");
            return buf;
        }
    };
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut buf = prefix(t, ext, dir);
    if line.len() > MAX_FRAME {
        summary(&mut buf, "truncated", line.len(), line);
    } else if !line.contains(&b'\n') && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
        buf.reserve(line.len() + 2);
        buf.extend_from_slice(line);
    } else {
        summary(&mut buf, "not_json", line.len(), line);
    }
    buf.extend_from_slice(b"}\n");
    buf
}

/// `{"<flag>":true,"bytes":N,"head":"<first HEAD bytes>"}`.
fn summary(buf: &mut Vec<u8>, flag: &str, bytes: usize, data: &[u8]) {
    buf.extend_from_slice(format!("{{\"{flag}\":true,\"bytes\":{bytes},\"head\":").as_bytes());
    json_string(buf, &head(data));
    buf.push(b'}');
}

/// The first [`HEAD`] bytes of `data` as text: cut at a character boundary
/// when the data is UTF-8, lossily decoded otherwise.
fn head(data: &[u8]) -> String {
    let cut = data.len().min(HEAD);
    match std::str::from_utf8(&data[..cut]) {
        Ok(s) => s.to_string(),
        // A character split by the cut: drop its start.
        Err(e) if e.error_len().is_none() => String::from_utf8_lossy(&data[..e.valid_up_to()]).into_owned(),
        Err(_) => String::from_utf8_lossy(&data[..cut]).into_owned(),
    }
}

fn json_string(buf: &mut Vec<u8>, s: &str) {
    // Serializing a str cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parse(buf: &[u8]) -> Value {
        assert_eq!(buf.last(), Some(&b'\n'));
        serde_json::from_slice(buf).unwrap()
    }

    #[test]
    fn entries() {
        let v = parse(&entry(1.5, "w", Dir::Out, &Data::Owned(b"{\"type\":\"shutdown\"}\n".to_vec())));
        assert_eq!(v, json!({"t": 1.5, "ext": "w", "dir": "out", "frame": {"type": "shutdown"}}));
        let v = parse(&entry(0.0, "a\"b", Dir::In, &Data::Owned(b"not json".to_vec())));
        assert_eq!(v["ext"], "a\"b");
        assert_eq!(v["frame"], json!({"not_json": true, "bytes": 8, "head": "not json"}));
        let big = format!("{{\"type\":\"x\",\"d\":\"{}\"}}", "é".repeat(MAX_FRAME));
        let v = parse(&entry(0.0, "w", Dir::In, &Data::Owned(big.clone().into_bytes())));
        assert_eq!(v["frame"]["truncated"], true);
        assert_eq!(v["frame"]["bytes"], big.len());
        let h = v["frame"]["head"].as_str().unwrap();
        assert!(h.len() <= HEAD && h.len() > HEAD - 4 && h.starts_with("{\"type\""));
        let v = parse(&entry(0.0, "w", Dir::In, &Data::Head(b"abc".to_vec(), 99)));
        assert_eq!(v["frame"], json!({"truncated": true, "bytes": 99, "head": "abc"}));
    }

    #[test]
    fn head_of_invalid_utf8() {
        assert_eq!(head(b"\xffab"), "\u{fffd}ab");
        assert_eq!(head(&[b'a'; 2000]).len(), HEAD);
    }

    #[test]
    fn writes_and_flushes() {
        let path = std::env::temp_dir().join(format!("zot-trace-unit-{}", std::process::id()));
        let tracer = Tracer::create(&path).unwrap();
        let tap = tracer.tap("x");
        tap.line_in(br#"{"type":"hello"}"#);
        tap.frame_out(&Arc::new(b"{\"type\":\"hello_ack\"}\n".to_vec()));
        tracer.flush(Duration::from_secs(5));
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[0]["dir"].as_str(), lines[0]["frame"]["type"].as_str()), (Some("in"), Some("hello")));
        assert_eq!((lines[1]["dir"].as_str(), lines[1]["frame"]["type"].as_str()), (Some("out"), Some("hello_ack")));
    }
}
