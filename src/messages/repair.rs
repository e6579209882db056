//! The smallest edits that make a conversation valid.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::format::Format;
use super::model::{Conversation, Form, Message, Part, PartKind, Role, Slot};
use super::pairing::{is_ui_call, pair_messages, PartRef, StrayReason};
use super::validate::{empty_content, problems_with, Problem, ProblemKind};
use super::{aisdk, anthropic, openai, MessagesOptions};

/// The content of the result added for a call that has none.
pub const STUB_RESULT_TEXT: &str = "[no result recorded]";

/// A kind of [`RepairAction`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RepairKind {
    /// A tool result that answers no call (or a call already answered) was removed.
    DropResult,
    /// A tool result was moved into the messages right after its call.
    MoveResult,
    /// A result with [`STUB_RESULT_TEXT`] was added for a call that had none.
    AddStubResult,
    /// A call reusing an id got a new one (and so did its result).
    RenameCallId,
    /// An empty text part was removed.
    DropEmptyPart,
    /// A message with no content was removed.
    DropEmptyMessage,
    /// An empty `content: []` next to tool calls became `content: null` (OpenAI).
    NullEmptyContent,
    /// Two messages in a row with the same role became one, as Anthropic itself merges them.
    MergeMessages,
    /// `tool_result` blocks were moved before the other blocks of their user message.
    ReorderToolResults,
    /// A tool call in a message not from the assistant was removed (no provider accepts it,
    /// and none writes one).
    DropMisplacedCall,
}

/// One edit made by [`repair_conversation`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepairAction {
    /// What was done.
    pub action: RepairKind,
    /// The problem it fixes.
    pub problem: ProblemKind,
    /// Index of the message concerned, in the input.
    pub message_index: usize,
    /// Index of the part concerned, in the input message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_index: Option<usize>,
    /// The tool call id involved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A sentence for humans.
    pub message: String,
}

/// A repaired conversation and what was done to it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Repaired {
    /// The conversation, in the input's format and shape.
    pub messages: Value,
    /// The format the input was read in and the output is written in: validate the output in
    /// it, since detection may name another once repair removed what told them apart.
    pub format: Format,
    /// Every edit, in the order made.
    pub report: Vec<RepairAction>,
    /// Problems repair leaves alone because fixing them would mean inventing or deleting
    /// content (an Anthropic conversation that starts with an assistant message).
    pub unrepaired: Vec<Problem>,
}

fn action(
    action: RepairKind,
    problem: ProblemKind,
    at: (usize, Option<usize>),
    id: Option<&str>,
    message: String,
) -> RepairAction {
    RepairAction {
        action,
        problem,
        message_index: at.0,
        part_index: at.1,
        id: id.map(str::to_owned),
        message,
    }
}

/// Repairs `conv` with the fewest edits: tool results that answer nothing are dropped,
/// misplaced ones moved after their call, calls without a result get a
/// [`STUB_RESULT_TEXT`] result, reused ids are renamed, empty content the provider rejects is
/// removed, and (Anthropic) consecutive same-role messages are merged. A valid conversation
/// comes back unchanged.
pub fn repair_conversation(
    conv: Conversation,
    options: &MessagesOptions,
) -> (Conversation, Vec<RepairAction>, Vec<Problem>) {
    let outcome = repair_conversation_traced(conv, options);
    (outcome.conversation, outcome.report, outcome.unrepaired)
}

/// What [`repair_conversation_traced`] made of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct RepairOutcome {
    /// The repaired conversation.
    pub conversation: Conversation,
    /// Every edit, in the order made.
    pub report: Vec<RepairAction>,
    /// Problems left alone (see [`Repaired::unrepaired`]).
    pub unrepaired: Vec<Problem>,
    /// One entry per message of `conversation`: `Some(i)` when it is the input's message `i`
    /// exactly as it was read (no edit touched it), `None` when it was edited, merged or added.
    pub untouched: Vec<Option<usize>>,
}

