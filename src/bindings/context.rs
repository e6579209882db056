//! The context layer's core, for the JS driver (`pkg-template/context/`): every export here is
//! synchronous and internal (`__ck*`, no types of its own); the driver awaits the store, bounds
//! it with timeouts, and hands the outcomes back. The types of options and reports come from
//! the Rust types (tsify), and the driver's declarations use them.
//!
//! Conversations are read whole by the walk ([`walk`]) and written back as the caller's own
//! objects for every message no tier edited.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::error::ContextError;
use super::messages::{message_list, write_back_reusing, Made};
use super::{enter, type_name, walk, CONVERSATION};
use crate::context::flush::FlushOutcome;
use crate::context::fold::{SummaryOutcome, SummaryRequest};
use crate::context::offload::{self, OffloadOptions};
use crate::context::recovery::{self, GrepOptions, Pattern, RecordHeader};
use crate::context::rolling;
use crate::context::state;
use crate::context::{archive, marker};
use crate::context::{evict, prune, Outcome, Report, Save};
use crate::counting::CountMessagesError;
use crate::messages::{
    self, type_name as type_name_of_json, Conversation, Format, MessagesOptions,
};

/// Options read as JSON and deserialized with the path of a bad field: `options.limitTokens`.
/// With `format`, the `format` option (which the tiers' options do not have) is taken out
/// first and returned: the conversation is read in it.
pub(super) fn read_options<T: DeserializeOwned + Default>(
    options: &JsValue,
    format: bool,
) -> Result<(Option<Format>, T), ContextError> {
    if options.is_undefined() || options.is_null() {
        return Ok((None, T::default()));
    }
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Err(ContextError::options(
            "options",
            format!("expected an object, found {}", type_name(options)),
        ));
    }
    let mut value = walk::read_options(options)
        .map_err(|err| ContextError::options(format!("options{}", err.path()), err.reason))?
        .unwrap_or(Value::Null);
    let named = match (format, &mut value) {
        (true, Value::Object(map)) => map.shift_remove("format"),
        _ => None,
    };
    let format = match named {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(Format::from_name(&name).ok_or_else(|| {
            ContextError::options(
                "options.format",
                format!("unknown format {name:?}; known formats: openai, anthropic, aisdk"),
            )
        })?),
        Some(other) => {
            return Err(ContextError::options(
                "options.format",
                format!("expected a string, found {}", type_name_of_json(&other)),
            ))
        }
    };
    let options = crate::options::from_value(value).map_err(|err| {
        let path = match err.path.as_str() {
            "" => "options".to_owned(),
            path => format!("options.{path}"),
        };
        ContextError::options(path, err.message)
    })?;
    Ok((format, options))
}

/// A figure of the options the core found out of range (its path from `options` and why),
/// as the error naming it: a flush figure, which a negative number would otherwise turn into
/// 0 ([`crate::context::flush::FlushOptions::invalid`]), or a keeper's
/// ([`crate::context::keeper::KeeperOptions::invalid`]).
pub(super) fn check_figures(
    invalid: Option<(impl std::fmt::Display, String)>,
) -> Result<(), ContextError> {
    match invalid {
        None => Ok(()),
        Some((path, reason)) => Err(ContextError::options(format!("options.{path}"), reason)),
    }
}

/// The conversation argument, read whole and parsed.
pub(super) fn read_conversation(
    messages: &JsValue,
    format: Option<Format>,
) -> Result<Conversation, ContextError> {
    let value = walk::read(messages, None)
        .map_err(|err| ContextError::messages(format!("messages{}", err.path()), err.reason))?
        .ok_or_else(|| {
            ContextError::messages(
                "messages",
                format!("expected {CONVERSATION}, found {}", type_name(messages)),
            )
        })?;
    let options = MessagesOptions {
        format,
        allow_pending_calls: true,
    };
    messages::parse_messages_value(value, &options).map_err(ContextError::from)
}

/// A count that failed inside a tier: the conversation's fault names its place, a bad count
/// option is an options error, a failure of the engine is ours.
pub(super) fn count_error(err: CountMessagesError) -> ContextError {
    match err {
        CountMessagesError::Parse(err) => ContextError::from(err),
        CountMessagesError::Options(err) => ContextError::options("options", err.to_string()),
        CountMessagesError::Count(err) => ContextError::internal(err.to_string()),
    }
}

