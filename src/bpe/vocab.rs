//! One encoding's vocabulary: the token bytes → rank lookup, and the rank merge.
//!
//! The generated tables (see `build.rs`) hold every token's bytes in sorted, front-coded form
//! and its rank packed in a few bits. Loading decodes them once into one byte buffer and an
//! open-addressing hash index over it (about 5 ms for o200k on a laptop); nothing is parsed
//! from text and no per-token allocation is made.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No rank: the bytes are not a token.
const NONE: u32 = u32::MAX;

/// Pieces at least this long use the heap merge (O(n log n)); shorter ones the quadratic
/// merge over a small vector, which is faster when n is small.
const HEAP_MERGE_FROM: usize = 128;

/// The generated tables of one encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source {
    pub(crate) tokens: &'static [u8],
    pub(crate) ranks: &'static [u8],
    pub(crate) count: usize,
    pub(crate) bytes: usize,
    pub(crate) rank_bits: u32,
}

// Slot layout (u64): offset 0..21 | length - 1 21..28 | rank 28..46 | tag 46..63 | used 63.
const OFFSET_BITS: u32 = 21;
const LEN_SHIFT: u32 = 21;
const RANK_SHIFT: u32 = 28;
const RANK_BITS: u32 = 18;
const TAG_SHIFT: u32 = 46;
const TAG_BITS: u32 = 17;
const USED: u64 = 1 << 63;

/// A loaded vocabulary.
#[derive(Debug)]
pub(crate) struct Vocab {
    /// Every token's bytes, back to back (sorted order).
    bytes: Vec<u8>,
    /// The hash index over tokens of 3 bytes or more.
    slots: Vec<u64>,
    /// 64 minus log2 of the slot count.
    shift: u32,
    /// The rank of every two-byte token, indexed by `b0 << 8 | b1`.
    pairs: Vec<u32>,
    /// The rank of every byte.
    singles: [u32; 256],
}

const K: u64 = 0xf135_7aea_2e62_a9c5;

#[inline(always)]
fn word(chunk: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    for (d, s) in buf.iter_mut().zip(chunk) {
        *d = *s;
    }
    u64::from_le_bytes(buf)
}

#[inline(always)]
fn hash(key: &[u8]) -> u64 {
    let mut h = (key.len() as u64).wrapping_mul(K);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ word(c)).wrapping_mul(K).rotate_left(26);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = (h ^ word(rest)).wrapping_mul(K).rotate_left(26);
    }
    h.wrapping_mul(K)
}

/// Reads the `index`-th `bits`-bit little-endian field of `packed`.
#[inline]
fn packed_field(packed: &[u8], index: usize, bits: u32) -> Option<u32> {
    let bit = index * bits as usize;
    let byte = bit / 8;
    let window = packed.get(byte..byte + 4)?;
    let v = u32::from_le_bytes([
        *window.first()?,
        *window.get(1)?,
        *window.get(2)?,
        *window.get(3)?,
    ]);
    Some((v >> (bit % 8)) & ((1u32 << bits) - 1))
}

