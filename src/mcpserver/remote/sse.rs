//! Server-sent events read incrementally (the WHATWG `text/event-stream`
//! format), as MCP's HTTP transports send them (docs/protocol.md §8.5 rule
//! 2): each event's `data` lines joined by `\n`, its `event` type, its `id`
//! and the stream's `retry`. One event's data is bounded; past the bound
//! the stream fails, naming it.
//!
//! Decisions where the format allows more: a line ends at `\n` (with or
//! without a `\r` before it); a lone `\r` does not end a line (no MCP
//! server sends one). A byte-order mark at the start is skipped.

use std::io::{self, BufRead};
use std::time::Duration;

/// One event of the stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    /// `event:`, `message` when none was given.
    pub kind: String,
    /// The `data:` lines, joined by `\n`.
    pub data: Vec<u8>,
    /// `id:` of this event, when it had one.
    pub id: Option<String>,
}

/// Why a stream could not be read on.
#[derive(Debug)]
pub enum Error {
    /// One event's data is over the bound.
    TooLong(usize),
    Io(io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::TooLong(limit) => write!(f, "an event is over the limit of {limit} bytes"),
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Reads events from `R`.
pub struct Reader<R> {
    inner: R,
    limit: usize,
    line: Vec<u8>,
    started: bool,
    /// The last `retry:` the server sent.
    pub retry: Option<Duration>,
    /// The id of the last event that had one.
    pub last_id: Option<String>,
}

impl<R: BufRead> Reader<R> {
    /// A reader whose events carry at most `limit` bytes of data.
    pub fn new(inner: R, limit: usize) -> Reader<R> {
        Reader { inner, limit, line: Vec::new(), started: false, retry: None, last_id: None }
    }

    /// The next event; `None` at the end of the stream (an event not ended
    /// by a blank line is dropped, as the format says).
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        let mut ev = Event::default();
        let mut has_data = false;
        loop {
            if !self.read_line(ev.data.len())? {
                return Ok(None);
            }
            let line = std::mem::take(&mut self.line);
            if line.is_empty() {
                if has_data || ev.id.is_some() {
                    if ev.kind.is_empty() {
                        ev.kind = "message".into();
                    }
                    return Ok(Some(ev));
                }
                continue;
            }
            if line[0] == b':' {
                self.line = line;
                continue;
            }
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (&line[..], &[][..]),
            };
            match field {
                b"data" => {
                    if has_data {
                        ev.data.push(b'\n');
                    }
                    ev.data.extend_from_slice(value);
                    has_data = true;
                    if ev.data.len() > self.limit {
                        return Err(Error::TooLong(self.limit));
                    }
                }
                b"event" => ev.kind = String::from_utf8_lossy(value).into_owned(),
                // An id holding NUL is ignored, as the format says.
                b"id" if !value.contains(&0) => {
                    let id = String::from_utf8_lossy(value).into_owned();
                    self.last_id = Some(id.clone());
                    ev.id = Some(id);
                }
                b"retry" => {
                    if let Some(ms) = std::str::from_utf8(value).ok().and_then(|s| s.parse::<u64>().ok()) {
                        self.retry = Some(Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
            self.line = line;
            self.line.clear();
        }
    }

    /// One line into `self.line`, without its ending; false at the end of
    /// the stream. `held`: data of this event so far, counted in the bound.
    fn read_line(&mut self, held: usize) -> Result<bool, Error> {
        self.line.clear();
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            };
            if buf.is_empty() {
                return Ok(false);
            }
            let (take, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            self.line.extend_from_slice(&buf[..take]);
            self.inner.consume(take);
            if self.line.len() + held > self.limit + 64 {
                return Err(Error::TooLong(self.limit));
            }
            if done {
                self.line.pop();
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                if !self.started {
                    self.started = true;
                    if self.line.starts_with("\u{feff}".as_bytes()) {
                        self.line.drain(..3);
                    }
                }
                return Ok(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str, limit: usize) -> (Vec<Event>, Option<String>) {
        let mut r = Reader::new(io::Cursor::new(text.as_bytes().to_vec()), limit);
        let mut out = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            out.push(e);
        }
        (out, r.last_id)
    }

    #[test]
    fn events_fields_and_endings() {
        let text = "\u{feff}: comment\r\nevent: endpoint\r\ndata: /messages?x=1\r\n\r\nid: 7\ndata: {\"a\":\ndata:1}\nretry: 2500\n\nid: 8\n\ndata: cut";
        let mut r = Reader::new(io::Cursor::new(text.as_bytes().to_vec()), 100);
        let e = r.next_event().unwrap().unwrap();
        assert_eq!((e.kind.as_str(), e.data.as_slice(), e.id), ("endpoint", &b"/messages?x=1"[..], None));
        let e = r.next_event().unwrap().unwrap();
        assert_eq!((e.kind.as_str(), e.data.as_slice(), e.id.as_deref()), ("message", &b"{\"a\":\n1}"[..], Some("7")));
        assert_eq!(r.retry, Some(Duration::from_millis(2500)));
        // A priming event: an id and no data.
        let e = r.next_event().unwrap().unwrap();
        assert_eq!((e.data.len(), e.id.as_deref()), (0, Some("8")));
        assert!(r.next_event().unwrap().is_none());
        assert_eq!(r.last_id.as_deref(), Some("8"));
    }

    #[test]
    fn an_event_over_the_bound_fails() {
        let (ev, _) = all("data: 12345\n\n", 5);
        assert_eq!(ev[0].data, b"12345");
        let mut r = Reader::new(io::Cursor::new(b"data: 123\ndata: 456\n\n".to_vec()), 5);
        assert!(matches!(r.next_event(), Err(Error::TooLong(5))));
        let long = format!("data: {}\n\n", "x".repeat(1000));
        let mut r = Reader::new(io::Cursor::new(long.into_bytes()), 10);
        assert!(matches!(r.next_event(), Err(Error::TooLong(10))));
    }
}
