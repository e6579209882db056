//! What a rolling window did, section by section.

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::context::archive::SaveFailure;
use crate::context::facts::Fact;
use crate::context::fold::Phase;
use crate::context::marker::MarkerInfo;
use crate::counting::CountMessagesError;
use crate::messages::Conversation;

use super::state::RollingState;

/// What became of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub enum RollingOutcome {
    /// Older iterations were folded into a new summary.
    Folded,
    /// Nothing was due: the stored summary (if any) stands, the rest is raw.
    Unchanged,
    /// A fold was due and failed (`phase`, `reason`): the iterations stay raw and the next
    /// interval tries again.
    Failed,
}

/// Why a fold was due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    /// `resummarizeEvery` iterations since the last attempt.
    Interval,
    /// The raw iterations were over their budget.
    Budget,
}

/// A run of iterations, by number from the first of the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct IterationSpan {
    /// The first.
    pub from: u64,
    /// One past the last.
    pub to: u64,
}

/// One section of the prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SectionReport {
    /// What it counts in the output.
    pub tokens: u64,
    /// Its budget, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub budget: Option<u64>,
    /// Whether it was cut to fit (the recent section: whether iterations were folded early
    /// to fit).
    pub truncated: bool,
}

/// The sections of the prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Sections {
    /// System messages and the host's instructions.
    pub instructions: SectionReport,
    /// The first user request.
    pub goal: SectionReport,
    /// The summary marker.
    pub summary: SectionReport,
    /// The raw iterations (and any user messages between them).
    pub recent: SectionReport,
}

/// What a call did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RollingReport {
    /// What became of it.
    pub outcome: RollingOutcome,
    /// Why a fold was due.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub trigger: Option<Trigger>,
    /// Where a fold failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub phase: Option<Phase>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub reason: Option<String>,
    /// The iterations of the loop so far.
    pub iterations: u64,
    /// The iterations the summary stands for now.
    pub folded: u64,
    /// The iterations sent raw.
    pub raw_iterations: u64,
    /// The iterations folded by this call.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub span: Option<IterationSpan>,
    /// The iteration count at which the next fold is due (sooner if the budget overflows,
    /// unless the last attempt failed).
    pub next_fold_at: u64,
    /// Whether the summary is the built-in heuristic one (no summarizer was given).
    pub heuristic: bool,
    /// Whether the summarizer's text was over `maxSummaryTokens` and trimmed.
    pub summary_trimmed: bool,
    /// The exact details the summary lost and that were appended to it.
    pub pinned: Vec<Fact>,
    /// Each section's tokens and budget.
    pub sections: Sections,
    /// The count of the input.
    pub tokens_before: u64,
    /// The count of the output.
    pub tokens_after: u64,
    /// Whether every section (and the total, if one was given) is within its budget.
    pub within_budget: bool,
    /// Why the output is over budget, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub over_budget: Option<String>,
    /// Whether the token figures are estimates.
    pub estimated: bool,
    /// Archive writes that failed.
    pub failures: Vec<SaveFailure>,
    /// The stored state did not match the history and was started over (why).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub state_reset: Option<String>,
}

/// A call's result.
#[derive(Clone, Debug)]
pub struct Rolled {
    /// The conversation to send.
    pub conversation: Conversation,
    /// For each of its messages, the index of the input message it is (untouched), or
    /// `None` for one written here (the marker, the host's instructions, a cut message, the
    /// steps of a `UIMessage` cut at a fold).
    pub origin: Vec<Option<usize>>,
    /// The marker the conversation holds, if any.
    pub marker: Option<MarkerInfo>,
    /// What was done.
    pub report: RollingReport,
    /// The state to store, when it changed.
    pub state: Option<RollingState>,
}

/// Why a rolling window cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RollingError {
    /// The conversation cannot be counted (a bad option or request field).
    #[error(transparent)]
    Count(#[from] CountMessagesError),
    /// An option is out of range.
    #[error("{path}: {reason}")]
    Options {
        /// The option.
        path: &'static str,
        /// Why.
        reason: String,
    },
}