pub(super) fn to_js<T: Serialize>(value: &T) -> Result<JsValue, ContextError> {
    super::to_js(value).map_err(ContextError::internal)
}

/// A summary request as JS, its messages converted one at a time (each message's JSON made,
/// parsed and dropped): through [`to_js`], the JSON of a long span was one string grown by
/// doubling, which took a 10 MB history's wasm memory from 39 to 54 MiB, and wasm memory never
/// shrinks.
pub(super) fn summary_request_js(request: &SummaryRequest) -> Result<JsValue, ContextError> {
    /// The request with its messages left empty (and in their place: key order is kept).
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Head<'a> {
        messages: [(); 0],
        previous_summary: Option<&'a str>,
        prompt: &'a str,
        target_tokens: u64,
        transcript: &'a str,
    }
    let out = to_js(&Head {
        messages: [],
        previous_summary: request.previous_summary.as_deref(),
        prompt: &request.prompt,
        target_tokens: request.target_tokens,
        transcript: &request.transcript,
    })?;
    let messages = js_sys::Array::new();
    for message in request.messages.as_slice() {
        messages.push(&to_js(&message.to_value())?);
    }
    set(out.unchecked_ref(), "messages", &messages)?;
    Ok(out)
}

/// Sets `key` of a result object.
pub(super) fn set(object: &js_sys::Object, key: &str, value: &JsValue) -> Result<(), ContextError> {
    js_sys::Reflect::set(object, &key.into(), value)
        .map(drop)
        .map_err(|err| ContextError::internal(super::walk::error_message(&err)))
}

/// The conversation in the caller's shape: the input itself when nothing changed, else a new
/// list (or request object) where message `i` is the caller's own object `origin[i]`, or the
/// written JSON of a message that is not the caller's.
pub(super) fn messages_out(
    input: &JsValue,
    conversation: Conversation,
    origin: &[Option<usize>],
) -> Result<JsValue, ContextError> {
    messages_out_reusing(input, conversation, origin, &mut super::messages::NoneMade)
}

/// [`messages_out`], giving again an object `made` has for a message that is not the caller's.
pub(super) fn messages_out_reusing(
    input: &JsValue,
    conversation: Conversation,
    origin: &[Option<usize>],
    made: &mut dyn Made,
) -> Result<JsValue, ContextError> {
    if origin.iter().enumerate().all(|(i, o)| *o == Some(i)) {
        return Ok(input.clone());
    }
    let list = message_list(input).map_err(|e| ContextError::internal(e.to_string()))?;
    write_back_reusing(input, &list, conversation, origin, made)
        .map_err(|e| ContextError::internal(e.to_string()))
}

/// `{ messages, report }` in the caller's shape: untouched messages the caller's own objects.
/// `edited` is sorted.
pub(super) fn written(
    input: &JsValue,
    conversation: Conversation,
    edited: &[usize],
    report: &Report,
) -> Result<JsValue, ContextError> {
    let origin: Vec<Option<usize>> = (0..conversation.messages().len())
        .map(|i| edited.binary_search(&i).is_err().then_some(i))
        .collect();
    let result = js_sys::Object::new();
    set(
        &result,
        "messages",
        &messages_out(input, conversation, &origin)?,
    )?;
    set(&result, "report", &to_js(report)?)?;
    Ok(result.into())
}

/// Runs a pure tier over a conversation: reads the options (with `format`) and the messages,
/// and writes back what it edited.
fn run_tier<O: DeserializeOwned + Default>(
    messages: &JsValue,
    options: &JsValue,
    tier: impl FnOnce(Conversation, &O) -> (Conversation, Vec<usize>, Report),
) -> Result<JsValue, ContextError> {
    enter();
    let (format, options) = read_options(options, true)?;
    let (conversation, edited, report) = tier(read_conversation(messages, format)?, &options);
    written(messages, conversation, &edited, &report)
}

#[wasm_bindgen(js_name = __ckPrune, skip_typescript)]
pub fn prune_messages(messages: JsValue, options: JsValue) -> Result<JsValue, ContextError> {
    run_tier(&messages, &options, |conv, options| {
        let pruned = prune::prune(conv, options);
        (pruned.conversation, pruned.edited, pruned.report)
    })
}

