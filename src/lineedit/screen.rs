//! The rendering: everything the console writes to stdout goes through
//! one [`Screen`], so that output and the line being edited never garble
//! each other. Text printed while a prompt is showing goes above it, and
//! the prompt and the half-typed line are drawn again below; a panel shown
//! in place stays between the two, drawn again rather than appended.
//!
//! Columns are display columns, per grapheme cluster (`grapheme`). A line
//! wider than the terminal scrolls sideways in one row, never wrapped,
//! always showing the cursor; a `<` or `>` at an end says text is hidden
//! that way, and once the line is done the whole of it is written out, so
//! the scrollback keeps all of it. After a resize ([`Screen::show_panel`])
//! the rows drawn are counted as a terminal that re-wraps its lines would
//! now show them (most do; one that cuts them instead loses as many rows
//! of output above from view), erased, and drawn again at the new width.

use std::io::{self, Write};
use std::sync::Mutex;

use super::grapheme;
use super::line::Line;

/// Everything the console writes to stdout.
pub struct Screen {
    line: Mutex<Line>,
}

impl Default for Screen {
    fn default() -> Self {
        Screen::new()
    }
}

impl Screen {
    pub fn new() -> Screen {
        Screen { line: Mutex::new(Line::default()) }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prints `text` and a newline; above the prompt (and the panel in
    /// place) when one is showing.
    pub fn print(&self, text: &str) {
        let mut line = self.lock();
        let mut out = io::stdout().lock();
        if !line.panel.rows.is_empty() {
            erase_live(&mut out, &line);
            let _ = writeln!(out, "{text}");
            draw_live(&mut out, &mut line);
        } else if line.active {
            let _ = write!(out, "\r\x1b[K{text}\n");
            draw(&mut out, &mut line);
        } else {
            let _ = writeln!(out, "{text}");
        }
        let _ = out.flush();
    }

    /// Shows `rows` in place of the panel shown so far (none: no panel);
    /// `focus`, when given, says whether the keys go to it. `hint` is the
    /// cursor row while they do, `back` the row below the panel while
    /// they do not.
    pub fn show_panel(&self, rows: Vec<String>, focus: Option<bool>, hint: &str, back: &str) {
        let mut line = self.lock();
        let mut out = io::stdout().lock();
        erase_live(&mut out, &line);
        line.panel.rows = rows;
        if let Some(f) = focus {
            line.panel.focus = f;
        }
        line.panel.hint = hint.to_string();
        line.panel.back = back.to_string();
        draw_live(&mut out, &mut line);
        let _ = out.flush();
    }

    /// The keys go to the panel shown in place.
    pub fn panel_focused(&self) -> bool {
        let line = self.lock();
        line.panel.focus && !line.panel.rows.is_empty()
    }

    /// Moves the keys between the prompt and the panel shown (Ctrl-O).
    pub(super) fn toggle_focus(&self) {
        let mut line = self.lock();
        if line.panel.rows.is_empty() {
            return;
        }
        let mut out = io::stdout().lock();
        erase_live(&mut out, &line);
        line.panel.focus = !line.panel.focus;
        draw_live(&mut out, &mut line);
        let _ = out.flush();
    }

    /// Clears the screen (Ctrl-L) and draws what is live again at its top:
    /// the panel in place, then the prompt and the line.
    pub(super) fn clear(&self) {
        let mut line = self.lock();
        let mut out = io::stdout().lock();
        let _ = out.write_all(b"\x1b[H\x1b[2J");
        draw_live(&mut out, &mut line);
        let _ = out.flush();
    }

    pub(super) fn edit(&self, f: impl FnOnce(&mut Line)) {
        let mut line = self.lock();
        f(&mut line);
        let mut out = io::stdout().lock();
        draw_cursor_row(&mut out, &mut line);
        let _ = out.flush();
    }

    /// Writes `s` after what the cursor row shows, then the prompt again
    /// if one is showing; with a panel in place, the row and `s` go above it.
    pub(super) fn raw(&self, s: &str) {
        let mut line = self.lock();
        let mut out = io::stdout().lock();
        if !line.panel.rows.is_empty() {
            erase_live(&mut out, &line);
            if line.active {
                let typed: String = line.buf.iter().collect();
                let _ = write!(out, "{}{typed}", line.prompt);
            }
            let _ = out.write_all(s.as_bytes());
            draw_live(&mut out, &mut line);
        } else {
            let _ = out.write_all(s.as_bytes());
            if line.active {
                draw(&mut out, &mut line);
            }
        }
        let _ = out.flush();
    }

    /// Ends the prompt: the whole line (not the part in view, when it
    /// scrolled) then `tail`; nothing is redrawn but a panel in place,
    /// below them.
    pub(super) fn finish(&self, tail: &str) {
        let mut line = self.lock();
        let mut out = io::stdout().lock();
        let typed: String = line.buf.iter().collect();
        if !line.panel.rows.is_empty() {
            erase_live(&mut out, &line);
            let _ = write!(out, "{}{typed}{tail}", line.prompt);
            line.active = false;
            draw_live(&mut out, &mut line);
        } else if line.clipped {
            let _ = write!(out, "\r{}{typed}\x1b[K{tail}", line.prompt);
        } else {
            if line.after > 0 {
                let _ = write!(out, "\x1b[{}C", line.after);
            }
            let _ = out.write_all(tail.as_bytes());
        }
        if line.panel.rows.is_empty() {
            line.active = false;
            line.cursor_col = 0;
        }
        let _ = out.flush();
    }
}

/// The display width of what `s` shows (escape sequences take none).
pub(super) fn text_width(s: &str) -> usize {
    let cs: Vec<char> = crate::text::strip_controls(s).chars().collect();
    width(&cs)
}

/// The display width of `cs`, cluster by cluster.
pub(super) fn width(cs: &[char]) -> usize {
    let mut i = 0;
    let mut w = 0;
    while i < cs.len() {
        let j = grapheme::next(cs, i);
        w += grapheme::width(&cs[i..j]);
        i = j;
    }
    w
}

/// The rows a row of `w` columns takes on a terminal `cols` wide that
/// wraps it.
fn rows_of(w: usize, cols: usize) -> usize {
    w.saturating_sub(1) / cols.max(1) + 1
}

/// From the cursor row, to the top of what was drawn in place (the panel
/// and its hint row); erases all of it.
fn erase_live(out: &mut impl Write, line: &Line) {
    let cols = term_cols();
    let up: usize = line.drawn.iter().map(|w| rows_of(*w, cols)).sum::<usize>() + line.cursor_col / cols.max(1);
    let _ = out.write_all(b"\r");
    if up > 0 {
        let _ = write!(out, "\x1b[{up}A");
    }
    let _ = out.write_all(b"\x1b[J");
}

/// The panel in place (and, while the prompt has the keys, the row that
/// says how to get back to it), then the cursor row, from the start of a row.
fn draw_live(out: &mut impl Write, line: &mut Line) {
    line.drawn.clear();
    if !line.panel.rows.is_empty() {
        let cols = term_cols();
        let back = (!line.panel.focus && !line.panel.back.is_empty()).then_some(&line.panel.back);
        for r in line.panel.rows.iter().chain(back) {
            let r = if back == Some(r) { cut(r, cols.saturating_sub(1)) } else { r.clone() };
            let _ = writeln!(out, "{r}\x1b[K");
            line.drawn.push(text_width(&r));
        }
    }
    draw_cursor_row(out, line);
}

/// The prompt and the line, or the hint while a panel has the keys, or
/// nothing.
fn draw_cursor_row(out: &mut impl Write, line: &mut Line) {
    if line.panel.focus && !line.panel.rows.is_empty() {
        let hint = cut(&line.panel.hint, term_cols().saturating_sub(1));
        let _ = write!(out, "\r{hint}\x1b[K");
        line.after = 0;
        line.cursor_col = text_width(&hint);
    } else if line.active {
        draw(out, line);
    } else {
        let _ = out.write_all(b"\r\x1b[K");
        line.after = 0;
        line.cursor_col = 0;
    }
}

/// The first columns of `s` that fit in `n` (escape sequences kept whole
/// when nothing is cut).
fn cut(s: &str, n: usize) -> String {
    if text_width(s) <= n {
        return s.to_string();
    }
    let cs: Vec<char> = crate::text::strip_controls(s).chars().collect();
    let (mut i, mut used) = (0, 0);
    while i < cs.len() {
        let j = grapheme::next(&cs, i);
        let w = grapheme::width(&cs[i..j]);
        if used + w > n {
            break;
        }
        used += w;
        i = j;
    }
    cs[..i].iter().collect()
}

/// The terminal's width in columns (80 when it cannot be read).
pub(super) fn term_cols() -> usize {
    term_size().0
}

/// The terminal's columns and rows (80 by 24 when they cannot be read).
pub fn term_size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ fills the zeroed struct for a terminal descriptor.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) } == 0;
    let cols = if ok && ws.ws_col > 0 { ws.ws_col as usize } else { 80 };
    let rows = if ok && ws.ws_row > 0 { ws.ws_row as usize } else { 24 };
    (cols, rows)
}

