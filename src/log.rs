//! Extension log files, written by the host alone: the host's own `[zot]`
//! lines and the lines of each child's stderr (read from a pipe by the
//! child's reader, `crate::child`) all go through one logger thread, in
//! the order they were handed over, so the dispatcher never waits for a
//! disk and no child can truncate, rewrite or seek in its log. The logger
//! rotates a log that passed its limit: renamed to `<path>.1` (replacing
//! the one before) and a new file begun with `[zot] log rotated`.
//! [`flush`] waits until every line handed over so far is written (the
//! host calls it when it stops).

use crossbeam_channel::{bounded, unbounded, Sender};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A log past this many bytes is rotated (docs/protocol.md §1).
pub const LOG_MAX: u64 = 8 * 1024 * 1024;
/// The first line of a log begun by a rotation.
pub const ROTATED: &str = "log rotated";

/// At most this many lines of a child's stderr are shown for a failed start.
pub const TAIL_LINES: usize = 5;
/// At most this many bytes of them.
pub const TAIL_BYTES: usize = 1024;
/// At most this much of the log is read back for them.
const TAIL_READ: u64 = 64 * 1024;

/// The extension's log file: stderr of the child and `[zot]` lines.
#[derive(Debug, Clone)]
pub struct Log(Arc<LogFile>);

#[derive(Debug)]
struct LogFile {
    out: Mutex<Out>,
    path: PathBuf,
    /// The file's length when opened: where this start's lines begin.
    start: u64,
    /// Rotated past this many bytes (0: never).
    max: u64,
    /// Rotated since it was opened: this start's lines begin at 0.
    rotated: AtomicBool,
}

/// The open file and its length, as this process wrote it.
#[derive(Debug)]
struct Out {
    file: File,
    len: u64,
}

enum Job {
    Bytes(Arc<LogFile>, Vec<u8>),
    Flush(Sender<()>),
}

/// The logger thread's inbox; `None` when it could not start, and lines
/// are then written by whoever logs them.
fn logger() -> Option<&'static Sender<Job>> {
    static LOGGER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    LOGGER
        .get_or_init(|| {
            let (tx, rx) = unbounded::<Job>();
            let spawned = std::thread::Builder::new().name("zot-log".into()).stack_size(128 * 1024).spawn(move || {
                while let Ok(job) = rx.recv() {
                    match job {
                        Job::Bytes(f, bytes) => f.write(&bytes),
                        Job::Flush(ack) => {
                            let _ = ack.send(());
                        }
                    }
                }
            });
            spawned.ok().map(|_| tx)
        })
        .as_ref()
}

/// Waits until every log line handed over so far is written.
pub fn flush() {
    let Some(tx) = logger() else { return };
    let (ack, done) = bounded(1);
    if tx.send(Job::Flush(ack)).is_ok() {
        let _ = done.recv();
    }
}

impl Log {
    /// Opens (creating, appending) the log file at `path`, rotated past
    /// [`LOG_MAX`].
    pub fn open(path: &Path) -> io::Result<Log> {
        Log::open_limited(path, LOG_MAX)
    }

    /// Opens the log file at `path`, rotated past `max` bytes (0: never).
    pub fn open_limited(path: &Path, max: u64) -> io::Result<Log> {
        if let Some(dir) = path.parent() {
            // `logs` is the home's own: never a link to elsewhere.
            match dir.parent() {
                Some(home) if dir.file_name().is_some_and(|n| n == "logs") => crate::home::create_own_dir(home, dir)?,
                _ => crate::home::create_private_dir(dir)?,
            }
        }
        let file = crate::home::open_private(path, std::fs::OpenOptions::new().create(true).append(true))?;
        let start = file.metadata().map_or(0, |m| m.len());
        let out = Mutex::new(Out { file, len: start });
        Ok(Log(Arc::new(LogFile { out, path: path.to_path_buf(), start, max, rotated: AtomicBool::new(false) })))
    }

    /// The last lines the child wrote to its stderr since this log was
    /// opened (its `[zot]` lines left out), to show why a start failed: at
    /// most [`TAIL_LINES`] lines and [`TAIL_BYTES`] bytes, control
    /// characters and escape sequences stripped. A small read, on a
    /// failure only: it waits for the lines handed over so far ([`flush`]).
    pub fn stderr_tail(&self) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        flush();
        let Ok(mut f) = crate::home::open_private(&self.0.path, std::fs::OpenOptions::new().read(true)) else { return Vec::new() };
        let len = f.metadata().map_or(0, |m| m.len());
        // Rotated meanwhile: the file starts over.
        let start = if len < self.0.start || self.0.rotated.load(Ordering::Acquire) { 0 } else { self.0.start };
        let from = start.max(len.saturating_sub(TAIL_READ));
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_err() || f.take(TAIL_READ).read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        let text = String::from_utf8_lossy(&buf);
        let mut lines: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with("[zot] "))
            .map(|l| crate::text::one_line(l).trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        lines.drain(..lines.len().saturating_sub(TAIL_LINES));
        // Over the byte bound: the oldest go first, then the front of the
        // oldest one left.
        while lines.iter().map(|l| l.len() + 1).sum::<usize>() > TAIL_BYTES {
            let excess = lines.iter().map(|l| l.len() + 1).sum::<usize>() - TAIL_BYTES;
            if lines.len() > 1 {
                lines.remove(0);
            } else {
                let first = &lines[0];
                let mut cut = excess.min(first.len());
                while !first.is_char_boundary(cut) {
                    cut += 1;
                }
                lines[0] = first[cut..].to_string();
            }
        }
        lines
    }

    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// Appends one host line, `[zot] ` prefixed, in a single write, on the
    /// logger thread.
    pub fn line(&self, msg: &str) {
        self.append(format_line(msg));
    }

    /// Appends `bytes` (whole lines) as they are, in one write, on the
    /// logger thread: after every line handed over before, before every
    /// line handed over after.
    pub fn append(&self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        match logger() {
            Some(tx) => {
                if let Err(e) = tx.send(Job::Bytes(self.0.clone(), bytes)) {
                    if let Job::Bytes(f, bytes) = e.into_inner() {
                        f.write(&bytes);
                    }
                }
            }
            None => self.0.write(&bytes),
        }
    }
}

