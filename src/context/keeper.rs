//! The keeper: every tier in one call, cheapest first, stopping as soon as the budget holds.
//!
//! [`Prepare`] is one `prepare` of a conversation, sans-IO like the tiers it drives: the driver
//! asks [`Prepare::next`] what is needed ([`Need`]: the copies of what cuts remove, a memory
//! flush, a compaction's archive saves and summary), performs it, hands the outcome back, and
//! asks again until [`Need::Done`]; [`Prepare::finish`] gives the conversation, the report and
//! the state to store.
//!
//! The order: re-apply the stored compactions (a full history), offload the newest exchange's
//! largest results only when it cannot fit the budget whole, make the standing decision's cuts
//! again ([`super::decision`]), count. Over the prune threshold (default 85% of the window) a
//! new decision cuts old results, least used first, as deep as leaving room for
//! `minTurnsBetween` + 1 turns needs (at most down to `pruneTarget`); each cut's copy is stored
//! before the cut is made. When cuts cannot make that room, or the count is over the
//! compaction threshold (95%, or window - reserve), the memory flush (once per cycle) and a
//! compaction that keeps the recent messages fitting with room for two turns, followed by a
//! fresh decision.
//!
//! Cache stability: a decision is recorded in the session state (the latest tool call it was
//! made at, and its cuts) and made again on every later prepare, so messages after it are left
//! alone and the prefix the provider cached stays byte-identical until the next decision; the
//! room a decision leaves puts the next several turns away, and a decision is not re-made
//! within `minTurnsBetween` turns unless the budget requires it. The same input, stored state
//! and options give the same output, byte for byte.

use std::cell::OnceCell;

use serde::{Deserialize, Serialize};
use serde_json::json;

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::compact::{self, CompactOptions, CompactPlan, CompactReport};
use super::decision::{self, Cut, CutCopy, DecisionMemo, Shape};
use super::evict::EvictOptions;
use super::flush::{self, resolve, FlushOptions, FlushOutcome, FlushReport, FlushRequest};
use super::fold::{self, SummaryOutcome};
use super::offload::{self, OffloadOptions};
use super::prune::PruneOptions;
use super::report::Report;
use super::state::{Horizon, SavedTokens, SessionState};
use super::{archive, marker};
use super::{
    result_sites, result_sites_paired, Action, Edit, Failure, Measure, Outcome, ResultSite, Save,
    Turns,
};
use crate::counting::{
    CountMessagesError, CountMessagesOptions, Counter, MessageKey, ModelOverrides,
};
use crate::messages::{pair_tools, Conversation, Format, PairingGraph, Role};

/// Default prune/evict threshold: this share of the window.
pub const DEFAULT_PRUNE_AT: f64 = 0.85;
/// Default compaction threshold: this share of the window (or window - reserve, if lower).
pub const DEFAULT_COMPACT_AT: f64 = 0.95;
/// A decision leaves at most this share of the window (less when the turns to come need more
/// room).
pub const DEFAULT_PRUNE_TARGET: f64 = 0.70;
/// A compaction leaves at most this share of the window (less when the turns to come need
/// more room). NOTE: was 0.50; the room for the turns to come now decides, and this bounds it.
pub const DEFAULT_COMPACT_TARGET: f64 = 0.70;
/// A prune/evict decision is not re-made within this many assistant turns of the last one,
/// unless the count is over the compaction threshold.
pub const DEFAULT_MIN_TURNS_BETWEEN: usize = 4;
/// A compaction keeps as many recent messages as fit with room for this many more turns of the
/// size the newest had. NOTE: less room than a decision leaves (`minTurnsBetween` + 1): the
/// decision after it cuts the older results it kept, so it keeps what it can (bench/README.md,
/// "What the keeper keeps").
const COMPACTION_ROOM_TURNS: u64 = 2;
/// The copies of a decision's cuts are asked for in batches of about this many bytes, so a
/// decision on a 10 MB history does not hold a copy of every result it cuts at once.
const SAVE_BATCH_BYTES: usize = 1 << 20;
/// Cache breakpoints Anthropic accepts in one request.
const MAX_BREAKPOINTS: usize = 4;

/// The thresholds: each a share of the window up to 1 (1 is the whole window), or tokens above
/// 1. How they combine with the reserve into the budget: [`KeeperOptions::budget`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Thresholds {
    /// Prune and evict above this. Default 0.85.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prune: f64,
    /// Flush and compact above this (or above window - reserve, if lower). Default 0.95.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compact: f64,
    /// The most a decision leaves (low watermark): it leaves room for `minTurnsBetween` + 1
    /// turns of the size the newest had, and at most this. Default 0.70.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prune_target: f64,
    /// The most a compaction leaves (low watermark): it keeps the recent messages that fit with
    /// room for two turns, and at most this. Default 0.70.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compact_target: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            prune: DEFAULT_PRUNE_AT,
            compact: DEFAULT_COMPACT_AT,
            prune_target: DEFAULT_PRUNE_TARGET,
            compact_target: DEFAULT_COMPACT_TARGET,
        }
    }
}

/// A keeper's configuration (the store, the callbacks and the timeouts are the driver's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KeeperOptions {
    /// The model: its tokenizer counts, and the registry gives its window.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// The context window; wins over the registry's.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub context_window: Option<u64>,
    /// Read the conversation in this format instead of detecting it (the bindings take it
    /// by name, as every export does).
    #[serde(skip)]
    pub format: Option<Format>,
    /// The thresholds.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub thresholds: Thresholds,
    /// A prune/evict decision is not re-made within this many assistant turns of the last
    /// one, unless the count is over the compaction threshold. Default 4.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub min_turns_between: usize,
    /// Offloading (the session id is the call's).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub offload: OffloadOptions,
    /// Pruning.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prune: PruneOptions,
    /// Evicting file contents.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub evict: EvictOptions,
    /// Compaction (the session, model, window and time are the keeper's).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compact: compact::CompactCoreOptions,
    /// Anthropic prompt caching: `cache_control` on the system prompt and on the last message
    /// of the stable prefix.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub cache_breakpoints: bool,
    /// `false` turns management off: prepare returns the input as it is.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub enabled: bool,
    /// The reserve (`reserveTokens`, default 20,000), the flush margin and prompt.
    #[serde(flatten)]
    pub flush: FlushOptions,
}

