//! Newline-delimited input with a cap on line length: what every reader of
//! JSON lines here (extension stdout, `zot serve`/`zot mcp` stdin, `zot ext
//! check`) needs. A line over the cap is skipped whole, up to its newline,
//! without being kept, so memory stays bounded whatever the input.

use std::io::{self, BufRead, Read};

/// How much of a skipped line is kept, for diagnostics.
const HEAD: usize = 4096;

/// One line read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line without its `\n` (a `\r` before it is left in place).
    Text(&'a [u8]),
    /// A line longer than the cap was skipped; this many bytes, its
    /// newline included when there was one.
    TooLong(usize),
}

/// A reusable line buffer for lines of at most `max` bytes.
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
        let n = loop {
            match <&mut R as Read>::take(input, self.max as u64 + 1).read_until(b'\n', &mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > self.max {
            let skipped = input.skip_until(b'\n').unwrap_or(0);
            let len = self.buf.len() + skipped;
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
        assert_eq!(l.text(), b"cdefg", "the head of the skipped line");
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::Text(b"ij\r")));
        assert_eq!(l.next(&mut input).unwrap(), Some(Line::Text(b"xyz")));
        assert_eq!(l.next(&mut input).unwrap(), None);
        let mut exact: &[u8] = b"abcd\n";
        assert_eq!(l.next(&mut exact).unwrap(), Some(Line::Text(b"abcd")));
    }
}
