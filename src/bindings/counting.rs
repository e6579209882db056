//! `countMessages`, `isWithinLimit`, `modelInfo`, `calibrate`, `clearCountCache` and
//! `clearCalibration`.
//!
//! Conversations and option bags are read by walking them as `JSON.stringify` would
//! ([`walk`]); results go out through one `JSON.parse`. A message counted before and not
//! changed since is not read again ([`memo`]): re-counting a grown conversation costs about the
//! new messages.

use js_sys::Array;
use serde::Serialize;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

use super::error::{to_js_error, ArgumentError, Thrown};
use super::list::{self, Found};
use super::memo;
use super::{enter, json_value, type_name, walk, CONVERSATION};
use crate::counting::{
    self, CountMessagesError, CountMessagesOptions, ListCount, Listed, MessagesCount, OptionsError,
};

#[wasm_bindgen(typescript_custom_section)]
const TS_COUNTING: &'static str = r#"
/** Who serves a model; it decides the framing and the image rule. */
export type Provider = "openai" | "anthropic" | "google" | "meta" | "alibaba" | "mistral" | "deepseek" | "unknown";

/** Tokens a chat format spends around the content. */
export interface ModelFraming {
  /** Per message (role markers, separators); the role's own tokens come on top. */
  perMessage: number;
  /** Extra for a message with a `name` (the name's tokens come on top). */
  perName: number;
  /** Once per request, priming the reply. */
  replyPriming: number;
}

/**
 * How a provider charges an image of a known size (an unknown size is priced as 1024x1024,
 * or at the full patch budget, and makes the count not `exact`).
 * - `tiles`: OpenAI's GPT-4o, 4.1, 4.5, GPT-5 and 5.1, o1, o3: fit in 2048x2048, shortest side
 *   to 768, then `base` + `perTile` per 512x512 tile (`base` alone at `detail: "low"`).
 * - `patches`: `size`-pixel square patches after fitting the long side in `maxSide` and
 *   shrinking to at most `maxPatches`, times `multiplier`: Claude (28 px), OpenAI's
 *   gpt-4.1-mini and nano, o4-mini, gpt-5-mini and nano, GPT-5.2 on (32 px).
 * - `crops`: Gemini 1.5 and 2.x: one crop within 384x384, else crops of the shortest side / 1.5.
 * - `area`: width x height / `divisor` after fitting `maxSide` (Anthropic's former rule).
 * - `flat`: the same price for every image (Gemini 3).
 */
export type ImageRule =
  | { rule: "tiles"; base: number; perTile: number }
  | { rule: "patches"; size: number; maxPatches: number; maxSide?: number; multiplier: number }
  | { rule: "crops"; perTile: number }
  | { rule: "area"; divisor: number; maxSide: number }
  | { rule: "flat"; tokens: number };

/** Everything the registry knows of a model. */
export interface ModelInfo {
  /** The entry that matched (the asked-for name when none did). */
  name: string;
  provider: Provider;
  /** Input and output together, in tokens. */
  contextWindow: number;
  maxOutput: number;
  encoding: EncodingName;
  /** Whether `encoding` is the model's own tokenizer (false: the closest public one). */
  exact: boolean;
  framing: ModelFraming;
  images: ImageRule;
  /** False when nothing matched and these are conservative defaults. */
  known: boolean;
  /**
   * Whether the thinking of earlier turns stays in the context (and counts). False for older
   * Claude models, which keep only the current turn's thinking; counts follow it.
   */
  earlierThinking: boolean;
  /**
   * The provider's page stating `contextWindow` and `maxOutput`; null for an unknown model,
   * or when the caller's entry sets either figure (they are then the caller's).
   */
  source: string | null;
  /** The day (`YYYY-MM-DD`) the figures were last read off `source`; null with it. */
  checked: string | null;
}

/** A caller's registry entry: every field optional, merged over the built-in entry. */
export interface ModelEntry {
  provider?: Provider;
  contextWindow?: number;
  maxOutput?: number;
  encoding?: EncodingName;
  exact?: boolean;
  framing?: Partial<ModelFraming>;
  images?: ImageRule;
  earlierThinking?: boolean;
}

/** The caller's entries by model name (or prefix): `{ "my-model": { contextWindow: 32000 } }`. */
export type ModelEntries = Record<string, ModelEntry>;

/** Options for {@link modelInfo}. */
export interface ModelInfoOptions {
  models?: ModelEntries;
}

