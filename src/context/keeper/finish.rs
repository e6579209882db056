//! A prepare's end: the report's figures, Anthropic's cache breakpoints, the output.

use crate::context::compact;
use crate::context::fold::{self};
use crate::context::marker;
use crate::context::result_sites;
use crate::counting::Counter;
use crate::messages::Format;

use super::options::*;
use super::prepare::*;
use super::report::*;

impl Prepare {
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

    pub(super) fn finish_figures(&mut self) {
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
    pub(super) fn why_over(&self, budget: Budget) -> String {
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
    pub(super) fn set_breakpoints(&mut self) -> bool {
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
