//! Newline-delimited input with a cap on line length: what every reader of
//! JSON lines here (extension stdout, `zot serve`/`zot mcp` stdin, `zot ext
//! check`) needs. A line over the cap is skipped whole, up to its newline,
//! without being kept, so memory stays bounded whatever the input.

use std::io::{self, BufRead, Read};

/// How much of a skipped line is kept: enough to find the `id` of a reply
/// (docs/protocol.md §3 rule 9) and for diagnostics.
pub const HEAD: usize = 64 * 1024;

/// One line read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line without its `\n` (a `\r` before it is left in place).
    Text(&'a [u8]),
    /// A line longer than the cap was skipped; this many bytes, its
    /// newline included when there was one.
    TooLong(usize),
}

/// A reusable line buffer for lines of at most `max` bytes, a trailing
/// `\r` not counted.
pub struct LineBuf {
    buf: Vec<u8>,
    max: usize,
}

impl LineBuf {
    pub fn new(max: usize) -> LineBuf {
        LineBuf { buf: Vec::new(), max }
    }

    /// The next line of `input`; `None` at its end. A last line without a
    /// newline still counts.
    pub fn next<R: BufRead>(&mut self, input: &mut R) -> io::Result<Option<Line<'_>>> {
        // A big line's memory is not kept for the small ones after it.
        if self.buf.capacity() > 1024 * 1024 {
            self.buf = Vec::new();
        }
        self.buf.clear();
        // One byte more for a `\r` before the newline, one to see the cap passed.
        let n = loop {
            match <&mut R as Read>::take(input, self.max as u64 + 2).read_until(b'\n', &mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            return Ok(None);
        }
        let newline = self.buf.last() == Some(&b'\n');
        if newline {
            self.buf.pop();
        }
        let len = self.buf.len();
        let over = len > self.max && !(len == self.max + 1 && self.buf.last() == Some(&b'\r'));
        if over {
            let skipped = if newline { 0 } else { input.skip_until(b'\n').unwrap_or(0) };
            let len = n + skipped;
            self.buf.truncate(HEAD);
            self.buf.shrink_to_fit();
            return Ok(Some(Line::TooLong(len)));
        }
        Ok(Some(Line::Text(&self.buf)))
    }

    /// The last line [`LineBuf::next`] returned as text; after
    /// [`Line::TooLong`], the first bytes (at most 4 KiB) of the line skipped.
    pub fn text(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_the_cap() {
        let mut input: &[u8] = b"ab\n\ncdefgh\nij\r\nxyz";
        let mut l = LineBuf::new(4);
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::Text(b"ab")));
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::Text(b"")));
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::TooLong(7)));
        assert_eq!(l.text(), b"cdefgh", "the head of the skipped line");
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::Text(b"ij\r")));
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::Text(b"xyz")));
        assert_eq!(l.next(&mut input).unwrap(), None);
        let mut exact: &[u8] = b"abcd\nabcd\r\nabcde\r\nabcd\rx\nabcd\r";
        assert_eq!(l.next(&mut exact).unwrap(), Some(Line::Text(b"abcd")));
        assert_eq!(l.next(&mut exact).unwrap(), Some(Line::Text(b"abcd\r")), "a trailing \\r is not counted");
        assert_eq!(l.next(&mut exact).unwrap(), Some(Line::TooLong(7)));
        assert_eq!(l.next(&mut exact).unwrap(), Some(Line::TooLong(7)));
        assert_eq!(l.next(&mut exact).unwrap(), Some(Line::Text(b"abcd\r")), "and at the end of input");
    }
}
