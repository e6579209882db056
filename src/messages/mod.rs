//! One message model for OpenAI Chat Completions, Anthropic Messages and Vercel AI SDK
//! conversations: read them, check their tool pairing, repair them, and write them back in the
//! same format, byte for byte where nothing was edited.
//!
//! The input is the array of messages, or a request object holding it under `messages`
//! (Anthropic's `{system, messages, ...}` keeps its system prompt that way). Every function
//! takes a [`serde_json::Value`] or a JSON string, plus [`MessagesOptions`].
//!
//! ```
//! use context_keeper::messages::{repair_messages, validate_messages, MessagesOptions, ProblemKind};
//! let input = serde_json::json!([
//!     {"role": "user", "content": "list files"},
//!     {"role": "assistant", "content": null, "tool_calls": [
//!         {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
//!     {"role": "user", "content": "thanks"}
//! ]);
//! let options = MessagesOptions::default();
//! let problems = validate_messages(&input, &options).unwrap();
//! assert_eq!(problems[0].kind, ProblemKind::MissingResult);
//! let repaired = repair_messages(&input, &options).unwrap();
//! assert_eq!(repaired.messages[2]["content"], "[no result recorded]");
//! assert!(validate_messages(&repaired.messages, &options).unwrap().is_empty());
//! ```
//!
//! Limits: JSON text nests at most 128 levels (serde_json's limit, an error, not a crash);
//! nothing here recurses on the depth of the input, and every pass is linear in its size.
//! A `Value` built elsewhere with deeper nesting is the caller's risk: serde_json clones and
//! drops values recursively.

mod aisdk;
mod anthropic;
mod compaction;
mod content;
mod detect;
mod error;
mod format;
mod model;
mod openai;
mod pairing;
mod repair;
mod skim;
mod validate;

use serde_json::Value;

pub use compaction::{
    drops_earlier_context, is_native_compaction, CompactionMarker, COMPACTION_TAG,
};
pub use detect::{detect_format, FormatVotes};
// NOTE: for the context layer and its bindings, which name JSON types as the reader does.
pub(crate) use error::type_name;
pub use error::{ParseError, ParseErrorKind};
pub use format::{Format, MessagesOptions};
pub use model::{
    Conversation, EditError, Message, MessageKey, Part, PartKind, ResultShape, Role, Segment,
    ToolInput,
};
pub use pairing::{
    pair_tools, DuplicateCall, PairingGraph, PartRef, StrayReason, StrayResult, ToolExchange,
    ToolLink,
};
pub use repair::{
    repair_conversation, repair_conversation_traced, RepairAction, RepairKind, RepairOutcome,
    Repaired, STUB_RESULT_TEXT,
};
pub use skim::{is_skimmable, SKIMMABLE_FIELDS, SKIM_UNITS};
pub use validate::{validate_conversation, Problem, ProblemKind};

/// What a conversation must be, for error messages.
const CONVERSATION: &str = "an array of messages or a request object with a `messages` array";

/// Reads a conversation, cloning `input`.
///
/// Errors name the place: `messages[12].content[3].tool_use_id: expected a string, found a
/// number`. Part types this crate does not know are kept as they are, not an error. A request
/// object's `system` is read whatever the format: a string, or Anthropic's array of text
/// blocks (not with AI SDK messages); anything else, such as an object, is an error naming
/// `system`.
pub fn parse_messages(
    input: &Value,
    options: &MessagesOptions,
) -> Result<Conversation, ParseError> {
    parse_messages_value(input.clone(), options)
}

/// Reads a conversation from JSON text.
pub fn parse_messages_str(
    json: &str,
    options: &MessagesOptions,
) -> Result<Conversation, ParseError> {
    parse_messages_value(parse_json(json)?, options)
}

