//! A small line editor for the interactive console, on std and libc only.
//!
//! The terminal is put in raw mode (no echo, no line buffering, no signals
//! from keys; output processing stays on, so `\n` still starts a new line)
//! for the whole session and restored on every way out: [`RawMode`]'s
//! drop, a panic (a hook), and [`restore_terminal`] for the termination
//! signal path, which exits without running destructors.
//!
//! Keys: left/right (Ctrl-B/Ctrl-F), Home/End (Ctrl-A/Ctrl-E), Backspace,
//! Delete, Ctrl-K (kill to the end), Ctrl-U (kill to the start), Ctrl-W
//! (delete the word before the cursor), up/down through the history, Tab
//! completion, Enter. Ctrl-C clears the line; on an empty line it says how
//! to leave, and a second Ctrl-C in a row ends the session; Ctrl-D on an
//! empty line ends it too (deletes under the cursor otherwise).
//!
//! Keys are read by a thread of their own, so that the console can watch
//! for Ctrl-C while a call is in flight ([`Editor::wait`]); other keys
//! typed meanwhile are kept for the next prompt, or, while a panel waits
//! for an answer ([`Editor::wait_keys`]), decoded and handed to it.
//! [`Editor::read_line`] also wakes for what arrives on a channel, leaving
//! the half-typed line to edit on.
//!
//! The rooms: `keys` decodes what the terminal sends, `buffer` edits the
//! line (a step is a grapheme cluster, `grapheme`), `screen` draws it and
//! everything else printed, `history` keeps the lines entered, `winch`
//! tells of resizes; this file the terminal mode and the editor's loop.

mod buffer;
mod grapheme;
mod history;
mod line;
mod keys;
mod screen;
mod search;
mod winch;

pub use screen::{term_size, Screen};
pub use winch::resizes;
use line::Line;
use crossbeam_channel::{select, unbounded, Receiver};
use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;

use search::{Search, Step};
use std::sync::{Arc, Mutex, Once};

use history::History;
use keys::{decode, Key};

static SAVED: Mutex<Option<(i32, libc::termios)>> = Mutex::new(None);

/// Puts the terminal back as it was before [`RawMode::enter`], if it was
/// changed. Safe to call from any thread, any number of times.
pub fn restore_terminal() {
    let saved = match SAVED.lock() {
        Ok(mut s) => s.take(),
        Err(p) => p.into_inner().take(),
    };
    if let Some((fd, t)) = saved {
        // SAFETY: `t` is the state tcgetattr gave for this descriptor.
        unsafe {
            libc::tcsetattr(fd, libc::TCSAFLUSH, &t);
        }
    }
}

/// The terminal on `fd` in raw mode until dropped.
pub struct RawMode(());

impl RawMode {
    pub fn enter(fd: i32) -> io::Result<RawMode> {
        // SAFETY: tcgetattr fills the zeroed struct for a valid descriptor.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Ok(mut s) = SAVED.lock() {
            *s = Some((fd, t));
        }
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_terminal();
                previous(info);
            }));
        });
        let mut raw = t;
        raw.c_iflag &= !(libc::ICRNL | libc::IXON | libc::BRKINT | libc::INPCK | libc::ISTRIP);
        raw.c_lflag &= !(libc::ECHO | libc::ICANON | libc::ISIG | libc::IEXTEN);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: setting a termios derived from the current one.
        if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &raw) } != 0 {
            let e = io::Error::last_os_error();
            restore_terminal();
            return Err(e);
        }
        Ok(RawMode(()))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// What [`Editor::read_line`] gives.
#[derive(Debug, PartialEq)]
pub enum Read<T> {
    Line(String),
    /// Ctrl-D on an empty line, a second Ctrl-C, or the end of input.
    End,
    /// Something arrived on the wake channel before the line was done.
    Woken(T),
    /// A key typed while the panel in place has the keys (Ctrl-C as
    /// [`WaitKey::Interrupt`]); the line is left to edit on, as for `Woken`.
    Panel(WaitKey),
}

