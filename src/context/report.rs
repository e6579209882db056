//! What the tiers report: every edit, with where it was made, what it saved and where the
//! original is; every failure, with why the content stayed.

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

/// What was done to one part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// A tool result's text went to the store, replaced by a pointer and a preview.
    Offload,
    /// An old tool result's text was cut to its head and tail.
    SoftTrim,
    /// A very old tool result's text was replaced by a placeholder.
    HardClear,
    /// A file write/edit call's content argument was replaced by a pointer to the file.
    EvictInput,
    /// The long result of a file write/edit call was replaced by a short note.
    EvictResult,
}

impl Action {
    /// Its name in a report (`"hardClear"`), as serde writes it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Offload => "offload",
            Action::SoftTrim => "softTrim",
            Action::HardClear => "hardClear",
            Action::EvictInput => "evictInput",
            Action::EvictResult => "evictResult",
        }
    }
}

/// Where the content an edit removed can be found again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Original {
    /// In the store, under `key`; the model reads it back by `id` ([`read_offloaded`]).
    ///
    /// [`read_offloaded`]: super::recovery::RECOVERY_TOOLS
    #[serde(rename_all = "camelCase")]
    Store {
        /// The store key (absent when a prune cleared a pointer: the id names it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[cfg_attr(target_arch = "wasm32", tsify(optional))]
        key: Vec<String>,
        /// The id the pointer names.
        id: String,
    },
    /// In the file the call wrote.
    #[serde(rename_all = "camelCase")]
    File {
        /// The path, as the call named it.
        path: String,
    },
    /// Only in the host's own history: pruning is pure and stores nothing.
    History,
}

/// One edit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Edit {
    /// What was done.
    pub action: Action,
    /// Index of the message in the `messages` array.
    pub message_index: usize,
    /// Index of the part in the message (content items first, then OpenAI `tool_calls`).
    pub part_index: usize,
    /// The tool's name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_name: Option<String>,
    /// The tool call's id, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_call_id: Option<String>,
    /// The argument of the call that was evicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub field: Option<String>,
    /// Tokens of the edited text before the edit.
    pub tokens_before: u64,
    /// Tokens of the text that replaced it.
    pub tokens_after: u64,
    /// Whether the token figures are estimates (the model's own tokenizer is not the one
    /// counted with, or no model was named).
    pub estimated: bool,
    /// Where the original is.
    pub original: Original,
}

/// Content that stayed because its copy could not be stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// Index of the message, or 0 for a lone result ([`super::offload::plan_result`]).
    pub message_index: usize,
    /// Index of the part in the message.
    pub part_index: usize,
    /// The tool's name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_name: Option<String>,
    /// The tool call's id, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_call_id: Option<String>,
    /// The key the copy was to be saved under.
    pub key: Vec<String>,
    /// Why it was not: the store's error message, or "timed out after 10000 ms".
    pub reason: String,
}

/// Pruning found less to free than `clearAtLeastTokens` asks, and changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// What the edits would have saved.
    pub would_save: u64,
    /// The threshold.
    pub clear_at_least_tokens: u64,
}

/// What one tier did to a conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Every edit, in message order.
    pub edits: Vec<Edit>,
    /// Every part left as it was because its copy was not stored.
    pub failures: Vec<Failure>,
    /// Tokens the edits saved (before minus after, summed).
    pub tokens_saved: u64,
    /// Set when pruning changed nothing because it would free too little.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub held: Option<Held>,
}

impl Report {
    pub(crate) fn push(&mut self, edit: Edit) {
        self.tokens_saved += edit.tokens_before.saturating_sub(edit.tokens_after);
        self.edits.push(edit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_is_named_as_serde_writes_it() {
        for action in [
            Action::Offload,
            Action::SoftTrim,
            Action::HardClear,
            Action::EvictInput,
            Action::EvictResult,
        ] {
            assert_eq!(
                serde_json::to_value(action).unwrap(),
                serde_json::json!(action.name())
            );
        }
    }
}
