//! The one message model every format is read into and written back from.
//!
//! A [`Conversation`] is a list of [`Message`]s, each a role and ordered [`Part`]s. Every part
//! owns the exact JSON it was read from, and every message keeps its own object minus the fields
//! its parts were taken from; writing puts the parts back where they came from. So an untouched
//! message is written back exactly as it was read (same keys, same order, same values), and an
//! edited part changes only the fields the edit names.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::compaction::{CompactionMarker, COMPACTION_TAG};
use super::format::Format;

/// Who a message is from. Each format accepts a subset; see the adapters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions (OpenAI, AI SDK; Anthropic's top-level `system` is read as one too).
    System,
    /// OpenAI's name for system instructions to reasoning models.
    Developer,
    /// The user; in Anthropic also the carrier of tool results.
    User,
    /// The model.
    Assistant,
    /// A tool result (OpenAI, AI SDK).
    Tool,
    /// OpenAI's legacy function result.
    Function,
}

impl Role {
    /// The role as the formats spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
        }
    }
}

/// What a part holds; the categories counting and pruning work with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartKind {
    /// Text (also OpenAI's `refusal`).
    Text,
    /// An image.
    Image,
    /// A file, document or audio attachment.
    File,
    /// Model reasoning with readable text (Anthropic `thinking`, AI SDK `reasoning`).
    Reasoning,
    /// Encrypted reasoning (Anthropic `redacted_thinking`, AI SDK v4 `redacted-reasoning`).
    RedactedReasoning,
    /// A tool call: id, name, input.
    ToolCall,
    /// A tool result: the id of the call it answers, content, error flag.
    ToolResult,
    /// A text part written by [`Message::compaction`]: the summary of archived messages.
    Compaction,
    /// A part type this crate does not know; kept and written back as it is.
    Unknown,
    /// A part of an AI SDK `UIMessage` that `convertToModelMessages` does not send to the
    /// model: `step-start`, `source-url`, `source-document`, `data-*` (unless the host's
    /// `convertDataPart` turns it into text or a file), a tool call still streaming its input,
    /// and what a user message (anything but text and files) or a system message (anything but
    /// text) does not keep.
    UiOnly,
}

/// Where a part's JSON sits in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The message's `content` is a string and this part is that string.
    Content,
    /// One element of the message's `content` array.
    Item,
    /// One element of OpenAI's `tool_calls`.
    ToolCall,
    /// OpenAI's legacy `function_call`.
    FunctionCall,
    /// The whole message object (OpenAI `tool` and `function` messages).
    Whole,
    /// One element of an AI SDK `UIMessage`'s `parts` array.
    UiPart,
}

/// What a message field held before its parts were taken out, to write the same shape back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    Absent,
    Null,
    String,
    Array,
    /// No `content` (absent or `null`, and left as it was): the items are an AI SDK
    /// `UIMessage`'s `parts`.
    Parts,
}

/// A tool call's input, as the format holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ToolInput<'a> {
    /// A JSON value (Anthropic `input`, AI SDK `input`/`args`).
    Json(&'a Value),
    /// A string, JSON by convention (OpenAI `arguments`, custom tools' `input`).
    Text(&'a str),
}

/// One piece of a tool result's content.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Segment<'a> {
    /// Text.
    Text(&'a str),
    /// A JSON value the model reads serialized (AI SDK `json` outputs, unknown blocks).
    Json(&'a Value),
    /// An image or file block, as JSON.
    Media(&'a Value),
}

/// How a tool result's content is shaped where [`Part::result_slot`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultShape {
    /// A string, or an array of content blocks (`{type: "text", text}`, images, files...).
    Content,
    /// An AI SDK `ToolResultOutput`: `{type: "text" | "error-text", value: string}`,
    /// `{type: "json" | "error-json", value}` or `{type: "content", value: [...]}`.
    Output,
    /// Any JSON value the model reads serialized (a string is read as text).
    Plain,
}

/// An edit that does not apply to the part it was asked of.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The edit is for another kind of part.
    #[error("{op} does not apply to a {kind:?} part")]
    WrongKind {
        /// The edit.
        op: &'static str,
        /// The part's kind.
        kind: PartKind,
    },
    /// The tool call's input is not a JSON object, so it has no fields to replace.
    #[error("the tool call's input is not a JSON object")]
    InputNotObject,
}

/// What an adapter learned about a part while checking its shape.
#[derive(Clone, Debug, Default)]
pub(crate) struct PartInfo {
    pub kind: Option<PartKind>,
    pub text_key: Option<&'static str>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub is_error: bool,
}

impl PartInfo {
    pub fn of(kind: PartKind) -> Self {
        PartInfo {
            kind: Some(kind),
            ..PartInfo::default()
        }
    }

    /// A text part whose text is at `key`; a compaction marker if the text says so.
    pub fn text(text: &str, key: &'static str) -> Self {
        PartInfo {
            kind: Some(kind_of_text(text)),
            text_key: Some(key),
            ..PartInfo::default()
        }
    }

    pub fn key(mut self, key: &'static str) -> Self {
        self.text_key = Some(key);
        self
    }

    pub fn id(mut self, id: Option<&str>) -> Self {
        self.id = id.map(str::to_owned);
        self
    }

    pub fn name(mut self, name: Option<&str>) -> Self {
        self.name = name.map(str::to_owned);
        self
    }

    pub fn error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }
}