/** Options for {@link countMessages} and {@link isWithinLimit}. */
export interface CountMessagesOptions {
  /** The model; default: the request object's `model`, else OpenAI's chat accounting. */
  model?: string;
  /** Wins over the model's encoding. Default: the model's, else "o200k_base" ("cl100k_base" in `context-keeper/cl100k`). */
  encoding?: EncodingName;
  /** The messages' format; detected when absent. */
  format?: MessageFormat | "ai-sdk";
  /**
   * Tool definitions sent with the request; default: the request object's `tools`. A list
   * (OpenAI Chat or Responses, Anthropic) or the AI SDK's `{ name: tool({ description,
   * inputSchema }) }` (v4: `parameters`). A schema counts as the JSON Schema the provider gets:
   * `jsonSchema(...)` by what it wraps, a Zod 4 schema by its own `toJSONSchema()`, a schema
   * that cannot write one (Zod 3, Zod Mini) estimated from what it shows. Every entry must be
   * a definition object: `tools[2]: expected a tool definition object, found null`.
   */
  tools?: readonly unknown[] | Record<string, unknown>;
  /**
   * How the request lets the model use its tools: "auto" or "none", else forced ("any",
   * "required", `{ type: "tool", ... }`); it sizes the system prompt Anthropic adds for tools.
   * Default: the request object's `tool_choice` (or `toolChoice`), else "auto".
   */
  toolChoice?: "auto" | "none" | "any" | "required" | "tool" | { type: string; [key: string]: unknown };
  /** Entries merged over the built-in registry. */
  models?: ModelEntries;
}

/** A message role. */
export type Role = "system" | "developer" | "user" | "assistant" | "tool" | "function";

/** Tokens by kind; they add up to the uncalibrated total. */
export interface TokensByKind {
  text: number;
  toolCalls: number;
  toolResults: number;
  images: number;
  /** Files, documents and audio. */
  files: number;
  reasoning: number;
  /**
   * Framing per message, role and name, per tool call, reply priming, tool definitions (and
   * the system prompt Anthropic adds for them).
   */
  overhead: number;
}

/** The count of a conversation. */
export interface MessagesCount {
  /** Everything the request costs; scaled by a calibration when `calibrated`. */
  total: number;
  /** The total before calibration, when one applied. */
  uncalibrated?: number;
  /** Each message's tokens, framing included, in order. */
  perMessage: number[];
  /** The request object's top-level `system` prompt (a string, or Anthropic's text blocks). */
  system: number;
  /**
   * The tool definitions, with the system prompt Anthropic adds to a request with tools (346
   * tokens for Claude 4 with tool choice auto or none, 313 forced; its published sizes).
   */
  tools: number;
  /** Messages and system prompt by role. */
  byRole: Partial<Record<Role, number>>;
  byKind: TokensByKind;
  /**
   * The model's own tokenizer was used and nothing was estimated. With no model named (in the
   * options or the request object) the count is OpenAI's accounting with o200k_base (or the
   * `encoding` named): exact for OpenAI messages, never for Anthropic messages (Claude's
   * tokenizer is not public), and for AI SDK messages, whose provider is unknown, only when
   * `encoding` is named.
   */
  exact: boolean;
  calibrated: boolean;
  /**
   * The tokenizer counted with: the model's own when `exact`, else the public one closest to
   * it. `context-keeper/lite` holds no tokenizer: there it names the one the other entries
   * would count with, and every text is `estimateTokens`'s estimate (of o200k_base) instead.
   */
  encoding: EncodingName;
  format: MessageFormat;
  /** The model counted for, when one was named. */
  model: ModelInfo | null;
}

/** A provider's usage report for {@link calibrate}. */
export interface Usage extends CountMessagesOptions {
  model: string;
  /**
   * Every input token the provider reported for the request, a positive whole number.
   * Anthropic splits them: pass `input_tokens + cache_read_input_tokens +
   * cache_creation_input_tokens`. OpenAI's `prompt_tokens` (`input_tokens` in the Responses
   * API) already includes cached tokens.
   */
  inputTokens: number;
  /** The uncalibrated count of that request; or pass `messages` (and its options). */
  estimated?: number;
  messages?: Messages;
}

/** What {@link calibrate} recorded. */
export interface Calibration {
  /** The registry name the ratio is kept under. */
  model: string;
  /** inputTokens / estimated, within [0.5, 2]; 1 when nothing was recorded. */
  ratio: number;
  /** False for a model counted exactly, which is never calibrated. */
  applied: boolean;
}

