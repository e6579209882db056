//! Compaction: older messages are archived and replaced by a summary the host's LLM writes,
//! and the recent turns stay verbatim.
//!
//! Sans-IO, like the tiers: [`plan`] reads the conversation and the session state and returns
//! a [`CompactPlan`]: the archive saves (the span as JSON and as a Markdown transcript), the
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

use std::borrow::Cow;
use std::cell::Cell;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::facts::{self, Fact};
use super::flush::{self, FlushOptions, FlushOutcome, FlushReport, FlushRequest};
use super::state::{chain, Chain, MarkerShape, Overlay, SessionState};
use super::text::ByteCount;
use super::{heuristic, transcript, Measure, Outcome, Save, Turns, NAMESPACE};
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
/// The transcript handed to the summarizer is cut to about this many tokens.
pub const DEFAULT_TRANSCRIPT_TOKENS: u64 = 60_000;
/// Exact details pinned to a summary at most.
pub const DEFAULT_MAX_PINNED: usize = 40;
/// The context window assumed when neither the options nor the registry give one (the
/// model is unknown and `contextWindow` is absent or 0): [`resolve_window`] finds none.
const FALLBACK_WINDOW: u64 = 128_000;

/// The summarizer's default prompt; `{targetTokens}` is replaced by the target.
pub const DEFAULT_PROMPT: &str = "You are summarizing the earlier part of a conversation between a user and an AI assistant, with the assistant's tool calls and their results, so that the assistant can carry on the work without it. The summary replaces those messages: anything it leaves out is gone. Write at most {targetTokens} tokens, in these sections:\n\n1. Intent: what the user asked for and any constraints they set, in their words where the wording matters.\n2. Progress: what has been done so far, in order, and what it showed.\n3. Decisions: the choices made and why; approaches tried and abandoned.\n4. Current state: where the work stands now, what is in progress, errors not yet solved.\n5. Next steps: what remains to be done.\n6. Exact details: file paths, identifiers, URLs, numbers with their units, commands and error messages the work still needs, copied exactly.\n\nIf a previous summary is given, fold it in: the new summary replaces it. Write only the summary, with nothing invented.";

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
    /// The summarizer's prompt, replacing [`DEFAULT_PROMPT`] (`{targetTokens}` is replaced).
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

/// The store key of a compaction's archive (its JSON; the transcript is the same name with
/// `.md`).
pub fn archive_key(session_id: &str, name: &str) -> Vec<String> {
    vec![
        NAMESPACE.to_owned(),
        session_id.to_owned(),
        "archive".to_owned(),
        name.to_owned(),
    ]
}

/// The prefix of a session's archives.
pub fn archive_prefix(session_id: &str) -> Vec<String> {
    vec![
        NAMESPACE.to_owned(),
        session_id.to_owned(),
        "archive".to_owned(),
    ]
}

/// What the summarizer is given.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    /// The messages to summarize, in the conversation's format.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "unknown[]"))]
    pub messages: MessageValues,
    /// The summary they follow (the previous marker's), to fold in.
    pub previous_summary: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// The summary's length to aim for.
    pub target_tokens: u64,
    /// The messages as a readable transcript, cut to the transcript budget.
    pub transcript: String,
}

/// Messages that serialize as the list of their JSON ([`Message::to_value`]), one message at
/// a time: the JSON of a whole span is never built as one tree (for a 10 MB history, that tree
/// held as much memory again as the history).
#[derive(Clone, Debug, Default)]
pub struct MessageValues(Vec<Message>);

impl MessageValues {
    /// The messages (shared, not copied).
    pub fn new(messages: Vec<Message>) -> MessageValues {
        MessageValues(messages)
    }

    /// Each message's JSON.
    pub fn to_values(&self) -> Vec<Value> {
        self.0.iter().map(Message::to_value).collect()
    }

    /// The messages.
    pub fn as_slice(&self) -> &[Message] {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for MessageValues {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && (self.0.iter().zip(&other.0)).all(|(a, b)| a == b || a.to_value() == b.to_value())
    }
}

impl Serialize for MessageValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Message::to_value))
    }
}

