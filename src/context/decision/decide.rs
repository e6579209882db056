//! A new decision: the ladder of steps, walked greedily down to the target, and the offload of
//! the newest exchange's results when they alone cannot fit.

use std::collections::HashMap;

use super::apply::*;
use super::cut::*;
use crate::context::usage::{self, UsageIndex};
use crate::context::{result_at, Action, ResultSite, Turns};
use crate::messages::{Conversation, PairingGraph, PartRef};

/// One step a new decision may take: a cut of target `target`, made when the greedy walk
/// reaches it.
#[derive(Clone, Debug)]
pub(super) struct Step {
    pub(super) phase: u8,
    pub(super) order: u64,
    pub(super) target: usize,
    pub(super) action: Action,
    pub(super) lines: Vec<u32>,
}

/// A new decision: the cuts to make (the standing ones, deepened or added to), the saves
/// their copies need, and the estimated count once they are made.
#[derive(Debug)]
pub struct Decided {
    /// Every cut of the decision.
    pub cuts: Vec<Cut>,
    /// The copies to store first (for cuts whose copy is not known to be stored).
    pub copies: Vec<CutCopy>,
    /// The count estimated after the cuts.
    pub estimate: u64,
    /// Whether a result was cleared.
    pub cleared: bool,
}

/// The phases of a decision's ladder, cheapest in what the agent loses first (see the
/// module's documentation); within a phase, the oldest first (results the agent used: those
/// whose latest use is oldest).
pub(super) mod phase {
    pub const WRITES: u8 = 0;
    pub const SUPERSEDED: u8 = 1;
    pub const TRIM_UNUSED: u8 = 2;
    pub const CLEAR_UNUSED: u8 = 3;
    pub const TRIM_USED: u8 = 4;
    pub const CLEAR_TO_CITED: u8 = 5;
    pub const CLEAR_USED: u8 = 6;
}