/// Where a message of the repair's output comes from.
#[derive(Clone, Copy, Debug)]
struct Origin {
    /// The input message it was (the first one, for merged messages); `None` when added.
    from: Option<usize>,
    /// Whether an edit changed it.
    edited: bool,
}

/// [`repair_conversation`], also telling which messages of the output are input messages left
/// as they were ([`RepairOutcome::untouched`]).
///
/// The repair's decisions depend only on what validation sees (roles, part kinds, tool call ids
/// and names, whether a text is blank or a compaction marker, which fields are present), so a
/// conversation read in part ([`super::parse_skimmed_messages_value`]) gets the same edits, at
/// the same places, and the same `untouched` as the whole one.
pub fn repair_conversation_traced(
    mut conv: Conversation,
    options: &MessagesOptions,
) -> RepairOutcome {
    let format = conv.format;
    let n = conv.messages.len();
    let graph = pair_messages(format, &conv.messages);
    let problems = problems_with(format, &conv.messages, &graph, options);
    if problems.is_empty() {
        return RepairOutcome {
            conversation: conv,
            report: Vec::new(),
            unrepaired: problems,
            untouched: (0..n).map(Some).collect(),
        };
    }
    let mut report = Vec::new();
    // Input messages an edit changed in place (a renamed id).
    let mut edited_input = vec![false; n];

    // 1. Reused ids: rename the later call and the result that answers it.
    let (graph, problems) = if graph.duplicate_calls.is_empty() {
        (graph, problems)
    } else {
        let mut used: HashSet<String> = conv
            .messages
            .iter()
            .flat_map(|m| m.parts.iter().filter_map(|p| p.id.clone()))
            .collect();
        // NOTE: the next suffix to try per id, so a thousand copies of one id stay linear.
        let mut next_suffix: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::new();
        for dup in &graph.duplicate_calls {
            let suffix = next_suffix.entry(dup.id.as_str()).or_insert(2);
            let new_id = (*suffix..)
                .map(|n| format!("{}-{n}", dup.id))
                .find(|c| !used.contains(c))
                .unwrap_or_default();
            *suffix += 1;
            used.insert(new_id.clone());
            let result = graph.link(dup.call).and_then(|l| l.result);
            for at in std::iter::once(dup.call).chain(result) {
                if let Some(part) = part_mut(&mut conv.messages, at) {
                    part.set_call_id(&new_id);
                    if let Some(edited) = edited_input.get_mut(at.message) {
                        *edited = true;
                    }
                }
            }
            report.push(action(
                RepairKind::RenameCallId,
                ProblemKind::DuplicateCallId,
                (dup.call.message, Some(dup.call.part)),
                Some(&dup.id),
                format!("renamed tool call id {:?} to {new_id:?}", dup.id),
            ));
        }
        let graph = pair_messages(format, &conv.messages);
        let problems = problems_with(format, &conv.messages, &graph, options);
        (graph, problems)
    };

    // 2. Pairing and empty content, planned on the input indices and applied in one pass.
    let mut drop_part: HashSet<PartRef> = HashSet::new();
    let mut drop_message = vec![false; n];
    let mut null_content: HashSet<usize> = HashSet::new();
    let mut inserts: BTreeMap<usize, Vec<(usize, Part)>> = BTreeMap::new();
    let mut claimed: HashSet<PartRef> = HashSet::new();
    for stray in &graph.stray_results {
        let id = stray.id.as_deref();
        let at = (stray.at.message, Some(stray.at.part));
        let problem = match stray.reason {
            StrayReason::Orphan => ProblemKind::OrphanResult,
            StrayReason::Duplicate => ProblemKind::DuplicateResult,
            StrayReason::BeforeCall => ProblemKind::ResultBeforeCall,
            StrayReason::NotAdjacent => ProblemKind::ResultNotAdjacent,
        };
        drop_part.insert(stray.at);
        let target = stray
            .call
            .filter(|call| {
                matches!(
                    stray.reason,
                    StrayReason::BeforeCall | StrayReason::NotAdjacent
                ) && !claimed.contains(call)
            })
            .and_then(|call| {
                graph
                    .link(call)
                    .filter(|l| l.result.is_none())
                    .map(|_| call)
            });
        let moved =
            target.and_then(|call| Some((call, part_at(&conv.messages, stray.at)?.clone())));
        if let Some((call, part)) = moved {
            claimed.insert(call);
            inserts
                .entry(call.message)
                .or_default()
                .push((call.part, part));
            let text = format!(
                "moved the result for {} after its call at messages[{}]",
                show(id),
                call.message
            );
            report.push(action(RepairKind::MoveResult, problem, at, id, text));
        } else {
            let text = format!("dropped the result for {}", show(id));
            report.push(action(RepairKind::DropResult, problem, at, id, text));
        }
    }
    let last = n.saturating_sub(1);
    for exchange in &graph.exchanges {
        let pending_ok = options.allow_pending_calls && exchange.window_end >= last;
        for link in &exchange.calls {
            if link.result.is_some()
                || pending_ok
                || claimed.contains(&link.call)
                || is_ui_call(&conv.messages, link.call)
            {
                continue;
            }
            let Some(call) = part_at(&conv.messages, link.call) else {
                continue;
            };
            let stub = match format {
                // The OpenAI result is a whole message; it is carried as that message's part.
                Format::OpenAi => openai::result_message(call, STUB_RESULT_TEXT)
                    .into_parts()
                    .into_iter()
                    .next(),
                Format::Anthropic => Some(anthropic::result_block(call, STUB_RESULT_TEXT)),
                Format::AiSdk => Some(aisdk::result_part(call, STUB_RESULT_TEXT)),
            };
            if let Some(stub) = stub {
                inserts
                    .entry(exchange.message)
                    .or_default()
                    .push((link.call.part, stub));
                let text = format!(
                    "added a {STUB_RESULT_TEXT:?} result for {}",
                    show(link.id.as_deref())
                );
                let at = (link.call.message, Some(link.call.part));
                report.push(action(
                    RepairKind::AddStubResult,
                    ProblemKind::MissingResult,
                    at,
                    link.id.as_deref(),
                    text,
                ));
            }
        }
    }
    for problem in problems
        .iter()
        .filter(|p| p.kind == ProblemKind::MisplacedCall)
    {
        if let Some(part) = problem.part_index {
            drop_part.insert(PartRef {
                message: problem.message_index,
                part,
            });
            let text = "dropped a tool call from a non-assistant message".to_owned();
            let at = (problem.message_index, Some(part));
            report.push(action(
                RepairKind::DropMisplacedCall,
                problem.kind,
                at,
                problem.id.as_deref(),
                text,
            ));
        }
    }
    // NOTE: Anthropic lets the final assistant message be empty (a prefill); once results are
    // added after it, it is final no more and its empty content must go too.
    let final_gets_results = inserts.contains_key(&last);
    let mut empties: Vec<Problem> = problems
        .into_iter()
        .filter(|p| p.kind == ProblemKind::EmptyContent)
        .filter(|p| !(final_gets_results && p.message_index == last))
        .collect();
    if let Some(message) = conv.messages.last().filter(|_| final_gets_results) {
        empty_content(format, last, false, message, &mut empties);
    }
    for problem in &empties {
        let m = problem.message_index;
        let at = (m, problem.part_index);
        if let Some(p) = problem.part_index {
            drop_part.insert(PartRef {
                message: m,
                part: p,
            });
            report.push(action(
                RepairKind::DropEmptyPart,
                problem.kind,
                at,
                None,
                "dropped an empty text part".to_owned(),
            ));
        } else if conv
            .messages
            .get(m)
            .is_some_and(|msg| !msg.parts.is_empty())
        {
            null_content.insert(m);
            report.push(action(
                RepairKind::NullEmptyContent,
                problem.kind,
                at,
                None,
                "set empty content to null".to_owned(),
            ));
        } else if let Some(slot) = drop_message.get_mut(m) {
            *slot = true;
            report.push(action(
                RepairKind::DropEmptyMessage,
                problem.kind,
                at,
                None,
                "dropped a message with no content".to_owned(),
            ));
        }
    }

    // Windows end where results are inserted: exchange message -> its window's last message.
    let mut due: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for exchange in graph
        .exchanges
        .iter()
        .filter(|e| inserts.contains_key(&e.message))
    {
        due.entry(exchange.window_end)
            .or_default()
            .push(exchange.message);
    }
    let mut out: Vec<Message> = Vec::with_capacity(n + inserts.len());
    let mut origin: Vec<Origin> = Vec::with_capacity(n + inserts.len());
    let mut out_index: Vec<Option<usize>> = vec![None; n];
    for (m, mut message) in std::mem::take(&mut conv.messages).into_iter().enumerate() {
        if !drop_message.get(m).copied().unwrap_or(false) {
            let had_parts = !message.parts.is_empty();
            let part_count = message.parts.len();
            message.parts = (std::mem::take(&mut message.parts).into_iter().enumerate())
                .filter(|(p, _)| {
                    !drop_part.contains(&PartRef {
                        message: m,
                        part: *p,
                    })
                })
                .map(|(_, part)| part)
                .collect();
            let mut edited =
                edited_input.get(m).copied().unwrap_or(true) || message.parts.len() != part_count;
            if null_content.contains(&m) {
                message.content = Form::Null;
                edited = true;
            }
            if !(had_parts && message.parts.is_empty()) {
                if let Some(slot) = out_index.get_mut(m) {
                    *slot = Some(out.len());
                }
                out.push(message);
                origin.push(Origin {
                    from: Some(m),
                    edited,
                });
            }
        }
        for exchange in due.remove(&m).unwrap_or_default() {
            let mut parts = inserts.remove(&exchange).unwrap_or_default();
            crate::sort::sort_by_key(&mut parts, |(call_part, _)| *call_part as u128);
            let parts = parts.into_iter().map(|(_, part)| part).collect();
            let target = (exchange + 1..=m)
                .rev()
                .find_map(|w| out_index.get(w).copied().flatten());
            place_results(format, &mut out, &mut origin, target, parts);
        }
    }

    // 3. Anthropic: merge same-role neighbours and put tool results first.
    if format == Format::Anthropic {
        merge_and_reorder(&mut out, &mut origin, &mut report);
    }
    conv.messages = out;
    let unrepaired = super::validate::validate_conversation(&conv, options);
    RepairOutcome {
        conversation: conv,
        report,
        unrepaired,
        untouched: origin
            .iter()
            .map(|o| o.from.filter(|_| !o.edited))
            .collect(),
    }
}

