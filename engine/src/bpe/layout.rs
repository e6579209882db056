// The layout of the generated vocabulary tables, shared by build.rs (which writes them) and
// src/bpe/vocab.rs (which reads them in place): one definition, so the two cannot drift apart.
//
// The tables of an encoding, each a part of its `<enc>.tables` (below). Each is laid out in
// columns (a field of every record, then the next field), which gzip compresses far better than
// records: the rank column is near random, but the others are mostly small or increasing.
//
// - `<enc>.head`: for each token of three bytes or more, in lexicographic order (its index),
//   two bytes: the length it shares with the token before it, and the length of the rest.
// - `<enc>.tok`: the rest of each of those tokens, back to back (front coding, whose lengths
//   are `<enc>.head`).
// - `<enc>.rank`: the rank of each of those tokens, packed little-endian in the rank width.
// - `<enc>.short`: the rank of each byte, 256 little-endian u32.
// - `<enc>.pre`: the two-byte tokens by first byte. `ROWS + 1` little-endian u32, where row
//   `b0`'s tokens are `[start[b0], start[b0 + 1])`; then each token's second byte; then each
//   token's rank (little-endian u32).
// - `<enc>.grp`: the groups (the tokens of three bytes or more of one prefix, or of one prefix
//   and third byte when the prefix is split), in the order of `<enc>.tok`: their number
//   (little-endian u32), then for each group its prefix (2 bytes, first byte first), then its
//   number of tokens (u16), then the bytes of its tokens in `<enc>.tok` (u32), both
//   little-endian; then for every `CHECKPOINT`-th group where it starts in `<enc>.tok` and its
//   first token's index (u32 each), so a group's start is that checkpoint's plus the groups
//   after it; then the prefix of each split prefix (2 bytes, first byte first), in order.
// - `<enc>.spl`: for each split prefix, `ROWS` little-endian u16: the group of each third
//   byte (`u16::MAX` for none).
//
// A prefix's entry (computed by the reader) holds the two-byte token's rank in its low
// `PAIR_BITS` bits (all ones for none) and above them its group: a group index, or `SPLIT` plus
// its index in `<enc>.spl` (the split prefixes in order), or all ones for none. A two-byte
// token's rank is at least 256, so no entry is 0.

/// Bytes per row: first (and second, third) bytes.
pub(crate) const ROWS: usize = 256;
/// Bits of a prefix entry that hold the two-byte token's rank.
pub(crate) const PAIR_BITS: u32 = 18;
/// No two-byte token.
// NOTE: this and GROUP_NONE are the reader's only (build.rs writes no entries).
#[allow(dead_code)]
pub(crate) const PAIR_NONE: u32 = (1 << PAIR_BITS) - 1;
/// In a prefix entry's group field: the prefix is split, and the rest is its index in
/// `<enc>.spl`.
pub(crate) const SPLIT: u32 = 1 << (31 - PAIR_BITS);
/// No group (as a whole group or split index: never a real one).
#[allow(dead_code)]
pub(crate) const GROUP_NONE: u32 = (1 << (32 - PAIR_BITS)) - 1;
/// Bytes per group of `<enc>.grp` (its three columns).
pub(crate) const GROUP_RECORD: usize = 2 + 2 + 4;
/// Groups per checkpoint of `<enc>.grp`.
pub(crate) const CHECKPOINT: usize = 32;
/// Prefixes with more tokens of three bytes or more than this are split into groups by third
/// byte.
// NOTE: used by build.rs and the run-time assembler (`assemble.rs`) only.
#[allow(dead_code)]
pub(crate) const SPLIT_FROM: u32 = 512;

// - `<enc>.tables`: the tables above in one file, built into the binary or (Cargo feature
//   `host-tables`) read at run time: a `TABLES_HEADER`-byte header, then `.head`, `.tok` (the
//   token bytes), `.rank` (their ranks), `.short`, `.pre`, `.grp` and `.spl` back to back. The
//   header: `TABLES_MAGIC`; the tables' id (little-endian u64, FNV-1a of everything after the
//   header; `bpe_consts.rs` holds the id of the tables a build was made with, so a file from
//   another build is refused); the rank width and the digit flag (u32 each); the `PARTS`
//   lengths (u32 each, in file order).

/// A file of `N` tables after a header of `header_len(N)` bytes (`layout.rs`: `<enc>.tables`
/// and `cl100k.delta`), all little-endian.
#[derive(Debug)]
pub(crate) struct Header<'a, const N: usize> {
    pub(crate) id: u64,
    pub(crate) rank_bits: u32,
    pub(crate) digit_tokens: bool,
    pub(crate) parts: [&'a [u8]; N],
    /// Where the last table ends.
    pub(crate) end: usize,
}

