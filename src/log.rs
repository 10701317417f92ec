//! Extension log files: each child's stderr goes straight into its file,
//! and the host's own `[zot]` lines and log rotation go through one logger
//! thread, so the dispatcher never waits for a disk. [`flush`] waits until
//! every line handed over so far is written (the host calls it when it
//! stops).

use crossbeam_channel::{bounded, unbounded, Sender};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

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
    file: File,
    path: PathBuf,
    /// The file's length when opened: where this start's lines begin.
    start: u64,
}

enum Job {
    Line(Arc<LogFile>, Vec<u8>),
    Rotate(Arc<LogFile>, u64),
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
                        Job::Line(f, bytes) => f.write(&bytes),
                        Job::Rotate(f, max) => {
                            let _ = f.rotate_if_over(max);
                        }
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

/// Waits until every log line and rotation handed over so far is done.
pub fn flush() {
    let Some(tx) = logger() else { return };
    let (ack, done) = bounded(1);
    if tx.send(Job::Flush(ack)).is_ok() {
        let _ = done.recv();
    }
}

impl Log {
    /// Opens (creating, appending) the log file at `path`.
    pub fn open(path: &Path) -> io::Result<Log> {
        if let Some(dir) = path.parent() {
            // `logs` is the home's own: never a link to elsewhere.
            match dir.parent() {
                Some(home) if dir.file_name().is_some_and(|n| n == "logs") => crate::home::create_own_dir(home, dir)?,
                _ => crate::home::create_private_dir(dir)?,
            }
        }
        let file = crate::home::open_private(path, std::fs::OpenOptions::new().create(true).append(true))?;
        let start = file.metadata().map_or(0, |m| m.len());
        Ok(Log(Arc::new(LogFile { file, path: path.to_path_buf(), start })))
    }

    /// The last lines the child wrote to its stderr since this log was
    /// opened (its `[zot]` lines left out), to show why a start failed: at
    /// most [`TAIL_LINES`] lines and [`TAIL_BYTES`] bytes, control
    /// characters and escape sequences stripped. A small read, on a
    /// failure only.
    pub fn stderr_tail(&self) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = crate::home::open_private(&self.0.path, std::fs::OpenOptions::new().read(true)) else { return Vec::new() };
        let len = f.metadata().map_or(0, |m| m.len());
        // Rotated meanwhile: the file starts over.
        let start = if len < self.0.start { 0 } else { self.0.start };
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
        let bytes = format_line(msg);
        match logger() {
            Some(tx) => {
                if let Err(e) = tx.send(Job::Line(self.0.clone(), bytes)) {
                    if let Job::Line(f, bytes) = e.into_inner() {
                        f.write(&bytes);
                    }
                }
            }
            None => self.0.write(&bytes),
        }
    }

    /// When the file is over `max` bytes, it is copied to `<path>.1` and
    /// truncated in place, on the logger thread.
    pub fn rotate_later(&self, max: u64) {
        match logger() {
            Some(tx) => {
                let _ = tx.send(Job::Rotate(self.0.clone(), max));
            }
            None => {
                let _ = self.0.rotate_if_over(max);
            }
        }
    }

    /// The file, for a child's stderr.
    pub fn file(&self) -> &File {
        &self.0.file
    }
}

impl LogFile {
    fn write(&self, bytes: &[u8]) {
        let _ = (&self.file).write_all(bytes);
    }

    /// The child keeps writing through its own append-mode descriptor,
    /// which continues at the new end; lines it writes between the copy and
    /// the truncation are lost. The copy is written beside `<path>.1` and
    /// renamed over it, so `<path>.1` is always a whole earlier log.
    fn rotate_if_over(&self, max: u64) -> io::Result<bool> {
        if self.file.metadata()?.len() <= max {
            return Ok(false);
        }
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        let mut partial = old.clone();
        partial.push(".partial");
        // The copy is read from the log itself and written to a file made
        // afresh: a link put at either path is never written through.
        let copy = || -> io::Result<()> {
            let _ = std::fs::remove_file(&partial);
            let mut to = crate::home::open_private(Path::new(&partial), std::fs::OpenOptions::new().write(true).create_new(true))?;
            let mut from = crate::home::open_private(&self.path, std::fs::OpenOptions::new().read(true))?;
            io::copy(&mut from, &mut to)?;
            std::fs::rename(&partial, &old)
        };
        if let Err(e) = copy() {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
        self.file.set_len(0)?;
        let note = format!("log rotated past {max} bytes; older lines are in {}", Path::new(&old).display());
        self.write(&format_line(&note));
        Ok(true)
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
fn format_line(msg: &str) -> Vec<u8> {
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
