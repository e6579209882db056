//! The rolling window for agent loops (the iteration harness design): the last N iterations
//! stay raw, older ones are folded into one bounded summary, re-summarized every K iterations,
//! and the prompt is held to a budget per section.
//!
//! An *iteration* is one assistant turn with the tool results that answer it ([`Turns`]: an
//! assistant message, or one step of an AI SDK `UIMessage`, which holds every step of a reply
//! between its `step-start` parts), with any plain user message that came just before it.
//! The prompt this module writes has four sections, each held to its own budget by its own
//! rule:
//! - *instructions*: the leading system messages (and a request object's `system`), with the
//!   host's `instructions` first; cut in the middle with a note when over budget, never below
//!   their own minimum;
//! - *goal*: the first user request, verbatim, or its head and tail with a note;
//! - *summary*: the folded iterations, one marker bounded by `maxSummaryTokens` (a summary that
//!   overshoots is trimmed at a line or sentence end);
//! - *recent*: the iterations not folded, raw, byte for byte. Over budget, the oldest of them go
//!   into the fold; an iteration is never cut, and the latest always stays.
//!
//! Between intervals the iterations older than the last N that are not yet folded stay raw, so
//! the prompt's prefix (instructions, goal, summary) is the same from call to call and the
//! provider's prompt cache holds; every `resummarizeEvery` iterations they fold, with the
//! previous summary, into the next one. Only a budget the raw iterations overflow folds
//! between intervals.
//!
//! A policy of the fold ([`super::fold`]), as compaction is: [`plan`] reads the conversation
//! and the stored [`RollingState`] and returns a [`RollingPlan`] whose archive saves and summary
//! request the driver performs; [`RollingPlan::finish`] checks the summary (not empty, not an
//! error text, shorter than what it replaces, within its bound) and only then writes it. A
//! failure (the archive, the summarizer, its timeout, the check) keeps the raw iterations, is
//! recorded in the state with its reason, and is retried at the next interval.
//!
//! NOTE: the summary is written as our compaction marker (`<context-keeper-compaction ...>`,
//! with `iterations` in its header), not a tag of its own: it means the same thing (a summary of
//! archived messages, kept after the head), so `activeMessages`, `readArchive`, counting and a
//! later `compact` all read it as they read compaction's. The folded iterations are archived
//! first, as compaction's are, so nothing is lost when the host keeps only what it sent.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::archive::{ArchiveSaves, ArchiveSpan, SaveFailure};
use super::compact::{allowed_cuts, has_results};
use super::facts::Fact;
use super::fold::{
    self, Folding, Phase, SummaryOutcome, SummaryRequest, DEFAULT_MAX_PINNED,
    DEFAULT_TRANSCRIPT_TOKENS,
};
use super::marker::{
    blocks_of, latest_marker, marker_message, marker_shape, MarkerInfo, MarkerShape,
};
use super::state::{chain, Chain};
use super::text::{utf16_len, utf16_prefix, utf16_suffix};
use super::{Measure, Outcome, Turns, NAMESPACE};
use crate::counting::{CountMessagesError, CountMessagesOptions, Counter, MessagesCount};
use crate::messages::{
    parse_messages_value, CompactionMarker, Conversation, Format, Message, MessagesOptions,
    PartKind, PartRef, Role,
};

/// Iterations kept raw by default.
pub const DEFAULT_KEEP_ITERATIONS: usize = 5;
/// The summary's bound by default, in tokens.
pub const DEFAULT_MAX_SUMMARY_TOKENS: u64 = 2_000;
/// Iterations between two summaries by default.
pub const DEFAULT_RESUMMARIZE_EVERY: usize = 10;
/// The instructions are never cut below this many tokens by default.
pub const DEFAULT_MIN_INSTRUCTIONS_TOKENS: u64 = 1_000;
/// Failures the state remembers.
const MAX_FAILURES: usize = 8;
/// The version written into every state.
pub const ROLLING_STATE_VERSION: u32 = 1;

/// A budget per section, in tokens. An absent section is not bounded (the summary still is,
/// by `maxSummaryTokens`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SectionBudget {
    /// The first user request.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub goal: Option<u64>,
    /// The summary of the folded iterations (at most `maxSummaryTokens` either way).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub summary: Option<u64>,
    /// The raw iterations.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub recent: Option<u64>,
    /// The system messages and the host's instructions (never cut below
    /// `minInstructionsTokens`).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub instructions: Option<u64>,
}

/// The budget: per section, or a total the sections share (the instructions and the goal take
/// what they need up to a quarter each, the summary reserves its bound up to a quarter, the
/// recent iterations get the rest).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RollingBudget {
    /// The whole prompt, in tokens.
    Total(u64),
    /// Per section.
    Sections(SectionBudget),
}

impl<'de> Deserialize<'de> for RollingBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e18)
                        .map(|f| f as u64)
                })
                .map(RollingBudget::Total)
                .ok_or_else(|| {
                    D::Error::custom(format!(
                        "expected a whole number of tokens (the total), found {n}"
                    ))
                }),
            Value::Object(_) => serde_json::from_value(value)
                .map(RollingBudget::Sections)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "expected a number of tokens or {{ goal, summary, recent, instructions }}, found {}",
                match other {
                    Value::String(_) => "a string",
                    Value::Array(_) => "an array",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                }
            ))),
        }
    }
}

