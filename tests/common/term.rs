//! A pseudo-terminal for the console's tests: `zot` on the slave side of
//! an `openpty` pair (a session leader with it as its controlling
//! terminal, as a shell starts it), the test typing into the master side
//! and reading the screen bytes back; and [`Vt`], a minimal terminal that
//! shows what those bytes leave on screen; the tty fixture's extension and
//! the arrow keys. Included with `#[path]` by tests/console_tty.rs and
//! tests/console_screen.rs.
#![allow(dead_code)]

use crossbeam_channel::{unbounded, Receiver};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::common::TempDir;
use super::zot_proc::{session_args, BIN, LINE_WAIT};

/// The cursor keys as a terminal sends them.
pub const LEFT: &str = "\x1b[D";
pub const RIGHT: &str = "\x1b[C";

/// The extension of tests/fixtures/tty_ext.py, under `<t>/exts/tty`.
pub fn tty_ext(t: &TempDir) -> PathBuf {
    super::common::write_manifest(
        &t.path().join("exts"),
        "tty",
        serde_json::json!({"name": "tty", "exec": "python3", "args": [super::common::fixture("tty_ext.py")]}),
    )
}

pub struct Term {
    pub master: File,
    /// Kept open so the terminal outlives zot and its mode can be read.
    pub slave: OwnedFd,
    pub screen: Arc<Mutex<Vec<u8>>>,
    pub more: Receiver<()>,
    pub child: Child,
    pub home: PathBuf,
}

impl Term {
    pub fn spawn(t: &TempDir, exts: &[PathBuf]) -> Term {
        Term::spawn_sized(t, exts, 120)
    }

    /// A session on a terminal `cols` columns wide.
    pub fn spawn_sized(t: &TempDir, exts: &[PathBuf], cols: u16) -> Term {
        let args = session_args(t.path(), None, exts, &["--tool-timeout", "60"]);
        Term::spawn_args(t, &args, cols)
    }

    /// A session with these arguments (no `--no-ext` added), run in `t`.
    pub fn spawn_args(t: &TempDir, args: &[String], cols: u16) -> Term {
        Term::spawn_full(t, t.path(), args, cols, &[])
    }

    /// A session with these arguments started in `dir`, 120 columns wide,
    /// with `env` added to its environment.
    pub fn spawn_in(t: &TempDir, dir: &Path, args: &[String], env: &[(&str, &Path)]) -> Term {
        Term::spawn_full(t, dir, args, 120, env)
    }

    fn spawn_full(t: &TempDir, dir: &Path, args: &[String], cols: u16, env: &[(&str, &Path)]) -> Term {
        let (mut m, mut s) = (0, 0);
        let size = libc::winsize { ws_row: 24, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: openpty fills two descriptors.
        let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &size) };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors, owned from here on.
        let (master, slave) = unsafe { (File::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
        // SAFETY: marking the master close-on-exec, so only the test holds it.
        unsafe { libc::fcntl(m, libc::F_SETFD, libc::FD_CLOEXEC) };
        let home = t.path().join("zot-home");
        let mut cmd = Command::new(BIN);
        // As a shell starts it: a session of its own, whose controlling
        // terminal is this one, so that a resize signals it (SIGWINCH).
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .args(args)
            .env("ZOT_HOME", &home)
            .env("NO_COLOR", "1")
            .env("TERM", "xterm")
            .env_remove("XDG_STATE_HOME")
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::from(slave.try_clone().expect("dup")))
            .stdout(Stdio::from(slave.try_clone().expect("dup")))
            .stderr(Stdio::from(File::create(t.path().join("stderr")).expect("stderr file")))
            .spawn()
            .expect("spawn zot");
        let screen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (tx, more) = unbounded();
        {
            let screen = screen.clone();
            let mut reader = master.try_clone().expect("dup master");
            std::thread::spawn(move || {
                let mut b = [0u8; 4096];
                while let Ok(n) = reader.read(&mut b) {
                    if n == 0 {
                        return;
                    }
                    screen.lock().unwrap().extend_from_slice(&b[..n]);
                    let _ = tx.send(());
                }
            });
        }
        Term { master, slave, screen, more, child, home }
    }

    pub fn typed(&mut self, bytes: &str) {
        self.master.write_all(bytes.as_bytes()).expect("type");
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits until `needle` is on screen at or after byte `from`; returns
    /// the offset just past it.
    pub fn wait_for(&self, needle: &str, from: usize) -> usize {
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            let text = self.text();
            if let Some(i) = text.get(from..).and_then(|s| s.find(needle)) {
                return from + i + needle.len();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let stderr = std::fs::read_to_string(self.home.parent().unwrap().join("stderr")).unwrap_or_default();
                panic!("no {needle:?} after byte {from} on screen:\n{text:?}\nstderr:\n{stderr}");
            }
            let _ = self.more.recv_timeout(left);
        }
    }