pub(crate) fn kind_of_text(text: &str) -> PartKind {
    if text.starts_with(COMPACTION_TAG) {
        PartKind::Compaction
    } else {
        PartKind::Text
    }
}

/// One part of a message, with the JSON it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub(crate) kind: PartKind,
    pub(crate) format: Format,
    pub(crate) slot: Slot,
    pub(crate) text_key: Option<&'static str>,
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) is_error: bool,
    pub(crate) raw: Value,
    /// Whether `raw` was read with its long texts cut short ([`Conversation::mark_skimmed`]):
    /// such a part may be checked, never written out.
    pub(crate) skimmed: bool,
}

impl Part {
    pub(crate) fn from_info(format: Format, slot: Slot, info: PartInfo, raw: Value) -> Part {
        Part {
            kind: info.kind.unwrap_or(PartKind::Unknown),
            format,
            slot,
            text_key: info.text_key,
            id: info.id,
            name: info.name,
            is_error: info.is_error,
            raw,
            skimmed: false,
        }
    }

    /// The part a message's string `content` becomes.
    pub(crate) fn content_string(format: Format, text: String) -> Part {
        Part {
            kind: kind_of_text(&text),
            format,
            slot: Slot::Content,
            text_key: None,
            id: None,
            name: None,
            is_error: false,
            raw: Value::String(text),
            skimmed: false,
        }
    }

    /// What the part holds.
    pub fn kind(&self) -> PartKind {
        self.kind
    }

    /// The format the part was read in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The JSON the part was read from: the block or part object; the string itself when the
    /// message's `content` was a string; for an OpenAI `tool` or `function` message, the whole
    /// message.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// For a tool call its id; for a tool result the id of the call it answers. `None` for
    /// OpenAI's legacy `function_call`, which has no id.
    pub fn call_id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The tool's name, for a tool call, and for a tool result when the format records it.
    pub fn tool_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether a tool result is marked as an error (`is_error`, `isError`, `error-*` outputs).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// Whether a tool call holds its own result: an AI SDK `UIMessage` tool part whose `state`
    /// is `output-available`, `output-error` or `output-denied`. Such a call needs no result
    /// part after it.
    pub fn holds_result(&self) -> bool {
        self.slot == Slot::UiPart
            && self.kind == PartKind::ToolCall
            && matches!(
                self.raw.get("state").and_then(Value::as_str),
                Some("output-available" | "output-error" | "output-denied")
            )
    }

    /// The text of a text, reasoning or compaction part.
    pub fn text(&self) -> Option<&str> {
        if self.slot == Slot::Content {
            return self.raw.as_str();
        }
        self.raw.get(self.text_key?)?.as_str()
    }

