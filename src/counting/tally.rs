//! The tokens of one message, by kind.

use serde::Serialize;
use serde_json::Value;

use super::image::{image_tokens, DEFAULT_FILE_TOKENS};
use crate::encoding::{CountError, Encoding};
use crate::messages::{
    drops_earlier_context, is_native_compaction, Format, Message, Part, PartKind, Role, Segment,
    ToolInput,
};
use crate::model::{Framing, ImageRule};

/// Tokens around each tool call or tool result beyond its name and content (ids, separators).
/// No provider publishes this; 3 is an approximation, and a count with tool calls is never
/// `exact`.
pub const TOOL_CALL_FRAMING: u64 = 3;

/// Characters of encrypted reasoning (`redacted_thinking` data) per token: the data is
/// base64 of the original reasoning, so a quarter of its length over-counts it rather than
/// under-counts it. Never `exact`.
pub const REDACTED_CHARS_PER_TOKEN: u64 = 4;

/// Tokens by what they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ByKind {
    /// Text and refusals (and unknown parts, counted as their JSON text).
    pub text: u64,
    /// Tool calls: name and arguments.
    pub tool_calls: u64,
    /// Tool results: their text and JSON content (images in results count as `images`).
    pub tool_results: u64,
    /// Images, by the provider's rule.
    pub images: u64,
    /// Files, documents and audio: a text document's text, else a flat default.
    pub files: u64,
    /// Reasoning text (and encrypted reasoning, estimated).
    pub reasoning: u64,
    /// Framing: per message, role and name, per tool call, reply priming, tool definitions.
    pub overhead: u64,
}

impl ByKind {
    /// The sum of every kind.
    pub fn total(&self) -> u64 {
        self.text
            + self.tool_calls
            + self.tool_results
            + self.images
            + self.files
            + self.reasoning
            + self.overhead
    }

    pub(crate) fn sub(&mut self, other: &ByKind) {
        self.text = self.text.saturating_sub(other.text);
        self.tool_calls = self.tool_calls.saturating_sub(other.tool_calls);
        self.tool_results = self.tool_results.saturating_sub(other.tool_results);
        self.images = self.images.saturating_sub(other.images);
        self.files = self.files.saturating_sub(other.files);
        self.reasoning = self.reasoning.saturating_sub(other.reasoning);
        self.overhead = self.overhead.saturating_sub(other.overhead);
    }

    pub(crate) fn add(&mut self, other: &ByKind) {
        self.text += other.text;
        self.tool_calls += other.tool_calls;
        self.tool_results += other.tool_results;
        self.images += other.images;
        self.files += other.files;
        self.reasoning += other.reasoning;
        self.overhead += other.overhead;
    }
}

/// One message's count: its kinds, and whether any part of it was estimated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Tokens by kind, framing included.
    pub kinds: ByKind,
    /// Whether some part follows no published rule (images of unknown size, files, tool
    /// calls, encrypted reasoning, unknown parts).
    pub estimated: bool,
    /// Whether the message holds a compaction block its provider drops everything before
    /// ([`drops_earlier_context`]): the tally counts the message from its latest such block
    /// on, and the messages before it count nothing.
    pub drops_earlier: bool,
    /// Whether the message starts a user turn (a user message that answers no tool call): a
    /// model that keeps only the current turn's thinking drops the thinking before it.
    pub starts_turn: bool,
    /// Whether the message ends with tool results (a user message right after it is sent
    /// with the results, as one message: it continues the turn). A user or tool message that
    /// holds any; an AI SDK `UIMessage` from the assistant whose last part sent is a tool's.
    pub results: bool,
}

/// What a message's count depends on besides the message. Its JSON is what the count cache
/// hashes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Rules {
    pub encoding: Encoding,
    pub framing: Framing,
    pub images: ImageRule,
}

/// Counts text, and how many times it was asked to (the incremental-cost tests read that).
pub(crate) struct Tokenizer {
    pub encoding: Encoding,
    pub calls: u64,
}

impl Tokenizer {
    pub fn count(&mut self, text: &str) -> Result<u64, CountError> {
        if text.is_empty() {
            return Ok(0);
        }
        self.calls += 1;
        Ok(crate::text_counts::count(text, self.encoding)? as u64)
    }

    pub fn json(&mut self, value: &Value) -> Result<u64, CountError> {
        match value {
            Value::String(s) => self.count(s),
            Value::Null => Ok(0),
            other => self.count(&other.to_string()),
        }
    }
}

