//! One prepare's state: the working and base conversations, the standing decision's cuts,
//! the pending ones, and the report taking shape.

use std::cell::OnceCell;

use serde_json::json;

use crate::context::compact::CompactPlan;
use crate::context::decision::{self, Cut, CutCopy, DecisionMemo};
use crate::context::evict::EvictOptions;
use crate::context::flush::FlushRequest;
use crate::context::offload::OffloadOptions;
use crate::context::prune::PruneOptions;
use crate::context::state::SessionState;
use crate::context::{Measure, Outcome, ResultSite, Save};
use crate::counting::MessageKey;
use crate::messages::{Conversation, PairingGraph, Role};

use super::options::*;
use super::report::*;

/// A compaction keeps as many recent messages as fit with room for this many more turns of the
/// size the newest had. NOTE: less room than a decision leaves (`minTurnsBetween` + 1): the
/// decision after it cuts the older results it kept, so it keeps what it can (bench/README.md,
/// "What the keeper keeps").
pub(super) const COMPACTION_ROOM_TURNS: u64 = 2;
/// The copies of a decision's cuts are asked for in batches of about this many bytes, so a
/// decision on a 10 MB history does not hold a copy of every result it cuts at once.
pub(super) const SAVE_BATCH_BYTES: usize = 1 << 20;
/// Cache breakpoints Anthropic accepts in one request.
pub(super) const MAX_BREAKPOINTS: usize = 4;

/// Cuts waiting for the copies of what they remove.
#[derive(Debug)]
pub(super) struct Pending {
    /// The cuts in force once the saves are confirmed (a cut whose save fails falls back to
    /// the standing one of its text, or to none).
    pub(super) cuts: Vec<Cut>,
    /// The copies to store; those asked for so far, and the outcome of each.
    pub(super) copies: Vec<CutCopy>,
    pub(super) asked: usize,
    pub(super) outcomes: Vec<Outcome>,
    /// The saves the driver was last asked for (made from the next copies, at most
    /// [`SAVE_BATCH_BYTES`] of them at once).
    pub(super) batch: Vec<Save>,
    /// What comes after.
    pub(super) next: Next,
    /// The decision these cuts make (its latest tool call, and whether it clears), recorded
    /// once they are adopted.
    pub(super) decision: Option<(String, bool)>,
}

