//! A standing decision re-applied to a conversation: each cut to the text it was made on.

use std::collections::HashMap;

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use super::cut::*;
use crate::context::evict::{self, EvictOptions};
use crate::context::offload::offload_key;
use crate::context::result;
use crate::context::{result_at, Action, Edit, Original, Report, ResultSite};
use crate::messages::{Conversation, Message, PairingGraph};

/// The cuttable texts of `conv`: every tool result with a call id, and every content input of
/// a file write (with the path it names and the note for its long result).
#[inline(never)]
pub(super) fn targets<'a>(
    conv: &'a Conversation,
    sites: &'a [ResultSite],
    writes: &'a [evict::Candidate],
) -> Vec<Target<'a>> {
    let mut out = Vec::new();
    for site in sites {
        let Some(call) = site.call_id.as_deref() else {
            continue;
        };
        let Some((_, read)) = result_at(conv, site.at) else {
            continue;
        };
        // NOTE: a history has few file writes: each result looks for its call among them.
        let path = (writes.iter())
            .find(|w| w.id.as_deref() == Some(call))
            .map(|w| w.path.as_str());
        out.push(Target::result(site, call, read.text, path));
    }
    for write in writes {
        let Some(call) = write.id.as_deref() else {
            continue;
        };
        for (field, content) in &write.inputs {
            out.push(Target {
                at: write.call_at,
                call_at: write.call_at,
                slot: xxh3_64(field.as_bytes()) | 1,
                call,
                tool: Some(&write.name),
                text: std::borrow::Cow::Borrowed(content.as_str()),
                field: Some(field),
                path: Some(&write.path),
            });
        }
    }
    out
}

/// A conversation with cuts applied.
#[derive(Debug)]
pub struct Applied {
    /// The conversation.
    pub conversation: Conversation,
    /// Indices of the messages that changed.
    pub edited: Vec<usize>,
    /// The offloads of huge results.
    pub offloaded: Report,
    /// The trims and clears of results.
    pub pruned: Report,
    /// The evictions of file-write inputs and results.
    pub evicted: Report,
}

/// Applies `cuts` to `conv`: each to the text of its call and action whose hash it records
/// (a text the host changed, or sends already cut, is left as it is).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn apply(
    conv: Conversation,
    cuts: &[Cut],
    sites: &[ResultSite],
    graph: &PairingGraph,
    shape: &Shape<'_>,
    memo: &mut DecisionMemo,
) -> Applied {
    let mut applied = Applied {
        conversation: conv,
        edited: Vec::new(),
        offloaded: Report::default(),
        pruned: Report::default(),
        evicted: Report::default(),
    };
    if cuts.is_empty() {
        return applied;
    }
    let writes = writes_of(&applied.conversation, shape.evict, graph, None);
    let conv = &applied.conversation;
    let by_call: HashMap<(&str, Option<&str>, bool), &Cut> = cuts
        .iter()
        .map(|c| {
            let input = c.action == Action::EvictInput;
            ((c.call.as_str(), c.field.as_deref(), input), c)
        })
        .collect();
    // (the text, its cut, the memo key of what the cut makes of it, the edit)
    let mut planned: Vec<(Target<'_>, &Cut, u64, Edit)> = Vec::new();
    for t in targets(conv, sites, &writes) {
        let input = t.field.is_some();
        let Some(&cut) = by_call.get(&(t.call, t.field, input)) else {
            continue;
        };
        let Some(message) = conv.messages().get(t.at.message) else {
            continue;
        };
        if shape.hash(memo, message, &t) != cut.hash {
            continue;
        }
        let key = render_key(message, &t, cut);
        let rendered = shape.render_keyed(memo, message, &t, cut, key);
        if rendered.after >= rendered.before {
            continue;
        }
        let edit = Edit {
            action: cut.action,
            message_index: t.at.message,
            part_index: t.at.part,
            tool_name: t.tool.map(str::to_owned),
            tool_call_id: Some(t.call.to_owned()),
            field: t.field.map(str::to_owned),
            tokens_before: rendered.before,
            tokens_after: rendered.after,
            estimated: shape.measure.estimated(),
            original: Original::Store {
                key: offload_key(shape.session_id, &cut.id),
                id: cut.id.clone(),
            },
        };
        planned.push((t, cut, key.2, edit));
    }
    // NOTE: by message: a message cut the same way by an earlier prepare is taken from the memo
    // as it was made, with no copy of its original text made and nothing rendered again.
    crate::sort::sort_by_key(&mut planned, |(t, ..)| {
        crate::sort::fields(t.at.message as u64, t.at.part as u64)
    });
    let mut made: Vec<(usize, Message)> = Vec::new();
    let mut rest = planned.as_slice();
    while let Some(((first, ..), _)) = rest.split_first() {
        let m = first.at.message;
        let n = rest.iter().take_while(|(t, ..)| t.at.message == m).count();
        let (group, tail) = rest.split_at(n);
        rest = tail;
        let Some(original) = conv.messages().get(m) else {
            continue;
        };
        let mut spec = Vec::with_capacity(group.len() * 16);
        for (t, _, key, _) in group {
            spec.extend_from_slice(&(t.at.part as u64).to_le_bytes());
            spec.extend_from_slice(&key.to_le_bytes());
        }
        let spec = xxh3_64(&spec);
        let cut = match memo.cut_message(original, spec) {
            Some(cut) => cut,
            None => {
                let mut message = original.clone();
                for (t, cut, ..) in group {
                    let text = shape.cut_text(memo, original, t, cut);
                    let Some(part) = message.parts_mut().get_mut(t.at.part) else {
                        continue;
                    };
                    match t.field {
                        Some(field) => {
                            let _ = part.set_input_field(field, Value::String(text));
                        }
                        None => {
                            if let Some((shape, value)) = part.result_slot_mut() {
                                result::write(shape, value, text);
                            }
                        }
                    }
                }
                memo.keep_cut_message(original, spec, message.clone());
                message
            }
        };
        made.push((m, cut));
    }
    // NOTE: the edits of messages that are not in the conversation are not reported.
    for (t, _, _, edit) in planned {
        if conv.messages().get(t.at.message).is_none() {
            continue;
        }
        let report = match edit.action {
            Action::EvictInput | Action::EvictResult => &mut applied.evicted,
            Action::Offload => &mut applied.offloaded,
            Action::SoftTrim | Action::HardClear => &mut applied.pruned,
        };
        report.push(edit);
    }
    for (m, cut) in made {
        if let Some(slot) = applied.conversation.messages_mut().get_mut(m) {
            *slot = cut;
        }
        applied.edited.push(m);
    }
    applied
}

/// The file writes of `conv` whose inputs may be cut (every one, aged as of `horizon`).
#[inline(never)]
pub(super) fn writes_of(
    conv: &Conversation,
    options: &EvictOptions,
    graph: &PairingGraph,
    horizon: Option<usize>,
) -> Vec<evict::Candidate> {
    let options = EvictOptions {
        horizon,
        keep_last_assistant_turns: if horizon.is_some() {
            options.keep_last_assistant_turns
        } else {
            0
        },
        ..options.clone()
    };
    evict::candidates(conv, &options, graph)
}