/// Counts one message: framing (per message, its role, its name), then every part.
pub(crate) fn tally_message(
    message: &Message,
    rules: &Rules,
    tok: &mut Tokenizer,
) -> Result<Tally, CountError> {
    let mut tally = Tally::default();
    let k = &mut tally.kinds;
    k.overhead += u64::from(rules.framing.per_message) + tok.count(message.role().name())?;
    if message.format() == Format::OpenAi {
        // NOTE: OpenAI's chat format writes a message's `name` in its header (tool and
        // function messages hold theirs in the whole-message part).
        let name = message.skeleton.get("name").or_else(|| {
            (message.is_whole())
                .then(|| message.parts().first().and_then(|p| p.raw().get("name")))
                .flatten()
        });
        if let Some(Value::String(name)) = name {
            k.overhead += u64::from(rules.framing.per_name) + tok.count(name)?;
        }
        // NOTE: an assistant's `refusal` (what the API returns instead of content when the
        // model declines) is sent back as the message's text.
        if let Some(Value::String(refusal)) = message.skeleton.get("refusal") {
            k.text += tok.count(refusal)?;
        }
    }
    if message.is_ui_message() && message.role() == Role::Assistant {
        k.overhead += ui_step_framing(message, rules, tok)?;
    }
    let whole = message.is_whole();
    let parts = message.parts();
    let holds = |p: &Part| p.kind() == PartKind::ToolResult || p.holds_result();
    tally.results = match message.role() {
        // NOTE: convertToModelMessages sends an assistant's text after its tools as an
        // assistant message of its own: only a reply that ends with a tool ends with results.
        Role::Assistant => parts
            .iter()
            .rev()
            .find(|p| p.kind() != PartKind::UiOnly)
            .is_some_and(holds),
        _ => parts.iter().any(holds),
    };
    tally.starts_turn = message.role() == Role::User && !parts.iter().any(holds);
    // NOTE: the provider drops every block before its latest compaction block, this
    // message's own earlier blocks too; the message itself (its framing) stays.
    let from = parts
        .iter()
        .rposition(|p| drops_earlier_context(message.format(), p.raw()))
        .inspect(|_| tally.drops_earlier = true)
        .unwrap_or(0);
    for part in parts.get(from..).unwrap_or_default() {
        tally_part(part, whole, rules, tok, &mut tally)?;
    }
    Ok(tally)
}

/// Counts one part; `whole` when the part is the whole message (an OpenAI tool message).
fn tally_part(
    part: &Part,
    whole: bool,
    rules: &Rules,
    tok: &mut Tokenizer,
    tally: &mut Tally,
) -> Result<(), CountError> {
    let k = &mut tally.kinds;
    match part.kind() {
        PartKind::Text | PartKind::Compaction => k.text += tok.count(part.text().unwrap_or(""))?,
        PartKind::Reasoning => k.reasoning += tok.count(part.text().unwrap_or(""))?,
        PartKind::RedactedReasoning => {
            let data = part.raw().get("data").and_then(Value::as_str).unwrap_or("");
            k.reasoning += (data.len() as u64).div_ceil(REDACTED_CHARS_PER_TOKEN);
            tally.estimated = true;
        }
        PartKind::ToolCall => {
            k.tool_calls += tok.count(part.tool_name().unwrap_or(""))?;
            k.tool_calls += match part.tool_input() {
                Some(ToolInput::Text(text)) => tok.count(text)?,
                Some(ToolInput::Json(value)) => tok.json(value)?,
                None => 0,
            };
            k.overhead += TOOL_CALL_FRAMING;
            tally.estimated = true;
            // NOTE: a UIMessage tool part holds its result too, sent as a result part.
            if part.holds_result() {
                k.overhead += TOOL_CALL_FRAMING;
                result_segments(part, rules, tok, tally)?;
            }
        }
        PartKind::ToolResult => {
            // NOTE: an OpenAI tool message is an ordinary chat message (its framing is the
            // message's); a result inside a content array has a framing of its own.
            if !whole {
                k.overhead += TOOL_CALL_FRAMING;
                tally.estimated = true;
            }
            result_segments(part, rules, tok, tally)?;
        }
        PartKind::UiOnly => {
            // NOTE: not sent; but a data part is, if the host converts it (`convertDataPart`).
            let ty = part.raw().get("type").and_then(Value::as_str).unwrap_or("");
            tally.estimated |= ty.starts_with("data-");
        }
        PartKind::Image | PartKind::File => media(part.raw(), rules, tok, tally)?,
        PartKind::Unknown if is_native_compaction(part.raw()) => {
            // NOTE: a provider's compaction item: Anthropic's `compaction` block carries its
            // summary as readable `content` (the model reads it as text); OpenAI's Responses
            // item carries `encrypted_content`, opaque state the server expands, counted as
            // encrypted reasoning is (a quarter of its characters, over rather than under).
            tally.estimated = true;
            let raw = part.raw();
            if let Some(Value::String(summary)) = raw.get("content") {
                k.text += tok.count(summary)?;
            }
            if let Some(Value::String(data)) = raw.get("encrypted_content") {
                k.reasoning += (data.len() as u64).div_ceil(REDACTED_CHARS_PER_TOKEN);
            }
        }
        PartKind::Unknown => {
            tally.estimated = true;
            let ty = part.raw().get("type").and_then(Value::as_str).unwrap_or("");
            if ty.contains("image") || ty.contains("file") || ty.contains("document") {
                media(part.raw(), rules, tok, tally)?;
            } else {
                tally.kinds.text += tok.json(part.raw())?;
            }
        }
    }
    Ok(())
}

