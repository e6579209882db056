//! `detectFormat`, `validateMessages` and `repairMessages`.
//!
//! Conversations are read by walking them as `JSON.stringify` would ([`walk`](super::walk)):
//! what the provider receives, since the SDKs send `JSON.stringify(body)`. That is faster than
//! crossing as JSON text and than serde-wasm-bindgen (which reads `tool_calls: undefined` as
//! `null` and a `Date` as `{}`); `node bench/boundary.mjs` times all three. `validateMessages`
//! and `detectFormat` read long texts only in part ([`messages::SKIMMABLE_FIELDS`]): their checks
//! look at no more. So does `repairMessages`, whose decisions rest on the same checks; it then
//! reads again whole only the messages it edits ([`messages::Message::is_skimmed`] guards the
//! writing), gives back the caller's own objects for the messages it left alone, and new
//! objects only for those it changed or added.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::error::{ArgumentError, MessagesError};
use super::{enter, json_value, type_name, walk, CONVERSATION};
use crate::messages::{self, Conversation, Format, Message, MessagesOptions};

#[wasm_bindgen(typescript_custom_section)]
const TS_MESSAGES: &'static str = r#"
/**
 * A conversation format: OpenAI Chat Completions, Anthropic Messages, Vercel AI SDK
 * ModelMessage (and UIMessage, as `useChat` holds it: `parts` instead of `content`).
 */
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
  /**
   * The format the input was read in and `messages` are written in. Validate the output in
   * it: detection may name another once repair removed what told the formats apart.
   */
  format: MessageFormat;
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
 * by message; an empty array when the conversation is valid. Throws a `ContextKeeperError`
 * of kind "messages" naming the message index and field when the input is not a conversation
 * of the format.
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

/// The conversation as JSON.
fn read_conversation(messages: &JsValue) -> Result<Value, ArgumentError> {
    json_value(messages, "messages", CONVERSATION)
}

/// The conversation as JSON for checking it only ([`messages::SKIMMABLE_FIELDS`]): its long
/// texts cut short, which saves copying them into wasm memory. Errors as [`read_conversation`].
fn skim_conversation(messages: &JsValue) -> Result<Value, ArgumentError> {
    let skim = walk::Skim {
        field: messages::is_skimmable,
        units: messages::SKIM_UNITS,
    };
    // NOTE: a message list is read as every reader of one reads it (bindings/list.rs).
    if let Some((list, envelope)) = super::counting::split(messages)? {
        let values = super::list::read_values(&list, Some(skim))
            .map_err(|(i, e)| ArgumentError::not_json(&format!("messages[{i}]"), e))?;
        return Ok(match envelope {
            None => Value::Array(values),
            Some(mut envelope) => {
                envelope.insert("messages".to_owned(), Value::Array(values));
                Value::Object(envelope)
            }
        });
    }
    // not a conversation: the whole reading names what is wrong
    walk::read_skimmed(messages, skim)
        .map_err(|err| ArgumentError::not_json("messages", err))?
        // NOTE: JSON.stringify gives undefined (not text) for undefined, functions, symbols.
        .ok_or_else(|| ArgumentError::WrongType {
            field: "messages",
            expected: CONVERSATION,
            got: type_name(messages),
        })
}

/// A serializable result as a JS value.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, MessagesError> {
    super::to_js(value).map_err(MessagesError::Internal)
}

#[wasm_bindgen(js_name = detectFormat, skip_typescript)]
pub fn detect_format(messages: JsValue) -> Result<JsValue, MessagesError> {
    enter();
    let value = skim_conversation(&messages)?;
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
    let conversation = messages::parse_messages_value(skim_conversation(&messages)?, &options)?;
    to_js(&messages::validate_conversation(&conversation, &options))
}

#[wasm_bindgen(js_name = repairMessages, skip_typescript)]
pub fn repair_messages(
    messages: JsValue,
    options: Option<MessagesOptionsJs>,
) -> Result<JsValue, MessagesError> {
    enter();
    let options = read_options(options)?;
    // NOTE: the repair decides on what validation sees, which a skimmed read gives in full
    // (`repair_conversation_traced`); only the messages it edits need their whole texts.
    let skimmed = messages::parse_skimmed_messages_value(skim_conversation(&messages)?, &options)?;
    let count = skimmed.messages().len();
    let outcome = messages::repair_conversation_traced(skimmed, &options);
    let format = outcome.conversation.format();
    let result = js_sys::Object::new();
    let set = |key: &str, value: &JsValue| {
        js_sys::Reflect::set(&result, &key.into(), value)
            .map(drop)
            .map_err(|err| MessagesError::Internal(super::walk::error_message(&err)))
    };
    if outcome.report.is_empty() {
        // Nothing to change: hand back the caller's own array rather than a copy of it.
        set("messages", &messages)?;
        set("format", &format.name().into())?;
        set("report", &js_sys::Array::new())?;
        set("unrepaired", &to_js(&outcome.unrepaired)?)?;
        return Ok(result.into());
    }
    let list = message_list(&messages)?;
    let outcome = match reread_edited(outcome, &messages, &list, count, &options) {
        Some(outcome) => outcome,
        // NOTE: the edited messages could not be read again as they were (a `toJSON` on the
        // array, a getter that answers differently): read everything whole, as a repair did.
        None => repair_whole(&messages, &options)?,
    };
    set(
        "messages",
        &write_back(&messages, &list, outcome.conversation, &outcome.untouched)?,
    )?;
    set("format", &format.name().into())?;
    set("report", &to_js(&outcome.report)?)?;
    set("unrepaired", &to_js(&outcome.unrepaired)?)?;
    Ok(result.into())
}