/// Decides which cuts bring `tokens` (the count with `standing` applied) to `target`, at the
/// horizon `end` (the message after the exchange of the latest call). `stored(id)` says
/// whether a copy is known to be stored already. Every step past what the target needs is
/// left out; when every step is not enough, all of them are taken. A step's text is made only
/// when the walk reaches it.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn decide(
    conv: &Conversation,
    sites: &[ResultSite],
    graph: &PairingGraph,
    end: usize,
    standing: &[Cut],
    tokens: u64,
    target: u64,
    shape: &Shape<'_>,
    memo: &mut DecisionMemo,
    stored: impl Fn(&str) -> bool,
) -> Decided {
    let turns = Turns::until(conv, Some(end));
    let usage = memo.usage(conv, end);
    let writes = writes_of(conv, shape.evict, graph, Some(end));
    let keep = shape.prune.keep_last_assistant_turns;
    let targets = targets(conv, sites, &writes);
    let standing_of: HashMap<(&str, Option<&str>, bool), &Cut> = standing
        .iter()
        .map(|c| {
            (
                (
                    c.call.as_str(),
                    c.field.as_deref(),
                    c.action == Action::EvictInput,
                ),
                c,
            )
        })
        .collect();

    // NOTE: a call made again later with the same tool and input (a test run again, a file
    // read again) has a newer result: the older one is superseded.
    let mut latest_of = UsageIndex::default();
    let signatures: Vec<Option<usage::Detail>> = (targets.iter())
        .map(|t| match t.field {
            None if t.at.message < end && t.call_at != t.at => conv
                .messages()
                .get(t.call_at.message)
                .and_then(|m| memo.signature(m, t.call_at.part)),
            _ => None,
        })
        .collect();
    for (t, sig) in targets.iter().zip(&signatures) {
        if let Some(sig) = sig {
            latest_of.record(t.at.message, &[*sig]);
        }
    }
    let mut steps: Vec<Step> = Vec::new();
    // each target's tokens now (with its standing cut), its level, and its hash
    let mut now: Vec<(u64, u8, String)> = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let Some(message) = conv.messages().get(t.at.message) else {
            now.push((0, 3, String::new()));
            continue;
        };
        let input = t.field.is_some();
        let hash = shape.hash(memo, message, t);
        let (mut tokens_now, mut level) = (0, shape.input(memo, message, t).0);
        let standing_cut = standing_of.get(&(t.call, t.field, input)).copied();
        if let Some(cut) = standing_cut.filter(|c| c.hash == hash) {
            let rendered = shape.render(memo, message, t, cut);
            if rendered.after < rendered.before {
                tokens_now = rendered.after;
                level = cut.level();
            }
        }
        let cuttable = level < 3 && t.at.message < end;
        if tokens_now == 0 && cuttable {
            tokens_now = shape.tokens(memo, message, t);
        }
        now.push((tokens_now, level, hash));
        if !cuttable {
            continue;
        }
        let age = turns.age(t.call_at);
        let mut step = |phase, order, action, lines: Vec<u32>| {
            steps.push(Step {
                phase,
                order,
                target: i,
                action,
                lines,
            });
        };
        let order = t.at.message as u64;
        if input {
            // a file write's content: the file holds it
            if age >= shape.evict.keep_last_assistant_turns {
                step(phase::WRITES, order, Action::EvictInput, Vec::new());
            }
            continue;
        }
        if age < keep || !shape.prune.tools.accepts(t.tool) {
            continue;
        }
        // a file write's long result: a note naming the file
        let chars = shape.chars(memo, message, t);
        if t.path.is_some() && chars > shape.evict.result_chars {
            step(phase::WRITES, order, Action::EvictResult, Vec::new());
            continue;
        }
        let (lines, latest) = if level > 0 {
            (Vec::new(), None)
        } else {
            shape.cited(memo, message, t, &usage)
        };
        let long = level < 1 && chars > shape.prune.soft_trim_chars;
        let superseded = signatures
            .get(i)
            .copied()
            .flatten()
            .and_then(|sig| latest_of.last_use(sig))
            .is_some_and(|latest| latest > t.at.message);
        if superseded {
            step(phase::SUPERSEDED, order, Action::HardClear, lines);
            continue;
        }
        match latest {
            None => {
                if long {
                    step(phase::TRIM_UNUSED, order, Action::SoftTrim, Vec::new());
                }
                step(phase::CLEAR_UNUSED, order, Action::HardClear, Vec::new());
            }
            Some(used) => {
                // NOTE: those used longest ago go first.
                let order = ((used as u64) << 32) | order;
                if long {
                    step(phase::TRIM_USED, order, Action::SoftTrim, lines.clone());
                }
                if level < 2 && !lines.is_empty() {
                    step(phase::CLEAR_TO_CITED, order, Action::HardClear, lines);
                }
                step(phase::CLEAR_USED, order, Action::HardClear, Vec::new());
            }
        }
    }
    crate::sort::sort_by_key(&mut steps, |s| {
        crate::sort::fields(u64::from(s.phase), s.order)
    });

    let mut chosen: Vec<Option<Cut>> = vec![None; targets.len()];
    let mut estimate = tokens;
    for step in steps {
        if estimate <= target {
            break;
        }
        let (Some(t), Some((current, level, hash))) =
            (targets.get(step.target), now.get_mut(step.target))
        else {
            continue;
        };
        let step_level = level_of(step.action, !step.lines.is_empty());
        let Some(message) = conv.messages().get(t.at.message) else {
            continue;
        };
        if step_level <= *level {
            continue;
        }
        let cut = Cut {
            call: t.call.to_owned(),
            action: step.action,
            id: shape.id(memo, message, t),
            hash: hash.clone(),
            lines: step.lines,
            field: t.field.map(str::to_owned),
        };
        let after = shape.render(memo, message, t, &cut).after;
        if after >= *current {
            continue;
        }
        estimate = estimate.saturating_sub(*current - after);
        *current = after;
        *level = step_level;
        if let Some(slot) = chosen.get_mut(step.target) {
            *slot = Some(cut);
        }
    }

    // the decision: the standing cuts not deepened, and the chosen ones, in message order
    let mut cuts: Vec<(PartRef, u64, Cut)> = Vec::new();
    let mut copies: Vec<CutCopy> = Vec::new();
    let mut cleared = false;
    for (i, t) in targets.iter().enumerate() {
        let input = t.field.is_some();
        let cut = match chosen.get_mut(i).and_then(Option::take) {
            Some(cut) => {
                let fresh = !stored(&cut.id)
                    && conv
                        .messages()
                        .get(t.at.message)
                        .is_none_or(|m| shape.input(memo, m, t).1.is_none());
                if let (Some(message), true) = (conv.messages().get(t.at.message), fresh) {
                    if !copies.iter().any(|c| c.id() == cut.id) {
                        copies.push(shape.save(memo, message, t, &cut.id));
                    }
                }
                cleared |= cut.action == Action::HardClear;
                cut
            }
            None => match standing_of.get(&(t.call, t.field, input)) {
                Some(cut) => (*cut).clone(),
                None => continue,
            },
        };
        cuts.push((t.at, t.slot, cut));
    }
    crate::sort::sort_by_key(&mut cuts, |(at, slot, _)| {
        crate::sort::fields(((at.message as u64) << 24) | at.part as u64, *slot)
    });
    Decided {
        cuts: cuts.into_iter().map(|(_, _, c)| c).collect(),
        copies,
        estimate,
        cleared,
    }
}