#[wasm_bindgen(js_name = __ckEvict, skip_typescript)]
pub fn evict_tool_inputs(messages: JsValue, options: JsValue) -> Result<JsValue, ContextError> {
    run_tier(&messages, &options, |conv, options| {
        let evicted = evict::evict(conv, options);
        (evicted.conversation, evicted.edited, evicted.report)
    })
}

/// Offload options, with the session id they cannot do without.
pub(super) fn offload_options(
    options: &JsValue,
    format: bool,
) -> Result<(Option<Format>, OffloadOptions), ContextError> {
    let (format, options): (_, OffloadOptions) = read_options(options, format)?;
    check_session(&options.session_id)?;
    Ok((format, options))
}

/// `options.sessionId`, which the stores' keys cannot do without.
pub(super) fn check_session(session_id: &str) -> Result<(), ContextError> {
    if session_id.is_empty() {
        return Err(ContextError::options(
            "options.sessionId",
            "expected a non-empty string".to_owned(),
        ));
    }
    Ok(())
}

/// A key as a JS array of strings.
fn key_to_js(key: &[String]) -> js_sys::Array {
    key.iter().map(|k| JsValue::from_str(k)).collect()
}

/// A save as `{ key, bytes }`.
pub(super) fn save_to_js(save: &Save) -> Result<JsValue, ContextError> {
    let object = js_sys::Object::new();
    set(&object, "key", &key_to_js(&save.key))?;
    set(
        &object,
        "bytes",
        &js_sys::Uint8Array::from(save.bytes.as_slice()),
    )?;
    Ok(object.into())
}

/// Archive save `i` of a compaction or fold, made now: `{ key, bytes }`. The drivers store each
/// before they ask for the next, so the archive's two copies of the span are never in memory
/// together (7 MB each for a 10 MB history).
pub(super) fn archive_save_js(
    saves: Option<archive::ArchiveSaves<'_>>,
    i: u32,
) -> Result<JsValue, ContextError> {
    let save = (saves.and_then(|s| s.make(i as usize)))
        .ok_or_else(|| ContextError::internal(format!("there is no archive save {i}")))?;
    save_to_js(&save)
}

/// A save's outcome as the driver hands it: `null` when the store confirmed it, else the
/// reason it did not (a string).
pub(super) fn outcome_of(value: &JsValue) -> Outcome {
    match value.as_string() {
        Some(reason) => Outcome::Failed(reason),
        None if value.is_null() || value.is_undefined() => Outcome::Saved,
        None => Outcome::Failed("the save failed".to_owned()),
    }
}

pub(super) fn already_applied() -> ContextError {
    ContextError::internal("the plan was already applied".to_owned())
}

/// The store key of an offloaded result, or without `id` the prefix of a session's.
#[wasm_bindgen(js_name = __ckOffloadKey, skip_typescript)]
pub fn offload_key(session_id: &str, id: Option<String>) -> js_sys::Array {
    key_to_js(&match id {
        Some(id) => offload::offload_key(session_id, &id),
        None => offload::offload_prefix(session_id),
    })
}

/// Whether a save of `bytes` under `key` reads the key first ([`offload::reads_before_write`]).
#[wasm_bindgen(js_name = __ckReadsBeforeWrite, skip_typescript)]
pub fn reads_before_write(key: &js_sys::Array, bytes: &[u8]) -> bool {
    offload::reads_before_write(&key_of(key), bytes)
}

/// Whether `stored` is already the copy a save of `bytes` under `key` would write
/// ([`offload::holds_copy`]).
#[wasm_bindgen(js_name = __ckHoldsCopy, skip_typescript)]
pub fn holds_copy(key: &js_sys::Array, bytes: &[u8], stored: &[u8]) -> bool {
    offload::holds_copy(&key_of(key), bytes, stored)
}

/// A store key the core made, read back (an item that is not a string reads as "").
fn key_of(key: &js_sys::Array) -> Vec<String> {
    key.iter()
        .map(|v| v.as_string().unwrap_or_default())
        .collect()
}