/**
 * What the registry knows of a model: exact name first, then the longest known prefix;
 * an unknown model gets a conservative default with `known: false`. `options.models` adds or
 * overrides entries.
 *
 * ```js
 * modelInfo("gpt-4o-mini-2024-07-18").contextWindow;    // 128000
 * modelInfo("us.anthropic.claude-3-7-sonnet-20250219-v1:0").name; // "claude-3-7-sonnet"
 * modelInfo("claude-sonnet-4-5").exact;                  // false: no public tokenizer
 * modelInfo("gpt-4").source;  // "https://developers.openai.com/api/docs/models/gpt-4"
 * modelInfo("my-llm", { models: { "my-llm": { contextWindow: 32000 } } }).known; // true
 * ```
 */
export function modelInfo(model: string, options?: ModelInfoOptions | null): ModelInfo;

/**
 * Every model the registry knows, as {@link modelInfo} gives each (name, provider, window,
 * encoding, source...), in the registry's order: by provider, the newest families first. The
 * names are the registry's (a family's name matches its dated releases too). `options.models`
 * changes listed models in place and appends the names it adds.
 *
 * ```js
 * listModels().filter((m) => m.provider === "anthropic").map((m) => m.name);
 * ```
 */
export function listModels(options?: ModelInfoOptions | null): ModelInfo[];

/**
 * Counts a conversation (OpenAI, Anthropic or AI SDK, detected) per message, per role and per
 * kind, with the provider's framing, tool definitions and images by the provider's rule.
 * Per-message counts are memoized, so counting again after an append costs about the new
 * message. Throws a `ContextKeeperError`: of kind "messages" naming the message index and
 * field for bad input, "encoding" for an unknown encoding, "options" for another bad option.
 *
 * `messages` is the list, or a request object holding it: `{ model, system, tools,
 * tool_choice, messages }` (the AI SDK's `{ model, system, tools, toolChoice, messages }`,
 * its model object read by its `modelId`). A field of the request object of the wrong type
 * throws an error naming it (`model: expected a string ...`, `tools[2]: expected a tool
 * definition object, found null`), as does a `system` that no format has (an object).
 *
 * AI SDK `UIMessage`s (what `useChat` holds: `parts`, no `content`) count as
 * `convertToModelMessages` would send them: text, reasoning, files, tool calls with their
 * output, error text or denial, and the framing of each step's messages; `step-start`,
 * sources, `data-*` parts and tool calls still streaming their input count nothing. An
 * OpenAI assistant's `refusal` counts as text.
 *
 * ```js
 * const { total, perMessage, byKind, exact } = countMessages(history, { model: "gpt-4o" });
 * countMessages([{ role: "user", content: "hello world" }]).total; // 9: 2 + 3 + 1 ("user") + 3
 * countMessages([{ id: "1", role: "user", parts: [{ type: "text", text: "hello world" }] }]).total; // 9 too
 * countMessages({ model: "claude-sonnet-4-5", system, tools, messages }).tools; // definitions + 346
 * ```
 */
export function countMessages(messages: Messages, options?: CountMessagesOptions | null): MessagesCount;

/**
 * The total if the conversation fits in `limit` tokens, else `false`, counting no further
 * than the message that crossed the limit.
 *
 * ```js
 * const tokens = isWithinLimit(history, 128000 - 4096, { model: "gpt-4o" });
 * if (tokens === false) trim(history);
 * ```
 */
export function isWithinLimit(messages: Messages, limit: number, options?: CountMessagesOptions | null): number | false;

/**
 * Records the input tokens a provider reported for a request, so later counts for that
 * (approximately counted) model scale their total by inputTokens / estimate. The latest call
 * per model wins; exact models are left alone. Errors name the field of `usage`
 * (`usage.inputTokens: expected a whole number of tokens, found NaN`,
 * `usage.messages[2].content: ...`).
 *
 * ```js
 * const res = await anthropic.messages.create(request);
 * const { input_tokens, cache_read_input_tokens, cache_creation_input_tokens } = res.usage;
 * const inputTokens = input_tokens + (cache_read_input_tokens ?? 0) + (cache_creation_input_tokens ?? 0);
 * calibrate({ model: request.model, inputTokens, messages: request });
 * ```
 */
export function calibrate(usage: Usage): Calibration;
"#;

