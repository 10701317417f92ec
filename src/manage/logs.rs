//! `zot ext logs`: printing an extension's or MCP server's log, or
//! following it (`--follow`) through truncation and rotation.

use crate::home::Home;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::discovery::{mcp_servers, Found, Source};
use super::lookup::{ambiguous, check_name, matching, not_found};
use super::out::{out_err, say, show, Fail, Res};
use super::sanitize;

/// How often `logs --follow` looks at the file.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(200);

pub(super) fn logs(home: &Home, cwd: Option<&Path>, name: &str, follow: bool, mcp_configs: &[PathBuf]) -> Res {
    check_name(name)?;
    let mcp_log = |name: &str| home.logs_dir().join(format!("mcp-{name}.log"));
    // A server of a `--mcp-config` file wins over everything installed, as
    // in the session given the file (docs/protocol.md §8.1).
    let given = mcp_configs.iter().flat_map(|f| mcp_servers(f, Source::Ext, false)).any(|f| {
        matches!(f, Ok(Found { manifest, mcp: Some(_), .. }) if manifest.name == name)
    });
    let found = if given { Vec::new() } else { matching(home, cwd, name)? };
    // Two extensions of one name share a log file, but which of them wrote
    // it is unknown: a name matching more than one is refused, as for the
    // other commands (docs/protocol.md §5).
    let name = match &found[..] {
        [] => name,
        [one] => one.name.as_str(),
        _ => return Err(ambiguous(name, &found)),
    };
    let path = match found.first() {
        _ if given => mcp_log(name),
        Some(e) if e.mcp.is_some() => mcp_log(name),
        Some(_) => home.log_path(name),
        // Neither installed nor given: the log a session left, an
        // extension's first, else a server's (every hint names it).
        None if fs::metadata(home.log_path(name)).is_err() && fs::metadata(mcp_log(name)).is_ok() => mcp_log(name),
        None => home.log_path(name),
    };
    if fs::metadata(&path).is_err() {
        if found.is_empty() && !given {
            return Err(not_found(name));
        }
        if !follow {
            return say(&format!("no log for {name} yet ({})", show(&path)));
        }
        eprintln!("{}", sanitize(&format!("zot: waiting for {} to appear", show(&path))));
    }
    if follow {
        return follow_file(&path);
    }
    let mut f = File::open(&path).map_err(|e| format!("cannot read {}: {e}", show(&path)))?;
    let mut out = ForTheTerminal::new(io::stdout().lock());
    copy_out(&mut f, &mut out, &path)?;
    out.flush().map_err(out_err)
}

/// What the log holds is an extension's own text: on a terminal, its
/// control characters (escape sequences, carriage returns, backspaces, and
/// the C1 controls U+0080..U+009F, CSI and OSC among them, in their UTF-8
/// form) are left out, so it can neither pass for the host's lines nor
/// drive the terminal; to a file or a pipe it is copied as it is.
struct ForTheTerminal<W> {
    out: W,
    /// A 0xC2 that ended the last write: the first half of a C1 control,
    /// or of any other character, decided by the next byte.
    held: bool,
}

impl<W: Write> Write for ForTheTerminal<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let shown = self.pass(buf);
        self.out.write_all(&shown)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W> ForTheTerminal<W> {
    fn new(out: W) -> Self {
        ForTheTerminal { out, held: false }
    }

    fn pass<'a>(&mut self, bytes: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        static TTY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        // SAFETY: isatty only asks about a descriptor.
        let tty = *TTY.get_or_init(|| unsafe { libc::isatty(1) } == 1);
        if !tty {
            return std::borrow::Cow::Borrowed(bytes);
        }
        std::borrow::Cow::Owned(self.filter(bytes))
    }

    fn filter(&mut self, bytes: &[u8]) -> Vec<u8> {
        let control = |b: u8| (b < 0x20 && !matches!(b, b'\n' | b'\t')) || b == 0x7f;
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = bytes.iter().copied().peekable();
        if std::mem::take(&mut self.held) {
            match rest.peek() {
                Some(0x80..=0x9f) => {
                    rest.next();
                }
                _ => out.push(0xc2),
            }
        }
        while let Some(b) = rest.next() {
            if b == 0xc2 {
                match rest.peek() {
                    Some(0x80..=0x9f) => {
                        rest.next();
                    }
                    Some(_) => out.push(b),
                    None => self.held = true,
                }
            } else if !control(b) {
                out.push(b);
            }
        }
        out
    }
}

