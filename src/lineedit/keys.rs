//! Keys as the terminal sends them: [`decode`] turns the bytes read so far
//! into one key (or says more bytes are needed), and [`Key::panel_name`]
//! names a key the way a panel is told of it (docs/protocol.md §2 `panel_key`).

/// One key, decoded.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Key {
    Char(char),
    Enter,
    Backspace,
    Delete,
    Left,
    Right,
    Home,
    End,
    Up,
    Down,
    PageUp,
    PageDown,
    Tab,
    /// Escape on its own (not the start of a sequence read with it).
    Esc,
    Ctrl(u8),
    /// An escape sequence or byte this editor does not use.
    Other,
}

impl Key {
    /// The `panel_key` name of this key and, for a `rune`, its text; none
    /// for a key a panel is not told of.
    pub(super) fn panel_name(&self) -> Option<(&'static str, Option<String>)> {
        let name = match self {
            Key::Char(c) => return Some(("rune", Some(c.to_string()))),
            Key::Enter => "enter",
            Key::Esc => "esc",
            Key::Up => "up",
            Key::Down => "down",
            Key::Left => "left",
            Key::Right => "right",
            Key::Tab => "tab",
            Key::PageUp => "pageup",
            Key::PageDown => "pagedown",
            Key::Home => "home",
            Key::End => "end",
            Key::Backspace => "backspace",
            Key::Delete => "delete",
            Key::Ctrl(_) | Key::Other => return None,
        };
        Some((name, None))
    }
}

/// The key at the start of `b` and how many bytes it took; none when `b`
/// is empty or holds only the start of a key. An escape byte with nothing
/// after it is the Escape key (a terminal writes a sequence in one go).
pub(super) fn decode(b: &[u8]) -> Option<(Key, usize)> {
    let first = *b.first()?;
    Some(match first {
        b'\r' | b'\n' => (Key::Enter, 1),
        0x7f | 0x08 => (Key::Backspace, 1),
        b'\t' => (Key::Tab, 1),
        0x1b => return escape(b),
        1..=0x1f => (Key::Ctrl(first + b'@'), 1),
        0x20..=0x7e => (Key::Char(first as char), 1),
        _ => return utf8(b),
    })
}

fn utf8(b: &[u8]) -> Option<(Key, usize)> {
    let len = match b[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Some((Key::Other, 1)),
    };
    for i in 1..len {
        match b.get(i) {
            None => return None,
            Some(c) if c & 0xc0 == 0x80 => {}
            // A broken sequence: the bytes so far are one unknown key.
            Some(_) => return Some((Key::Other, i)),
        }
    }
    let key = match std::str::from_utf8(&b[..len]).ok().and_then(|s| s.chars().next()) {
        Some(c) if !c.is_control() => Key::Char(c),
        _ => Key::Other,
    };
    Some((key, len))
}

/// After ESC: `[` or `O`, parameters, a final byte.
fn escape(b: &[u8]) -> Option<(Key, usize)> {
    match b.get(1) {
        None => return Some((Key::Esc, 1)),
        Some(b'[' | b'O') => {}
        Some(_) => return Some((Key::Esc, 1)),
    }
    for (i, &c) in b.iter().enumerate().skip(2) {
        if (0x40..=0x7e).contains(&c) {
            let params = &b[2..i];
            let key = match (c, params) {
                (b'A', _) => Key::Up,
                (b'B', _) => Key::Down,
                (b'C', _) => Key::Right,
                (b'D', _) => Key::Left,
                (b'H', _) => Key::Home,
                (b'F', _) => Key::End,
                (b'~', b"1") | (b'~', b"7") => Key::Home,
                (b'~', b"4") | (b'~', b"8") => Key::End,
                (b'~', b"3") => Key::Delete,
                (b'~', b"5") => Key::PageUp,
                (b'~', b"6") => Key::PageDown,
                _ => Key::Other,
            };
            return Some((key, i + 1));
        }
        if i > 18 {
            return Some((Key::Other, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_decode_and_name_themselves_for_panels() {
        let all = |mut b: &[u8]| {
            let mut keys = Vec::new();
            while let Some((k, n)) = decode(b) {
                keys.push(k.panel_name().map(|(n, t)| format!("{n}{}", t.unwrap_or_default())));
                b = &b[n..];
            }
            (keys, b.len())
        };
        let (keys, left) = all(b"a\r\x1b[A\x1b[B\x1b[C\x1b[D\t\x1b[5~\x1b[6~\x1b[H\x1b[F\x7f\x1b[3~\xc3\xa9\x1b");
        let names = ["runea", "enter", "up", "down", "right", "left", "tab", "pageup", "pagedown", "home", "end", "backspace", "delete", "runeé", "esc"];
        assert_eq!(keys, names.iter().map(|n| Some(n.to_string())).collect::<Vec<_>>());
        assert_eq!(left, 0);
        // The start of a sequence waits for the rest.
        assert_eq!(decode(b"\x1b["), None);
        assert_eq!(decode(b"\xc3"), None);
        assert_eq!(decode(b"\x03"), Some((Key::Ctrl(b'C'), 1)));
    }
}