impl LogFile {
    /// Writes `bytes` at the end of the log, rotating it first when it is
    /// past its limit.
    fn write(&self, bytes: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if self.max > 0 && out.len >= self.max {
            if let Err(e) = self.rotate(&mut out) {
                let note = format_line(&format!("could not rotate this log past {} bytes: {e}", self.max));
                let _ = (&out.file).write_all(&note);
                out.len += note.len() as u64;
            }
        }
        if (&out.file).write_all(bytes).is_ok() {
            out.len += bytes.len() as u64;
        }
    }

    /// Renames the log to `<path>.1`, replacing the one before, and begins
    /// a new one at `path` whose first line says so. A log that is not at
    /// `path` any more (another process rotated it) is not renamed again:
    /// the file at `path` is opened instead, and rotated if it too is past
    /// the limit. Renaming moves a link put at `<path>.1` rather than
    /// writing through it; the new file is made afresh ([`crate::home::open_private`]).
    fn rotate(&self, out: &mut Out) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let open = || crate::home::open_private(&self.path, std::fs::OpenOptions::new().create(true).append(true));
        self.rotated.store(true, Ordering::Release);
        let ours = out.file.metadata()?;
        let here = std::fs::symlink_metadata(&self.path).ok();
        if !here.is_some_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino()) {
            let file = open()?;
            let len = file.metadata()?.len();
            *out = Out { file, len };
            if len < self.max {
                return Ok(());
            }
        }
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)?;
        let file = open()?;
        let note = format_line(ROTATED);
        (&file).write_all(&note)?;
        *out = Out { file, len: note.len() as u64 };
        Ok(())
    }
}

/// `now` as UTC in RFC 3339 with milliseconds, `2026-12-01T10:45:26.123Z`.
/// A clock before 1970 reads as the epoch.
pub fn utc(now: std::time::SystemTime) -> String {
    let d = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, ms) = (d.as_secs(), d.subsec_millis());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
}

/// `[zot] msg\n`, one line whatever the message holds.
pub fn format_line(msg: &str) -> Vec<u8> {
    let mut buf = Vec::with_capacity(msg.len() + 8);
    buf.extend_from_slice(b"[zot] ");
    for c in msg.chars() {
        if c == '\n' || c == '\r' {
            buf.extend_from_slice(b"\\n");
        } else {
            let mut tmp = [0u8; 4];
            buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
        }
    }
    buf.push(b'\n');
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_by_the_logger_and_flush_waits_for_them() {
        let dir = std::env::temp_dir().join(format!("zot-log-test-{}", std::process::id()));
        let path = dir.join("ext-x.log");
        let log = Log::open(&path).unwrap();
        for i in 0..100 {
            log.line(&format!("line {i}\nwith a newline"));
        }
        flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 100);
        assert!(text.starts_with("[zot] line 0\\nwith a newline\n"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_log_past_its_limit_is_renamed_once_even_by_two_writers() {
        let dir = std::env::temp_dir().join(format!("zot-log-rotate-{}", std::process::id()));
        let path = dir.join("ext-r.log");
        let (a, b) = (Log::open_limited(&path, 100).unwrap(), Log::open_limited(&path, 100).unwrap());
        a.append(vec![b'a'; 150]);
        a.append(b"a after\n".to_vec());
        flush();
        let old = dir.join("ext-r.log.1");
        assert_eq!(std::fs::read(&old).unwrap().len(), 150, "the full log is kept as .1");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[zot] log rotated\na after\n");
        // `b` still writes to the old file until its own count passes the
        // limit; then it finds the new log at the path and goes on there,
        // without a second rotation.
        b.append(vec![b'b'; 120]);
        b.append(b"b after\n".to_vec());
        flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[zot] log rotated\na after\nb after\n");
        assert_eq!(std::fs::read(&old).unwrap().len(), 270);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn utc_times() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = |secs: u64, ms: u64| utc(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_796_121_926, 123), "2026-12-01T10:45:26.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
        assert_eq!(utc(UNIX_EPOCH - Duration::from_secs(5)), "1970-01-01T00:00:00.000Z");
    }
}
