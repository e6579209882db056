//! Compaction: older messages are archived and replaced by a summary the host's LLM writes,
//! and the recent turns stay verbatim.
//!
//! A policy of the fold ([`super::fold`]: archive, request, check, pin, marker), sans-IO like
//! the tiers: [`plan`] reads the conversation and the session state and returns a
//! [`CompactPlan`]: the archive saves (the span as JSON and as a Markdown transcript), the
//! summary request and, when one is due, the memory flush request. The driver performs them
//! (archive first; the summarizer only once the archive is stored) and hands the outcomes to
//! [`CompactPlan::finish`], which checks the summary, pins the exact details it lost, and only
//! then writes the marker in place of the span. On any failure the conversation comes back as
//! it was, with the reason, and the next call tries again.
//!
//! What stays, in order: the leading system messages and the first user request (the task;
//! unless it alone is over a quarter of the window, when it is summarized with the rest and
//! its exact details pinned), then the marker, then the recent turns, byte for byte. The cut
//! never falls inside a tool exchange: a call, its results and the thinking beside it stay on
//! one side. A provider-native compaction item (Anthropic's `compaction` block, OpenAI's
//! Responses compaction item, the AI SDK parts carrying one) is never summarized or split off:
//! the span starts after it.
//!
//! An AI SDK `UIMessage` from the assistant holds every step of a reply (`useChat` keeps one
//! per request), so the cut may fall inside it, before a `step-start` part (`step_cuts`):
//! each step is a turn for `keepRecentTurns`, and a token budget may keep the latest steps of
//! the message that does not fit whole. Its first parts go to the archive (as the message with
//! only those parts); the rest stays after the marker as the message with only the rest, byte
//! for byte. The overlay records the cut (`end_part`, and every cut of the chain in `cuts`), so
//! the full history is split the same way to be recognised; a later compaction that cuts the
//! same message again archives the next piece, marked `continues`.
//!
//! Several compactions stack: the span of the next one starts with the previous marker,
//! whose summary the summarizer is given to fold in. Each is recorded in the session state as
//! an overlay ([`super::state`]), so that given the full history again the marker is
//! re-applied without calling the summarizer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::archive::{ArchiveSaves, ArchiveSpan, SaveFailure};
use super::facts::Fact;
use super::flush::{self, FlushOptions, FlushOutcome, FlushReport, FlushRequest};
use super::fold::{
    self, Folding, Phase, SummaryOutcome, SummaryRequest, DEFAULT_MAX_PINNED,
    DEFAULT_TRANSCRIPT_TOKENS,
};
use super::marker::{
    blocks_of, latest_marker, leading_systems, marker_message, marker_of, marker_shape, MarkerInfo,
    MarkerShape,
};
use super::state::{chain, Chain, Overlay, SessionState};
use super::{Measure, Outcome, Turns};
use crate::counting::{CountMessagesError, CountMessagesOptions, Counter};
use crate::messages::{
    pair_tools, parse_messages_value, CompactionMarker, Conversation, Format, Message,
    MessagesOptions, PartKind, PartRef, Role,
};
use crate::model::{resolve_window, Limits};

/// Assistant turns kept verbatim by default.
pub const DEFAULT_KEEP_RECENT_TURNS: usize = 5;
/// The summary's length the summarizer is asked for, in tokens.
pub const DEFAULT_TARGET_TOKENS: u64 = 2_000;
/// The context window assumed when neither the options nor the registry give one (the
/// model is unknown and `contextWindow` is absent or 0): [`resolve_window`] finds none.
const FALLBACK_WINDOW: u64 = 128_000;

/// Options of a compaction (the summarizer, the store and the timeout are the driver's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CompactCoreOptions {
    /// The session: archives and state are kept under it.
    pub session_id: String,
    /// Assistant turns kept verbatim (default 5), with the user message that opened the
    /// oldest of them. Ignored when `keepRecentTokens` is given.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub keep_recent_turns: Option<usize>,
    /// Keep as many of the latest messages as fit in this many tokens instead (at least the
    /// last exchange).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub keep_recent_tokens: Option<u64>,
    /// The summary's length to ask for, in tokens. Default 2,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub target_tokens: u64,
    /// The summarizer's prompt, replacing [`super::fold::DEFAULT_PROMPT`] (`{targetTokens}` is replaced).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prompt: Option<String>,
    /// The model the conversation is for: counts use its tokenizer, and its context window
    /// decides whether the first request is too large to keep.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// The context window, when the registry's figure for the model is not the one to use.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub context_window: Option<u64>,
    /// The transcript given to the summarizer is cut to about this many tokens. Default
    /// 60,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub transcript_tokens: u64,
    /// The time written into the marker, as the host gives it (the core reads no clock).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub now: Option<String>,
    /// Exact details pinned to a summary at most. Default 40; 0 pins none.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_pinned: usize,
    /// Whether a memory flush callback is configured: one runs before the summary, once per
    /// compaction cycle.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub flush: bool,
    /// The flush's thresholds and prompt.
    #[serde(flatten)]
    pub flush_options: FlushOptions,
}