/// Draws the prompt and the part of the line in view, on one row: the
/// last column stays free, so the terminal never wraps it. Text hidden
/// left of the view is shown by a `<` in its first column, text hidden
/// right of it by a `>` in its last.
fn draw(out: &mut impl Write, line: &mut Line) {
    let prompt_width = text_width(&line.prompt);
    let room = term_cols().saturating_sub(prompt_width + 1).max(3);
    let (buf, cursor) = (&line.buf, line.cursor);
    let whole = width(buf);
    if whole <= room {
        line.offset = 0;
    } else if line.offset > cursor {
        line.offset = cursor;
    }
    // The view, less a column for each marker it needs.
    let view = |offset: usize, right: bool| room - usize::from(offset > 0) - usize::from(right);
    // The cursor must be in view, and with text after it a column for it.
    while line.offset < cursor && width(&buf[line.offset..cursor]) + usize::from(cursor < buf.len()) > view(line.offset, false) {
        line.offset = grapheme::next(buf, line.offset);
    }
    let left = line.offset > 0;
    let mut shown = String::new();
    let mut used = 0;
    let mut i = line.offset;
    let mut right = false;
    while i < buf.len() {
        let j = grapheme::next(buf, i);
        let w = grapheme::width(&buf[i..j]);
        // Room for a `>` is kept only when something is left out.
        let last = j == buf.len();
        if used + w > view(line.offset, !last) {
            right = true;
            break;
        }
        used += w;
        shown.extend(&buf[i..j]);
        i = j;
    }
    let lead = if left { "<" } else { "" };
    let tail = if right { ">" } else { "" };
    let _ = write!(out, "\r{}{lead}{shown}{tail}\x1b[K", line.prompt);
    let before = usize::from(left) + width(&buf[line.offset..cursor.max(line.offset)]);
    line.after = (usize::from(left) + used + usize::from(right)).saturating_sub(before);
    line.clipped = left || right;
    line.cursor_col = prompt_width + before;
    if line.after > 0 {
        let _ = write!(out, "\x1b[{}D", line.after);
    }
}

