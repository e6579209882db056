//! The context layer's core, for the JS driver (`pkg-template/context/`): every export here is
//! synchronous and internal (`__ck*`, no types of its own); the driver awaits the store, bounds
//! it with timeouts, and hands the outcomes back. The types of options and reports come from
//! the Rust types (tsify), and the driver's declarations use them.
//!
//! Conversations are read whole by the walk ([`walk`]) and written back as the caller's own
//! objects for every message no tier edited.

use std::cell::RefCell;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::error::ContextError;
use super::messages::{message_list, write_back};
use super::{enter, type_name, walk, CONVERSATION};
use crate::context::offload::{self, OffloadOptions, OffloadPlan, ResultPlan};
use crate::context::recovery::{self, GrepOptions, Pattern, RecordHeader};
use crate::context::{evict, prune, Outcome, Report, Save};
use crate::messages::{self, Conversation, Format, MessagesOptions};

thread_local! {
    /// The driver's `ContextKeeperError` class, registered once per instance
    /// ([`register_error_class`]); errors are made with it so they are `instanceof` it.
    static ERROR_CLASS: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

/// Registers the class errors of the context layer are made with.
#[wasm_bindgen(js_name = __ckRegisterErrorClass, skip_typescript)]
pub fn register_error_class(class: js_sys::Function) {
    ERROR_CLASS.with(|slot| *slot.borrow_mut() = Some(class));
}

/// The error as a JS value: an instance of the registered class, or an `Error` with the same
/// `name`, `kind` and `path`.
pub(super) fn context_error_to_js(err: &ContextError) -> JsValue {
    let message = JsValue::from_str(&err.to_string());
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"kind".into(), &err.kind().into());
    if let Some(path) = err.path() {
        let _ = js_sys::Reflect::set(&options, &"path".into(), &path.into());
    }
    let made = ERROR_CLASS.with(|slot| {
        let class = slot.borrow().clone()?;
        js_sys::Reflect::construct(&class, &js_sys::Array::of2(&message, &options)).ok()
    });
    if let Some(made) = made {
        return made;
    }
    let error = js_sys::Error::new(&err.to_string());
    error.set_name("ContextKeeperError");
    let _ = js_sys::Reflect::set(&error, &"kind".into(), &err.kind().into());
    let path = err.path().map_or(JsValue::NULL, |p| p.into());
    let _ = js_sys::Reflect::set(&error, &"path".into(), &path);
    error.into()
}

/// Options read as JSON and deserialized with the path of a bad field: `options.limitTokens`.
fn read_options<T: DeserializeOwned + Default>(options: &JsValue) -> Result<T, ContextError> {
    if options.is_undefined() || options.is_null() {
        return Ok(T::default());
    }
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Err(ContextError::options(
            "options",
            format!("expected an object, found {}", type_name(options)),
        ));
    }
    let value = walk::read(options, None)
        .map_err(|err| ContextError::options(format!("options{}", err.path()), err.reason))?
        .unwrap_or(Value::Null);
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." {
            "options".to_owned()
        } else {
            format!("options.{path}")
        };
        ContextError::options(path, err.into_inner().to_string())
    })
}

/// The conversation argument, read whole and parsed.
fn read_conversation(
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

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, ContextError> {
    super::to_js(value).map_err(ContextError::internal)
}

/// The tiered conversation as the caller's shape: untouched messages the caller's own objects.
fn written(
    input: &JsValue,
    conversation: Conversation,
    edited: &[usize],
    report: &Report,
) -> Result<JsValue, ContextError> {
    let result = js_sys::Object::new();
    let set = |key: &str, value: &JsValue| {
        js_sys::Reflect::set(&result, &key.into(), value)
            .map(drop)
            .map_err(|err| ContextError::internal(super::error_message(&err)))
    };
    if edited.is_empty() {
        set("messages", input)?;
    } else {
        let list = message_list(input).map_err(|e| ContextError::internal(e.to_string()))?;
        let count = conversation.messages().len();
        let untouched: Vec<Option<usize>> = (0..count)
            .map(|i| (!edited.contains(&i)).then_some(i))
            .collect();
        let out = write_back(input, &list, conversation, &untouched)
            .map_err(|e| ContextError::internal(e.to_string()))?;
        set("messages", &out)?;
    }
    set("report", &to_js(report)?)?;
    Ok(result.into())
}

/// Takes `format` out of an options object (the tiers' options do not know it).
fn split_format(options: &JsValue) -> Result<(Option<Format>, JsValue), ContextError> {
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Ok((None, options.clone()));
    }
    let format = js_sys::Reflect::get(options, &"format".into()).unwrap_or(JsValue::UNDEFINED);
    if format.is_undefined() || format.is_null() {
        return Ok((None, options.clone()));
    }
    let name = format.as_string().ok_or_else(|| {
        ContextError::options(
            "options.format",
            format!("expected a string, found {}", type_name(&format)),
        )
    })?;
    let parsed = Format::from_name(&name).ok_or_else(|| {
        ContextError::options(
            "options.format",
            format!("unknown format {name:?}; known formats: openai, anthropic, aisdk"),
        )
    })?;
    let rest = js_sys::Object::assign(&js_sys::Object::new(), options.unchecked_ref());
    let _ = js_sys::Reflect::delete_property(&rest, &"format".into());
    Ok((Some(parsed), rest.into()))
}

