//! One encoding's vocabulary: the token bytes → rank lookup, and the rank merge.
//!
//! The generated tables (see `build.rs` and their layout in `layout.rs`) hold every token's
//! bytes in sorted, front-coded form and its rank packed in a few bits, with a directory of
//! each two-byte prefix's run of tokens. They are read in place: loading reads the ranks of the
//! 256 bytes and allocates empty indices; a first byte's prefix entries are built into the
//! index (from its two-byte tokens and the groups' directory), and a prefix's tokens decoded
//! into its small open-addressing table, when a key
//! that needs them is first looked up (see [`Vocab`]). Nothing is parsed from text and no
//! per-token allocation is made.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use super::layout::{
    Header, CHECKPOINT, GROUP_NONE, GROUP_RECORD, PAIR_BITS, PAIR_NONE, PARTS, ROWS, SPLIT,
    TABLES_MAGIC,
};

/// No rank: the bytes are not a token.
const NONE: u32 = u32::MAX;

/// Pieces at least this long use the heap merge (O(n log n)); shorter ones the quadratic
/// merge over a small vector, which is faster when n is small.
const HEAP_MERGE_FROM: usize = 128;

/// Pieces of 3 to this many bytes that are not tokens have their counts cached.
const CACHE_MAX: usize = 31;
/// Entries of the piece cache (direct-mapped).
const CACHE_SLOTS: usize = 4096;

/// A cached piece: its bytes, zero-padded, with its length in the last byte (so keys of
/// different lengths differ), and the cache slot it belongs in.
#[inline(always)]
fn cache_key(piece: &[u8]) -> ([u64; 4], usize) {
    let mut key = [0u64; 4];
    for (i, k) in key.iter_mut().enumerate() {
        let from = i * 8;
        if from < piece.len() {
            *k = word_at(piece, from, (piece.len() - from).min(8));
        }
    }
    if let Some(k) = key.get_mut(3) {
        *k |= (piece.len() as u64) << 56;
    }
    let [a, b, c, d] = key;
    let h = (a ^ b.rotate_left(19) ^ c.rotate_left(37) ^ d.rotate_left(53)).wrapping_mul(K);
    (key, (h >> 52) as usize & (CACHE_SLOTS - 1))
}

/// Pieces at least this long are merged a chunk at a time ([`Vocab::merge_chunked`]).
const CHUNKED_FROM: usize = 20 * 1024;
/// The chunk length of a chunked merge.
const CHUNK: usize = 16 * 1024;
/// Where in a chunk to look for the first token boundary to cut at (a kilobyte from its end:
/// several of the longest tokens).
const CHUNK_KEEP: usize = 15 * 1024;

/// The generated tables of one encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source {
    /// Each token's shared and rest lengths of its front coding in `tokens`.
    pub(crate) heads: &'static [u8],
    pub(crate) tokens: &'static [u8],
    pub(crate) ranks: &'static [u8],
    /// The ranks of the one-byte tokens.
    pub(crate) short: &'static [u8],
    /// The two-byte tokens, by first byte.
    pub(crate) pairs: &'static [u8],
    /// The directory of `tokens` by two-byte prefix (and third byte, for split prefixes).
    pub(crate) groups: &'static [u8],
    /// The groups of each split prefix, by third byte.
    pub(crate) splits: &'static [u8],
    pub(crate) rank_bits: u32,
    /// Whether every string of one to three ASCII digits is one token.
    pub(crate) digit_tokens: bool,
}

impl Source {
    /// The tables of an `<enc>.tables` file (layout in `layout.rs`), checked to be the ones
    /// this build was made with (`id`) and to add up; [`Vocab::load`] checks the rest.
    pub(crate) fn parse(file: &'static [u8], id: u64) -> Result<Source, String> {
        let read = Header::<PARTS>::read(file, &TABLES_MAGIC, "a tables file")?;
        if read.id != id {
            return Err(format!(
                "the file is from another build (tables {:016x}, this build has {id:016x})",
                read.id
            ));
        }
        if read.end != file.len() {
            return Err(format!("{} bytes after the tables", file.len() - read.end));
        }
        let [heads, tokens, ranks, short, pairs, groups, splits] = read.parts;
        Ok(Source {
            heads,
            tokens,
            ranks,
            short,
            pairs,
            groups,
            splits,
            rank_bits: read.rank_bits,
            digit_tokens: read.digit_tokens,
        })
    }
}

// Slot layouts (u64). Bit 63: used; bit 62: inline.
// Inline (tokens of 3 to 7 bytes): the bytes after the prefix 0..40 | length 40..43 |
//   rank 43..61.
// Stored (8 bytes or more): offset in the table's `rest` 0..21 | length - 1 21..28 |
//   rank 28..46 | tag 46..62.
const USED: u64 = 1 << 63;
const INLINE: u64 = 1 << 62;
/// The longest token kept inline: its bytes after the prefix fill `INLINE_KEY_BITS`.
const INLINE_MAX: usize = 7;
const INLINE_KEY_BITS: u32 = 43;
const INLINE_RANK_SHIFT: u32 = 43;
const OFFSET_BITS: u32 = 21;
const LEN_SHIFT: u32 = 21;
const RANK_SHIFT: u32 = 28;
const RANK_BITS: u32 = 18;
const TAG_SHIFT: u32 = 46;
const TAG_BITS: u32 = 16;
const RANK_MASK: u64 = (1 << RANK_BITS) - 1;

/// Prefixes: one per first two bytes.
const PREFIXES: usize = ROWS * ROWS;
/// A prefix entry whose first byte's row has not been read yet (no entry is 0).
const UNREAD: u32 = 0;