/// Options of the rolling window (the summarizer, the store and the timeouts are the driver's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RollingCoreOptions {
    /// The session: the state and the archives are kept under it.
    pub session_id: String,
    /// The latest iterations kept raw. Default 5; at least 1.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub keep_iterations: usize,
    /// The summary's bound, in tokens. Default 2,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_summary_tokens: u64,
    /// Iterations between two summaries. Default 10; at least 1.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub resummarize_every: usize,
    /// The budget: a total in tokens, or one per section.
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(optional, type = "number | SectionBudget")
    )]
    pub budget: Option<RollingBudget>,
    /// The host's instructions (its system prompt), placed first: a system message, or for
    /// Anthropic the request object's `system`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub instructions: Option<String>,
    /// The instructions are never cut below this many tokens. Default 1,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub min_instructions_tokens: u64,
    /// The summarizer's prompt, replacing compaction's default (`{targetTokens}` is replaced).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prompt: Option<String>,
    /// The model the conversation is for: counts use its tokenizer.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// The transcript given to the summarizer is cut to about this many tokens. Default
    /// 60,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub transcript_tokens: u64,
    /// The time written into a new marker, as the host gives it (the core reads no clock).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub now: Option<String>,
    /// Exact details pinned to a summary at most (within its bound). Default 40; 0 pins none.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_pinned: usize,
}

/// The rolling window's options, by the name Rust users know (in TypeScript the package's
/// `RollingOptions` adds the driver's summarizer and store).
pub type RollingOptions = RollingCoreOptions;

impl Default for RollingCoreOptions {
    fn default() -> Self {
        RollingCoreOptions {
            session_id: String::new(),
            keep_iterations: DEFAULT_KEEP_ITERATIONS,
            max_summary_tokens: DEFAULT_MAX_SUMMARY_TOKENS,
            resummarize_every: DEFAULT_RESUMMARIZE_EVERY,
            budget: None,
            instructions: None,
            min_instructions_tokens: DEFAULT_MIN_INSTRUCTIONS_TOKENS,
            prompt: None,
            model: None,
            transcript_tokens: DEFAULT_TRANSCRIPT_TOKENS,
            now: None,
            max_pinned: DEFAULT_MAX_PINNED,
        }
    }
}

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

    fn fail(&mut self, at: u64, phase: Phase, reason: &str) {
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

/// A message of the output: its JSON model and the input message it is, when it is one whole.
#[derive(Clone, Debug)]
struct Piece {
    message: Message,
    /// The input message it comes from.
    index: usize,
    /// Whether it is that message whole and untouched.
    whole: bool,
    /// The parts of that message it holds.
    parts: (usize, usize),
}

impl Piece {
    fn origin(&self) -> Option<usize> {
        self.whole.then_some(self.index)
    }
}

/// The marker the input holds: where, its header and summary, and the blocks it carries ahead
/// of itself (Anthropic's first request, [`MarkerShape::AfterBlocks`]).
#[derive(Clone, Debug)]
struct InputMarker {
    at: usize,
    marker: CompactionMarker,
    lead: Vec<Value>,
}

/// A fold, planned.
#[derive(Clone, Debug)]
struct Fold {
    /// Iterations `from..to` (absolute) are folded.
    from: u64,
    to: u64,
    number: u32,
    key: Vec<String>,
    replaced: u64,
    span: Vec<Message>,
    previous: Option<CompactionMarker>,
    chain_end: Option<Chain>,
}

/// The budgets in force, per section.
#[derive(Clone, Copy, Debug)]
struct Budgets {
    instructions: Option<u64>,
    goal: Option<u64>,
    summary: u64,
    recent: Option<u64>,
    total: Option<u64>,
}

/// Where the sections of an output are, by message index.
struct Layout {
    systems: usize,
    goal_at: Option<usize>,
    marker_at: Option<usize>,
    raw_from: usize,
}

/// A rolling window, planned.
#[derive(Clone, Debug)]
pub struct RollingPlan {
    input: Conversation,
    template: Conversation,
    options: RollingOptions,
    measure: Measure,
    format: Format,
    head: Vec<Piece>,
    goal: Option<usize>,
    input_marker: Option<InputMarker>,
    iterations: Vec<Vec<Piece>>,
    costs: Vec<u64>,
    offset: u64,
    total: u64,
    state: RollingState,
    state_changed: bool,
    state_reset: Option<String>,
    budgets: Budgets,
    instructions_cut: bool,
    goal_cut: bool,
    goal_tokens: u64,
    trigger: Option<Trigger>,
    held: Option<String>,
    fold: Option<Fold>,
    archive: Option<ArchiveSpan>,
    request: Option<SummaryRequest>,
    tokens_before: u64,
    estimated: bool,
}

fn is_instruction(message: &Message) -> bool {
    matches!(message.role(), Role::System | Role::Developer)
}

/// Where each iteration of `messages[body..]` starts: at `body`, then at every turn start
/// ([`Turns`]) after it, pulled back over the plain user messages just before it; a start
/// inside a tool exchange is skipped (its turn joins the one before).
fn iteration_starts(conv: &Conversation, body: usize) -> Vec<PartRef> {
    let messages = conv.messages();
    if body >= messages.len() {
        return Vec::new();
    }
    let allowed = allowed_cuts(conv);
    let mut starts = vec![PartRef {
        message: body,
        part: 0,
    }];
    for &turn in Turns::of(conv).starts() {
        if turn.message < body {
            continue;
        }
        let at = if turn.part > 0 {
            turn
        } else {
            let mut m = turn.message;
            while m > body
                && messages
                    .get(m - 1)
                    .is_some_and(|p| p.role() == Role::User && !has_results(p))
            {
                m -= 1;
            }
            if !allowed.get(m).copied().unwrap_or(false) {
                continue;
            }
            PartRef {
                message: m,
                part: 0,
            }
        };
        if starts.last().is_some_and(|last| *last < at) {
            starts.push(at);
        }
    }
    starts
}

/// The messages from `start` to `end` (exclusive): whole messages, and the parts of a message
/// cut at a step.
fn pieces_between(conv: &Conversation, start: PartRef, end: PartRef) -> Vec<Piece> {
    let messages = conv.messages();
    let last = if end.part > 0 {
        end.message
    } else {
        end.message.saturating_sub(1)
    };
    let mut out = Vec::new();
    if end.message == 0 && end.part == 0 {
        return out;
    }
    for index in start.message..=last {
        let Some(message) = messages.get(index) else {
            break;
        };
        let len = message.parts().len();
        let from = if index == start.message {
            start.part
        } else {
            0
        };
        let to = if index == end.message {
            end.part.min(len)
        } else {
            len
        };
        if from == 0 && to == len {
            out.push(Piece {
                message: message.clone(),
                index,
                whole: true,
                parts: (from, to),
            });
        } else if from < to {
            if let Some(cut) = message.with_parts_range(from, to) {
                out.push(Piece {
                    message: cut,
                    index,
                    whole: false,
                    parts: (from, to),
                });
            }
        }
    }
    out
}

/// `pieces` with the neighbouring steps of one message joined again: the message whole (the
/// input's own) when they are all of it.
fn joined<'a>(conv: &Conversation, pieces: impl IntoIterator<Item = &'a Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for piece in pieces {
        let join = out.last().is_some_and(|last| {
            last.index == piece.index && !last.whole && last.parts.1 == piece.parts.0
        });
        if !join {
            out.push(piece.clone());
            continue;
        }
        let Some(last) = out.last_mut() else {
            continue;
        };
        let Some(message) = conv.messages().get(piece.index) else {
            continue;
        };
        let parts = (last.parts.0, piece.parts.1);
        if parts == (0, message.parts().len()) {
            *last = Piece {
                message: message.clone(),
                index: piece.index,
                whole: true,
                parts,
            };
        } else if let Some(cut) = message.with_parts_range(parts.0, parts.1) {
            *last = Piece {
                message: cut,
                index: piece.index,
                whole: false,
                parts,
            };
        }
    }
    out
}