/// A tool result's content: text and JSON as `toolResults`, media by their own rule.
fn result_segments(
    part: &Part,
    rules: &Rules,
    tok: &mut Tokenizer,
    tally: &mut Tally,
) -> Result<(), CountError> {
    for segment in part.result_content() {
        match segment {
            Segment::Text(text) => tally.kinds.tool_results += tok.count(text)?,
            Segment::Json(value) => {
                tally.kinds.tool_results += tok.json(value)?;
                tally.estimated |= !value.is_string();
            }
            Segment::Media(item) => media(item, rules, tok, tally)?,
        }
    }
    Ok(())
}

/// The framing of the messages a `UIMessage` from the assistant becomes beyond itself:
/// `convertToModelMessages` makes one assistant message per step (steps are separated by
/// `step-start` parts; an empty one makes none), each followed by a `tool` message when the
/// step holds results of tools the host ran.
fn ui_step_framing(
    message: &Message,
    rules: &Rules,
    tok: &mut Tokenizer,
) -> Result<u64, CountError> {
    let (mut steps, mut tool_messages) = (0u64, 0u64);
    let (mut filled, mut results) = (false, false);
    let mut close = |filled: &mut bool, results: &mut bool| {
        steps += u64::from(*filled);
        tool_messages += u64::from(*filled && *results);
        (*filled, *results) = (false, false);
    };
    for part in message.parts() {
        let ty = part.raw().get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "step-start" => close(&mut filled, &mut results),
            // NOTE: sources are skipped; everything else, even a data part, fills the step.
            "source-url" | "source-document" => {}
            _ => {
                filled = true;
                let provider_ran = part.raw().get("providerExecuted") == Some(&Value::Bool(true));
                results |= part.holds_result() && !provider_ran;
            }
        }
    }
    close(&mut filled, &mut results);
    let frame = |role: &str, tok: &mut Tokenizer| -> Result<u64, CountError> {
        Ok(u64::from(rules.framing.per_message) + tok.count(role)?)
    };
    let mut tokens = 0;
    if steps > 1 {
        tokens += (steps - 1) * frame("assistant", tok)?;
    }
    if tool_messages > 0 {
        tokens += tool_messages * frame("tool", tok)?;
    }
    Ok(tokens)
}

/// An image, file, document or audio block: images by the provider's rule, text documents by
/// their text, anything else the flat [`DEFAULT_FILE_TOKENS`].
fn media(
    item: &Value,
    rules: &Rules,
    tok: &mut Tokenizer,
    tally: &mut Tally,
) -> Result<(), CountError> {
    let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
    let media_type = ["mediaType", "mimeType", "media_type"]
        .iter()
        .find_map(|key| {
            (item.get(key))
                .or_else(|| item.get("source").and_then(|s| s.get(key)))
                .and_then(Value::as_str)
        })
        .unwrap_or("");
    let data_url_image = [item.get("data"), item.get("image"), item.get("url")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|s| s.starts_with("data:image/"));
    let is_image = matches!(ty, "image" | "image_url" | "image-data" | "input_image")
        || media_type.starts_with("image/")
        || data_url_image;
    if is_image {
        let (tokens, estimated) = image_tokens(rules.images, item);
        tally.kinds.images += tokens;
        tally.estimated |= estimated;
        return Ok(());
    }
    // A text document: Anthropic `{source: {type: "text", data}}` or `{source: {type:
    // "content", content: [...]}}`, with an optional title and context.
    let source = item.get("source");
    let source_type = source.and_then(|s| s.get("type")).and_then(Value::as_str);
    let text = match (source_type, source) {
        (Some("text"), Some(source)) => source.get("data").and_then(Value::as_str).map(|s| vec![s]),
        (Some("content"), Some(source)) => match source.get("content") {
            Some(Value::String(s)) => Some(vec![s.as_str()]),
            Some(Value::Array(blocks)) => Some(
                blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        },
        _ => None,
    };
    tally.estimated = true;
    match text {
        Some(texts) => {
            for text in texts {
                tally.kinds.files += tok.count(text)?;
            }
        }
        None => tally.kinds.files += DEFAULT_FILE_TOKENS,
    }
    for key in ["title", "context"] {
        if let Some(Value::String(s)) = item.get(key) {
            tally.kinds.files += tok.count(s)?;
        }
    }
    Ok(())
}
