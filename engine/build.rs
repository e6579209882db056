//! Generates the tables of the `bpe` module into `OUT_DIR`, so no rank file is committed and
//! nothing is parsed from text at run time.
//!
//! For each encoding enabled by a Cargo feature (`o200k`, `cl100k`) it writes `<enc>.tables`,
//! one file of six tables after a header (the layout is `src/bpe/layout.rs`, shared with the
//! reader), built into the binary or, with the feature `host-tables`, read at run time:
//! - the token bytes: every token of three bytes or more in lexicographic order, front-coded:
//!   for each token one byte "length shared with the previous token" and one byte "length of
//!   the rest" (`.head`), and the rest (`.tok`). Sorted front-coded bytes compress far better
//!   (gzip) than the same bytes in rank order, and the lengths apart from the bytes better
//!   still.
//! - the ranks: the rank of each of those tokens, in the same order, packed little-endian in
//!   the encoding's rank width.
//! - the rank of each byte; each two-byte prefix's entry (its two-byte token's rank and where
//!   its longer tokens are), by first byte; the directory of the token bytes by prefix (a
//!   prefix of more than `SPLIT_FROM` tokens split into blocks by third byte); and the blocks
//!   of split prefixes. All are read in place.
//! - in `bpe_consts.rs`, the file's id and length, which the reader checks it against.
//!
//! And, for both encodings, `ucd.idx` / `ucd.blk`: a two-level table giving each code point a
//! class byte (letter, number, white space, and the two o200k casing classes), computed from
//! regex-syntax, the same Unicode tables the reference tokenizer's regex uses.
//!
//! The token bytes come from tiktoken-rs itself (`decode_bytes` for every rank), so the tables
//! are exactly the reference's vocabulary.

use std::fmt::Write as _;
use std::path::Path;

#[path = "src/bpe/class_bits.rs"]
mod class_bits;
#[path = "src/bpe/layout.rs"]
mod layout;
use class_bits::{BLOCK_SHIFT, LETTER, LOWERISH, NUMBER, SPACE, UPPERISH};
use layout::{
    tables_id, CHECKPOINT, GROUP_RECORD, PAIR_BITS, PARTS, ROWS, SPLIT, TABLES_HEADER, TABLES_MAGIC,
};

/// Prefixes with more tokens than this are split into blocks by third byte.
const SPLIT_FROM: usize = 512;

/// One group of `<enc>.tok` (see `src/bpe/layout.rs`): the tokens of three bytes or more of a
/// prefix, or of a prefix and third byte.
struct Block {
    prefix: [u8; 2],
    third: Option<u8>,
    count: u32,
    /// Its tokens' bytes in `<enc>.tok`.
    rest: u32,
}

/// Code points per block of the two-level class table.
const BLOCK: u32 = 1 << BLOCK_SHIFT;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/bpe/class_bits.rs");
    println!("cargo:rerun-if-changed=src/bpe/layout.rs");
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo");
    let out = Path::new(&out_dir);
    let mut consts = String::new();

    write_classes(out);
    check_case_folds();

    if std::env::var_os("CARGO_FEATURE_O200K").is_some() {
        let bpe = tiktoken_rs::o200k_base().expect("o200k_base loads");
        write_encoding(out, "o200k", "O200K", &bpe, 199_998, &mut consts);
    }
    if std::env::var_os("CARGO_FEATURE_CL100K").is_some() {
        let bpe = tiktoken_rs::cl100k_base().expect("cl100k_base loads");
        write_encoding(out, "cl100k", "CL100K", &bpe, 100_256, &mut consts);
    }
    std::fs::write(out.join("bpe_consts.rs"), consts).expect("write bpe_consts.rs");
}

