//! Generates the tables of the `bpe` module into `OUT_DIR`, so no rank file is committed and
//! nothing is parsed from text at run time.
//!
//! For each encoding enabled by a Cargo feature (`o200k`, `cl100k`) it writes `<enc>.tables`,
//! one file of seven tables after a header (the layout is `src/bpe/layout.rs`, shared with the
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
//! The tables are assembled by `src/bpe/assemble.rs`, which the library shares: with both
//! encodings enabled it also writes `cl100k.delta`, cl100k_base's tables as a delta from
//! o200k_base's, which the build with both built in (not `host-tables`: the cfg
//! `cl100k_delta`) carries instead of `cl100k.tables` and rebuilds the same image from on first
//! use (`src/bpe/derive.rs`).
//!
//! And, for both encodings, `ucd.idx` / `ucd.blk`: a two-level table giving each code point a
//! class byte (letter, number, white space, and the two o200k casing classes), computed from
//! regex-syntax, the same Unicode tables the reference tokenizer's regex uses.
//!
//! The token bytes come from tiktoken-rs itself (`decode_bytes` for every rank), so the tables
//! are exactly the reference's vocabulary.

use std::fmt::Write as _;
use std::path::Path;

#[path = "src/bpe/assemble.rs"]
#[allow(dead_code)]
mod assemble;
#[path = "src/bpe/class_bits.rs"]
mod class_bits;
#[path = "src/bpe/layout.rs"]
#[allow(dead_code)]
mod layout;
#[path = "src/bpe/pairs.rs"]
#[allow(dead_code)]
mod pairs;
use assemble::{Assembler, Given};
use class_bits::{BLOCK_SHIFT, LETTER, LOWERISH, NUMBER, SPACE, UPPERISH};
use layout::{DELTA_HEADER, DELTA_MAGIC, DELTA_PARTS, PAIR_BITS, ROWS};

/// Code points per block of the two-level class table.
const BLOCK: u32 = 1 << BLOCK_SHIFT;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/bpe/class_bits.rs");
    println!("cargo:rerun-if-changed=src/bpe/layout.rs");
    println!("cargo:rerun-if-changed=src/bpe/assemble.rs");
    println!("cargo:rerun-if-changed=src/bpe/pairs.rs");
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo");
    let out = Path::new(&out_dir);
    let mut consts = String::new();

    write_classes(out);
    check_case_folds();

    let feature = |name: &str| std::env::var_os(format!("CARGO_FEATURE_{name}")).is_some();
    let o200k = feature("O200K").then(|| {
        let bpe = tiktoken_rs::o200k_base().expect("o200k_base loads");
        write_encoding(out, "o200k", "O200K", &bpe, 199_998, &mut consts)
    });
    let cl100k = feature("CL100K").then(|| {
        let bpe = tiktoken_rs::cl100k_base().expect("cl100k_base loads");
        write_encoding(out, "cl100k", "CL100K", &bpe, 100_256, &mut consts)
    });
    // With both encodings built in, cl100k_base's tables are built in as a delta from
    // o200k_base's (`src/bpe/derive.rs`): the main entry's browser build is 130 KB (gzip)
    // smaller for it. The host-tables build reads each `.tables` file whole.
    println!("cargo::rustc-check-cfg=cfg(cl100k_delta)");
    println!("cargo::rustc-check-cfg=cfg(pairs_tables)");
    let built_in = !feature("HOST_TABLES");
    if let (Some(base), Some(derived)) = (&o200k, &cl100k) {
        write_delta(out, "cl100k", "CL100K", base, derived, &mut consts);
        if built_in {
            println!("cargo:rustc-cfg=cl100k_delta");
        }
    }
    // With `pairs-tables`, tables built into the binary are built in as their pairs
    // (src/bpe/pairs.rs); but cl100k_base's, where o200k_base's are built in too, are the delta
    // above.
    if built_in && feature("PAIRS_TABLES") {
        if let Some(o200k) = &o200k {
            write_pairs(out, "o200k", o200k);
        }
        if let (Some(cl100k), None) = (&cl100k, &o200k) {
            write_pairs(out, "cl100k", cl100k);
        }
        if o200k.is_some() || cl100k.is_some() {
            println!("cargo:rustc-cfg=pairs_tables");
        }
    }
    std::fs::write(out.join("bpe_consts.rs"), consts).expect("write bpe_consts.rs");
}

/// What [`write_encoding`] keeps of an encoding for [`write_delta`].
struct Written {
    /// Every token with its rank, in lexicographic order.
    tokens: Vec<(Vec<u8>, u32)>,
    ranks: Vec<u8>,
    short: Vec<u8>,
    pre: Vec<u8>,
    rank_bits: u32,
    digit_tokens: bool,
    id: u64,
}

