//! A memo of exact token counts of texts (estimates, in a build without tables), for the counts
//! of messages and the tiers' figures ([`crate::context::Measure`]).
//!
//! The keeper re-applies its standing prune and evict decision on every full prepare, and each
//! edit reports the tokens of the text it replaced: without a memo, every turn would tokenize
//! every old tool result again (on a 1,000-message agent history, most of a prepare's time).
//! A text's count under an encoding is a pure function of the two, so the memo can only save
//! work, never change a figure; it is kept per thread (one per wasm instance) rather than per
//! [`Counter`](crate::counting::Counter), since no option or calibration enters it and two
//! keepers sharing it cannot see each other's state, only each other's arithmetic.
//!
//! Keys are XXH3-64 of the text with its length and the encoding (the count cache's algorithm,
//! see [`crate::counting`]); the memo is bounded like the count cache: two generations of at
//! most [`GENERATION`] entries, the least recently used dropped first. Texts shorter than
//! [`MIN_BYTES`] are counted directly (tokenizing them costs about what a lookup does).

use std::cell::RefCell;
use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

use crate::{count_tokens, estimate_tokens, CountError, Encoding};

/// Entries per generation: two generations hold at most twice this many (about 40 bytes each).
const GENERATION: usize = 8_192;

/// Texts shorter than this are not memoized.
const MIN_BYTES: usize = 256;

type Key = (u64, usize, Encoding);

#[derive(Default)]
struct Memo {
    current: HashMap<Key, usize>,
    previous: HashMap<Key, usize>,
}

impl Memo {
    fn get(&mut self, key: &Key) -> Option<usize> {
        if let Some(n) = self.current.get(key) {
            return Some(*n);
        }
        let n = self.previous.remove(key)?;
        self.insert(*key, n);
        Some(n)
    }

    fn insert(&mut self, key: Key, n: usize) {
        if self.current.len() >= GENERATION {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, n);
    }
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The tokens of `text` under `encoding` (the estimate when the encoding is not built in).
pub(crate) fn tokens(text: &str, encoding: Encoding) -> usize {
    count(text, encoding).unwrap_or_else(|_| estimate_tokens(text))
}

/// The tokens of `text` under `encoding`, [`count_tokens`] through the memo: the counts of
/// messages and the tiers' figures share it, so a tool result that a count has tokenized is
/// not tokenized again when a tier reports what it saved on it. A build without tables
/// ([`crate::count::ESTIMATOR_ONLY`]) estimates instead.
///
/// # Errors
/// As [`count_tokens`] (an encoding not built in); a failure is not remembered.
pub(crate) fn count(text: &str, encoding: Encoding) -> Result<usize, CountError> {
    // NOTE: estimates go through the memo too: the estimator reads about 300 MB/s, XXH3 several
    // GB/s, and a keeper made anew for each request counts every old result again.
    let measure = |text: &str| match crate::count::ESTIMATOR_ONLY {
        true => Ok(estimate_tokens(text)),
        false => count_tokens(text, encoding),
    };
    if text.len() < MIN_BYTES {
        return measure(text);
    }
    let key = (xxh3_64(text.as_bytes()), text.len(), encoding);
    // NOTE: the borrow is never held across the count (which calls nothing that measures).
    if let Some(n) = MEMO.with(|memo| memo.try_borrow_mut().ok().and_then(|mut m| m.get(&key))) {
        return Ok(n);
    }
    let n = measure(text)?;
    MEMO.with(|memo| {
        if let Ok(mut memo) = memo.try_borrow_mut() {
            memo.insert(key, n);
        }
    });
    Ok(n)
}

/// Forgets every count (with [`crate::counting::Counter::clear_cache`], so that a count after
/// it tokenizes afresh).
pub(crate) fn clear() {
    MEMO.with(|memo| {
        if let Ok(mut memo) = memo.try_borrow_mut() {
            *memo = Memo::default();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_gives_the_tokenizer_count() {
        let text = "fn export_row(amount: i64) -> String { format!(\"{amount}\") }\n".repeat(20);
        let exact = count_tokens(&text, Encoding::O200kBase).unwrap();
        assert_eq!(tokens(&text, Encoding::O200kBase), exact);
        // the second time from the memo, the same
        assert_eq!(tokens(&text, Encoding::O200kBase), exact);
        // another encoding is another key
        let cl = count_tokens(&text, Encoding::Cl100kBase).unwrap();
        assert_eq!(tokens(&text, Encoding::Cl100kBase), cl);
        // a text of the same length and another content is counted afresh
        let other = text.replace("amount", "amounT");
        assert_eq!(other.len(), text.len());
        assert_eq!(
            tokens(&other, Encoding::O200kBase),
            count_tokens(&other, Encoding::O200kBase).unwrap()
        );
    }

    #[test]
    fn the_memo_stays_bounded() {
        for i in 0..(GENERATION * 3) {
            let text = format!("{i:0>300}");
            assert_eq!(
                tokens(&text, Encoding::O200kBase),
                count_tokens(&text, Encoding::O200kBase).unwrap()
            );
        }
        MEMO.with(|m| {
            let m = m.borrow();
            assert!(m.current.len() + m.previous.len() <= 2 * GENERATION);
        });
    }
}
