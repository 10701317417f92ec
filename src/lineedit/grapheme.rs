//! Grapheme clusters, what a reader sees as one character: the cursor
//! steps over one and Backspace deletes one. std only splits code points,
//! and no segmentation crate is a dependency, so this is a compact form of
//! the extended grapheme cluster rules (Unicode UAX #29) for what a
//! terminal meets: combining marks and other extenders (GB9), spacing
//! marks of the Indic scripts and Thai (GB9a), emoji modifiers and
//! variation selectors (Extend), emoji joined by ZWJ (GB11), flags as
//! regional-indicator pairs (GB12/13), and Hangul syllables built from
//! jamo (GB6-8). Prepend and the Indic conjunct rule are left out: a
//! cluster there splits where the full rules would not.
//!
//! Extend is taken as every character `unicode-width` gives no width
//! (nonspacing and enclosing marks, variation selectors, ZWJ and the
//! Hangul medial vowels and final consonants, which join as GB7/8 want),
//! plus the emoji modifiers, which it gives a width of their own.

use unicode_width::UnicodeWidthChar;

const ZWJ: char = '\u{200D}';

/// Spacing marks (Grapheme_Cluster_Break=SpacingMark) of the scripts a
/// terminal commonly shows: Devanagari to Sinhala, Thai and Lao.
const SPACING: &[(u32, u32)] = &[
    (0x0903, 0x0903),
    (0x093B, 0x093B),
    (0x093E, 0x0940),
    (0x0949, 0x094C),
    (0x094E, 0x094F),
    (0x0982, 0x0983),
    (0x09BF, 0x09C0),
    (0x09C7, 0x09CC),
    (0x0A03, 0x0A03),
    (0x0A3E, 0x0A40),
    (0x0A83, 0x0A83),
    (0x0ABE, 0x0AC0),
    (0x0AC9, 0x0ACC),
    (0x0B02, 0x0B03),
    (0x0B40, 0x0B40),
    (0x0B47, 0x0B4C),
    (0x0BBF, 0x0BBF),
    (0x0BC1, 0x0BCC),
    (0x0C01, 0x0C03),
    (0x0C41, 0x0C44),
    (0x0C82, 0x0C83),
    (0x0CBE, 0x0CC4),
    (0x0CC7, 0x0CCB),
    (0x0D02, 0x0D03),
    (0x0D3F, 0x0D40),
    (0x0D46, 0x0D4C),
    (0x0D82, 0x0D83),
    (0x0DD0, 0x0DD1),
    (0x0DD8, 0x0DDE),
    (0x0E33, 0x0E33),
    (0x0EB3, 0x0EB3),
];

/// Extended_Pictographic, coarsely: the symbol and emoji blocks, less the
/// regional indicators and the emoji modifiers inside them.
const PICTOGRAPHIC: &[(u32, u32)] = &[
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2139, 0x2139),
    (0x2194, 0x21AA),
    (0x231A, 0x23FF),
    (0x24C2, 0x24C2),
    (0x25AA, 0x25FE),
    (0x2600, 0x27BF),
    (0x2934, 0x2935),
    (0x2B05, 0x2B55),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3299),
    (0x1F000, 0x1F1E5),
    (0x1F200, 0x1F3FA),
    (0x1F400, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
];

fn within(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table.binary_search_by(|&(lo, hi)| if hi < c { std::cmp::Ordering::Less } else if lo > c { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Equal }).is_ok()
}

fn is_extend(c: char) -> bool {
    c != ZWJ && (matches!(c, '\u{1F3FB}'..='\u{1F3FF}') || (!c.is_control() && c.width() == Some(0)))
}

fn is_regional(c: char) -> bool {
    matches!(c, '\u{1F1E6}'..='\u{1F1FF}')
}

fn is_pictographic(c: char) -> bool {
    within(PICTOGRAPHIC, c)
}

/// Hangul leading consonants (L), which join the syllable after them.
fn is_hangul_l(c: char) -> bool {
    matches!(c, '\u{1100}'..='\u{115F}' | '\u{A960}'..='\u{A97C}')
}

/// Hangul vowels or syllables a leading consonant joins (V, LV, LVT).
fn joins_hangul_l(c: char) -> bool {
    matches!(c, '\u{1160}'..='\u{11A7}' | '\u{D7B0}'..='\u{D7C6}' | '\u{AC00}'..='\u{D7A3}') || is_hangul_l(c)
}