/// Reads a conversation, taking ownership of `input` (no copy).
pub fn parse_messages_value(
    input: Value,
    options: &MessagesOptions,
) -> Result<Conversation, ParseError> {
    let format = options
        .format
        .or_else(|| detect_format(&input))
        .unwrap_or(Format::OpenAi);
    let (envelope, list) = match input {
        Value::Array(list) => (None, list),
        Value::Object(mut envelope) => match envelope.get_mut("messages") {
            Some(Value::Array(list)) => {
                let list = std::mem::take(list);
                (Some(envelope), list)
            }
            Some(other) => {
                return Err(ParseError::expected(
                    "messages.messages",
                    "an array",
                    Some(other),
                ))
            }
            None => {
                return Err(ParseError::expected_found(
                    "messages",
                    CONVERSATION,
                    "an object without `messages`",
                ))
            }
        },
        other => return Err(ParseError::expected("messages", CONVERSATION, Some(&other))),
    };
    let list = list.into_iter().map(ListedMessage::Value);
    assemble(format, envelope, list)
}

/// A message of a list that a host reads one object at a time ([`parse_listed`]).
#[derive(Clone, Debug)]
pub enum ListedMessage {
    /// Read and parsed before, and unchanged since (a clone: it shares the message's data).
    Parsed(Message),
    /// Read now: its JSON.
    Value(Value),
}

/// Reads a conversation from a request object's other fields (`envelope`, without its
/// `messages`, or `None` for a plain list) and its messages, some of them parsed before: what
/// [`parse_messages_value`] makes of the same JSON, without parsing those again. `format` is
/// the one to read in (a host that reads the list one message at a time sums each message's
/// [`FormatVotes`] for it, as [`detect_format`] does). A message parsed in another format is
/// read again from its JSON.
///
/// # Errors
/// As [`parse_messages_value`], naming `messages[i]`.
pub fn parse_listed(
    format: Format,
    envelope: Option<serde_json::Map<String, Value>>,
    list: Vec<ListedMessage>,
) -> Result<Conversation, ParseError> {
    let envelope = envelope.map(|mut envelope| {
        // NOTE: where the list was (the writer puts the messages back under this key).
        envelope.insert("messages".to_owned(), Value::Array(Vec::new()));
        envelope
    });
    assemble(format, envelope, list.into_iter())
}

/// The conversation of `format` from a request object (its `messages` taken out) and its
/// messages.
fn assemble(
    format: Format,
    mut envelope: Option<serde_json::Map<String, Value>>,
    list: impl ExactSizeIterator<Item = ListedMessage>,
) -> Result<Conversation, ParseError> {
    let mut system = None;
    if let Some(value) = (envelope.as_mut())
        .and_then(|e| e.get_mut("system"))
        .filter(|v| !v.is_null())
    {
        // NOTE: OpenAI's Chat Completions has no top-level system prompt; a request object
        // that holds one with OpenAI messages is read the Anthropic way (a string or text
        // blocks) so that its prompt is counted, not dropped, and written back as it was.
        let parse = match format {
            Format::AiSdk => aisdk::parse_system,
            Format::Anthropic | Format::OpenAi => anthropic::parse_system,
        };
        system = Some(parse(std::mem::take(value)).map_err(|e| e.under("system"))?);
    }
    let mut messages = Vec::with_capacity(list.len());
    for (i, listed) in list.enumerate() {
        let value = match listed {
            ListedMessage::Parsed(message)
                if message.format() == format && !message.is_skimmed() =>
            {
                messages.push(message);
                continue;
            }
            ListedMessage::Parsed(message) => message.into_value(),
            ListedMessage::Value(value) => value,
        };
        messages.push(
            parse_message(format, value).map_err(|e| e.under(format_args!("messages[{i}]")))?,
        );
    }
    Ok(Conversation {
        format,
        envelope,
        system,
        messages,
    })
}

/// Reads a conversation whose long texts a reader may have cut short (the strings of
/// [`SKIMMABLE_FIELDS`], as [`skim`](self::skim) describes): it checks, detects and repairs as
/// the whole one would ([`repair_conversation_traced`] tells which messages it left alone), but
/// every message of it says [`Message::is_skimmed`], and none of it may be written out.
/// Errors as [`parse_messages_value`].
pub fn parse_skimmed_messages_value(
    input: Value,
    options: &MessagesOptions,
) -> Result<Conversation, ParseError> {
    let mut conv = parse_messages_value(input, options)?;
    conv.mark_skimmed();
    Ok(conv)
}