/// `text` with its middle cut out so that it counts at most `max` tokens: its head (two
/// thirds of what is kept) and tail around a note saying what was cut.
fn cut_middle(text: &str, max: u64, measure: &Measure, what: &str) -> String {
    let total = measure.tokens(text);
    if total <= max {
        return text.to_owned();
    }
    let note = format!(
        "\n\n[... the middle of {what} was cut by context-keeper: {total} tokens, shortened to fit {max} ...]\n\n"
    );
    let build = |keep: usize| {
        let head = utf16_prefix(text, keep * 2 / 3);
        let tail = utf16_suffix(text, keep - keep * 2 / 3).max(head);
        format!(
            "{}{note}{}",
            text.get(..head).unwrap_or_default().trim_end(),
            text.get(tail..).unwrap_or_default().trim_start()
        )
    };
    let (mut lo, mut hi) = (0usize, utf16_len(text));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if measure.tokens(&build(mid)) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    build(lo)
}

/// Cuts the text parts of `message` (which counts `cost` tokens) so that it counts about
/// `budget`: each text part keeps its share. Whether anything was cut.
fn cut_message(
    message: &mut Message,
    cost: u64,
    budget: u64,
    measure: &Measure,
    what: &str,
) -> bool {
    if cost <= budget {
        return false;
    }
    let texts: Vec<(usize, u64)> = message
        .parts()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind() == PartKind::Text)
        .map(|(i, p)| (i, measure.tokens(p.text().unwrap_or_default())))
        .collect();
    let text_total: u64 = texts.iter().map(|(_, t)| t).sum();
    if text_total == 0 {
        return false;
    }
    let room = budget.saturating_sub(cost.saturating_sub(text_total));
    let shares = fair_shares(&texts.iter().map(|(_, t)| *t).collect::<Vec<_>>(), room);
    let mut cut = false;
    for ((i, tokens), share) in texts.into_iter().zip(shares) {
        if tokens <= share {
            continue;
        }
        let Some(part) = message.parts_mut().get_mut(i) else {
            continue;
        };
        let shorter = cut_middle(part.text().unwrap_or_default(), share, measure, what);
        cut |= part.set_text(shorter).is_ok();
    }
    cut
}

/// Max-min fair shares of `budget` for parts that count `costs`: a part under its fair share
/// keeps all it has, the others split what is left evenly. So a short part is never cut
/// because a long one is over.
fn fair_shares(costs: &[u64], budget: u64) -> Vec<u64> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    crate::sort::sort_by_key(&mut order, |&i| {
        crate::sort::fields(costs.get(i).copied().unwrap_or(0), i as u64)
    });
    let mut shares = vec![0; costs.len()];
    let mut left = budget;
    for (k, &i) in order.iter().enumerate() {
        let cost = costs.get(i).copied().unwrap_or(0);
        let fair = left / (costs.len() - k) as u64;
        let share = cost.min(fair);
        if let Some(slot) = shares.get_mut(i) {
            *slot = share;
        }
        left -= share;
    }
    shares
}