/// The options of a compaction, by the name Rust users know (in TypeScript, the package's
/// `CompactOptions` adds the driver's callbacks and store to these).
pub type CompactOptions = CompactCoreOptions;

impl Default for CompactCoreOptions {
    fn default() -> Self {
        CompactCoreOptions {
            session_id: String::new(),
            keep_recent_turns: None,
            keep_recent_tokens: None,
            target_tokens: DEFAULT_TARGET_TOKENS,
            prompt: None,
            model: None,
            context_window: None,
            transcript_tokens: DEFAULT_TRANSCRIPT_TOKENS,
            now: None,
            max_pinned: DEFAULT_MAX_PINNED,
            flush: false,
            flush_options: FlushOptions::default(),
        }
    }
}

impl CompactCoreOptions {
    fn window(&self) -> u64 {
        let limits = Limits {
            context_window: self
                .context_window
                .map(|w| u32::try_from(w).unwrap_or(u32::MAX)),
            max_output: None,
        };
        resolve_window(self.model.as_deref(), limits)
            .map_or(FALLBACK_WINDOW, |w| u64::from(w.context_window))
    }

    fn count_options(&self, format: Format) -> CountMessagesOptions {
        CountMessagesOptions {
            model: self.model.clone(),
            format: Some(format),
            ..CountMessagesOptions::default()
        }
    }
}

/// What became of a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub enum CompactOutcome {
    /// A new marker replaced a span.
    Compacted,
    /// A stored compaction was re-applied to the full history; nothing else was due.
    Reapplied,
    /// Nothing to compact (`reason` says why).
    Unchanged,
    /// The compaction failed (`phase` and `reason` say where and why): the messages are as
    /// they were, and the next call tries again.
    Failed,
}

/// A span of messages, by index in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// The first message.
    pub from: usize,
    /// One past the last.
    pub to: usize,
    /// When the cut fell inside message `to` (an AI SDK `UIMessage` cut at a `step-start`):
    /// its first `toPart` parts are in the span too; the rest of it stays.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub to_part: Option<usize>,
}

/// What a compaction did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct CompactReport {
    /// What became of it.
    pub outcome: CompactOutcome,
    /// Why nothing changed, or why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub reason: Option<String>,
    /// Where it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub phase: Option<Phase>,
    /// The number of a stored compaction re-applied to the full history.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub reapplied: Option<u32>,
    /// The messages of the input the new marker replaces (the previous marker among them).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub span: Option<Span>,
    /// The count before.
    pub tokens_before: u64,
    /// The count after (the count before when nothing changed).
    pub tokens_after: u64,
    /// What the replaced messages counted.
    pub replaced_tokens: u64,
    /// What the summary counts, pinned details included.
    pub summary_tokens: u64,
    /// Whether the summary is the built-in heuristic one (no summarizer was given).
    pub heuristic: bool,
    /// The exact details the summary lost and that were appended to it.
    pub pinned: Vec<Fact>,
    /// Whether the first request was summarized with the rest (it alone was over a quarter
    /// of the window).
    pub first_request_summarized: bool,
    /// Whether the token figures are estimates.
    pub estimated: bool,
    /// Archive writes that failed.
    pub failures: Vec<SaveFailure>,
    /// The memory flush, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub flush: Option<FlushReport>,
}

impl CompactReport {
    fn unchanged(outcome: CompactOutcome, reason: Option<String>, tokens: u64) -> Self {
        CompactReport {
            outcome,
            reason,
            phase: None,
            reapplied: None,
            span: None,
            tokens_before: tokens,
            tokens_after: tokens,
            replaced_tokens: 0,
            summary_tokens: 0,
            heuristic: false,
            pinned: Vec::new(),
            first_request_summarized: false,
            estimated: true,
            failures: Vec::new(),
            flush: None,
        }
    }
}

/// A compaction's result.
#[derive(Clone, Debug)]
pub struct Compacted {
    /// The conversation to send.
    pub conversation: Conversation,
    /// For each of its messages, the index of the input message it is (untouched), or
    /// `None` for the marker.
    pub origin: Vec<Option<usize>>,
    /// The marker the conversation holds now (new, re-applied, or the input's own), if any.
    pub marker: Option<MarkerInfo>,
    /// What was done.
    pub report: CompactReport,
    /// The session state to store, when it changed.
    pub state: Option<SessionState>,
}

/// The compaction work found in a conversation.
#[derive(Clone, Debug)]
struct Work {
    /// Where the span starts (after the head, or at the previous marker).
    start: usize,
    /// Messages kept untouched ahead of the marker: it replaces `head..split`.
    head: usize,
    /// How the marker message is written.
    shape: MarkerShape,
    /// The blocks the marker message holds ahead of the marker ([`MarkerShape::AfterBlocks`]).
    lead: Vec<Value>,
    /// The first request, where it is.
    first_request: Option<usize>,
    /// Where the recent messages start.
    split: usize,
    /// When the cut falls inside message `split` (at a `step-start` of an AI SDK `UIMessage`),
    /// the part it falls before: parts `..split_part` go with the span, the rest stays as the
    /// first recent message. 0 when the cut is between messages.
    split_part: usize,
    /// The previous marker (ours) at `start`, if the span begins with one.
    previous: Option<CompactionMarker>,
    /// The first request, when it is summarized with the span.
    first_summarized: Option<usize>,
}

