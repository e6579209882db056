//! One stable sort for the crate's lists.
//!
//! Each `sort_by_key` (or `sort_unstable`) on a type of its own is a copy of the standard
//! library's sort in the binary, about 6-8 KB of wasm each: sixteen of them were 113 KB of the
//! package's 1.25 MB of code. [`sort_by_key`] sorts `(key, index)` pairs instead, one copy
//! for every caller, and then puts the items in that order. The lists sorted here are a
//! conversation's problems, facts, edits and parts: short, and sorted once per operation.

/// Sorts `items` by `key`, stably: items of equal keys keep their order. A key of several
/// fields packs them into the `u128` most significant first (see [`fields`]).
pub(crate) fn sort_by_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> u128) {
    if items.len() < 2 {
        return;
    }
    let mut order: Vec<(u128, usize)> = items.iter().map(key).zip(0..).collect();
    // NOTE: unstable, but the index makes every pair distinct, so the order is the stable one.
    order.sort_unstable();
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(
        order
            .iter()
            .filter_map(|&(_, i)| slots.get_mut(i).and_then(Option::take)),
    );
}

/// A key of two fields, `high` first.
pub(crate) fn fields(high: u64, low: u64) -> u128 {
    u128::from(high) << 64 | u128::from(low)
}

// NOTE: proptest is a host-only dev-dependency.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The order is the standard library's stable sort's, equal keys included.
        #[test]
        fn sorts_as_the_standard_stable_sort(items in prop::collection::vec((0u8..4, 0u16..3, any::<u32>()), 0..60)) {
            let mut ours = items.clone();
            sort_by_key(&mut ours, |&(a, b, _)| fields(u64::from(a), u64::from(b)));
            let mut theirs = items;
            theirs.sort_by_key(|&(a, b, _)| (a, b));
            prop_assert_eq!(ours, theirs);
        }
    }
}