/// Why a counting export failed.
#[derive(Debug, thiserror::Error)]
pub enum CountingError {
    #[error(transparent)]
    Argument(#[from] ArgumentError),
    #[error(transparent)]
    Count(#[from] CountMessagesError),
    /// The limit is out of range (negative).
    #[error("{0}")]
    Range(String),
    /// A defect of ours, not of the input.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Thrown for CountingError {
    fn kind(&self) -> &'static str {
        match self {
            CountingError::Argument(err) => err.kind(),
            CountingError::Count(err) => err.kind(),
            CountingError::Range(_) => "options",
            CountingError::Internal(_) => "internal",
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            CountingError::Argument(err) => err.path(),
            CountingError::Count(err) => err.path(),
            CountingError::Range(_) => Some("limit".to_owned()),
            CountingError::Internal(_) => None,
        }
    }
}

impl From<CountingError> for JsValue {
    fn from(err: CountingError) -> Self {
        to_js_error(&err)
    }
}

/// Reads an options bag; `undefined` and `null` are the defaults.
fn read_options(options: &JsValue) -> Result<CountMessagesOptions, CountingError> {
    if options.is_undefined() || options.is_null() {
        return Ok(CountMessagesOptions::default());
    }
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Err(ArgumentError::WrongType {
            field: "options",
            expected: "an object",
            got: type_name(options),
        }
        .into());
    }
    let mut value = walk::read_options(options)
        .map_err(|err| ArgumentError::not_json("options", err))?
        .unwrap_or(serde_json::Value::Null);
    // NOTE: an unknown option is an error, as in every other export's options: a misspelt one
    // (`modle`) would otherwise count for the default model without a word.
    if let serde_json::Value::Object(map) = &value {
        if let Some(key) = map
            .keys()
            .find(|key| !COUNT_OPTIONS.contains(&key.as_str()))
        {
            return Err(CountMessagesError::from(OptionsError::UnknownName {
                path: format!("options.{key}"),
                what: "option",
                name: key.clone(),
                known: COUNT_OPTIONS.join(", "),
            })
            .into());
        }
    }
    resolve_tools_of(options, &mut value);
    Ok(CountMessagesOptions::from_value(&value).map_err(CountMessagesError::from)?)
}

/// The options of `countMessages`, `isWithinLimit` and `modelInfo`.
const COUNT_OPTIONS: [&str; 6] = [
    "model",
    "encoding",
    "format",
    "tools",
    "toolChoice",
    "models",
];

/// The options the AI SDK converts a Zod 4 schema with (`zod4Schema` in
/// `@ai-sdk/provider-utils`), and `unrepresentable: "any"`, so that a type JSON Schema cannot
/// express (a `Date`) reads as `{}` instead of throwing.
fn zod_params() -> JsValue {
    let params = js_sys::Object::new();
    let fields = [
        ("target", "draft-7"),
        ("io", "input"),
        ("reused", "inline"),
        ("unrepresentable", "any"),
    ];
    for (key, value) in fields {
        // NOTE: setting a property of a fresh plain object cannot fail.
        let _ = js_sys::Reflect::set(&params, &key.into(), &value.into());
    }
    params.into()
}

/// The JSON Schema a Zod 4 schema writes of itself (`schema.toJSONSchema()`), if `schema` is
/// one with that method (Zod 4 "classic"; not Zod Mini or Zod 3).
// NOTE: if the method throws, the schema is left as it was read and the core estimates it
// from that: the exception is Zod's, not the caller's, and a count should not fail over it.
fn zod_json_schema(schema: &JsValue) -> Option<Value> {
    if !schema.is_object() || !js_sys::Reflect::has(schema, &"_zod".into()).unwrap_or(false) {
        return None;
    }
    let method = js_sys::Reflect::get(schema, &"toJSONSchema".into()).ok()?;
    let method = method.dyn_into::<js_sys::Function>().ok()?;
    let written = method.call1(schema, &zod_params()).ok()?;
    let mut written = walk::read(&written, None)
        .ok()
        .flatten()
        .filter(Value::is_object)?;
    counting::close_objects(&mut written);
    Some(written)
}

/// In `value`, the JSON read from `js`, replaces the Zod schema of each tool definition under
/// `tools` by the JSON Schema it writes of itself ([`zod_json_schema`]), in the shape of the
/// AI SDK's `jsonSchema()` wrapper: JSON shows a Zod schema's internals, without its
/// descriptions, and the core could only estimate the schema from those.
fn resolve_tools_of(js: &JsValue, value: &mut Value) {
    if let Value::Object(obj) = value {
        resolve_tools_in(js, obj);
    }
}

