//! What a prepare reports.

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::context::compact::{self, CompactReport};
use crate::context::decision::DecisionMemo;
use crate::context::flush::FlushReport;
use crate::context::state::SessionState;
use crate::context::{Edit, Failure};
use crate::counting::CountMessagesError;
use crate::messages::Conversation;

use super::options::*;

/// What a prepare call adds to the keeper's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// The session.
    pub session_id: String,
    /// The time for a compaction marker (the core reads no clock).
    pub now: Option<String>,
    /// Whether a flush callback is configured.
    pub flush: bool,
}

/// What a prepare did at each tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// Under the prune threshold: the standing decisions re-applied, nothing new.
    Under,
    /// Over the prune threshold, but a decision was made fewer than `minTurnsBetween` turns
    /// ago and the budget holds: nothing new, so the cached prefix stays.
    Held,
    /// Nothing new was decided, but a result of the newest exchange, too large to fit whole,
    /// was offloaded (its stored copy named in `offloaded`).
    Offloaded,
    /// A new decision that trimmed results or evicted file contents, and cleared none.
    Pruned,
    /// A new decision that cleared results (each to a placeholder naming its stored copy).
    Cleared,
    /// A compaction (and a prune/evict decision on what it kept).
    Compacted,
    /// Over the compaction threshold, and the compaction that was to bring it under failed
    /// (`compaction.reason` says why); the standing decisions re-applied, the next call tries
    /// again.
    CompactionFailed,
    /// Management is off (see `reason`).
    Off,
}

/// What `prepare` did.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PrepareReport {
    /// Whether the keeper managed the conversation (false: `enabled: false` or no window).
    pub managed: bool,
    /// Why it did not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub reason: Option<String>,
    /// The figures worked to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub budget: Option<Budget>,
    /// Tokens of the history as given.
    pub tokens_before: u64,
    /// Tokens of the messages returned.
    pub tokens_after: u64,
    /// Whether `tokensAfter` is at most the budget (`budget.compactAt`).
    pub fits: bool,
    /// Why it does not fit, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub over_budget: Option<String>,
    /// What was decided.
    pub decision: Decision,
    /// Leading messages unchanged since the previous prepare of this session (its output),
    /// or `null` on the first.
    pub unchanged_prefix: Option<usize>,
    /// Messages returned.
    pub messages: usize,
    /// Assistant turns the standing prune decision still holds for: until that many more
    /// turns begin, a history within the budget keeps it (`decision: "held"`) and the prefix
    /// stays; 0 when none stands or a new one may be made now.
    pub holds_for: usize,
    /// Tool results offloaded by this call (first stored now, or re-stored).
    pub offloaded: Vec<Edit>,
    /// Prune edits in the output (the standing decision's and a new one's).
    pub pruned: Vec<Edit>,
    /// Evict edits in the output.
    pub evicted: Vec<Edit>,
    /// Tokens saved per strategy in this output.
    pub saved: crate::context::state::SavedTokens,
    /// The compaction, when one ran or was re-applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compaction: Option<CompactReport>,
    /// The memory flush, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub flush: Option<FlushReport>,
    /// Offloads whose save failed (the result stayed).
    pub failures: Vec<Failure>,
    /// Cache breakpoints set: message indices (`-1`: the system prompt).
    pub breakpoints: Vec<i64>,
    /// Whether token figures are estimates.
    pub estimated: bool,
}

impl PrepareReport {
    pub(super) fn new() -> PrepareReport {
        PrepareReport {
            managed: true,
            reason: None,
            budget: None,
            tokens_before: 0,
            tokens_after: 0,
            fits: true,
            over_budget: None,
            decision: Decision::Under,
            unchanged_prefix: None,
            messages: 0,
            holds_for: 0,
            offloaded: Vec::new(),
            pruned: Vec::new(),
            evicted: Vec::new(),
            saved: crate::context::state::SavedTokens::default(),
            compaction: None,
            flush: None,
            failures: Vec::new(),
            breakpoints: Vec::new(),
            estimated: false,
        }
    }
}

/// A prepared conversation.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The conversation to send.
    pub conversation: Conversation,
    /// For each message, the input message it is, unchanged (else a new one).
    pub origin: Vec<Option<usize>>,
    /// Whether the top-level system prompt was edited (a cache breakpoint).
    pub system_edited: bool,
    /// What was done.
    pub report: PrepareReport,
    /// The session state to store, when it changed.
    pub state: Option<SessionState>,
    /// What the cuts made of the messages they measured, for the next prepare
    /// ([`Prepare::with_memo`]).
    pub memo: DecisionMemo,
}

/// Errors of a prepare.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    /// The conversation cannot be counted (a request object's bad `tools`, say).
    #[error(transparent)]
    Count(#[from] CountMessagesError),
    /// A compaction option is wrong.
    #[error("{path}: {reason}")]
    Options {
        /// Where.
        path: &'static str,
        /// Why.
        reason: String,
    },
}

impl From<compact::CompactError> for PrepareError {
    fn from(err: compact::CompactError) -> Self {
        match err {
            compact::CompactError::Count(err) => PrepareError::Count(err),
            compact::CompactError::Options { path, reason } => PrepareError::Options {
                path: match path {
                    "options.keepRecentTurns" => "options.compact.keepRecentTurns",
                    other => other,
                },
                reason,
            },
        }
    }
}