/// A compaction, planned.
#[derive(Clone, Debug)]
pub struct CompactPlan {
    conversation: Conversation,
    origin: Vec<Option<usize>>,
    options: CompactOptions,
    state: SessionState,
    state_changed: bool,
    reapplied: Option<u32>,
    per_message: Vec<u64>,
    total: u64,
    estimated: bool,
    work: Option<Work>,
    reason: Option<String>,
    archive: Option<ArchiveSpan>,
    request: Option<SummaryRequest>,
    flush: Option<FlushRequest>,
    number: u32,
    name: String,
    chain_end: Option<Chain>,
    end: u64,
    end_part: u64,
    cuts: Vec<[u64; 2]>,
    /// Whether the span's first message continues a message the previous compaction cut.
    continues: bool,
    archived: u64,
    /// A re-applied compaction's kept rest of a message cut at a step: (its index here, the
    /// input's index of the message, the parts of it before the rest).
    tail_of: Option<(usize, usize, usize)>,
}

/// Why a compaction cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
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

/// Whether a user message carries tool results (it then belongs to an exchange).
pub(crate) fn has_results(message: &Message) -> bool {
    message
        .parts()
        .iter()
        .any(|p| p.kind() == PartKind::ToolResult)
}

/// For each boundary `s` (0..=len: messages `..s` and `s..`), whether a cut there leaves
/// every tool exchange whole.
pub(crate) fn allowed_cuts(conv: &Conversation) -> Vec<bool> {
    let n = conv.messages().len();
    let mut allowed = vec![true; n + 1];
    for exchange in &pair_tools(conv).exchanges {
        let last = exchange
            .calls
            .iter()
            .filter_map(|c| c.result.map(|r| r.message))
            .max()
            .unwrap_or(exchange.message)
            .max(exchange.message);
        for slot in allowed.iter_mut().take(last + 1).skip(exchange.message + 1) {
            *slot = false;
        }
    }
    allowed
}

/// Plans a compaction of `conv`, given the session's stored state.
///
/// # Errors
/// A conversation that cannot be counted with these options (say, a request object's bad
/// `tools`), or a `keepRecentTurns` of 0.
pub fn plan(
    conv: Conversation,
    options: &CompactOptions,
    state: SessionState,
    counter: &mut Counter,
) -> Result<CompactPlan, CompactError> {
    if options.keep_recent_turns == Some(0) && options.keep_recent_tokens.is_none() {
        return Err(CompactError::Options {
            path: "options.keepRecentTurns",
            reason: "expected at least 1 (the latest turn always stays)".to_owned(),
        });
    }
    let origin: Vec<Option<usize>> = (0..conv.messages().len()).map(Some).collect();
    let (conversation, origin, reapplied, tail_of) = match reapply(&conv, &state) {
        Some(re) => (re.conversation, re.origin, Some(re.number), re.tail),
        None => (conv, origin, None, None),
    };
    let count = counter.count(&conversation, &options.count_options(conversation.format()))?;
    let mut plan = CompactPlan {
        per_message: count.per_message.clone(),
        total: count.total,
        estimated: !count.exact,
        conversation,
        origin,
        options: options.clone(),
        state,
        state_changed: false,
        reapplied,
        work: None,
        reason: None,
        archive: None,
        request: None,
        flush: None,
        number: 0,
        name: String::new(),
        chain_end: None,
        end: 0,
        end_part: 0,
        cuts: Vec::new(),
        continues: false,
        archived: 0,
        tail_of,
    };
    plan.locate(counter);
    Ok(plan)
}

/// A stored compaction re-applied to the full history ([`reapply`]).
#[derive(Clone, Debug)]
pub(crate) struct Reapplied {
    /// The history with the marker in place of the span.
    pub conversation: Conversation,
    /// For each of its messages, the index of the input message it is (`None` for the
    /// marker and for the rest of a message cut at a step).
    pub origin: Vec<Option<usize>>,
    /// The compaction's number.
    pub number: u32,
    /// The rest of a message cut at a step, when the span ended inside one: (its index in
    /// `conversation`, the input's index of the message, the parts of it in the span).
    pub tail: Option<(usize, usize, usize)>,
}