/// A loaded vocabulary.
///
/// Tokens of three bytes or more are indexed by their first two bytes: each such prefix (a
/// group) owns a small open-addressing table (linear probing, load factor 1/2), allocated
/// and filled the first time a key with its prefix is looked up (under a `OnceLock`, so
/// concurrent first lookups on the host are safe). A prefix of more than 512 tokens (such as
/// ` t`, of thousands) is split by third byte into several groups, so a first lookup there
/// decodes the tokens of ` th`, not of all ` t`. A short text touches a few dozen groups of
/// thousands, so the first count costs a fraction of decoding everything; a long one ends up
/// building all of them, one small table at a time, in cache.
///
/// The prefix index is filled the same way, a first byte at a time: loading allocates it
/// zeroed ([`UNREAD`]) and reads nothing else but the ranks of the 256 bytes (the groups'
/// directory is read a group at a time too: a group's start is its checkpoint's plus at most
/// `CHECKPOINT - 1` groups, added when its table is built), so an encoding
/// is ready in microseconds of native time (and little more in V8's baseline tier, which runs
/// a module's first calls).
///
/// A token of up to seven bytes lies whole in its slot (its five bytes after the prefix,
/// its length and rank), so looking it up reads one slot and nothing else; most lookups,
/// those of whole words and of the merge's pairs, are of such tokens.
#[derive(Debug)]
pub(crate) struct Vocab {
    src: Source,
    /// For each prefix `b0 << 8 | b1`: its entry (see `layout.rs`: the rank of the two-byte
    /// token, and the group of the longer tokens that start with it, or the index in
    /// `src.splits` of the prefix's groups), or [`UNREAD`] until a key starting with `b0` is
    /// first looked up. One small table, so a merge's pair lookups and its longer lookups
    /// share cache lines.
    // NOTE: atomics so that two threads may fill a row at once (on the host); both store
    // the same values, read from static tables. On wasm32 these are plain loads and stores.
    prefixes: Box<[AtomicU32]>,
    /// Each group's table, once built.
    tables: Box<[OnceLock<Table>]>,
    /// The groups, and where their columns, checkpoints and split prefixes are in
    /// `src.groups`.
    groups: usize,
    counts: usize,
    rests: usize,
    checkpoints: usize,
    splits: usize,
    /// The rank of every byte.
    singles: [u32; 256],
}

/// Where one group's tokens are in the generated tables.
#[derive(Debug, Clone, Copy, Default)]
struct Group {
    prefix: u16,
    /// Where its first token's bytes start in `src.tokens`, and that token's index.
    pos: u32,
    index: u32,
    /// Its tokens.
    count: u32,
}

/// One group's hash table.
#[derive(Debug)]
struct Table {
    slots: Box<[u64]>,
    /// The bytes after the prefix of its tokens of eight bytes or more, back to back, then
    /// eight bytes of padding (so a word can be loaded at any token's last bytes).
    rest: Box<[u8]>,
}

const K: u64 = 0xf135_7aea_2e62_a9c5;

/// The `len` (1..=8) bytes of `bytes` from `from`, zero-extended, little-endian.
#[inline(always)]
fn word_at(bytes: &[u8], from: usize, len: usize) -> u64 {
    let load = |at: usize| {
        bytes.get(at..at + 8).map(|w| {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(w);
            u64::from_le_bytes(buf)
        })
    };
    if len == 0 {
        return 0;
    }
    if let Some(v) = load(from) {
        return if len >= 8 {
            v
        } else {
            v & ((1u64 << (8 * len)) - 1)
        };
    }
    // NOTE: near the end of the slice (the last bytes of every piece), the eight bytes that
    // end where these end, shifted down, instead of a byte loop.
    let end = from + len;
    if len <= 8 && end >= 8 {
        if let Some(v) = load(end - 8) {
            return v >> (8 * (8 - len));
        }
    }
    // A slice shorter than eight bytes (a short piece): two loads that overlap.
    let le = |at: usize, n: usize| -> u64 {
        bytes.get(at..at + n).map_or(0, |w| {
            w.iter().rev().fold(0, |v, &b| (v << 8) | u64::from(b))
        })
    };
    match len {
        1 => le(from, 1),
        2..=3 => le(from, 2) | (le(end - 2, 2) << (8 * (len - 2))),
        4..=8 => le(from, 4) | (le(end - 4, 4) << (8 * (len - 4))),
        _ => 0,
    }
}

/// The hash of `bytes[from..from + len]`.
#[inline(always)]
fn hash_at(bytes: &[u8], from: usize, len: usize) -> u64 {
    let mut h = (len as u64).wrapping_mul(K);
    let mut at = from;
    let end = from + len;
    while at < end {
        h = (h ^ word_at(bytes, at, (end - at).min(8)))
            .wrapping_mul(K)
            .rotate_left(26);
        at += 8;
    }
    h.wrapping_mul(K)
}

/// The inline key of a token of `len` (3..=7) bytes whose bytes after the prefix are `rest`
/// (zero-extended): the bits of its slot that a lookup compares.
#[inline(always)]
fn inline_key(rest: u64, len: usize) -> u64 {
    rest | ((len as u64) << 40) | INLINE | USED
}

/// The bits of a slot that hold an inline key.
const INLINE_CHECK: u64 = ((1 << INLINE_KEY_BITS) - 1) | INLINE | USED;

/// The hash of an inline key.
#[inline(always)]
fn inline_hash(key: u64) -> u64 {
    let h = key.wrapping_mul(K);
    h ^ (h >> 29)
}

#[inline(always)]
fn tag(h: u64) -> u64 {
    (h >> 8) & ((1 << TAG_BITS) - 1)
}

/// The home slot, within a table of `cap` slots, of hash `h`.
#[inline(always)]
fn home(h: u64, cap: usize) -> usize {
    (((h >> 32) * cap as u64) >> 32) as usize
}

