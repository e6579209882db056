//! The fold: the pipeline every summary of older messages goes through, whichever policy chose
//! the span (compaction's cut point, the rolling window's iterations, the keeper's compaction):
//!
//! 1. *span*: the policy picks the messages to fold (never inside a tool exchange);
//! 2. *archive*: they are stored first, as JSON and as a transcript ([`super::archive`]);
//! 3. *request*: the summarizer is asked (`ask`: the span, the previous summary to fold in,
//!    the prompt, a transcript cut to its budget), only once the archive is stored;
//! 4. *check*: the summary is not empty, not an error text, shorter than what it replaces
//!    ([`check_summary`]), held to the policy's bound ([`trim_summary`]);
//! 5. *pin*: the exact details the summary lost and the kept messages still name are appended
//!    (`summarize`; those the agent itself wrote first);
//! 6. *marker*: the policy writes it in place of the span ([`super::marker`]) and records the
//!    fold in its state, so the full history is recognised again without a summarizer.
//!
//! A failure at any step keeps the messages as they were and says where ([`Phase`]) and why.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::archive::{archive_key, ArchiveSpan, MessageValues, SaveFailure};
use super::facts::{self, Fact};
use super::state::{chain, Chain};
use super::text::{utf16_len, utf16_prefix};
use super::{heuristic, transcript, Measure};
use crate::messages::{CompactionMarker, Format, Message};

/// The transcript handed to the summarizer is cut to about this many tokens.
pub const DEFAULT_TRANSCRIPT_TOKENS: u64 = 60_000;
/// Exact details pinned to a summary at most.
pub const DEFAULT_MAX_PINNED: usize = 40;

/// The summarizer's default prompt; `{targetTokens}` is replaced by the target.
pub const DEFAULT_PROMPT: &str = "You are summarizing the earlier part of a conversation between a user and an AI assistant, with the assistant's tool calls and their results, so that the assistant can carry on the work without it. The summary replaces those messages: anything it leaves out is gone. Write at most {targetTokens} tokens, in these sections:\n\n1. Intent: what the user asked for and any constraints they set, in their words where the wording matters.\n2. Progress: what has been done so far, in order, and what it showed.\n3. Decisions: the choices made and why; approaches tried and abandoned.\n4. Current state: where the work stands now, what is in progress, errors not yet solved.\n5. Next steps: what remains to be done.\n6. Exact details: file paths, identifiers, URLs, numbers with their units, commands and error messages the work still needs, copied exactly.\n\nIf a previous summary is given, fold it in: the new summary replaces it. Write only the summary, with nothing invented.";

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

/// `text` within `max` tokens: as it is, or cut at the last line or sentence end that fits,
/// with a note. Whether it was trimmed.
pub fn trim_summary(text: &str, max: u64, measure: &Measure) -> (String, bool) {
    if measure.tokens(text) <= max {
        return (text.to_owned(), false);
    }
    let note = format!("\n[summary trimmed by context-keeper to fit {max} tokens]");
    let fits = |units: usize| {
        let end = utf16_prefix(text, units);
        let body = text.get(..end).unwrap_or_default();
        measure.tokens(body) + measure.tokens(&note) <= max
    };
    let (mut lo, mut hi) = (0usize, utf16_len(text));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let prefix = text.get(..utf16_prefix(text, lo)).unwrap_or_default();
    // the last line end, else sentence end, else word end, in the second half of what fits
    let half = prefix.len() / 2;
    let line = prefix.rfind('\n').filter(|&at| at >= half);
    let sentence = [". ", "! ", "? ", "。"]
        .iter()
        .filter_map(|end| prefix.rfind(end).map(|at| at + end.trim_end().len()))
        .max()
        .filter(|&at| at >= half);
    let word = prefix.rfind(char::is_whitespace).filter(|&at| at >= half);
    let end = line.or(sentence).or(word).unwrap_or(prefix.len());
    let body = prefix.get(..end).unwrap_or(prefix).trim_end();
    (format!("{body}{note}"), true)
}

/// A fold's archive name: `prefix`, its number, and the start of its span's chain hash (so two
/// folds of different spans never share a name).
pub(crate) fn archive_name(prefix: &str, number: u32, span: &[Message]) -> String {
    let span_chain = chain(Chain::default(), span);
    format!(
        "{prefix}{number:04}-{}",
        span_chain.to_hex().get(..16).unwrap_or_default()
    )
}

/// What a fold asks for once its span is chosen.
pub(crate) struct Ask<'a> {
    /// The folded messages.
    pub span: &'a [Message],
    /// The index of the span's first message in the conversation (the transcript's numbers).
    pub first: usize,
    /// The session.
    pub session_id: &'a str,
    /// The archive's name ([`archive_name`]).
    pub name: &'a str,
    /// The fold's number.
    pub number: u32,
    /// The messages' format.
    pub format: Format,
    /// The marker the span starts with (the previous fold's), whose summary is folded in.
    pub previous: Option<&'a CompactionMarker>,
    /// Whether the span's first message continues the previous archive's last one.
    pub continues: bool,
    /// The host's prompt (`{targetTokens}` replaced), or the default.
    pub prompt: Option<&'a str>,
    /// The summary's length to aim for.
    pub target_tokens: u64,
    /// The transcript's budget, in tokens.
    pub transcript_tokens: u64,
}