fn show(id: Option<&str>) -> String {
    match id {
        Some(id) => format!("tool call {id:?}"),
        None => "the legacy function call".to_owned(),
    }
}

fn part_at(messages: &[Message], at: PartRef) -> Option<&Part> {
    messages.get(at.message)?.parts.get(at.part)
}

fn part_mut(messages: &mut [Message], at: PartRef) -> Option<&mut Part> {
    messages.get_mut(at.message)?.parts.get_mut(at.part)
}

/// Makes every content part an array item, so parts can be added next to it.
fn into_items(message: &mut Message) {
    if message.parts.iter().any(|p| p.slot == Slot::Content) {
        message.parts = std::mem::take(&mut message.parts)
            .into_iter()
            .map(Part::into_item)
            .collect();
    }
    if !matches!(message.content, Form::Array | Form::Parts) && !message.is_whole() {
        message.content = Form::Array;
    }
}

/// Puts results at the end of a call's window: into `target` (the window's last surviving
/// message) when the format carries several results per message, else in new messages at the
/// end of `out` (which is where the window ends).
fn place_results(
    format: Format,
    out: &mut Vec<Message>,
    origin: &mut Vec<Origin>,
    target: Option<usize>,
    parts: Vec<Part>,
) {
    let target = target.filter(|_| format != Format::OpenAi);
    if let Some(edited) = target.and_then(|t| origin.get_mut(t)) {
        edited.edited = true;
    }
    let target = target.and_then(|t| out.get_mut(t));
    match (format, target) {
        (Format::OpenAi, _) => {
            for part in parts {
                let role = if part.id.is_some() {
                    Role::Tool
                } else {
                    Role::Function
                };
                out.push(Message::whole(format, role, part));
                origin.push(ADDED);
            }
        }
        (_, Some(message)) => {
            into_items(message);
            // NOTE: Anthropic wants tool_result blocks before any other block.
            let at = message
                .parts
                .iter()
                .rposition(|p| p.kind == PartKind::ToolResult)
                .map_or(0, |i| i + 1);
            let at = if format == Format::Anthropic {
                at
            } else {
                message.parts.len()
            };
            let own = &mut message.parts;
            let tail = own.split_off(at.min(own.len()));
            own.extend(parts);
            own.extend(tail);
        }
        (_, None) => {
            let role = if format == Format::Anthropic {
                Role::User
            } else {
                Role::Tool
            };
            out.push(Message::with_parts(format, role, parts));
            origin.push(ADDED);
        }
    }
}

