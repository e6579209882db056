//! context-keeper keeps an LLM conversation inside its model's context window without losing
//! anything: exact token counts (o200k_base, cl100k_base) and a table-free estimator
//! ([`count`], [`counting`]), the model registry ([`model`]), the message model that reads,
//! validates and repairs OpenAI, Anthropic and AI SDK conversations ([`messages`]), and the
//! context layer that offloads, prunes, evicts and compacts, with the keeper that runs them
//! all ([`context`]). [`options`] reads any of their options from JSON, naming the field at
//! fault.
//!
//! The crate is split by target. Every module here except [`bindings`] is pure Rust that knows
//! nothing of JavaScript and is tested on the host with `cargo test`. The `bindings` module is
//! compiled for `wasm32` only: it converts values and drives JS callbacks, nothing more.
//!
//! ```
//! use context_keeper::{count_tokens, Encoding};
//! assert_eq!(count_tokens("hello world", Encoding::O200kBase).unwrap(), 2);
//! ```

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

// NOTE: the counting engine is a crate of its own (engine/), built for speed while this one is
// built for size; its modules are this crate's API under the same names.
pub use context_keeper_engine::{bpe, encoding, estimate};
pub mod context;
pub mod count;
pub mod counting;
mod json;
pub mod messages;
pub mod model;
pub mod options;
mod sort;
mod text_counts;

// NOTE: public so the wasm-bindgen tests can call the exports as JS would; not a Rust API.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod bindings;

pub use count::count_tokens;
pub use encoding::{CountError, Encoding, UnknownEncoding};
pub use estimate::estimate_tokens;
pub use model::{encoding_for_model, resolve_encoding, ResolveError, UnknownModel};
