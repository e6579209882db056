//! The fast path: a prepare answered from the last one, without reading the history again.
//!
//! When a history only grew by messages that need nothing (none may hold a result the full
//! prepare would offload) and its count stays under the line, the full prepare would decide
//! nothing new: it would send what it sent last time with the new messages appended. The
//! driver keeps what it sent (the objects) and hands the new messages and the counts (through
//! the keeper's memo, so old messages are not read again); [`Standing::answer`] decides, from
//! the figures of the last answer, whether it stands, and with what figures.

use crate::context::state::SavedTokens;
use crate::context::turn_starts;
use crate::counting::message_key;
use crate::messages::Message;

use super::options::Budget;
use super::prepare::output_hashes;
use super::report::Decision;

/// How far past its line a history's new messages, added to what the last call sent, may reach
/// and still be counted whole: more than a list's own tokens (the reply's priming, in both
/// counts). Past it the full prepare decides, as it would anyway unless a new turn dropped more
/// earlier thinking than the margin.
pub const FAST_MARGIN_TOKENS: u64 = 256;

/// The figures of a session's last answer, and the lines a new one must stay under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing {
    /// The tokens of the history it was given.
    pub tokens_before: u64,
    /// The tokens of what it sent.
    pub tokens_after: u64,
    /// The turns its decision still holds (`report.holdsFor`).
    pub holds_for: usize,
    /// The prune threshold, under the flush threshold when the host flushes.
    ceiling: u64,
    /// The compaction threshold, likewise: the line while a decision holds.
    held_ceiling: u64,
    prune_at: u64,
    offload_at: u64,
}

/// A prepare the fast path answered: the last output with the new messages appended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The tokens of the history.
    pub tokens_before: u64,
    /// The tokens of what is sent.
    pub tokens_after: u64,
    /// [`Decision::Held`] over the prune threshold (a decision holds), else
    /// [`Decision::Under`].
    pub decision: Decision,
    /// The turns the standing decision still holds.
    pub holds_for: usize,
    /// The new messages' hashes, as the session state holds its last output's: handed to the
    /// next full prepare ([`super::Prepare::add_unrecorded`]), they let its
    /// `unchangedPrefix` count the messages the fast calls sent.
    pub output: String,
}

/// What the prepares the fast path answered since the last full one add to the session: its
/// state is written by full prepares only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unrecorded {
    /// Prepares answered.
    pub prepared: u64,
    /// The tokens they sent, in all.
    pub tokens_sent: u64,
    /// What the standing cuts saved in them.
    pub saved: SavedTokens,
    /// The messages of the output the state holds the hashes of, which they appended to.
    pub since: usize,
    /// The hashes of the messages they appended ([`Answer::output`], one after the other).
    pub output: String,
}

impl Standing {
    /// The last answer's figures (`tokens_before`, `tokens_after`, `holds_for`) in `budget`;
    /// `flushes`: the host runs the memory flush, which a prepare past its threshold owes.
    pub fn new(
        budget: Budget,
        flushes: bool,
        tokens_before: u64,
        tokens_after: u64,
        holds_for: usize,
    ) -> Standing {
        let flush_at = if flushes { budget.flush_at } else { u64::MAX };
        Standing {
            tokens_before,
            tokens_after,
            holds_for,
            ceiling: budget.prune_at.min(flush_at),
            held_ceiling: budget.compact_at.min(flush_at),
            prune_at: budget.prune_at,
            offload_at: budget.offload_at,
        }
    }

    /// Whether `message` may hold a result the full prepare would offload: a text of more than
    /// a third of the offload threshold in bytes (a token is at least a byte) in a message
    /// that counts over half of it (`tokens`, asked only then). A message read with its long
    /// texts cut short is counted.
    pub fn may_offload(&self, message: &Message, tokens: impl FnOnce() -> u64) -> bool {
        let long = message.is_skimmed() || message.longest_text() as u64 * 3 > self.offload_at;
        long && tokens() > self.offload_at / 2
    }

