//! JSON with comments, as VS Code, Cursor and Claude Code write their
//! MCP files (docs/protocol.md §8.6): `//` and `/* */` comments and a
//! comma before a closing `]` or `}` are accepted; nothing else of JSON5
//! (no single quotes, bare keys, hexadecimal numbers).
//!
//! Comments and trailing commas are blanked to spaces (a comment's
//! newlines kept), so the JSON parser that reads the rest reports the line
//! and column of the text as written.

use serde_json::Value;

/// Parses `bytes` as JSONC into a value; the error says what is wrong,
/// at which line and column (`invalid JSON: ... at line L column C`).
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    let plain = blank(bytes)?;
    serde_json::from_slice(&plain).map_err(|e| format!("invalid JSON: {e}"))
}

/// `bytes` with every comment and trailing comma replaced by spaces.
pub fn blank(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = bytes.to_vec();
    let mut i = 0;
    // The last comma seen outside strings with only blanks and comments
    // after it so far.
    let mut comma: Option<usize> = None;
    // The last byte outside comments and blanks: a comma after `[`, `{` or
    // another comma follows no value, so it is no trailing comma.
    let mut prev = 0u8;
    while i < out.len() {
        let b = out[i];
        let before = prev;
        let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        let comment = b == b'/' && matches!(out.get(i + 1), Some(b'/' | b'*'));
        if !space && !comment {
            prev = b;
        }
        match b {
            b'"' => {
                comma = None;
                i += 1;
                while i < out.len() && out[i] != b'"' {
                    // An escape takes the next byte with it (`\"`, `\\`).
                    i += if out[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if out.get(i + 1) == Some(&b'/') => {
                while i < out.len() && out[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if out.get(i + 1) == Some(&b'*') => {
                let start = i;
                out[i] = b' ';
                out[i + 1] = b' ';
                i += 2;
                loop {
                    if i + 1 >= out.len() {
                        let (line, col) = position(bytes, start);
                        return Err(format!("invalid JSON: comment not closed (`/*` without `*/`) at line {line} column {col}"));
                    }
                    if out[i] == b'*' && out[i + 1] == b'/' {
                        out[i] = b' ';
                        out[i + 1] = b' ';
                        i += 2;
                        break;
                    }
                    if out[i] != b'\n' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
            }
            b',' => {
                comma = (!matches!(before, b'[' | b'{' | b',')).then_some(i);
                i += 1;
            }
            b']' | b'}' => {
                if let Some(c) = comma.take() {
                    out[c] = b' ';
                }
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            _ => {
                comma = None;
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The 1-based line and column of byte `at`, counted as the JSON parser
/// counts them.
fn position(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let text = "{\n  // a line comment\n  \"a\": [1, 2,], /* block\n over lines */ \"b\": {\"c\": 3,},\n}\n";
        assert_eq!(parse(text.as_bytes()).unwrap(), json!({"a": [1, 2], "b": {"c": 3}}));
        // A trailing comma with a comment between it and the bracket.
        assert_eq!(parse(b"[1, // one\n]").unwrap(), json!([1]));
    }

    #[test]
    fn comment_marks_inside_strings_are_text() {
        let v = parse(br#"{"url": "https://x.test/a", "s": "/* not */", "q": "a\"//b", "e": "\\", "t": ",]"}"#).unwrap();
        assert_eq!(v, json!({"url": "https://x.test/a", "s": "/* not */", "q": "a\"//b", "e": "\\", "t": ",]"}));
    }

    #[test]
    fn json5_and_broken_input_are_refused() {
        assert!(parse(b"{'a': 1}").is_err());
        assert!(parse(b"{a: 1}").is_err());
        assert!(parse(b"[0x10]").is_err());
        // Two commas are not a trailing comma.
        assert!(parse(b"[1,,]").is_err());
        assert!(parse(b"[,]").is_err());
        assert!(parse(b"{\"a\": 1 /* open").unwrap_err().contains("comment not closed"));
        assert!(parse(b"").is_err());
        assert!(parse(b"{\"a\": \"unterminated").is_err());
    }

    #[test]
    fn errors_name_the_line_and_column_as_written() {
        // The comment is blanked in place: the error after it is where the
        // text has it.
        let err = parse(b"{\n  /* one\n  two */ \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert!(err.ends_with("at line 4 column 7"), "{err}");
        let err = parse(b"{\n  \"a\": 1 // fine\n  x\n}").unwrap_err();
        assert!(err.contains("line 3 column 3"), "{err}");
        let err = parse(b"[1,\n  /* never closed").unwrap_err();
        assert!(err.ends_with("at line 2 column 3"), "{err}");
    }
}
