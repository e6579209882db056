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
