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
//!
//! The files: `options` (the options and the budget), `report` (what a prepare reports),
//! `prepare` (one prepare's state), `machine` (its steps up to a decision's cuts),
//! `compaction` (the flush and the compaction), `finish` (the figures, the breakpoints, the
//! output), `fast` (the fast path: when the last answer stands with the new messages
//! appended, decided without reading the history again), `reported` (the usage a provider
//! reported for a call, and the calibration it gives).

mod compaction;
mod finish;
mod machine;
mod options;
mod prepare;
mod report;
pub mod reported;

pub use crate::context::machine::{Event, Need};
pub mod fast;

pub use options::*;
pub use prepare::Prepare;
pub use report::*;

#[cfg(test)]
mod tests;