/// The archive saves and the summary request of a fold.
pub(crate) fn ask(ask: Ask<'_>) -> (ArchiveSpan, SummaryRequest) {
    let budget = usize::try_from(ask.transcript_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    // NOTE: the summarizer's transcript first: what its tries take is given back before the
    // archive's two copies of the span are made, not taken on top of them. Those are made when
    // the driver asks for each ([`super::archive::ArchiveSaves`]): made together, they were
    // both in memory at once.
    let transcript = transcript::render(ask.span, ask.first, Some(budget));
    let messages = MessageValues::new(ask.span.to_vec());
    let previous_key = (ask.previous.map(|p| p.key.clone())).filter(|k| !k.is_empty());
    let archive = ArchiveSpan::new(
        archive_key(ask.session_id, ask.name),
        messages.clone(),
        ask.first,
        (ask.number, ask.format, previous_key, ask.continues),
    );
    let prompt = (ask.prompt.unwrap_or(DEFAULT_PROMPT))
        .replace("{targetTokens}", &ask.target_tokens.to_string());
    let request = SummaryRequest {
        messages,
        previous_summary: ask.previous.map(|p| p.summary.clone()),
        prompt,
        target_tokens: ask.target_tokens,
        transcript,
    };
    (archive, request)
}

/// Why a fold stops at its archive, when a save of it failed; `then` says what stays.
pub(crate) fn archive_failed(failures: &[SaveFailure], then: &str) -> Option<String> {
    let first = failures.first()?;
    Some(format!(
        "the archive could not be stored ({}); {then}",
        first.reason
    ))
}

/// What a fold's summary is made from, once its archive is stored.
pub(crate) struct Folding<'a> {
    /// The folded messages, oldest first.
    pub span: &'a [Message],
    /// The messages that stay after the marker, in order.
    pub kept: Vec<&'a Message>,
    /// The task (the first user request) where it stays verbatim: what it names is not lost.
    pub task: Option<&'a str>,
    /// The task for the heuristic summary to open with.
    pub heuristic_task: Option<&'a str>,
    /// The summary the span starts with (the previous marker's).
    pub previous: Option<&'a str>,
    /// What the folded messages count.
    pub replaced: u64,
    /// The summary's bound in tokens, when the policy has one (the rolling window's).
    pub bound: Option<u64>,
    /// The heuristic summary's length, in tokens.
    pub heuristic_tokens: u64,
    /// Details pinned at most.
    pub max_pinned: usize,
}

/// A fold's summary, checked and pinned.
#[derive(Debug)]
pub(crate) struct Summary {
    /// The summary with its pinned details.
    pub text: String,
    /// Whether it is the built-in heuristic one.
    pub heuristic: bool,
    /// Whether it was trimmed to the bound.
    pub trimmed: bool,
    /// The details pinned to it.
    pub pinned: Vec<Fact>,
}

/// The summary of `folding` from what the summarizer did: checked, held to the bound, with the
/// details it lost pinned (as many as fit the bound and leave it shorter than what it
/// replaces). Where and why it failed otherwise.
pub(crate) fn summarize(
    folding: &Folding<'_>,
    outcome: SummaryOutcome,
    measure: &Measure,
) -> Result<Summary, (Phase, String)> {
    let (text, heuristic) = match outcome {
        SummaryOutcome::Text(text) => (text, false),
        SummaryOutcome::Heuristic => {
            let chars =
                usize::try_from(folding.heuristic_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
            let text = heuristic::heuristic_summary(
                folding.span,
                folding.heuristic_task,
                folding.previous,
                chars,
            );
            (text, true)
        }
        SummaryOutcome::Failed(reason) => return Err((Phase::Summarize, reason)),
        SummaryOutcome::NotCalled => {
            return Err((Phase::Summarize, "the summarizer was not called".to_owned()))
        }
    };
    let text = text.trim();
    check_summary(text, folding.replaced, measure).map_err(|reason| (Phase::Check, reason))?;
    let (text, trimmed) = match folding.bound {
        Some(max) => trim_summary(text, max, measure),
        None => (text.to_owned(), false),
    };
    // NOTE: the texts borrowed where they can be (a copy of every text of a 10 MB span held as
    // much memory again).
    let span_texts: Vec<Cow<'_, str>> = (folding.span.iter())
        .flat_map(facts::message_texts)
        .chain(folding.previous.map(Cow::Borrowed))
        .collect();
    let keep_texts: Vec<Cow<'_, str>> = (folding.kept.iter())
        .flat_map(|m| facts::message_texts(m))
        .chain(folding.task.map(Cow::Borrowed))
        .collect();
    let written: Vec<Cow<'_, str>> = (folding.span.iter())
        .chain(folding.kept.iter().copied())
        .flat_map(facts::written_texts)
        .collect();
    let span_refs: Vec<&str> = span_texts.iter().map(AsRef::as_ref).collect();
    let keep_refs: Vec<&str> = keep_texts.iter().map(AsRef::as_ref).collect();
    let written_refs: Vec<&str> = written.iter().map(AsRef::as_ref).collect();
    let mut pinned = facts::missing_facts(
        &span_refs,
        &keep_refs,
        &written_refs,
        &text,
        folding.max_pinned,
    );
    let over = |summary: &str| {
        let tokens = measure.tokens(summary);
        tokens >= folding.replaced || folding.bound.is_some_and(|max| tokens > max)
    };
    let mut summary = facts::pin(&text, &pinned);
    while !pinned.is_empty() && over(&summary) {
        pinned.pop();
        summary = facts::pin(&text, &pinned);
    }
    Ok(Summary {
        text: summary,
        heuristic,
        trimmed,
        pinned,
    })
}
