//! A rolling window's end: the summary checked and written (or the iterations kept raw),
//! the output, the figures and the report.

use crate::context::fold::{self, Folding, Phase, SummaryOutcome};
use crate::context::marker::{blocks_of, marker_message, marker_shape, MarkerInfo, MarkerShape};
use crate::context::state::Chain;
use crate::context::Outcome;
use crate::counting::{CountMessagesError, CountMessagesOptions, Counter, MessagesCount};
use crate::messages::{CompactionMarker, Conversation, Message, Role};

use super::pieces::*;
use super::plan::*;
use super::report::*;

impl RollingPlan {
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
    pub(super) fn failed(mut self, phase: Phase, reason: String, counter: &mut Counter) -> Rolled {
        self.state.fail(self.total, phase, &reason);
        self.state_changed = true;
        let mut out = self.output(None, Some(reason), counter);
        out.report.outcome = RollingOutcome::Failed;
        out.report.phase = Some(phase);
        out
    }

    /// The output with the summary standing for the first `folded` iterations (the state's),
    /// the rest raw.
    pub(super) fn output(
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
    pub(super) fn count(
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

    pub(super) fn report(
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