/// The part of `counts` from `from`, summed.
fn sum_from(costs: &[u64], from: usize) -> u64 {
    costs.get(from..).map_or(0, |c| c.iter().sum())
}

/// Plans a rolling window over `conv`, given its stored state.
///
/// # Errors
/// An option out of range, host instructions an Anthropic message array cannot carry, or a
/// conversation that cannot be counted with these options.
pub fn plan(
    conv: Conversation,
    options: &RollingOptions,
    state: RollingState,
    counter: &mut Counter,
) -> Result<RollingPlan, RollingError> {
    for (path, value) in [
        ("options.keepIterations", options.keep_iterations as u64),
        ("options.resummarizeEvery", options.resummarize_every as u64),
        ("options.maxSummaryTokens", options.max_summary_tokens),
    ] {
        if value == 0 {
            return Err(RollingError::Options {
                path,
                reason: "expected at least 1".to_owned(),
            });
        }
    }
    let format = conv.format();
    let count_options = CountMessagesOptions {
        model: options.model.clone(),
        format: Some(format),
        ..CountMessagesOptions::default()
    };
    let before = counter.count(&conv, &count_options)?;
    let measure = Measure::for_model(options.model.as_deref());
    let messages = conv.messages();
    let n = messages.len();

    // the head, our marker (if any) and where the iterations start
    let found = latest_marker(messages);
    let native_head = matches!(found, Some((_, None)));
    let (head_end, input_marker, body) = match found {
        Some((at, Some(marker))) => {
            let lead = match messages.get(at) {
                Some(m) if m.parts().len() > 1 => {
                    let mut blocks = blocks_of(m);
                    blocks.pop();
                    blocks
                }
                _ => Vec::new(),
            };
            (at, Some(InputMarker { at, marker, lead }), at + 1)
        }
        Some((at, None)) => (at + 1, None, at + 1),
        None => {
            let systems = messages.iter().take_while(|m| is_instruction(m)).count();
            let goal = messages
                .get(systems)
                .is_some_and(|m| m.role() == Role::User && !has_results(m));
            let end = systems + usize::from(goal);
            (end, None, end)
        }
    };
    let mut head: Vec<Piece> = messages
        .get(..head_end.min(n))
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, m)| Piece {
            message: m.clone(),
            index,
            whole: true,
            parts: (0, m.parts().len()),
        })
        .collect();
    let systems = head
        .iter()
        .take_while(|p| is_instruction(&p.message))
        .count();
    let mut goal = (!native_head).then_some(systems).filter(|&g| {
        head.get(g)
            .is_some_and(|p| p.message.role() == Role::User && !has_results(&p.message))
    });

    // the host's instructions, first
    let (mut template, _) = conv.clone().split_messages();
    if let Some(text) = options.instructions.as_deref().filter(|t| !t.is_empty()) {
        if format == Format::Anthropic {
            if template.envelope.is_none() {
                return Err(RollingError::Options {
                    path: "options.instructions",
                    reason: "Anthropic messages carry instructions in the request's `system`: pass the request object ({ system?, messages }) or put them there yourself".to_owned(),
                });
            }
            if template.system.is_some() {
                return Err(RollingError::Options {
                    path: "options.instructions",
                    reason: "the request object already has a `system`; give one or the other"
                        .to_owned(),
                });
            }
            template.system = Some(Message::text(format, Role::System, text));
        } else {
            let message = if messages.iter().any(Message::is_ui_message) {
                let value = json!([{"id": "context-keeper-instructions", "role": "system", "parts": [{"type": "text", "text": text}]}]);
                let parse = MessagesOptions {
                    format: Some(format),
                    allow_pending_calls: true,
                };
                parse_messages_value(value, &parse)
                    .ok()
                    .and_then(|c| c.split_messages().1.pop())
            } else {
                Some(Message::text(format, Role::System, text))
            };
            if let Some(message) = message {
                head.insert(
                    0,
                    Piece {
                        message,
                        index: 0,
                        whole: false,
                        parts: (0, 0),
                    },
                );
                goal = goal.map(|g| g + 1);
            }
        }
    }
    let systems = head
        .iter()
        .take_while(|p| is_instruction(&p.message))
        .count();

    // the iterations
    let starts = iteration_starts(&conv, body);
    let end = PartRef {
        message: n,
        part: 0,
    };
    let iterations: Vec<Vec<Piece>> = starts
        .iter()
        .enumerate()
        .map(|(j, &s)| pieces_between(&conv, s, starts.get(j + 1).copied().unwrap_or(end)))
        .collect();

    // the budgets
    let total_budget = match &options.budget {
        Some(RollingBudget::Total(t)) => Some(*t),
        _ => None,
    };
    let sections = match &options.budget {
        Some(RollingBudget::Sections(s)) => s.clone(),
        _ => SectionBudget::default(),
    };
    let quarter = total_budget.map(|t| t / 4);
    let budgets = Budgets {
        instructions: sections
            .instructions
            .or(quarter)
            .map(|b| b.max(options.min_instructions_tokens)),
        goal: sections.goal.or(quarter),
        summary: options
            .max_summary_tokens
            .min(sections.summary.or(quarter).unwrap_or(u64::MAX)),
        recent: sections.recent,
        total: total_budget,
    };

    // cut the instructions and the goal to their budgets
    let count_pieces = |counter: &mut Counter,
                        template: &Conversation,
                        head: &[Piece],
                        iterations: &[Vec<Piece>]|
     -> Result<MessagesCount, CountMessagesError> {
        let mut probe = template.clone();
        probe.messages = head
            .iter()
            .chain(iterations.iter().flatten())
            .map(|p| p.message.clone())
            .collect();
        counter.count(&probe, &count_options)
    };
    let first = count_pieces(counter, &template, &head, &iterations)?;
    let cost = |count: &MessagesCount, i: usize| count.per_message.get(i).copied().unwrap_or(0);
    let mut instructions_cut = false;
    if let Some(budget) = budgets.instructions {
        let section: u64 = first.system + (0..systems).map(|i| cost(&first, i)).sum::<u64>();
        if section > budget {
            let what = "these instructions";
            // the request's own `system` first, then the system messages
            let costs: Vec<u64> = std::iter::once(first.system)
                .chain((0..systems).map(|i| cost(&first, i)))
                .collect();
            let shares = fair_shares(&costs, budget);
            let share = |k: usize| shares.get(k).copied().unwrap_or(0);
            if let Some(system) = template.system.as_mut() {
                instructions_cut |= cut_message(system, first.system, share(0), &measure, what);
            }
            for (i, piece) in head.iter_mut().enumerate().take(systems) {
                let c = cost(&first, i);
                if cut_message(&mut piece.message, c, share(i + 1), &measure, what) {
                    piece.whole = false;
                    instructions_cut = true;
                }
            }
        }
    }
    let mut goal_cut = false;
    if let (Some(budget), Some(g)) = (budgets.goal, goal) {
        let c = cost(&first, g);
        if let Some(piece) = head.get_mut(g) {
            if cut_message(&mut piece.message, c, budget, &measure, "the first request") {
                piece.whole = false;
                goal_cut = true;
            }
        }
    }
    let counted = if instructions_cut || goal_cut {
        count_pieces(counter, &template, &head, &iterations)?
    } else {
        first
    };
    let head_len = head.len();
    let costs: Vec<u64> = {
        let mut at = head_len;
        iterations
            .iter()
            .map(|it| {
                let c = (at..at + it.len()).map(|i| cost(&counted, i)).sum();
                at += it.len();
                c
            })
            .collect()
    };
    let instructions_tokens = counted.system + (0..systems).map(|i| cost(&counted, i)).sum::<u64>();
    let goal_tokens = goal.map_or(0, |g| cost(&counted, g));
    let overhead = counted
        .total
        .saturating_sub(counted.per_message.iter().sum::<u64>() + counted.system);

    let mut out = RollingPlan {
        input: conv,
        template,
        options: options.clone(),
        measure,
        format,
        head,
        goal,
        input_marker,
        iterations,
        costs,
        offset: 0,
        total: 0,
        state,
        state_changed: false,
        state_reset: None,
        budgets,
        instructions_cut,
        goal_cut,
        goal_tokens,
        trigger: None,
        held: None,
        fold: None,
        archive: None,
        request: None,
        tokens_before: before.total,
        estimated: !before.exact,
    };
    out.reconcile();
    let fixed = instructions_tokens + goal_tokens + overhead;
    out.decide(fixed);
    out.prepare();
    Ok(out)
}

