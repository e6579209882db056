// The layout of the generated vocabulary tables, shared by build.rs (which writes them) and
// src/bpe/vocab.rs (which reads them in place): one definition, so the two cannot drift apart.
//
// The tables of an encoding, each a part of its `<enc>.tables` (below):
//
// - `<enc>.short`: the rank of each byte, 256 little-endian u32.
// - `<enc>.pre`: the prefix entries by first byte. `ROWS + 1` little-endian u32, where row `b0`'s
//   records are `[start[b0], start[b0 + 1])`; then the records, `PREFIX_RECORD` bytes each: the
//   second byte, then the prefix's entry (little-endian u32, see below). Only prefixes with a
//   two-byte token or longer tokens have a record.
// - `<enc>.grp`: one `GROUP_RECORD`-byte record per group (the tokens of three bytes or more of
//   one prefix, or of one prefix and third byte when the prefix is split): the prefix (2
//   bytes, first byte first), the number of tokens (u16), where its first token starts in
//   `<enc>.tok` (u32), that token's index (u32), the total bytes of its tokens (u32), all
//   little-endian. The groups of whole prefixes come first, then the blocks of split prefixes.
// - `<enc>.spl`: for each split prefix, `ROWS` little-endian u16: the group of each third
//   byte (`u16::MAX` for none).
//
// A prefix entry holds the two-byte token's rank in its low `PAIR_BITS` bits (all ones for
// none) and above them its group: a group index, or `SPLIT` plus its index in `<enc>.spl`, or
// all ones for none. A two-byte token's rank is at least 256, so no entry is 0.

/// Bytes per row: first (and second, third) bytes.
pub(crate) const ROWS: usize = 256;
/// Bits of a prefix entry that hold the two-byte token's rank.
pub(crate) const PAIR_BITS: u32 = 18;
/// No two-byte token.
pub(crate) const PAIR_NONE: u32 = (1 << PAIR_BITS) - 1;
/// In a prefix entry's group field: the prefix is split, and the rest is its index in
/// `<enc>.spl`.
pub(crate) const SPLIT: u32 = 1 << (31 - PAIR_BITS);
/// No group (as a whole group or split index: never a real one).
pub(crate) const GROUP_NONE: u32 = (1 << (32 - PAIR_BITS)) - 1;
/// Bytes per record of `<enc>.pre`.
pub(crate) const PREFIX_RECORD: usize = 5;
/// Bytes per record of `<enc>.grp`.
pub(crate) const GROUP_RECORD: usize = 16;

// - `<enc>.tables`: the tables above in one file, built into the binary or (Cargo feature
//   `host-tables`) read at run time: a `TABLES_HEADER`-byte header, then `.tok` (the token
//   bytes), `.rank` (their ranks), `.short`, `.pre`, `.grp` and `.spl` back to back. The
//   header: `TABLES_MAGIC`; the tables' id (little-endian u64, FNV-1a of everything after the
//   header; `bpe_consts.rs` holds the id of the tables a build was made with, so a file from
//   another build is refused); the rank width and the digit flag (u32 each); the six lengths
//   (u32 each, in file order).

/// The first bytes of `<enc>.tables`.
pub(crate) const TABLES_MAGIC: [u8; 8] = *b"ckTables";
/// Bytes of `<enc>.tables`'s header.
pub(crate) const TABLES_HEADER: usize = 8 + 8 + 4 + 4 + 6 * 4;

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