/// Reads one message of `format`. Error paths start at the message (`.content[3].text`); the
/// caller puts `messages[i]` in front.
pub fn parse_message(format: Format, value: Value) -> Result<Message, ParseError> {
    match format {
        Format::OpenAi => openai::parse_message(value),
        Format::Anthropic => anthropic::parse_message(value),
        Format::AiSdk => aisdk::parse_message(value),
    }
}

/// Every problem a provider would reject, ordered by message; empty when the conversation is
/// valid. See [`ProblemKind`] for the checks.
///
/// ```
/// use context_keeper::messages::{validate_messages, MessagesOptions, ProblemKind};
/// let input = serde_json::json!([
///     {"role": "tool", "tool_call_id": "call_9", "content": "42"},
///     {"role": "user", "content": "hi"}
/// ]);
/// let problems = validate_messages(&input, &MessagesOptions::default()).unwrap();
/// assert_eq!(problems[0].kind, ProblemKind::OrphanResult);
/// assert_eq!((problems[0].message_index, problems[0].id.as_deref()), (0, Some("call_9")));
/// ```
pub fn validate_messages(
    input: &Value,
    options: &MessagesOptions,
) -> Result<Vec<Problem>, ParseError> {
    Ok(validate_conversation(
        &parse_messages(input, options)?,
        options,
    ))
}

/// [`validate_messages`] on JSON text.
pub fn validate_messages_str(
    json: &str,
    options: &MessagesOptions,
) -> Result<Vec<Problem>, ParseError> {
    Ok(validate_conversation(
        &parse_messages_str(json, options)?,
        options,
    ))
}

/// Repairs a conversation with the fewest edits; see [`repair_conversation`].
pub fn repair_messages(input: &Value, options: &MessagesOptions) -> Result<Repaired, ParseError> {
    repair_messages_value(input.clone(), options)
}

/// [`repair_messages`] on JSON text.
pub fn repair_messages_str(json: &str, options: &MessagesOptions) -> Result<Repaired, ParseError> {
    repair_messages_value(parse_json(json)?, options)
}

/// [`repair_messages`], taking ownership of `input`.
pub fn repair_messages_value(
    input: Value,
    options: &MessagesOptions,
) -> Result<Repaired, ParseError> {
    let conv = parse_messages_value(input, options)?;
    let format = conv.format();
    let (conv, report, unrepaired) = repair_conversation(conv, options);
    Ok(Repaired {
        messages: conv.into_value(),
        format,
        report,
        unrepaired,
    })
}

/// JSON text to a value. A lone UTF-16 surrogate escape (`"\ud800"`, which
/// `JSON.stringify` writes for a JS string holding one) reads as U+FFFD, as a provider would
/// read it, instead of failing the whole conversation.
pub(crate) fn parse_json(text: &str) -> Result<Value, ParseError> {
    serde_json::from_str(text).or_else(|err| match replace_lone_surrogates(text) {
        Some(fixed) => serde_json::from_str(&fixed).map_err(|e| ParseError::json(&e)),
        None => Err(ParseError::json(&err)),
    })
}

/// Rewrites every `\uXXXX` escape of an unpaired surrogate as `\uFFFD`, in one pass; `None`
/// when there is none.
// NOTE: backslashes only occur inside JSON strings, so every one starts an escape and the
// scan needs no string tracking.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    fn hex4(text: &str, at: usize) -> Option<u16> {
        let digits = text.get(at..at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u16::from_str_radix(digits, 16).ok()
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied) = (0, 0);
    while let Some(&b) = bytes.get(i) {
        if b != b'\\' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let lone = match hex4(text, i + 2) {
            Some(0xD800..=0xDBFF) => {
                let escape = bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u');
                let low = if escape { hex4(text, i + 8) } else { None };
                if matches!(low, Some(0xDC00..=0xDFFF)) {
                    i += 12;
                    continue;
                }
                true
            }
            Some(0xDC00..=0xDFFF) => true,
            _ => false,
        };
        if lone {
            out.push_str(text.get(copied..i).unwrap_or_default());
            out.push_str("\\uFFFD");
            copied = i + 6;
        }
        i += 6;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Some(out)
}
