//! A fast exact token counter for o200k_base and cl100k_base, held to equality with
//! tiktoken (see `tests/bpe_equality.rs`).
//!
//! Where the time goes, and what this engine does instead of tiktoken-rs:
//! - Pre-tokenizing: hand-written scanners ([`split`]) replace the backtracking regex; each
//!   character is looked at a bounded number of times, so every input class is linear.
//! - Vocabulary: `build.rs` writes each encoding's tokens (sorted, front-coded, ranks
//!   bit-packed, with a directory by two-byte prefix) into the binary; the first use of an
//!   encoding reads the directory, and each prefix's tokens are decoded and hashed when first
//!   needed ([`vocab`]). There is no base64 or text parsing, no decoder, no regex
//!   compilation. An encoding never used is never decoded. With the Cargo feature
//!   `host-tables` (the main entry's Node build) the same tables are a file read on first use
//!   instead ([`host`]); with `pairs-tables` (the `/o200k` entry) they are built in as the
//!   entropy-coded pairs of earlier tokens each token joins, 192 KB smaller in gzip, and
//!   decoded into the same tables on first use (`pairs`; about 55 ms in V8, once).
//! - Merging: tiktoken's rank merge for short pieces (with a small cache of recent pieces'
//!   counts), a heap merge for longer ones, and for pieces of 20 KiB and more a merge chunk by
//!   chunk whose every cut is proven not to change the result (so a megabyte of one letter is
//!   fast and needs bounded memory; see `Vocab::merge_chunked`).
//! - Digits: a run of ASCII digits is counted from its length, a token per three digits
//!   (see `split::Pieces::ascii_digits`).
//!
//! Special-token text such as `<|endoftext|>` is counted as ordinary text, as
//! `context_keeper::count_tokens` does.

#[cfg(any(cl100k_delta, pairs_tables))]
mod assemble;
mod class;
#[cfg(cl100k_delta)]
mod derive;
#[cfg(feature = "host-tables")]
mod host;
mod layout;
#[cfg(pairs_tables)]
mod pairs;
mod split;
mod vocab;

use std::cell::RefCell;
use std::sync::OnceLock;

use crate::encoding::{CountError, Encoding};
use split::{Pattern, Pieces};
use vocab::{Scratch, Source, Vocab};

// NOTE: a build with one encoding uses only that encoding's constants.
#[allow(dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/bpe_consts.rs"));
}

/// Encoding `$name`'s `<name>.tables` image (`$len` bytes, of id `$id`, in this build): built
/// into the binary, or (Cargo feature `pairs-tables`) decoded once, on its first use, from the
/// `<name>.pairs` built in instead (see [`pairs`]), or (Cargo feature `host-tables`) read from
/// the host now (see [`host`]).
#[cfg(any(feature = "o200k", feature = "cl100k"))]
macro_rules! tables_file {
    ($name:literal, $len:expr, $id:expr) => {{
        #[cfg(all(not(feature = "host-tables"), not(pairs_tables)))]
        let file: Result<&'static [u8], String> = Ok(include_bytes!(concat!(
            env!("OUT_DIR"),
            "/",
            $name,
            ".tables"
        )));
        #[cfg(all(not(feature = "host-tables"), pairs_tables))]
        let file: Result<&'static [u8], String> = {
            static IMAGE: OnceLock<Result<&'static [u8], String>> = OnceLock::new();
            IMAGE
                .get_or_init(|| {
                    let coded: &[u8] =
                        include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".pairs"));
                    pairs::tables(coded, $id).map(|image| &*Box::leak(image.into_boxed_slice()))
                })
                .clone()
        };
        #[cfg(feature = "host-tables")]
        let file = host::read($name, $len);
        file
    }};
}

type Loaded = Result<Vocab, String>;

