//! The memory flush, and the compaction a prepare makes when cuts cannot make room.

use std::cell::OnceCell;

use crate::context::compact;
use crate::context::flush::{self, FlushOutcome};
use crate::context::machine::Machine;
use crate::context::Action;
use crate::counting::Counter;

use super::options::*;
use super::prepare::*;
use super::report::*;

impl Prepare {
    /// Flush (when due), then compact: once per prepare.
    pub(super) fn compact_now(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
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

    pub(super) fn flush_due(&self, tokens: u64, budget: Budget) -> bool {
        self.call.flush && !self.state.flushed() && tokens > budget.flush_at
    }

    /// Asks for the flush when due; `compact` says whether a compaction follows it.
    pub(super) fn then_flush(&mut self, due: bool, compact: bool) -> Result<(), PrepareError> {
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
    pub(super) fn flushed(
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
    pub(super) fn start_compaction(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
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

    /// The compaction, once its plan has every outcome it asked for (the archive's, the
    /// summary's): adopted if it was made, else the cuts that were to wait for it.
    ///
    /// # Errors
    /// A conversation that cannot be counted (in practice never: it was counted).
    pub(super) fn compacted_now(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        let Stage::Compacting(plan) = std::mem::replace(&mut self.stage, Stage::Done) else {
            return Ok(());
        };
        let stored = plan.stored_bytes();
        let done = (*plan).done(counter);
        let applied = matches!(
            done.report.outcome,
            compact::CompactOutcome::Compacted | compact::CompactOutcome::Reapplied
        );
        self.state.keeper.stats.stored_bytes += stored;
        if applied {
            self.base_origin = compose(&done.origin, &self.base_origin);
            self.base = done.conversation;
            self.base_sites = OnceCell::new();
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
}