/// A key typed while [`Editor::wait_keys`] waits.
#[derive(Debug, PartialEq)]
pub enum WaitKey {
    /// Ctrl-C.
    Interrupt,
    /// A key for the panel: its `panel_key` name and, for a `rune`, its text.
    Panel(&'static str, Option<String>),
}

/// Offers the completions of the word that ends `before_cursor`.
pub type Completer<'a> = &'a dyn Fn(&str) -> Vec<String>;

/// The line editor over stdin.
pub struct Editor {
    screen: Arc<Screen>,
    bytes: Receiver<Vec<u8>>,
    pending: VecDeque<u8>,
    closed: bool,
    history: History,
    /// The last line was left on screen by [`Read::Woken`].
    suspended: bool,
}

impl Editor {
    /// Starts the key-reading thread on stdin. `history` is the file the
    /// history is kept in (none: in memory only).
    pub fn new(screen: Arc<Screen>, history: Option<PathBuf>) -> io::Result<Editor> {
        let (tx, rx) = unbounded();
        std::thread::Builder::new().name("zot-keys".into()).spawn(move || {
            let mut buf = [0u8; 256];
            loop {
                // SAFETY: reading into a local buffer of its own length.
                let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                if n <= 0 || tx.send(buf[..n as usize].to_vec()).is_err() {
                    return;
                }
            }
        })?;
        Ok(Editor { screen, bytes: rx, pending: VecDeque::new(), closed: false, history: History::load(history), suspended: false })
    }

    /// The screen this editor draws on.
    pub fn screen(&self) -> Arc<Screen> {
        self.screen.clone()
    }

    /// The next key, read as it comes, or what arrives on `wake` first;
    /// none at the end of input.
    fn key_or<T>(&mut self, wake: &Receiver<T>) -> Option<Result<Key, T>> {
        let mut wake = wake.clone();
        loop {
            if let Some((key, n)) = decode(self.pending.make_contiguous()) {
                self.pending.drain(..n);
                return Some(Ok(key));
            }
            if self.closed {
                // The start of a key the input ends in: dropped.
                self.pending.clear();
                return None;
            }
            select! {
                recv(wake) -> w => match w {
                    Ok(w) => return Some(Err(w)),
                    Err(_) => wake = crossbeam_channel::never(),
                },
                recv(self.bytes) -> chunk => match chunk {
                    Ok(chunk) => self.pending.extend(chunk),
                    Err(_) => self.closed = true,
                },
            }
        }
    }

    /// The keys complete in what is typed so far, without waiting.
    fn keys_now(&mut self) -> Vec<Key> {
        let mut keys = Vec::new();
        while let Some((key, n)) = decode(self.pending.make_contiguous()) {
            self.pending.drain(..n);
            keys.push(key);
        }
        keys
    }

    /// Waits for `rx`, meanwhile calling `on_interrupt` at each Ctrl-C;
    /// other keys are kept for the next prompt.
    pub fn wait<T>(&mut self, rx: &Receiver<T>, mut on_interrupt: impl FnMut()) -> Option<T> {
        let typed_ahead = self.pending.len();
        self.pending.retain(|b| *b != 0x03);
        for _ in self.pending.len()..typed_ahead {
            self.screen.raw("^C\n");
            on_interrupt();
        }
        loop {
            if self.closed {
                return rx.recv().ok();
            }
            select! {
                recv(rx) -> r => return r.ok(),
                recv(self.bytes) -> chunk => match chunk {
                    Ok(chunk) => {
                        for b in chunk {
                            if b == 0x03 {
                                self.screen.raw("^C\n");
                                on_interrupt();
                            } else {
                                self.pending.push_back(b);
                            }
                        }
                    }
                    Err(_) => self.closed = true,
                },
            }
        }
    }

    /// Waits for `rx` while a panel has the keys: each key typed
    /// meanwhile goes to `on_key`, as a panel is told of it, and Ctrl-C as
    /// [`WaitKey::Interrupt`]; keys a panel is not told of are dropped.
    pub fn wait_keys<T>(&mut self, rx: &Receiver<T>, mut on_key: impl FnMut(WaitKey)) -> Option<T> {
        loop {
            for key in self.keys_now() {
                if key == Key::Ctrl(b'C') {
                    self.screen.raw("^C\n");
                    on_key(WaitKey::Interrupt);
                } else if let Some((name, text)) = key.panel_name() {
                    on_key(WaitKey::Panel(name, text));
                }
            }
            if self.closed {
                return rx.recv().ok();
            }
            select! {
                recv(rx) -> r => return r.ok(),
                recv(self.bytes) -> chunk => match chunk {
                    Ok(chunk) => self.pending.extend(chunk),
                    Err(_) => self.closed = true,
                },
            }
        }
    }

