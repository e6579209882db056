//! The marker a fold leaves in place of its span: our `<context-keeper-compaction ...>` text,
//! written as a message its provider accepts where it goes ([`MarkerShape`]), and how a
//! conversation's markers (ours and the providers' native compaction items) are found.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::messages::{
    parse_messages_value, CompactionMarker, Conversation, Format, Message, MessagesOptions, Role,
};

/// How the marker message is written, so that the roles around it are in an order the
/// conversation's provider accepts. Only Anthropic requires alternating roles (the validator's
/// `roleOrder`); elsewhere the marker is always a user message of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MarkerShape {
    #[default]
    /// A user message of its own.
    User,
    /// An assistant message of its own: between two user messages.
    Assistant,
    /// The message before it is a user message (the first request) and the recent turns start
    /// with the assistant: one user message holding that message's blocks, verbatim, then the
    /// marker's block.
    AfterBlocks,
}

/// A marker as the driver returns it: its header and its summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct MarkerInfo {
    /// 1 for the session's first compaction, then 2, 3...
    pub number: u32,
    /// The time the host gave.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub time: Option<String>,
    /// The summary (with its pinned details).
    pub summary: String,
    /// Messages of the full history the marker stands for (all compactions so far).
    pub archived_messages: u64,
    /// The count before this compaction.
    pub tokens_before: u64,
    /// The count after it (to within a token: the marker holds the figure).
    pub tokens_after: u64,
    /// Messages kept ahead of the marker.
    pub head: u64,
    /// The archive's key.
    pub key: Vec<String>,
    /// The iterations of the agent loop the summary stands for, when the rolling window wrote
    /// the marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub iterations: Option<u64>,
}

impl From<&CompactionMarker> for MarkerInfo {
    fn from(m: &CompactionMarker) -> Self {
        MarkerInfo {
            number: m.number,
            time: m.time.clone(),
            summary: m.summary.clone(),
            archived_messages: m.archived_messages,
            tokens_before: m.tokens_before,
            tokens_after: m.tokens_after,
            head: m.head,
            key: m.key.clone(),
            iterations: m.iterations,
        }
    }
}

/// Our marker, when `message` holds one: its last part. (Anthropic's strict role order makes
/// the marker a block after the first request's own blocks when the recent turns start with
/// the assistant; see [`MarkerShape`].)
pub fn marker_of(message: &Message) -> Option<CompactionMarker> {
    message.parts().last()?.compaction_marker()
}

pub(crate) fn marker_shape(
    format: Format,
    prev: Option<Role>,
    next: Option<Role>,
) -> Option<MarkerShape> {
    if format != Format::Anthropic {
        return Some(MarkerShape::User);
    }
    match (prev, next) {
        (Some(Role::User), Some(Role::User)) => Some(MarkerShape::Assistant),
        (Some(Role::User), _) => Some(MarkerShape::AfterBlocks),
        (_, Some(Role::User)) => None,
        _ => Some(MarkerShape::User),
    }
}

/// Whether `message` holds a provider-native compaction item.
pub fn is_native_marker(message: &Message) -> bool {
    message
        .parts()
        .iter()
        .any(|p| crate::messages::is_native_compaction(p.raw()))
}

/// The messages the model sees: the leading system messages (and, before our marker, the
/// messages it says were kept ahead of it), then everything from the latest marker on: ours,
/// or a provider's that drops what precedes it (Anthropic's compaction block,
/// [`crate::messages::drops_earlier_context`]). OpenAI's compaction item is not such a
/// marker: the window `/responses/compact` returns keeps the user messages ahead of it, and
/// the model sees them (as counting does). Indices into `conv`.
pub fn active_indices(conv: &Conversation) -> Vec<usize> {
    let messages = conv.messages();
    let latest = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match marker_of(m) {
            Some(marker) => Some((i, Some(marker))),
            None => (m.parts().iter())
                .any(|p| crate::messages::drops_earlier_context(m.format(), p.raw()))
                .then_some((i, None)),
        });
    let Some((at, ours)) = latest else {
        return (0..messages.len()).collect();
    };
    let head = ours.map_or(0, |m| usize::try_from(m.head).unwrap_or(0).min(at));
    let systems = leading_systems(messages).min(at);
    (0..systems.max(head)).chain(at..messages.len()).collect()
}

/// The latest compaction marker, ours or the provider's: its index, and ours read.
pub(crate) fn latest_marker(messages: &[Message]) -> Option<(usize, Option<CompactionMarker>)> {
    messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match marker_of(m) {
            Some(marker) => Some((i, Some(marker))),
            None => is_native_marker(m).then_some((i, None)),
        })
}

/// How many system messages open the conversation.
pub(crate) fn leading_systems(messages: &[Message]) -> usize {
    messages
        .iter()
        .take_while(|m| m.role() == Role::System)
        .count()
}

/// The marker as a message of `conv`'s format that its provider accepts where it goes: a
/// user message (a `UIMessage` with an id when the conversation holds those), or for
/// Anthropic an assistant message or `lead` blocks then the marker's ([`MarkerShape`]).
pub(crate) fn marker_message(
    conv: &Conversation,
    marker: &CompactionMarker,
    shape: MarkerShape,
    lead: &[Value],
) -> Option<Message> {
    let format = conv.format();
    let text = json!({"type": "text", "text": marker.to_text()});
    let value = match shape {
        MarkerShape::User if !conv.messages().iter().any(Message::is_ui_message) => {
            return Some(Message::compaction(format, marker));
        }
        MarkerShape::User => json!([{
            "id": format!("context-keeper-compaction-{}", marker.number),
            "role": "user",
            "parts": [text],
        }]),
        MarkerShape::Assistant => json!([{"role": "assistant", "content": [text]}]),
        MarkerShape::AfterBlocks => {
            let mut blocks = lead.to_vec();
            blocks.push(text);
            json!([{"role": "user", "content": blocks}])
        }
    };
    let options = MessagesOptions {
        format: Some(format),
        allow_pending_calls: true,
    };
    let (_, mut list) = parse_messages_value(value, &options).ok()?.split_messages();
    list.pop()
}

/// A message's content as blocks (a string content is one text block), to write them again
/// in a marker message ([`MarkerShape::AfterBlocks`]).
pub(crate) fn blocks_of(message: &Message) -> Vec<Value> {
    match message.to_value().get("content") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}
