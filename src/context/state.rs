//! A session's stored state: what must survive a stateless Worker between calls
//! (DESIGN.md, "Session state"). Compaction keeps its overlays here (which span of the full
//! history each summary replaces, so that given the full history again the summary is
//! re-applied without calling the summarizer) and the flush flag (once per compaction cycle).
//!
//! The state is one JSON value under `[namespace, sessionId, "state", "session"]`; the driver
//! loads it before a plan and saves what the plan hands back. Fields are added with defaults,
//! so a state written by an older version reads.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128;

use super::marker::MarkerShape;
use super::NAMESPACE;
use crate::messages::{CompactionMarker, Message};

/// The version written into every state.
pub const STATE_VERSION: u32 = 1;

/// Overlays kept at most: each later one covers the earlier ones, so only the latest few are
/// ever re-applied (a host that rewound its history may match an older one).
pub const MAX_OVERLAYS: usize = 16;

/// The store key of a session's state.
pub fn state_key(session_id: &str) -> Vec<String> {
    vec![
        NAMESPACE.to_owned(),
        session_id.to_owned(),
        "state".to_owned(),
        "session".to_owned(),
    ]
}

/// One compaction, as the state records it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Overlay {
    /// The marker that replaced the span (its header; the summary is `summary`).
    pub marker: CompactionMarker,
    /// The summary text.
    pub summary: String,
    /// How the marker message is written.
    pub shape: MarkerShape,
    /// The span of the full history the marker stands for: messages `head..end` (the head
    /// is `marker.head`), and the first `end_part` parts of message `end` when the cut fell
    /// inside it (an AI SDK `UIMessage` cut at a `step-start`).
    pub end: u64,
    /// See `end`; 0 when the cut fell between messages.
    #[serde(skip_serializing_if = "is_zero")]
    pub end_part: u64,
    /// Every cut inside a message (`[message, part]`, in the full history) of this
    /// compaction and the ones it follows from: the chain is over the messages `head..end`
    /// split at these, as they were archived.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<[u64; 2]>,
    /// The chained hash of the full history's messages `head..end` ([`chain`]), when it is
    /// known: it is how a full history is recognised. Absent when the compaction started from
    /// a marker whose own overlay was not in the state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What is stored for a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionState {
    /// [`STATE_VERSION`] when written.
    pub version: u32,
    /// The compactions, oldest first (at most [`MAX_OVERLAYS`]).
    pub compactions: Vec<Overlay>,
    /// The compaction cycle whose memory flush ran: the number of the compaction it came
    /// before. A flush runs once per cycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flushed_before: Option<u32>,
    /// What the keeper decided and counted for this session ([`super::keeper`]).
    #[serde(skip_serializing_if = "KeeperRecord::is_empty")]
    pub keeper: KeeperRecord,
}

/// The keeper's part of a session's state: its standing decisions (so the same history gives
/// the same output on any instance) and its running figures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeeperRecord {
    /// Where the latest decision was made: the tool call the conversation ended with. The
    /// cuts it made stand until the next decision ([`KeeperRecord::cuts`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub horizon: Option<Horizon>,
    /// The cuts in force, in message order: every prepare makes them again, so the prompt
    /// prefix stays until the next decision ([`super::decision`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<super::decision::Cut>,
    /// Ids of the copies stored and confirmed (offloads and every cut's): not saved again.
    pub offloaded: std::collections::BTreeSet<String>,
    /// The previous output: 8 hex digits of each message's hash, to tell how many leading
    /// messages are unchanged.
    pub output: String,
    /// Running figures ([`KeeperStats`]).
    pub stats: KeeperStats,
    /// The uncalibrated count of the previous output, when it was estimated (the model is
    /// counted by proxy): what `recordUsage` compares the provider's input tokens with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_tokens: Option<u64>,
    /// The calibration `recordUsage` found for this session's model: the provider's input
    /// tokens per estimated token, in millionths. Counts of later prepares are scaled by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration_ppm: Option<u64>,
}

impl KeeperRecord {
    fn is_empty(&self) -> bool {
        *self == KeeperRecord::default()
    }
}

/// Where a decision was made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Horizon {
    /// The id of the latest tool call when the decision was made.
    pub call: String,
}

/// A session's running figures, as `keeper.stats(sessionId)` gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct KeeperStats {
    /// Calls of prepare.
    pub prepared: u64,
    /// Tokens the model was given by the latest prepare.
    pub last_tokens: u64,
    /// Tokens given to the model over every prepare, summed.
    pub tokens_sent: u64,
    /// Tokens saved, per strategy, over every prepare (what each output spared the model).
    pub saved: SavedTokens,
    /// How many times each thing happened.
    pub events: Events,
    /// Bytes written to the store: offloaded results and archives.
    pub stored_bytes: u64,
    /// What the provider reported (`recordUsage`), summed.
    pub usage: ProviderUsage,
}

/// Tokens saved, per strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct SavedTokens {
    pub offload: u64,
    pub prune: u64,
    pub evict: u64,
    pub compact: u64,
}

impl SavedTokens {
    /// Adds `other`'s figures, tier by tier.
    pub fn add(&mut self, other: SavedTokens) {
        self.offload += other.offload;
        self.prune += other.prune;
        self.evict += other.evict;
        self.compact += other.compact;
    }
}

/// Counts of events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct Events {
    /// Tool results offloaded (first time stored).
    pub offloads: u64,
    /// Prune/evict decisions made (each moves the prefix once).
    pub prunes: u64,
    /// Compactions applied.
    pub compactions: u64,
    /// Memory flushes run.
    pub flushes: u64,
    /// Failures reported (store, summary, flush).
    pub failures: u64,
    /// Prepares whose output did not fit the budget.
    pub over_budget: u64,
}