impl RollingPlan {
    /// Matches the stored state to the input: the input's own marker wins; else the state's
    /// folded iterations must be the history's first ones (by chain hash), or it starts over.
    fn reconcile(&mut self) {
        let local = self.iterations.len() as u64;
        if let Some(input) = &self.input_marker {
            let offset = input.marker.iterations.unwrap_or(0);
            self.offset = offset;
            let same = self
                .state
                .marker
                .as_ref()
                .is_some_and(|m| m.key == input.marker.key && m.number == input.marker.number)
                && self.state.folded == offset;
            if !same {
                let previous = std::mem::take(&mut self.state);
                self.state = RollingState {
                    folded: offset,
                    summary: input.marker.summary.clone(),
                    marker: Some(CompactionMarker {
                        summary: String::new(),
                        ..input.marker.clone()
                    }),
                    attempted_at: offset,
                    failures: previous.failures,
                    ..RollingState::default()
                };
                self.state_changed = true;
            }
        } else if self.state.folded > 0 {
            let folded = usize::try_from(self.state.folded).unwrap_or(usize::MAX);
            let reason = if self.iterations.len() < folded {
                Some(format!(
                    "the history has {} iterations, fewer than the {} the stored summary stands for",
                    self.iterations.len(),
                    self.state.folded
                ))
            } else {
                let seen = self.chain_of(0, folded, Chain::default()).to_hex();
                (self.state.chain.as_deref() != Some(seen.as_str())).then(|| {
                    format!(
                        "the history's first {} iterations are not those the stored summary stands for",
                        self.state.folded
                    )
                })
            };
            if let Some(reason) = reason {
                self.state = RollingState::default();
                self.state_changed = true;
                self.state_reset = Some(reason);
            }
        }
        self.total = self.offset + local;
        if self.state.attempted_at > self.total {
            // a history rewound to before the last attempt
            self.state.attempted_at = self.state.folded;
            self.state.failed = false;
            self.state_changed = true;
        }
    }

    /// The chain over the pieces of local iterations `from..to`, after `start`.
    fn chain_of(&self, from: usize, to: usize, start: Chain) -> Chain {
        let pieces: Vec<Message> = self
            .iterations
            .get(from..to)
            .unwrap_or_default()
            .iter()
            .flatten()
            .map(|p| p.message.clone())
            .collect();
        chain(start, &pieces)
    }

    fn local(&self, absolute: u64) -> usize {
        usize::try_from(absolute.saturating_sub(self.offset)).unwrap_or(usize::MAX)
    }

