//! Making untrusted text safe for a terminal: anything an extension or a
//! manifest says is stripped of escape sequences and control characters
//! before it is printed.

/// Removes ANSI escape sequences (CSI, OSC, and two-byte escapes), the
/// bidirectional overrides, and every other control character except
/// newline and tab.
pub fn strip_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' | '\u{9b}' | '\u{9d}' => match if c == '\u{1b}' { chars.next() } else { Some(c) } {
                // CSI: parameters and intermediates, then one final byte.
                Some('[' | '\u{9b}') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_' | '\u{9d}') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// The bidirectional-text overrides and isolates, which can make printed
/// text read differently from what it is.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Like [`strip_controls`], and newlines and tabs become spaces: for text
/// that must stay on one line (names, table cells).
pub fn one_line(s: &str) -> String {
    strip_controls(s).replace(['\n', '\t'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_sequences_and_controls() {
        assert_eq!(strip_controls("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(strip_controls("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(strip_controls("x\u{1b}]8;;http://e\u{1b}\\y"), "xy");
        assert_eq!(strip_controls("bell\u{7}\r\n\tok\u{9b}2J\u{7f}"), "bell\n\tok");
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(strip_controls("\u{1b}"), "");
    }
}