    /// A tool call's input.
    pub fn tool_input(&self) -> Option<ToolInput<'_>> {
        if self.kind != PartKind::ToolCall {
            return None;
        }
        match self.format {
            Format::OpenAi => {
                let text = match self.slot {
                    Slot::FunctionCall => self.raw.get("arguments"),
                    _ => (self.raw.get("function").and_then(|f| f.get("arguments")))
                        .or_else(|| self.raw.get("custom").and_then(|c| c.get("input"))),
                };
                text.and_then(Value::as_str).map(ToolInput::Text)
            }
            Format::Anthropic => self.raw.get("input").map(ToolInput::Json),
            // NOTE: a UIMessage tool part that failed to parse its input keeps it as `rawInput`.
            Format::AiSdk => (self.raw.get("input"))
                .or_else(|| self.raw.get("args"))
                .or_else(|| self.raw.get("rawInput"))
                .map(ToolInput::Json),
        }
    }

    /// A tool result's content, in order. An AI SDK `UIMessage` tool part is a call that holds
    /// its own result ([`Part::holds_result`]): this is that result (empty until it has one).
    pub fn result_content(&self) -> Vec<Segment<'_>> {
        let mut out = Vec::new();
        if self.slot == Slot::UiPart && self.kind == PartKind::ToolCall {
            ui_tool_output(&self.raw, &mut out);
            return out;
        }
        if self.kind != PartKind::ToolResult {
            return out;
        }
        match self.format {
            Format::OpenAi | Format::Anthropic => match self.raw.get("content") {
                Some(Value::String(s)) => out.push(Segment::Text(s)),
                Some(Value::Array(items)) => out.extend(items.iter().map(block_segment)),
                _ => {}
            },
            Format::AiSdk => {
                if let Some(output) = self.raw.get("output") {
                    let value = output.get("value");
                    match (output.get("type").and_then(Value::as_str), value) {
                        (Some("text" | "error-text"), Some(Value::String(s))) => {
                            out.push(Segment::Text(s));
                        }
                        (Some("json" | "error-json"), Some(v)) => out.push(Segment::Json(v)),
                        (Some("content"), Some(Value::Array(items))) => {
                            out.extend(items.iter().map(block_segment));
                        }
                        _ => out.push(Segment::Json(output)),
                    }
                } else if let Some(Value::Array(items)) = self.raw.get("experimental_content") {
                    // NOTE: v4's multi-part result (`experimental_toToolResultContent`) is what
                    // the provider receives instead of `result`.
                    out.extend(items.iter().map(block_segment));
                } else if let Some(result) = self.raw.get("result") {
                    out.push(match result {
                        Value::String(s) => Segment::Text(s),
                        other => Segment::Json(other),
                    });
                }
            }
        }
        out
    }

    /// The marker, if this part is a compaction marker.
    pub fn compaction_marker(&self) -> Option<CompactionMarker> {
        if self.kind != PartKind::Compaction {
            return None;
        }
        CompactionMarker::from_text(self.text()?)
    }

    /// Replaces the text of a text or compaction part.
    ///
    /// ```
    /// use context_keeper::messages::{parse_messages, MessagesOptions};
    /// let input = serde_json::json!([{"role": "user", "content": "hi", "x": 1}]);
    /// let mut conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    /// conv.messages_mut()[0].parts_mut()[0].set_text("hello").unwrap();
    /// assert_eq!(conv.into_value(), serde_json::json!([{"role": "user", "content": "hello", "x": 1}]));
    /// ```
    pub fn set_text(&mut self, text: impl Into<String>) -> Result<(), EditError> {
        if !matches!(self.kind, PartKind::Text | PartKind::Compaction) {
            return Err(EditError::WrongKind {
                op: "set_text",
                kind: self.kind,
            });
        }
        let text = text.into();
        self.kind = kind_of_text(&text);
        if self.slot == Slot::Content {
            self.raw = Value::String(text);
            return Ok(());
        }
        let key = self.text_key.unwrap_or("text");
        let obj = obj_mut(&mut self.raw, "set_text", self.kind)?;
        put(obj, key, Some(Value::String(text)));
        Ok(())
    }

    /// Replaces a tool result's content with one text, keeping the error flag and every other
    /// field. AI SDK results get a `text` (or `error-text`) output, or a string `result` when
    /// they used the v4 name.
    pub fn set_result_text(&mut self, text: impl Into<String>) -> Result<(), EditError> {
        if self.kind != PartKind::ToolResult {
            return Err(EditError::WrongKind {
                op: "set_result_text",
                kind: self.kind,
            });
        }
        let text = Value::String(text.into());
        let (format, is_error, kind) = (self.format, self.is_error, self.kind);
        let obj = obj_mut(&mut self.raw, "set_result_text", kind)?;
        match format {
            Format::OpenAi | Format::Anthropic => put(obj, "content", Some(text)),
            Format::AiSdk if obj.contains_key("output") || !obj.contains_key("result") => {
                let ty = if is_error { "error-text" } else { "text" };
                put(obj, "output", Some(json!({ "type": ty, "value": text })));
            }
            Format::AiSdk => {
                put(obj, "result", Some(text));
                // NOTE: v4 sends `experimental_content` instead of `result` when it is there.
                put(obj, "experimental_content", None);
            }
        }
        Ok(())
    }

    /// Replaces one field of a tool call's input object (for example a file-write tool's
    /// `content` argument), keeping the other fields. OpenAI's `arguments` string is parsed,
    /// edited and serialized again.
    /// Sets Anthropic's `cache_control` on this content block. False (and nothing changed)
    /// when the part is not a block of a content array or carries one already.
    pub fn set_cache_control(&mut self, value: Value) -> bool {
        if self.slot != Slot::Item {
            return false;
        }
        match &mut self.raw {
            Value::Object(obj) if !obj.contains_key("cache_control") => {
                obj.insert("cache_control".to_owned(), value);
                true
            }
            _ => false,
        }
    }

    pub fn set_input_field(&mut self, field: &str, value: Value) -> Result<(), EditError> {
        if self.kind != PartKind::ToolCall {
            return Err(EditError::WrongKind {
                op: "set_input_field",
                kind: self.kind,
            });
        }
        let (format, slot, kind) = (self.format, self.slot, self.kind);
        let obj = obj_mut(&mut self.raw, "set_input_field", kind)?;
        match format {
            Format::OpenAi => {
                let holder = match slot {
                    Slot::FunctionCall => Some(obj),
                    _ => match obj.get_mut("function") {
                        Some(Value::Object(f)) => Some(f),
                        _ => None,
                    },
                };
                let Some(holder) = holder else {
                    return Err(EditError::InputNotObject);
                };
                let args = holder
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("{}");
                let mut parsed: Map<String, Value> =
                    serde_json::from_str(args).map_err(|_| EditError::InputNotObject)?;
                put(&mut parsed, field, Some(value));
                let text = serde_json::to_string(&parsed).map_err(|_| EditError::InputNotObject)?;
                put(holder, "arguments", Some(Value::String(text)));
            }
            Format::Anthropic | Format::AiSdk => {
                let key = if format == Format::AiSdk
                    && !obj.contains_key("input")
                    && obj.contains_key("args")
                {
                    "args"
                } else {
                    "input"
                };
                match obj.get_mut(key) {
                    Some(Value::Object(input)) => put(input, field, Some(value)),
                    _ => return Err(EditError::InputNotObject),
                }
            }
        }
        Ok(())
    }

    /// Where a tool result's content lives in this part, and how it is shaped: the one place
    /// that knows, per format, which field the model reads as the result. `None` for parts
    /// that hold no result (and for a `UIMessage` tool part without one, or denied, whose
    /// result is a fixed sentence).
    ///
    /// - OpenAI `tool` messages and Anthropic `tool_result` blocks: `content`, a string or
    ///   content blocks ([`ResultShape::Content`]).
    /// - AI SDK `tool-result` parts: `output` ([`ResultShape::Output`]); v4's
    ///   `experimental_content` when present (what the provider receives), else `result`
    ///   ([`ResultShape::Plain`]).
    /// - AI SDK `UIMessage` tool parts: `output` once available, `errorText` on error
    ///   ([`ResultShape::Plain`]).
    pub fn result_slot(&self) -> Option<(ResultShape, &Value)> {
        let (shape, key) = self.result_key()?;
        Some((shape, self.raw.get(key)?))
    }

    /// [`Part::result_slot`], to edit in place. Every other field of the part stays.
    pub fn result_slot_mut(&mut self) -> Option<(ResultShape, &mut Value)> {
        let (shape, key) = self.result_key()?;
        Some((shape, self.raw.get_mut(key)?))
    }

    fn result_key(&self) -> Option<(ResultShape, &'static str)> {
        if self.slot == Slot::UiPart && self.kind == PartKind::ToolCall {
            return match self.raw.get("state").and_then(Value::as_str) {
                Some("output-available") => Some((ResultShape::Plain, "output")),
                Some("output-error") => Some((ResultShape::Plain, "errorText")),
                _ => None,
            };
        }
        if self.kind != PartKind::ToolResult {
            return None;
        }
        match self.format {
            Format::OpenAi | Format::Anthropic => Some((ResultShape::Content, "content")),
            Format::AiSdk if self.raw.get("output").is_some() => {
                Some((ResultShape::Output, "output"))
            }
            Format::AiSdk
                if self
                    .raw
                    .get("experimental_content")
                    .is_some_and(Value::is_array) =>
            {
                Some((ResultShape::Content, "experimental_content"))
            }
            Format::AiSdk => Some((ResultShape::Plain, "result")),
        }
    }

    /// Changes the id of a tool call, or the id a tool result answers.
    pub(crate) fn set_call_id(&mut self, id: &str) {
        let key = match (self.format, self.kind) {
            (Format::OpenAi, PartKind::ToolCall) => "id",
            (Format::OpenAi, _) => "tool_call_id",
            (Format::Anthropic, PartKind::ToolCall) => "id",
            (Format::Anthropic, _) => "tool_use_id",
            (Format::AiSdk, _) => "toolCallId",
        };
        if self.id.is_none() {
            return; // NOTE: legacy function calls pair by position and have no id to change.
        }
        if let Value::Object(obj) = &mut self.raw {
            put(obj, key, Some(Value::String(id.to_owned())));
            self.id = Some(id.to_owned());
        }
    }

    /// The JSON this part has as an element of a content array.
    fn into_item_raw(self) -> Value {
        match self.slot {
            Slot::Content => json!({ "type": "text", "text": self.raw }),
            _ => self.raw,
        }
    }

    /// The part as an element of a content array (a string content becomes a text block).
    pub(crate) fn into_item(self) -> Part {
        let format = self.format;
        match self.slot {
            Slot::Content => Part {
                slot: Slot::Item,
                text_key: Some("text"),
                raw: json!({ "type": "text", "text": self.raw }),
                format,
                ..self
            },
            _ => self,
        }
    }
}