#[wasm_bindgen(js_name = __ckPrune, skip_typescript)]
pub fn prune_messages(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    enter();
    let run = || {
        let (format, options) = split_format(&options)?;
        let options: prune::PruneOptions = read_options(&options)?;
        let conv = read_conversation(&messages, format)?;
        let pruned = prune::prune(conv, &options);
        written(
            &messages,
            pruned.conversation,
            &pruned.edited,
            &pruned.report,
        )
    };
    run().map_err(|e| context_error_to_js(&e))
}

#[wasm_bindgen(js_name = __ckEvict, skip_typescript)]
pub fn evict_tool_inputs(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    enter();
    let run = || {
        let (format, options) = split_format(&options)?;
        let options: evict::EvictOptions = read_options(&options)?;
        let conv = read_conversation(&messages, format)?;
        let evicted = evict::evict(conv, &options);
        written(
            &messages,
            evicted.conversation,
            &evicted.edited,
            &evicted.report,
        )
    };
    run().map_err(|e| context_error_to_js(&e))
}

fn offload_options(options: &JsValue) -> Result<OffloadOptions, ContextError> {
    let options: OffloadOptions = read_options(options)?;
    if options.session_id.is_empty() {
        return Err(ContextError::options(
            "options.sessionId",
            "expected a non-empty string".to_owned(),
        ));
    }
    Ok(options)
}

/// A save as `{ key, bytes }`.
fn save_to_js(save: &Save) -> Result<JsValue, ContextError> {
    let object = js_sys::Object::new();
    let key: js_sys::Array = save.key.iter().map(|k| JsValue::from_str(k)).collect();
    let bytes = js_sys::Uint8Array::from(save.bytes.as_slice());
    js_sys::Reflect::set(&object, &"key".into(), &key)
        .and_then(|_| js_sys::Reflect::set(&object, &"bytes".into(), &bytes))
        .map_err(|err| ContextError::internal(super::error_message(&err)))?;
    Ok(object.into())
}

/// Outcomes as the driver hands them: per save, `null` when the store confirmed it, else the
/// reason it did not (a string).
fn outcomes(values: &js_sys::Array) -> Vec<Outcome> {
    values
        .iter()
        .map(|v| match v.as_string() {
            Some(reason) => Outcome::Failed(reason),
            None if v.is_null() || v.is_undefined() => Outcome::Saved,
            None => Outcome::Failed("the save failed".to_owned()),
        })
        .collect()
}

/// The offload of a conversation, planned, waiting for its saves.
#[wasm_bindgen(js_name = __CkOffloadPlan, skip_typescript)]
#[derive(Debug)]
pub struct OffloadPlanJs {
    messages: JsValue,
    plan: Option<OffloadPlan>,
}

#[wasm_bindgen(js_class = __CkOffloadPlan)]
impl OffloadPlanJs {
    /// The saves, as `[{ key, bytes }]`.
    pub fn saves(&self) -> Result<js_sys::Array, JsValue> {
        let out = js_sys::Array::new();
        if let Some(plan) = &self.plan {
            for save in plan.saves() {
                out.push(&save_to_js(save).map_err(|e| context_error_to_js(&e))?);
            }
        }
        Ok(out)
    }

