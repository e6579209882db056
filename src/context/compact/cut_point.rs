//! Where a compaction cuts: the head kept ahead of the marker, the span, and the split before
//! the recent turns (never inside a tool exchange; inside an AI SDK `UIMessage` only at a step).

use super::*;

impl CompactPlan {
    /// Finds the head, the span and the split, and prepares the saves and the requests.
    pub(super) fn locate(&mut self, counter: &mut Counter) {
        let messages = self.conversation.messages();
        let n = messages.len();
        let window = self.options.window();
        // the latest marker, ours or the provider's: the span starts at ours (it is
        // replaced) or after theirs (never split off)
        let mut first_summarized = None;
        let (start, previous) = match latest_marker(messages) {
            Some((at, Some(marker))) => (at, Some(marker)),
            Some((at, None)) => (at + 1, None),
            None => {
                let systems = leading_systems(messages);
                let mut head = systems;
                if let Some(first) = messages.get(systems) {
                    if first.role() == Role::User && !has_results(first) {
                        let tokens = self.per_message.get(systems).copied().unwrap_or(0);
                        if tokens.saturating_mul(4) > window {
                            first_summarized = Some(systems);
                        } else {
                            head = systems + 1;
                        }
                    }
                }
                (head, None)
            }
        };
        let (mut split, split_part) = self.split(start, counter);
        let body_start = start + usize::from(previous.is_some());
        if (split, split_part) <= (body_start, 0) {
            self.reason = Some(if n == 0 {
                "the conversation is empty".to_owned()
            } else {
                "nothing to compact: every message after the kept head is among the recent turns"
                    .to_owned()
            });
            return;
        }
        // the marker's shape, and the messages it replaces
        let format = self.conversation.format();
        let role = |i: usize| messages.get(i).map(Message::role);
        let previous_lead = match (&previous, messages.get(start)) {
            (Some(_), Some(m)) if m.parts().len() > 1 => {
                let mut blocks = blocks_of(m);
                blocks.pop();
                blocks
            }
            _ => Vec::new(),
        };
        let allowed = allowed_cuts(&self.conversation);
        let (head, shape, lead) = if split_part > 0 {
            // NOTE: only an AI SDK `UIMessage` is cut at a step, and only Anthropic's format
            // needs a marker shape other than a user message of its own.
            (start, MarkerShape::User, Vec::new())
        } else if previous_lead.is_empty() {
            let before = start.checked_sub(1);
            let found = (split..n).find_map(|s| {
                let ok = allowed.get(s).copied().unwrap_or(false);
                let shape = marker_shape(format, before.and_then(role), role(s));
                ok.then_some(shape).flatten().map(|shape| (s, shape))
            });
            let Some((s, shape)) = found else {
                self.reason = Some(
                    "nothing to compact: no cut leaves the roles alternating as Anthropic requires"
                        .to_owned(),
                );
                return;
            };
            split = s;
            match (shape, before) {
                (MarkerShape::AfterBlocks, Some(b)) => {
                    (b, shape, messages.get(b).map(blocks_of).unwrap_or_default())
                }
                _ => (start, shape, Vec::new()),
            }
        } else {
            // NOTE: the marker stays a block after the first request's, in a user message, so
            // in Anthropic's format the recent turns must not start with a user message: the
            // cut moves later, or else earlier (keeping more).
            let fits = |s: &usize| {
                allowed.get(*s).copied().unwrap_or(false)
                    && (format != Format::Anthropic || role(*s) != Some(Role::User))
            };
            let found = (split..n)
                .find(fits)
                .or_else(|| (body_start + 1..split).rev().find(fits));
            let Some(s) = found else {
                self.reason = Some(
                    "nothing to compact: no cut leaves the roles alternating as Anthropic requires"
                        .to_owned(),
                );
                return;
            };
            split = s;
            (start, MarkerShape::AfterBlocks, previous_lead)
        };
        let systems = leading_systems(messages);
        let first_request = messages
            .get(systems)
            .is_some_and(|m| m.role() == Role::User && !has_results(m))
            .then_some(systems);
        let work = Work {
            start,
            head,
            shape,
            lead,
            first_request,
            split,
            split_part,
            previous,
            first_summarized,
        };
        self.prepare(&work);
        self.work = Some(work);
    }