/// The little-endian u32 at `at` in `bytes`.
#[inline]
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let w = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([
        *w.first()?,
        *w.get(1)?,
        *w.get(2)?,
        *w.get(3)?,
    ]))
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
    /// Checks the generated tables' sizes, reads the ranks of the 256 bytes and allocates the
    /// (empty) indices. Fails only if the tables are inconsistent (a build defect).
    #[inline(never)]
    pub(crate) fn load(src: Source) -> Result<Vocab, String> {
        if src.rank_bits > RANK_BITS {
            return Err("tables exceed the index layout".into());
        }
        let bad = || String::from("token tables are corrupt");
        let mut singles = [NONE; 256];
        for (b, r) in singles.iter_mut().enumerate() {
            *r = u32_at(src.short, 4 * b).ok_or_else(bad)?;
        }
        if singles.contains(&NONE) {
            return Err("a byte has no token".into());
        }
        let pairs = u32_at(src.pairs, 4 * ROWS).ok_or_else(bad)? as usize;
        let groups = u32_at(src.groups, 0).ok_or_else(bad)? as usize;
        let counts = 4 + 2 * groups;
        let rests = counts + 2 * groups;
        let checkpoints = 4 + GROUP_RECORD * groups;
        let splits = checkpoints + 8 * groups.div_ceil(CHECKPOINT);
        if src.pairs.len() != 4 * (ROWS + 1) + 5 * pairs
            || groups >= SPLIT as usize
            || src.splits.len() % (2 * ROWS) != 0
            || src.groups.len() != splits + 2 * (src.splits.len() / (2 * ROWS))
        {
            return Err(bad());
        }
        Ok(Vocab {
            src,
            prefixes: (0..PREFIXES).map(|_| AtomicU32::new(UNREAD)).collect(),
            tables: (0..groups).map(|_| OnceLock::new()).collect(),
            groups,
            counts,
            rests,
            checkpoints,
            splits,
            singles,
        })
    }

    /// The prefix of group `gi`.
    fn prefix_of(&self, gi: usize) -> Option<u16> {
        let at = 4 + 2 * gi;
        let p = self.src.groups.get(at..at + 2)?;
        Some(u16::from_be_bytes([*p.first()?, *p.get(1)?]))
    }

    /// The first group whose prefix is `prefix` or after it (the groups are in prefix order).
    fn first_group_from(&self, prefix: u16) -> usize {
        let (mut lo, mut hi) = (0, self.groups);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.prefix_of(mid).is_some_and(|p| p < prefix) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Group `gi`'s directory entry: its checkpoint's start plus the groups after that.
    fn group(&self, gi: usize) -> Option<Group> {
        if gi >= self.groups {
            return None;
        }
        let g = self.src.groups;
        let count_of = |i: usize| {
            let at = self.counts + 2 * i;
            Some(u32::from(u16::from_le_bytes([
                *g.get(at)?,
                *g.get(at + 1)?,
            ])))
        };
        let first = gi - gi % CHECKPOINT;
        let at = self.checkpoints + 8 * (first / CHECKPOINT);
        let (mut pos, mut index) = (u32_at(g, at)?, u32_at(g, at + 4)?);
        for i in first..gi {
            pos = pos.checked_add(u32_at(g, self.rests + 4 * i)?)?;
            index = index.checked_add(count_of(i)?)?;
        }
        Some(Group {
            prefix: self.prefix_of(gi)?,
            pos,
            index,
            count: count_of(gi)?,
        })
    }

    /// The entry of prefix `b0 << 8 | b1` (`index`), reading the entries of first byte `b0`
    /// into the index now (the first lookup of a key starting with `b0`).
    #[cold]
    #[inline(never)]
    fn row_first_use(&self, b0: u8, index: usize) -> u32 {
        let row = usize::from(b0);
        let mut entries = [PAIR_NONE | (GROUP_NONE << PAIR_BITS); ROWS];
        let (Some(from), Some(to), Some(pairs)) = (
            u32_at(self.src.pairs, 4 * row),
            u32_at(self.src.pairs, 4 * (row + 1)),
            u32_at(self.src.pairs, 4 * ROWS),
        ) else {
            return NONE;
        };
        // The two-byte tokens: their second bytes, then their ranks.
        let seconds = 4 * (ROWS + 1);
        let ranks = seconds + pairs as usize;
        for r in from as usize..to as usize {
            if let (Some(&b1), Some(rank)) = (
                self.src.pairs.get(seconds + r),
                u32_at(self.src.pairs, ranks + 4 * r),
            ) {
                if let Some(e) = entries.get_mut(usize::from(b1)) {
                    *e = (rank & PAIR_NONE) | (GROUP_NONE << PAIR_BITS);
                }
            }
        }
        // Each prefix's longer tokens: a group by its index, or a split prefix (whose blocks
        // are groups of their own) by its index in `src.splits`.
        let from = self.first_group_from((row as u16) << 8);
        let to = match row {
            255 => self.groups,
            _ => self.first_group_from((row as u16 + 1) << 8),
        };
        for gi in from..to {
            if let Some(prefix) = self.prefix_of(gi) {
                if let Some(e) = entries.get_mut(usize::from(prefix & 0xff)) {
                    *e = (*e & PAIR_NONE) | ((gi as u32) << PAIR_BITS);
                }
            }
        }
        let splits = self.src.groups.get(self.splits..).unwrap_or_default();
        for (si, p) in splits.chunks_exact(2).enumerate() {
            if let &[p0, p1] = p {
                if usize::from(p0) == row {
                    if let Some(e) = entries.get_mut(usize::from(p1)) {
                        *e = (*e & PAIR_NONE) | ((SPLIT | si as u32) << PAIR_BITS);
                    }
                }
            }
        }
        let start = row * ROWS;
        for (cell, &entry) in self.prefixes.iter().skip(start).zip(&entries) {
            cell.store(entry, Ordering::Relaxed);
        }
        entries
            .get(index.wrapping_sub(start))
            .copied()
            .unwrap_or(NONE)
    }

    /// Decodes group `gi`'s tokens and builds its table. (On tables that do not add up,
    /// which `build.rs` never writes, it stops early: no panic.)
    #[inline(never)]
    fn build(&self, gi: usize) -> Table {
        let group = self.group(gi).unwrap_or_default();
        let cap = group.count as usize * 2;
        let mut slots = vec![0u64; cap].into_boxed_slice();
        let heads = (self.src.heads)
            .get(2 * group.index as usize..2 * (group.index + group.count) as usize)
            .unwrap_or_default();
        // NOTE: sized for its stored tokens' bytes up front, so it is never reallocated.
        let stored: usize = (heads.chunks_exact(2))
            .map(|h| h.iter().map(|&n| usize::from(n)).sum::<usize>())
            .filter(|&len| len > INLINE_MAX)
            .map(|len| len - 2)
            .sum();
        let mut rest_bytes: Vec<u8> = Vec::with_capacity(stored + 8);
        // The current token; the next one keeps the bytes it shares with it in place. The
        // first token of a group shares at most the prefix with the token before it.
        let mut cur = [0u8; 128 + 8];
        let [b0, b1] = group.prefix.to_be_bytes();
        cur[0] = b0;
        cur[1] = b1;
        let mut prev_len = 2usize;
        let mut pos = group.pos as usize;
        for (t, head) in heads.chunks_exact(2).enumerate() {
            let &[shared, rest] = head else {
                break;
            };
            let (shared, rest) = (usize::from(shared), usize::from(rest));
            let len = shared + rest;
            if shared > prev_len || !(3..=128).contains(&len) {
                break;
            }
            let (Some(to), Some(from)) = (
                cur.get_mut(shared..len),
                self.src.tokens.get(pos..pos + rest),
            ) else {
                break;
            };
            to.copy_from_slice(from);
            pos += rest;
            prev_len = len;
            let rank = packed_field(self.src.ranks, group.index as usize + t, self.src.rank_bits)
                .map_or(NONE as u64, u64::from);
            let (value, h) = if len <= INLINE_MAX {
                let key = inline_key(word_at(&cur, 2, len - 2), len);
                (key | (rank << INLINE_RANK_SHIFT), inline_hash(key))
            } else {
                let h = hash_at(&cur, 2, len - 2);
                let offset = rest_bytes.len() as u64;
                rest_bytes.extend_from_slice(cur.get(2..len).unwrap_or_default());
                let value = offset
                    | (((len - 1) as u64) << LEN_SHIFT)
                    | (rank << RANK_SHIFT)
                    | (tag(h) << TAG_SHIFT)
                    | USED;
                (value, h)
            };
            let mut i = home(h, cap);
            while let Some(s) = slots.get_mut(i) {
                if *s == 0 {
                    *s = value;
                    break;
                }
                i += 1;
                if i == cap {
                    i = 0;
                }
            }
        }
        rest_bytes.extend_from_slice(&[0; 8]);
        Table {
            slots,
            rest: rest_bytes.into_boxed_slice(),
        }
    }

    /// Whether every string of one to three ASCII digits is one token.
    pub(crate) fn digit_tokens(&self) -> bool {
        self.src.digit_tokens
    }

    /// The rank of `key`, if it is a token.
    #[inline]
    pub(crate) fn rank(&self, key: &[u8]) -> Option<u32> {
        let r = self.rank_at(key, 0, key.len());
        (r != NONE).then_some(r)
    }

    /// The rank of `bytes[from..from + len]`, or NONE.
    #[inline(always)]
    fn rank_at(&self, bytes: &[u8], from: usize, len: usize) -> u32 {
        match len {
            0 => NONE,
            1 => bytes
                .get(from)
                .and_then(|&b| self.singles.get(usize::from(b)))
                .copied()
                .unwrap_or(NONE),
            _ => {
                let (Some(&b0), Some(&b1)) = (bytes.get(from), bytes.get(from + 1)) else {
                    return NONE;
                };
                let index = usize::from(b0) << 8 | usize::from(b1);
                let Some(cell) = self.prefixes.get(index) else {
                    return NONE;
                };
                let mut entry = cell.load(Ordering::Relaxed);
                if entry == UNREAD {
                    entry = self.row_first_use(b0, index);
                }
                if len == 2 {
                    match entry & PAIR_NONE {
                        PAIR_NONE => NONE,
                        rank => rank,
                    }
                } else {
                    let group = entry >> PAIR_BITS;
                    let gi = if group & SPLIT == 0 {
                        group as usize
                    } else {
                        // A split prefix: its block by third byte (a key here has one).
                        let third = usize::from(bytes.get(from + 2).copied().unwrap_or(0));
                        let at = 2 * (((group & !SPLIT) as usize) * ROWS + third);
                        match self.src.splits.get(at..at + 2) {
                            Some(&[lo, hi]) => usize::from(u16::from_le_bytes([lo, hi])),
                            _ => usize::MAX,
                        }
                    };
                    self.rank_long(bytes, from, len, gi)
                }
            }
        }
    }

    /// The rank of `bytes[from..from + len]` (3 bytes or more) in group `gi`, or NONE.
    // NOTE: kept small and inlined: the inline-key probe is most lookups; the rest
    // (building a table, comparing a stored token) is out of line, so this needs no stack
    // frame of its own.
    #[inline(always)]
    fn rank_long(&self, bytes: &[u8], from: usize, len: usize, gi: usize) -> u32 {
        let Some(cell) = self.tables.get(gi) else {
            return NONE;
        };
        let table = match cell.get() {
            Some(table) => table,
            None => self.table_first_use(gi, cell),
        };
        if len > INLINE_MAX {
            return Self::rank_stored(table, bytes, from, len);
        }
        let key = inline_key(word_at(bytes, from + 2, len - 2), len);
        let cap = table.slots.len();
        let mut i = home(inline_hash(key), cap);
        loop {
            let Some(&s) = table.slots.get(i) else {
                return NONE;
            };
            if s & INLINE_CHECK == key {
                return ((s >> INLINE_RANK_SHIFT) & RANK_MASK) as u32;
            }
            if s == 0 {
                return NONE;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    /// Group `gi`'s table, built now (the first lookup in the group).
    #[cold]
    #[inline(never)]
    fn table_first_use<'a>(&self, gi: usize, cell: &'a OnceLock<Table>) -> &'a Table {
        cell.get_or_init(|| self.build(gi))
    }

    /// The rank of `bytes[from..from + len]`, a key of eight bytes or more, in `table`, or
    /// NONE.
    #[inline(never)]
    fn rank_stored(table: &Table, bytes: &[u8], from: usize, len: usize) -> u32 {
        if len > 128 || from + len > bytes.len() {
            return NONE;
        }
        let cap = table.slots.len();
        let h = hash_at(bytes, from + 2, len - 2);
        let want = (tag(h) << TAG_SHIFT) | ((len as u64 - 1) << LEN_SHIFT) | USED;
        let check = (((1u64 << TAG_BITS) - 1) << TAG_SHIFT) | (0x7f << LEN_SHIFT) | INLINE | USED;
        let mut i = home(h, cap);
        loop {
            let Some(&s) = table.slots.get(i) else {
                return NONE;
            };
            if s == 0 {
                return NONE;
            }
            if s & check == want {
                let start = (s & ((1 << OFFSET_BITS) - 1)) as usize;
                let mut same = true;
                let mut k = 2;
                while k < len {
                    let w = (len - k).min(8);
                    if word_at(&table.rest, start + k - 2, w) != word_at(bytes, from + k, w) {
                        same = false;
                        break;
                    }
                    k += 8;
                }
                if same {
                    return ((s >> RANK_SHIFT) & RANK_MASK) as u32;
                }
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    #[inline(always)]
    fn rank_or_none(&self, piece: &[u8], from: usize, to: usize) -> u32 {
        self.rank_at(piece, from, to.saturating_sub(from))
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
        if piece.len() == 2 {
            return 2;
        }
        if piece.len() <= CACHE_MAX {
            let (key, slot) = cache_key(piece);
            if let Some(&(k, tokens)) = scratch.cache.get(slot) {
                if k == key {
                    return tokens as usize;
                }
            }
            self.merge_small(piece, scratch);
            let tokens = scratch.bounds.len().saturating_sub(1);
            if scratch.cache.is_empty() {
                scratch.cache = vec![([0; 4], 0); CACHE_SLOTS];
            }
            if let Some(e) = scratch.cache.get_mut(slot) {
                *e = (key, tokens as u32);
            }
            return tokens;
        }
        if piece.len() >= CHUNKED_FROM {
            let mut tokens = 0usize;
            if self.merge_chunked(piece, scratch, |_, _| tokens += 1) {
                return tokens;
            }
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
        if piece.len() >= CHUNKED_FROM {
            let mark = out.len();
            if self.merge_chunked(piece, scratch, |a, b| {
                out.push(self.rank_or_none(piece, a, b));
            }) {
                return;
            }
            out.truncate(mark);
        }
        self.merge(piece, scratch);
        for w in scratch.bounds.windows(2) {
            if let [a, b] = *w {
                out.push(self.rank_or_none(piece, a as usize, b as usize));
            }
        }
    }

    /// Merges a long `piece` one chunk at a time in bounded memory, calling `token(start,
    /// end)` for every resulting token in order, and returns true; or returns false, having
    /// called `token` for nothing that must be kept, if it cannot prove the result exact (the
    /// caller then merges the whole piece at once).
    ///
    /// Why this is exact. Cut a piece at `b` and merge each side alone. If, in the merge of
    /// the whole piece, the pair across `b` is never the one merged, then every merge is on
    /// one side, each side sees its merges in the order it would alone (a merge on one side
    /// never changes the other side's pairs), and the result is the two sides' results put
    /// together. The pair across `b` joins the last token of the left side and the first of
    /// the right; it changes only when one of those does. So replay the two sides' merge
    /// logs in the order the whole merge would interleave them (lower rank first, the left
    /// on ties: its positions are further left) and check, at every state, that the pair
    /// across `b` would lose: to the left's next merge when its rank is greater or equal, to
    /// the right's when greater; and that it is no token at the end. The check sees exactly
    /// the states of the two sides that the whole merge passes through, so it holds if and
    /// only if the whole merge never joins across `b`; with every cut checked, the whole
    /// merge is the segments' results in order.
    ///
    /// Each segment's merge log is taken from the merge of a chunk that extends past the
    /// segment's end: if the chunk's result has a token boundary at the segment's end, the
    /// same argument inside the chunk says the segment alone merges exactly as the chunk
    /// does left of that boundary, in the same order.
    #[inline(never)]
    fn merge_chunked(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        mut token: impl FnMut(usize, usize),
    ) -> bool {
        let n = piece.len();
        let mut prev = Segment::default();
        let mut cur = Segment::default();
        let mut have_prev = false;
        let mut start = 0usize;
        while start < n {
            let chunk_end = (start + CHUNK).min(n);
            let Some(chunk) = piece.get(start..chunk_end) else {
                return false;
            };
            self.merge_buckets(chunk, scratch, true);
            let len = chunk.len();
            // Cut at the first token boundary at or after CHUNK_KEEP, far from the chunk's
            // right end, where the chunk's result may differ from the whole piece's.
            let cut = if chunk_end == n {
                len
            } else {
                match scratch
                    .bounds
                    .iter()
                    .map(|&b| b as usize)
                    .find(|&b| b >= CHUNK_KEEP && b < len)
                {
                    Some(b) => b,
                    None => return false,
                }
            };
            cur.start = start;
            cur.end = start + cut;
            cur.log.clear();
            cur.log.extend(
                scratch
                    .log
                    .iter()
                    .filter(|&&(_, _, e)| e as usize <= cut)
                    .map(|&(r, a, e)| (r, a + start as u32, e + start as u32)),
            );
            cur.bounds.clear();
            cur.bounds.extend(
                scratch
                    .bounds
                    .iter()
                    .filter(|&&b| (b as usize) <= cut)
                    .map(|&b| b as usize + start),
            );
            if have_prev {
                if !self.joins_never(piece, &prev, &cur) {
                    return false;
                }
                prev.emit(&mut token);
            }
            std::mem::swap(&mut prev, &mut cur);
            have_prev = true;
            start += cut;
        }
        if have_prev {
            prev.emit(&mut token);
        }
        true
    }

    /// Whether the merge of `left` and `right` together never merges across their boundary
    /// (see [`Vocab::merge_chunked`]).
    #[inline(never)]
    fn joins_never(&self, piece: &[u8], left: &Segment, right: &Segment) -> bool {
        let (mut i, mut j) = (0usize, 0usize);
        let (mut last_start, mut first_end) = (left.end.saturating_sub(1), right.start + 1);
        let mut across = self.rank_or_none(piece, last_start, first_end);
        loop {
            let hl = left.log.get(i).map_or(NONE, |e| e.0);
            let hr = right.log.get(j).map_or(NONE, |e| e.0);
            if across != NONE && across < hl && across <= hr {
                return false;
            }
            if hl == NONE && hr == NONE {
                return true;
            }
            if hl <= hr {
                let Some(&(_, a, e)) = left.log.get(i) else {
                    return false;
                };
                i += 1;
                if e as usize == left.end {
                    last_start = a as usize;
                    across = self.rank_or_none(piece, last_start, first_end);
                }
            } else {
                let Some(&(_, a, e)) = right.log.get(j) else {
                    return false;
                };
                j += 1;
                if a as usize == right.start {
                    first_end = e as usize;
                    across = self.rank_or_none(piece, last_start, first_end);
                }
            }
        }
    }

    /// Merges `piece` (at least two bytes, not itself a token) and leaves the start of every
    /// resulting token, then `piece.len()`, in `scratch.bounds`.
    fn merge(&self, piece: &[u8], scratch: &mut Scratch) {
        if piece.len() < HEAP_MERGE_FROM {
            self.merge_small(piece, scratch);
        } else {
            self.merge_heap(piece, scratch, false);
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
    /// With `record`, every merge is also logged in order to `scratch.log` as (rank, start,
    /// end) of the token it makes.
    #[inline(never)]
    fn merge_heap(&self, piece: &[u8], scratch: &mut Scratch, record: bool) {
        let mut heap = std::mem::take(&mut scratch.heap);
        self.merge_queued(piece, scratch, &mut heap, record);
        scratch.heap = heap;
    }

    /// The heap merge with a bucket queue ([`Buckets`]): faster when many pairs share a rank.
    #[inline(never)]
    fn merge_buckets(&self, piece: &[u8], scratch: &mut Scratch, record: bool) {
        let mut buckets = std::mem::take(&mut scratch.buckets);
        self.merge_queued(piece, scratch, &mut buckets, record);
        scratch.buckets = buckets;
    }

    fn merge_queued(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        queue: &mut impl Queue,
        record: bool,
    ) {
        let n = piece.len();
        let Scratch {
            end,
            prev,
            pair,
            bounds,
            log,
            ..
        } = scratch;
        log.clear();
        end.clear();
        end.extend(1..=n as u32);
        prev.clear();
        prev.push(NONE);
        prev.extend(0..(n as u32).saturating_sub(1));
        pair.clear();
        queue.clear();
        for i in 0..n.saturating_sub(1) {
            let r = self.rank_or_none(piece, i, i + 2);
            pair.push(r);
            if r != NONE {
                queue.push(r, i as u32);
            }
        }
        pair.push(NONE);
        while let Some((rank, left)) = queue.pop() {
            let left = left as usize;
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
            if record {
                log.push((rank, left as u32, new_end));
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
                queue.push(r, left as u32);
            }
            // The left neighbour with the new token.
            if let Some(&before) = prev.get(left) {
                if before != NONE {
                    let r = self.rank_or_none(piece, before as usize, new_end as usize);
                    if let Some(p) = pair.get_mut(before as usize) {
                        *p = r;
                    }
                    if r != NONE {
                        queue.push(r, before);
                    }
                }
            }
        }
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
    buckets: Buckets,
    bounds: Vec<u32>,
    /// Token counts of recent short pieces, by [`cache_key`] (empty until first used).
    cache: Vec<([u64; 4], u32)>,
    /// The merges of the last recorded heap merge: (rank, start, end).
    log: Vec<(u32, u32, u32)>,
}

/// The merge's queue of candidate pairs: pops the lowest rank, the leftmost position on ties.
/// Entries may be stale; the merge skips those.
trait Queue {
    fn clear(&mut self);
    fn push(&mut self, rank: u32, pos: u32);
    fn pop(&mut self) -> Option<(u32, u32)>;
}

impl Queue for BinaryHeap<Reverse<u64>> {
    fn clear(&mut self) {
        BinaryHeap::clear(self);
    }
    #[inline]
    fn push(&mut self, rank: u32, pos: u32) {
        BinaryHeap::push(self, Reverse((u64::from(rank) << 32) | u64::from(pos)));
    }
    #[inline]
    fn pop(&mut self) -> Option<(u32, u32)> {
        BinaryHeap::pop(self).map(|Reverse(k)| ((k >> 32) as u32, k as u32))
    }
}

/// A queue of one position list per rank, kept sorted, and a heap of the ranks that have
/// entries. On a long run of one unit nearly every pair has one of a few ranks and is pushed
/// in position order, so a push is an append and a pop takes the front: no heap of a
/// position per entry, whose sifting was most of the merge's time.
#[derive(Debug, Default)]
struct Buckets {
    /// (rank << 32 | bucket) of every bucket with entries.
    ranks: BinaryHeap<Reverse<u64>>,
    /// Open addressing from rank to bucket: (rank + 1) << 32 | bucket, 0 for none.
    map: Vec<u64>,
    /// Buckets in use.
    used: usize,
    /// Each bucket's positions, sorted; those before `heads[b]` are popped.
    items: Vec<Vec<u32>>,
    heads: Vec<usize>,
    /// Recently used (rank, bucket) pairs, by the rank's low bits; rank NONE for none.
    recent: [(u32, u32); 8],
}

impl Buckets {
    #[inline]
    fn bucket(&mut self, rank: u32) -> usize {
        let r = rank as usize & 7;
        if let Some(&(k, b)) = self.recent.get(r) {
            if k == rank {
                return b as usize;
            }
        }
        let b = self.find_or_add(rank);
        if let Some(e) = self.recent.get_mut(r) {
            *e = (rank, b as u32);
        }
        b
    }

    fn find_or_add(&mut self, rank: u32) -> usize {
        if self.map.len() < 2 * (self.used + 1) {
            let cap = (self.map.len() * 2).max(64);
            let old = std::mem::replace(&mut self.map, vec![0; cap]);
            for v in old.into_iter().filter(|&v| v != 0) {
                self.place(v);
            }
        }
        let mask = self.map.len() - 1;
        let want = u64::from(rank) + 1;
        let mut i = (rank.wrapping_mul(0x9e37_79b1) as usize) & mask;
        loop {
            match self.map.get(i) {
                Some(&0) | None => break,
                Some(&v) if v >> 32 == want => return (v & 0xffff_ffff) as usize,
                Some(_) => i = (i + 1) & mask,
            }
        }
        let id = self.used;
        self.used += 1;
        if self.items.len() < self.used {
            self.items.push(Vec::new());
            self.heads.push(0);
        }
        if let Some(items) = self.items.get_mut(id) {
            items.clear();
        }
        if let Some(h) = self.heads.get_mut(id) {
            *h = 0;
        }
        if let Some(slot) = self.map.get_mut(i) {
            *slot = (want << 32) | id as u64;
        }
        id
    }

    fn place(&mut self, v: u64) {
        let mask = self.map.len() - 1;
        let rank = ((v >> 32) - 1) as u32;
        let mut i = (rank.wrapping_mul(0x9e37_79b1) as usize) & mask;
        while let Some(slot) = self.map.get_mut(i) {
            if *slot == 0 {
                *slot = v;
                return;
            }
            i = (i + 1) & mask;
        }
    }
}

impl Queue for Buckets {
    fn clear(&mut self) {
        self.ranks.clear();
        self.map.fill(0);
        self.used = 0;
        self.recent = [(NONE, 0); 8];
    }

    #[inline]
    fn push(&mut self, rank: u32, pos: u32) {
        let b = self.bucket(rank);
        let (Some(items), Some(head)) = (self.items.get_mut(b), self.heads.get_mut(b)) else {
            return;
        };
        if *head >= items.len() {
            items.clear();
            *head = 0;
            items.push(pos);
            self.ranks.push(Reverse((u64::from(rank) << 32) | b as u64));
        } else if items.last().is_some_and(|&last| last < pos) {
            items.push(pos);
        } else {
            let live = items.get(*head..).unwrap_or_default();
            let at = *head + live.partition_point(|&p| p < pos);
            items.insert(at, pos);
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(u32, u32)> {
        loop {
            let &Reverse(top) = self.ranks.peek()?;
            let (rank, b) = ((top >> 32) as u32, (top & 0xffff_ffff) as usize);
            let (Some(items), Some(head)) = (self.items.get(b), self.heads.get_mut(b)) else {
                self.ranks.pop();
                continue;
            };
            let Some(&pos) = items.get(*head) else {
                self.ranks.pop();
                continue;
            };
            *head += 1;
            if *head >= items.len() {
                self.ranks.pop();
            }
            return Some((rank, pos));
        }
    }
}

/// One segment of a chunked merge: its bounds, its tokens' starts (then its end) and its
/// merge log, in piece positions.
#[derive(Debug, Default)]
struct Segment {
    start: usize,
    end: usize,
    bounds: Vec<usize>,
    log: Vec<(u32, u32, u32)>,
}

impl Scratch {
    /// Frees merge buffers grown past what ordinary pieces need (after a long piece).
    pub(crate) fn trim(&mut self) {
        const KEEP: usize = 4 * CHUNK;
        if self.end.capacity() > KEEP || self.heap.capacity() > KEEP || self.log.capacity() > KEEP {
            let cache = std::mem::take(&mut self.cache);
            *self = Scratch {
                cache,
                ..Scratch::default()
            };
        }
    }
}

impl Segment {
    fn emit(&self, token: &mut impl FnMut(usize, usize)) {
        for w in self.bounds.windows(2) {
            if let [a, b] = *w {
                token(a, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(encoding: crate::encoding::Encoding) -> &'static Vocab {
        super::super::vocab(encoding).unwrap()
    }

    /// Linear probing stays short: a clustered index would make both load and lookups slow.
    #[test]
    fn probe_sequences_are_short() {
        for encoding in crate::encoding::Encoding::ALL {
            let vocab = loaded(encoding);
            let (mut used, mut slots, mut longest) = (0usize, 0usize, 0usize);
            for gi in 0..vocab.tables.len() {
                let group = vocab.group(gi).unwrap();
                let table = vocab.tables[gi].get_or_init(|| vocab.build(gi));
                let mut run = 0usize;
                // Twice round, so a run that wraps is counted whole.
                for &s in table.slots.iter().chain(table.slots.iter()) {
                    if s == 0 {
                        run = 0;
                    } else {
                        run += 1;
                        longest = longest.max(run.min(table.slots.len()));
                    }
                }
                let n = table.slots.iter().filter(|&&s| s != 0).count();
                assert_eq!(n, group.count as usize, "{encoding}: group {gi}");
                used += n;
                slots += table.slots.len();
            }
            assert!(used * 2 <= slots, "{encoding}: load factor");
            assert!(longest < 64, "{encoding}: a cluster of {longest} slots");
        }
    }

    /// Every token resolves to its rank, through the inline and the stored slots alike.
    // NOTE: tiktoken-rs, the reference, is a dev-dependency of the host only.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn every_token_resolves() {
        for encoding in crate::encoding::Encoding::ALL {
            let vocab = loaded(encoding);
            // The ordinary ranks (the special tokens above them are not in the tables).
            let (reference, ranks) = match encoding {
                crate::encoding::Encoding::O200kBase => {
                    (tiktoken_rs::o200k_base().unwrap(), 199_998)
                }
                crate::encoding::Encoding::Cl100kBase => {
                    (tiktoken_rs::cl100k_base().unwrap(), 100_256)
                }
            };
            for rank in 0..ranks {
                let Ok(bytes) = reference.decode_bytes(&[rank]) else {
                    continue;
                };
                assert_eq!(vocab.rank(&bytes), Some(rank), "{encoding}: {bytes:?}");
                // One byte more or less is some other token or none, never this one.
                let mut longer = bytes.clone();
                longer.push(0xff);
                assert_ne!(vocab.rank(&longer), Some(rank));
            }
        }
    }

    /// Loading reads nothing but the bytes' ranks: a lookup reads its first byte's prefix
    /// entries and its group's tokens, and nothing else.
    #[test]
    fn tables_are_read_on_first_use() {
        for encoding in crate::encoding::Encoding::ALL {
            let src = super::super::source(encoding).unwrap();
            let vocab = Vocab::load(src).unwrap();
            let unread = |v: &Vocab| {
                v.prefixes
                    .iter()
                    .filter(|e| e.load(Ordering::Relaxed) == UNREAD)
                    .count()
            };
            let built = |v: &Vocab| v.tables.iter().filter(|t| t.get().is_some()).count();
            assert_eq!(unread(&vocab), PREFIXES, "{encoding}");
            assert_eq!(built(&vocab), 0, "{encoding}");
            assert_eq!(vocab.rank(b"hello"), loaded(encoding).rank(b"hello"));
            assert_eq!(unread(&vocab), PREFIXES - ROWS, "{encoding}: one row read");
            assert_eq!(built(&vocab), 1, "{encoding}: one group built");
            assert_eq!(vocab.rank(b"he"), loaded(encoding).rank(b"he"));
            assert_eq!(vocab.rank(b"h"), loaded(encoding).rank(b"h"));
            assert_eq!((unread(&vocab), built(&vocab)), (PREFIXES - ROWS, 1));
        }
    }

    #[test]
    fn every_byte_and_some_tokens_resolve() {
        let vocab = loaded(crate::encoding::Encoding::Cl100kBase);
        for b in 0..=255u8 {
            assert!(vocab.rank(&[b]).is_some());
        }
        assert_eq!(vocab.rank(b"hello"), Some(15339));
        assert_eq!(vocab.rank(b" world"), Some(1917));
        assert_eq!(vocab.rank(b"not a token at all"), None);
        assert_eq!(vocab.rank(&[b'a'; 200]), None);
        assert_eq!(vocab.rank(b""), None);
    }

    /// The chunked merge of `piece`, if it proves itself exact, and the whole merge's tokens.
    type Tokens = Vec<(usize, usize)>;

    fn both(vocab: &Vocab, piece: &[u8]) -> (Option<Tokens>, Tokens) {
        let mut scratch = Scratch::default();
        let mut chunked = Vec::new();
        let ok = vocab.merge_chunked(piece, &mut scratch, |a, b| chunked.push((a, b)));
        vocab.merge_heap(piece, &mut scratch, false);
        let whole = scratch
            .bounds
            .windows(2)
            .map(|w| (w[0] as usize, w[1] as usize))
            .collect();
        (ok.then_some(chunked), whole)
    }

    /// Long runs of one unit take the chunked path (no fallback) and match the whole merge.
    #[test]
    fn chunked_merge_of_runs_is_exact_and_taken() {
        for encoding in crate::encoding::Encoding::ALL {
            let vocab = loaded(encoding);
            for unit in ["a", "z", " ", "!", "ab", "中", "é", "\n", "0", "xyz", "-="] {
                for n in [CHUNKED_FROM, 20_011, 65_537, 100_003] {
                    let piece = unit.repeat(n.div_ceil(unit.len()));
                    let (chunked, whole) = both(vocab, piece.as_bytes());
                    let chunked =
                        chunked.unwrap_or_else(|| panic!("{encoding}: {unit:?} x {n} fell back"));
                    assert_eq!(chunked, whole, "{encoding}: {unit:?} x {n}");
                }
            }
        }
    }

    /// Random long pieces over small alphabets: the chunked merge, when it succeeds, always
    /// equals the whole merge.
    #[test]
    fn chunked_merge_matches_whole_merge() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabets: [&[u8]; 5] = [b"ab", b"aab", b"abc ", b"e!.", b"aaaaaaab"];
        let mut taken = 0;
        let cases = 40;
        for case in 0..cases {
            let encoding = crate::encoding::Encoding::ALL[case % 2];
            let vocab = loaded(encoding);
            let alphabet = alphabets[case % alphabets.len()];
            let n = CHUNKED_FROM + (next() % 30_000) as usize;
            // Runs of random length, so both near-periodic and irregular stretches occur.
            let mut piece = Vec::with_capacity(n);
            while piece.len() < n {
                let b = alphabet[(next() % alphabet.len() as u64) as usize];
                let run = 1 + (next() % if case % 3 == 0 { 3 } else { 300 }) as usize;
                piece.extend(std::iter::repeat_n(b, run));
            }
            piece.truncate(n);
            let (chunked, whole) = both(vocab, &piece);
            if let Some(chunked) = chunked {
                taken += 1;
                assert_eq!(chunked, whole, "{encoding}: case {case}");
            }
        }
        assert!(
            taken > cases / 2,
            "the chunked merge fell back in {} of {cases}",
            cases - taken
        );
    }
}