impl Default for KeeperOptions {
    fn default() -> Self {
        KeeperOptions {
            model: None,
            context_window: None,
            format: None,
            thresholds: Thresholds::default(),
            min_turns_between: DEFAULT_MIN_TURNS_BETWEEN,
            offload: OffloadOptions::default(),
            prune: PruneOptions::default(),
            evict: EvictOptions::default(),
            compact: CompactOptions::default(),
            cache_breakpoints: false,
            enabled: true,
            flush: FlushOptions::default(),
        }
    }
}

/// The token figures a keeper works to, from its options and the model's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The context window.
    pub window: u64,
    /// Prune and evict above this.
    pub prune_at: u64,
    /// Compact above this; after prepare the count is at most this: the budget.
    pub compact_at: u64,
    /// The memory flush runs above this (once per cycle).
    pub flush_at: u64,
    /// A decision leaves at most this.
    pub prune_target: u64,
    /// A compaction leaves at most this.
    pub compact_target: u64,
    /// Tool results over this many tokens are offloaded: `offload.limitTokens`, by default
    /// 20,000 or an eighth of the window when that is less (a 20,000-token result would be
    /// most of a 32k window's budget, and prune would only trim it turns later).
    pub offload_at: u64,
}

impl KeeperOptions {
    /// An error for options that would leave management off without saying so, or fail at the
    /// first prepare: a model the registry does not know, with no `contextWindow` to manage it
    /// in (the error names the model and the registry's nearest names), or a model whose
    /// encoding this build lacks. (A keeper with neither a model nor a window, or with
    /// `enabled: false`, is off by the caller's choice, and says so in every report.)
    pub fn check_model(&self) -> Result<(), String> {
        let (true, Some(model)) = (self.enabled, self.model.as_deref()) else {
            return Ok(());
        };
        // NOTE: an entry with one encoding's tables cannot count the other's models (the
        // estimator-only entry counts every model by the estimate).
        if let Some(encoding) = crate::model::encoding_for_model(model) {
            if !encoding.is_built() && !crate::count::ESTIMATOR_ONLY {
                return Err(format!(
                    "{model:?} counts with {encoding}, which this entry of context-keeper does \
                     not have; use \"context-keeper\" (every encoding) or \
                     \"context-keeper/{}\"",
                    encoding.feature()
                ));
            }
        }
        if self.context_window.is_some() || crate::model::model_info(model).known {
            return Ok(());
        }
        let near = crate::model::nearest_models(model);
        let hint = match near.as_slice() {
            [] => String::new(),
            [one] => format!("Did you mean {one:?}? "),
            many => format!(
                "Did you mean one of {}? ",
                many.iter()
                    .map(|m| format!("{m:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(format!(
            "unknown model {model:?}: its context window is not known, so nothing would be \
             managed. {hint}Pass contextWindow for a model the registry does not list \
             (listModels() lists those it does)"
        ))
    }

    /// The budget, or why there is none (management is then off).
    pub fn budget(&self) -> Result<Budget, String> {
        let window = match (self.context_window, self.model.as_deref()) {
            (Some(window), _) => window,
            (None, Some(model)) => {
                let info = crate::model::model_info(model);
                if !info.known {
                    return Err(format!(
                        "the context window of {model:?} is not known; pass contextWindow"
                    ));
                }
                u64::from(info.context_window)
            }
            (None, None) => return Err("no model and no contextWindow".to_owned()),
        };
        if window == 0 {
            return Err("contextWindow is 0".to_owned());
        }
        let t = &self.thresholds;
        // NOTE: the reserve is at most a quarter of the window (a 20,000-token reserve would
        // leave a 32k window 12k), and each threshold sits at least 5% of the window under the
        // one above it, so that every band (hold, prune, compact) exists on every window.
        let step = window / 20;
        let reserve = resolve(self.flush.reserve_tokens, window).min(window / 4);
        let compact_at = resolve(t.compact, window)
            .min(window.saturating_sub(reserve))
            .max(1);
        let prune_at = resolve(t.prune, window).min(compact_at.saturating_sub(step));
        let prune_target = resolve(t.prune_target, window).min(prune_at.saturating_sub(step));
        let compact_target = resolve(t.compact_target, window).min(prune_target);
        let flush_at = compact_at.saturating_sub(resolve(self.flush.flush_margin, window));
        let offload_at = self
            .offload
            .limit_tokens
            .unwrap_or_else(|| offload::DEFAULT_LIMIT_TOKENS.min(window / 8))
            .max(1);
        Ok(Budget {
            window,
            offload_at,
            prune_at,
            compact_at,
            flush_at,
            prune_target,
            compact_target,
        })
    }

    fn count_options(&self, format: Format) -> CountMessagesOptions {
        CountMessagesOptions {
            model: self.model.clone(),
            format: Some(format),
            ..CountMessagesOptions::default()
        }
    }
}

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
    pub saved: super::state::SavedTokens,
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
    fn new() -> PrepareReport {
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
            saved: super::state::SavedTokens::default(),
            compaction: None,
            flush: None,
            failures: Vec::new(),
            breakpoints: Vec::new(),
            estimated: false,
        }
    }
}