/// An encoding's tables.
fn source(encoding: Encoding) -> Result<Source, String> {
    let file: Result<(&'static [u8], u64), String> = match encoding {
        #[cfg(feature = "o200k")]
        Encoding::O200kBase => tables_file!(
            "o200k",
            generated::O200K_TABLES_LEN,
            generated::O200K_TABLES_ID
        )
        .map(|file| (file, generated::O200K_TABLES_ID)),
        #[cfg(all(feature = "cl100k", not(cl100k_delta)))]
        Encoding::Cl100kBase => tables_file!(
            "cl100k",
            generated::CL100K_TABLES_LEN,
            generated::CL100K_TABLES_ID
        )
        .map(|file| (file, generated::CL100K_TABLES_ID)),
        // Rebuilt from o200k_base's tables and a delta (see [`derive`]).
        #[cfg(cl100k_delta)]
        Encoding::Cl100kBase => source(Encoding::O200kBase).and_then(|base| {
            let delta: &'static [u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.delta"));
            derive::derive(
                &base,
                generated::O200K_TABLES_ID,
                delta,
                generated::CL100K_TABLES_ID,
            )
            .map(|file| (file, generated::CL100K_TABLES_ID))
        }),
        #[allow(unreachable_patterns)]
        _ => Err("this build was made without the Cargo feature for it".into()),
    };
    file.and_then(|(file, id)| Source::parse(file, id))
}

fn vocab(encoding: Encoding) -> Result<&'static Vocab, CountError> {
    static O200K: OnceLock<Loaded> = OnceLock::new();
    static CL100K: OnceLock<Loaded> = OnceLock::new();
    let cell = match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    };
    let loaded = cell.get_or_init(|| source(encoding).and_then(Vocab::load));
    loaded
        .as_ref()
        .map_err(|reason| CountError::TablesUnavailable {
            encoding,
            reason: reason.clone(),
        })
}

fn pattern(encoding: Encoding) -> Pattern {
    match encoding {
        Encoding::O200kBase => Pattern::O200k,
        Encoding::Cl100kBase => Pattern::Cl100k,
    }
}

/// [`pattern`] for counting and encoding, which reach it only once `encoding`'s tables have
/// loaded. In a build with one encoding's tables that is the only pattern, and the constant
/// leaves the other scanner out of the counting code (which V8 compiles on a first count).
fn built_pattern(encoding: Encoding) -> Pattern {
    if cfg!(all(feature = "o200k", not(feature = "cl100k"))) {
        return Pattern::O200k;
    }
    if cfg!(all(feature = "cl100k", not(feature = "o200k"))) {
        return Pattern::Cl100k;
    }
    pattern(encoding)
}

/// Makes `reader` the way `<enc>.tables` files are read (Cargo feature `host-tables`; see
/// [`host`]): the bindings register Node's.
#[cfg(all(feature = "host-tables", target_arch = "wasm32"))]
pub use host::set_reader as set_table_reader;

/// Loads `encoding`'s tables now rather than on first use. Idempotent.
///
/// # Errors
/// [`CountError::TablesUnavailable`] if the encoding was left out of this build (Cargo
/// features `o200k`, `cl100k`) or its tables are corrupt.
pub fn load(encoding: Encoding) -> Result<(), CountError> {
    vocab(encoding).map(|_| ())
}

