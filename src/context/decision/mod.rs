//! The keeper's standing decision: which old tool results (and file-write inputs) are cut, and
//! how, so that the prompt fits with room for several turns, keeps what the agent uses, and
//! loses nothing (DESIGN.md, "What to keep").
//!
//! A decision is made at a horizon (the latest tool call with its result) and recorded as a
//! list of [`Cut`]s in the session state; every later prepare re-applies the same cuts, so the
//! prompt prefix stays byte-identical until the next decision. Each cut names the call, what
//! is done ([`super::Action`]), the id of the stored copy of what it removes, a hash of the text it was
//! made on (a result the host changed is left alone), and the lines it keeps.
//!
//! What a new decision cuts is chosen greedily from a ladder of steps, cheapest in value first,
//! until the estimated count is at or under the target:
//! 1. the contents of file writes older than the kept turns (the file holds them);
//! 2. results the agent never used later: trimmed to head and tail, then cleared, oldest first;
//! 3. results it used (their details are in its later messages, [`super::usage`]): trimmed to
//!    head, tail and the lines it cited, then cleared to the cited lines, then cleared, those
//!    used longest ago first.
//!
//! Results of the latest `keepLastAssistantTurns` turns are never cut. Every cut's copy is
//! saved before the cut is made: the driver stores [`CutCopy`]'s record (the offload record,
//! [`super::recovery::RecordHeader`]) and only confirmed cuts enter the decision.

mod apply;
mod cut;
mod decide;

pub(crate) use apply::apply;
pub use apply::Applied;
pub use cut::{stored_copy, Cut, CutCopy, DecisionMemo, Shape};
pub(crate) use decide::{decide, offload_newest};
pub use decide::{is_cut, Decided};
