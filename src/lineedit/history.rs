//! The line editor's history: the entries in memory and the file they
//! are kept in, bounded to [`HISTORY_MAX`] entries.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

/// The most history entries kept, in memory and in the file.
pub const HISTORY_MAX: usize = 1000;

/// The history: its entries and where they are kept.
pub(super) struct History {
    pub(super) entries: Vec<String>,
    file: Option<PathBuf>,
}

impl History {
    pub(super) fn load(file: Option<PathBuf>) -> History {
        let text = file.as_ref().and_then(|f| fs::read_to_string(f).ok()).unwrap_or_default();
        let mut entries: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
        if entries.len() > HISTORY_MAX {
            entries.drain(..entries.len() - HISTORY_MAX);
            if let Some(f) = &file {
                let tmp = f.with_extension("tmp");
                let body: String = entries.iter().map(|e| format!("{e}\n")).collect();
                let _ = fs::remove_file(&tmp);
                let written = crate::home::open_private(&tmp, fs::OpenOptions::new().write(true).create_new(true))
                    .and_then(|mut t| t.write_all(body.as_bytes()));
                if written.is_ok() {
                    let _ = fs::rename(&tmp, f);
                }
            }
        }
        History { entries, file }
    }

    pub(super) fn add(&mut self, entry: &str) {
        if entry.is_empty() || self.entries.last().is_some_and(|l| l == entry) {
            return;
        }
        self.entries.push(entry.to_string());
        if self.entries.len() > HISTORY_MAX {
            self.entries.remove(0);
        }
        if let Some(f) = &self.file {
            if let Some(dir) = f.parent() {
                let _ = crate::home::create_private_dir(dir);
            }
            let file = crate::home::open_private(f, fs::OpenOptions::new().create(true).append(true));
            if let Ok(mut file) = file {
                let _ = writeln!(file, "{entry}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_on_load_and_skips_repeats() {
        let dir = std::env::temp_dir().join(format!("zot-history-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("history");
        let body: String = (0..HISTORY_MAX + 50).map(|i| format!("line {i}\n")).collect();
        fs::write(&file, body).expect("write");
        let mut h = History::load(Some(file.clone()));
        assert_eq!(h.entries.len(), HISTORY_MAX);
        assert_eq!(h.entries[0], "line 50");
        h.add("again");
        h.add("again");
        assert_eq!(h.entries.len(), HISTORY_MAX);
        let text = fs::read_to_string(&file).expect("read");
        assert_eq!(text.lines().count(), HISTORY_MAX + 1);
        assert_eq!(text.lines().last(), Some("again"));
        assert_eq!(History::load(Some(file)).entries.len(), HISTORY_MAX);
        let _ = fs::remove_dir_all(&dir);
    }
}