/// [`resolve_tools_of`] for an object already known to be one.
fn resolve_tools_in(js: &JsValue, obj: &mut Map<String, Value>) {
    let Some(tools) = obj.get_mut("tools") else {
        return;
    };
    let Ok(js_tools) = js_sys::Reflect::get(js, &"tools".into()) else {
        return;
    };
    let entries: Vec<(JsValue, &mut Value)> = match tools {
        Value::Array(list) => (0u32..)
            .zip(list.iter_mut())
            .map(|(i, v)| (i.into(), v))
            .collect(),
        Value::Object(map) => map
            .iter_mut()
            .map(|(k, v)| (k.as_str().into(), v))
            .collect(),
        _ => return,
    };
    for (key, entry) in entries {
        let Value::Object(def) = entry else { continue };
        // NOTE: the schema the core will read: the first of its keys that holds one.
        let Some(field) = (counting::SCHEMA_KEYS.into_iter())
            .find(|field| def.get(*field).is_some_and(|v| !v.is_null()))
        else {
            continue;
        };
        let schema = js_sys::Reflect::get(&js_tools, &key)
            .and_then(|js_def| js_sys::Reflect::get(&js_def, &field.into()));
        if let Some(written) = schema.ok().as_ref().and_then(zod_json_schema) {
            let mut wrapper = Map::new();
            wrapper.insert("jsonSchema".to_owned(), written);
            def.insert(field.to_owned(), Value::Object(wrapper));
        }
    }
}

/// A serializable result as a JS value.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, CountingError> {
    super::to_js(value).map_err(CountingError::Internal)
}

/// Counts a conversation, reading (walking, parsing, hashing) only the messages not counted
/// before: the core's [`ListCount`] decides, and asks for the messages it must read; [`memo`]
/// recognises the message objects read before. `stop_above` stops the count past that many
/// tokens.
fn count_with(
    messages: &JsValue,
    options: &CountMessagesOptions,
    stop_above: Option<u64>,
) -> Result<(MessagesCount, bool), CountingError> {
    count_in(&memo::Shared, messages, options, stop_above)
}

/// [`count_with`] on a given counter (a keeper's own).
pub(super) fn count_in(
    counting: &impl memo::Counting,
    messages: &JsValue,
    options: &CountMessagesOptions,
    stop_above: Option<u64>,
) -> Result<(MessagesCount, bool), CountingError> {
    let Some((list, envelope)) = split(messages)? else {
        // NOTE: not a conversation: the core's reading of the whole names what is wrong.
        let value = json_value(messages, "messages", CONVERSATION)?;
        return Ok(counting::count_value(value, options, stop_above)?);
    };
    let listed = list::read_list(&list, counting, false)
        .map_err(|(i, e)| ArgumentError::not_json(&format!("messages[{i}]"), e))?
        .into_iter()
        .map(|found| match found {
            Found::Known { id, learnt, .. } => Listed::Known(id, learnt),
            Found::Read { id, votes, value } => Listed::Read { id, votes, value },
        })
        .collect();
    // NOTE: the default counter is locked only inside each `with_default_counter` call, never
    // while a message is read from JS (`walk::read_item`), whose getters may call back in.
    let mut count = counting
        .with(|counter| ListCount::start(counter, envelope, listed, options, stop_above))?;
    while let Some(i) = counting.with(|counter| count.advance(counter))? {
        let value = walk::read_item(&list.get(i), i)
            .map_err(|e| ArgumentError::not_json(&format!("messages[{i}]"), e))?;
        count.supply(value.unwrap_or(Value::Null));
    }
    Ok(count.finish())
}

/// A conversation's message list, and the request object around it (its other fields).
type Parts = (Array, Option<Map<String, Value>>);

/// The message list and the request object around it (its other fields, read as JSON), or
/// `None` when `messages` is neither a list nor an object holding one.
pub(super) fn split(messages: &JsValue) -> Result<Option<Parts>, ArgumentError> {
    if Array::is_array(messages) {
        return Ok(Some((messages.clone().unchecked_into(), None)));
    }
    if !messages.is_object() {
        return Ok(None);
    }
    let list = js_sys::Reflect::get(messages, &JsValue::from_str("messages")).map_err(|_| {
        ArgumentError::Unreadable {
            field: "messages.messages",
        }
    })?;
    if !Array::is_array(&list) {
        return Ok(None);
    }
    match walk::read(messages, Some("messages"))
        .map_err(|e| ArgumentError::not_json("messages", e))?
    {
        Some(Value::Object(mut envelope)) => {
            resolve_tools_in(messages, &mut envelope);
            Ok(Some((list.unchecked_into(), Some(envelope))))
        }
        _ => Ok(None),
    }
}