/// An archive as it is written: what [`ArchiveRecord`] reads back, its messages serialized one
/// at a time.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ArchiveOut<'a> {
    pub version: u32,
    pub number: u32,
    pub format: Format,
    pub previous: Option<&'a [String]>,
    pub messages: &'a MessageValues,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}

impl ArchiveOut<'_> {
    /// The archive's JSON, in a buffer of its exact size: a first pass measures it (each
    /// message's JSON made and dropped), so the buffer never grows by doubling, which held up
    /// to three times the archive's size at once.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut len = ByteCount(0);
        if serde_json::to_writer(&mut len, self).is_err() {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(len.0);
        match serde_json::to_writer(&mut out, self) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }
}

/// What a compaction's (or a rolling fold's) archive saves are made from: their keys and the
/// span.
#[derive(Clone, Debug)]
pub(crate) struct ArchiveSpan {
    /// The JSON's key, then the Markdown transcript's.
    keys: [Vec<String>; 2],
    messages: MessageValues,
    /// The index of the span's first message in the conversation (the transcript's numbers).
    body_start: usize,
    number: u32,
    format: Format,
    previous: Option<Vec<String>>,
    continues: bool,
    /// The length of each save once made.
    made: [Cell<Option<usize>>; 2],
}

impl ArchiveSpan {
    /// The saves of `messages` (the span, whose first is message `body_start`) under `key` (the
    /// JSON's; the transcript's is the same with `.md`).
    pub(crate) fn new(
        key: Vec<String>,
        messages: MessageValues,
        body_start: usize,
        record: (u32, Format, Option<Vec<String>>, bool),
    ) -> ArchiveSpan {
        let (number, format, previous, continues) = record;
        let mut md = key.clone();
        if let Some(name) = md.last_mut() {
            name.push_str(".md");
        }
        ArchiveSpan {
            keys: [key, md],
            messages,
            body_start,
            number,
            format,
            previous,
            continues,
            made: Default::default(),
        }
    }

    fn make(&self, i: usize) -> Option<Save> {
        let key = self.keys.get(i)?.clone();
        let bytes = match i {
            0 => ArchiveOut {
                version: 1,
                number: self.number,
                format: self.format,
                previous: self.previous.as_deref(),
                messages: &self.messages,
                continues: self.continues,
            }
            .to_bytes(),
            _ => transcript::render(self.messages.as_slice(), self.body_start, None).into_bytes(),
        };
        if let Some(made) = self.made.get(i) {
            made.set(Some(bytes.len()));
        }
        Some(Save { key, bytes })
    }
}

/// A compaction's archive saves: its JSON (what [`read_archive`] reads), then its Markdown
/// transcript. Each is made when asked for ([`ArchiveSaves::make`], [`ArchiveSaves::iter`]),
/// so a driver that stores each one (or hands it across to JS) before it asks for the next
/// never holds both copies of the span at once: for a 10 MB history, 7 MB each.
#[derive(Clone, Copy, Debug)]
pub struct ArchiveSaves<'a>(Option<&'a ArchiveSpan>);

impl<'a> ArchiveSaves<'a> {
    pub(crate) fn new(span: Option<&'a ArchiveSpan>) -> Self {
        ArchiveSaves(span)
    }

    /// How many: 2, or 0 when there is nothing to compact.
    pub fn len(&self) -> usize {
        self.0.map_or(0, |a| a.keys.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Save `i`'s key.
    pub fn key(&self, i: usize) -> Option<&'a [String]> {
        self.0?.keys.get(i).map(Vec::as_slice)
    }

    /// Save `i`, made now.
    pub fn make(&self, i: usize) -> Option<Save> {
        self.0?.make(i)
    }

    /// Each save, in order, made as the iterator reaches it.
    pub fn iter(&self) -> impl Iterator<Item = Save> + 'a {
        let saves = *self;
        (0..saves.len()).filter_map(move |i| saves.make(i))
    }

    /// Every save, made now.
    pub fn to_vec(&self) -> Vec<Save> {
        self.iter().collect()
    }

