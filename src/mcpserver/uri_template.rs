//! Whether a URI is one a resource template stands for (docs/protocol.md
//! §8.6): RFC 6570 level 1, where a template is literal text and simple
//! `{var}` expressions, and a variable's value expands to unreserved
//! characters and percent-encoded octets only. A template with any other
//! expression (an operator such as `{+path}` or `{?q}`, a list of variables,
//! a modifier) is past level 1 and stands for no URI here.

/// Whether `uri` is an expansion of `template`.
pub fn matches(template: &str, uri: &str) -> bool {
    match parts(template) {
        Some(parts) => matches_from(&parts, uri.as_bytes()),
        None => false,
    }
}

/// A template's pieces in order.
#[derive(Debug, PartialEq)]
enum Part<'a> {
    Literal(&'a [u8]),
    Var,
}

/// The pieces of a level 1 template; `None` for one past level 1 or not
/// well formed (an unclosed brace, an empty or odd name).
fn parts(template: &str) -> Option<Vec<Part<'_>>> {
    let mut out = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                out.push(Part::Literal(rest.as_bytes()));
                break;
            }
            Some(i) if rest.as_bytes()[i] == b'}' => return None,
            Some(i) => {
                if i > 0 {
                    out.push(Part::Literal(&rest.as_bytes()[..i]));
                }
                let close = rest[i..].find('}')? + i;
                let name = &rest[i + 1..close];
                if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'%') {
                    return None;
                }
                out.push(Part::Var);
                rest = &rest[close + 1..];
            }
        }
    }
    Some(out)
}

fn matches_from(parts: &[Part], uri: &[u8]) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(l), rest)) => uri.starts_with(l) && matches_from(rest, &uri[l.len()..]),
        Some((Part::Var, rest)) => {
            // Every length the value may take, shortest first.
            let mut end = 0;
            loop {
                if matches_from(rest, &uri[end..]) {
                    return true;
                }
                match value_char(&uri[end..]) {
                    Some(n) => end += n,
                    None => return false,
                }
            }
        }
    }
}

/// The length of the value character at the start of `s` (an unreserved
/// character, or `%` and two hex digits), if there is one.
fn value_char(s: &[u8]) -> Option<usize> {
    match s {
        [c, ..] if c.is_ascii_alphanumeric() || b"-._~".contains(c) => Some(1),
        [b'%', a, b, ..] if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => Some(3),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn level_one_expressions_match_their_expansions() {
        assert!(matches("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/1"));
        assert!(matches("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/a-b.c~d"));
        assert!(matches("file:///{a}/x/{b}", "file:///one/x/two"));
        // A percent-encoded octet is part of a value; a raw reserved one is not.
        assert!(matches("x://{q}", "x://a%20b"));
        assert!(!matches("x://{q}", "x://a b"));
        assert!(!matches("x://{q}", "x://a%2"));
        // A simple expansion never holds a slash.
        assert!(!matches("demo://r/{id}", "demo://r/1/2"));
        // An empty value is an expansion too.
        assert!(matches("demo://r/{id}", "demo://r/"));
        // Literal text is compared exactly.
        assert!(!matches("demo://r/{id}", "demo://R/1"));
        assert!(!matches("demo://r/{id}/end", "demo://r/1/ending"));
        // Two variables with literal text between them, found by backtracking.
        assert!(matches("t://{a}a{b}", "t://aaab"));
        // A template without expressions is its one URI.
        assert!(matches("t://fixed", "t://fixed"));
        assert!(!matches("t://fixed", "t://fixed/"));
    }

    #[test]
    fn templates_past_level_one_or_broken_match_nothing() {
        for t in ["x://{+path}", "x://{#f}", "x://a{?q}", "x://{a,b}", "x://{a*}", "x://{a:3}", "x://{", "x://}", "x://{}"] {
            assert!(!matches(t, "x://a"), "{t}");
        }
    }
}