fn write_encoding(
    out: &Path,
    file: &str,
    name: &str,
    bpe: &tiktoken_rs::CoreBPE,
    expected: u32,
    consts: &mut String,
) {
    // Ranks are contiguous from 0; the first rank that does not decode ends the vocabulary
    // (special tokens sit above a gap and are never produced by ordinary encoding).
    let mut tokens: Vec<(Vec<u8>, u32)> = Vec::with_capacity(expected as usize);
    for rank in 0..expected {
        let bytes = bpe
            .decode_bytes(&[rank])
            .unwrap_or_else(|_| panic!("{file}: rank {rank} is missing; ranks must be contiguous"));
        tokens.push((bytes, rank));
    }
    assert!(
        bpe.decode_bytes(&[expected]).is_err(),
        "{file}: more than {expected} ordinary ranks"
    );
    tokens.sort_unstable();
    for pair in tokens.windows(2) {
        assert!(pair[0].0 != pair[1].0, "{file}: duplicate token bytes");
    }
    let singles = tokens.iter().filter(|(b, _)| b.len() == 1).count();
    assert_eq!(singles, 256, "{file}: every byte must be a token");
    let max_len = tokens.iter().map(|(b, _)| b.len()).max().unwrap_or(0);
    assert!(max_len <= 128, "{file}: token longer than 128 bytes");
    let total: usize = tokens.iter().map(|(b, _)| b.len()).sum();
    assert!(
        total < 1 << 21,
        "{file}: token bytes exceed the 21-bit offsets"
    );

    let rank_bits = 32 - (expected - 1).leading_zeros();
    assert!(
        rank_bits <= PAIR_BITS,
        "{file}: ranks exceed the prefix entry"
    );
    // One-byte tokens go to their own direct table.
    let mut short = Vec::with_capacity(4 * ROWS);
    for b in 0..=255u8 {
        let rank = tokens
            .iter()
            .find(|(t, _)| t.as_slice() == [b])
            .map(|(_, r)| *r);
        short.extend_from_slice(&rank.expect("every byte is a token").to_le_bytes());
    }
    let long: Vec<&(Vec<u8>, u32)> = tokens.iter().filter(|(t, _)| t.len() >= 3).collect();
    let mut head = Vec::with_capacity(2 * long.len());
    let mut tok = Vec::with_capacity(total);
    let mut ranks = Vec::with_capacity(long.len() * rank_bits as usize / 8 + 8);
    let (mut acc, mut nbits) = (0u64, 0u32);
    let mut prev: &[u8] = &[];
    // A prefix with many tokens is split into blocks by third byte, so the first lookup in
    // it builds the table of a block, not of thousands of tokens.
    let mut per_prefix: std::collections::HashMap<[u8; 2], usize> = Default::default();
    for (bytes, _) in &long {
        *per_prefix.entry([bytes[0], bytes[1]]).or_default() += 1;
    }
    let mut blocks: Vec<Block> = Vec::new();
    for (bytes, rank) in &long {
        let prefix = [bytes[0], bytes[1]];
        let third = (per_prefix[&prefix] > SPLIT_FROM).then_some(bytes[2]);
        if blocks.last().map(|b| (b.prefix, b.third)) != Some((prefix, third)) {
            blocks.push(Block {
                prefix,
                third,
                count: 0,
                rest: 0,
            });
        }
        let shared = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
        head.push(shared as u8);
        head.push((bytes.len() - shared) as u8);
        tok.extend_from_slice(&bytes[shared..]);
        if let Some(b) = blocks.last_mut() {
            b.count += 1;
            b.rest += (bytes.len() - shared) as u32;
        }
        prev = bytes;
        acc |= u64::from(*rank) << nbits;
        nbits += rank_bits;
        while nbits >= 8 {
            ranks.push(acc as u8);
            acc >>= 8;
            nbits -= 8;
        }
    }
    if nbits > 0 {
        ranks.push(acc as u8);
    }
    // Padding so the reader may always load 4 bytes.
    ranks.extend_from_slice(&[0; 4]);

    // Groups: in the order of `<enc>.tok` (prefix order), each group's index fitting a prefix
    // entry; a split prefix's blocks are found through `<enc>.spl`.
    assert!(
        blocks.len() < SPLIT as usize,
        "{file}: too many groups for the prefix entry"
    );
    let mut grp = Vec::with_capacity(4 + GROUP_RECORD * blocks.len());
    grp.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
    for b in &blocks {
        grp.extend_from_slice(&b.prefix);
    }
    for b in &blocks {
        let count = u16::try_from(b.count).expect("a group of fewer than 65536 tokens");
        grp.extend_from_slice(&count.to_le_bytes());
    }
    for b in &blocks {
        grp.extend_from_slice(&b.rest.to_le_bytes());
    }
    // Every `CHECKPOINT`-th group's start in `<enc>.tok` and index, so the reader adds up at
    // most `CHECKPOINT - 1` groups to find one and nothing when it loads.
    let (mut pos, mut index) = (0u32, 0u32);
    for (gi, b) in blocks.iter().enumerate() {
        if gi % CHECKPOINT == 0 {
            grp.extend_from_slice(&pos.to_le_bytes());
            grp.extend_from_slice(&index.to_le_bytes());
        }
        pos += b.rest;
        index += b.count;
    }
    // The split prefixes, in order (their index in `<enc>.spl`), each with its blocks by third
    // byte.
    let mut split_index: std::collections::BTreeMap<[u8; 2], usize> = Default::default();
    let mut spl: Vec<[u16; ROWS]> = Vec::new();
    for (gi, b) in blocks.iter().enumerate() {
        if let Some(third) = b.third {
            let si = *split_index.entry(b.prefix).or_insert_with(|| {
                grp.extend_from_slice(&b.prefix);
                spl.push([u16::MAX; ROWS]);
                spl.len() - 1
            });
            spl[si][usize::from(third)] = gi as u16;
        }
    }
    assert!(
        spl.len() < (SPLIT - 1) as usize,
        "{file}: too many split prefixes"
    );
    let pairs: Vec<&(Vec<u8>, u32)> = tokens.iter().filter(|(t, _)| t.len() == 2).collect();
    let mut pre = Vec::with_capacity(4 * (ROWS + 1) + 5 * pairs.len());
    let mut at = 0u32;
    for b0 in 0..=255u8 {
        pre.extend_from_slice(&at.to_le_bytes());
        at += pairs.iter().filter(|(t, _)| t[0] == b0).count() as u32;
    }
    pre.extend_from_slice(&at.to_le_bytes());
    pre.extend(pairs.iter().map(|(t, _)| t[1]));
    for (_, rank) in &pairs {
        assert!(
            *rank >= 256,
            "{file}: a two-byte token's entry must not be 0"
        );
        pre.extend_from_slice(&rank.to_le_bytes());
    }
    // Whether every string of one to three ASCII digits is one token, which lets the counter
    // count a run of ASCII digits without looking at it (see `split::Pieces::ascii_digits`).
    let is_token = |t: &[u8]| {
        tokens
            .binary_search_by(|(b, _)| b.as_slice().cmp(t))
            .is_ok()
    };
    let digit_tokens = (1..=3u32).all(|width| {
        (0..10u32.pow(width)).all(|n| is_token(format!("{n:0w$}", w = width as usize).as_bytes()))
    });
    let spl: Vec<u8> = spl.iter().flatten().flat_map(|g| g.to_le_bytes()).collect();
    let parts: [&Vec<u8>; PARTS] = [&head, &tok, &ranks, &short, &pre, &grp, &spl];
    let body: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    let id = tables_id(&body);
    let mut tables = Vec::with_capacity(TABLES_HEADER + body.len());
    tables.extend_from_slice(&TABLES_MAGIC);
    tables.extend_from_slice(&id.to_le_bytes());
    tables.extend_from_slice(&rank_bits.to_le_bytes());
    tables.extend_from_slice(&u32::from(digit_tokens).to_le_bytes());
    for part in parts {
        let len = u32::try_from(part.len()).expect("a table under 4 GiB");
        tables.extend_from_slice(&len.to_le_bytes());
    }
    assert_eq!(tables.len(), TABLES_HEADER);
    tables.extend_from_slice(&body);
    std::fs::write(out.join(format!("{file}.tables")), &tables).expect("write tables");
    let _ = writeln!(consts, "pub(crate) const {name}_TABLES_ID: u64 = {id};");
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_TABLES_LEN: usize = {};",
        tables.len()
    );
}