    /// The conversation with the confirmed offloads made, and the report.
    pub fn apply(&mut self, outcomes_js: js_sys::Array) -> Result<JsValue, JsValue> {
        enter();
        let plan = self.plan.take().ok_or_else(|| {
            context_error_to_js(&ContextError::internal(
                "the plan was already applied".to_owned(),
            ))
        })?;
        let done = plan.apply(&outcomes(&outcomes_js));
        written(
            &self.messages,
            done.conversation,
            &done.edited,
            &done.report,
        )
        .map_err(|e| context_error_to_js(&e))
    }
}

#[wasm_bindgen(js_name = __ckPlanOffload, skip_typescript)]
pub fn plan_offload(messages: JsValue, options: JsValue) -> Result<OffloadPlanJs, JsValue> {
    enter();
    let run = || {
        let (format, options) = split_format(&options)?;
        let options = offload_options(&options)?;
        let conv = read_conversation(&messages, format)?;
        Ok(OffloadPlanJs {
            plan: Some(offload::plan_messages(conv, &options)),
            messages: messages.clone(),
        })
    };
    run().map_err(|e: ContextError| context_error_to_js(&e))
}

/// The offload of one result, planned.
#[wasm_bindgen(js_name = __CkResultPlan, skip_typescript)]
#[derive(Debug)]
pub struct ResultPlanJs {
    result: JsValue,
    plan: Option<ResultPlan>,
}

