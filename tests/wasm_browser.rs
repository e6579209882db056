//! The wasm tests in headless Chromium: `wasm-pack test --headless --chrome -- --test wasm_browser`.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[path = "wasm/common.rs"]
mod common;