impl Pending {
    pub(super) fn new(
        decided: decision::Decided,
        next: Next,
        decision: Option<(String, bool)>,
    ) -> Pending {
        Pending {
            cuts: decided.cuts,
            copies: decided.copies,
            asked: 0,
            outcomes: Vec::new(),
            batch: Vec::new(),
            next,
            decision,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Decide (after the newest exchange's offloads).
    Decide,
    /// Over the compaction threshold after the cuts: flush, then compact.
    Check,
    /// Nothing more (a decision after a compaction).
    Finish,
}

#[derive(Debug)]
pub(super) enum Stage {
    /// Re-apply the stored compactions and offload what the newest exchange cannot hold.
    Start,
    /// Cuts waiting for their saves.
    Cutting(Box<Pending>),
    /// Decide the tiers.
    Decide,
    /// Waiting for the flush; then compact (`true`) or finish.
    Flushing(FlushRequest, bool),
    /// A compaction planned; waiting for its saves and summary.
    Compacting(Box<CompactPlan>),
    /// Ready to finish.
    Done,
}

/// One prepare of a conversation (see the module's documentation).
#[derive(Debug)]
pub struct Prepare {
    pub(super) options: KeeperOptions,
    pub(super) call: Call,
    pub(super) budget: Option<Budget>,
    pub(super) stage: Stage,
    /// The working conversation, and for each message the input message it is, unchanged.
    pub(super) conversation: Conversation,
    pub(super) origin: Vec<Option<usize>>,
    /// The conversation before the cuts (after the stored compactions).
    pub(super) base: Conversation,
    /// The base's tool pairing and tool results ([`result_sites`]), found once per base (cuts
    /// rewrite results, never pairs).
    pub(super) base_sites: OnceCell<(PairingGraph, Vec<ResultSite>)>,
    /// The tiers' options, as a decision and its cuts read them.
    pub(super) tiers: Tiers,
    /// What the cuts made of each text: for the next decision tried, and (handed in and back
    /// by the host, [`Prepare::with_memo`]) the next prepare.
    pub(super) memo: DecisionMemo,
    pub(super) base_origin: Vec<Option<usize>>,
    pub(super) state: SessionState,
    pub(super) state_changed: bool,
    pub(super) report: PrepareReport,
    pub(super) tokens: u64,
    /// The working conversation's count per message.
    pub(super) per_message: Vec<u64>,
    pub(super) estimated: bool,
    /// Whether the base conversation is still the input as read (no compaction): then an
    /// uncut working conversation has the input's count.
    pub(super) base_is_input: bool,
    /// The input's count: its total and per message.
    pub(super) input_count: (u64, Vec<u64>),
    /// Each input message's key ([`MessageKey`]): a message the tiers left as it was is
    /// counted again from the cache by its key, and not read again.
    pub(super) input_keys: Vec<MessageKey>,
    /// Each input message's role.
    pub(super) input_roles: Vec<Role>,
    /// The working conversation's keys (its output hashes).
    pub(super) keys: Vec<MessageKey>,
    /// The working conversation's count before calibration, and the input's.
    pub(super) raw_tokens: u64,
    pub(super) input_raw: u64,
    /// Whether a compaction was applied by this prepare (no second one follows).
    pub(super) compacted: bool,
    /// Whether this prepare stored a copy and offloaded a result (the newest exchange's, too
    /// large to fit whole) that no earlier prepare had.
    pub(super) offloaded_now: bool,
    /// The cuts of a decision that could not make room, made if the compaction that was to
    /// make it fails.
    pub(super) fallback: Option<Box<Pending>>,
}

pub(super) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::Developer => "developer",
        Role::Function => "function",
    }
}

/// The message index just after the exchange of tool call `call` (in the conversation of `sites`): past the call and
/// every result of it.
pub(super) fn exchange_end(sites: &[ResultSite], call: &str) -> Option<usize> {
    sites
        .iter()
        .filter(|s| s.call_id.as_deref() == Some(call))
        .map(|s| s.at.message.max(s.call_at.message) + 1)
        .max()
}

/// Marks message indices as edited.
pub(super) fn mark(origin: &mut [Option<usize>], edited: &[usize]) {
    for &m in edited {
        if let Some(slot) = origin.get_mut(m) {
            *slot = None;
        }
    }
}

/// `outer[i]` is an index into the list `inner` maps to the input: their composition.
pub(super) fn compose(outer: &[Option<usize>], inner: &[Option<usize>]) -> Vec<Option<usize>> {
    outer
        .iter()
        .map(|o| o.and_then(|j| inner.get(j).copied().flatten()))
        .collect()
}

/// Tokens of what a compaction always keeps ahead of the marker: the messages before the
/// first assistant message (system prompts and the first request).
pub(super) fn head_tokens(conv: &Conversation, per_message: &[u64]) -> u64 {
    conv.messages()
        .iter()
        .zip(per_message)
        .take_while(|(m, _)| m.role() != Role::Assistant)
        .map(|(_, t)| *t)
        .sum()
}

/// 8 hex digits of each message's hash (its count key, [`MessageKey::digest`]),
/// concatenated: two outputs agree on their first `n` messages where their first `n` hashes
/// agree. The count has made the keys already, so this reads no message again.
pub(super) fn output_hashes(keys: &[MessageKey]) -> String {
    let mut out = String::with_capacity(keys.len() * 8);
    for key in keys {
        push_hex8(&mut out, (key.digest() >> 32) as u32);
    }
    out
}

/// Writes `value` as 8 lowercase hex digits, as `{:08x}` does: by hand, since the formatter
/// took a tenth of a decision turn's finish on a 1,000-message history.
pub(super) fn push_hex8(out: &mut String, value: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..8).rev() {
        let nibble = ((value >> (shift * 4)) & 0xf) as usize;
        out.push(char::from(HEX.get(nibble).copied().unwrap_or(b'0')));
    }
}

/// `cache_control` marks already in the conversation.
pub(super) fn count_breakpoints(conv: &Conversation) -> usize {
    conv.system()
        .into_iter()
        .chain(conv.messages())
        .flat_map(|m| m.parts())
        .filter(|p| p.raw().get("cache_control").is_some())
        .count()
}

/// Sets `cache_control` on the last content block of `message`; false when it has none (a
/// string content) or it is marked already.
pub(super) fn mark_last_block(message: &mut crate::messages::Message) -> bool {
    let Some(part) = message.parts_mut().last_mut() else {
        return false;
    };
    part.set_cache_control(json!({"type": "ephemeral"}))
}

/// The options of the tiers a decision cuts with: the keeper's, with its model, session and
/// offload limit.
#[derive(Debug)]
pub(super) struct Tiers {
    pub(super) prune: PruneOptions,
    pub(super) evict: EvictOptions,
    pub(super) offload: OffloadOptions,
    pub(super) measure: Measure,
}

impl Tiers {
    pub(super) fn of(options: &KeeperOptions, session_id: &str, budget: Option<Budget>) -> Tiers {
        let mut prune = options.prune.clone();
        prune.model = prune.model.or_else(|| options.model.clone());
        let mut evict = options.evict.clone();
        evict.model = evict.model.or_else(|| options.model.clone());
        let mut offload = options.offload.clone();
        offload.session_id = session_id.to_owned();
        offload.model = offload.model.or_else(|| options.model.clone());
        if let Some(budget) = budget {
            offload.limit_tokens = Some(budget.offload_at);
        }
        Tiers {
            prune,
            evict,
            offload,
            measure: Measure::for_model(options.model.as_deref()),
        }
    }
}
