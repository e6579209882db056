//! `detectFormat`, `validateMessages` and `repairMessages`.
//!
//! Conversations cross the boundary as one JSON string each way (`JSON.stringify` in, one
//! `JSON.parse` out), although serde-wasm-bindgen's walk of the object graph is about twice as
//! fast (`node bench/boundary.mjs`). JSON text is what the provider receives: the SDKs send
//! `JSON.stringify(messages)`, so reading the same text sees exactly what the provider will
//! (`tool_calls: undefined` is absent, not `null` as serde-wasm-bindgen reads it; a `URL` or a
//! `Date` is its `toJSON()` string, not an empty object). It is also safe at any depth: serde_json
//! stops at 128 levels, where a recursive walk would overflow the wasm stack.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::error::{ArgumentError, MessagesError};
use super::{enter, json_text, type_name, CONVERSATION};
use crate::messages::{self, Format, MessagesOptions};

#[wasm_bindgen(typescript_custom_section)]
const TS_MESSAGES: &'static str = r#"
/** A conversation format: OpenAI Chat Completions, Anthropic Messages, Vercel AI SDK ModelMessage. */
export type MessageFormat = "openai" | "anthropic" | "aisdk";

/**
 * A conversation as its SDK holds it: the array of messages, or a request object that holds
 * it under `messages` (Anthropic's `{ system, messages }` keeps its system prompt that way).
 */
export type Messages = readonly unknown[] | { readonly messages: readonly unknown[] };

/** Options for {@link validateMessages} and {@link repairMessages}. */
export interface MessagesOptions {
  /** The input's format; detected when absent ("ai-sdk" is accepted for "aisdk"). */
  format?: MessageFormat | "ai-sdk";
  /** Accept tool calls without results at the very end (the host is about to run them). */
  allowPendingCalls?: boolean;
}

/** What a provider would reject. */
export type ProblemKind =
  | "orphanResult" | "resultBeforeCall" | "resultNotAdjacent" | "duplicateResult"
  | "missingResult" | "duplicateCallId" | "emptyContent" | "roleOrder"
  | "toolResultNotFirst" | "misplacedCall";

/** One thing a provider would reject, and where. */
export interface Problem {
  kind: ProblemKind;
  /** Index in the `messages` array. */
  messageIndex: number;
  /** Index of the part in the message (OpenAI: content items, then tool_calls). */
  partIndex?: number;
  /** The tool call id involved. */
  id?: string;
  /** A sentence for humans. */
  message: string;
}

/** An edit that {@link repairMessages} made. */
export type RepairKind =
  | "dropResult" | "moveResult" | "addStubResult" | "renameCallId" | "dropEmptyPart"
  | "dropEmptyMessage" | "nullEmptyContent" | "mergeMessages" | "reorderToolResults"
  | "dropMisplacedCall";

/** One edit, with the problem it fixed and where (indices into the input). */
export interface RepairAction {
  action: RepairKind;
  problem: ProblemKind;
  messageIndex: number;
  partIndex?: number;
  id?: string;
  message: string;
}

/** A repaired conversation, in the input's format and shape, and what was done to it. */
export interface Repaired<M> {
  messages: M;
  report: RepairAction[];
  /** Problems left alone because fixing them would mean inventing or deleting content. */
  unrepaired: Problem[];
}

/**
 * Detects the format of a conversation, or returns null when nothing tells the formats
 * apart (plain text messages read the same in all three).
 *
 * ```js
 * detectFormat([{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] }]); // "anthropic"
 * ```
 */
export function detectFormat(messages: Messages): MessageFormat | null;

/**
 * Every problem a provider would reject (tool pairing, empty content, role order), ordered
 * by message; an empty array when the conversation is valid. Throws a TypeError naming the
 * message index and field when the input is not a conversation of the format.
 *
 * ```js
 * validateMessages([{ role: "tool", tool_call_id: "call_9", content: "42" }]);
 * // [{ kind: "orphanResult", messageIndex: 0, id: "call_9", message: "..." }]
 * ```
 */
export function validateMessages(messages: Messages, options?: MessagesOptions | null): Problem[];

/**
 * The fewest edits that make the conversation valid (drop an orphan result, add a
 * "[no result recorded]" stub for a call without one, ...), each listed in `report`.
 * Nothing else changes: untouched messages come back equal, key order included, and a valid
 * input comes back as the same array.
 *
 * ```js
 * const { messages, report } = repairMessages(history, { format: "openai" });
 * ```
 */
export function repairMessages<M extends Messages>(messages: M, options?: MessagesOptions | null): Repaired<M>;
"#;

#[wasm_bindgen]
extern "C" {
    /// The options bag of the messages functions, read through its getters.
    #[wasm_bindgen(typescript_type = "MessagesOptions")]
    pub type MessagesOptionsJs;

    #[wasm_bindgen(method, getter, structural, catch)]
    fn format(this: &MessagesOptionsJs) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, getter, structural, catch, js_name = allowPendingCalls)]
    fn allow_pending_calls(this: &MessagesOptionsJs) -> Result<JsValue, JsValue>;
}