fn block_segment(item: &Value) -> Segment<'_> {
    match (item.get("type").and_then(Value::as_str), item.get("text")) {
        (Some("text"), Some(Value::String(s))) => Segment::Text(s),
        (
            Some(
                "image" | "image_url" | "document" | "file" | "media" | "image-data" | "file-data",
            ),
            _,
        ) => Segment::Media(item),
        _ => Segment::Json(item),
    }
}

/// The result a `UIMessage` tool part holds, as `convertToModelMessages` sends it: the output
/// (text when a string, else JSON), the error text, or the reason a call was denied.
fn ui_tool_output<'a>(raw: &'a Value, out: &mut Vec<Segment<'a>>) {
    let held = match raw.get("state").and_then(Value::as_str) {
        Some("output-available") => raw.get("output"),
        Some("output-error") => raw.get("errorText"),
        Some("output-denied") => {
            let reason = (raw.get("approval"))
                .and_then(|a| a.get("reason"))
                .and_then(Value::as_str);
            out.push(Segment::Text(reason.unwrap_or("Tool execution denied.")));
            return;
        }
        _ => None,
    };
    match held {
        Some(Value::String(s)) => out.push(Segment::Text(s)),
        Some(Value::Null) | None => {}
        Some(other) => out.push(Segment::Json(other)),
    }
}