/// The origin of a message the repair added.
const ADDED: Origin = Origin {
    from: None,
    edited: true,
};

fn merge_and_reorder(
    out: &mut Vec<Message>,
    origin: &mut Vec<Origin>,
    report: &mut Vec<RepairAction>,
) {
    let mut merged: Vec<Message> = Vec::with_capacity(out.len());
    let mut merged_origin: Vec<Origin> = Vec::with_capacity(out.len());
    for (message, from) in std::mem::take(out).into_iter().zip(std::mem::take(origin)) {
        let index = (from.from)
            .or_else(|| merged_origin.last().and_then(|o| o.from))
            .unwrap_or(0);
        match merged.last_mut() {
            Some(prev) if prev.role == message.role => {
                if let Some(prev_origin) = merged_origin.last_mut() {
                    prev_origin.edited = true;
                }
                let mut message = message;
                into_items(prev);
                into_items(&mut message);
                prev.parts.append(&mut message.parts);
                let text = format!(
                    "merged two {} messages in a row into one",
                    message.role.name()
                );
                report.push(action(
                    RepairKind::MergeMessages,
                    ProblemKind::RoleOrder,
                    (index, None),
                    None,
                    text,
                ));
            }
            _ => {
                merged.push(message);
                merged_origin.push(from);
            }
        }
    }
    for (message, from) in merged.iter_mut().zip(&mut merged_origin) {
        if message.role != Role::User {
            continue;
        }
        let first_other = message
            .parts
            .iter()
            .position(|p| p.kind != PartKind::ToolResult);
        let late_result = first_other.is_some_and(|i| {
            message
                .parts
                .iter()
                .skip(i)
                .any(|p| p.kind == PartKind::ToolResult)
        });
        if late_result {
            let (results, others): (Vec<Part>, Vec<Part>) = std::mem::take(&mut message.parts)
                .into_iter()
                .partition(|p| p.kind == PartKind::ToolResult);
            message.parts = results;
            message.parts.extend(others);
            from.edited = true;
            let text = "moved tool_result blocks before the other blocks".to_owned();
            report.push(action(
                RepairKind::ReorderToolResults,
                ProblemKind::ToolResultNotFirst,
                (from.from.unwrap_or(0), None),
                None,
                text,
            ));
        }
    }
    *out = merged;
    *origin = merged_origin;
}