/// The caller's array of messages: the input, or the `messages` of a request object.
pub(super) fn message_list(input: &JsValue) -> Result<js_sys::Array, MessagesError> {
    if js_sys::Array::is_array(input) {
        return Ok(input.clone().unchecked_into());
    }
    Ok(js_sys::Reflect::get(input, &"messages".into())
        .map_err(|err| MessagesError::Internal(super::walk::error_message(&err)))?
        .unchecked_into())
}

/// Whether a message the repair edited or added is written from a skimmed reading.
fn writes_skimmed(outcome: &messages::RepairOutcome) -> bool {
    let messages = outcome.conversation.messages().iter();
    (messages.zip(&outcome.untouched)).any(|(m, at)| at.is_none() && m.is_skimmed())
}

/// The repair of a skimmed conversation, made writable: when an edited message holds skimmed
/// values, the input messages the repair did not leave alone are read again whole from the
/// caller's `list`, next to the untouched ones (still skimmed, never written), and the repair
/// runs again. `None` when that reading is not the caller's messages, or the second repair
/// does not decide as the first did.
fn reread_edited(
    outcome: messages::RepairOutcome,
    input: &JsValue,
    list: &js_sys::Array,
    count: usize,
    options: &MessagesOptions,
) -> Option<messages::RepairOutcome> {
    if !writes_skimmed(&outcome) {
        return Some(outcome);
    }
    let readable = js_sys::Array::is_array(list)
        && list.length() as usize == count
        && !walk::reads_through_to_json(input)
        && !walk::reads_through_to_json(list);
    if !readable {
        return None;
    }
    let messages::RepairOutcome {
        conversation,
        report,
        unrepaired,
        untouched,
    } = outcome;
    let format = conversation.format();
    let (mut head, repaired) = conversation.split_messages();
    let mut kept: Vec<Option<Message>> = (0..count).map(|_| None).collect();
    for (message, at) in repaired.into_iter().zip(&untouched) {
        if let Some(slot) = at.and_then(|i| kept.get_mut(i)) {
            *slot = Some(message);
        }
    }
    let mut input_messages = Vec::with_capacity(count);
    for (i, slot) in (0u32..).zip(kept) {
        let message = match slot {
            Some(message) => message,
            None => {
                let value = walk::read_item(&list.get(i), i).ok()??;
                messages::parse_message(format, value).ok()?
            }
        };
        input_messages.push(message);
    }
    *head.messages_mut() = input_messages;
    let again = messages::repair_conversation_traced(head, options);
    let same =
        again.report == report && again.unrepaired == unrepaired && again.untouched == untouched;
    (same && !writes_skimmed(&again)).then_some(again)
}

/// The repair of the conversation read whole.
fn repair_whole(
    messages: &JsValue,
    options: &MessagesOptions,
) -> Result<messages::RepairOutcome, MessagesError> {
    let conversation = messages::parse_messages_value(read_conversation(messages)?, options)?;
    Ok(messages::repair_conversation_traced(conversation, options))
}

/// The repaired conversation as a JS value in the input's shape. A message the repair left
/// as it was (`untouched`) is the caller's own object from `list` (so `===` and memoized UI
/// rows keep working); only the messages it changed or added are new objects, read from their
/// JSON, which must not be a skimmed reading.
pub(super) fn write_back(
    input: &JsValue,
    list: &js_sys::Array,
    repaired: Conversation,
    untouched: &[Option<usize>],
) -> Result<JsValue, MessagesError> {
    write_back_reusing(input, list, repaired, untouched, &mut NoneMade)
}

/// The objects written back for messages that are not the caller's: one made before for the
/// same message can be given again ([`write_back_reusing`]).
pub(super) trait Made {
    /// An object made for `message` before, that still reads as it did.
    fn get(&mut self, message: &messages::Message) -> Option<JsValue>;
    /// Whether it keeps what [`Made::made`] tells it (else the message is not kept for it).
    fn keeps(&self) -> bool;
    /// `object` was made for `message`.
    fn made(&mut self, message: messages::Message, object: &JsValue);
}