    /// The saves that `outcomes` (one per save, in order) do not confirm, with the reason.
    pub fn failures(&self, outcomes: &[Outcome]) -> Vec<SaveFailure> {
        (0..self.len())
            .filter_map(|i| {
                let reason = match outcomes.get(i) {
                    Some(Outcome::Saved) => return None,
                    Some(Outcome::Failed(reason)) => reason.clone(),
                    None => "the save has no outcome".to_owned(),
                };
                Some(SaveFailure {
                    key: self.key(i).unwrap_or_default().to_vec(),
                    reason,
                })
            })
            .collect()
    }

    /// Save `i`'s length in bytes, once it was made (a save never made was never stored).
    pub fn made_len(&self, i: usize) -> Option<usize> {
        self.0?.made.get(i)?.get()
    }
}

/// The archive as stored (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveRecord {
    /// 1.
    pub version: u32,
    /// The compaction's number.
    pub number: u32,
    /// The messages' format.
    pub format: Format,
    /// The key of the previous compaction's archive, whose messages come before these.
    pub previous: Option<Vec<String>>,
    /// The archived messages, as they were.
    pub messages: Vec<Value>,
    /// Whether the first message continues the previous archive's last one: an AI SDK
    /// `UIMessage` cut at a step by both compactions, whose next parts these are
    /// (`readArchive` joins them back into one message).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}

/// A marker as the driver returns it: its header and its summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct MarkerInfo {
    /// 1 for the session's first compaction, then 2, 3...
    pub number: u32,
    /// The time the host gave.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub time: Option<String>,
    /// The summary (with its pinned details).
    pub summary: String,
    /// Messages of the full history the marker stands for (all compactions so far).
    pub archived_messages: u64,
    /// The count before this compaction.
    pub tokens_before: u64,
    /// The count after it (to within a token: the marker holds the figure).
    pub tokens_after: u64,
    /// Messages kept ahead of the marker.
    pub head: u64,
    /// The archive's key.
    pub key: Vec<String>,
    /// The iterations of the agent loop the summary stands for, when the rolling window wrote
    /// the marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub iterations: Option<u64>,
}