impl<'a, const N: usize> Header<'a, N> {
    /// Reads `file`'s header and slices its tables; `kind` names the file in errors.
    pub(crate) fn read(file: &'a [u8], magic: &[u8; 8], kind: &str) -> Result<Self, String> {
        let header = file
            .get(..header_len(N))
            .ok_or_else(|| format!("{} bytes is too short for the header", file.len()))?;
        if header.get(..magic.len()) != Some(&magic[..]) {
            return Err(format!("not {kind}"));
        }
        let word = |at: usize| {
            let bytes = header
                .get(at..at + 4)
                .and_then(|w| <[u8; 4]>::try_from(w).ok());
            bytes.map_or(0, u32::from_le_bytes)
        };
        let mut parts = [&[][..]; N];
        let mut at = header.len();
        for (i, part) in parts.iter_mut().enumerate() {
            let len = word(24 + 4 * i) as usize;
            *part = file
                .get(at..at.saturating_add(len))
                .ok_or_else(|| format!("{} bytes is too short for its tables", file.len()))?;
            at += len;
        }
        Ok(Header {
            id: u64::from(word(8)) | u64::from(word(12)) << 32,
            rank_bits: word(16),
            digit_tokens: word(20) != 0,
            parts,
            end: at,
        })
    }
}

/// The first bytes of `<enc>.tables`.
pub(crate) const TABLES_MAGIC: [u8; 8] = *b"ckTables";
/// Bytes of `<enc>.tables`'s header.
// NOTE: the assembler's and build.rs's (the reader reads any header by `header_len`).
#[allow(dead_code)]
pub(crate) const TABLES_HEADER: usize = header_len(PARTS);

/// Bytes of the header of a file of `parts` tables: its magic, an id (u64), the rank width and
/// the digit flag (u32 each) and the tables' lengths (u32 each).
pub(crate) const fn header_len(parts: usize) -> usize {
    8 + 8 + 4 + 4 + 4 * parts
}
/// The tables in `<enc>.tables`.
pub(crate) const PARTS: usize = 7;

/// The id of `<enc>.tables`: 64-bit FNV-1a of the bytes after its header.
// NOTE: computed by build.rs; the library only compares ids (and a test recomputes one).
#[allow(dead_code)]
pub(crate) const fn tables_id(body: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < body.len() {
        // Indexing is checked by the loop bound.
        #[allow(clippy::indexing_slicing)]
        let byte = body[i];
        hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

// - `cl100k.delta`: in a build with both encodings' tables built in (the main entry's browser
//   and workerd build), cl100k_base's tables are not built in whole: 85% of its tokens are
//   o200k_base's too, so its `.tables` image is rebuilt on its first use from o200k_base's and
//   this delta (`derive.rs`), and checked against its id. A `DELTA_HEADER`-byte header:
//   `DELTA_MAGIC`; the id of the o200k_base tables it applies to (little-endian u64); the rank
//   width and the digit flag of cl100k_base (u32 each); the `DELTA_PARTS` lengths (u32 each, in
//   file order). Then, back to back:
//   - `.member`: a bit per o200k_base token of three bytes or more, in its `.head` order
//     (least significant bit first): whether the token is cl100k_base's too;
//   - `.xhead` and `.xtok`: cl100k_base's other tokens of three bytes or more, in lexicographic
//     order, front-coded among themselves as `.head` and `.tok` are;
//   - `.rank`, `.short` and `.pre`: cl100k_base's, as in its `.tables`.

/// The first bytes of `cl100k.delta`.
#[allow(dead_code)]
pub(crate) const DELTA_MAGIC: [u8; 8] = *b"ckDelta1";
/// The parts of `cl100k.delta`.
#[allow(dead_code)]
pub(crate) const DELTA_PARTS: usize = 6;
/// Bytes of `cl100k.delta`'s header.
#[allow(dead_code)]
pub(crate) const DELTA_HEADER: usize = header_len(DELTA_PARTS);

// - `<enc>.pairs`: an encoding's tables as built into a binary (every encoding's, but
//   cl100k_base's in a build with o200k_base's too, which is the delta above), decoded into its
//   `.tables` image on first use (`pairs.rs`). A `PAIRS_HEADER`-byte header: `PAIRS_MAGIC`; the
//   id of the `.tables` image it decodes to (little-endian u64); the rank width and the digit
//   flag (u32 each); the `PAIRS_PARTS` lengths (u32 each, in file order). Then, back to back:
//   - `.count`: the number of ranks (little-endian u32; ranks are `0..count`);
//   - `.short`: the rank of each byte, as in `.tables`;
//   - `.model`: the model the pairs are coded with (LEB128 varints): for the left and then
//     the right side, the number of its frequent ranks and each one (ascending, as the
//     difference from the one before); then the symbol frequencies of each table (the left
//     side's, then the right side's by class), as many as its alphabet has symbols;
//   - `.code`: the rANS-coded symbols of each token of two bytes or more, in rank order: its
//     left rank's, then its right rank's;
//   - `.raw`: the low bits of the ranks coded by their bucket, in the same order, least
//     significant bit first.

/// The first bytes of `<enc>.pairs`.
#[allow(dead_code)]
pub(crate) const PAIRS_MAGIC: [u8; 8] = *b"ckPairs1";
/// The parts of `<enc>.pairs`.
#[allow(dead_code)]
pub(crate) const PAIRS_PARTS: usize = 5;
/// Bytes of `<enc>.pairs`'s header.
#[allow(dead_code)]
pub(crate) const PAIRS_HEADER: usize = header_len(PAIRS_PARTS);
