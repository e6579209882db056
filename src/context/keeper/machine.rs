//! A prepare's steps: the stored compactions and the standing decision re-applied, a new
//! decision made, its cuts adopted once their copies are stored.

use std::cell::OnceCell;

use crate::context::archive;
use crate::context::compact;
use crate::context::decision::{self, Cut, DecisionMemo, Shape};
use crate::context::machine::{Event, Machine, Need};
use crate::context::state::{Horizon, SessionState};
use crate::context::{
    result_sites, result_sites_paired, Action, Failure, Outcome, ResultSite, Turns,
};
use crate::counting::{Counter, MessageKey, ModelOverrides};
use crate::messages::{pair_tools, Conversation, Format, PairingGraph, Role};

use super::fast::Unrecorded;
use super::options::*;
use super::prepare::*;
use super::report::*;

impl Prepare {
    /// Starts a prepare of `conv` (as given by the host) with the session's stored state.
    ///
    /// # Errors
    /// A conversation that cannot be counted with these options.
    pub fn start(
        conv: Conversation,
        options: &KeeperOptions,
        call: Call,
        state: SessionState,
        counter: &mut Counter,
    ) -> Result<Prepare, PrepareError> {
        let n = conv.messages().len();
        let mut report = PrepareReport::new();
        let budget = match (options.enabled, options.budget()) {
            (false, _) => {
                report.reason = Some("management is off (enabled: false)".to_owned());
                None
            }
            (true, Err(reason)) => {
                report.reason = Some(reason);
                None
            }
            (true, Ok(budget)) => Some(budget),
        };
        if let Some(model) = options.model.as_deref() {
            // NOTE: the session's calibration (recordUsage), or none, on this keeper's counter
            // (another session of the keeper may have set another); a model counted exactly
            // is left alone by `calibrate`.
            let ppm = state.keeper.calibration_ppm.unwrap_or(1_000_000);
            counter.calibrate(model, &ModelOverrides::default(), 1_000_000, ppm);
        }
        let (count, keys) =
            counter.count_keyed(&conv, &options.count_options(conv.format()), &[])?;
        report.tokens_before = count.total;
        report.estimated = !count.exact;
        let origin: Vec<Option<usize>> = (0..n).map(Some).collect();
        let input_roles = conv.messages().iter().map(|m| m.role()).collect();
        let stage = match budget {
            None => {
                report.managed = false;
                report.decision = Decision::Off;
                Stage::Done
            }
            Some(_) => Stage::Start,
        };
        report.budget = budget;
        Ok(Prepare {
            options: options.clone(),
            tiers: Tiers::of(options, &call.session_id, budget),
            call,
            budget,
            stage,
            base: conv.clone(),
            base_sites: OnceCell::new(),
            memo: DecisionMemo::new(),
            base_origin: origin.clone(),
            conversation: conv,
            origin,
            state,
            state_changed: false,
            report,
            tokens: count.total,
            input_count: (count.total, count.per_message.clone()),
            input_keys: keys.clone(),
            input_roles,
            keys,
            raw_tokens: count.uncalibrated.unwrap_or(count.total),
            input_raw: count.uncalibrated.unwrap_or(count.total),
            per_message: count.per_message,
            estimated: !count.exact,
            base_is_input: true,
            compacted: false,
            offloaded_now: false,
            fallback: None,
        })
    }

    /// Adds to the session's figures the prepares a host answered without the core since the
    /// last one that came here (the JS keeper's fast path), so that `stats` counts every
    /// prepare and `unchangedPrefix` compares with what the last of them sent.
    pub fn add_unrecorded(&mut self, unrecorded: &Unrecorded) {
        let keeper = &mut self.state.keeper;
        // NOTE: the fast calls appended to the output this state holds the hashes of, and to
        // no other (a state written since by another keeper is left as it is).
        if !unrecorded.output.is_empty()
            && keeper.output.len() == unrecorded.since.saturating_mul(8)
        {
            keeper.output.push_str(&unrecorded.output);
            self.state_changed = true;
        }
        if unrecorded.prepared > 0 {
            keeper.stats.prepared += unrecorded.prepared;
            keeper.stats.tokens_sent += unrecorded.tokens_sent;
            keeper.stats.saved.add(unrecorded.saved);
            self.state_changed = true;
        }
    }