/// Whether the text of a result was cut by a decision (or an offload) and names its copy.
pub fn is_cut(text: &str) -> bool {
    level_on_input(text) > 0
}

/// The offloads the newest exchange needs when it cannot fit whole: its results over the
/// offload limit, largest first, until `head` (the system prompt and task) and what is left
/// of the exchange fit `budget`. `None` when it fits (the model reads what it just asked for
/// whole) or nothing can be offloaded.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn offload_newest(
    conv: &Conversation,
    sites: &[ResultSite],
    standing: &[Cut],
    head: u64,
    budget: u64,
    shape: &Shape<'_>,
    memo: &mut DecisionMemo,
    stored: impl Fn(&str) -> bool,
) -> Option<Decided> {
    let last = conv
        .messages()
        .iter()
        .rposition(|m| m.role() == crate::messages::Role::Assistant)?;
    let newest: Vec<&ResultSite> = sites.iter().filter(|s| s.call_at.message == last).collect();
    let mut sized: Vec<(u64, usize, Target<'_>)> = Vec::new();
    let mut total = head;
    for (i, site) in newest.iter().enumerate() {
        let Some(call) = site.call_id.as_deref() else {
            continue;
        };
        let Some((_, read)) = result_at(conv, site.at) else {
            continue;
        };
        let t = Target::result(site, call, read.text, None);
        let message = conv.messages().get(site.at.message)?;
        let tokens = shape.tokens(memo, message, &t);
        total += tokens;
        let excluded = t
            .tool
            .is_some_and(|name| shape.offload.excludes(Some(name)));
        if tokens > shape.offload.limit() && shape.input(memo, message, &t).0 == 0 && !excluded {
            sized.push((tokens, i, t));
        }
    }
    if total <= budget || sized.is_empty() {
        return None;
    }
    // largest first; ties in order
    crate::sort::sort_by_key(&mut sized, |(tokens, i, _)| {
        crate::sort::fields(u64::MAX - *tokens, *i as u64)
    });
    let mut cuts: Vec<Cut> = standing.to_vec();
    let mut copies: Vec<CutCopy> = Vec::new();
    for (tokens, _, t) in sized {
        if total <= budget {
            break;
        }
        let message = conv.messages().get(t.at.message)?;
        let hash = shape.hash(memo, message, &t);
        let id = shape.id(memo, message, &t);
        let cut = Cut {
            call: t.call.to_owned(),
            action: Action::Offload,
            id: id.clone(),
            hash,
            lines: Vec::new(),
            field: None,
        };
        let after = shape.render(memo, message, &t, &cut).after;
        total = total.saturating_sub(tokens.saturating_sub(after));
        if !stored(&id) && !copies.iter().any(|c| c.id() == id) {
            copies.push(shape.save(memo, message, &t, &id));
        }
        cuts.retain(|c| !(c.call == cut.call && c.field.is_none()));
        cuts.push(cut);
    }
    Some(Decided {
        cuts,
        copies,
        estimate: total,
        cleared: false,
    })
}
