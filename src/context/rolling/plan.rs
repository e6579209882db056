//! Planning a rolling window: the sections read, the stored state matched, what folds
//! decided, the archive and the summary request prepared.

use serde_json::json;

use crate::context::archive::{ArchiveSaves, ArchiveSpan};
use crate::context::compact::has_results;
use crate::context::fold::{self, SummaryRequest};
use crate::context::machine::{Event, FoldSteps, Machine, Need};
use crate::context::marker::{blocks_of, latest_marker};
use crate::context::state::{chain, Chain};
use crate::context::Measure;
use crate::counting::{CountMessagesError, CountMessagesOptions, Counter, MessagesCount};
use crate::messages::{
    parse_messages_value, CompactionMarker, Conversation, Format, Message, MessagesOptions,
    PartKind, PartRef, Role,
};

use super::options::*;
use super::pieces::*;
use super::report::*;
use super::state::*;

/// A rolling window, planned.
#[derive(Clone, Debug)]
pub struct RollingPlan {
    pub(super) input: Conversation,
    pub(super) template: Conversation,
    pub(super) options: RollingOptions,
    pub(super) measure: Measure,
    pub(super) format: Format,
    pub(super) head: Vec<Piece>,
    pub(super) goal: Option<usize>,
    pub(super) input_marker: Option<InputMarker>,
    pub(super) iterations: Vec<Vec<Piece>>,
    pub(super) costs: Vec<u64>,
    pub(super) offset: u64,
    pub(super) total: u64,
    pub(super) state: RollingState,
    pub(super) state_changed: bool,
    pub(super) state_reset: Option<String>,
    pub(super) budgets: Budgets,
    pub(super) instructions_cut: bool,
    pub(super) goal_cut: bool,
    pub(super) goal_tokens: u64,
    pub(super) trigger: Option<Trigger>,
    pub(super) held: Option<String>,
    pub(super) fold: Option<Fold>,
    pub(super) archive: Option<ArchiveSpan>,
    pub(super) request: Option<SummaryRequest>,
    pub(super) tokens_before: u64,
    pub(super) estimated: bool,
    /// What the driver answered so far.
    pub(super) steps: FoldSteps,
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
        steps: FoldSteps::default(),
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
    pub(super) fn reconcile(&mut self) {
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
    pub(super) fn chain_of(&self, from: usize, to: usize, start: Chain) -> Chain {
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

    pub(super) fn local(&self, absolute: u64) -> usize {
        usize::try_from(absolute.saturating_sub(self.offset)).unwrap_or(usize::MAX)
    }

    pub(super) fn every(&self) -> u64 {
        self.options.resummarize_every as u64
    }

    /// Whether a fold is due and up to which iteration; `fixed` is what the instructions, the
    /// goal and the framing count.
    pub(super) fn decide(&mut self, fixed: u64) {
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
    pub(super) fn prepare(&mut self) {
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
        fold.key = crate::context::archive::archive_key(&self.options.session_id, &name);
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
    pub(super) fn goal_text(&self) -> Option<String> {
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
}

/// The archive, then the summary ([`FoldSteps`]).
impl Machine for RollingPlan {
    type Output = Rolled;

    fn next(&self) -> Need<'_> {
        self.steps.next(None, self.saves(), self.request.as_ref())
    }

    fn handle(&mut self, event: Event) {
        self.steps.handle(event);
    }

    fn archive_saves(&self) -> Option<ArchiveSaves<'_>> {
        Some(self.saves())
    }

    /// The fold applied if every step went well, else the iterations raw.
    fn done(mut self, counter: &mut Counter) -> Rolled {
        let (archive, summary, _) = self.steps.take();
        self.finish(&archive, summary, counter)
    }
}