    /// Ends a line left showing by [`Read::Woken`], as Enter would without
    /// running it.
    pub fn close_line(&mut self) {
        if std::mem::take(&mut self.suspended) {
            self.finish("\n");
        }
    }

    /// Shows `prompt` and edits a line until Enter, or until something
    /// arrives on `wake`: then the half-typed line stays on screen (text
    /// printed meanwhile goes above it) and the next call goes on editing it.
    pub fn read_line<T>(&mut self, prompt: &str, complete: Completer<'_>, wake: &Receiver<T>) -> Read<T> {
        let resume = std::mem::take(&mut self.suspended);
        self.screen.edit(|l| {
            if resume {
                l.active = true;
                l.prompt = prompt.to_string();
            } else {
                // What is drawn in place stays, and is known to be there.
                let (panel, drawn, cursor_col) = (std::mem::take(&mut l.panel), std::mem::take(&mut l.drawn), l.cursor_col);
                *l = Line { active: true, prompt: prompt.to_string(), panel, drawn, cursor_col, ..Line::default() };
            }
        });
        let mut recall = self.history.entries.len();
        let mut draft: Vec<char> = Vec::new();
        let mut interrupted = false;
        let mut search: Option<Search> = None;
        loop {
            let key = match self.key_or(wake) {
                Some(Ok(key)) => key,
                Some(Err(w)) => {
                    self.suspended = true;
                    return Read::Woken(w);
                }
                None => {
                    self.finish("\n");
                    return Read::End;
                }
            };
            if key != Key::Ctrl(b'C') {
                interrupted = false;
            }
            if key == Key::Ctrl(b'O') {
                self.screen.toggle_focus();
                continue;
            }
            if self.screen.panel_focused() {
                let to_panel = match key {
                    Key::Ctrl(b'C') => Some(WaitKey::Interrupt),
                    k => k.panel_name().map(|(name, text)| WaitKey::Panel(name, text)),
                };
                if let Some(k) = to_panel {
                    self.suspended = true;
                    return Read::Panel(k);
                }
                continue;
            }
            if let Some(s) = search.as_mut() {
                match s.key(key.clone(), &self.history.entries) {
                    Step::Go => {
                        let (q, shown) = (s.query.clone(), s.shown(&self.history.entries));
                        self.screen.edit(|l| {
                            l.prompt = format!("(history search '{q}'): ");
                            l.set(shown);
                        });
                        continue;
                    }
                    Step::Cancel => {
                        let s = search.take().unwrap_or_default();
                        self.screen.edit(|l| {
                            l.prompt = prompt.to_string();
                            l.set(s.before);
                        });
                        continue;
                    }
                    Step::Accept => {
                        let shown = search.take().unwrap_or_default().shown(&self.history.entries);
                        self.screen.edit(|l| {
                            l.prompt = prompt.to_string();
                            l.set(shown);
                        });
                    }
                }
            }
            match key {
                Key::Ctrl(b'L') => self.screen.clear(),
                Key::Ctrl(b'R') => {
                    let before = self.screen.lock().buf.clone();
                    let s = search.insert(Search::from(before));
                    let shown = s.shown(&self.history.entries);
                    self.screen.edit(|l| {
                        l.prompt = "(history search ''): ".to_string();
                        l.set(shown);
                    });
                }
                Key::Enter => {
                    let text: String = self.screen.lock().buf.iter().collect();
                    self.finish("\n");
                    self.history.add(text.trim());
                    return Read::Line(text);
                }
                Key::Ctrl(b'C') => {
                    let empty = self.screen.lock().buf.is_empty();
                    if empty && interrupted {
                        self.finish("^C\n");
                        return Read::End;
                    }
                    interrupted = empty;
                    recall = self.history.entries.len();
                    self.screen.edit(Line::end);
                    self.screen.raw("^C\n");
                    self.screen.edit(Line::clear);
                    if empty {
                        self.screen.print("(Ctrl-C again or Ctrl-D to leave)");
                    }
                }
                Key::Ctrl(b'D') => {
                    if self.screen.lock().buf.is_empty() {
                        self.finish("\n");
                        return Read::End;
                    }
                    self.screen.edit(Line::delete);
                }
                Key::Char(c) => self.screen.edit(|l| l.insert(c)),
                Key::Backspace => self.screen.edit(Line::backspace),
                Key::Delete => self.screen.edit(Line::delete),
                Key::Left | Key::Ctrl(b'B') => self.screen.edit(Line::left),
                Key::Right | Key::Ctrl(b'F') => self.screen.edit(Line::right),
                Key::Home | Key::Ctrl(b'A') => self.screen.edit(Line::home),
                Key::End | Key::Ctrl(b'E') => self.screen.edit(Line::end),
                Key::Ctrl(b'K') => self.screen.edit(Line::kill_to_end),
                Key::Ctrl(b'U') => self.screen.edit(Line::kill_to_start),
                Key::Ctrl(b'W') => self.screen.edit(Line::kill_word),
                Key::Up | Key::Down => {
                    let n = self.history.entries.len();
                    let to = match key {
                        Key::Up => recall.checked_sub(1),
                        _ => (recall < n).then_some(recall + 1),
                    };
                    let Some(to) = to else { continue };
                    if recall == n {
                        draft = self.screen.lock().buf.clone();
                    }
                    recall = to;
                    let text: Vec<char> = match self.history.entries.get(to) {
                        Some(e) => e.chars().collect(),
                        None => draft.clone(),
                    };
                    self.screen.edit(|l| l.set(text));
                }
                Key::Tab => self.complete(complete),
                Key::Ctrl(_) | Key::Esc | Key::PageUp | Key::PageDown | Key::Other => {}
            }
        }
    }

