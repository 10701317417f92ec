//! Sorting for cold paths through one shared sort. Each `sort_unstable_by`
//! with its own element type or comparator is a separate 3–5 KiB copy of
//! the standard sort; these helpers sort a list of positions instead, with
//! the comparison behind a `dyn`, so every caller shares one copy and only
//! a small reordering loop is generic. Not for hot paths: a comparison
//! costs an indirect call and an index check.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, not keeping the order of equal elements.
pub(crate) fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let order = {
        let items: &[T] = v;
        positions(items.len(), &|a, b| cmp(&items[a], &items[b]))
    };
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)));
}

/// Sorts `v` in its natural order.
pub(crate) fn sort<T: Ord>(v: &mut Vec<T>) {
    sort_by(v, T::cmp)
}

/// The positions `0..n` in the order `cmp` gives them.
fn positions(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|a, b| cmp(*a, *b));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_sort() {
        let mut words: Vec<String> = ["pear", "apple", "fig", "apple", "kiwi", ""].iter().map(|s| s.to_string()).collect();
        let mut want = words.clone();
        want.sort_unstable();
        sort(&mut words);
        assert_eq!(words, want);
        let mut pairs = vec![(3, "c"), (1, "a"), (2, "b"), (0, "z")];
        sort_by(&mut pairs, |a, b| b.0.cmp(&a.0));
        assert_eq!(pairs, [(3, "c"), (2, "b"), (1, "a"), (0, "z")]);
        let mut none: Vec<u8> = Vec::new();
        sort(&mut none);
        assert!(none.is_empty());
    }
}
