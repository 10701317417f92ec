//! Lexical path normalisation: `.` dropped and each `..` taking off the
//! name before it, from the text alone. Links are not followed, so the
//! result names what the text names only where no link is crossed; the
//! callers resolve links themselves where that matters.

use std::path::{Component, Path, PathBuf};

/// What becomes of a `..` with no name before it to take off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Above {
    /// Kept: `../a` stays `../a`, still to be resolved against a folder.
    Keep,
    /// Dropped: `../a` is `a`, and `/..` is `/`, as a walk up from the
    /// root stays there.
    Drop,
}

/// `p` with `.` dropped and each `..` taking off the name before it;
/// `above` says what a `..` with none before it becomes.
pub fn lexical(p: &Path, above: Above) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let name_before = matches!(out.components().next_back(), Some(Component::Normal(_)));
                if name_before {
                    out.pop();
                } else if above == Above::Keep {
                    out.push(c);
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(p: &str) -> (PathBuf, PathBuf) {
        (lexical(Path::new(p), Above::Keep), lexical(Path::new(p), Above::Drop))
    }

    #[test]
    fn dots_and_names_within_the_path_are_the_same_either_way() {
        for (given, want) in [("a/./b/../c", "a/c"), ("/x/y/../../z", "/z"), ("a/b/..", "a"), ("./a", "a"), ("", "")] {
            assert_eq!(both(given), (PathBuf::from(want), PathBuf::from(want)), "{given}");
        }
    }

    #[test]
    fn a_leading_parent_is_kept_or_dropped() {
        assert_eq!(both("../a"), (PathBuf::from("../a"), PathBuf::from("a")));
        assert_eq!(both("a/../../b"), (PathBuf::from("../b"), PathBuf::from("b")));
        // A kept `..` is never taken off by the next one.
        assert_eq!(both("../../x"), (PathBuf::from("../../x"), PathBuf::from("x")));
        assert_eq!(both("/../a"), (PathBuf::from("/../a"), PathBuf::from("/a")));
    }
}