/// `items` in columns, filled down then across, within `cols` columns:
/// each item whole, two spaces between columns, one item a row when the
/// widest does not fit beside another.
pub(super) fn columns(items: &[String], cols: usize) -> String {
    let widths: Vec<usize> = items.iter().map(|s| text_width(s)).collect();
    let widest = widths.iter().copied().max().unwrap_or(0);
    let per_row = ((cols.saturating_sub(1) + 2) / (widest + 2)).max(1);
    let rows = items.len().div_ceil(per_row);
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let mut row = String::new();
        let mut k = r;
        while k < items.len() {
            let next = k + rows;
            row.push_str(&items[k]);
            if next < items.len() {
                row.push_str(&" ".repeat(widest + 2 - widths[k]));
            }
            k = next;
        }
        out.push(row);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_fill_columns_down_then_across_without_breaking_one() {
        let items: Vec<String> = ["/alpha", "/beta", "/gamma", "/delta", "/epsilon"].map(String::from).to_vec();
        assert_eq!(columns(&items, 30), "/alpha    /gamma    /epsilon\n/beta     /delta");
        assert_eq!(columns(&items, 12), "/alpha\n/beta\n/gamma\n/delta\n/epsilon");
        assert_eq!(columns(&["x".repeat(50)], 10), "x".repeat(50));
        assert_eq!(columns(&[], 10), "");
    }
}
