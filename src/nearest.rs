//! "Did you mean": the known word nearest to a typed one, by edits
//! (insert, delete, substitute, swap two neighbours), case aside. Used for
//! command, option and field names alike.

/// The candidate nearest to `typed` within `limit` edits (case aside); of
/// two as near, the one that sorts first.
pub fn nearest<'a, S: AsRef<str> + ?Sized + 'a>(typed: &str, candidates: impl IntoIterator<Item = &'a S>, limit: usize) -> Option<&'a S> {
    let typed = typed.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (distance(&typed, &c.as_ref().to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.as_ref().cmp(b.1.as_ref())))
        .map(|(_, c)| c)
}

/// A slip's size for a word of this many characters: one edit for a short
/// word, two for a longer one.
pub fn slip(word: &str) -> usize {
    if word.chars().count() <= 3 {
        1
    } else {
        2
    }
}

/// Unknown field names, each quoted and followed by the known one it is
/// probably a slip of: `"restrat" (did you mean "restart"?), "extra"`.
pub fn unknown_fields(unknown: &[String], known: &[&str]) -> String {
    let one = |u: &String| match nearest(u, known, slip(u)) {
        Some(k) => format!("{u:?} (did you mean {k:?}?)"),
        None => format!("{u:?}"),
    };
    unknown.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![(0..=b.len()).collect::<Vec<usize>>()];
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (rows[i - 1][j] + 1).min(row[j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(rows[i - 2][j - 2] + 1);
            }
        }
        rows.push(row);
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_within_the_limit() {
        let known = ["restart", "read", "write", "exec"];
        assert_eq!(nearest("restrat", &known, 2), Some(&"restart"));
        assert_eq!(nearest("raed", &known, 2), Some(&"read"));
        assert_eq!(nearest("READ", &known, 1), Some(&"read"));
        assert_eq!(nearest("zzzzzz", &known, 2), None);
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!((slip("ab"), slip("abcd")), (1, 2));
        let unknown = ["restrat".to_string(), "zzzzzz".to_string()];
        assert_eq!(unknown_fields(&unknown, &known), r#""restrat" (did you mean "restart"?), "zzzzzz""#);
    }
}
