//! The line being edited: what each editing key does to the text and the
//! cursor. A step left or right, Backspace and Delete take one grapheme
//! cluster (`grapheme`): a letter with its accents, an emoji with its
//! modifier or the emoji a ZWJ joins to it, a flag.

use super::grapheme;
use super::line::Line;

impl Line {
    pub(super) fn insert(&mut self, c: char) {
        self.buf.insert(self.cursor, c);
        self.cursor += 1;
    }

    pub(super) fn backspace(&mut self) {
        let to = grapheme::prev(&self.buf, self.cursor);
        self.buf.drain(to..self.cursor);
        self.cursor = to;
    }

    pub(super) fn delete(&mut self) {
        let to = grapheme::next(&self.buf, self.cursor);
        self.buf.drain(self.cursor..to);
    }

    pub(super) fn left(&mut self) {
        self.cursor = grapheme::prev(&self.buf, self.cursor);
    }

    pub(super) fn right(&mut self) {
        self.cursor = grapheme::next(&self.buf, self.cursor);
    }

    pub(super) fn home(&mut self) {
        self.cursor = 0;
    }

    pub(super) fn end(&mut self) {
        self.cursor = self.buf.len();
    }

    pub(super) fn kill_to_end(&mut self) {
        self.buf.truncate(self.cursor);
    }

    pub(super) fn kill_to_start(&mut self) {
        self.buf.drain(..self.cursor);
        self.cursor = 0;
    }

    /// Ctrl-W: the spaces before the cursor, and the word before them.
    pub(super) fn kill_word(&mut self) {
        let mut start = self.cursor;
        while start > 0 && self.buf[start - 1] == ' ' {
            start -= 1;
        }
        while start > 0 && self.buf[start - 1] != ' ' {
            start -= 1;
        }
        self.buf.drain(start..self.cursor);
        self.cursor = start;
    }

    /// The whole line becomes `text`, the cursor at its end.
    pub(super) fn set(&mut self, text: Vec<char>) {
        self.cursor = text.len();
        self.buf = text;
    }

    pub(super) fn clear(&mut self) {
        self.buf.clear();
        self.cursor = 0;
    }

    /// The text before the cursor, and where the word the cursor ends starts.
    pub(super) fn word_before_cursor(&self) -> (String, usize) {
        let before: String = self.buf[..self.cursor].iter().collect();
        let start = self.buf[..self.cursor].iter().rposition(|c| *c == ' ').map_or(0, |i| i + 1);
        (before, start)
    }

    /// Puts `with` in place of the text from `start` to the cursor.
    pub(super) fn replace_to_cursor(&mut self, start: usize, with: &[char]) {
        self.buf.splice(start..self.cursor, with.iter().copied());
        self.cursor = start + with.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_deletions_take_whole_clusters() {
        let mut l = Line::default();
        for c in "a👍🏽👩‍💻b".chars() {
            l.insert(c);
        }
        l.left();
        l.left();
        assert_eq!(l.cursor, 3);
        l.backspace();
        assert_eq!(l.buf.iter().collect::<String>(), "a👩‍💻b");
        l.delete();
        assert_eq!(l.buf.iter().collect::<String>(), "ab");
        l.right();
        assert_eq!(l.cursor, 2);
    }
}