/// Copies `r` to `out`, telling read errors from write errors.
fn copy_out(r: &mut impl Read, out: &mut impl Write, path: &Path) -> Res<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Fail::Msg(format!("cannot read {}: {e}", show(path)))),
        };
        out.write_all(&buf[..n]).map_err(out_err)?;
        total += n as u64;
    }
}

/// Prints the file and then whatever is appended to it, polling every
/// [`FOLLOW_POLL`], until killed or stdout closes. A file that shrinks was
/// truncated: it is read again from the start. A file replaced by another
/// one (rotation: a new inode at the path) is reopened once the old one is
/// drained.
fn follow_file(path: &Path) -> Res {
    let mut out = ForTheTerminal::new(io::stdout().lock());
    // The open file, its (device, inode), and how much of it was printed.
    let mut current: Option<(File, (u64, u64), u64)> = None;
    loop {
        match fs::metadata(path) {
            Ok(meta) => {
                let id = (meta.dev(), meta.ino());
                if current.as_ref().is_some_and(|(_, cur, _)| *cur != id) {
                    if let Some((mut old, _, offset)) = current.take() {
                        drain(&mut old, offset, &mut out, path)?;
                    }
                }
                if current.is_none() {
                    match File::open(path) {
                        Ok(f) => current = Some((f, id, 0)),
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => {
                            return Err(Fail::Msg(format!("cannot read {}: {e}", show(path))))
                        }
                    }
                }
                if let Some((f, _, offset)) = current.as_mut() {
                    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                    if len < *offset {
                        eprintln!("{}", sanitize(&format!("zot: {}: file truncated", show(path))));
                        *offset = 0;
                    }
                    *offset = drain(f, *offset, &mut out, path)?;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Moved away (rotation in progress): print what was left.
                if let Some((mut old, _, offset)) = current.take() {
                    drain(&mut old, offset, &mut out, path)?;
                }
            }
            Err(e) => return Err(Fail::Msg(format!("cannot read {}: {e}", show(path)))),
        }
        out.flush().map_err(out_err)?;
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// Prints `f` from `offset` to its current end; returns the new offset.
fn drain(f: &mut File, offset: u64, out: &mut impl Write, path: &Path) -> Res<u64> {
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Fail::Msg(format!("cannot read {}: {e}", show(path))))?;
    let n = copy_out(f, out, path)?;
    Ok(offset + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c0_and_c1_controls_are_left_out_even_split_between_writes() {
        let mut t = ForTheTerminal::new(Vec::<u8>::new());
        // CSI (U+009B) and OSC (U+009D) in UTF-8, ESC, CR, DEL; é and ¢
        // (0xC3 0xA9, 0xC2 0xA2) stay.
        let a = t.filter(b"a\xc2\x9b31mb\xc2\x9d52;c\x1b[0m\r\x7f\xc3\xa9\xc2\xa2\tz\n");
        assert_eq!(a, "a31mb52;c[0m\u{e9}\u{a2}\tz\n".as_bytes());
        let b = t.filter(b"x\xc2");
        assert_eq!(b, b"x");
        assert_eq!(t.filter(b"\x9bred"), b"red");
        assert_eq!(t.filter(b"\xc2"), b"");
        assert_eq!(t.filter(b"\xa2!"), "\u{a2}!".as_bytes());
    }
}