/// The end of the cluster that starts at `i` (`buf.len()` at most).
pub fn next(buf: &[char], i: usize) -> usize {
    let Some(&first) = buf.get(i) else { return buf.len() };
    let mut regional = usize::from(is_regional(first));
    // An emoji, with extenders after it (GB11), and whether a ZWJ ends it.
    let mut emoji = is_pictographic(first);
    let mut zwj = false;
    let mut j = i + 1;
    while let Some(&c) = buf.get(j) {
        let prev = buf[j - 1];
        let joined = if c == ZWJ {
            zwj = emoji;
            true
        } else if is_extend(c) {
            zwj = false;
            true
        } else if within(SPACING, c) {
            emoji = false;
            zwj = false;
            true
        } else if prev == ZWJ && zwj && is_pictographic(c) {
            zwj = false;
            true
        } else if is_regional(prev) && is_regional(c) && regional % 2 == 1 {
            regional += 1;
            true
        } else {
            is_hangul_l(prev) && joins_hangul_l(c)
        };
        if !joined {
            break;
        }
        j += 1;
    }
    j
}

/// The start of the cluster that ends at or covers `i - 1`.
pub fn prev(buf: &[char], i: usize) -> usize {
    let i = i.min(buf.len());
    let mut start = 0;
    while start < i {
        let end = next(buf, start);
        if end >= i {
            return start;
        }
        start = end;
    }
    0
}

/// The display width of the cluster `cs`: as `unicode-width` measures it
/// as a string, so that an emoji ZWJ or modifier sequence takes two
/// columns, as terminals that join them show it.
pub fn width(cs: &[char]) -> usize {
    match cs {
        [] => 0,
        [c] => c.width().unwrap_or(0),
        _ => unicode_width::UnicodeWidthStr::width(cs.iter().collect::<String>().as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clusters of `s`, as strings.
    fn split(s: &str) -> Vec<String> {
        let buf: Vec<char> = s.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < buf.len() {
            let j = next(&buf, i);
            out.push(buf[i..j].iter().collect());
            i = j;
        }
        out
    }

    #[test]
    fn clusters_join_what_a_reader_sees_as_one_character() {
        // Emoji modifier, ZWJ sequences (with a variation selector inside).
        assert_eq!(split("a👍🏽b"), ["a", "👍🏽", "b"]);
        assert_eq!(split("👩‍💻x"), ["👩‍💻", "x"]);
        assert_eq!(split("👨‍👩‍👧‍👦"), ["👨‍👩‍👧‍👦"]);
        assert_eq!(split("🏳️‍🌈!"), ["🏳️‍🌈", "!"]);
        assert_eq!(split("❤️x"), ["❤️", "x"]);
        // Flags are pairs of regional indicators, however many in a row.
        assert_eq!(split("🇩🇪🇫🇷🇮"), ["🇩🇪", "🇫🇷", "🇮"]);
        // Combining marks, spacing marks, Hangul jamo.
        assert_eq!(split("e\u{301}\u{302}x"), ["e\u{301}\u{302}", "x"]);
        assert_eq!(split("नमस्ते"), ["न", "म", "स्", "ते"]);
        assert_eq!(split("\u{1100}\u{1161}\u{11A8}가"), ["\u{1100}\u{1161}\u{11A8}", "가"]);
        assert_eq!(split("\u{1100}가"), ["\u{1100}가"]);
        // A ZWJ after a letter joins nothing after it; a lone modifier.
        assert_eq!(split("a\u{200D}b"), ["a\u{200D}", "b"]);
        assert_eq!(split("🏽a"), ["🏽", "a"]);
        assert_eq!(split("日本"), ["日", "本"]);
    }

    #[test]
    fn steps_back_and_measures_a_cluster() {
        let buf: Vec<char> = "x👩‍💻🇩🇪".chars().collect();
        assert_eq!(prev(&buf, buf.len()), 4);
        assert_eq!(prev(&buf, 4), 1);
        assert_eq!(prev(&buf, 1), 0);
        assert_eq!(prev(&buf, 0), 0);
        assert_eq!(width(&buf[1..4]), 2);
        assert_eq!(width(&buf[4..]), 2);
        assert_eq!(width(&"👍🏽".chars().collect::<Vec<_>>()), 2);
        assert_eq!(width(&['e', '\u{301}']), 1);
    }
}