impl Vocab {
    /// Decodes the generated tables. Fails only if they are inconsistent (a build defect).
    pub(crate) fn load(src: Source) -> Result<Vocab, String> {
        if src.bytes >= 1 << OFFSET_BITS || src.rank_bits > RANK_BITS {
            return Err("tables exceed the index layout".into());
        }
        let cap = (src.count * 2).next_power_of_two().max(1024);
        let mut vocab = Vocab {
            bytes: Vec::with_capacity(src.bytes + 8),
            slots: vec![0; cap],
            shift: 64 - cap.trailing_zeros(),
            pairs: vec![NONE; 1 << 16],
            singles: [NONE; 256],
        };
        let mask = cap - 1;
        let (mut pos, mut prev_start, mut prev_len) = (0usize, 0usize, 0usize);
        // Home slot and slot value of every token of 3 bytes or more, inserted below.
        let mut homes: Vec<u32> = Vec::with_capacity(src.count);
        let mut values: Vec<u64> = Vec::with_capacity(src.count);
        for index in 0..src.count {
            let bad = || format!("token table is corrupt at token {index}");
            let shared = usize::from(*src.tokens.get(pos).ok_or_else(bad)?);
            let rest = usize::from(*src.tokens.get(pos + 1).ok_or_else(bad)?);
            let tail = src.tokens.get(pos + 2..pos + 2 + rest).ok_or_else(bad)?;
            pos += 2 + rest;
            if shared > prev_len {
                return Err(bad());
            }
            let start = vocab.bytes.len();
            vocab
                .bytes
                .extend_from_within(prev_start..prev_start + shared);
            vocab.bytes.extend_from_slice(tail);
            let len = shared + rest;
            (prev_start, prev_len) = (start, len);
            let rank = packed_field(src.ranks, index, src.rank_bits).ok_or_else(bad)?;
            let key = vocab.bytes.get(start..).ok_or_else(bad)?;
            match *key {
                [b] => *vocab.singles.get_mut(usize::from(b)).ok_or_else(bad)? = rank,
                [b0, b1] => {
                    *vocab
                        .pairs
                        .get_mut(usize::from(b0) << 8 | usize::from(b1))
                        .ok_or_else(bad)? = rank
                }
                _ => {
                    if len == 0 || len > 128 {
                        return Err(bad());
                    }
                    let h = hash(key);
                    homes.push((h >> vocab.shift) as u32);
                    values.push(
                        (start as u64)
                            | (((len - 1) as u64) << LEN_SHIFT)
                            | (u64::from(rank) << RANK_SHIFT)
                            | (vocab.tag(h) << TAG_SHIFT)
                            | USED,
                    );
                }
            }
        }
        // Insert in order of home slot (a counting sort on the top bits), so the table is
        // written front to back instead of at random: random writes into a table this size
        // miss the cache on nearly every token and made loading several times slower.
        const BUCKET_BITS: u32 = 10;
        let bucket_shift = cap.trailing_zeros().saturating_sub(BUCKET_BITS);
        let mut starts = vec![0usize; (1 << BUCKET_BITS) + 1];
        for &home in &homes {
            if let Some(c) = starts.get_mut((home >> bucket_shift) as usize + 1) {
                *c += 1;
            }
        }
        for b in 1..starts.len() {
            let before = starts.get(b - 1).copied().unwrap_or(0);
            if let Some(c) = starts.get_mut(b) {
                *c += before;
            }
        }
        let mut order = vec![0u32; homes.len()];
        for (entry, &home) in homes.iter().enumerate() {
            let bucket = starts.get_mut((home >> bucket_shift) as usize);
            if let Some(next) = bucket {
                if let Some(o) = order.get_mut(*next) {
                    *o = entry as u32;
                }
                *next += 1;
            }
        }
        drop(starts);
        for &entry in &order {
            let (Some(&home), Some(&value)) =
                (homes.get(entry as usize), values.get(entry as usize))
            else {
                return Err("index build failed".into());
            };
            let mut i = home as usize;
            loop {
                let s = vocab
                    .slots
                    .get_mut(i)
                    .ok_or_else(|| String::from("index build failed"))?;
                if *s == 0 {
                    *s = value;
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        vocab.bytes.extend_from_slice(&[0; 8]);
        if vocab.singles.contains(&NONE) {
            return Err("a byte has no token".into());
        }
        Ok(vocab)
    }

    #[inline(always)]
    fn tag(&self, h: u64) -> u64 {
        (h >> (self.shift - TAG_BITS)) & ((1 << TAG_BITS) - 1)
    }

    /// The rank of `key`, if it is a token.
    #[inline]
    pub(crate) fn rank(&self, key: &[u8]) -> Option<u32> {
        let r = match *key {
            [] => NONE,
            [b] => self.singles.get(usize::from(b)).copied().unwrap_or(NONE),
            [b0, b1] => self
                .pairs
                .get(usize::from(b0) << 8 | usize::from(b1))
                .copied()
                .unwrap_or(NONE),
            _ => self.rank_long(key),
        };
        (r != NONE).then_some(r)
    }

    #[inline]
    fn rank_long(&self, key: &[u8]) -> u32 {
        if key.len() > 128 {
            return NONE;
        }
        let h = hash(key);
        let want = (self.tag(h) << TAG_SHIFT) | ((key.len() as u64 - 1) << LEN_SHIFT) | USED;
        let check = (((1u64 << TAG_BITS) - 1) << TAG_SHIFT) | (0x7f << LEN_SHIFT) | USED;
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let Some(&s) = self.slots.get(i) else {
                return NONE;
            };
            if s == 0 {
                return NONE;
            }
            if s & check == want {
                let start = (s & ((1 << OFFSET_BITS) - 1)) as usize;
                let same = if key.len() <= 8 {
                    // `bytes` ends with 8 bytes of padding, so this load never falls short.
                    let stored = self.bytes.get(start..start + 8).map_or(0, word);
                    let mask = u64::MAX >> (64 - 8 * key.len() as u32);
                    (stored & mask) == word(key)
                } else {
                    self.bytes.get(start..start + key.len()) == Some(key)
                };
                if same {
                    return ((s >> RANK_SHIFT) & ((1 << RANK_BITS) - 1)) as u32;
                }
            }
            i = (i + 1) & mask;
        }
    }

    #[inline(always)]
    fn rank_or_none(&self, piece: &[u8], from: usize, to: usize) -> u32 {
        piece
            .get(from..to)
            .and_then(|k| self.rank(k))
            .unwrap_or(NONE)
    }

    /// The number of tokens `piece` encodes to.
    #[inline]
    pub(crate) fn count_piece(&self, piece: &[u8], scratch: &mut Scratch) -> usize {
        if piece.len() <= 1 {
            return piece.len();
        }
        if self.rank(piece).is_some() {
            return 1;
        }
        self.merge(piece, scratch);
        scratch.bounds.len().saturating_sub(1)
    }

    /// Appends the ranks `piece` encodes to.
    pub(crate) fn encode_piece(&self, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) {
        if let Some(r) = self.rank(piece) {
            out.push(r);
            return;
        }
        if piece.is_empty() {
            return;
        }
        self.merge(piece, scratch);
        for w in scratch.bounds.windows(2) {
            if let [a, b] = *w {
                out.push(self.rank_or_none(piece, a as usize, b as usize));
            }
        }
    }

    /// Merges `piece` (at least two bytes, not itself a token) and leaves the start of every
    /// resulting token, then `piece.len()`, in `scratch.bounds`.
    fn merge(&self, piece: &[u8], scratch: &mut Scratch) {
        if piece.len() < HEAP_MERGE_FROM {
            self.merge_small(piece, scratch);
        } else {
            self.merge_heap(piece, scratch);
        }
    }

    /// The reference's merge: repeatedly merge the adjacent pair whose bytes form the
    /// lowest-ranked token, the leftmost on ties. `parts` holds (start, rank of the pair that
    /// starts here) with two sentinels; O(n * merges), fast for short pieces.
    fn merge_small(&self, piece: &[u8], scratch: &mut Scratch) {
        let parts = &mut scratch.parts;
        parts.clear();
        let n = piece.len();
        for i in 0..n - 1 {
            parts.push((i as u32, self.rank_or_none(piece, i, i + 2)));
        }
        parts.push(((n - 1) as u32, NONE));
        parts.push((n as u32, NONE));
        // The rank of the token parts[i] .. parts[i + 3] would form once parts[i + 1] is gone.
        let joined = |parts: &[(u32, u32)], i: usize| -> u32 {
            match (parts.get(i), parts.get(i + 3)) {
                (Some(&(a, _)), Some(&(b, _))) => self.rank_or_none(piece, a as usize, b as usize),
                _ => NONE,
            }
        };
        loop {
            let mut best = (NONE, 0usize);
            for (i, &(_, r)) in parts.iter().enumerate() {
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == NONE {
                break;
            }
            let i = best.1;
            if i > 0 {
                let r = joined(parts, i - 1);
                if let Some(p) = parts.get_mut(i - 1) {
                    p.1 = r;
                }
            }
            let r = joined(parts, i);
            if let Some(p) = parts.get_mut(i) {
                p.1 = r;
            }
            if i + 1 < parts.len() {
                parts.remove(i + 1);
            }
        }
        scratch.bounds.clear();
        scratch.bounds.extend(parts.iter().map(|&(s, _)| s));
    }

    /// The same merge with a heap and a linked list: O(n log n) for long pieces.
    /// `end[i]` is the end of the token starting at `i`, `prev[i]` the start of the one before,
    /// `pair[i]` the rank of the token `i` would form with its right neighbour (NONE once `i`
    /// is no longer a token start). Heap entries are `rank << 32 | start`, popped smallest
    /// first, so ties go to the leftmost; stale entries are recognised by `pair[start]`.
    fn merge_heap(&self, piece: &[u8], scratch: &mut Scratch) {
        let n = piece.len();
        let Scratch {
            end,
            prev,
            pair,
            heap,
            bounds,
            ..
        } = scratch;
        end.clear();
        end.extend(1..=n as u32);
        prev.clear();
        prev.push(NONE);
        prev.extend(0..n as u32 - 1);
        pair.clear();
        let mut entries = std::mem::take(heap).into_vec();
        entries.clear();
        for i in 0..n - 1 {
            let r = self.rank_or_none(piece, i, i + 2);
            pair.push(r);
            if r != NONE {
                entries.push(Reverse((u64::from(r) << 32) | i as u64));
            }
        }
        pair.push(NONE);
        let mut queue = BinaryHeap::from(entries);
        while let Some(Reverse(key)) = queue.pop() {
            let (rank, left) = ((key >> 32) as u32, (key & 0xffff_ffff) as usize);
            if pair.get(left) != Some(&rank) {
                continue;
            }
            let Some(&right) = end.get(left) else { break };
            let Some(&new_end) = end.get(right as usize) else {
                break;
            };
            if let Some(e) = end.get_mut(left) {
                *e = new_end;
            }
            if let Some(p) = pair.get_mut(right as usize) {
                *p = NONE;
            }
            if let Some(p) = prev.get_mut(new_end as usize) {
                *p = left as u32;
            }
            // The new token with its right neighbour.
            let r = match end.get(new_end as usize) {
                Some(&next_end) => self.rank_or_none(piece, left, next_end as usize),
                None => NONE,
            };
            if let Some(p) = pair.get_mut(left) {
                *p = r;
            }
            if r != NONE {
                queue.push(Reverse((u64::from(r) << 32) | left as u64));
            }
            // The left neighbour with the new token.
            if let Some(&before) = prev.get(left) {
                if before != NONE {
                    let r = self.rank_or_none(piece, before as usize, new_end as usize);
                    if let Some(p) = pair.get_mut(before as usize) {
                        *p = r;
                    }
                    if r != NONE {
                        queue.push(Reverse((u64::from(r) << 32) | u64::from(before)));
                    }
                }
            }
        }
        *heap = queue;
        bounds.clear();
        let mut i = 0usize;
        while i < n {
            bounds.push(i as u32);
            i = end.get(i).map_or(n, |&e| e as usize);
        }
        bounds.push(n as u32);
    }
}

/// Buffers reused across the pieces of one call.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    parts: Vec<(u32, u32)>,
    end: Vec<u32>,
    prev: Vec<u32>,
    pair: Vec<u32>,
    heap: BinaryHeap<Reverse<u64>>,
    bounds: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(encoding: crate::count::Encoding) -> &'static Vocab {
        super::super::vocab(encoding).unwrap()
    }

    /// Linear probing stays short: a clustered index would make both load and lookups slow.
    #[test]
    fn probe_sequences_are_short() {
        for encoding in crate::count::Encoding::ALL {
            let vocab = loaded(encoding);
            let (mut used, mut run, mut longest) = (0usize, 0usize, 0usize);
            for &s in &vocab.slots {
                if s == 0 {
                    run = 0;
                } else {
                    used += 1;
                    run += 1;
                    longest = longest.max(run);
                }
            }
            assert!(used * 2 <= vocab.slots.len(), "{encoding}: load factor");
            assert!(longest < 64, "{encoding}: a cluster of {longest} slots");
        }
    }

    #[test]
    fn every_byte_and_some_tokens_resolve() {
        let vocab = loaded(crate::count::Encoding::Cl100kBase);
        for b in 0..=255u8 {
            assert!(vocab.rank(&[b]).is_some());
        }
        assert_eq!(vocab.rank(b"hello"), Some(15339));
        assert_eq!(vocab.rank(b" world"), Some(1917));
        assert_eq!(vocab.rank(b"not a token at all"), None);
        assert_eq!(vocab.rank(&[b'a'; 200]), None);
        assert_eq!(vocab.rank(b""), None);
    }
}