/// Provider-reported usage, summed over `recordUsage` calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct ProviderUsage {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Default for SessionState {
    fn default() -> Self {
        SessionState {
            version: STATE_VERSION,
            compactions: Vec::new(),
            flushed_before: None,
            keeper: KeeperRecord::default(),
        }
    }
}

impl SessionState {
    /// Reads a stored state; bytes that are not one (damaged, or from a newer major version)
    /// read as a fresh state, which costs at most a summary call: nothing in the conversation
    /// depends on it.
    pub fn from_bytes(bytes: Option<&[u8]>) -> SessionState {
        bytes
            .and_then(crate::json::from_bytes::<SessionState>)
            .filter(|s| s.version <= STATE_VERSION)
            .unwrap_or_default()
    }

    /// The state as stored.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The number of the latest compaction (0 before the first).
    pub fn last_number(&self) -> u32 {
        self.compactions
            .iter()
            .map(|o| o.marker.number)
            .max()
            .unwrap_or(0)
    }

    /// The overlay of compaction `number`.
    pub fn overlay(&self, number: u32) -> Option<&Overlay> {
        self.compactions.iter().find(|o| o.marker.number == number)
    }

    /// Records a compaction, dropping the oldest beyond [`MAX_OVERLAYS`] and any with the
    /// same number (a host that rewound and compacted again).
    pub fn push(&mut self, overlay: Overlay) {
        self.compactions
            .retain(|o| o.marker.number < overlay.marker.number);
        self.compactions.push(overlay);
        let extra = self.compactions.len().saturating_sub(MAX_OVERLAYS);
        self.compactions.drain(..extra);
    }

    /// The compaction cycle now running: the number the next compaction will have.
    pub fn cycle(&self) -> u32 {
        self.last_number() + 1
    }

    /// Whether the flush of the current cycle already ran.
    pub fn flushed(&self) -> bool {
        self.flushed_before == Some(self.cycle())
    }
}

/// A chained hash over messages: XXH3-128 of the previous link and the XXH3-128 of the
/// message's JSON, as 32 hex digits. The same messages always give the same chain, across
/// runs and Rust releases; the chain at message `n` stands for every message before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chain(u128);

impl Chain {
    /// The chain after one more message.
    pub fn push(self, message: &Message) -> Chain {
        let json = serde_json::to_vec(&message.to_value()).unwrap_or_default();
        let mut link = [0u8; 32];
        let (prev, this) = link.split_at_mut(16);
        prev.copy_from_slice(&self.0.to_le_bytes());
        this.copy_from_slice(&xxh3_128(&json).to_le_bytes());
        Chain(xxh3_128(&link))
    }

    /// The chain as stored.
    pub fn to_hex(self) -> String {
        format!("{:032x}", self.0)
    }

    /// A stored chain.
    pub fn from_hex(hex: &str) -> Option<Chain> {
        (hex.len() == 32)
            .then(|| u128::from_str_radix(hex, 16).ok())
            .flatten()
            .map(Chain)
    }
}

/// The chain over `messages`, from `start`.
pub fn chain(start: Chain, messages: &[Message]) -> Chain {
    messages.iter().fold(start, |c, m| c.push(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{Format, Role};

    #[test]
    fn state_round_trips_and_damage_reads_as_fresh() {
        let mut state = SessionState::default();
        state.push(Overlay {
            marker: CompactionMarker {
                number: 1,
                ..CompactionMarker::default()
            },
            summary: "s".into(),
            end: 10,
            shape: Default::default(),
            chain: Some("0".repeat(32)),
            ..Overlay::default()
        });
        state.flushed_before = Some(2);
        let bytes = state.to_bytes();
        assert_eq!(SessionState::from_bytes(Some(&bytes)), state);
        assert!(state.flushed() && state.cycle() == 2);
        assert_eq!(
            SessionState::from_bytes(Some(b"{nope")),
            SessionState::default()
        );
        assert_eq!(
            SessionState::from_bytes(Some(br#"{"version": 99}"#)),
            SessionState::default()
        );
        assert_eq!(SessionState::from_bytes(None), SessionState::default());
    }

    #[test]
    fn overlays_are_bounded_and_renumbered_on_rewind() {
        let mut state = SessionState::default();
        for n in 1..=20 {
            state.push(Overlay {
                marker: CompactionMarker {
                    number: n,
                    ..CompactionMarker::default()
                },
                ..Overlay::default()
            });
        }
        assert_eq!(state.compactions.len(), MAX_OVERLAYS);
        assert_eq!(state.last_number(), 20);
        state.push(Overlay {
            marker: CompactionMarker {
                number: 18,
                ..CompactionMarker::default()
            },
            ..Overlay::default()
        });
        assert_eq!(state.last_number(), 18);
    }

    #[test]
    fn chains_depend_on_every_message_and_its_order() {
        let a = Message::text(Format::OpenAi, Role::User, "a");
        let b = Message::text(Format::OpenAi, Role::User, "b");
        let ab = chain(Chain::default(), &[a.clone(), b.clone()]);
        let ba = chain(Chain::default(), &[b.clone(), a.clone()]);
        assert_ne!(ab, ba);
        assert_eq!(ab, chain(Chain::default(), &[a, b]));
        assert_eq!(Chain::from_hex(&ab.to_hex()), Some(ab));
        assert_eq!(Chain::from_hex("xyz"), None);
        // pinned: the algorithm is specified (XXH3-128), so a stored chain stays valid
        let one = chain(
            Chain::default(),
            &[Message::text(Format::OpenAi, Role::User, "hello")],
        );
        assert_eq!(one.to_hex().len(), 32);
    }
}
