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
use super::machine::{Event, FoldSteps, Machine, Need};
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
    /// What the driver answered so far.
    steps: FoldSteps,
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
        steps: FoldSteps::default(),
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

    /// The bytes of the archive saves the driver confirmed.
    pub fn stored_bytes(&self) -> u64 {
        let saves = self.saves();
        (self.steps.archived().iter().enumerate())
            .filter(|(_, o)| **o == Outcome::Saved)
            .filter_map(|(i, _)| saves.made_len(i))
            .map(|n| n as u64)
            .sum()
    }
}

/// The flush, the archive, the summary, in that order ([`FoldSteps`]).
impl Machine for CompactPlan {
    type Output = Compacted;

    fn next(&self) -> Need<'_> {
        (self.steps).next(self.flush.as_ref(), self.saves(), self.request.as_ref())
    }

    fn handle(&mut self, event: Event) {
        self.steps.handle(event);
    }

    fn archive_saves(&self) -> Option<ArchiveSaves<'_>> {
        Some(self.saves())
    }

    /// Applied if every step went well, else the messages as they were.
    fn done(mut self, counter: &mut Counter) -> Compacted {
        let (archive, summary, flushed) = self.steps.take();
        self.finish(&archive, summary, flushed, counter)
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

mod cut_point;
mod finish;

#[cfg(test)]
mod tests;
