//! context-keeper's counting engine: the exact BPE counter ([`bpe`]) of o200k_base and
//! cl100k_base, held to equality with tiktoken, and the table-free estimator ([`estimate`]).
//!
//! A crate of its own only so that it is optimized for speed while the rest of context-keeper
//! is optimized for size (see the workspace's Cargo.toml); its API is context-keeper's, which
//! re-exports these modules under the same names.

// NOTE: a panic in wasm poisons the instance for every later call, so the core keeps out every
// construct that can panic. Tests may use them.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

pub mod bpe;
pub mod encoding;
pub mod estimate;

pub use encoding::{CountError, Encoding, UnknownEncoding};
pub use estimate::estimate_tokens;
