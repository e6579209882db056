//! What the rolling window stores per session: the folded iterations and the failures.

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::context::fold::Phase;
use crate::context::NAMESPACE;
use crate::messages::CompactionMarker;

use super::options::*;

/// The store key of a session's rolling state, beside its session state.
pub fn state_key(session_id: &str) -> Vec<String> {
    vec![
        NAMESPACE.to_owned(),
        session_id.to_owned(),
        "state".to_owned(),
        "rolling".to_owned(),
    ]
}

/// A fold that failed, as the state remembers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RollingFailure {
    /// The iteration count when it failed.
    pub at: u64,
    /// Where.
    pub phase: Phase,
    /// Why.
    pub reason: String,
}

/// What the rolling window keeps between calls, so that a stateless Worker folds on schedule
/// and, given the full history again, writes the same summary in the same place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RollingState {
    /// [`ROLLING_STATE_VERSION`] when written.
    pub version: u32,
    /// How many iterations (from the first) the summary stands for.
    pub folded: u64,
    /// The summary.
    pub summary: String,
    /// The latest marker's header (its summary is `summary`), written again as it was.
    pub marker: Option<CompactionMarker>,
    /// Whether the summary is the heuristic one.
    pub heuristic: bool,
    /// The chained hash of the folded iterations' messages: how they are recognised in a full
    /// history. Absent when the fold started from a marker whose iterations it did not see.
    pub chain: Option<String>,
    /// The iteration count at the latest attempt to fold (done or failed): the next is due
    /// `resummarizeEvery` iterations later.
    pub attempted_at: u64,
    /// The iteration count at the latest fold that went through.
    pub folded_at: u64,
    /// Whether the latest attempt failed (it then waits for its interval, even over budget).
    pub failed: bool,
    /// The latest failures, oldest first.
    pub failures: Vec<RollingFailure>,
}

impl Default for RollingState {
    fn default() -> Self {
        RollingState {
            version: ROLLING_STATE_VERSION,
            folded: 0,
            summary: String::new(),
            marker: None,
            heuristic: false,
            chain: None,
            attempted_at: 0,
            folded_at: 0,
            failed: false,
            failures: Vec::new(),
        }
    }
}

impl RollingState {
    /// Reads a stored state; bytes that are not one read as a fresh state (the summary is then
    /// made again: nothing in the conversation depends on it).
    pub fn from_bytes(bytes: Option<&[u8]>) -> RollingState {
        bytes
            .and_then(crate::json::from_bytes::<RollingState>)
            .filter(|s| s.version <= ROLLING_STATE_VERSION)
            .unwrap_or_default()
    }

    /// The state as stored.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(super) fn fail(&mut self, at: u64, phase: Phase, reason: &str) {
        self.attempted_at = at;
        self.failed = true;
        self.failures.push(RollingFailure {
            at,
            phase,
            reason: reason.to_owned(),
        });
        let extra = self.failures.len().saturating_sub(MAX_FAILURES);
        self.failures.drain(..extra);
    }
}