/// Re-applies the latest stored compaction whose span the full history `conv` still holds
/// (same messages, by chain hash): the conversation with the marker in place of the span.
pub(crate) fn reapply(conv: &Conversation, state: &SessionState) -> Option<Reapplied> {
    let messages = conv.messages();
    if state.compactions.is_empty() || messages.iter().any(|m| marker_of(m).is_some()) {
        return None;
    }
    for overlay in state.compactions.iter().rev() {
        let head = usize::try_from(overlay.marker.head).ok()?;
        let end = usize::try_from(overlay.end).ok()?;
        let end_part = usize::try_from(overlay.end_part).ok()?;
        let stored = overlay.chain.as_deref().and_then(Chain::from_hex)?;
        if end > messages.len() || head > end || (end_part > 0 && end >= messages.len()) {
            continue;
        }
        let Some(span) = pieces(messages, head, end, end_part, &overlay.cuts) else {
            continue;
        };
        if chain(Chain::default(), &span) != stored {
            continue;
        }
        let mut marker = overlay.marker.clone();
        marker.summary = overlay.summary.clone();
        let lead = match overlay.shape {
            MarkerShape::AfterBlocks => messages.get(head).map(blocks_of).unwrap_or_default(),
            _ => Vec::new(),
        };
        let marker_message = marker_message(conv, &marker, overlay.shape, &lead)?;
        // the rest of a message cut at a step stays, as the first recent message
        let tail = match messages.get(end) {
            Some(m) if end_part > 0 && m.parts().len() > end_part => {
                Some(m.with_parts_range(end_part, m.parts().len())?)
            }
            _ => None,
        };
        let rest = if end_part > 0 { end + 1 } else { end };
        let has_tail = tail.is_some();
        let mut out = conv.clone();
        let list = out.messages_mut();
        list.splice(head..rest, std::iter::once(marker_message).chain(tail));
        let origin = (0..head)
            .map(Some)
            .chain(std::iter::once(None))
            .chain(has_tail.then_some(None))
            .chain((rest..messages.len()).map(Some))
            .collect();
        return Some(Reapplied {
            conversation: out,
            origin,
            number: overlay.marker.number,
            tail: has_tail.then_some((head + 1, end, end_part)),
        });
    }
    None
}

/// The messages `head..end` of `messages`, and the first `end_part` parts of message `end`,
/// split at `cuts` (`[message, part]`): the pieces a chain of compactions archived, to hash.
/// `None` when a cut message cannot be split (it is one whole part).
pub(crate) fn pieces(
    messages: &[Message],
    head: usize,
    end: usize,
    end_part: usize,
    cuts: &[[u64; 2]],
) -> Option<Vec<Message>> {
    let last = if end_part > 0 { end + 1 } else { end };
    let mut out = Vec::with_capacity(last.saturating_sub(head));
    for (m, message) in messages
        .get(head..last)?
        .iter()
        .enumerate()
        .map(|(k, msg)| (head + k, msg))
    {
        let len = message.parts().len();
        let limit = if m == end { end_part.min(len) } else { len };
        let mut bounds: Vec<usize> = cuts
            .iter()
            .filter(|c| usize::try_from(c[0]).ok() == Some(m))
            .filter_map(|c| usize::try_from(c[1]).ok())
            .filter(|&p| p > 0 && p < limit)
            .collect();
        if bounds.is_empty() && limit == len {
            out.push(message.clone());
            continue;
        }
        crate::sort::sort_by_key(&mut bounds, |&b| b as u128);
        bounds.dedup();
        let mut from = 0;
        for to in bounds.into_iter().chain(std::iter::once(limit)) {
            out.push(message.with_parts_range(from, to)?);
            from = to;
        }
    }
    Some(out)
}

/// The cuts at or after message `start` that fall inside a message: before each
/// `step-start` part (but the first part) of an AI SDK `UIMessage` from the assistant, where
/// no tool exchange crosses (a `UIMessage` tool part holds its call and its result, so none
/// does unless a call's result sits in a later part). `(message, part)`, in order.
pub(crate) fn step_cuts(conv: &Conversation, start: usize) -> Vec<(usize, usize)> {
    let graph = pair_tools(conv);
    let spans: Vec<(PartRef, PartRef)> = graph
        .exchanges
        .iter()
        .flat_map(|e| e.calls.iter())
        .filter_map(|link| link.result.map(|r| (link.call, r)))
        .collect();
    Turns::of(conv)
        .starts()
        .iter()
        .filter(|t| t.part > 0 && t.message >= start)
        .filter(|t| !spans.iter().any(|(call, result)| call < *t && *t <= result))
        .map(|t| (t.message, t.part))
        .collect()
}

/// The messages a compaction replaces after the head (and the previous marker): whole
/// messages, then the first parts of the message cut at a step, if the cut is inside one.
fn span_of(conv: &Conversation, work: &Work) -> Vec<Message> {
    let messages = conv.messages();
    let body_start = work.start + usize::from(work.previous.is_some());
    let mut span = messages
        .get(body_start..work.split)
        .unwrap_or_default()
        .to_vec();
    if work.split_part > 0 {
        span.extend(
            messages
                .get(work.split)
                .and_then(|m| m.with_parts_range(0, work.split_part)),
        );
    }
    span
}

/// The rest of the message cut at a step, which stays as the first recent message.
fn tail_of(conv: &Conversation, work: &Work) -> Option<Message> {
    let message = conv.messages().get(work.split)?;
    (work.split_part > 0)
        .then(|| message.with_parts_range(work.split_part, message.parts().len()))
        .flatten()
}

fn sum(counts: &[u64], from: usize, to: usize) -> u64 {
    counts.get(from..to).map_or(0, |c| c.iter().sum())
}