fn write_encoding(
    out: &Path,
    file: &str,
    name: &str,
    bpe: &tiktoken_rs::CoreBPE,
    expected: u32,
    consts: &mut String,
) -> Written {
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
    // Tokens of three bytes or more: front-coded by the assembler, their ranks packed here.
    let long: Vec<&(Vec<u8>, u32)> = tokens.iter().filter(|(t, _)| t.len() >= 3).collect();
    let mut assembler = Assembler::with_capacity(long.len(), total);
    let mut ranks = Vec::with_capacity(long.len() * rank_bits as usize / 8 + 8);
    for (bytes, _) in &long {
        assembler
            .push(bytes)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    assemble::pack_bits(long.iter().map(|(_, rank)| *rank), rank_bits, &mut ranks);
    // Padding so the reader may always load 4 bytes.
    ranks.extend_from_slice(&[0; 4]);

    let pairs: Vec<([u8; 2], u32)> = tokens
        .iter()
        .filter_map(|(t, rank)| Some((<[u8; 2]>::try_from(t.as_slice()).ok()?, *rank)))
        .collect();
    assert!(
        pairs.iter().all(|(_, rank)| *rank >= 256),
        "{file}: a two-byte token's entry must not be 0"
    );
    let pre = assemble::two_byte_table(&pairs);
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
    let (tables, id) = assembler
        .finish(&Given {
            ranks: &ranks,
            short: &short,
            pre: &pre,
            rank_bits,
            digit_tokens,
        })
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    std::fs::write(out.join(format!("{file}.tables")), &tables).expect("write tables");
    let _ = writeln!(consts, "pub(crate) const {name}_TABLES_ID: u64 = {id};");
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_TABLES_LEN: usize = {};",
        tables.len()
    );
    Written {
        tokens,
        ranks,
        short,
        pre,
        rank_bits,
        digit_tokens,
        id,
    }
}

/// Writes `<file>.delta`: `derived`'s tables as a delta from `base`'s (layout in
/// `src/bpe/layout.rs`), for `src/bpe/derive.rs` to rebuild them from.
fn write_delta(
    out: &Path,
    file: &str,
    name: &str,
    base: &Written,
    derived: &Written,
    consts: &mut String,
) {
    let long = |w: &Written| -> Vec<Vec<u8>> {
        w.tokens
            .iter()
            .filter(|(t, _)| t.len() >= 3)
            .map(|(t, _)| t.clone())
            .collect()
    };
    let (base_long, derived_long) = (long(base), long(derived));
    let in_base: std::collections::HashSet<&[u8]> = base_long.iter().map(Vec::as_slice).collect();
    let in_derived: std::collections::HashSet<&[u8]> =
        derived_long.iter().map(Vec::as_slice).collect();
    let mut member = vec![0u8; base_long.len().div_ceil(8)];
    for (i, t) in base_long.iter().enumerate() {
        if in_derived.contains(t.as_slice()) {
            member[i / 8] |= 1 << (i % 8);
        }
    }
    let (mut xhead, mut xtok) = (Vec::new(), Vec::new());
    let mut prev: &[u8] = &[];
    for t in derived_long
        .iter()
        .filter(|t| !in_base.contains(t.as_slice()))
    {
        let shared = assemble::common_prefix(prev, t);
        xhead.push(shared as u8);
        xhead.push((t.len() - shared) as u8);
        xtok.extend_from_slice(&t[shared..]);
        prev = t;
    }
    let parts: [&Vec<u8>; DELTA_PARTS] = [
        &member,
        &xhead,
        &xtok,
        &derived.ranks,
        &derived.short,
        &derived.pre,
    ];
    let mut delta = Vec::new();
    delta.extend_from_slice(&DELTA_MAGIC);
    delta.extend_from_slice(&base.id.to_le_bytes());
    delta.extend_from_slice(&derived.rank_bits.to_le_bytes());
    delta.extend_from_slice(&u32::from(derived.digit_tokens).to_le_bytes());
    for part in parts {
        let len = u32::try_from(part.len()).expect("a table under 4 GiB");
        delta.extend_from_slice(&len.to_le_bytes());
    }
    assert_eq!(delta.len(), DELTA_HEADER);
    for part in parts {
        delta.extend_from_slice(part);
    }
    std::fs::write(out.join(format!("{file}.delta")), &delta).expect("write delta");
    let _ = writeln!(
        consts,
        "pub(crate) const {name}_DELTA_LEN: usize = {};",
        delta.len()
    );
}

/// Writes `<file>.pairs` (layout.rs): the tables of `written` as the range-coded pairs of
/// earlier tokens each token joins.
fn write_pairs(out: &Path, file: &str, written: &Written) {
    let mut by_rank: Vec<&[u8]> = vec![&[]; written.tokens.len()];
    for (bytes, rank) in &written.tokens {
        by_rank[*rank as usize] = bytes;
    }
    let file_bytes = pairs::file(
        &by_rank,
        &written.short,
        written.rank_bits,
        written.digit_tokens,
        written.id,
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"));
    std::fs::write(out.join(format!("{file}.pairs")), &file_bytes).expect("write pairs");
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