    fn every(&self) -> u64 {
        self.options.resummarize_every as u64
    }

    /// Whether a fold is due and up to which iteration; `fixed` is what the instructions, the
    /// goal and the framing count.
    fn decide(&mut self, fixed: u64) {
        let t = self.total;
        let f = self.state.folded.max(self.offset);
        let keep = self.options.keep_iterations as u64;
        let foldable = t.saturating_sub(keep);
        let interval = foldable > f && t >= self.state.attempted_at + self.every();
        let waiting = self.state.failed && t < self.state.attempted_at + self.every();
        let recent_budget = |reserve: u64| -> Option<u64> {
            let from_total = self
                .budgets
                .total
                .map(|total| total.saturating_sub(fixed + reserve));
            match (self.budgets.recent, from_total) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        let cut_for = |budget: Option<u64>, from: u64| -> u64 {
            let Some(budget) = budget else { return from };
            let mut c = from;
            while c + 1 < t && sum_from(&self.costs, self.local(c)) > budget {
                c += 1;
            }
            c
        };
        let summary_tokens = if f > 0 {
            self.measure.tokens(&self.state.summary) + 8
        } else {
            0
        };
        let base = if interval { foldable } else { f };
        let reserve = if interval {
            self.budgets.summary
        } else {
            summary_tokens
        };
        let mut cut = cut_for(recent_budget(reserve), base);
        if cut > base && !interval && f == 0 {
            // a fold will add a summary: leave room for it
            cut = cut_for(recent_budget(self.budgets.summary), base);
        }
        if cut > base && !interval && waiting {
            self.held = Some(format!(
                "the raw iterations are over their budget, and the last summary failed (at iteration {}): it is tried again at iteration {}",
                self.state.attempted_at,
                self.state.attempted_at + self.every()
            ));
            cut = base;
        }
        if cut > f {
            self.trigger = Some(if interval {
                Trigger::Interval
            } else {
                Trigger::Budget
            });
            self.fold = Some(Fold {
                from: f,
                to: cut,
                number: 0,
                key: Vec::new(),
                replaced: 0,
                span: Vec::new(),
                previous: None,
                chain_end: None,
            });
        }
    }

    /// The archive and the summary request of the fold, if one is due.
    fn prepare(&mut self) {
        let Some(mut fold) = self.fold.take() else {
            return;
        };
        let f = self.state.folded.max(self.offset);
        let (from, to) = (self.local(f), self.local(fold.to));
        let span_pieces = joined(
            &self.input,
            self.iterations
                .get(from..to)
                .unwrap_or_default()
                .iter()
                .flatten(),
        );
        fold.span = span_pieces.iter().map(|p| p.message.clone()).collect();
        let previous = match &self.input_marker {
            Some(input) => Some(input.marker.clone()),
            None if f > 0 => self.state.marker.clone().map(|m| CompactionMarker {
                summary: self.state.summary.clone(),
                ..m
            }),
            None => None,
        };
        let previous_tokens = previous
            .as_ref()
            .map_or(0, |p| self.measure.tokens(&p.to_text()));
        fold.replaced = self
            .costs
            .get(from..to)
            .unwrap_or_default()
            .iter()
            .sum::<u64>()
            + previous_tokens;
        fold.number = previous.as_ref().map_or(0, |p| p.number) + 1;
        let known = if f == 0 {
            Some(Chain::default())
        } else {
            self.state.chain.as_deref().and_then(Chain::from_hex)
        };
        fold.chain_end = known.map(|c| self.chain_of(from, to, c));
        let name = fold::archive_name("rolling-", fold.number, &fold.span);
        fold.key = super::archive::archive_key(&self.options.session_id, &name);
        let first = span_pieces.first().map_or(0, |p| p.index);
        let (archive, request) = fold::ask(fold::Ask {
            span: &fold.span,
            first,
            session_id: &self.options.session_id,
            name: &name,
            number: fold.number,
            format: self.format,
            previous: previous.as_ref(),
            continues: false,
            prompt: self.options.prompt.as_deref(),
            target_tokens: self.budgets.summary,
            transcript_tokens: self.options.transcript_tokens,
        });
        self.archive = Some(archive);
        self.request = Some(request);
        fold.previous = previous;
        self.fold = Some(fold);
    }

    /// The archive saves to make before the summarizer is called, each made when asked for.
    pub fn saves(&self) -> ArchiveSaves<'_> {
        ArchiveSaves::new(self.archive.as_ref())
    }

    /// What to ask the summarizer, when a fold is due.
    pub fn summary_request(&self) -> Option<&SummaryRequest> {
        self.request.as_ref()
    }

    /// Whether a fold is due.
    pub fn has_work(&self) -> bool {
        self.fold.is_some()
    }

    /// The first request's text, for the heuristic summary and fact pinning.
    fn goal_text(&self) -> Option<String> {
        let piece = self.head.get(self.goal?)?;
        let text: Vec<&str> = piece
            .message
            .parts()
            .iter()
            .filter(|p| p.kind() == PartKind::Text)
            .filter_map(|p| p.text())
            .collect();
        (!text.is_empty()).then(|| text.join("\n"))
    }

