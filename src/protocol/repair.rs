//! The second chance of a line that is not JSON only because of its text:
//! invalid UTF-8 inside a string becomes U+FFFD (as
//! `String::from_utf8_lossy` replaces it), and a `\uD800`–`\uDFFF` escape
//! that is not half of a high+low pair becomes `\uFFFD`, as Go's
//! encoding/json reads both (docs/protocol.md §2). Called only after a
//! parse failed, so a valid line pays nothing.

use super::codec::{decode, DecodeError, Frame};

/// A repaired line and how many characters were replaced in it.
pub type Repaired = (Vec<u8>, usize);

/// `line` with its invalid text replaced, and how many characters were
/// replaced; `None` when there is nothing to replace. Bytes outside
/// strings are left as they are: such a line stays broken.
pub fn repair(line: &[u8]) -> Option<Repaired> {
    let mut out = Vec::with_capacity(line.len() + 16);
    let (mut i, mut n, mut in_str) = (0, 0, false);
    while i < line.len() {
        // A run of bytes that mean nothing here is copied at once.
        let run = line[i..].iter().position(|&c| c >= 0x80 || c == b'"' || c == b'\\').unwrap_or(line.len() - i);
        if run > 0 {
            out.extend_from_slice(&line[i..i + run]);
            i += run;
            continue;
        }
        let b = line[i];
        if b >= 0x80 {
            // At most one character or one invalid sequence (3 bytes at
            // most) starts here: a 4-byte window decides it.
            let window = &line[i..line.len().min(i + 4)];
            let chunk = window.utf8_chunks().next()?;
            let len = match chunk.valid().chars().next() {
                Some(c) => c.len_utf8(),
                None => chunk.invalid().len(),
            };
            if chunk.valid().is_empty() && in_str {
                out.extend_from_slice("\u{FFFD}".as_bytes());
                n += 1;
            } else {
                out.extend_from_slice(&line[i..i + len]);
            }
            i += len;
            continue;
        }
        match (in_str, b) {
            (false, b'"') => in_str = true,
            (true, b'"') => in_str = false,
            (true, b'\\') if line.get(i + 1) == Some(&b'u') => match surrogate(&line[i..]) {
                Some(true) => {
                    out.extend_from_slice(&line[i..i + 12]);
                    i += 12;
                    continue;
                }
                Some(false) => {
                    out.extend_from_slice(b"\\uFFFD");
                    n += 1;
                    i += 6;
                    continue;
                }
                None => {}
            },
            // Any other escape: its second byte is never a quote that ends
            // the string, nor the start of another escape.
            (true, b'\\') if line.get(i + 1).is_some_and(|c| c.is_ascii()) => {
                out.extend_from_slice(&line[i..i + 2]);
                i += 2;
                continue;
            }
            _ => {}
        }
        out.push(b);
        i += 1;
    }
    (n > 0).then_some((out, n))
}

/// [`decode`], and for a line that is not JSON only because of its text,
/// [`decode`] of it repaired: the result, with the repaired line and how
/// many characters were replaced when it was.
pub fn decode_repaired<F: Frame>(line: &[u8]) -> (Result<F, DecodeError>, Option<Repaired>) {
    let err = match decode::<F>(line) {
        Err(e @ DecodeError::NotJson(_)) => e,
        other => return (other, None),
    };
    let Some((fixed, n)) = repair(line) else { return (Err(err), None) };
    match decode::<F>(&fixed) {
        Err(DecodeError::NotJson(_)) => (Err(err), None),
        other => (other, Some((fixed, n))),
    }
}

/// The log line for a line repaired of `n` characters: `kind` is what a
/// line is on that stream ("frame", "message"), named by its `type` or
/// JSON-RPC `method` and its `id` when it has them.
pub fn repair_note(fixed: &[u8], n: usize, kind: &str) -> String {
    let v: serde_json::Value = serde_json::from_slice(fixed).unwrap_or_default();
    let name = v.get("type").or_else(|| v.get("method")).and_then(|t| t.as_str());
    let what = match name {
        Some(t) => format!("a {t} {kind}"),
        None => format!("a {kind}"),
    };
    let id = match v.get("id") {
        Some(serde_json::Value::String(s)) => format!(" for request {s}"),
        Some(serde_json::Value::Number(i)) => format!(" for request {i}"),
        _ => String::new(),
    };
    let chars = if n == 1 { "character" } else { "characters" };
    format!("the text of {what}{id} held {n} invalid {chars}, replaced by U+FFFD")
}