fn obj_mut<'a>(
    raw: &'a mut Value,
    op: &'static str,
    kind: PartKind,
) -> Result<&'a mut Map<String, Value>, EditError> {
    match raw {
        Value::Object(obj) => Ok(obj),
        _ => Err(EditError::WrongKind { op, kind }),
    }
}

/// Sets `key` in place (keeping its position) or appends it; `None` removes it, keeping the
/// order of the others.
pub(crate) fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    match value {
        Some(v) => match map.get_mut(key) {
            Some(slot) => *slot = v,
            None => {
                map.insert(key.to_owned(), v);
            }
        },
        None => {
            map.shift_remove(key);
        }
    }
}

/// One message: a role and ordered parts.
///
/// A clone shares the message's data and copies it only when one of the two is edited (copy
/// on write, through `DerefMut`): the tiers work on copies of a conversation, and a copy of a
/// 1,000-message history costs a pointer per message, not a copy of every text in it.
#[derive(Clone, PartialEq)]
pub struct Message(Arc<MessageData>);

/// What a [`Message`] holds.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageData {
    pub(crate) role: Role,
    pub(crate) format: Format,
    /// The message object, with the fields the parts were taken from left as `null`
    /// placeholders at their positions.
    pub(crate) skeleton: Map<String, Value>,
    pub(crate) content: Form,
    pub(crate) tool_calls: Form,
    pub(crate) parts: Vec<Part>,
    /// Whether `skeleton` was read with its long texts cut short ([`Conversation::mark_skimmed`]).
    pub(crate) skimmed: bool,
    /// The message's count key once computed (by the counter's keyer);
    /// emptied by every edit.
    pub(crate) key: KeyCell,
}

