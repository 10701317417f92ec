//! How the console shows things: the terminal style, host events as
//! lines attributed to their extension, and panels as framed blocks.

use crate::text::one_line;
use unicode_width::UnicodeWidthChar;


#[derive(Clone, Copy)]
pub(super) struct Style {
    pub(super) color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\u{1b}[{code}m{s}\u{1b}[0m")
        } else {
            s.to_string()
        }
    }
    pub(super) fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    pub(super) fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    pub(super) fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub(super) fn level(&self, level: &str, s: &str) -> String {
        match level {
            "error" => self.paint("31", s),
            "warn" => self.paint("33", s),
            "success" => self.paint("32", s),
            _ => self.paint("36", s),
        }
    }
}

/// A panel printed as a block: its title and id (a script names the
/// panel by it in `/key`), the frame at most `max` columns wide.
pub(super) fn draw_panel(title: &str, lines: &[String], footer: &str, id: &str, max: usize) -> String {
    frame(&format!("{} ({})", one_line(title), one_line(id)), lines, footer, max)
}

/// A panel as a framed block with `title` in its top border, its text at
/// most `max` columns wide.
pub(super) fn frame(title: &str, lines: &[String], footer: &str, max: usize) -> String {
    let title = one_line(title);
    let lines: Vec<String> = lines.iter().map(|l| one_line(l)).collect();
    let footer = one_line(footer);
    let cols = |s: &str| s.chars().map(|c| c.width().unwrap_or(0)).sum::<usize>();
    let width = lines.iter().map(|l| cols(l)).chain([cols(&title) + 2, cols(&footer)]).max().unwrap_or(0).min(max);
    // The first `n` columns of `s`.
    let cut = |s: &str, n: usize| {
        let mut used = 0;
        s.chars()
            .take_while(|c| {
                used += c.width().unwrap_or(0);
                used <= n
            })
            .collect::<String>()
    };
    let pad = |s: &str| {
        let s = cut(s, width);
        let n = width - cols(&s);
        format!("│ {s}{} │", " ".repeat(n))
    };
    let title = cut(&title, width.saturating_sub(2));
    let mut out = format!("┌─ {title} {}┐\n", "─".repeat(width.saturating_sub(cols(&title) + 1)));
    for l in &lines {
        out.push_str(&pad(l));
        out.push('\n');
    }
    if !footer.is_empty() {
        out.push_str(&format!("├{}┤\n", "─".repeat(width + 2)));
        out.push_str(&pad(&footer));
        out.push('\n');
    }
    out.push_str(&format!("└{}┘", "─".repeat(width + 2)));
    out
}

/// The display width of `s`.
pub(super) fn text_width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `s` cut to `n` columns, with `…` where it was cut.
pub(super) fn fit(s: &str, n: usize) -> String {
    if text_width(s) <= n {
        return s.to_string();
    }
    let mut used = 1;
    let mut out: String = s
        .chars()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= n
        })
        .collect();
    if n > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::draw_panel;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn a_panel_is_framed_by_display_width_and_cut_to_its_room() {
        let lines = ["日本語".to_string(), "x".repeat(50)];
        let block = draw_panel("T", &lines, "foot", "p", 20);
        let widths: Vec<usize> = block.lines().map(UnicodeWidthStr::width).collect();
        assert_eq!(widths, [24; 6], "{block}");
        assert!(block.contains(&format!("│ 日本語{} │", " ".repeat(14))), "{block}");
    }
}
