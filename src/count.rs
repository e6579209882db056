//! Exact token counts with the BPE encodings OpenAI's models use.
//!
//! Counting runs on the crate's own engine ([`crate::bpe`]), held to equality with tiktoken-rs
//! and npm tiktoken by the tests. Each encoding's tables are built once per process (per wasm
//! instance) on first use; an encoding that is never used is never built.

// NOTE: the types live in the leaf module `encoding` (so `bpe` need not import this one); they
// are re-exported here so `context_keeper::count::Encoding` keeps working.
pub use crate::encoding::{CountError, Encoding, UnknownEncoding};

/// The exact number of tokens `text` encodes to. Special-token text such as `<|endoftext|>` is
/// counted as ordinary text, as a provider does with message content.
///
/// # Errors
/// [`CountError::NotBuilt`] if this build left the encoding out (even for empty `text`, so a
/// missing encoding shows on the first call), [`CountError::TablesUnavailable`] if its tables
/// are corrupt.
///
/// ```
/// use context_keeper::{count_tokens, Encoding};
/// assert_eq!(count_tokens("", Encoding::Cl100kBase).unwrap(), 0);
/// assert_eq!(count_tokens("<|endoftext|>", Encoding::Cl100kBase).unwrap(), 7);
/// ```
pub fn count_tokens(text: &str, encoding: Encoding) -> Result<usize, CountError> {
    if !encoding.is_built() {
        return Err(CountError::NotBuilt { encoding });
    }
    crate::bpe::count(text, encoding)
}

/// Whether this build holds no encoding's tables (Cargo: neither feature `o200k` nor `cl100k`;
/// npm: `context-keeper/lite`). Such a build counts messages, tool definitions and the tiers'
/// figures with [`crate::estimate_tokens`] and marks every count not exact; [`count_tokens`],
/// the exact count of one text, still refuses. A build that holds one encoding counts with it
/// and refuses the other, so an exact entry never passes an estimate off for a count.
pub const ESTIMATOR_ONLY: bool =
    !(Encoding::O200kBase.is_built() || Encoding::Cl100kBase.is_built());
