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
    /// The summary text.
    #[serde(skip)]
    pub summary: String,
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
            summary: "Intent: fix the build.\nState: tests pass.".into(),
        };
        let text = marker.to_text();
        assert!(text.starts_with(COMPACTION_TAG));
        assert_eq!(CompactionMarker::from_text(&text), Some(marker));
        assert_eq!(
            CompactionMarker::from_text("<context-keeper-compaction nope"),
            None
        );
    }
}