    /// Waits until the screen, as a terminal `cols` wide shows it, has the
    /// cursor at column `col` of a row starting with `row_start`; returns
    /// that screen.
    pub fn wait_cursor(&self, cols: usize, row_start: &str, col: usize) -> Vt {
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            let vt = Vt::of(&self.text(), cols);
            if vt.col == col && vt.row_text(vt.row).starts_with(row_start) {
                return vt;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                panic!(
                    "cursor at column {} of row {:?}, not {col} of a row starting {row_start:?}; rows:\n{:#?}",
                    vt.col,
                    vt.row_text(vt.row),
                    vt.rows.iter().map(|r| r.iter().filter(|c| **c != '\0').collect::<String>()).collect::<Vec<_>>()
                );
            }
            let _ = self.more.recv_timeout(left);
        }
    }

    pub fn exit_code(&mut self) -> i32 {
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "zot did not exit:\n{:?}", self.text());
            let _ = self.more.recv_timeout(std::time::Duration::from_millis(50));
        }
    }

    /// Echo and canonical mode are on again.
    pub fn assert_cooked(&self) {
        // SAFETY: tcgetattr fills the zeroed struct.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(self.slave.as_raw_fd(), &mut t) }, 0);
        assert_ne!(t.c_lflag & libc::ECHO, 0, "echo left off");
        assert_ne!(t.c_lflag & libc::ICANON, 0, "canonical mode left off");
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal terminal: what `bytes` leave on the screen and where the
/// cursor ends, for printable text (by display width, wrapping at the
/// right edge as a terminal does), CR, LF and the cursor moves and erase
/// the line editor writes (CSI A, C, D, J, K; other sequences are ignored).
pub struct Vt {
    /// The cells of each row; the second cell of a wide character is `\0`.
    pub rows: Vec<Vec<char>>,
    pub row: usize,
    pub col: usize,
}

impl Vt {
    pub fn of(bytes: &str, cols: usize) -> Vt {
        let mut vt = Vt { rows: vec![Vec::new()], row: 0, col: 0 };
        vt.feed(bytes, cols);
        vt
    }

    /// Shows `bytes` on this screen, `cols` wide from now on (a terminal
    /// that does not re-wrap what it shows when resized).
    pub fn feed(&mut self, bytes: &str, cols: usize) {
        let vt = self;
        let mut joined = false;
        let mut chars = bytes.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => vt.col = 0,
                '\n' => vt.down(),
                '\x1b' => {
                    if chars.peek() != Some(&'[') {
                        chars.next();
                        continue;
                    }
                    chars.next();
                    let mut n = String::new();
                    let mut fin = ' ';
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            fin = c;
                            break;
                        }
                        n.push(c);
                    }
                    let n: usize = n.parse().unwrap_or(1);
                    match fin {
                        'C' => vt.col = (vt.col + n).min(cols - 1),
                        'D' => vt.col = vt.col.min(cols - 1).saturating_sub(n),
                        'K' => vt.rows[vt.row].truncate(vt.col),
                        'A' => vt.row = vt.row.saturating_sub(n),
                        'J' => {
                            vt.rows[vt.row].truncate(vt.col);
                            vt.rows.truncate(vt.row + 1);
                        }
                        _ => {}
                    }
                }
                c if c.is_control() => {}
                c => {
                    // An emoji modifier, or what a ZWJ joins, shares the
                    // cell of what it follows, as terminals that join them show it.
                    let joins = std::mem::replace(&mut joined, c == '\u{200D}') || ('\u{1F3FB}'..='\u{1F3FF}').contains(&c);
                    let w = if joins { 0 } else { unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) };
                    if w == 0 {
                        // A combining mark joins the cell before it.
                        continue;
                    }
                    if vt.col + w > cols {
                        vt.down();
                        vt.col = 0;
                    }
                    let row = &mut vt.rows[vt.row];
                    if row.len() < vt.col + w {
                        row.resize(vt.col + w, ' ');
                    }
                    row[vt.col] = c;
                    if w == 2 {
                        row[vt.col + 1] = '\0';
                    }
                    vt.col += w;
                }
            }
        }
    }

    fn down(&mut self) {
        self.row += 1;
        if self.rows.len() <= self.row {
            self.rows.push(Vec::new());
        }
    }

    pub fn row_text(&self, row: usize) -> String {
        self.rows[row].iter().filter(|c| **c != '\0').collect()
    }
}


impl Term {
    /// The terminal becomes `cols` columns wide; the byte offset on screen
    /// where the new width starts.
    pub fn resize(&self, cols: u16) -> usize {
        let at = self.screen.lock().unwrap().len();
        let size = libc::winsize { ws_row: 24, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: setting the window size of the terminal this test opened.
        let r = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(r, 0, "TIOCSWINSZ: {}", std::io::Error::last_os_error());
        at
    }

    /// Waits until `check` holds for the screen as shown `before` columns
    /// wide up to byte `at` and `after` wide from there on; returns it.
    pub fn wait_screen(&self, before: usize, at: usize, after: usize, check: impl Fn(&Vt) -> bool) -> Vt {
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            let bytes = self.screen.lock().unwrap().clone();
            let mut vt = Vt::of(&String::from_utf8_lossy(&bytes[..at.min(bytes.len())]), before);
            vt.feed(&String::from_utf8_lossy(&bytes[at.min(bytes.len())..]), after);
            if check(&vt) {
                return vt;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the screen never came to what was expected:\n{:#?}", vt.all_rows());
            let _ = self.more.recv_timeout(left);
        }
    }
}

impl Vt {
    /// Every row, as text.
    pub fn all_rows(&self) -> Vec<String> {
        (0..self.rows.len()).map(|r| self.row_text(r)).collect()
    }
}