/// What the driver must do next.
#[derive(Debug)]
pub enum Need<'a> {
    /// Save these copies (of what cuts will remove) and hand one outcome each to
    /// [`Prepare::saved`].
    Saves(&'a [Save]),
    /// Run the memory flush and hand its outcome to [`Prepare::flushed`].
    Flush(&'a FlushRequest),
    /// Save the archive, then (when every save was confirmed) ask the summarizer, and hand
    /// both to [`Prepare::summarized`].
    Compact {
        /// The archive's saves, each made when asked for (store one before asking for the
        /// next, and the two copies of the span are never in memory together).
        saves: archive::ArchiveSaves<'a>,
        /// The summary request.
        request: Option<&'a fold::SummaryRequest>,
    },
    /// Call [`Prepare::finish`].
    Done,
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

/// Cuts waiting for the copies of what they remove.
#[derive(Debug)]
struct Pending {
    /// The cuts in force once the saves are confirmed (a cut whose save fails falls back to
    /// the standing one of its text, or to none).
    cuts: Vec<Cut>,
    /// The copies to store; those asked for so far, and the outcome of each.
    copies: Vec<CutCopy>,
    asked: usize,
    outcomes: Vec<Outcome>,
    /// The saves the driver was last asked for (made from the next copies, at most
    /// [`SAVE_BATCH_BYTES`] of them at once).
    batch: Vec<Save>,
    /// What comes after.
    next: Next,
    /// The decision these cuts make (its latest tool call, and whether it clears), recorded
    /// once they are adopted.
    decision: Option<(String, bool)>,
}

impl Pending {
    fn new(decided: decision::Decided, next: Next, decision: Option<(String, bool)>) -> Pending {
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
enum Next {
    /// Decide (after the newest exchange's offloads).
    Decide,
    /// Over the compaction threshold after the cuts: flush, then compact.
    Check,
    /// Nothing more (a decision after a compaction).
    Finish,
}

#[derive(Debug)]
enum Stage {
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
    options: KeeperOptions,
    call: Call,
    budget: Option<Budget>,
    stage: Stage,
    /// The working conversation, and for each message the input message it is, unchanged.
    conversation: Conversation,
    origin: Vec<Option<usize>>,
    /// The conversation before the cuts (after the stored compactions).
    base: Conversation,
    /// The base's tool pairing and tool results ([`result_sites`]), found once per base (cuts
    /// rewrite results, never pairs).
    base_sites: OnceCell<(PairingGraph, Vec<ResultSite>)>,
    /// The cuts the working conversation was made with from the base, and the messages they
    /// changed: the next application to the same base redoes only what differs.
    standing: Option<(Vec<Cut>, Vec<usize>)>,
    /// What the cuts made of each text: for the next decision tried, and (handed in and back
    /// by the host, [`Prepare::with_memo`]) the next prepare.
    memo: DecisionMemo,
    base_origin: Vec<Option<usize>>,
    state: SessionState,
    state_changed: bool,
    report: PrepareReport,
    tokens: u64,
    /// The working conversation's count per message.
    per_message: Vec<u64>,
    estimated: bool,
    /// Whether the base conversation is still the input as read (no compaction): then an
    /// uncut working conversation has the input's count.
    base_is_input: bool,
    /// The input's count: its total and per message.
    input_count: (u64, Vec<u64>),
    /// Each input message's key ([`MessageKey`]): a message the tiers left as it was is
    /// counted again from the cache by its key, and not read again.
    input_keys: Vec<MessageKey>,
    /// Each input message's role.
    input_roles: Vec<Role>,
    /// The working conversation's keys (its output hashes).
    keys: Vec<MessageKey>,
    /// The working conversation's count before calibration, and the input's.
    raw_tokens: u64,
    input_raw: u64,
    /// Whether a compaction was applied by this prepare (no second one follows).
    compacted: bool,
    /// Whether this prepare stored a copy and offloaded a result (the newest exchange's, too
    /// large to fit whole) that no earlier prepare had.
    offloaded_now: bool,
    /// The cuts of a decision that could not make room, made if the compaction that was to
    /// make it fails.
    fallback: Option<Box<Pending>>,
}

impl Prepare {
    /// Starts a prepare of `conv` (as given by the host) with the session's stored state.
    ///
    /// # Errors
    /// A conversation that cannot be counted with these options.
    pub fn start(
        conv: Conversation,
        options: &KeeperOptions,
        call: Call,
        state: SessionState,
        counter: &mut Counter,
    ) -> Result<Prepare, PrepareError> {
        let n = conv.messages().len();
        let mut report = PrepareReport::new();
        let budget = match (options.enabled, options.budget()) {
            (false, _) => {
                report.reason = Some("management is off (enabled: false)".to_owned());
                None
            }
            (true, Err(reason)) => {
                report.reason = Some(reason);
                None
            }
            (true, Ok(budget)) => Some(budget),
        };
        if let Some(model) = options.model.as_deref() {
            // NOTE: the session's calibration (recordUsage), or none, on this keeper's counter
            // (another session of the keeper may have set another); a model counted exactly
            // is left alone by `calibrate`.
            let ppm = state.keeper.calibration_ppm.unwrap_or(1_000_000);
            counter.calibrate(model, &ModelOverrides::default(), 1_000_000, ppm);
        }
        let (count, keys) =
            counter.count_keyed(&conv, &options.count_options(conv.format()), &[])?;
        report.tokens_before = count.total;
        report.estimated = !count.exact;
        let origin: Vec<Option<usize>> = (0..n).map(Some).collect();
        let input_roles = conv.messages().iter().map(|m| m.role()).collect();
        let stage = match budget {
            None => {
                report.managed = false;
                report.decision = Decision::Off;
                Stage::Done
            }
            Some(_) => Stage::Start,
        };
        report.budget = budget;
        Ok(Prepare {
            options: options.clone(),
            call,
            budget,
            stage,
            base: conv.clone(),
            base_sites: OnceCell::new(),
            standing: None,
            memo: DecisionMemo::new(),
            base_origin: origin.clone(),
            conversation: conv,
            origin,
            state,
            state_changed: false,
            report,
            tokens: count.total,
            input_count: (count.total, count.per_message.clone()),
            input_keys: keys.clone(),
            input_roles,
            keys,
            raw_tokens: count.uncalibrated.unwrap_or(count.total),
            input_raw: count.uncalibrated.unwrap_or(count.total),
            per_message: count.per_message,
            estimated: !count.exact,
            base_is_input: true,
            compacted: false,
            offloaded_now: false,
            fallback: None,
        })
    }

    /// Adds to the session's figures the prepares a host answered without the core since the
    /// last one that came here (the JS keeper's fast path: `prepared` calls, `tokens_sent` in
    /// all, and what the standing cuts saved in them), so that `stats` counts every prepare.
    pub fn add_unrecorded(&mut self, prepared: u64, tokens_sent: u64, saved: SavedTokens) {
        if prepared == 0 {
            return;
        }
        let stats = &mut self.state.keeper.stats;
        stats.prepared += prepared;
        stats.tokens_sent += tokens_sent;
        stats.saved.add(saved);
        self.state_changed = true;
    }

    /// Uses `memo`, what earlier prepares of this keeper's histories cut (by message identity,
    /// so it holds across prepares of a history whose messages the host keeps parsed);
    /// [`Prepared::memo`] hands it back, swept of what this prepare did not use.
    #[must_use]
    pub fn with_memo(mut self, memo: DecisionMemo) -> Prepare {
        self.memo = memo;
        self
    }

    /// How the count read each input message: the conversation's format, the message's role
    /// and its key (a host keeps these with the message objects it recognises,
    /// [`crate::counting::Learnt::counted`]).
    pub fn input_counted(&self) -> impl Iterator<Item = (Format, Role, MessageKey)> + '_ {
        let format = self.conversation.format();
        (self.input_keys.iter())
            .zip(&self.input_roles)
            .map(move |(key, role)| (format, *role, *key))
    }

    /// What the driver must do next; [`Need::Done`] once nothing is left.
    ///
    /// # Errors
    /// A conversation that cannot be counted (it was counted once already, so in practice
    /// never), or a compaction option that is wrong.
    pub fn next(&mut self, counter: &mut Counter) -> Result<Need<'_>, PrepareError> {
        loop {
            match &self.stage {
                Stage::Start => {
                    self.begin();
                    continue;
                }
                Stage::Cutting(pending) if pending.batch.is_empty() => {
                    if pending.asked >= pending.copies.len() {
                        self.adopt(counter)?;
                    } else {
                        self.next_batch();
                    }
                    continue;
                }
                Stage::Decide => {
                    self.decide(counter)?;
                    continue;
                }
                Stage::Cutting(_) | Stage::Flushing(..) | Stage::Compacting(_) | Stage::Done => {
                    break
                }
            }
        }
        Ok(match &self.stage {
            Stage::Cutting(pending) => Need::Saves(&pending.batch),
            Stage::Flushing(request, _) => Need::Flush(request),
            Stage::Compacting(plan) => Need::Compact {
                saves: plan.saves(),
                request: plan.summary_request(),
            },
            Stage::Start | Stage::Decide | Stage::Done => Need::Done,
        })
    }

    /// The archive saves of the compaction [`Need::Compact`] asked for, while it waits for
    /// their outcomes.
    pub fn archive_saves(&self) -> Option<archive::ArchiveSaves<'_>> {
        match &self.stage {
            Stage::Compacting(plan) => Some(plan.saves()),
            _ => None,
        }
    }

    /// The outcomes of the saves [`Need::Saves`] asked for, in order.
    ///
    /// # Errors
    /// A conversation that cannot be counted (in practice never: it was counted).
    pub fn saved(
        &mut self,
        outcomes: &[Outcome],
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        let Stage::Cutting(pending) = &mut self.stage else {
            return Ok(());
        };
        let batch = std::mem::take(&mut pending.batch);
        for (i, save) in batch.iter().enumerate() {
            let outcome = outcomes
                .get(i)
                .cloned()
                .unwrap_or_else(|| Outcome::Failed("the save has no outcome".to_owned()));
            if outcome == Outcome::Saved {
                self.state.keeper.stats.stored_bytes += save.bytes.len() as u64;
            }
            pending.outcomes.push(outcome);
        }
        pending.asked += batch.len();
        if pending.asked >= pending.copies.len() {
            self.adopt(counter)?;
        }
        Ok(())
    }

    /// Makes the next batch of copies for the driver to store.
    fn next_batch(&mut self) {
        let Stage::Cutting(pending) = &mut self.stage else {
            return;
        };
        let mut bytes = 0;
        let mut batch = Vec::new();
        for copy in pending.copies.iter().skip(pending.asked) {
            if !batch.is_empty() && bytes + copy.len() > SAVE_BATCH_BYTES {
                break;
            }
            bytes += copy.len();
            batch.push(copy.make());
        }
        pending.batch = batch;
    }

    /// The shape of the cuts: the options they are made with, and the session.
    fn shape(&self) -> (PruneOptions, EvictOptions, OffloadOptions) {
        let mut prune = self.options.prune.clone();
        prune.model = prune.model.or_else(|| self.options.model.clone());
        let mut evict = self.options.evict.clone();
        evict.model = evict.model.or_else(|| self.options.model.clone());
        let mut offload = self.options.offload.clone();
        offload.session_id = self.call.session_id.clone();
        offload.model = offload.model.or_else(|| self.options.model.clone());
        if let Some(budget) = self.budget {
            offload.limit_tokens = Some(budget.offload_at);
        }
        (prune, evict, offload)
    }

    /// The stored compactions (when the host sends its full history), then the offloads of
    /// the newest exchange's results when it cannot fit whole.
    fn begin(&mut self) {
        self.stage = Stage::Decide;
        if let Some(compact::Reapplied {
            conversation: conv,
            origin: map,
            ..
        }) = compact::reapply(&self.conversation, &self.state)
        {
            self.origin = compose(&map, &self.origin);
            self.conversation = conv;
            self.base_is_input = false;
            self.base = self.conversation.clone();
            self.base_origin = self.origin.clone();
            self.standing = None;
        }
        let Some(budget) = self.budget else { return };
        // NOTE: the per-message count of the base: the input's, or (after a compaction was
        // re-applied) none; the newest exchange is then measured by its texts alone.
        let per_message = if self.base_is_input {
            self.input_count.1.clone()
        } else {
            Vec::new()
        };
        let head = head_tokens(&self.base, &per_message);
        let (prune, evict, offload) = self.shape();
        let shape = Shape {
            prune: &prune,
            evict: &evict,
            offload: &offload,
            session_id: &self.call.session_id,
            measure: Measure::for_model(self.options.model.as_deref()),
        };
        let mut memo = std::mem::take(&mut self.memo);
        let newest = {
            let (_, sites) = self.paired();
            decision::offload_newest(
                &self.base,
                sites,
                &self.state.keeper.cuts,
                head,
                budget.compact_at,
                &shape,
                &mut memo,
                |id| self.state.keeper.offloaded.contains(id),
            )
        };
        self.memo = memo;
        if let Some(decided) = newest {
            self.stage = Stage::Cutting(Box::new(Pending::new(decided, Next::Decide, None)));
        }
    }

    /// Adopts the pending cuts whose copies `outcomes` confirm (one per save asked for).
    fn adopt(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        let Stage::Cutting(pending) = std::mem::replace(&mut self.stage, Stage::Done) else {
            return Ok(());
        };
        let Pending {
            mut cuts,
            copies,
            outcomes,
            next,
            decision,
            ..
        } = *pending;
        if let Some((call, cleared)) = decision {
            self.report.decision = match cleared {
                true => Decision::Cleared,
                false => Decision::Pruned,
            };
            self.record_horizon(Horizon { call });
        }
        let offloads: std::collections::HashSet<&str> = (cuts.iter())
            .filter(|c| c.action == Action::Offload)
            .map(|c| c.id.as_str())
            .collect();
        let mut failed: Vec<&str> = Vec::new();
        for (i, copy) in copies.iter().enumerate() {
            let id = copy.id();
            match outcomes.get(i) {
                Some(Outcome::Saved) => {
                    let fresh = self.state.keeper.offloaded.insert(id.to_owned());
                    if fresh && offloads.contains(id) {
                        self.state.keeper.stats.events.offloads += 1;
                        self.offloaded_now = true;
                    }
                }
                other => {
                    let reason = match other {
                        Some(Outcome::Failed(reason)) => reason.clone(),
                        _ => "the save has no outcome".to_owned(),
                    };
                    failed.push(id);
                    let cut = cuts.iter().find(|c| c.id == id);
                    self.report.failures.push(Failure {
                        message_index: 0,
                        part_index: 0,
                        tool_name: None,
                        tool_call_id: cut.map(|c| c.call.clone()),
                        key: crate::context::offload::offload_key(&self.call.session_id, id),
                        reason,
                    });
                }
            }
        }
        if !failed.is_empty() {
            // NOTE: a cut whose copy was not stored is not made: its text stays, or keeps the
            // standing cut it had (whose copy was stored when it was made).
            let standing = std::mem::take(&mut self.state.keeper.cuts);
            cuts = cuts
                .into_iter()
                .filter_map(|cut| {
                    if !failed.contains(&cut.id.as_str()) {
                        return Some(cut);
                    }
                    standing
                        .iter()
                        .find(|s| s.call == cut.call && s.field == cut.field && s.id != cut.id)
                        .cloned()
                })
                .collect();
            self.state.keeper.stats.events.failures += failed.len() as u64;
        }
        self.set_cuts(cuts);
        let tokens = self.apply_cuts(counter)?;
        self.locate_failures();
        match next {
            Next::Decide => self.stage = Stage::Decide,
            Next::Finish => self.stage = Stage::Done,
            Next::Check => {
                self.stage = Stage::Done;
                if let Some(budget) = self.budget {
                    let flush_due = self.flush_due(tokens, budget);
                    if tokens > budget.compact_at {
                        return self.compact_now(counter);
                    }
                    return self.then_flush(flush_due, false);
                }
            }
        }
        Ok(())
    }

    /// Names the message and part of each failure by its call.
    fn locate_failures(&mut self) {
        if self.report.failures.is_empty() {
            return;
        }
        let sites = result_sites(&self.conversation);
        for failure in &mut self.report.failures {
            let Some(call) = failure.tool_call_id.as_deref() else {
                continue;
            };
            if let Some(site) = sites.iter().find(|s| s.call_id.as_deref() == Some(call)) {
                failure.message_index = self
                    .origin
                    .get(site.at.message)
                    .copied()
                    .flatten()
                    .unwrap_or(site.at.message);
                failure.part_index = site.at.part;
                failure.tool_name.clone_from(&site.tool_name);
            }
        }
    }

    fn set_cuts(&mut self, cuts: Vec<Cut>) {
        if self.state.keeper.cuts != cuts {
            self.state.keeper.cuts = cuts;
            self.state_changed = true;
        }
    }

    /// Re-applies the standing decision, counts, and decides what more is needed.
    fn decide(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        self.stage = Stage::Done;
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let tokens = self.apply_cuts(counter)?;
        let flush_due = self.flush_due(tokens, budget);
        if tokens <= budget.prune_at {
            self.report.decision = Decision::Under;
            return self.then_flush(flush_due, false);
        }
        let recent = (self.state.keeper.horizon.as_ref()).and_then(|h| self.turns_since(&h.call));
        if recent.is_some_and(|turns| turns < self.options.min_turns_between)
            && tokens <= budget.compact_at
        {
            // NOTE: a decision this recent is not re-made while the budget holds: the prefix
            // stays. Past the budget a deeper one is made at once.
            self.report.decision = Decision::Held;
            return self.then_flush(flush_due, false);
        }
        self.new_decision(budget, tokens, Next::Check, counter)
    }

    /// Makes a new decision at the latest tool call, down to the target; `next` says what
    /// follows it.
    fn new_decision(
        &mut self,
        budget: Budget,
        tokens: u64,
        next: Next,
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        let Some(call) = self.latest_call() else {
            // no tool results to cut: only a compaction can help
            return match next {
                Next::Finish => Ok(()),
                _ => self.over_prune(budget, tokens, counter),
            };
        };
        let Some(end) = exchange_end(self.sites(), &call) else {
            return Ok(());
        };
        let target = self.target(budget);
        let (prune, evict, offload) = self.shape();
        let shape = Shape {
            prune: &prune,
            evict: &evict,
            offload: &offload,
            session_id: &self.call.session_id,
            measure: Measure::for_model(self.options.model.as_deref()),
        };
        let mut memo = std::mem::take(&mut self.memo);
        let decided = {
            let (graph, sites) = self.paired();
            decision::decide(
                &self.base,
                sites,
                graph,
                end,
                &self.state.keeper.cuts,
                tokens,
                target,
                &shape,
                &mut memo,
                |id| self.state.keeper.offloaded.contains(id),
            )
        };
        self.memo = memo;
        if decided.cuts == self.state.keeper.cuts {
            // nothing more to cut: only a compaction can help
            return match next {
                Next::Finish => Ok(()),
                _ => self.over_prune(budget, tokens, counter),
            };
        }
        let (cleared, short) = (decided.cleared, decided.estimate > target);
        let pending = Box::new(Pending::new(decided, next, Some((call, cleared))));
        // NOTE: cuts that cannot make room for the turns to come would be made again at every
        // turn: a compaction makes the room, and the cuts are made (their copies stored) only
        // if it fails.
        if next == Next::Check && short && !self.compacted {
            self.fallback = Some(pending);
            return self.compact_now(counter);
        }
        self.stage = Stage::Cutting(pending);
        Ok(())
    }

    /// What a new decision aims to leave: room for `minTurnsBetween` and one more turns of the
    /// size the newest turns had (the growth measured on the newest eight), under the prune
    /// threshold; at most `pruneTarget`. A window too small for that much room gets what
    /// cutting every result older than the kept turns leaves.
    fn target(&self, budget: Budget) -> u64 {
        self.target_with(budget, self.options.min_turns_between as u64 + 1)
    }

    fn target_with(&self, budget: Budget, turns_of_room: u64) -> u64 {
        let turns = Turns::of(&self.base);
        let starts = turns.starts();
        let k = starts.len().min(8);
        let growth = match starts.len().checked_sub(k).and_then(|i| starts.get(i)) {
            Some(first) if k > 0 => {
                let newest: u64 = self.per_message.iter().skip(first.message).sum();
                newest / k as u64
            }
            _ => 0,
        };
        let room = growth.saturating_mul(turns_of_room);
        budget
            .prune_at
            .saturating_sub(room)
            .min(budget.prune_target)
    }

    /// Over the compaction threshold after the cuts: flush (when due), then compact.
    fn over_prune(
        &mut self,
        budget: Budget,
        tokens: u64,
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        if tokens <= budget.compact_at {
            return Ok(());
        }
        self.compact_now(counter)
    }

    /// Flush (when due), then compact: once per prepare.
    fn compact_now(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        if self.compacted {
            return Ok(());
        }
        // NOTE: over the prune threshold, "under" is never the word: the standing decision
        // holds unless a new one was made this call.
        if self.report.decision == Decision::Under {
            self.report.decision = Decision::Held;
        }
        let flush_due = self.call.flush && !self.state.flushed();
        if flush_due {
            return self.then_flush(true, true);
        }
        self.start_compaction(counter)
    }

    fn flush_due(&self, tokens: u64, budget: Budget) -> bool {
        self.call.flush && !self.state.flushed() && tokens > budget.flush_at
    }

    /// Asks for the flush when due; `compact` says whether a compaction follows it.
    fn then_flush(&mut self, due: bool, compact: bool) -> Result<(), PrepareError> {
        if !due {
            return Ok(());
        }
        let window = self.budget.map_or(0, |b| b.window);
        if let Some(request) =
            flush::request(&self.options.flush, &self.state, self.tokens, window, true)
        {
            self.stage = Stage::Flushing(request, compact);
        }
        Ok(())
    }

    /// The outcome of the flush [`Need::Flush`] asked for.
    ///
    /// # Errors
    /// A compaction option that is wrong (when the compaction follows).
    pub fn flushed(
        &mut self,
        outcome: FlushOutcome,
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        let Stage::Flushing(request, compact) = std::mem::replace(&mut self.stage, Stage::Done)
        else {
            return Ok(());
        };
        let report = flush::record(&request, outcome, &mut self.state);
        self.state_changed = true;
        self.state.keeper.stats.events.flushes += 1;
        if report.failure.is_some() {
            self.state.keeper.stats.events.failures += 1;
        }
        self.report.flush = Some(report);
        if compact {
            self.start_compaction(counter)?;
        }
        Ok(())
    }

    /// Plans the compaction of the conversation before the cuts, keeping what fits under the
    /// compaction's low watermark.
    fn start_compaction(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let mut options = self.options.compact.clone();
        options.session_id = self.call.session_id.clone();
        options.model = self.options.model.clone();
        options.context_window = Some(budget.window);
        options.now = self.call.now.clone();
        options.flush = false;
        if options.keep_recent_turns.is_none() && options.keep_recent_tokens.is_none() {
            let known = self.known_keys(&self.base_origin);
            let (count, _) = counter.count_keyed(
                &self.base,
                &self.options.count_options(self.base.format()),
                &known,
            )?;
            let head = head_tokens(&self.base, &count.per_message);
            let room = self
                .target_with(budget, COMPACTION_ROOM_TURNS)
                .min(budget.compact_target)
                .saturating_sub(head)
                .saturating_sub(options.target_tokens);
            options.keep_recent_tokens = Some(room.max(1));
        }
        let plan = compact::plan(self.base.clone(), &options, self.state.clone(), counter)?;
        self.stage = Stage::Compacting(Box::new(plan));
        Ok(())
    }

    /// The outcomes of the compaction [`Need::Compact`] asked for: one per archive save, and
    /// the summary (`NotCalled` when a save failed; `Heuristic` without a summarizer).
    ///
    /// # Errors
    /// A conversation that cannot be counted (in practice never: it was counted).
    pub fn summarized(
        &mut self,
        archive: &[Outcome],
        summary: SummaryOutcome,
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        let Stage::Compacting(plan) = std::mem::replace(&mut self.stage, Stage::Done) else {
            return Ok(());
        };
        let saves = plan.saves();
        let stored: u64 = (archive.iter().enumerate())
            .filter(|(_, o)| **o == Outcome::Saved)
            .filter_map(|(i, _)| saves.made_len(i))
            .map(|n| n as u64)
            .sum();
        let done = plan.finish(archive, summary, None, counter);
        let applied = matches!(
            done.report.outcome,
            compact::CompactOutcome::Compacted | compact::CompactOutcome::Reapplied
        );
        self.state.keeper.stats.stored_bytes += stored;
        if applied {
            self.base_origin = compose(&done.origin, &self.base_origin);
            self.base = done.conversation;
            self.base_sites = OnceCell::new();
            self.standing = None;
            self.base_is_input = false;
            self.compacted = true;
            if let Some(state) = done.state {
                let keeper = std::mem::take(&mut self.state.keeper);
                self.state = state;
                self.state.keeper = keeper;
                self.state_changed = true;
            }
            self.state.keeper.stats.events.compactions += 1;
            self.report.saved.compact = done
                .report
                .tokens_before
                .saturating_sub(done.report.tokens_after);
            self.report.decision = Decision::Compacted;
            // a fresh decision on what the compaction kept (made only when it is still over
            // the threshold); the offloads of results too large for the window stay
            self.state.keeper.horizon = None;
            let kept: std::collections::HashSet<String> = (self.paired().0.exchanges.iter())
                .flat_map(|e| e.calls.iter().filter_map(|link| link.id.clone()))
                .collect();
            let offloads = (self.state.keeper.cuts.iter())
                .filter(|c| c.action == Action::Offload && kept.contains(&c.call))
                .cloned()
                .collect();
            self.set_cuts(offloads);
            let tokens = self.apply_cuts(counter)?;
            if let Some(budget) = self.budget {
                if tokens > budget.prune_at {
                    self.new_decision(budget, tokens, Next::Finish, counter)?;
                    if matches!(self.stage, Stage::Cutting(_)) {
                        // NOTE: the decision's words give way to the compaction's.
                        self.report.decision = Decision::Compacted;
                    }
                }
            }
        } else {
            self.state.keeper.stats.events.failures += 1;
            self.state_changed = true;
            if done.report.outcome == compact::CompactOutcome::Failed
                && matches!(self.report.decision, Decision::Under | Decision::Held)
            {
                self.report.decision = Decision::CompactionFailed;
            }
        }
        self.report.compaction = Some(done.report);
        // the cuts that were to wait for the compaction: made now if it did not make room
        if let Some(mut pending) = self.fallback.take() {
            if !applied {
                pending.next = Next::Finish;
                self.stage = Stage::Cutting(pending);
            }
        }
        Ok(())
    }

    /// Records a new standing decision.
    fn record_horizon(&mut self, horizon: Horizon) {
        self.state.keeper.stats.events.prunes += 1;
        self.state.keeper.horizon = Some(horizon);
        self.state_changed = true;
    }

    /// Applies the standing cuts to the base conversation into the working one; returns its
    /// count.
    fn apply_cuts(&mut self, counter: &mut Counter) -> Result<u64, PrepareError> {
        let (prune, evict, offload) = self.shape();
        let shape = Shape {
            prune: &prune,
            evict: &evict,
            offload: &offload,
            session_id: &self.call.session_id,
            measure: Measure::for_model(self.options.model.as_deref()),
        };
        let mut memo = std::mem::take(&mut self.memo);
        let standing = self.standing.take();
        let applied = {
            let previous = standing.as_ref().map(|(cuts, edited)| decision::Previous {
                cuts,
                applied: decision::Applied {
                    conversation: self.conversation.clone(),
                    edited: edited.clone(),
                    offloaded: Report::of(std::mem::take(&mut self.report.offloaded)),
                    pruned: Report::of(std::mem::take(&mut self.report.pruned)),
                    evicted: Report::of(std::mem::take(&mut self.report.evicted)),
                },
            });
            let (graph, sites) = self.paired();
            decision::apply(
                self.base.clone(),
                &self.state.keeper.cuts,
                sites,
                graph,
                &shape,
                &mut memo,
                previous,
            )
        };
        self.memo = memo;
        self.standing = Some((self.state.keeper.cuts.clone(), applied.edited.clone()));
        let mut origin = self.base_origin.clone();
        mark(&mut origin, &applied.edited);
        // NOTE: nothing edited since the input was counted: its count stands.
        if self.base_is_input && applied.edited.is_empty() {
            self.tokens = self.input_count.0;
            self.raw_tokens = self.input_raw;
            self.per_message.clone_from(&self.input_count.1);
            self.keys.clone_from(&self.input_keys);
        } else {
            let known = self.known_keys(&origin);
            let (count, keys) = counter.count_keyed(
                &applied.conversation,
                &self.options.count_options(applied.conversation.format()),
                &known,
            )?;
            self.tokens = count.total;
            self.raw_tokens = count.uncalibrated.unwrap_or(count.total);
            self.per_message = count.per_message;
            self.estimated = !count.exact;
            self.keys = keys;
        }
        self.report.saved.offload = applied.offloaded.tokens_saved;
        self.report.saved.prune = applied.pruned.tokens_saved;
        self.report.saved.evict = applied.evicted.tokens_saved;
        self.report.offloaded = applied.offloaded.edits;
        self.report.pruned = applied.pruned.edits;
        self.report.evicted = applied.evicted.edits;
        self.conversation = applied.conversation;
        self.origin = origin;
        Ok(self.tokens)
    }

    /// The key of each message `origin` maps to an input message it still is.
    fn known_keys(&self, origin: &[Option<usize>]) -> Vec<Option<MessageKey>> {
        origin
            .iter()
            .map(|o| o.and_then(|i| self.input_keys.get(i).copied()))
            .collect()
    }

    /// Assistant turns begun after the exchange of `call` (`None` when it is not there).
    fn turns_since(&self, call: &str) -> Option<usize> {
        let end = exchange_end(self.sites(), call)?;
        let all = Turns::of(&self.base);
        let before = Turns::until(&self.base, Some(end));
        Some(all.len().saturating_sub(before.len()))
    }

    /// The id of the latest tool call that has its result.
    fn latest_call(&self) -> Option<String> {
        self.sites().iter().rev().find_map(|s| s.call_id.clone())
    }

    /// The base's tool results.
    fn sites(&self) -> &[ResultSite] {
        &self.paired().1
    }

    /// The base's tool pairing and tool results.
    fn paired(&self) -> &(PairingGraph, Vec<ResultSite>) {
        self.base_sites.get_or_init(|| {
            let graph = pair_tools(&self.base);
            let sites = result_sites_paired(&self.base, &graph);
            (graph, sites)
        })
    }

    /// The prepared conversation, the report and the state to store.
    pub fn finish(mut self, counter: &mut Counter) -> Prepared {
        // NOTE: nothing else new, but a result offloaded: "under" would hide it.
        if self.offloaded_now && matches!(self.report.decision, Decision::Under | Decision::Held) {
            self.report.decision = Decision::Offloaded;
        }
        let mut system_edited = false;
        if self.budget.is_some() {
            if self.options.cache_breakpoints && self.conversation.format() == Format::Anthropic {
                system_edited = self.set_breakpoints();
                if !self.report.breakpoints.is_empty() {
                    let known = self.known_keys(&self.origin);
                    if let Ok((count, keys)) = counter.count_keyed(
                        &self.conversation,
                        &self.options.count_options(self.conversation.format()),
                        &known,
                    ) {
                        self.tokens = count.total;
                        self.per_message = count.per_message;
                        self.keys = keys;
                    }
                }
            }
            self.finish_figures();
        } else {
            self.report.tokens_after = self.report.tokens_before;
            self.conversation = self.base.clone();
            self.origin = self.base_origin.clone();
        }
        self.report.messages = self.conversation.messages().len();
        self.memo.sweep(&self.base);
        Prepared {
            conversation: self.conversation,
            origin: self.origin,
            system_edited,
            report: self.report,
            state: self.state_changed.then_some(self.state),
            memo: self.memo,
        }
    }

    fn finish_figures(&mut self) {
        let Some(budget) = self.budget else { return };
        self.report.tokens_after = self.tokens;
        self.report.estimated |= self.estimated;
        self.report.fits = self.tokens <= budget.compact_at;
        if !self.report.fits {
            self.report.over_budget = Some(self.why_over(budget));
            self.state.keeper.stats.events.over_budget += 1;
        }
        self.report.holds_for = (self.state.keeper.horizon.as_ref())
            .and_then(|h| self.turns_since(&h.call))
            .map_or(0, |turns| {
                self.options.min_turns_between.saturating_sub(turns)
            });
        let hashes = output_hashes(&self.keys);
        let previous = &self.state.keeper.output;
        self.report.unchanged_prefix = (!previous.is_empty()).then(|| {
            hashes
                .as_bytes()
                .chunks(8)
                .zip(previous.as_bytes().chunks(8))
                .take_while(|(a, b)| a == b)
                .count()
        });
        let stats = &mut self.state.keeper.stats;
        stats.prepared += 1;
        stats.last_tokens = self.tokens;
        stats.tokens_sent += self.tokens;
        stats.saved.add(self.report.saved);
        stats.events.failures += self.report.failures.len() as u64;
        self.state.keeper.output = hashes;
        // NOTE: only a model counted by proxy (or by the estimator, in a build without
        // tables) is calibrated: an exact one's estimate is only the framing of tool calls and
        // images, which a ratio would not fix.
        let proxy = (self.options.model.as_deref())
            .is_some_and(|m| !crate::counting::counts_exactly(&crate::model::model_info(m)));
        self.state.keeper.estimated_tokens = (proxy && self.estimated).then_some(self.raw_tokens);
        self.state_changed = true;
    }

    /// Why the output is over the budget.
    fn why_over(&self, budget: Budget) -> String {
        if let Some(compaction) = &self.report.compaction {
            if compaction.outcome == compact::CompactOutcome::Failed {
                return format!(
                    "the compaction failed ({}): {}",
                    compaction.phase.map_or("plan", |p| match p {
                        fold::Phase::Archive => "archive",
                        fold::Phase::Summarize => "summarize",
                        fold::Phase::Check => "check",
                    }),
                    compaction.reason.as_deref().unwrap_or("no reason given")
                );
            }
        }
        let largest = self
            .per_message
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|(_, t)| *t);
        let largest_role = largest.and_then(|(i, _)| {
            self.conversation
                .messages()
                .get(i)
                .map(|m| role_name(m.role()))
        });
        if let Some((i, tokens)) = largest {
            if tokens > budget.compact_at {
                // NOTE: named by its index in the history the host gave.
                let i = self.origin.get(i).copied().flatten().unwrap_or(i);
                let role = largest_role.unwrap_or("a");
                return format!(
                    "message {i} ({role}) alone is {tokens} tokens, over the budget of {}",
                    budget.compact_at
                );
            }
        }
        format!(
            "{} tokens remain over the budget of {} after every tier: the recent turns kept verbatim, the system prompt and the first request are too large for this window",
            self.tokens, budget.compact_at
        )
    }

    /// Sets Anthropic `cache_control` breakpoints on the system prompt and on the last
    /// message of the stable prefix (the standing decision's horizon, or the latest marker),
    /// within the four a request may carry. Returns whether the system prompt was edited.
    fn set_breakpoints(&mut self) -> bool {
        let existing = count_breakpoints(&self.conversation);
        let mut room = MAX_BREAKPOINTS.saturating_sub(existing);
        let mut system_edited = false;
        if room > 0 {
            if let Some(system) = self.conversation.system_mut() {
                if mark_last_block(system) {
                    system_edited = true;
                    room -= 1;
                    self.report.breakpoints.push(-1);
                }
            }
        }
        let end = self
            .state
            .keeper
            .horizon
            .as_ref()
            .and_then(|h| exchange_end(&result_sites(&self.conversation), &h.call))
            .or_else(|| marker::latest_marker(self.conversation.messages()).map(|(at, _)| at + 1));
        if let (true, Some(end)) = (room > 0, end) {
            let at = end.saturating_sub(1);
            if let Some(message) = self.conversation.messages_mut().get_mut(at) {
                if mark_last_block(message) {
                    if let Some(slot) = self.origin.get_mut(at) {
                        *slot = None;
                    }
                    self.report.breakpoints.push(at as i64);
                }
            }
        }
        system_edited
    }
}