/// Nothing made before, nothing kept.
pub(super) struct NoneMade;

impl Made for NoneMade {
    fn get(&mut self, _: &messages::Message) -> Option<JsValue> {
        None
    }
    fn keeps(&self) -> bool {
        false
    }
    fn made(&mut self, _: messages::Message, _: &JsValue) {}
}

/// [`write_back`], giving again the object `made` has for a message instead of making one,
/// and telling it of each object it makes.
pub(super) fn write_back_reusing(
    input: &JsValue,
    list: &js_sys::Array,
    repaired: Conversation,
    untouched: &[Option<usize>],
    made: &mut dyn Made,
) -> Result<JsValue, MessagesError> {
    // NOTE: which item each message is (an index into `list`, or below 0 one of `made_now`),
    // then the array made in one call into JS.
    let (_, messages) = repaired.split_messages();
    let mut from: Vec<i32> = Vec::with_capacity(messages.len());
    let made_now = js_sys::Array::new();
    let add = |from: &mut Vec<i32>, object: &JsValue| {
        made_now.push(object);
        from.push(-i32::try_from(made_now.length()).unwrap_or(i32::MAX));
    };
    for (message, at) in messages.into_iter().zip(untouched) {
        match at {
            Some(i) => match i32::try_from(*i) {
                Ok(i) => from.push(i),
                Err(_) => add(&mut from, &list.get(*i as u32)),
            },
            None if message.is_skimmed() => {
                return Err(MessagesError::Internal(
                    "a repaired message was read in part".to_owned(),
                ));
            }
            None => match made.get(&message) {
                Some(object) => add(&mut from, &object),
                None if made.keeps() => {
                    let object = json_to_js(&message.clone().into_value())?;
                    made.made(message, &object);
                    add(&mut from, &object);
                }
                None => add(&mut from, &json_to_js(&message.into_value())?),
            },
        }
    }
    let out = super::memo::assemble(list, &from, &made_now).unwrap_or_else(|| {
        (from.iter())
            .map(|&i| match u32::try_from(i) {
                Ok(i) => list.get(i),
                Err(_) => made_now.get((-(i64::from(i)) - 1) as u32),
            })
            .collect()
    });
    if js_sys::Array::is_array(input) {
        return Ok(out.into());
    }
    // NOTE: a request object: a shallow copy, its other fields the caller's own values. The
    // repair never edits the system prompt, so the caller's `system` stays.
    let envelope = js_sys::Object::assign(&js_sys::Object::new(), input.unchecked_ref());
    js_sys::Reflect::set(&envelope, &"messages".into(), &out)
        .map_err(|err| MessagesError::Internal(super::walk::error_message(&err)))?;
    Ok(envelope.into())
}

/// A JSON value as a JS value, through `JSON.parse`.
pub(super) fn json_to_js(value: &Value) -> Result<JsValue, MessagesError> {
    super::to_js(value).map_err(MessagesError::Internal)
}

/// For `bench/boundary.mjs` only (feature `boundary-probe`, never in the package): parse,
/// validate and write back a whole conversation, crossing the boundary as JSON text (`"json"`),
/// through serde-wasm-bindgen (`"serde"`), or read whole by the walk and written back as JSON
/// text (`"walk"`), so they can be timed next to what ships (`validateMessages` and
/// `repairMessages`, which read long texts in part and write back only what they change).
#[cfg(feature = "boundary-probe")]
#[wasm_bindgen(js_name = __boundaryProbe, skip_typescript)]
pub fn boundary_probe(messages: JsValue, strategy: &str) -> Result<JsValue, MessagesError> {
    let options = MessagesOptions::default();
    if strategy == "walk" {
        let value = walk::read(&messages, None)
            .map_err(|err| MessagesError::Internal(format!("{err:?}")))?
            .unwrap_or(Value::Null);
        let conversation = messages::parse_messages_value(value, &options)?;
        let problems = messages::validate_conversation(&conversation, &options);
        let problems =
            serde_json::to_value(&problems).map_err(|e| MessagesError::Internal(e.to_string()))?;
        return json_to_js(&Value::Array(vec![conversation.into_value(), problems]));
    }
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
    let text = js_sys::JSON::stringify(&messages)
        .map_err(|err| MessagesError::Internal(super::walk::error_message(&err)))?
        .as_string()
        .unwrap_or_default();
    let conversation = messages::parse_messages_str(&text, &options)?;
    let problems = messages::validate_conversation(&conversation, &options);
    let out = format!(
        "[{},{}]",
        conversation.into_json_string(),
        serde_json::to_string(&problems).map_err(|e| MessagesError::Internal(e.to_string()))?
    );
    js_sys::JSON::parse(&out)
        .map_err(|err| MessagesError::Internal(super::walk::error_message(&err)))
}
