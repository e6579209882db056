//! The output's pieces: iterations found, messages split and joined, texts cut to a budget.

use serde_json::Value;

use crate::context::compact::{allowed_cuts, has_results};
use crate::context::state::Chain;
use crate::context::text::{utf16_len, utf16_prefix, utf16_suffix};
use crate::context::{Measure, Turns};
use crate::messages::{CompactionMarker, Conversation, Message, PartKind, PartRef, Role};

/// A message of the output: its JSON model and the input message it is, when it is one whole.
#[derive(Clone, Debug)]
pub(super) struct Piece {
    pub(super) message: Message,
    /// The input message it comes from.
    pub(super) index: usize,
    /// Whether it is that message whole and untouched.
    pub(super) whole: bool,
    /// The parts of that message it holds.
    pub(super) parts: (usize, usize),
}

impl Piece {
    pub(super) fn origin(&self) -> Option<usize> {
        self.whole.then_some(self.index)
    }
}

/// The marker the input holds: where, its header and summary, and the blocks it carries ahead
/// of itself (Anthropic's first request, [`MarkerShape::AfterBlocks`]).
#[derive(Clone, Debug)]
pub(super) struct InputMarker {
    pub(super) at: usize,
    pub(super) marker: CompactionMarker,
    pub(super) lead: Vec<Value>,
}

/// A fold, planned.
#[derive(Clone, Debug)]
pub(super) struct Fold {
    /// Iterations `from..to` (absolute) are folded.
    pub(super) from: u64,
    pub(super) to: u64,
    pub(super) number: u32,
    pub(super) key: Vec<String>,
    pub(super) replaced: u64,
    pub(super) span: Vec<Message>,
    pub(super) previous: Option<CompactionMarker>,
    pub(super) chain_end: Option<Chain>,
}

/// The budgets in force, per section.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budgets {
    pub(super) instructions: Option<u64>,
    pub(super) goal: Option<u64>,
    pub(super) summary: u64,
    pub(super) recent: Option<u64>,
    pub(super) total: Option<u64>,
}

/// Where the sections of an output are, by message index.
pub(super) struct Layout {
    pub(super) systems: usize,
    pub(super) goal_at: Option<usize>,
    pub(super) marker_at: Option<usize>,
    pub(super) raw_from: usize,
}

pub(super) fn is_instruction(message: &Message) -> bool {
    matches!(message.role(), Role::System | Role::Developer)
}

/// Where each iteration of `messages[body..]` starts: at `body`, then at every turn start
/// ([`Turns`]) after it, pulled back over the plain user messages just before it; a start
/// inside a tool exchange is skipped (its turn joins the one before).
pub(super) fn iteration_starts(conv: &Conversation, body: usize) -> Vec<PartRef> {
    let messages = conv.messages();
    if body >= messages.len() {
        return Vec::new();
    }
    let allowed = allowed_cuts(conv);
    let mut starts = vec![PartRef {
        message: body,
        part: 0,
    }];
    for &turn in Turns::of(conv).starts() {
        if turn.message < body {
            continue;
        }
        let at = if turn.part > 0 {
            turn
        } else {
            let mut m = turn.message;
            while m > body
                && messages
                    .get(m - 1)
                    .is_some_and(|p| p.role() == Role::User && !has_results(p))
            {
                m -= 1;
            }
            if !allowed.get(m).copied().unwrap_or(false) {
                continue;
            }
            PartRef {
                message: m,
                part: 0,
            }
        };
        if starts.last().is_some_and(|last| *last < at) {
            starts.push(at);
        }
    }
    starts
}

/// The messages from `start` to `end` (exclusive): whole messages, and the parts of a message
/// cut at a step.
pub(super) fn pieces_between(conv: &Conversation, start: PartRef, end: PartRef) -> Vec<Piece> {
    let messages = conv.messages();
    let last = if end.part > 0 {
        end.message
    } else {
        end.message.saturating_sub(1)
    };
    let mut out = Vec::new();
    if end.message == 0 && end.part == 0 {
        return out;
    }
    for index in start.message..=last {
        let Some(message) = messages.get(index) else {
            break;
        };
        let len = message.parts().len();
        let from = if index == start.message {
            start.part
        } else {
            0
        };
        let to = if index == end.message {
            end.part.min(len)
        } else {
            len
        };
        if from == 0 && to == len {
            out.push(Piece {
                message: message.clone(),
                index,
                whole: true,
                parts: (from, to),
            });
        } else if from < to {
            if let Some(cut) = message.with_parts_range(from, to) {
                out.push(Piece {
                    message: cut,
                    index,
                    whole: false,
                    parts: (from, to),
                });
            }
        }
    }
    out
}