impl CompactPlan {
    /// Finds the head, the span and the split, and prepares the saves and the requests.
    fn locate(&mut self, counter: &mut Counter) {
        let messages = self.conversation.messages();
        let n = messages.len();
        let window = self.options.window();
        // the latest marker, ours or the provider's: the span starts at ours (it is
        // replaced) or after theirs (never split off)
        let mut first_summarized = None;
        let (start, previous) = match latest_marker(messages) {
            Some((at, Some(marker))) => (at, Some(marker)),
            Some((at, None)) => (at + 1, None),
            None => {
                let systems = leading_systems(messages);
                let mut head = systems;
                if let Some(first) = messages.get(systems) {
                    if first.role() == Role::User && !has_results(first) {
                        let tokens = self.per_message.get(systems).copied().unwrap_or(0);
                        if tokens.saturating_mul(4) > window {
                            first_summarized = Some(systems);
                        } else {
                            head = systems + 1;
                        }
                    }
                }
                (head, None)
            }
        };
        let (mut split, split_part) = self.split(start, counter);
        let body_start = start + usize::from(previous.is_some());
        if (split, split_part) <= (body_start, 0) {
            self.reason = Some(if n == 0 {
                "the conversation is empty".to_owned()
            } else {
                "nothing to compact: every message after the kept head is among the recent turns"
                    .to_owned()
            });
            return;
        }
        // the marker's shape, and the messages it replaces
        let format = self.conversation.format();
        let role = |i: usize| messages.get(i).map(Message::role);
        let previous_lead = match (&previous, messages.get(start)) {
            (Some(_), Some(m)) if m.parts().len() > 1 => {
                let mut blocks = blocks_of(m);
                blocks.pop();
                blocks
            }
            _ => Vec::new(),
        };
        let allowed = allowed_cuts(&self.conversation);
        let (head, shape, lead) = if split_part > 0 {
            // NOTE: only an AI SDK `UIMessage` is cut at a step, and only Anthropic's format
            // needs a marker shape other than a user message of its own.
            (start, MarkerShape::User, Vec::new())
        } else if previous_lead.is_empty() {
            let before = start.checked_sub(1);
            let found = (split..n).find_map(|s| {
                let ok = allowed.get(s).copied().unwrap_or(false);
                let shape = marker_shape(format, before.and_then(role), role(s));
                ok.then_some(shape).flatten().map(|shape| (s, shape))
            });
            let Some((s, shape)) = found else {
                self.reason = Some(
                    "nothing to compact: no cut leaves the roles alternating as Anthropic requires"
                        .to_owned(),
                );
                return;
            };
            split = s;
            match (shape, before) {
                (MarkerShape::AfterBlocks, Some(b)) => {
                    (b, shape, messages.get(b).map(blocks_of).unwrap_or_default())
                }
                _ => (start, shape, Vec::new()),
            }
        } else {
            // NOTE: the marker stays a block after the first request's, in a user message, so
            // in Anthropic's format the recent turns must not start with a user message: the
            // cut moves later, or else earlier (keeping more).
            let fits = |s: &usize| {
                allowed.get(*s).copied().unwrap_or(false)
                    && (format != Format::Anthropic || role(*s) != Some(Role::User))
            };
            let found = (split..n)
                .find(fits)
                .or_else(|| (body_start + 1..split).rev().find(fits));
            let Some(s) = found else {
                self.reason = Some(
                    "nothing to compact: no cut leaves the roles alternating as Anthropic requires"
                        .to_owned(),
                );
                return;
            };
            split = s;
            (start, MarkerShape::AfterBlocks, previous_lead)
        };
        let systems = leading_systems(messages);
        let first_request = messages
            .get(systems)
            .is_some_and(|m| m.role() == Role::User && !has_results(m))
            .then_some(systems);
        let work = Work {
            start,
            head,
            shape,
            lead,
            first_request,
            split,
            split_part,
            previous,
            first_summarized,
        };
        self.prepare(&work);
        self.work = Some(work);
    }