#[wasm_bindgen(js_class = __CkResultPlan)]
impl ResultPlanJs {
    /// The save, or `undefined` when the result stays as it is.
    pub fn save(&self) -> Result<JsValue, JsValue> {
        match self.plan.as_ref().and_then(ResultPlan::save) {
            Some(save) => save_to_js(save).map_err(|e| context_error_to_js(&e)),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// `{ content, offloaded, failure? }` after the save's outcome (`null`: saved; a string:
    /// why not).
    pub fn apply(&mut self, outcome: JsValue) -> Result<JsValue, JsValue> {
        enter();
        let plan = self.plan.take().ok_or_else(|| {
            context_error_to_js(&ContextError::internal(
                "the plan was already applied".to_owned(),
            ))
        })?;
        let planned = plan.save().is_some();
        let outcome = planned.then(|| outcomes(&js_sys::Array::of1(&outcome)).remove(0));
        let done = plan.apply(outcome.as_ref());
        let result = js_sys::Object::new();
        let content = if done.offloaded.is_some() {
            to_js(&done.content).map_err(|e| context_error_to_js(&e))?
        } else {
            self.result.clone()
        };
        let offloaded = match &done.offloaded {
            Some(o) => to_js(o).map_err(|e| context_error_to_js(&e))?,
            None => JsValue::NULL,
        };
        let _ = js_sys::Reflect::set(&result, &"content".into(), &content);
        let _ = js_sys::Reflect::set(&result, &"offloaded".into(), &offloaded);
        if let Some(failure) = done.failure {
            let _ = js_sys::Reflect::set(&result, &"failure".into(), &failure.into());
        }
        Ok(result.into())
    }
}

#[wasm_bindgen(js_name = __ckPlanResult, skip_typescript)]
pub fn plan_result(result: JsValue, options: JsValue) -> Result<ResultPlanJs, JsValue> {
    enter();
    let run = || {
        let options = offload_options(&options)?;
        let value = walk::read(&result, None)
            .map_err(|err| ContextError::messages(format!("result{}", err.path()), err.reason))?
            .unwrap_or(Value::Null);
        Ok(ResultPlanJs {
            plan: Some(offload::plan_result(value, &options)),
            result: result.clone(),
        })
    };
    run().map_err(|e: ContextError| context_error_to_js(&e))
}

/// The store key prefix of a session's offloads.
#[wasm_bindgen(js_name = __ckOffloadKey, skip_typescript)]
pub fn offload_key(session_id: &str, id: Option<String>) -> js_sys::Array {
    let mut key = offload::offload_key(session_id, "");
    match id {
        Some(id) => {
            if let Some(last) = key.last_mut() {
                *last = id;
            }
        }
        None => {
            key.pop();
        }
    }
    key.iter().map(|k| JsValue::from_str(k)).collect()
}

/// Reads lines of a stored record: `ReadResult`.
#[wasm_bindgen(js_name = __ckRead, skip_typescript)]
pub fn read_record(
    id: &str,
    bytes: &[u8],
    offset: f64,
    limit: f64,
    line_chars: f64,
) -> Result<JsValue, JsValue> {
    enter();
    let run = || {
        let (_, text) = recovery::decode(id, bytes).map_err(ContextError::from)?;
        let read = recovery::read_lines(
            id,
            text,
            as_count(offset, 1),
            as_count(limit, recovery::DEFAULT_READ_LINES),
            as_count(line_chars, offload::DEFAULT_LINE_CHARS),
        );
        let out = to_js(&read)?;
        let _ = js_sys::Reflect::set(
            &out,
            &"rendered".into(),
            &recovery::render_read(&read).into(),
        );
        Ok(out)
    };
    run().map_err(|e: ContextError| context_error_to_js(&e))
}

/// A count from a JS number the driver has checked: finite and positive, or the default.
fn as_count(n: f64, default: usize) -> usize {
    if n.is_finite() && n >= 1.0 {
        n.min(usize::MAX as f64) as usize
    } else {
        default
    }
}

/// The headers of stored records (`[{ key, data }]` as `loadRange` gives them), by id;
/// `{ headers, damaged }`.
#[wasm_bindgen(js_name = __ckList, skip_typescript)]
pub fn list_records(entries: js_sys::Array) -> Result<JsValue, JsValue> {
    enter();
    let mut headers: Vec<RecordHeader> = Vec::new();
    let mut damaged: Vec<String> = Vec::new();
    for (id, data) in entries_of(&entries) {
        match recovery::decode_header(&data) {
            Some(header) => headers.push(header),
            None => damaged.push(id),
        }
    }
    headers.sort_by(|a, b| a.id.cmp(&b.id));
    let run = || {
        let out = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&out, &"headers".into(), &to_js(&headers)?);
        let _ = js_sys::Reflect::set(&out, &"damaged".into(), &to_js(&damaged)?);
        let _ = js_sys::Reflect::set(
            &out,
            &"rendered".into(),
            &recovery::render_list(&headers).into(),
        );
        Ok(out.into())
    };
    run().map_err(|e: ContextError| context_error_to_js(&e))
}

/// `(id, bytes)` of `[{ key, data }]`: the id is the key's last component.
fn entries_of(entries: &js_sys::Array) -> Vec<(String, Vec<u8>)> {
    entries
        .iter()
        .filter_map(|entry| {
            let key = js_sys::Reflect::get(&entry, &"key".into()).ok()?;
            let key: js_sys::Array = key.dyn_into().ok()?;
            let id = key.get(key.length().checked_sub(1)?).as_string()?;
            let data = js_sys::Reflect::get(&entry, &"data".into()).ok()?;
            let data: js_sys::Uint8Array = data.dyn_into().ok()?;
            Some((id, data.to_vec()))
        })
        .collect()
}

/// Searches stored records: `GrepResult` and its rendering.
#[wasm_bindgen(js_name = __ckGrep, skip_typescript)]
pub fn grep_records(
    pattern: &str,
    entries: js_sys::Array,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    enter();
    let run = || {
        let options: GrepOptions = read_options(&options)?;
        let compiled = Pattern::new(pattern, options.ignore_case).map_err(ContextError::from)?;
        let entries = entries_of(&entries);
        let found = recovery::grep(
            &compiled,
            entries
                .iter()
                .map(|(id, bytes)| (id.as_str(), bytes.as_slice())),
            &options,
        );
        let out = to_js(&found)?;
        let _ = js_sys::Reflect::set(
            &out,
            &"rendered".into(),
            &recovery::render_grep(&found, pattern).into(),
        );
        Ok(out)
    };
    run().map_err(|e: ContextError| context_error_to_js(&e))
}

/// The recovery tools' definitions in a format's shape.
#[wasm_bindgen(js_name = __ckToolDefinitions, skip_typescript)]
pub fn tool_definitions(format: &str) -> Result<JsValue, JsValue> {
    enter();
    let run = || {
        let format = Format::from_name(format).ok_or_else(|| {
            ContextError::options(
                "options.format",
                format!("unknown format {format:?}; known formats: openai, anthropic, aisdk"),
            )
        })?;
        to_js(&recovery::tool_definitions(format))
    };
    run().map_err(|e: ContextError| context_error_to_js(&e))
}