/// Reads lines of a stored record: `ReadResult` and its rendering.
#[wasm_bindgen(js_name = __ckRead, skip_typescript)]
pub fn read_record(
    id: &str,
    bytes: &[u8],
    offset: f64,
    limit: f64,
    line_chars: f64,
) -> Result<JsValue, ContextError> {
    enter();
    let (_, text) = recovery::decode(id, bytes)?;
    let read = recovery::read_lines(
        id,
        text,
        as_count(offset, 1),
        as_count(limit, recovery::DEFAULT_READ_LINES),
        as_count(line_chars, offload::DEFAULT_LINE_CHARS),
    );
    let out = to_js(&read)?;
    set(
        out.unchecked_ref(),
        "rendered",
        &recovery::render_read(&read).into(),
    )?;
    Ok(out)
}

/// A count from a JS number the driver has checked: finite and positive, or the default.
fn as_count(n: f64, default: usize) -> usize {
    if n.is_finite() && n >= 1.0 {
        n.min(usize::MAX as f64) as usize
    } else {
        default
    }
}

/// The id (the key's last component) and the data of an entry `{ key, data }` of `loadRange`.
fn entry_of(entry: &JsValue) -> Option<(String, js_sys::Uint8Array)> {
    let key: js_sys::Array = js_sys::Reflect::get(entry, &"key".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let id = key.get(key.length().checked_sub(1)?).as_string()?;
    let data = js_sys::Reflect::get(entry, &"data".into())
        .ok()?
        .dyn_into()
        .ok()?;
    Some((id, data))
}

/// How much of a record a list copies into wasm memory to find its header line.
const HEADER_BYTES: u32 = 4_096;

/// The headers of stored records (`[{ key, data }]` as `loadRange` gives them), by id:
/// `{ headers, damaged, rendered }`. Only the head of each record is copied in.
#[wasm_bindgen(js_name = __ckList, skip_typescript)]
pub fn list_records(entries: js_sys::Array) -> Result<JsValue, ContextError> {
    enter();
    let mut headers: Vec<RecordHeader> = Vec::new();
    let mut damaged: Vec<String> = Vec::new();
    for (id, data) in entries.iter().filter_map(|e| entry_of(&e)) {
        let head = data.subarray(0, HEADER_BYTES.min(data.length())).to_vec();
        // NOTE: a header longer than the head (a call id of kilobytes) is read from the whole.
        let header =
            recovery::decode_header(&head).or_else(|| recovery::decode_header(&data.to_vec()));
        match header {
            Some(header) => headers.push(header),
            None => damaged.push(id),
        }
    }
    headers.sort_by(|a, b| a.id.cmp(&b.id));
    let out = js_sys::Object::new();
    set(&out, "headers", &to_js(&headers)?)?;
    set(&out, "damaged", &to_js(&damaged)?)?;
    set(&out, "rendered", &recovery::render_list(&headers).into())?;
    Ok(out.into())
}

/// Searches stored records: `GrepResult` and its rendering.
#[wasm_bindgen(js_name = __ckGrep, skip_typescript)]
pub fn grep_records(
    pattern: &str,
    entries: js_sys::Array,
    options: JsValue,
) -> Result<JsValue, ContextError> {
    enter();
    let (_, options): (_, GrepOptions) = read_options(&options, false)?;
    let compiled = Pattern::new(pattern, options.ignore_case)?;
    // NOTE: one record in wasm memory at a time, in one buffer as large as the largest: a
    // session's records all copied in at once would stay the memory's high-water mark.
    let mut search = recovery::Grep::new(&compiled, &options);
    let mut buffer: Vec<u8> = Vec::new();
    for (id, data) in entries.iter().filter_map(|e| entry_of(&e)) {
        buffer.resize(data.length() as usize, 0);
        data.copy_to(&mut buffer);
        if !search.record(&id, &buffer) {
            break;
        }
    }
    let found = search.finish();
    let out = to_js(&found)?;
    set(
        out.unchecked_ref(),
        "rendered",
        &recovery::render_grep(&found, pattern).into(),
    )?;
    Ok(out)
}

/// The recovery tools' definitions in a format's shape.
#[wasm_bindgen(js_name = __ckToolDefinitions, skip_typescript)]
pub fn tool_definitions(format: &str) -> Result<JsValue, ContextError> {
    enter();
    let format = Format::from_name(format).ok_or_else(|| {
        ContextError::options(
            "options.format",
            format!("unknown format {format:?}; known formats: openai, anthropic, aisdk"),
        )
    })?;
    to_js(&recovery::tool_definitions(format))
}

/// A summarizer's outcome as the driver hands it: `{ text }`, `{ failed }`, `{ heuristic:
/// true }`, or `undefined` when it was not called.
pub(super) fn summary_outcome(value: &JsValue) -> SummaryOutcome {
    let field =
        |name: &str| js_sys::Reflect::get(value, &name.into()).unwrap_or(JsValue::UNDEFINED);
    if !value.is_object() {
        return SummaryOutcome::NotCalled;
    }
    if let Some(text) = field("text").as_string() {
        return SummaryOutcome::Text(text);
    }
    if let Some(reason) = field("failed").as_string() {
        return SummaryOutcome::Failed(reason);
    }
    if field("heuristic").is_truthy() {
        return SummaryOutcome::Heuristic;
    }
    SummaryOutcome::NotCalled
}

/// A flush's outcome: `{ reply }` (a string, or `null` for no text), `{ failed }`, or
/// `undefined` when none ran.
pub(super) fn flush_outcome(value: &JsValue) -> Option<FlushOutcome> {
    if !value.is_object() {
        return None;
    }
    let failed = js_sys::Reflect::get(value, &"failed".into()).ok()?;
    if let Some(reason) = failed.as_string() {
        return Some(FlushOutcome::Failed(reason));
    }
    let reply = js_sys::Reflect::get(value, &"reply".into()).ok()?;
    Some(FlushOutcome::Replied(reply.as_string()))
}

/// The store keys of the context layer: `state` (a session's state), `rolling` (its rolling
/// window's state), `archive` (an
/// archive by name, or without one the prefix of a session's archives).
#[wasm_bindgen(js_name = __ckKey, skip_typescript)]
pub fn key(
    kind: &str,
    session_id: &str,
    name: Option<String>,
) -> Result<js_sys::Array, ContextError> {
    let key = match (kind, name) {
        ("state", _) => state::state_key(session_id),
        ("rolling", _) => rolling::state_key(session_id),
        ("archive", Some(name)) => archive::archive_key(session_id, &name),
        ("archive", None) => archive::archive_prefix(session_id),
        _ => return Err(ContextError::internal(format!("unknown key kind {kind:?}"))),
    };
    Ok(key_to_js(&key))
}

/// The messages the model sees (`activeMessages`): the caller's own objects, from the latest
/// marker (ours or the provider's) on, after the system messages and the head the marker
/// kept.
#[wasm_bindgen(js_name = __ckActive, skip_typescript)]
pub fn active_messages(messages: JsValue, options: JsValue) -> Result<JsValue, ContextError> {
    enter();
    let (format, NoOptions {}) = read_options(&options, true)?;
    let conv = read_conversation(&messages, format)?;
    let keep = marker::active_indices(&conv);
    if keep.len() == conv.messages().len() {
        return Ok(messages);
    }
    let list = message_list(&messages).map_err(|e| ContextError::internal(e.to_string()))?;
    let out: js_sys::Array = keep.iter().map(|&i| list.get(i as u32)).collect();
    if js_sys::Array::is_array(&messages) {
        return Ok(out.into());
    }
    let envelope = js_sys::Object::assign(&js_sys::Object::new(), messages.unchecked_ref());
    set(&envelope, "messages", &out)?;
    Ok(envelope.into())
}

/// The options of a function that has none but `format`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

/// Reads an archive's record: `{ number, format, previous, messages }`.
#[wasm_bindgen(js_name = __ckReadArchive, skip_typescript)]
pub fn read_archive(key: &str, bytes: &[u8]) -> Result<JsValue, ContextError> {
    enter();
    let corrupt = || {
        ContextError::Recovery(crate::context::recovery::RecoveryError::Corrupt {
            id: key.to_owned(),
            reason: "the archive is not a record this version reads".to_owned(),
        })
    };
    // NOTE: checked here without building its messages, then parsed by JS from the same text:
    // a 7 MB archive read as a JSON tree and written out again took a new instance's wasm
    // memory from 3 to 36 MiB, and wasm memory never shrinks.
    if !archive::is_archive(bytes) {
        return Err(corrupt());
    }
    let text = std::str::from_utf8(bytes).map_err(|_| corrupt())?;
    js_sys::JSON::parse(text).map_err(|_| corrupt())
}