fn class_ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::parse(pattern).expect("class pattern parses");
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        other => panic!("{pattern} is not a Unicode class: {other:?}"),
    }
}

fn write_classes(out: &Path) {
    let mut class = vec![0u8; 0x11_0000];
    for (pattern, bit) in [
        (r"\p{L}", LETTER),
        (r"\p{N}", NUMBER),
        (r"\s", SPACE),
        (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UPPERISH),
        (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LOWERISH),
    ] {
        for (lo, hi) in class_ranges(pattern) {
            for c in lo..=hi {
                class[c as usize] |= bit;
            }
        }
    }
    let mut blocks: Vec<&[u8]> = Vec::new();
    let mut ids: std::collections::HashMap<&[u8], usize> = std::collections::HashMap::new();
    let mut index: Vec<u8> = Vec::new();
    for chunk in class.chunks(BLOCK as usize) {
        let id = *ids.entry(chunk).or_insert_with(|| {
            blocks.push(chunk);
            blocks.len() - 1
        });
        index.extend_from_slice(&(id as u16).to_le_bytes());
    }
    assert!(blocks.len() < 1 << 16);
    std::fs::write(out.join("ucd.idx"), &index).expect("write ucd.idx");
    std::fs::write(out.join("ucd.blk"), blocks.concat()).expect("write ucd.blk");
}

/// The pre-tokenizers hard-code which characters `(?i:...)` lets stand for the letters of the
/// English contractions; fail the build if regex-syntax (the reference's regex) disagrees.
fn check_case_folds() {
    let expect: [(&str, &[u32]); 8] = [
        ("s", &['S' as u32, 's' as u32, 0x17F]),
        ("d", &['D' as u32, 'd' as u32]),
        ("m", &['M' as u32, 'm' as u32]),
        ("t", &['T' as u32, 't' as u32]),
        ("l", &['L' as u32, 'l' as u32]),
        ("v", &['V' as u32, 'v' as u32]),
        ("e", &['E' as u32, 'e' as u32]),
        ("r", &['R' as u32, 'r' as u32]),
    ];
    for (letter, chars) in expect {
        let got: Vec<u32> = class_ranges(&format!("(?i:[{letter}])"))
            .into_iter()
            .flat_map(|(lo, hi)| lo..=hi)
            .collect();
        assert_eq!(got, chars, "case folds of {letter}");
    }
}