    /// Where the recent messages start, at or after `start`: a message, and the part of it
    /// the cut falls before (0: before the whole message; else a `step-start` of an AI SDK
    /// `UIMessage` from the assistant, which holds every step of a reply).
    fn split(&self, start: usize, counter: &mut Counter) -> (usize, usize) {
        let messages = self.conversation.messages();
        let n = messages.len();
        let allowed = allowed_cuts(&self.conversation);
        let ok = |s: usize| allowed.get(s).copied().unwrap_or(false);
        let steps = step_cuts(&self.conversation, start);
        // the latest cut that keeps at least the last message (and its exchange), or the
        // last step of it
        let last_message_cut = (start..n).rev().find(|&s| ok(s));
        let last_cut = match (last_message_cut, steps.last()) {
            (Some(s), Some(&step)) => (s, 0).max(step),
            (Some(s), None) => (s, 0),
            (None, Some(&step)) => step,
            (None, None) => return (start, 0),
        };
        let wanted = match self.options.keep_recent_tokens {
            Some(budget) => {
                let mut kept = 0u64;
                let mut s = n;
                for i in (start..n).rev() {
                    let t = self.per_message.get(i).copied().unwrap_or(0);
                    if kept + t > budget {
                        break;
                    }
                    kept += t;
                    s = i;
                }
                // the message that did not fit may be cut at a step: its latest steps that do
                let inside = s.checked_sub(1).filter(|&i| i >= start).and_then(|i| {
                    self.steps_within(i, &steps, budget.saturating_sub(kept), counter)
                });
                // keeping less is what a token budget means: the next cut after
                inside.unwrap_or_else(|| (s..=n).find(|&c| ok(c)).map_or(last_cut, |c| (c, 0)))
            }
            None => {
                let keep = self
                    .options
                    .keep_recent_turns
                    .unwrap_or(DEFAULT_KEEP_RECENT_TURNS);
                // a turn starts at each assistant message and each step of a UIMessage
                let turns: Vec<PartRef> = Turns::of(&self.conversation)
                    .starts()
                    .iter()
                    .copied()
                    .filter(|t| t.message >= start)
                    .collect();
                let Some(&turn) = turns.len().checked_sub(keep).and_then(|k| turns.get(k)) else {
                    return (start, 0);
                };
                if turn.part > 0 {
                    // a step of a UIMessage: the cut before it, if no exchange crosses it
                    let at = (turn.message, turn.part);
                    if steps.contains(&at) {
                        return at.min(last_cut);
                    }
                }
                // the user message that opened the turn stays with it
                let mut s = turn.message;
                if s > start
                    && messages
                        .get(s - 1)
                        .is_some_and(|m| m.role() == Role::User && !has_results(m))
                {
                    s -= 1;
                }
                // keeping a turn whole is what a turn count means: the cut before
                ((start..=s).rev().find(|&c| ok(c)).unwrap_or(start), 0)
            }
        };
        wanted.min(last_cut)
    }

    /// The earliest step cut inside message `i` whose steps from it on count at most
    /// `room` tokens (each step counted on its own, framing included, so the sum is over
    /// rather than under), if any.
    fn steps_within(
        &self,
        i: usize,
        steps: &[(usize, usize)],
        room: u64,
        counter: &mut Counter,
    ) -> Option<(usize, usize)> {
        let message = self.conversation.messages().get(i)?;
        let cuts: Vec<usize> = steps.iter().filter(|c| c.0 == i).map(|c| c.1).collect();
        let measure = Measure::for_model(self.options.model.as_deref());
        let mut end = message.parts().len();
        let mut kept = 0u64;
        let mut found = None;
        for &p in cuts.iter().rev() {
            let piece = message.with_parts_range(p, end)?;
            kept += single_count(&piece, &self.conversation, &self.options, &measure, counter);
            if kept > room {
                break;
            }
            found = Some((i, p));
            end = p;
        }
        found
    }

    /// The archive, the summary request and the flush request for `work`.
    fn prepare(&mut self, work: &Work) {
        let span = span_of(&self.conversation, work);
        let span = span.as_slice();
        let messages = self.conversation.messages();
        let body_start = work.start + usize::from(work.previous.is_some());
        let format = self.conversation.format();
        self.number = work
            .previous
            .as_ref()
            .map_or(0, |m| m.number)
            .max(self.state.last_number())
            + 1;
        // where the replaced messages sit in the full history (`head..end`), and the chain
        // over them that recognises them there
        match &work.previous {
            Some(prev) => {
                let overlay = self.state.overlay(prev.number);
                let known = overlay
                    .filter(|_| work.head == work.start)
                    .and_then(|o| o.chain.as_deref())
                    .and_then(Chain::from_hex);
                let prev_end = overlay.map_or(prev.head + prev.archived_messages, |o| o.end);
                // NOTE: when the previous compaction cut a UIMessage at a step, the message
                // after its marker is the rest of that message (message `prev_end` of the full
                // history, from part `prev_part`): its first piece here continues it.
                let prev_part = overlay.map_or(0, |o| o.end_part);
                self.continues = prev_part > 0;
                self.chain_end = known.map(|c| chain(c, span));
                let whole = (work.split - body_start) as u64;
                self.end = prev_end + whole;
                self.end_part = match work.split_part {
                    0 => 0,
                    p if work.split == body_start => prev_part + p as u64,
                    p => p as u64,
                };
                self.archived = prev.archived_messages + span.len() as u64
                    - u64::from(self.continues && !span.is_empty());
                self.cuts = overlay.map(|o| o.cuts.clone()).unwrap_or_default();
            }
            None => {
                let mut replaced: Vec<Message> = messages
                    .get(work.head..body_start)
                    .unwrap_or_default()
                    .to_vec();
                replaced.extend_from_slice(span);
                self.chain_end = Some(chain(Chain::default(), &replaced));
                self.end = work.split as u64;
                self.end_part = work.split_part as u64;
                self.archived = span.len() as u64;
            }
        }
        if self.end_part > 0 {
            self.cuts.push([self.end, self.end_part]);
        }
        self.name = fold::archive_name("", self.number, span);
        let (archive, request) = fold::ask(fold::Ask {
            span,
            first: body_start,
            session_id: &self.options.session_id,
            name: &self.name,
            number: self.number,
            format,
            previous: work.previous.as_ref(),
            continues: self.continues,
            prompt: self.options.prompt.as_deref(),
            target_tokens: self.options.target_tokens,
            transcript_tokens: self.options.transcript_tokens,
        });
        self.archive = Some(archive);
        self.request = Some(request);
        if self.options.flush {
            self.flush = flush::request(
                &self.options.flush_options,
                &self.state,
                self.total,
                self.options.window(),
                true,
            );
        }
    }

