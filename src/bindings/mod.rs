//! The JavaScript face of the crate: the only module that sees JS values.
//!
//! It converts arguments, calls the pure core and turns core errors into `Error` objects. It
//! holds no logic of its own.
// NOTE: without the `full` feature (the estimate build) only `estimateTokens` is exported, and the
// helpers the other exports share go unused.
#![cfg_attr(not(feature = "full"), allow(dead_code, unused_imports))]

#[cfg(feature = "full")]
mod context;
#[cfg(feature = "full")]
mod counting;
mod error;
#[cfg(feature = "full")]
mod keeper;
#[cfg(feature = "full")]
mod list;
#[cfg(feature = "full")]
mod machine;
#[cfg(feature = "full")]
mod memo;
#[cfg(feature = "full")]
mod messages;
#[cfg(feature = "host-tables")]
mod tables;
mod walk;

use wasm_bindgen::prelude::*;

use crate::model::resolve_encoding;
use error::{ArgumentError, CountTokensError};

/// Runs at the top of every export.
fn enter() {
    // NOTE: with panic = "abort" a panic cannot be caught, but the hook still prints its
    // message to the console before the instance traps, which is what a bug report needs. It
    // is set here rather than in a `start` function, which wasm-bindgen would also export.
    console_error_panic_hook::set_once();
    #[cfg(feature = "host-tables")]
    tables::register();
}

#[cfg(feature = "full")]
#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** A byte-pair encoding that context-keeper counts exactly. */
export type EncodingName = "o200k_base" | "cl100k_base";

/** Options for {@link countTokens}. */
export interface CountOptions {
  /** The encoding to count with. Wins over `model`. Default: "o200k_base" ("cl100k_base" in `context-keeper/cl100k`). */
  encoding?: EncodingName;
  /** A model name, such as "gpt-4o" (o200k_base) or "gpt-4" (cl100k_base). */
  model?: string;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// The options bag of `countTokens`, read through its getters (duck-typed: any object).
    #[wasm_bindgen(typescript_type = "CountOptions")]
    pub type CountOptions;

    #[wasm_bindgen(method, getter, structural, catch)]
    fn encoding(this: &CountOptions) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, getter, structural, catch)]
    fn model(this: &CountOptions) -> Result<JsValue, JsValue>;
}

/// Reads an optional string field of an options object; `read` is the field's getter.
fn string_field(
    field: &'static str,
    read: Result<JsValue, JsValue>,
) -> Result<Option<String>, ArgumentError> {
    let value = read.map_err(|_| ArgumentError::Unreadable { field })?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value
        .as_string()
        .map(Some)
        .ok_or_else(|| ArgumentError::WrongType {
            field,
            expected: "a string",
            got: type_name(&value),
        })
}

/// What a conversation argument must be, for error messages.
const CONVERSATION: &str = "an array of messages or a request object with a `messages` array";

/// `value` as the JSON that `JSON.stringify` makes of it (what an SDK sends the provider),
/// read by walking it ([`walk`]).
fn json_value(
    value: &JsValue,
    field: &'static str,
    expected: &'static str,
) -> Result<serde_json::Value, ArgumentError> {
    walk::read(value, None)
        .map_err(|err| ArgumentError::not_json(field, err))?
        // NOTE: JSON.stringify gives undefined (not text) for undefined, functions, symbols.
        .ok_or_else(|| ArgumentError::WrongType {
            field,
            expected,
            got: type_name(value),
        })
}

/// `value` as the JSON the exports read it as, written as JSON text (`None` where
/// `JSON.stringify` writes nothing); the error names the place. For the wasm tests, which hold
/// it against `JSON.stringify`; not part of the JS API.
#[doc(hidden)]
pub fn read_json(value: &JsValue) -> Result<Option<String>, String> {
    let read =
        walk::read(value, None).map_err(|err| ArgumentError::not_json("value", err).to_string())?;
    Ok(read.map(|value| value.to_string()))
}

/// A serializable result as a JS value, through one `JSON.parse`; the error is a defect of
/// ours, described for an `Internal` error variant.
fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    js_sys::JSON::parse(&text).map_err(|err| walk::error_message(&err))
}

/// The JS `typeof` of a value, for error messages; "array" and "null" told apart from "object".
/// Worded like the core's parse errors: "a number", "an array", "null".
fn type_name(value: &JsValue) -> &'static str {
    if value.is_null() {
        return "null";
    }
    if js_sys::Array::is_array(value) {
        return "an array";
    }
    match value.js_typeof().as_string().as_deref() {
        Some("string") => "a string",
        Some("number") => "a number",
        Some("boolean") => "a boolean",
        Some("bigint") => "a bigint",
        Some("symbol") => "a symbol",
        Some("function") => "a function",
        Some("undefined") => "undefined",
        _ => "an object",
    }
}

/// Reads `text`, which must be a string.
fn text_arg(text: &JsValue) -> Result<&js_sys::JsString, ArgumentError> {
    text.dyn_ref().ok_or_else(|| ArgumentError::WrongType {
        field: "text",
        expected: "a string",
        got: type_name(text),
    })
}

/// Counts the tokens of `text` exactly, with the encoding named by `options.encoding` or used
/// by `options.model` (default o200k_base). Special-token text such as `<|endoftext|>` counts
/// as ordinary text, as providers count message content.
///
/// ```js
/// import { countTokens } from "context-keeper";
/// countTokens("hello world");                       // 2
/// countTokens("hello world", { model: "gpt-4" });   // 2, with cl100k_base
/// countTokens("hi", { encoding: "p50k_base" });     // throws ContextKeeperError (kind "encoding"): unknown encoding "p50k_base"; known encodings: o200k_base, cl100k_base
/// ```
#[cfg(feature = "full")]
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    options: Option<CountOptions>,
) -> Result<usize, CountTokensError> {
    enter();
    let text = text_arg(&text)?;
    let (encoding, model) = match options {
        Some(options) if options.is_object() => (
            string_field("options.encoding", options.encoding())?,
            string_field("options.model", options.model())?,
        ),
        Some(other) => {
            return Err(ArgumentError::WrongType {
                field: "options",
                expected: "an object",
                got: type_name(&other),
            }
            .into())
        }
        None => (None, None),
    };
    let encoding = resolve_encoding(encoding.as_deref(), model.as_deref())?;
    Ok(walk::with_str(text, |text| {
        crate::count_tokens(text, encoding)
    })?)
}

/// Estimates the o200k_base token count of `text` without any tables: fast, allocation-free,
/// and usually within a few percent of the exact count. Use it for live counters on every
/// keystroke; use {@link countTokens} where the exact number matters.
///
/// ```js
/// import { estimateTokens } from "context-keeper";
/// estimateTokens("The estimate counts words, digits and punctuation without any vocabulary."); // about 12
/// ```
#[wasm_bindgen(js_name = estimateTokens)]
pub fn estimate_tokens(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
) -> Result<usize, ArgumentError> {
    enter();
    Ok(walk::with_utf8(
        text_arg(&text)?,
        crate::estimate::estimate_utf8,
    ))
}