/// What identifies a message apart from any counting rules: a hash of its format, role and
/// JSON, and the number of bytes hashed (the counter makes it: `crate::counting`'s `Keyer`).
/// Here, with the message it keys, so that messages depend on no counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageKey(u64, u64);

impl MessageKey {
    pub(crate) const fn new(hash: u64, len: u64) -> MessageKey {
        MessageKey(hash, len)
    }

    /// The message's hash (XXH3-64 of its specified bytes): equal for two messages that read
    /// the same, so a caller may compare outputs by it.
    pub fn digest(self) -> u64 {
        self.0
    }

    /// How many bytes were hashed.
    pub(crate) fn hashed_len(self) -> u64 {
        self.1
    }
}

/// A message's count key, computed at most once per version of the message. It takes no part
/// in comparing messages.
#[derive(Clone, Default)]
pub(crate) struct KeyCell(OnceLock<MessageKey>);

impl KeyCell {
    pub(crate) fn get(&self) -> Option<MessageKey> {
        self.0.get().copied()
    }

    pub(crate) fn set(&self, key: MessageKey) {
        // NOTE: a key set twice is the same key (it is a function of the message).
        let _ = self.0.set(key);
    }
}

impl PartialEq for KeyCell {
    fn eq(&self, _: &KeyCell) -> bool {
        true
    }
}

impl fmt::Debug for KeyCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyCell")
    }
}

impl From<MessageData> for Message {
    fn from(data: MessageData) -> Message {
        Message(Arc::new(data))
    }
}

impl std::ops::Deref for Message {
    type Target = MessageData;
    fn deref(&self) -> &MessageData {
        &self.0
    }
}