    /// The saves to make before the summarizer is called: the archive's JSON and transcript,
    /// each made when asked for.
    pub fn saves(&self) -> ArchiveSaves<'_> {
        ArchiveSaves::new(self.archive.as_ref())
    }

    /// What to ask the summarizer, when there is something to compact.
    pub fn summary_request(&self) -> Option<&SummaryRequest> {
        self.request.as_ref()
    }

    /// The memory flush to run first, when one is due this cycle.
    pub fn flush_request(&self) -> Option<&FlushRequest> {
        self.flush.as_ref()
    }

    /// Whether anything is to be done (saves and a summary).
    pub fn has_work(&self) -> bool {
        self.work.is_some()
    }

    /// Applies the compaction: checks the summary and writes the marker, or hands the
    /// conversation back as it was with the reason. `archive` holds one outcome per save.
    pub fn finish(
        mut self,
        archive: &[Outcome],
        summary: SummaryOutcome,
        flushed: Option<FlushOutcome>,
        counter: &mut Counter,
    ) -> Compacted {
        let flush = match (self.flush.take(), flushed) {
            (Some(request), Some(outcome)) => {
                self.state_changed = true;
                Some(flush::record(&request, outcome, &mut self.state))
            }
            _ => None,
        };
        let Some(work) = self.work.take() else {
            return self.unchanged(flush);
        };
        let failures = self.saves().failures(archive);
        // NOTE: the archive and the request went to the host; what follows needs neither,
        // and on a 10 MB history they hold as much memory as the history again.
        self.request = None;
        self.archive = None;
        if let Some(reason) = fold::archive_failed(&failures, "nothing was replaced") {
            let mut out = self.failed(Phase::Archive, reason, flush);
            out.report.failures = failures;
            return out;
        }
        let measure = Measure::for_model(self.options.model.as_deref());
        let span = span_of(&self.conversation, &work);
        let tail = tail_of(&self.conversation, &work);
        let messages = self.conversation.messages();
        // what the replaced messages count: with a message cut at a step, all of it but the
        // rest that stays
        let replaced = match &tail {
            Some(rest) => sum(&self.per_message, work.head, work.split + 1).saturating_sub(
                single_count(rest, &self.conversation, &self.options, &measure, counter),
            ),
            None => sum(&self.per_message, work.head, work.split),
        };
        let first_request = work
            .first_request
            .and_then(|i| messages.get(i))
            .and_then(|m| m.parts().first())
            .filter(|p| p.kind() == PartKind::Text)
            .and_then(|p| p.text());
        let kept_from = work.split + usize::from(tail.is_some());
        let folding = Folding {
            span: &span,
            kept: (tail.iter())
                .chain(messages.get(kept_from..).unwrap_or_default())
                .collect(),
            task: first_request,
            // NOTE: the task goes into the summary only when it is summarized; kept verbatim
            // ahead of the marker, a copy in the summary would only take its room.
            heuristic_task: first_request.filter(|_| work.first_summarized.is_some()),
            previous: work.previous.as_ref().map(|p| p.summary.as_str()),
            replaced,
            bound: None,
            heuristic_tokens: self.options.target_tokens,
            max_pinned: self.options.max_pinned,
        };
        let fold::Summary {
            text: summary,
            heuristic,
            mut pinned,
            ..
        } = match fold::summarize(&folding, summary, &measure) {
            Ok(summary) => summary,
            Err((phase, reason)) => return self.failed(phase, reason, flush),
        };
        // the marker, and the conversation with it in place of the span
        let mut marker = CompactionMarker {
            number: self.number,
            time: self.options.now.clone(),
            archived_messages: self.archived,
            tokens_before: self.total,
            tokens_after: self.total,
            head: work.head as u64,
            key: super::archive::archive_key(&self.options.session_id, &self.name),
            iterations: None,
            summary,
        };
        let Some(probe) = marker_message(&self.conversation, &marker, work.shape, &work.lead)
        else {
            return self.failed(
                Phase::Check,
                "the marker could not be written in this format".to_owned(),
                flush,
            );
        };
        let marker_tokens =
            single_count(&probe, &self.conversation, &self.options, &measure, counter);
        // NOTE: a marker that costs as much as what it replaces (a few short messages) saves
        // nothing and takes their exact words from the model's view: not made.
        if marker_tokens >= replaced {
            return self.failed(
                Phase::Check,
                format!(
                    "the marker ({marker_tokens} tokens) would not be smaller than the {replaced} tokens it replaces"
                ),
                flush,
            );
        }
        marker.tokens_after = self.total.saturating_sub(replaced) + marker_tokens;
        let Some(marker_msg) = marker_message(&self.conversation, &marker, work.shape, &work.lead)
        else {
            return self.failed(
                Phase::Check,
                "the marker could not be written in this format".to_owned(),
                flush,
            );
        };
        let summary_tokens = measure.tokens(&marker.summary);
        let to_part = tail.is_some().then(|| match self.tail_of {
            Some((at, input, before)) if at == work.split => (input, before + work.split_part),
            _ => (input_index(&self.origin, work.split), work.split_part),
        });
        let has_tail = tail.is_some();
        let mut conversation = self.conversation;
        conversation.messages_mut().splice(
            work.head..kept_from,
            std::iter::once(marker_msg).chain(tail),
        );
        let origin: Vec<Option<usize>> = self
            .origin
            .get(..work.head)
            .unwrap_or_default()
            .iter()
            .copied()
            .chain(std::iter::once(None))
            .chain(has_tail.then_some(None))
            .chain(
                self.origin
                    .get(kept_from..)
                    .unwrap_or_default()
                    .iter()
                    .copied(),
            )
            .collect();
        let span_in_input = Span {
            from: span_start(&self.origin, work.head),
            to: to_part.map_or_else(|| input_index(&self.origin, work.split), |(to, _)| to),
            to_part: to_part.map(|(_, part)| part),
        };
        self.state.push(Overlay {
            marker: CompactionMarker {
                summary: String::new(),
                ..marker.clone()
            },
            summary: marker.summary.clone(),
            shape: work.shape,
            end: self.end,
            end_part: self.end_part,
            cuts: std::mem::take(&mut self.cuts),
            chain: self.chain_end.map(Chain::to_hex),
        });
        let report = CompactReport {
            outcome: CompactOutcome::Compacted,
            reason: None,
            phase: None,
            reapplied: self.reapplied,
            span: Some(span_in_input),
            tokens_before: self.total,
            tokens_after: marker.tokens_after,
            replaced_tokens: replaced,
            summary_tokens,
            heuristic,
            pinned: std::mem::take(&mut pinned),
            first_request_summarized: work.first_summarized.is_some(),
            estimated: self.estimated,
            failures: Vec::new(),
            flush,
        };
        Compacted {
            conversation,
            origin,
            marker: Some(MarkerInfo::from(&marker)),
            report,
            state: Some(self.state),
        }
    }

    /// The conversation as planned (with a re-applied compaction, if any), unchanged.
    fn unchanged(self, flush: Option<FlushReport>) -> Compacted {
        let outcome = if self.reapplied.is_some() {
            CompactOutcome::Reapplied
        } else {
            CompactOutcome::Unchanged
        };
        let mut report = CompactReport::unchanged(outcome, self.reason.clone(), self.total);
        report.reapplied = self.reapplied;
        report.estimated = self.estimated;
        report.flush = flush;
        let marker = self
            .conversation
            .messages()
            .iter()
            .rev()
            .find_map(marker_of)
            .map(|m| MarkerInfo::from(&m));
        Compacted {
            state: self.state_changed.then_some(self.state),
            conversation: self.conversation,
            origin: self.origin,
            marker,
            report,
        }
    }

    /// A failure: the conversation as planned (a re-applied compaction stays: it is the
    /// stored summary of the same messages), the reason, and the flush if one ran.
    fn failed(self, phase: Phase, reason: String, flush: Option<FlushReport>) -> Compacted {
        let mut out = self.unchanged(flush);
        out.report.outcome = CompactOutcome::Failed;
        out.report.phase = Some(phase);
        out.report.reason = Some(reason);
        out
    }
}