/// For `s` starting with `\u`: `Some(true)` for a high+low surrogate
/// pair, `Some(false)` for a surrogate that is not part of one, `None` for
/// any other escape.
fn surrogate(s: &[u8]) -> Option<bool> {
    let hex = |at: usize| -> Option<u16> {
        let d = s.get(at..at + 4)?;
        if !d.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok()
    };
    match hex(2)? {
        0xD800..=0xDBFF => {
            let low = s.get(6..8) == Some(b"\\u") && hex(8).is_some_and(|v| (0xDC00..=0xDFFF).contains(&v));
            Some(low)
        }
        0xDC00..=0xDFFF => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::repair;

    fn fixed(line: &[u8]) -> Option<(String, usize)> {
        repair(line).map(|(b, n)| (String::from_utf8(b).expect("the repair is UTF-8"), n))
    }

    #[test]
    fn nothing_to_repair_is_none() {
        assert_eq!(fixed(br#"{"a":"plain","b":"\u00e9\n\"","c":[1,2]}"#), None);
        assert_eq!(fixed("{\"a\":\"é😀\"}".as_bytes()), None);
        assert_eq!(fixed(br#"{"a":"\ud83d\ude00"}"#), None);
        assert_eq!(fixed(br#"{"a":"\uD83D\uDE00"}"#), None);
        assert_eq!(fixed(b""), None);
    }

    #[test]
    fn lone_surrogates_become_the_replacement_escape() {
        assert_eq!(fixed(br#"{"a":"x\ud83dy"}"#), Some((r#"{"a":"x\uFFFDy"}"#.into(), 1)));
        assert_eq!(fixed(br#"{"a":"\ude00"}"#), Some((r#"{"a":"\uFFFD"}"#.into(), 1)));
        // A high one at the end of a string, and one before another high.
        assert_eq!(fixed(br#"{"a":"\ud83d","b":"\ud83d\ud83d\ude00"}"#), Some((r#"{"a":"\uFFFD","b":"\uFFFD\ud83d\ude00"}"#.into(), 2)));
        // A high one followed by an escape that is not a low one.
        assert_eq!(fixed(br#"{"a":"\ud83d\u0041\n"}"#), Some((r#"{"a":"\uFFFD\u0041\n"}"#.into(), 1)));
        // The low one of a pair is kept, the lone low after it replaced.
        assert_eq!(fixed(br#"{"a":"\ud83d\ude00\ude00"}"#), Some((r#"{"a":"\ud83d\ude00\uFFFD"}"#.into(), 1)));
    }

    #[test]
    fn an_escaped_backslash_before_u_is_not_an_escape() {
        assert_eq!(fixed(br#"{"a":"\\ud800"}"#), None);
        assert_eq!(fixed(br#"{"a":"\\\ud800"}"#), Some((r#"{"a":"\\\uFFFD"}"#.into(), 1)));
        assert_eq!(fixed(br#"{"a":"\"\ud800"}"#), Some((r#"{"a":"\"\uFFFD"}"#.into(), 1)));
    }

    #[test]
    fn invalid_utf8_in_strings_is_replaced_as_lossy_decoding_does() {
        let (s, n) = fixed(b"{\"a\":\"x\xffy\xe2\x82\"}").unwrap();
        assert_eq!((s.as_str(), n), ("{\"a\":\"x\u{FFFD}y\u{FFFD}\"}", 2));
        // Overlong encodings: one replacement per byte, as from_utf8_lossy.
        for bad in [&b"\xc0\x80"[..], b"\xe0\x80\xaf", b"\xf0\x82\x82\xac", b"\xed\xa0\x80"] {
            let line = [&b"{\"a\":\""[..], bad, b"\"}"].concat();
            let want = String::from_utf8_lossy(&line).into_owned();
            assert_eq!(fixed(&line), Some((want, bad.len())), "{bad:?}");
        }
        // Valid characters around invalid bytes are kept.
        let line = "{\"a\":\"é\u{1F600}".as_bytes().iter().chain(b"\xff\"}").copied().collect::<Vec<u8>>();
        assert_eq!(fixed(&line), Some(("{\"a\":\"é\u{1F600}\u{FFFD}\"}".into(), 1)));
    }

    #[test]
    fn invalid_utf8_outside_strings_is_left_as_it_is() {
        assert_eq!(repair(b"{\"a\":1\xff}"), None);
        let (out, n) = repair(b"{\xff\"a\":\"\xff\"}").unwrap();
        assert_eq!((out.as_slice(), n), (&b"{\xff\"a\":\"\xef\xbf\xbd\"}"[..], 1));
        assert!(serde_json::from_slice::<serde_json::Value>(&out).is_err());
    }

    #[test]
    fn a_repaired_line_parses_to_the_replacement_character() {
        let (out, _) = repair(b"{\"t\":\"a\\ud83d\",\"u\":\"b\xff\",\"k\":\"\\ud83d\\ude00\"}").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, serde_json::json!({"t": "a\u{FFFD}", "u": "b\u{FFFD}", "k": "\u{1F600}"}));
    }
}