    /// Applies the fold: checks the summary and writes it, or keeps the iterations raw with
    /// the reason. `archive` holds one outcome per save.
    pub fn finish(
        mut self,
        archive: &[Outcome],
        summary: SummaryOutcome,
        counter: &mut Counter,
    ) -> Rolled {
        let Some(fold) = self.fold.take() else {
            return self.output(None, None, counter);
        };
        let failures = self.saves().failures(archive);
        self.archive = None;
        if let Some(reason) = fold::archive_failed(&failures, "the iterations stay raw") {
            let mut out = self.failed(Phase::Archive, reason, counter);
            out.report.failures = failures;
            return out;
        }
        let goal_text = self.goal_text();
        let cap = self.budgets.summary;
        let to = self.local(fold.to);
        let folding = Folding {
            span: &fold.span,
            kept: (self.iterations.get(to..).unwrap_or_default().iter())
                .flatten()
                .map(|p| &p.message)
                .collect(),
            task: goal_text.as_deref(),
            heuristic_task: goal_text.as_deref(),
            previous: fold.previous.as_ref().map(|p| p.summary.as_str()),
            replaced: fold.replaced,
            bound: Some(cap),
            heuristic_tokens: cap,
            max_pinned: self.options.max_pinned,
        };
        let fold::Summary {
            text: summary,
            heuristic,
            trimmed,
            pinned,
        } = match fold::summarize(&folding, summary, &self.measure) {
            Ok(summary) => summary,
            Err((phase, reason)) => return self.failed(phase, reason, counter),
        };
        let previous = fold.previous.as_ref();
        let marker = CompactionMarker {
            number: fold.number,
            time: self.options.now.clone(),
            archived_messages: previous.map_or(0, |p| p.archived_messages) + fold.span.len() as u64,
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_before,
            head: 0,
            key: fold.key.clone(),
            iterations: Some(fold.to),
            summary,
        };
        self.state.folded = fold.to;
        self.state.summary = marker.summary.clone();
        self.state.heuristic = heuristic;
        self.state.chain = fold.chain_end.map(Chain::to_hex);
        self.state.attempted_at = self.total;
        self.state.folded_at = self.total;
        self.state.failed = false;
        self.state.marker = Some(CompactionMarker {
            summary: String::new(),
            ..marker
        });
        self.state_changed = true;
        let mut out = self.output(Some(fold.to), None, counter);
        out.report.outcome = RollingOutcome::Folded;
        out.report.span = Some(IterationSpan {
            from: fold.from,
            to: fold.to,
        });
        out.report.heuristic = heuristic;
        out.report.summary_trimmed = trimmed;
        out.report.pinned = pinned;
        out
    }

    /// A failure: the iterations stay raw, the state records it (the next interval retries).
    fn failed(mut self, phase: Phase, reason: String, counter: &mut Counter) -> Rolled {
        self.state.fail(self.total, phase, &reason);
        self.state_changed = true;
        let mut out = self.output(None, Some(reason), counter);
        out.report.outcome = RollingOutcome::Failed;
        out.report.phase = Some(phase);
        out
    }

    /// The output with the summary standing for the first `folded` iterations (the state's),
    /// the rest raw.
    fn output(
        mut self,
        new_fold: Option<u64>,
        reason: Option<String>,
        counter: &mut Counter,
    ) -> Rolled {
        let folded = new_fold.unwrap_or(self.state.folded.max(self.offset));
        let from = self.local(folded);
        let raw = joined(
            &self.input,
            self.iterations
                .get(from..)
                .unwrap_or_default()
                .iter()
                .flatten(),
        );
        let mut pieces: Vec<(Message, Option<usize>)> = Vec::new();
        let mut marker_out: Option<CompactionMarker> = None;
        let mut marker_at: Option<usize> = None;
        let keep_input_marker = new_fold.is_none() && self.input_marker.is_some();
        let write_marker = new_fold.is_some() || (folded > 0 && self.input_marker.is_none());
        let mut head: Vec<(Message, Option<usize>)> = self
            .head
            .iter()
            .map(|p| (p.message.clone(), p.origin()))
            .collect();
        if keep_input_marker {
            if let Some(input) = &self.input_marker {
                if let Some(m) = self.input.messages().get(input.at) {
                    marker_at = Some(head.len());
                    head.push((m.clone(), Some(input.at)));
                    marker_out = Some(input.marker.clone());
                }
            }
        } else if write_marker {
            let marker = match self.state.marker.clone() {
                Some(m) => CompactionMarker {
                    summary: self.state.summary.clone(),
                    ..m
                },
                None => CompactionMarker {
                    summary: self.state.summary.clone(),
                    iterations: Some(folded),
                    ..CompactionMarker::default()
                },
            };
            let next = raw.first().map(|p| p.message.role());
            let (shape, lead) = match &self.input_marker {
                Some(input) if !input.lead.is_empty() => {
                    (MarkerShape::AfterBlocks, input.lead.clone())
                }
                _ => {
                    let prev = head.last().map(|(m, _)| m.role());
                    let shape = marker_shape(self.format, prev, next).unwrap_or(MarkerShape::User);
                    match shape {
                        MarkerShape::AfterBlocks => {
                            let lead = head.pop().map(|(m, _)| blocks_of(&m)).unwrap_or_default();
                            (shape, lead)
                        }
                        _ => (shape, Vec::new()),
                    }
                }
            };
            let mut marker = CompactionMarker {
                head: head.len() as u64,
                ..marker
            };
            let write =
                |marker: &CompactionMarker| marker_message(&self.input, marker, shape, &lead);
            if new_fold.is_some() {
                // the figure after, counted with the marker in place (to within a token)
                if let Some(probe) = write(&marker) {
                    let mut probe_conv = self.template.clone();
                    probe_conv.messages = head
                        .iter()
                        .map(|(m, _)| m.clone())
                        .chain(std::iter::once(probe))
                        .chain(raw.iter().map(|p| p.message.clone()))
                        .collect();
                    if let Ok(count) = self.count(&probe_conv, counter) {
                        marker.tokens_after = count.total;
                    }
                }
            }
            if let Some(message) = write(&marker) {
                marker_at = Some(head.len());
                head.push((message, None));
                marker_out = Some(marker);
            }
        }
        let systems = head.iter().take_while(|(m, _)| is_instruction(m)).count();
        let goal_at = (self.goal.is_some()
            && head
                .get(systems)
                .is_some_and(|(m, _)| m.role() == Role::User && marker_at != Some(systems)))
        .then_some(systems);
        let raw_from = head.len();
        pieces.extend(head);
        pieces.extend(raw.iter().map(|p| (p.message.clone(), p.origin())));
        let (messages, origin): (Vec<Message>, Vec<Option<usize>>) = pieces.into_iter().unzip();
        let mut conversation = self.template.clone();
        conversation.messages = messages;
        let layout = Layout {
            systems,
            goal_at,
            marker_at,
            raw_from,
        };
        let report = self.report(&conversation, &layout, folded, reason, counter);
        if let (Some(marker), Some(state)) = (&marker_out, self.state.marker.as_mut()) {
            if new_fold.is_some() {
                state.tokens_after = marker.tokens_after;
                state.head = marker.head;
            }
        }
        Rolled {
            origin,
            marker: marker_out.as_ref().map(MarkerInfo::from),
            report,
            state: self.state_changed.then_some(self.state),
            conversation,
        }
    }

