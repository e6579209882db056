//! Generates the tables of the `bpe` module into `OUT_DIR`, so no rank file is committed and
//! nothing is parsed from text at run time.
//!
//! For each encoding enabled by a Cargo feature (`o200k`, `cl100k`) it writes:
//! - `<enc>.tok`: the bytes of every token of three bytes or more in lexicographic order,
//!   front-coded: for each token one byte "length shared with the previous token", one byte
//!   "length of the rest", the rest. Sorted front-coded bytes compress far better (gzip) than
//!   the same bytes in rank order.
//! - `<enc>.rank`: the rank of each token of `<enc>.tok`, in the same order, packed
//!   little-endian in `RANK_BITS` bits each.
//! - `<enc>.grp`: the directory of `<enc>.tok` by two-byte prefix, so the reader can decode
//!   one prefix's tokens without the others. A prefix of more than `SPLIT_FROM` tokens is
//!   split into blocks by third byte. For each block in order: the prefix (2 bytes), the
//!   third byte and 1 if split (else 0 and 0), its token count (u16), their bytes (u32) and
//!   their length in `<enc>.tok` (u32).
//! - `<enc>.short`: the rank of each byte (256 u32), then every two-byte token as its bytes
//!   and its rank (u32).
//! - in `bpe_consts.rs`, its sizes, and whether every one- to three-digit ASCII string is a
//!   token (`<ENC>_DIGIT_TOKENS`).
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
use class_bits::{BLOCK_SHIFT, LETTER, LOWERISH, NUMBER, SPACE, UPPERISH};

/// Prefixes with more tokens than this are split into blocks by third byte.
const SPLIT_FROM: usize = 512;

/// Code points per block of the two-level class table.
const BLOCK: u32 = 1 << BLOCK_SHIFT;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/bpe/class_bits.rs");
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
    // One- and two-byte tokens go to their own direct tables.
    let mut short = Vec::with_capacity(2048 + 6 * 8192);
    for b in 0..=255u8 {
        let rank = tokens
            .iter()
            .find(|(t, _)| t.as_slice() == [b])
            .map(|(_, r)| *r);
        short.extend_from_slice(&rank.expect("every byte is a token").to_le_bytes());
    }
    for (bytes, rank) in tokens.iter().filter(|(t, _)| t.len() == 2) {
        short.extend_from_slice(bytes);
        short.extend_from_slice(&rank.to_le_bytes());
    }
    let long: Vec<&(Vec<u8>, u32)> = tokens.iter().filter(|(t, _)| t.len() >= 3).collect();
    let mut tok = Vec::with_capacity(total);
    let mut ranks = Vec::with_capacity(long.len() * rank_bits as usize / 8 + 8);
    let mut groups: Vec<u8> = Vec::new();
    let (mut acc, mut nbits) = (0u64, 0u32);
    let mut prev: &[u8] = &[];
    // A prefix with many tokens is split into blocks by third byte, so the first lookup in
    // it builds the table of a block, not of thousands of tokens.
    let mut per_prefix: std::collections::HashMap<[u8; 2], usize> = Default::default();
    for (bytes, _) in &long {
        *per_prefix.entry([bytes[0], bytes[1]]).or_default() += 1;
    }
    // (prefix, third byte or none, tokens, bytes, stream bytes) of the current block.
    type Block = ([u8; 2], Option<u8>, u32, u32, u32);
    let mut group: Option<Block> = None;
    let flush = |groups: &mut Vec<u8>, g: Option<Block>| {
        if let Some((prefix, third, count, bytes, stream)) = g {
            let count = u16::try_from(count).expect("a group of fewer than 65536 tokens");
            groups.extend_from_slice(&prefix);
            groups.push(third.unwrap_or(0));
            groups.push(u8::from(third.is_some()));
            groups.extend_from_slice(&count.to_le_bytes());
            groups.extend_from_slice(&bytes.to_le_bytes());
            groups.extend_from_slice(&stream.to_le_bytes());
        }
    };
    for (bytes, rank) in &long {
        let prefix = [bytes[0], bytes[1]];
        let third = (per_prefix[&prefix] > SPLIT_FROM).then_some(bytes[2]);
        if group.map(|g| (g.0, g.1)) != Some((prefix, third)) {
            flush(&mut groups, group);
            group = Some((prefix, third, 0, 0, 0));
        }
        let shared = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
        tok.push(shared as u8);
        tok.push((bytes.len() - shared) as u8);
        tok.extend_from_slice(&bytes[shared..]);
        if let Some(g) = group.as_mut() {
            g.2 += 1;
            g.3 += bytes.len() as u32;
            g.4 += 2 + (bytes.len() - shared) as u32;
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
    flush(&mut groups, group);
    if nbits > 0 {
        ranks.push(acc as u8);
    }
    // Padding so the reader may always load 4 bytes.
    ranks.extend_from_slice(&[0; 4]);
    std::fs::write(out.join(format!("{file}.tok")), &tok).expect("write tokens");
    std::fs::write(out.join(format!("{file}.rank")), &ranks).expect("write ranks");
    std::fs::write(out.join(format!("{file}.short")), &short).expect("write short tokens");
    std::fs::write(out.join(format!("{file}.grp")), &groups).expect("write groups");
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_TOKENS: usize = {};",
        long.len()
    );
    let long_bytes: usize = long.iter().map(|(b, _)| b.len()).sum();
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_BYTES: usize = {long_bytes};"
    );
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_RANK_BITS: u32 = {rank_bits};"
    );
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
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_DIGIT_TOKENS: bool = {digit_tokens};"
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
