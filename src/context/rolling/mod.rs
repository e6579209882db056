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
//!
//! The files: `options`, `state` (what is stored), `report`, `pieces` (iterations and the
//! output's messages), `plan` (reading, matching the state, deciding the fold), `finish`
//! (checking and writing the summary, the output).

mod finish;
mod options;
mod pieces;
mod plan;
mod report;
mod state;

pub use options::*;
pub use plan::{plan, RollingPlan};
pub use report::*;
pub use state::*;

#[cfg(test)]
mod tests;