#[wasm_bindgen(js_name = modelInfo, skip_typescript)]
pub fn model_info(model: JsValue, options: JsValue) -> Result<JsValue, CountingError> {
    enter();
    let model = model.as_string().ok_or_else(|| ArgumentError::WrongType {
        field: "model",
        expected: "a string",
        got: type_name(&model),
    })?;
    let options = read_options(&options)?;
    to_js(&counting::model_info_with(&model, &options.models))
}

#[wasm_bindgen(js_name = listModels, skip_typescript)]
pub fn list_models(options: JsValue) -> Result<JsValue, CountingError> {
    enter();
    let options = read_options(&options)?;
    to_js(&counting::models_with(&options.models))
}

#[wasm_bindgen(js_name = countMessages, skip_typescript)]
pub fn count_messages(messages: JsValue, options: JsValue) -> Result<JsValue, CountingError> {
    enter();
    let options = read_options(&options)?;
    let (count, _) = count_with(&messages, &options, None)?;
    to_js(&count)
}

#[wasm_bindgen(js_name = isWithinLimit, skip_typescript)]
pub fn is_within_limit(
    messages: JsValue,
    limit: JsValue,
    options: JsValue,
) -> Result<JsValue, CountingError> {
    enter();
    let limit = match limit.as_f64() {
        Some(n) if n >= 0.0 => n.floor() as u64, // NOTE: saturates; Infinity is u64::MAX.
        Some(n) => {
            return Err(CountingError::Range(format!(
                "limit: expected a number of tokens at least 0, found {n}"
            )))
        }
        None => {
            return Err(ArgumentError::WrongType {
                field: "limit",
                expected: "a number",
                got: type_name(&limit),
            }
            .into())
        }
    };
    let options = read_options(&options)?;
    let (count, stopped) = count_with(&messages, &options, Some(limit))?;
    Ok(if stopped {
        JsValue::FALSE
    } else {
        JsValue::from_f64(count.total as f64)
    })
}

#[wasm_bindgen(js_name = calibrate, skip_typescript)]
pub fn calibrate(usage: JsValue) -> Result<JsValue, CountingError> {
    enter();
    if !usage.is_object() || js_sys::Array::is_array(&usage) {
        return Err(ArgumentError::WrongType {
            field: "usage",
            expected: "an object",
            got: type_name(&usage),
        }
        .into());
    }
    // NOTE: JSON reads NaN and the infinities as null; name them before they become that.
    for field in ["usage.inputTokens", "usage.estimated"] {
        let key = field.trim_start_matches("usage.");
        let value = js_sys::Reflect::get(&usage, &JsValue::from_str(key))
            .map_err(|_| ArgumentError::Unreadable { field })?;
        if let Some(n) = value.as_f64().filter(|n| !n.is_finite()) {
            let got = if n.is_nan() {
                "NaN"
            } else if n > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            };
            let expected = "a whole number of tokens";
            return Err(ArgumentError::WrongType {
                field,
                expected,
                got,
            }
            .into());
        }
    }
    let mut value = json_value(&usage, "usage", "an object")?;
    resolve_tools_of(&usage, &mut value);
    if let (Some(messages), Ok(js_messages)) = (
        value.get_mut("messages"),
        js_sys::Reflect::get(&usage, &"messages".into()),
    ) {
        resolve_tools_of(&js_messages, messages);
    }
    to_js(&counting::calibrate_usage(&value)?)
}

/// Empties the memo of per-message counts that makes re-counting a grown conversation cheap
/// (at most 4,096 messages are kept, the least recently used dropped first). Counts never
/// depend on it; this only frees its memory.
///
/// ```js
/// import { clearCountCache } from "context-keeper";
/// clearCountCache();
/// ```
#[wasm_bindgen(js_name = clearCountCache)]
pub fn clear_count_cache() {
    enter();
    counting::clear_count_cache();
}

/// Forgets every ratio {@link calibrate} recorded.
///
/// ```js
/// import { clearCalibration } from "context-keeper";
/// clearCalibration();
/// ```
#[wasm_bindgen(js_name = clearCalibration)]
pub fn clear_calibration() {
    enter();
    counting::clear_calibration();
}