impl std::ops::DerefMut for Message {
    /// The message's own data, copied first when a clone shares it; an edit empties the key.
    fn deref_mut(&mut self) -> &mut MessageData {
        let data = Arc::make_mut(&mut self.0);
        data.key = KeyCell::default();
        data
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Message {
    /// A message whose whole object is one part (OpenAI `tool` and `function` messages).
    pub(crate) fn whole(format: Format, role: Role, part: Part) -> Message {
        Message::from(MessageData {
            role,
            format,
            skeleton: Map::new(),
            content: Form::Absent,
            tool_calls: Form::Absent,
            parts: vec![part],
            skimmed: false,
            key: KeyCell::default(),
        })
    }

    /// A new message with array content made of `parts` (which must be content items).
    pub(crate) fn with_parts(format: Format, role: Role, parts: Vec<Part>) -> Message {
        let mut skeleton = Map::new();
        skeleton.insert("role".to_owned(), Value::String(role.name().to_owned()));
        skeleton.insert("content".to_owned(), Value::Null);
        Message::from(MessageData {
            role,
            format,
            skeleton,
            content: Form::Array,
            tool_calls: Form::Absent,
            parts,
            skimmed: false,
            key: KeyCell::default(),
        })
    }

    /// A new message with string content.
    pub fn text(format: Format, role: Role, text: impl Into<String>) -> Message {
        let mut skeleton = Map::new();
        skeleton.insert("role".to_owned(), Value::String(role.name().to_owned()));
        skeleton.insert("content".to_owned(), Value::Null);
        let part = Part::content_string(format, text.into());
        Message::from(MessageData {
            role,
            format,
            skeleton,
            content: Form::String,
            tool_calls: Form::Absent,
            parts: vec![part],
            skimmed: false,
            key: KeyCell::default(),
        })
    }

    /// A user message holding a compaction marker, valid in every format.
    pub fn compaction(format: Format, marker: &CompactionMarker) -> Message {
        Message::text(format, Role::User, marker.to_text())
    }

    /// The identity of the message's data, which its clones share until one is edited: equal
    /// for two messages only while they share it (and only while one of them is alive).
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Who the message is from.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The format the message was read in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The parts, in order: content first, then OpenAI's `tool_calls` and `function_call`.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The parts, taking the message apart.
    pub(crate) fn into_parts(self) -> Vec<Part> {
        Arc::unwrap_or_clone(self.0).parts
    }

    /// The parts, for in-place edits ([`Part::set_text`], [`Part::set_result_text`],
    /// [`Part::set_input_field`]).
    pub fn parts_mut(&mut self) -> &mut [Part] {
        &mut self.parts
    }

    /// The message with only its parts `from..to` (the rest of its object as it is): one step
    /// or several of a `UIMessage` that holds an agent's whole reply. `None` for a range out of
    /// bounds or a message whose object is one part.
    pub(crate) fn with_parts_range(&self, from: usize, to: usize) -> Option<Message> {
        if self.is_whole() {
            return None;
        }
        let parts = self.parts.get(from..to)?.to_vec();
        Some(Message::from(MessageData {
            role: self.role,
            format: self.format,
            skeleton: self.skeleton.clone(),
            content: self.content,
            tool_calls: self.tool_calls,
            parts,
            skimmed: self.skimmed,
            key: KeyCell::default(),
        }))
    }

    /// Whether the message is an AI SDK `UIMessage`: its parts are its `parts`, not `content`.
    pub fn is_ui_message(&self) -> bool {
        self.content == Form::Parts
    }

    /// Whether the message holds at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.parts.iter().any(|p| p.kind == PartKind::ToolCall)
    }

    /// Whether any of the message was read with its long texts cut short
    /// ([`super::parse_skimmed_messages_value`]): such a message may be checked, never written.
    pub fn is_skimmed(&self) -> bool {
        self.skimmed || self.parts.iter().any(|p| p.skimmed)
    }

    pub(crate) fn is_whole(&self) -> bool {
        self.parts.iter().any(|p| p.slot == Slot::Whole)
    }

    /// The length in bytes of the longest string in the message's JSON, down to 64 levels
    /// (texts a skimmed message was read with cut short count as they were read).
    pub fn longest_text(&self) -> usize {
        fn longest(value: &Value, depth: usize) -> usize {
            let inner = |v: &Value| if depth < 64 { longest(v, depth + 1) } else { 0 };
            match value {
                Value::String(s) => s.len(),
                Value::Array(items) => items.iter().map(inner).max().unwrap_or(0),
                Value::Object(map) => map.values().map(inner).max().unwrap_or(0),
                _ => 0,
            }
        }
        let parts = self.parts.iter().map(|part| longest(part.raw(), 1));
        let rest = self.skeleton.values().map(|value| longest(value, 1));
        parts.chain(rest).max().unwrap_or(0)
    }

    /// The message as JSON in its format.
    pub fn to_value(&self) -> Value {
        self.clone().into_value()
    }

    /// The message as JSON in its format, consuming it.
    pub fn into_value(self) -> Value {
        let MessageData {
            mut skeleton,
            content,
            tool_calls,
            parts,
            ..
        } = Arc::unwrap_or_clone(self.0);
        let mut items = Vec::new();
        let mut calls = Vec::new();
        let mut function_call = None;
        for part in parts {
            match part.slot {
                Slot::Whole => return part.raw,
                Slot::Content | Slot::Item | Slot::UiPart => items.push(part),
                Slot::ToolCall => calls.push(part.raw),
                Slot::FunctionCall => function_call = Some(part.raw),
            }
        }
        if content == Form::Parts {
            let parts = items.into_iter().map(Part::into_item_raw).collect();
            put(&mut skeleton, "parts", Some(Value::Array(parts)));
        } else {
            put(&mut skeleton, "content", content_value(items, content));
        }
        // NOTE: `tool_calls` is only ours when it was read as OpenAI calls or calls were added;
        // anywhere else it is an unknown field and stays as it is.
        if !calls.is_empty() || tool_calls != Form::Absent {
            let calls = match (calls.is_empty(), tool_calls) {
                (true, Form::Null) => Value::Null,
                _ => Value::Array(calls),
            };
            put(&mut skeleton, "tool_calls", Some(calls));
        }
        if function_call.is_some() {
            put(&mut skeleton, "function_call", function_call);
        }
        Value::Object(skeleton)
    }

    /// The value of `content` alone (Anthropic's top-level `system`).
    pub(crate) fn into_content_value(self) -> Option<Value> {
        let data = Arc::unwrap_or_clone(self.0);
        content_value(data.parts, data.content)
    }
}

fn content_value(items: Vec<Part>, form: Form) -> Option<Value> {
    if items.is_empty() {
        return match form {
            Form::Absent => None,
            Form::Null => Some(Value::Null),
            Form::String => Some(Value::String(String::new())),
            Form::Array | Form::Parts => Some(Value::Array(Vec::new())),
        };
    }
    if items.len() == 1 && items.first().is_some_and(|p| p.slot == Slot::Content) {
        return items.into_iter().next().map(|p| p.raw);
    }
    Some(Value::Array(
        items.into_iter().map(Part::into_item_raw).collect(),
    ))
}

/// A conversation read from one of the [`Format`]s.
///
/// The input is either the array of messages, or an object holding it under `messages` (a
/// request body such as Anthropic's `{system, messages, ...}`). Writing gives back the same
/// shape; every other field of the object is kept as it was.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    pub(crate) format: Format,
    pub(crate) envelope: Option<Map<String, Value>>,
    pub(crate) system: Option<Message>,
    pub(crate) messages: Vec<Message>,
}