    /// Counts with the counter the plan was made with (its cache and calibrations), never a
    /// process-wide one: a marker's bytes depend only on what the caller hands in.
    fn count(
        &self,
        conv: &Conversation,
        counter: &mut Counter,
    ) -> Result<MessagesCount, CountMessagesError> {
        let options = CountMessagesOptions {
            model: self.options.model.clone(),
            format: Some(self.format),
            ..CountMessagesOptions::default()
        };
        counter.count(conv, &options)
    }

    fn report(
        &self,
        conv: &Conversation,
        layout: &Layout,
        folded: u64,
        reason: Option<String>,
        counter: &mut Counter,
    ) -> RollingReport {
        let counted = self.count(conv, counter).ok();
        let per = |i: usize| {
            counted
                .as_ref()
                .and_then(|c| c.per_message.get(i).copied())
                .unwrap_or(0)
        };
        let instructions =
            counted.as_ref().map_or(0, |c| c.system) + (0..layout.systems).map(per).sum::<u64>();
        // a first request written into the marker's message (Anthropic) counts as the goal
        let goal = match layout.goal_at {
            Some(at) => per(at),
            None if self.goal.is_some() => self.goal_tokens,
            None => 0,
        };
        let summary = layout.marker_at.map_or(0, |at| {
            let t = per(at);
            if layout.goal_at.is_some() || self.goal.is_none() {
                t
            } else {
                t.saturating_sub(goal)
            }
        });
        let recent: u64 = (layout.raw_from..conv.messages().len()).map(per).sum();
        let tokens_after = counted.as_ref().map_or(0, |c| c.total);
        let b = self.budgets;
        let sections = Sections {
            instructions: SectionReport {
                tokens: instructions,
                budget: b.instructions,
                truncated: self.instructions_cut,
            },
            goal: SectionReport {
                tokens: goal,
                budget: b.goal,
                truncated: self.goal_cut,
            },
            summary: SectionReport {
                tokens: summary,
                budget: Some(b.summary),
                truncated: false,
            },
            recent: SectionReport {
                tokens: recent,
                budget: b.recent,
                truncated: self.trigger == Some(Trigger::Budget)
                    || folded
                        > self
                            .total
                            .saturating_sub(self.options.keep_iterations as u64),
            },
        };
        let mut over = Vec::new();
        for (name, s) in [
            ("instructions", sections.instructions),
            ("goal", sections.goal),
            ("recent", sections.recent),
        ] {
            if let Some(budget) = s.budget {
                if s.tokens > budget {
                    over.push(format!("{name} {} > {budget}", s.tokens));
                }
            }
        }
        if let Some(total) = b.total {
            if tokens_after > total {
                over.push(format!("total {tokens_after} > {total}"));
            }
        }
        let over_budget =
            (!over.is_empty()).then(|| {
                let why = self.held.clone().unwrap_or_else(|| {
                if sections.recent.budget.is_some_and(|r| sections.recent.tokens > r)
                    || b.total.is_some()
                {
                    "the latest iteration alone is over the budget left for it, and is never cut"
                        .to_owned()
                } else {
                    "a section is over its budget even at its minimum".to_owned()
                }
            });
                format!("{} ({why})", over.join(", "))
            });
        RollingReport {
            outcome: RollingOutcome::Unchanged,
            trigger: self.trigger,
            phase: None,
            reason,
            iterations: self.total,
            folded,
            raw_iterations: self.total.saturating_sub(folded),
            span: None,
            next_fold_at: self.state.attempted_at + self.every(),
            heuristic: self.state.heuristic && folded > 0,
            summary_trimmed: false,
            pinned: Vec::new(),
            sections,
            tokens_before: self.tokens_before,
            tokens_after,
            within_budget: over_budget.is_none(),
            over_budget,
            estimated: self.estimated,
            failures: Vec::new(),
            state_reset: self.state_reset.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