    /// Ends the prompt: the whole line stays on screen, then `tail`.
    fn finish(&self, tail: &str) {
        self.screen.finish(tail);
    }

    /// Tab: completes the word before the cursor as far as the
    /// candidates agree; when they agree no further, lists them in columns.
    fn complete(&mut self, complete: Completer<'_>) {
        let (before, start) = self.screen.lock().word_before_cursor();
        let word: String = before.chars().skip(start).collect();
        // Without case, as commands are matched (`/W` completes `/weather`);
        // the word typed is replaced by the candidate's own spelling.
        let lower = word.to_lowercase();
        let mut found: Vec<String> =
            complete(&before).into_iter().filter(|c| c.to_lowercase().starts_with(&lower)).collect();
        crate::order::sort(&mut found);
        found.dedup();
        let Some(first) = found.first() else { return };
        let common: String = found.iter().skip(1).fold(first.clone(), |acc, c| {
            acc.chars().zip(c.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect()
        });
        let mut replace: Vec<char> = common.chars().collect();
        if found.len() == 1 {
            replace.push(' ');
        } else if replace.len() <= word.chars().count() {
            self.screen.print(&screen::columns(&found, screen::term_cols()));
            return;
        }
        self.screen.edit(|l| l.replace_to_cursor(start, &replace));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lflag(fd: i32) -> libc::tcflag_t {
        // SAFETY: tcgetattr fills the zeroed struct.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(fd, &mut t) }, 0);
        t.c_lflag
    }

    #[test]
    fn a_panic_restores_the_terminal() {
        let (mut m, mut s) = (0, 0);
        // SAFETY: openpty fills two descriptors, closed at the end.
        let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(r, 0);
        assert_ne!(lflag(s) & libc::ECHO, 0);
        let panicked = std::panic::catch_unwind(|| {
            let raw = RawMode::enter(s).expect("raw mode");
            assert_eq!(lflag(s) & (libc::ECHO | libc::ICANON), 0);
            // Only the panic hook is left to restore it.
            std::mem::forget(raw);
            panic!("on purpose");
        });
        assert!(panicked.is_err());
        assert_ne!(lflag(s) & libc::ECHO, 0, "echo left off after a panic");
        assert_ne!(lflag(s) & libc::ICANON, 0, "canonical mode left off after a panic");
        // SAFETY: closing the descriptors opened above.
        unsafe {
            libc::close(m);
            libc::close(s);
        }
    }
}
