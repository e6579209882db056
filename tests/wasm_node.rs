//! The wasm tests in Node: `wasm-pack test --node -- --test wasm_node`.
#![cfg(target_arch = "wasm32")]

#[path = "wasm/common.rs"]
mod common;