/// The exact number of tokens `text` encodes to, equal to tiktoken's
/// `encode_ordinary(text).len()`.
///
/// ```
/// use context_keeper_engine::{bpe, Encoding};
/// assert_eq!(bpe::count("hello world", Encoding::O200kBase).unwrap(), 2);
/// assert_eq!(bpe::count("<|endoftext|>", Encoding::Cl100kBase).unwrap(), 7);
/// ```
///
/// # Errors
/// As [`load`].
pub fn count(text: &str, encoding: Encoding) -> Result<usize, CountError> {
    if text.is_empty() {
        return Ok(0);
    }
    let vocab = vocab(encoding)?;
    let digit_tokens = vocab.digit_tokens();
    let count = |scratch: &mut Scratch| -> usize {
        let mut pieces = Pieces::new(text, built_pattern(encoding));
        let mut n = 0;
        loop {
            // NOTE: every one- to three-digit ASCII string is one token (build.rs checks), so
            // a run of ASCII digits is counted by its length alone.
            if digit_tokens {
                let k = pieces.ascii_digits();
                if k > 0 {
                    n += k;
                    continue;
                }
            }
            let Some(piece) = pieces.next() else { break };
            n += vocab.count_piece(piece, scratch);
        }
        n
    };
    // NOTE: one scratch (merge buffers and the cache of recent pieces' counts) per encoding
    // and thread, kept between calls; a re-entrant call (none today) would use a fresh one.
    thread_local! {
        static SCRATCH: [RefCell<Scratch>; 2] = Default::default();
    }
    let slot = match encoding {
        Encoding::O200kBase => 0,
        Encoding::Cl100kBase => 1,
    };
    Ok(SCRATCH.with(
        |all| match all.get(slot).and_then(|cell| cell.try_borrow_mut().ok()) {
            Some(mut scratch) => {
                let n = count(&mut scratch);
                scratch.trim();
                n
            }
            None => count(&mut Scratch::default()),
        },
    ))
}

/// The ranks `text` encodes to, equal to tiktoken's `encode_ordinary(text)`.
///
/// # Errors
/// As [`load`].
pub fn encode(text: &str, encoding: Encoding) -> Result<Vec<u32>, CountError> {
    let vocab = vocab(encoding)?;
    let mut scratch = Scratch::default();
    let mut out = Vec::with_capacity(text.len() / 4);
    for piece in Pieces::new(text, built_pattern(encoding)) {
        vocab.encode_piece(piece, &mut scratch, &mut out);
    }
    Ok(out)
}

/// The pre-tokenizer's pieces of `text`, for tests and diagnostics. Needs no tables.
pub fn pieces(text: &str, encoding: Encoding) -> impl Iterator<Item = &[u8]> + '_ {
    Pieces::new(text, pattern(encoding))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tables file from another build, cut short, too long or of another kind is refused.
    // (Built without an encoding, as `cargo clippy --no-default-features` checks it, there is
    // no tables file.)
    #[cfg(all(feature = "o200k", feature = "cl100k"))]
    #[test]
    fn tables_files_are_checked() {
        use layout::{tables_id, TABLES_HEADER};
        let built = [
            ("o200k", generated::O200K_TABLES_ID),
            ("cl100k", generated::CL100K_TABLES_ID),
        ];
        for (name, id) in built {
            let path = format!("{}/{name}.tables", env!("OUT_DIR"));
            let file: &'static [u8] = Box::leak(std::fs::read(path).unwrap().into_boxed_slice());
            assert_eq!(tables_id(&file[TABLES_HEADER..]), id, "{name}");
            assert!(Source::parse(file, id).is_ok(), "{name}");

            let other = Source::parse(file, id ^ 1).unwrap_err();
            assert!(other.contains("another build"), "{other}");
            assert!(Source::parse(&file[..file.len() - 1], id).is_err());
            assert!(Source::parse(&file[..TABLES_HEADER - 1], id).is_err());
            let mut longer = file.to_vec();
            longer.push(0);
            assert!(Source::parse(Box::leak(longer.into_boxed_slice()), id).is_err());
            let mut renamed = file.to_vec();
            renamed[0] ^= 1;
            let not = Source::parse(Box::leak(renamed.into_boxed_slice()), id).unwrap_err();
            assert!(not.contains("not a tables file"), "{not}");
        }
    }

    /// The digit fast path of [`count`] is taken in both encodings (and is exact:
    /// `tests/bpe_equality.rs`).
    #[test]
    fn digit_strings_are_tokens() {
        for encoding in Encoding::ALL {
            assert!(vocab(encoding).unwrap().digit_tokens(), "{encoding}");
        }
    }
}
