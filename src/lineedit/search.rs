//! Ctrl-R in the line editor: the history searched backwards for what is
//! typed, as a shell does it.

use super::keys::Key;

/// Ctrl-R: the history searched backwards for what is typed, as in a
/// shell. Ctrl-R again finds the one before; Enter runs the one found;
/// Esc, Ctrl-G or Ctrl-C give the line back as it was; any other key keeps
/// the one found to edit.
#[derive(Default)]
pub(super) struct Search {
    pub(super) query: String,
    /// The entry found, by its index in the history.
    at: Option<usize>,
    /// The line as it was before the search.
    pub(super) before: Vec<char>,
}

/// What a key does to a [`Search`].
pub(super) enum Step {
    /// Still searching: show the query and what it found.
    Go,
    /// Give the line back as it was.
    Cancel,
    /// Keep what was found (and, for Enter, run it).
    Accept,
}

impl Search {
    /// A search from the line `before`, which Esc gives back.
    pub(super) fn from(before: Vec<char>) -> Search {
        Search { before, ..Search::default() }
    }

    pub(super) fn key(&mut self, key: Key, entries: &[String]) -> Step {
        match key {
            Key::Char(c) => {
                self.query.push(c);
                self.at = self.find(entries, entries.len());
            }
            Key::Backspace => {
                self.query.pop();
                self.at = self.find(entries, entries.len());
            }
            Key::Ctrl(b'R') => {
                let from = self.at.unwrap_or(entries.len());
                if let Some(i) = self.find(entries, from) {
                    self.at = Some(i);
                }
            }
            Key::Esc | Key::Ctrl(b'G') | Key::Ctrl(b'C') => return Step::Cancel,
            _ => return Step::Accept,
        }
        Step::Go
    }

    /// The newest entry before `before` that holds the query.
    fn find(&self, entries: &[String], before: usize) -> Option<usize> {
        if self.query.is_empty() {
            return None;
        }
        entries[..before.min(entries.len())].iter().rposition(|e| e.contains(&self.query))
    }

    /// What the line shows: the entry found, or nothing.
    pub(super) fn shown(&self, entries: &[String]) -> Vec<char> {
        self.at.and_then(|i| entries.get(i)).map(|e| e.chars().collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_backwards_and_again_and_gives_the_line_back() {
        let h: Vec<String> = ["/tool a", "/weather Berlin", "/tool b", "/weather Paris"].map(String::from).to_vec();
        let mut s = Search::default();
        for c in "wea".chars() {
            assert!(matches!(s.key(Key::Char(c), &h), Step::Go));
        }
        assert_eq!(s.shown(&h).iter().collect::<String>(), "/weather Paris");
        s.key(Key::Ctrl(b'R'), &h);
        assert_eq!(s.shown(&h).iter().collect::<String>(), "/weather Berlin");
        // Nothing older: it stays on the last one found.
        s.key(Key::Ctrl(b'R'), &h);
        assert_eq!(s.shown(&h).iter().collect::<String>(), "/weather Berlin");
        s.key(Key::Backspace, &h);
        assert_eq!(s.shown(&h).iter().collect::<String>(), "/weather Paris");
        assert!(matches!(s.key(Key::Esc, &h), Step::Cancel));
        assert!(matches!(s.key(Key::Left, &h), Step::Accept));
    }
}
