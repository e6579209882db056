//! The compaction marker: a text part that records one compaction and carries its summary.
//!
//! NOTE: providers reject unknown fields in messages (Anthropic: "Extra inputs are not
//! permitted"), so the marker is plain text every format accepts, recognised by its first line:
//!
//! ```text
//! <context-keeper-compaction {"number":1,"time":"2025-01-01T00:00:00Z","archivedMessages":40,"tokensBefore":120000}>
//! the summary
//! </context-keeper-compaction>
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::format::Format;

/// The text every compaction marker starts with.
pub const COMPACTION_TAG: &str = "<context-keeper-compaction";
const CLOSING_TAG: &str = "</context-keeper-compaction>";

/// One compaction, as recorded in the conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionMarker {
    /// 1 for the first compaction of the session, then 2, 3...
    pub number: u32,
    /// When it happened, as the host supplied it (the core reads no clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// How many messages the summary replaces.
    pub archived_messages: u64,
    /// The token count before compaction.
    pub tokens_before: u64,
    /// The token count of the messages that replaced them (marker included).
    #[serde(skip_serializing_if = "is_zero")]
    pub tokens_after: u64,
    /// How many messages at the start of the conversation were kept ahead of the marker (the
    /// system prompt and the first user request): the model sees them, then the marker.
    #[serde(skip_serializing_if = "is_zero")]
    pub head: u64,
    /// The store key of the archive holding the messages this marker replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub key: Vec<String>,
    /// Set by the rolling window ([`crate::context::rolling`]): how many iterations of the
    /// agent loop (assistant turns with their tool results) the summary stands for. Absent in
    /// a compaction's marker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// The summary text.
    #[serde(skip)]
    pub summary: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CompactionMarker {
    /// The marker as the text of a message part.
    pub fn to_text(&self) -> String {
        let header = serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned());
        format!(
            "{COMPACTION_TAG} {header}>\n{}\n{CLOSING_TAG}",
            self.summary
        )
    }

    /// Reads a marker back from its text; `None` when the text is not one.
    pub fn from_text(text: &str) -> Option<CompactionMarker> {
        let rest = text.strip_prefix(COMPACTION_TAG)?;
        let (header, body) = rest.split_once('\n').unwrap_or((rest, ""));
        let header = header.trim().strip_suffix('>')?;
        let mut marker: CompactionMarker = serde_json::from_str(header).ok()?;
        let body = body.strip_suffix(CLOSING_TAG).unwrap_or(body);
        marker.summary = body.strip_suffix('\n').unwrap_or(body).to_owned();
        Some(marker)
    }
}

/// Whether a part's JSON is a provider-native compaction item: Anthropic's `compaction`
/// content block (`{type: "compaction", content, encrypted_content}`), the same type as an
/// OpenAI Responses item, or the AI SDK parts that carry them (a part whose
/// `providerOptions.anthropic.type` is `"compaction"`, a `custom` part of kind
/// `openai.compaction`). The model sees nothing before the latest one, and nothing may split
/// it from what follows.
pub fn is_native_compaction(raw: &Value) -> bool {
    let ty = raw.get("type").and_then(Value::as_str);
    if ty == Some("compaction") {
        return true;
    }
    if ty == Some("custom") && raw.get("kind").and_then(Value::as_str) == Some("openai.compaction")
    {
        return true;
    }
    ["providerOptions", "providerMetadata"].iter().any(|field| {
        raw.get(*field)
            .and_then(|o| o.get("anthropic"))
            .and_then(|a| a.get("type"))
            .and_then(Value::as_str)
            == Some("compaction")
    })
}

/// Whether a part of `format` is a compaction block the provider drops everything before:
/// Anthropic's `compaction` block with its summary (`content` a string; `null` marks a failed
/// compaction, which the API treats as a no-op), or an AI SDK part carrying one for Anthropic
/// (`providerOptions.anthropic.type` or `providerMetadata.anthropic.type` `"compaction"`).
///
/// NOTE: Anthropic's compaction guide (platform.claude.com/docs/en/build-with-claude/compaction):
/// "On subsequent requests, append the response to your messages. The API automatically drops
/// all message blocks prior to the compaction block". The system prompt and tools are not
/// message blocks and stay. OpenAI's Responses compaction item is not one of these: the
/// window `/responses/compact` returns keeps the user messages before its item, so nothing
/// before it can be assumed dropped.
pub fn drops_earlier_context(format: Format, raw: &Value) -> bool {
    match format {
        Format::Anthropic => {
            raw.get("type").and_then(Value::as_str) == Some("compaction")
                && raw.get("content").is_some_and(Value::is_string)
        }
        Format::AiSdk => ["providerOptions", "providerMetadata"].iter().any(|field| {
            raw.get(*field)
                .and_then(|o| o.get("anthropic"))
                .and_then(|a| a.get("type"))
                .and_then(Value::as_str)
                == Some("compaction")
        }),
        Format::OpenAi => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips_through_text() {
        let marker = CompactionMarker {
            number: 2,
            time: Some("2025-06-01T12:00:00Z".into()),
            archived_messages: 40,
            tokens_before: 123_456,
            tokens_after: 4_321,
            head: 2,
            key: vec![
                "context-keeper".into(),
                "s".into(),
                "archive".into(),
                "0002".into(),
            ],
            summary: "Intent: fix the build.\nState: tests pass.".into(),
            iterations: None,
        };
        let text = marker.to_text();
        assert!(text.starts_with(COMPACTION_TAG));
        assert_eq!(CompactionMarker::from_text(&text), Some(marker));
        assert_eq!(
            CompactionMarker::from_text("<context-keeper-compaction nope"),
            None
        );
    }

    #[test]
    fn native_compaction_items_are_recognised() {
        use serde_json::json;
        for yes in [
            json!({"type": "compaction", "content": "summary", "encrypted_content": "x"}),
            json!({"type": "custom", "kind": "openai.compaction", "providerOptions": {}}),
            json!({"type": "text", "text": "s", "providerOptions": {"anthropic": {"type": "compaction"}}}),
        ] {
            assert!(is_native_compaction(&yes), "{yes}");
        }
        for no in [
            json!({"type": "text", "text": "compaction"}),
            json!({"type": "custom", "kind": "other"}),
            json!("compaction"),
        ] {
            assert!(!is_native_compaction(&no), "{no}");
        }
    }
}