/// The input index of planned message `at`: the first message from `at` on that is the
/// input's own, or one past the last input message.
fn input_index(origin: &[Option<usize>], at: usize) -> usize {
    origin
        .get(at..)
        .unwrap_or_default()
        .iter()
        .flatten()
        .next()
        .copied()
        .unwrap_or_else(|| origin.iter().flatten().max().map_or(0, |m| m + 1))
}

/// The input index where planned message `at` starts: its own, or when it is a re-applied
/// marker (not the input's) the first input message it stands for, after the last kept one.
fn span_start(origin: &[Option<usize>], at: usize) -> usize {
    match origin.get(at) {
        Some(Some(i)) => *i,
        _ => origin
            .get(..at)
            .unwrap_or_default()
            .iter()
            .flatten()
            .last()
            .map_or(0, |i| i + 1),
    }
}

/// The tokens of one message as it would be counted in `conv` (framing included), with the
/// counter the compaction counts everything else with (its calibration and cache).
fn single_count(
    message: &Message,
    conv: &Conversation,
    options: &CompactOptions,
    measure: &Measure,
    counter: &mut Counter,
) -> u64 {
    let value = Value::Array(vec![message.to_value()]);
    let parse = MessagesOptions {
        format: Some(conv.format()),
        allow_pending_calls: true,
    };
    let counted = parse_messages_value(value, &parse).ok().and_then(|c| {
        counter
            .count(&c, &options.count_options(conv.format()))
            .ok()
    });
    match counted {
        Some(count) => count.per_message.first().copied().unwrap_or(0),
        None => measure.tokens(&marker_of(message).map(|m| m.to_text()).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests;