impl From<&CompactionMarker> for MarkerInfo {
    fn from(m: &CompactionMarker) -> Self {
        MarkerInfo {
            number: m.number,
            time: m.time.clone(),
            summary: m.summary.clone(),
            archived_messages: m.archived_messages,
            tokens_before: m.tokens_before,
            tokens_after: m.tokens_after,
            head: m.head,
            key: m.key.clone(),
            iterations: m.iterations,
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

/// Where a compaction failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    /// Storing the archive.
    Archive,
    /// Calling the summarizer.
    Summarize,
    /// The summary did not pass the checks.
    Check,
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

/// An archive write that failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SaveFailure {
    /// The key.
    pub key: Vec<String>,
    /// Why.
    pub reason: String,
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

/// How the summarizer went, as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryOutcome {
    /// It returned this text.
    Text(String),
    /// It threw, rejected, timed out or returned something that is not text.
    Failed(String),
    /// No summarizer is configured: the built-in heuristic summary stands in.
    Heuristic,
    /// It was not called (the archive was not stored).
    NotCalled,
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

/// Our marker, when `message` holds one: its last part. (Anthropic's strict role order makes
/// the marker a block after the first request's own blocks when the recent turns start with
/// the assistant; see [`MarkerShape`].)
pub fn marker_of(message: &Message) -> Option<CompactionMarker> {
    message.parts().last()?.compaction_marker()
}

pub(crate) fn marker_shape(
    format: Format,
    prev: Option<Role>,
    next: Option<Role>,
) -> Option<MarkerShape> {
    if format != Format::Anthropic {
        return Some(MarkerShape::User);
    }
    match (prev, next) {
        (Some(Role::User), Some(Role::User)) => Some(MarkerShape::Assistant),
        (Some(Role::User), _) => Some(MarkerShape::AfterBlocks),
        (_, Some(Role::User)) => None,
        _ => Some(MarkerShape::User),
    }
}

/// Whether `message` holds a provider-native compaction item.
pub fn is_native_marker(message: &Message) -> bool {
    message
        .parts()
        .iter()
        .any(|p| crate::messages::is_native_compaction(p.raw()))
}

/// The messages the model sees: the leading system messages (and, before our marker, the
/// messages it says were kept ahead of it), then everything from the latest marker on: ours,
/// or a provider's that drops what precedes it (Anthropic's compaction block,
/// [`crate::messages::drops_earlier_context`]). OpenAI's compaction item is not such a
/// marker: the window `/responses/compact` returns keeps the user messages ahead of it, and
/// the model sees them (as counting does). Indices into `conv`.
pub fn active_indices(conv: &Conversation) -> Vec<usize> {
    let messages = conv.messages();
    let latest = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match marker_of(m) {
            Some(marker) => Some((i, Some(marker))),
            None => (m.parts().iter())
                .any(|p| crate::messages::drops_earlier_context(m.format(), p.raw()))
                .then_some((i, None)),
        });
    let Some((at, ours)) = latest else {
        return (0..messages.len()).collect();
    };
    let head = ours.map_or(0, |m| usize::try_from(m.head).unwrap_or(0).min(at));
    let systems = leading_systems(messages).min(at);
    (0..systems.max(head)).chain(at..messages.len()).collect()
}

/// The latest compaction marker, ours or the provider's: its index, and ours read.
pub(crate) fn latest_marker(messages: &[Message]) -> Option<(usize, Option<CompactionMarker>)> {
    messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match marker_of(m) {
            Some(marker) => Some((i, Some(marker))),
            None => is_native_marker(m).then_some((i, None)),
        })
}

/// How many system messages open the conversation.
fn leading_systems(messages: &[Message]) -> usize {
    messages
        .iter()
        .take_while(|m| m.role() == Role::System)
        .count()
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

/// The marker as a message of `conv`'s format that its provider accepts where it goes: a
/// user message (a `UIMessage` with an id when the conversation holds those), or for
/// Anthropic an assistant message or `lead` blocks then the marker's ([`MarkerShape`]).
pub(crate) fn marker_message(
    conv: &Conversation,
    marker: &CompactionMarker,
    shape: MarkerShape,
    lead: &[Value],
) -> Option<Message> {
    let format = conv.format();
    let text = json!({"type": "text", "text": marker.to_text()});
    let value = match shape {
        MarkerShape::User if !conv.messages().iter().any(Message::is_ui_message) => {
            return Some(Message::compaction(format, marker));
        }
        MarkerShape::User => json!([{
            "id": format!("context-keeper-compaction-{}", marker.number),
            "role": "user",
            "parts": [text],
        }]),
        MarkerShape::Assistant => json!([{"role": "assistant", "content": [text]}]),
        MarkerShape::AfterBlocks => {
            let mut blocks = lead.to_vec();
            blocks.push(text);
            json!([{"role": "user", "content": blocks}])
        }
    };
    let options = MessagesOptions {
        format: Some(format),
        allow_pending_calls: true,
    };
    let (_, mut list) = parse_messages_value(value, &options).ok()?.split_messages();
    list.pop()
}

/// A message's content as blocks (a string content is one text block), to write them again
/// in a marker message ([`MarkerShape::AfterBlocks`]).
pub(crate) fn blocks_of(message: &Message) -> Vec<Value> {
    match message.to_value().get("content") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
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
        let span_chain = chain(Chain::default(), span);
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
        self.name = format!(
            "{:04}-{}",
            self.number,
            span_chain.to_hex().get(..16).unwrap_or_default()
        );
        let key = archive_key(&self.options.session_id, &self.name);
        let budget =
            usize::try_from(self.options.transcript_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
        // NOTE: the summarizer's transcript first: what its tries take is given back before
        // the archive's two copies of the span are made, not taken on top of them.
        let transcript = transcript::render(span, body_start, Some(budget));
        let messages = MessageValues::new(span.to_vec());
        // NOTE: the archive's two copies of the span are made when the driver asks for each
        // (`ArchiveSaves`), not here: made together, they were both in memory at once.
        self.archive = Some(ArchiveSpan::new(
            key,
            messages.clone(),
            body_start,
            (
                self.number,
                format,
                work.previous.as_ref().map(|p| p.key.clone()),
                self.continues,
            ),
        ));
        let prompt = self
            .options
            .prompt
            .as_deref()
            .unwrap_or(DEFAULT_PROMPT)
            .replace("{targetTokens}", &self.options.target_tokens.to_string());
        self.request = Some(SummaryRequest {
            messages,
            previous_summary: work.previous.as_ref().map(|p| p.summary.clone()),
            prompt,
            target_tokens: self.options.target_tokens,
            transcript,
        });
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
        ArchiveSaves(self.archive.as_ref())
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
        if !failures.is_empty() {
            let reason = format!(
                "the archive could not be stored ({}); nothing was replaced",
                failures.first().map_or("", |f| f.reason.as_str())
            );
            let mut out = self.failed(Phase::Archive, reason, flush);
            out.report.failures = failures;
            return out;
        }
        let measure = Measure::for_model(self.options.model.as_deref());
        let span = span_of(&self.conversation, &work);
        let span = span.as_slice();
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
        let previous_summary = work.previous.as_ref().map(|p| p.summary.as_str());
        let first_request = work
            .first_request
            .and_then(|i| messages.get(i))
            .and_then(|m| m.parts().first())
            .filter(|p| p.kind() == PartKind::Text)
            .and_then(|p| p.text());
        let (text, heuristic) = match summary {
            SummaryOutcome::Text(text) => (text, false),
            SummaryOutcome::Heuristic => {
                let budget = usize::try_from(self.options.target_tokens.saturating_mul(4))
                    .unwrap_or(usize::MAX);
                // NOTE: the task goes into the summary only when it is summarized; kept verbatim
                // ahead of the marker, a copy in the summary would only take its room.
                let task = first_request.filter(|_| work.first_summarized.is_some());
                (
                    heuristic::heuristic_summary(span, task, previous_summary, budget),
                    true,
                )
            }
            SummaryOutcome::Failed(reason) => {
                return self.failed(Phase::Summarize, reason, flush);
            }
            SummaryOutcome::NotCalled => {
                return self.failed(
                    Phase::Summarize,
                    "the summarizer was not called".to_owned(),
                    flush,
                );
            }
        };
        let text = text.trim().to_owned();
        if let Err(reason) = check_summary(&text, replaced, &measure) {
            return self.failed(Phase::Check, reason, flush);
        }
        // pin what the summary lost and the work still names
        // NOTE: the texts borrowed where they can be (a copy of every text of a 10 MB span
        // held as much memory again).
        let span_texts: Vec<Cow<'_, str>> = span
            .iter()
            .flat_map(facts::message_texts)
            .chain(previous_summary.map(Cow::Borrowed))
            .collect();
        let kept_from = work.split + usize::from(tail.is_some());
        let keep_texts: Vec<Cow<'_, str>> = tail
            .iter()
            .chain(messages.get(kept_from..).unwrap_or_default())
            .flat_map(facts::message_texts)
            .chain(first_request.map(Cow::Borrowed))
            .collect();
        let span_refs: Vec<&str> = span_texts.iter().map(AsRef::as_ref).collect();
        let keep_refs: Vec<&str> = keep_texts.iter().map(AsRef::as_ref).collect();
        let written: Vec<Cow<'_, str>> = span
            .iter()
            .chain(tail.iter())
            .chain(messages.get(kept_from..).unwrap_or_default())
            .flat_map(facts::written_texts)
            .collect();
        let written_refs: Vec<&str> = written.iter().map(AsRef::as_ref).collect();
        let mut pinned = facts::missing_facts(
            &span_refs,
            &keep_refs,
            &written_refs,
            &text,
            self.options.max_pinned,
        );
        let mut summary = facts::pin(&text, &pinned);
        while !pinned.is_empty() && measure.tokens(&summary) >= replaced {
            pinned.pop();
            summary = facts::pin(&text, &pinned);
        }
        // the marker, and the conversation with it in place of the span
        let mut marker = CompactionMarker {
            number: self.number,
            time: self.options.now.clone(),
            archived_messages: self.archived,
            tokens_before: self.total,
            tokens_after: self.total,
            head: work.head as u64,
            key: archive_key(&self.options.session_id, &self.name),
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

/// Checks a summary before it replaces anything: not empty, not an error message, shorter
/// than what it replaces.
pub fn check_summary(text: &str, replaced: u64, measure: &Measure) -> Result<u64, String> {
    if text.trim().is_empty() {
        return Err("the summary is empty".to_owned());
    }
    if let Some(what) = looks_like_error(text) {
        return Err(format!(
            "the summary looks like {what}, not a summary: {:?}",
            text.chars().take(120).collect::<String>()
        ));
    }
    let tokens = measure.tokens(text);
    if tokens >= replaced {
        return Err(format!(
            "the summary ({tokens} tokens) is not shorter than what it replaces ({replaced} tokens)"
        ));
    }
    Ok(tokens)
}

/// What an error text looks like, when `text` is one: an exception or an API error
/// returned in place of a summary (langchain #38867 saved one as the summary).
fn looks_like_error(text: &str) -> Option<&'static str> {
    let t = text.trim_start();
    let head: String = t.chars().take(400).collect::<String>().to_lowercase();
    // a JSON error body: {"error": ...} or {"type": "error", ...}
    if head.starts_with('{') {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(t) {
            if map.contains_key("error") || map.get("type").and_then(Value::as_str) == Some("error")
            {
                return Some("an API error body");
            }
        }
    }
    const STARTS: &[(&str, &str)] = &[
        ("traceback (most recent call last)", "a Python traceback"),
        ("error:", "an error message"),
        ("error ", "an error message"),
        ("exception:", "an exception"),
        ("uncaught ", "an exception"),
        ("typeerror:", "an exception"),
        ("referenceerror:", "an exception"),
        ("syntaxerror:", "an exception"),
        ("rangeerror:", "an exception"),
        ("apierror", "an API error"),
        ("api error", "an API error"),
        ("<!doctype html", "an HTML error page"),
        ("<html", "an HTML error page"),
        ("internal server error", "an HTTP error"),
        ("bad gateway", "an HTTP error"),
        ("service unavailable", "an HTTP error"),
        ("gateway timeout", "an HTTP error"),
        ("too many requests", "an HTTP error"),
        ("request failed", "an HTTP error"),
        ("i'm sorry, but i can", "a refusal"),
        ("i’m sorry, but i can", "a refusal"),
        ("i cannot help", "a refusal"),
        ("i can't help", "a refusal"),
    ];
    if let Some((_, what)) = STARTS.iter().find(|(p, _)| head.starts_with(p)) {
        return Some(what);
    }
    // short texts naming an API failure (a real summary is longer than these)
    const NAMES: &[&str] = &[
        "rate_limit_error",
        "rate limit exceeded",
        "overloaded_error",
        "invalid_request_error",
        "authentication_error",
        "context_length_exceeded",
        "maximum context length",
        "insufficient_quota",
        "status code 4",
        "status code 5",
        "429 too many requests",
        "503 service unavailable",
        "500 internal server error",
        "invalid api key",
        "incorrect api key",
    ];
    if t.chars().count() < 600 && NAMES.iter().any(|n| head.contains(n)) {
        return Some("an API error");
    }
    None
}

/// Reads a stored archive.
pub fn read_archive(bytes: &[u8]) -> Option<ArchiveRecord> {
    crate::json::from_bytes(bytes)
}

#[cfg(test)]
mod tests;

/// What [`read_archive`] reads of an archive but its messages, which are checked to be a list
/// of JSON values and skipped, not built: whether an archive is a record this version reads,
/// for a reader that parses its messages itself (the bindings hand the text to `JSON.parse`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // NOTE: the fields are what is checked; none is read.
struct ArchiveHead {
    version: u32,
    number: u32,
    format: Format,
    previous: Option<Vec<String>>,
    messages: Vec<serde::de::IgnoredAny>,
    #[serde(default)]
    continues: bool,
}

/// Whether `bytes` are an archive [`read_archive`] reads, without building its messages.
pub fn is_archive(bytes: &[u8]) -> bool {
    crate::json::from_bytes::<ArchiveHead>(bytes).is_some()
}