impl Conversation {
    /// The format the conversation was read in, and is written back in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The top-level `system` of a request object, as a system message: Anthropic's (a string
    /// or text blocks; also read so from a request object of OpenAI messages, which has no
    /// `system` of its own) or the AI SDK's (a string).
    pub fn system(&self) -> Option<&Message> {
        self.system.as_ref()
    }

    /// The top-level system prompt, for edits.
    pub fn system_mut(&mut self) -> Option<&mut Message> {
        self.system.as_mut()
    }

    /// The messages, in order; indices are those of the input's `messages` array.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, to edit, remove or insert (for example [`Message::compaction`]).
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        &mut self.messages
    }

    /// The conversation as JSON in its format and input shape.
    pub fn to_value(&self) -> Value {
        self.clone().into_value()
    }

    /// Marks every message, part and the system prompt as read with long texts cut short.
    pub(crate) fn mark_skimmed(&mut self) {
        for message in self.messages.iter_mut().chain(self.system.as_mut()) {
            message.skimmed = true;
            for part in &mut message.parts {
                part.skimmed = true;
            }
        }
    }

    /// Takes the messages out, leaving the rest (format, request object, system prompt).
    pub fn split_messages(mut self) -> (Conversation, Vec<Message>) {
        let messages = std::mem::take(&mut self.messages);
        (self, messages)
    }

    /// The conversation as JSON in its format and input shape, consuming it.
    pub fn into_value(self) -> Value {
        let messages = Value::Array(self.messages.into_iter().map(Message::into_value).collect());
        match self.envelope {
            None => messages,
            Some(mut envelope) => {
                put(&mut envelope, "messages", Some(messages));
                if let Some(system) = self.system {
                    put(&mut envelope, "system", system.into_content_value());
                }
                Value::Object(envelope)
            }
        }
    }

    /// The conversation as a JSON string.
    pub fn to_json_string(&self) -> String {
        self.to_value().to_string()
    }

    /// The conversation as a JSON string, consuming it (no copy of the contents).
    pub fn into_json_string(self) -> String {
        self.into_value().to_string()
    }
}