    /// The answer for the history grown by `fresh` (none of which [`Standing::may_offload`]),
    /// whose count alone is `fresh_tokens`; `tokens` counts what would be sent (the last
    /// output and `fresh`), asked only when `fresh_tokens` leaves it possible. `None`: the
    /// full prepare decides. An answer becomes the standing one.
    pub fn answer(
        &mut self,
        fresh: &[Message],
        fresh_tokens: u64,
        tokens: impl FnOnce() -> u64,
    ) -> Option<Answer> {
        let turns: usize = fresh.iter().map(turn_starts).sum();
        let holds_for = self.holds_for.saturating_sub(turns);
        let ceiling = match holds_for {
            0 => self.ceiling,
            _ => self.held_ceiling,
        };
        // NOTE: a history grown clearly past the line goes to the full prepare without being
        // counted whole first: the new messages alone, on top of what was sent, tell.
        let reach = self.tokens_after.saturating_add(fresh_tokens);
        if !fresh.is_empty() && reach > ceiling.saturating_add(FAST_MARGIN_TOKENS) {
            return None;
        }
        let tokens = tokens();
        if tokens > ceiling {
            return None;
        }
        let answer = Answer {
            tokens_before: (self.tokens_before + tokens).saturating_sub(self.tokens_after),
            tokens_after: tokens,
            decision: match tokens > self.prune_at {
                true => Decision::Held,
                false => Decision::Under,
            },
            holds_for,
            output: output_hashes(&fresh.iter().map(message_key).collect::<Vec<_>>()),
        };
        self.tokens_before = answer.tokens_before;
        self.tokens_after = answer.tokens_after;
        self.holds_for = holds_for;
        Some(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{parse_messages, MessagesOptions};
    use serde_json::json;

    fn budget() -> Budget {
        Budget {
            window: 10_000,
            prune_at: 8_000,
            compact_at: 9_000,
            flush_at: 8_500,
            prune_target: 7_000,
            compact_target: 7_000,
            offload_at: 1_200,
        }
    }

    fn messages(value: serde_json::Value) -> Vec<Message> {
        let options = MessagesOptions {
            format: None,
            allow_pending_calls: true,
        };
        parse_messages(&value, &options)
            .unwrap()
            .messages()
            .to_vec()
    }

    fn turn(t: usize) -> Vec<Message> {
        messages(json!([
            {"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{t}"), "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": format!("c{t}"), "content": "ok"}
        ]))
    }

    #[test]
    fn under_the_line_the_last_answer_stands_with_the_new_figures() {
        let mut s = Standing::new(budget(), false, 12_000, 6_000, 0);
        let a = s.answer(&turn(1), 100, || 6_090).unwrap();
        assert_eq!(
            (a.tokens_before, a.tokens_after, a.decision, a.holds_for),
            (12_090, 6_090, Decision::Under, 0)
        );
        // 8 lower-case hex digits a message, as the state holds them (that they are the
        // state's: keeper::tests::the_unchanged_prefix_counts_what_the_fast_calls_sent)
        assert_eq!(a.output.len(), 16);
        assert!(a
            .output
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        assert_eq!((s.tokens_before, s.tokens_after), (12_090, 6_090));
        // past the prune threshold with no decision holding: the full prepare decides
        assert_eq!(s.answer(&turn(2), 100, || 8_001), None);
        // clearly past it: not even counted whole
        let counted = std::cell::Cell::new(false);
        let far = s.answer(&turn(3), 2_300, || {
            counted.set(true);
            0
        });
        assert!(far.is_none() && !counted.get());
    }

    #[test]
    fn a_holding_decision_lets_the_count_reach_the_compaction_threshold_for_its_turns() {
        let mut s = Standing::new(budget(), false, 20_000, 7_900, 2);
        let a = s.answer(&turn(1), 150, || 8_050).unwrap();
        assert_eq!((a.decision, a.holds_for), (Decision::Held, 1));
        // the last turn it holds for is spent: back to the prune threshold
        assert_eq!(s.answer(&turn(2), 150, || 8_200), None);
        // with the host's flush, its threshold is the line
        let mut flushing = Standing::new(budget(), true, 20_000, 7_900, 2);
        assert_eq!(flushing.answer(&turn(3), 150, || 8_600), None);
        assert!(flushing.answer(&turn(3), 150, || 8_450).is_some());
    }

    #[test]
    fn every_step_of_a_ui_message_is_a_turn() {
        let ui = messages(json!([{"id": "a", "role": "assistant", "parts": [
            {"type": "step-start"}, {"type": "text", "text": "one"},
            {"type": "step-start"}, {"type": "text", "text": "two"},
            {"type": "step-start"}, {"type": "text", "text": "three"}
        ]}]));
        let mut s = Standing::new(budget(), false, 9_000, 8_500, 4);
        let a = s.answer(&ui, 20, || 8_520).unwrap();
        assert_eq!(a.holds_for, 1, "three steps spend three turns");
        assert_eq!(a.decision, Decision::Held);
        let mut spent = Standing::new(budget(), false, 9_000, 8_500, 3);
        assert_eq!(
            spent.answer(&ui, 20, || 8_520),
            None,
            "no turn left: the prune line"
        );
    }

    #[test]
    fn a_long_text_is_counted_and_a_large_one_goes_to_the_full_prepare() {
        let s = Standing::new(budget(), false, 0, 0, 0);
        let short = &messages(json!([{"role": "user", "content": "x".repeat(400)}]))[0];
        let asked = std::cell::Cell::new(false);
        assert!(!s.may_offload(short, || {
            asked.set(true);
            0
        }));
        assert!(
            !asked.get(),
            "a text under a third of the threshold is not counted"
        );
        let long = &messages(json!([{"role": "user", "content": "x ".repeat(300)}]))[0];
        assert!(
            !s.may_offload(long, || 300),
            "long, but counted under half the threshold"
        );
        assert!(s.may_offload(long, || 601));
        let nested = &messages(
            json!([{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "write", "arguments": "y".repeat(500)}}]}]),
        )[0];
        assert!(
            s.may_offload(nested, || 700),
            "a tool call's input is a text too"
        );
    }
}