    /// Where the recent messages start, at or after `start`: a message, and the part of it
    /// the cut falls before (0: before the whole message; else a `step-start` of an AI SDK
    /// `UIMessage` from the assistant, which holds every step of a reply).
    pub(super) fn split(&self, start: usize, counter: &mut Counter) -> (usize, usize) {
        let messages = self.conversation.messages();
        let n = messages.len();
        let allowed = allowed_cuts(&self.conversation);
        let ok = |s: usize| allowed.get(s).copied().unwrap_or(false);
        let steps = step_cuts(&self.conversation, start);
        // the latest cut that keeps at least the last message (and its exchange), or the
        // last step of it
        let last_message_cut = (start..n).rev().find(|&s| ok(s));
        let last_cut = match (last_message_cut, steps.last()) {
            (Some(s), Some(&step)) => (s, 0).max(step),
            (Some(s), None) => (s, 0),
            (None, Some(&step)) => step,
            (None, None) => return (start, 0),
        };
        let wanted = match self.options.keep_recent_tokens {
            Some(budget) => {
                let mut kept = 0u64;
                let mut s = n;
                for i in (start..n).rev() {
                    let t = self.per_message.get(i).copied().unwrap_or(0);
                    if kept + t > budget {
                        break;
                    }
                    kept += t;
                    s = i;
                }
                // the message that did not fit may be cut at a step: its latest steps that do
                let inside = s.checked_sub(1).filter(|&i| i >= start).and_then(|i| {
                    self.steps_within(i, &steps, budget.saturating_sub(kept), counter)
                });
                // keeping less is what a token budget means: the next cut after
                inside.unwrap_or_else(|| (s..=n).find(|&c| ok(c)).map_or(last_cut, |c| (c, 0)))
            }
            None => {
                let keep = self
                    .options
                    .keep_recent_turns
                    .unwrap_or(DEFAULT_KEEP_RECENT_TURNS);
                // a turn starts at each assistant message and each step of a UIMessage
                let turns: Vec<PartRef> = Turns::of(&self.conversation)
                    .starts()
                    .iter()
                    .copied()
                    .filter(|t| t.message >= start)
                    .collect();
                let Some(&turn) = turns.len().checked_sub(keep).and_then(|k| turns.get(k)) else {
                    return (start, 0);
                };
                if turn.part > 0 {
                    // a step of a UIMessage: the cut before it, if no exchange crosses it
                    let at = (turn.message, turn.part);
                    if steps.contains(&at) {
                        return at.min(last_cut);
                    }
                }
                // the user message that opened the turn stays with it
                let mut s = turn.message;
                if s > start
                    && messages
                        .get(s - 1)
                        .is_some_and(|m| m.role() == Role::User && !has_results(m))
                {
                    s -= 1;
                }
                // keeping a turn whole is what a turn count means: the cut before
                ((start..=s).rev().find(|&c| ok(c)).unwrap_or(start), 0)
            }
        };
        wanted.min(last_cut)
    }

    /// The earliest step cut inside message `i` whose steps from it on count at most
    /// `room` tokens (each step counted on its own, framing included, so the sum is over
    /// rather than under), if any.
    pub(super) fn steps_within(
        &self,
        i: usize,
        steps: &[(usize, usize)],
        room: u64,
        counter: &mut Counter,
    ) -> Option<(usize, usize)> {
        let message = self.conversation.messages().get(i)?;
        let cuts: Vec<usize> = steps.iter().filter(|c| c.0 == i).map(|c| c.1).collect();
        let measure = Measure::for_model(self.options.model.as_deref());
        let mut end = message.parts().len();
        let mut kept = 0u64;
        let mut found = None;
        for &p in cuts.iter().rev() {
            let piece = message.with_parts_range(p, end)?;
            kept += single_count(&piece, &self.conversation, &self.options, &measure, counter);
            if kept > room {
                break;
            }
            found = Some((i, p));
            end = p;
        }
        found
    }
}