/// Reads the options bag into the core's options.
fn read_options(options: Option<MessagesOptionsJs>) -> Result<MessagesOptions, MessagesError> {
    let Some(options) = options else {
        return Ok(MessagesOptions::default());
    };
    if !options.is_object() {
        return Err(ArgumentError::WrongType {
            field: "options",
            expected: "an object",
            got: type_name(&options),
        }
        .into());
    }
    let format = options.format().map_err(|_| ArgumentError::Unreadable {
        field: "options.format",
    })?;
    let format = if format.is_undefined() || format.is_null() {
        None
    } else {
        let name = format.as_string().ok_or_else(|| ArgumentError::WrongType {
            field: "options.format",
            expected: "a string",
            got: type_name(&format),
        })?;
        Some(
            Format::from_name(&name)
                .ok_or_else(|| MessagesError::UnknownFormat { name: name.clone() })?,
        )
    };
    let pending = options
        .allow_pending_calls()
        .map_err(|_| ArgumentError::Unreadable {
            field: "options.allowPendingCalls",
        })?;
    let allow_pending_calls = match pending.as_bool() {
        Some(flag) => flag,
        None if pending.is_undefined() || pending.is_null() => false,
        None => {
            return Err(ArgumentError::WrongType {
                field: "options.allowPendingCalls",
                expected: "a boolean",
                got: type_name(&pending),
            }
            .into())
        }
    };
    Ok(MessagesOptions {
        format,
        allow_pending_calls,
    })
}

/// The conversation as JSON text.
fn to_json_text(messages: &JsValue) -> Result<String, ArgumentError> {
    json_text(messages, "messages", CONVERSATION)
}

/// A serializable result as a JS value.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, MessagesError> {
    super::to_js(value).map_err(MessagesError::Internal)
}

#[wasm_bindgen(js_name = detectFormat, skip_typescript)]
pub fn detect_format(messages: JsValue) -> Result<JsValue, MessagesError> {
    enter();
    let text = to_json_text(&messages)?;
    let value = messages::parse_json(&text)?;
    // NOTE: null, not undefined, when nothing tells the formats apart (as the types say).
    Ok(messages::detect_format(&value).map_or(JsValue::NULL, |format| format.name().into()))
}

#[wasm_bindgen(js_name = validateMessages, skip_typescript)]
pub fn validate_messages(
    messages: JsValue,
    options: Option<MessagesOptionsJs>,
) -> Result<JsValue, MessagesError> {
    enter();
    let options = read_options(options)?;
    let problems = messages::validate_messages_str(&to_json_text(&messages)?, &options)?;
    to_js(&problems)
}

#[wasm_bindgen(js_name = repairMessages, skip_typescript)]
pub fn repair_messages(
    messages: JsValue,
    options: Option<MessagesOptionsJs>,
) -> Result<JsValue, MessagesError> {
    enter();
    let options = read_options(options)?;
    let repaired = messages::repair_messages_str(&to_json_text(&messages)?, &options)?;
    if repaired.report.is_empty() {
        // Nothing changed: hand back the caller's own array rather than a copy of it.
        let result = js_sys::Object::new();
        let set = |key: &str, value: &JsValue| js_sys::Reflect::set(&result, &key.into(), value);
        set("messages", &messages)
            .and_then(|_| set("report", &js_sys::Array::new()))
            .and_then(|_| set("unrepaired", &to_js(&repaired.unrepaired)?))
            .map_err(|err| MessagesError::Internal(super::error_message(&err)))?;
        return Ok(result.into());
    }
    to_js(&repaired)
}

/// For `bench/boundary.mjs` only (feature `boundary-probe`, never in the package): parse,
/// validate and write back a conversation, crossing the boundary as JSON text (`"json"`) or
/// through serde-wasm-bindgen (`"serde"`), so the two can be timed side by side.
#[cfg(feature = "boundary-probe")]
#[wasm_bindgen(js_name = __boundaryProbe, skip_typescript)]
pub fn boundary_probe(messages: JsValue, strategy: &str) -> Result<JsValue, MessagesError> {
    let options = MessagesOptions::default();
    if strategy == "serde" {
        let value: serde_json::Value = serde_wasm_bindgen::from_value(messages)
            .map_err(|e| MessagesError::Internal(e.to_string()))?;
        let conversation = messages::parse_messages_value(value, &options)?;
        let problems = messages::validate_conversation(&conversation, &options);
        let serializer = serde_wasm_bindgen::Serializer::json_compatible();
        let out = (conversation.into_value(), problems);
        return out
            .serialize(&serializer)
            .map_err(|e| MessagesError::Internal(e.to_string()));
    }
    let conversation = messages::parse_messages_str(&to_json_text(&messages)?, &options)?;
    let problems = messages::validate_conversation(&conversation, &options);
    let out = format!(
        "[{},{}]",
        conversation.into_json_string(),
        serde_json::to_string(&problems).map_err(|e| MessagesError::Internal(e.to_string()))?
    );
    js_sys::JSON::parse(&out).map_err(|err| MessagesError::Internal(super::error_message(&err)))
}