fn role_name(role: Role) -> &'static str {
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
fn exchange_end(sites: &[ResultSite], call: &str) -> Option<usize> {
    sites
        .iter()
        .filter(|s| s.call_id.as_deref() == Some(call))
        .map(|s| s.at.message.max(s.call_at.message) + 1)
        .max()
}

/// Marks message indices as edited.
fn mark(origin: &mut [Option<usize>], edited: &[usize]) {
    for &m in edited {
        if let Some(slot) = origin.get_mut(m) {
            *slot = None;
        }
    }
}

/// `outer[i]` is an index into the list `inner` maps to the input: their composition.
fn compose(outer: &[Option<usize>], inner: &[Option<usize>]) -> Vec<Option<usize>> {
    outer
        .iter()
        .map(|o| o.and_then(|j| inner.get(j).copied().flatten()))
        .collect()
}

/// Tokens of what a compaction always keeps ahead of the marker: the messages before the
/// first assistant message (system prompts and the first request).
fn head_tokens(conv: &Conversation, per_message: &[u64]) -> u64 {
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
fn output_hashes(keys: &[MessageKey]) -> String {
    let mut out = String::with_capacity(keys.len() * 8);
    for key in keys {
        push_hex8(&mut out, (key.digest() >> 32) as u32);
    }
    out
}

/// Writes `value` as 8 lowercase hex digits, as `{:08x}` does: by hand, since the formatter
/// took a tenth of a decision turn's finish on a 1,000-message history.
fn push_hex8(out: &mut String, value: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..8).rev() {
        let nibble = ((value >> (shift * 4)) & 0xf) as usize;
        out.push(char::from(HEX.get(nibble).copied().unwrap_or(b'0')));
    }
}

/// `cache_control` marks already in the conversation.
fn count_breakpoints(conv: &Conversation) -> usize {
    conv.system()
        .into_iter()
        .chain(conv.messages())
        .flat_map(|m| m.parts())
        .filter(|p| p.raw().get("cache_control").is_some())
        .count()
}

/// Sets `cache_control` on the last content block of `message`; false when it has none (a
/// string content) or it is marked already.
fn mark_last_block(message: &mut crate::messages::Message) -> bool {
    let Some(part) = message.parts_mut().last_mut() else {
        return false;
    };
    part.set_cache_control(json!({"type": "ephemeral"}))
}

#[cfg(test)]
mod tests;