/// `pieces` with the neighbouring steps of one message joined again: the message whole (the
/// input's own) when they are all of it.
pub(super) fn joined<'a>(
    conv: &Conversation,
    pieces: impl IntoIterator<Item = &'a Piece>,
) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for piece in pieces {
        let join = out.last().is_some_and(|last| {
            last.index == piece.index && !last.whole && last.parts.1 == piece.parts.0
        });
        if !join {
            out.push(piece.clone());
            continue;
        }
        let Some(last) = out.last_mut() else {
            continue;
        };
        let Some(message) = conv.messages().get(piece.index) else {
            continue;
        };
        let parts = (last.parts.0, piece.parts.1);
        if parts == (0, message.parts().len()) {
            *last = Piece {
                message: message.clone(),
                index: piece.index,
                whole: true,
                parts,
            };
        } else if let Some(cut) = message.with_parts_range(parts.0, parts.1) {
            *last = Piece {
                message: cut,
                index: piece.index,
                whole: false,
                parts,
            };
        }
    }
    out
}

/// `text` with its middle cut out so that it counts at most `max` tokens: its head (two
/// thirds of what is kept) and tail around a note saying what was cut.
pub(super) fn cut_middle(text: &str, max: u64, measure: &Measure, what: &str) -> String {
    let total = measure.tokens(text);
    if total <= max {
        return text.to_owned();
    }
    let note = format!(
        "\n\n[... the middle of {what} was cut by context-keeper: {total} tokens, shortened to fit {max} ...]\n\n"
    );
    let build = |keep: usize| {
        let head = utf16_prefix(text, keep * 2 / 3);
        let tail = utf16_suffix(text, keep - keep * 2 / 3).max(head);
        format!(
            "{}{note}{}",
            text.get(..head).unwrap_or_default().trim_end(),
            text.get(tail..).unwrap_or_default().trim_start()
        )
    };
    let (mut lo, mut hi) = (0usize, utf16_len(text));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if measure.tokens(&build(mid)) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    build(lo)
}

/// Cuts the text parts of `message` (which counts `cost` tokens) so that it counts about
/// `budget`: each text part keeps its share. Whether anything was cut.
pub(super) fn cut_message(
    message: &mut Message,
    cost: u64,
    budget: u64,
    measure: &Measure,
    what: &str,
) -> bool {
    if cost <= budget {
        return false;
    }
    let texts: Vec<(usize, u64)> = message
        .parts()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind() == PartKind::Text)
        .map(|(i, p)| (i, measure.tokens(p.text().unwrap_or_default())))
        .collect();
    let text_total: u64 = texts.iter().map(|(_, t)| t).sum();
    if text_total == 0 {
        return false;
    }
    let room = budget.saturating_sub(cost.saturating_sub(text_total));
    let shares = fair_shares(&texts.iter().map(|(_, t)| *t).collect::<Vec<_>>(), room);
    let mut cut = false;
    for ((i, tokens), share) in texts.into_iter().zip(shares) {
        if tokens <= share {
            continue;
        }
        let Some(part) = message.parts_mut().get_mut(i) else {
            continue;
        };
        let shorter = cut_middle(part.text().unwrap_or_default(), share, measure, what);
        cut |= part.set_text(shorter).is_ok();
    }
    cut
}

/// Max-min fair shares of `budget` for parts that count `costs`: a part under its fair share
/// keeps all it has, the others split what is left evenly. So a short part is never cut
/// because a long one is over.
pub(super) fn fair_shares(costs: &[u64], budget: u64) -> Vec<u64> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    crate::sort::sort_by_key(&mut order, |&i| {
        crate::sort::fields(costs.get(i).copied().unwrap_or(0), i as u64)
    });
    let mut shares = vec![0; costs.len()];
    let mut left = budget;
    for (k, &i) in order.iter().enumerate() {
        let cost = costs.get(i).copied().unwrap_or(0);
        let fair = left / (costs.len() - k) as u64;
        let share = cost.min(fair);
        if let Some(slot) = shares.get_mut(i) {
            *slot = share;
        }
        left -= share;
    }
    shares
}

/// The part of `counts` from `from`, summed.
pub(super) fn sum_from(costs: &[u64], from: usize) -> u64 {
    costs.get(from..).map_or(0, |c| c.iter().sum())
}