    /// Uses `memo`, what earlier prepares of this keeper's histories cut (by message identity,
    /// so it holds across prepares of a history whose messages the host keeps parsed);
    /// [`Prepared::memo`] hands it back, swept of what this prepare did not use.
    #[must_use]
    pub fn with_memo(mut self, memo: DecisionMemo) -> Prepare {
        self.memo = memo;
        self
    }

    /// How the count read each input message: the conversation's format, the message's role
    /// and its key (a host keeps these with the message objects it recognises,
    /// [`crate::counting::Learnt::counted`]).
    pub fn input_counted(&self) -> impl Iterator<Item = (Format, Role, MessageKey)> + '_ {
        let format = self.conversation.format();
        (self.input_keys.iter())
            .zip(&self.input_roles)
            .map(move |(key, role)| (format, *role, *key))
    }

    /// What the driver must do next; [`Need::Done`] once nothing is left.
    ///
    /// # Errors
    /// A conversation that cannot be counted (it was counted once already, so in practice
    /// never), or a compaction option that is wrong.
    pub fn next(&mut self, counter: &mut Counter) -> Result<Need<'_>, PrepareError> {
        loop {
            match &self.stage {
                Stage::Start => {
                    self.begin();
                    continue;
                }
                Stage::Cutting(pending) if pending.batch.is_empty() => {
                    if pending.asked >= pending.copies.len() {
                        self.adopt(counter)?;
                    } else {
                        self.next_batch();
                    }
                    continue;
                }
                Stage::Decide => {
                    self.decide(counter)?;
                    continue;
                }
                Stage::Compacting(plan) if matches!(plan.next(), Need::Done) => {
                    self.compacted_now(counter)?;
                    continue;
                }
                Stage::Cutting(_) | Stage::Flushing(..) | Stage::Compacting(_) | Stage::Done => {
                    break
                }
            }
        }
        Ok(match &self.stage {
            Stage::Cutting(pending) => Need::Saves(pending.batch.iter().collect()),
            Stage::Flushing(request, _) => Need::Flush(request),
            Stage::Compacting(plan) => plan.next(),
            Stage::Start | Stage::Decide | Stage::Done => Need::Done,
        })
    }

    /// Takes what came of the step [`Prepare::next`] asked for.
    ///
    /// # Errors
    /// A compaction option that is wrong (when a compaction follows the flush), or a
    /// conversation that cannot be counted (in practice never: it was counted).
    pub fn handle(&mut self, event: Event, counter: &mut Counter) -> Result<(), PrepareError> {
        match (event, &mut self.stage) {
            (Event::Saved(outcomes), _) => self.saved(&outcomes, counter),
            (Event::Flushed(outcome), _) => self.flushed(outcome, counter),
            (event, Stage::Compacting(plan)) => {
                plan.handle(event);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The archive saves of the compaction [`Need::Archive`] asked for, while it waits for
    /// their outcomes.
    pub fn archive_saves(&self) -> Option<archive::ArchiveSaves<'_>> {
        match &self.stage {
            Stage::Compacting(plan) => Some(plan.saves()),
            _ => None,
        }
    }

    /// The outcomes of the saves [`Need::Saves`] asked for, in order.
    ///
    /// # Errors
    /// A conversation that cannot be counted (in practice never: it was counted).
    pub(super) fn saved(
        &mut self,
        outcomes: &[Outcome],
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        let Stage::Cutting(pending) = &mut self.stage else {
            return Ok(());
        };
        let batch = std::mem::take(&mut pending.batch);
        for (i, save) in batch.iter().enumerate() {
            let outcome = outcomes
                .get(i)
                .cloned()
                .unwrap_or_else(|| Outcome::Failed("the save has no outcome".to_owned()));
            if outcome == Outcome::Saved {
                self.state.keeper.stats.stored_bytes += save.bytes.len() as u64;
            }
            pending.outcomes.push(outcome);
        }
        pending.asked += batch.len();
        if pending.asked >= pending.copies.len() {
            self.adopt(counter)?;
        }
        Ok(())
    }

    /// Makes the next batch of copies for the driver to store.
    pub(super) fn next_batch(&mut self) {
        let Stage::Cutting(pending) = &mut self.stage else {
            return;
        };
        let mut bytes = 0;
        let mut batch = Vec::new();
        for copy in pending.copies.iter().skip(pending.asked) {
            if !batch.is_empty() && bytes + copy.len() > SAVE_BATCH_BYTES {
                break;
            }
            bytes += copy.len();
            batch.push(copy.make());
        }
        pending.batch = batch;
    }

    /// Runs `f` with this prepare, the tiers' shape and the decision memo (taken out for the
    /// call and put back).
    pub(super) fn shaped<R>(
        &mut self,
        f: impl FnOnce(&Prepare, &Shape<'_>, &mut DecisionMemo) -> R,
    ) -> R {
        let mut memo = std::mem::take(&mut self.memo);
        let out = {
            let tiers = &self.tiers;
            let shape = Shape {
                prune: &tiers.prune,
                evict: &tiers.evict,
                offload: &tiers.offload,
                session_id: &self.call.session_id,
                measure: tiers.measure,
            };
            f(self, &shape, &mut memo)
        };
        self.memo = memo;
        out
    }

    /// The stored compactions (when the host sends its full history), then the offloads of
    /// the newest exchange's results when it cannot fit whole.
    pub(super) fn begin(&mut self) {
        self.stage = Stage::Decide;
        if let Some(compact::Reapplied {
            conversation: conv,
            origin: map,
            ..
        }) = compact::reapply(&self.conversation, &self.state)
        {
            self.origin = compose(&map, &self.origin);
            self.conversation = conv;
            self.base_is_input = false;
            self.base = self.conversation.clone();
            self.base_origin = self.origin.clone();
        }
        let Some(budget) = self.budget else { return };
        // NOTE: the per-message count of the base: the input's, or (after a compaction was
        // re-applied) none; the newest exchange is then measured by its texts alone.
        let per_message = if self.base_is_input {
            self.input_count.1.clone()
        } else {
            Vec::new()
        };
        let head = head_tokens(&self.base, &per_message);
        let newest = self.shaped(|this, shape, memo| {
            let (_, sites) = this.paired();
            decision::offload_newest(
                &this.base,
                sites,
                &this.state.keeper.cuts,
                head,
                budget.compact_at,
                shape,
                memo,
                |id| this.state.keeper.offloaded.contains(id),
            )
        });
        if let Some(decided) = newest {
            self.stage = Stage::Cutting(Box::new(Pending::new(decided, Next::Decide, None)));
        }
    }

    /// Adopts the pending cuts whose copies `outcomes` confirm (one per save asked for).
    pub(super) fn adopt(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        let Stage::Cutting(pending) = std::mem::replace(&mut self.stage, Stage::Done) else {
            return Ok(());
        };
        let Pending {
            mut cuts,
            copies,
            outcomes,
            next,
            decision,
            ..
        } = *pending;
        if let Some((call, cleared)) = decision {
            self.report.decision = match cleared {
                true => Decision::Cleared,
                false => Decision::Pruned,
            };
            self.record_horizon(Horizon { call });
        }
        let offloads: std::collections::HashSet<&str> = (cuts.iter())
            .filter(|c| c.action == Action::Offload)
            .map(|c| c.id.as_str())
            .collect();
        let mut failed: Vec<&str> = Vec::new();
        for (i, copy) in copies.iter().enumerate() {
            let id = copy.id();
            match outcomes.get(i) {
                Some(Outcome::Saved) => {
                    let fresh = self.state.keeper.offloaded.insert(id.to_owned());
                    if fresh && offloads.contains(id) {
                        self.state.keeper.stats.events.offloads += 1;
                        self.offloaded_now = true;
                    }
                }
                other => {
                    let reason = match other {
                        Some(Outcome::Failed(reason)) => reason.clone(),
                        _ => "the save has no outcome".to_owned(),
                    };
                    failed.push(id);
                    let cut = cuts.iter().find(|c| c.id == id);
                    self.report.failures.push(Failure {
                        message_index: 0,
                        part_index: 0,
                        tool_name: None,
                        tool_call_id: cut.map(|c| c.call.clone()),
                        key: crate::context::offload::offload_key(&self.call.session_id, id),
                        reason,
                    });
                }
            }
        }
        if !failed.is_empty() {
            // NOTE: a cut whose copy was not stored is not made: its text stays, or keeps the
            // standing cut it had (whose copy was stored when it was made).
            let standing = std::mem::take(&mut self.state.keeper.cuts);
            cuts = cuts
                .into_iter()
                .filter_map(|cut| {
                    if !failed.contains(&cut.id.as_str()) {
                        return Some(cut);
                    }
                    standing
                        .iter()
                        .find(|s| s.call == cut.call && s.field == cut.field && s.id != cut.id)
                        .cloned()
                })
                .collect();
            self.state.keeper.stats.events.failures += failed.len() as u64;
        }
        self.set_cuts(cuts);
        let tokens = self.apply_cuts(counter)?;
        self.locate_failures();
        match next {
            Next::Decide => self.stage = Stage::Decide,
            Next::Finish => self.stage = Stage::Done,
            Next::Check => {
                self.stage = Stage::Done;
                if let Some(budget) = self.budget {
                    let flush_due = self.flush_due(tokens, budget);
                    if tokens > budget.compact_at {
                        return self.compact_now(counter);
                    }
                    return self.then_flush(flush_due, false);
                }
            }
        }
        Ok(())
    }

    /// Names the message and part of each failure by its call.
    pub(super) fn locate_failures(&mut self) {
        if self.report.failures.is_empty() {
            return;
        }
        let sites = result_sites(&self.conversation);
        for failure in &mut self.report.failures {
            let Some(call) = failure.tool_call_id.as_deref() else {
                continue;
            };
            if let Some(site) = sites.iter().find(|s| s.call_id.as_deref() == Some(call)) {
                failure.message_index = self
                    .origin
                    .get(site.at.message)
                    .copied()
                    .flatten()
                    .unwrap_or(site.at.message);
                failure.part_index = site.at.part;
                failure.tool_name.clone_from(&site.tool_name);
            }
        }
    }

    pub(super) fn set_cuts(&mut self, cuts: Vec<Cut>) {
        if self.state.keeper.cuts != cuts {
            self.state.keeper.cuts = cuts;
            self.state_changed = true;
        }
    }

    /// Re-applies the standing decision, counts, and decides what more is needed.
    pub(super) fn decide(&mut self, counter: &mut Counter) -> Result<(), PrepareError> {
        self.stage = Stage::Done;
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let tokens = self.apply_cuts(counter)?;
        let flush_due = self.flush_due(tokens, budget);
        if tokens <= budget.prune_at {
            self.report.decision = Decision::Under;
            return self.then_flush(flush_due, false);
        }
        let recent = (self.state.keeper.horizon.as_ref()).and_then(|h| self.turns_since(&h.call));
        if recent.is_some_and(|turns| turns < self.options.min_turns_between)
            && tokens <= budget.compact_at
        {
            // NOTE: a decision this recent is not re-made while the budget holds: the prefix
            // stays. Past the budget a deeper one is made at once.
            self.report.decision = Decision::Held;
            return self.then_flush(flush_due, false);
        }
        self.new_decision(budget, tokens, Next::Check, counter)
    }

    /// Makes a new decision at the latest tool call, down to the target; `next` says what
    /// follows it.
    pub(super) fn new_decision(
        &mut self,
        budget: Budget,
        tokens: u64,
        next: Next,
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        let Some(call) = self.latest_call() else {
            // no tool results to cut: only a compaction can help
            return match next {
                Next::Finish => Ok(()),
                _ => self.over_prune(budget, tokens, counter),
            };
        };
        let Some(end) = exchange_end(self.sites(), &call) else {
            return Ok(());
        };
        let target = self.target(budget);
        let decided = self.shaped(|this, shape, memo| {
            let (graph, sites) = this.paired();
            decision::decide(
                &this.base,
                sites,
                graph,
                end,
                &this.state.keeper.cuts,
                tokens,
                target,
                shape,
                memo,
                |id| this.state.keeper.offloaded.contains(id),
            )
        });
        if decided.cuts == self.state.keeper.cuts {
            // nothing more to cut: only a compaction can help
            return match next {
                Next::Finish => Ok(()),
                _ => self.over_prune(budget, tokens, counter),
            };
        }
        let (cleared, short) = (decided.cleared, decided.estimate > target);
        let pending = Box::new(Pending::new(decided, next, Some((call, cleared))));
        // NOTE: cuts that cannot make room for the turns to come would be made again at every
        // turn: a compaction makes the room, and the cuts are made (their copies stored) only
        // if it fails.
        if next == Next::Check && short && !self.compacted {
            self.fallback = Some(pending);
            return self.compact_now(counter);
        }
        self.stage = Stage::Cutting(pending);
        Ok(())
    }

    /// What a new decision aims to leave: room for `minTurnsBetween` and one more turns of the
    /// size the newest turns had (the growth measured on the newest eight), under the prune
    /// threshold; at most `pruneTarget`. A window too small for that much room gets what
    /// cutting every result older than the kept turns leaves.
    pub(super) fn target(&self, budget: Budget) -> u64 {
        self.target_with(budget, self.options.min_turns_between as u64 + 1)
    }

    pub(super) fn target_with(&self, budget: Budget, turns_of_room: u64) -> u64 {
        let turns = Turns::of(&self.base);
        let starts = turns.starts();
        let k = starts.len().min(8);
        let growth = match starts.len().checked_sub(k).and_then(|i| starts.get(i)) {
            Some(first) if k > 0 => {
                let newest: u64 = self.per_message.iter().skip(first.message).sum();
                newest / k as u64
            }
            _ => 0,
        };
        let room = growth.saturating_mul(turns_of_room);
        budget
            .prune_at
            .saturating_sub(room)
            .min(budget.prune_target)
    }

    /// Over the compaction threshold after the cuts: flush (when due), then compact.
    pub(super) fn over_prune(
        &mut self,
        budget: Budget,
        tokens: u64,
        counter: &mut Counter,
    ) -> Result<(), PrepareError> {
        if tokens <= budget.compact_at {
            return Ok(());
        }
        self.compact_now(counter)
    }

    /// Records a new standing decision.
    pub(super) fn record_horizon(&mut self, horizon: Horizon) {
        self.state.keeper.stats.events.prunes += 1;
        self.state.keeper.horizon = Some(horizon);
        self.state_changed = true;
    }

    /// Applies the standing cuts to the base conversation into the working one; returns its
    /// count.
    pub(super) fn apply_cuts(&mut self, counter: &mut Counter) -> Result<u64, PrepareError> {
        let applied = self.shaped(|this, shape, memo| {
            let (graph, sites) = this.paired();
            decision::apply(
                this.base.clone(),
                &this.state.keeper.cuts,
                sites,
                graph,
                shape,
                memo,
            )
        });
        let mut origin = self.base_origin.clone();
        mark(&mut origin, &applied.edited);
        // NOTE: nothing edited since the input was counted: its count stands.
        if self.base_is_input && applied.edited.is_empty() {
            self.tokens = self.input_count.0;
            self.raw_tokens = self.input_raw;
            self.per_message.clone_from(&self.input_count.1);
            self.keys.clone_from(&self.input_keys);
        } else {
            let known = self.known_keys(&origin);
            let (count, keys) = counter.count_keyed(
                &applied.conversation,
                &self.options.count_options(applied.conversation.format()),
                &known,
            )?;
            self.tokens = count.total;
            self.raw_tokens = count.uncalibrated.unwrap_or(count.total);
            self.per_message = count.per_message;
            self.estimated = !count.exact;
            self.keys = keys;
        }
        self.report.saved.offload = applied.offloaded.tokens_saved;
        self.report.saved.prune = applied.pruned.tokens_saved;
        self.report.saved.evict = applied.evicted.tokens_saved;
        self.report.offloaded = applied.offloaded.edits;
        self.report.pruned = applied.pruned.edits;
        self.report.evicted = applied.evicted.edits;
        self.conversation = applied.conversation;
        self.origin = origin;
        Ok(self.tokens)
    }

    /// The key of each message `origin` maps to an input message it still is.
    pub(super) fn known_keys(&self, origin: &[Option<usize>]) -> Vec<Option<MessageKey>> {
        origin
            .iter()
            .map(|o| o.and_then(|i| self.input_keys.get(i).copied()))
            .collect()
    }

    /// Assistant turns begun after the exchange of `call` (`None` when it is not there).
    pub(super) fn turns_since(&self, call: &str) -> Option<usize> {
        let end = exchange_end(self.sites(), call)?;
        let all = Turns::of(&self.base);
        let before = Turns::until(&self.base, Some(end));
        Some(all.len().saturating_sub(before.len()))
    }

    /// The id of the latest tool call that has its result.
    pub(super) fn latest_call(&self) -> Option<String> {
        self.sites().iter().rev().find_map(|s| s.call_id.clone())
    }

    /// The base's tool results.
    pub(super) fn sites(&self) -> &[ResultSite] {
        &self.paired().1
    }

    /// The base's tool pairing and tool results.
    pub(super) fn paired(&self) -> &(PairingGraph, Vec<ResultSite>) {
        self.base_sites.get_or_init(|| {
            let graph = pair_tools(&self.base);
            let sites = result_sites_paired(&self.base, &graph);
            (graph, sites)
        })
    }
}
