//! What a provider would reject in a conversation.

use serde::{Deserialize, Serialize};

use super::format::Format;
use super::model::{Conversation, Form, Message, PartKind, Role, Slot};
use super::pairing::{is_ui_call, pair_messages, PairingGraph, StrayReason};
use super::MessagesOptions;

/// A kind of [`Problem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProblemKind {
    /// A tool result whose id no call has.
    OrphanResult,
    /// A tool result that comes before the call with its id.
    ResultBeforeCall,
    /// A tool result whose call is earlier, but not in the message just before.
    ResultNotAdjacent,
    /// A second result for a call that already has one.
    DuplicateResult,
    /// A tool call with no result in the messages that follow it.
    MissingResult,
    /// A tool call reusing an id where the provider wants them unique.
    DuplicateCallId,
    /// Empty content where the provider rejects it.
    EmptyContent,
    /// Anthropic: the first message is not from the user, or two messages in a row have the
    /// same role.
    RoleOrder,
    /// Anthropic: a `tool_result` block after another kind of block in its user message.
    ToolResultNotFirst,
    /// A tool call in a message that is not from the assistant.
    MisplacedCall,
}

/// One thing a provider would reject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// Index of the message in the `messages` array.
    pub message_index: usize,
    /// Index of the part in the message's parts, when the problem is one part. For OpenAI the
    /// parts of a message are its `content` items, then its `tool_calls`, then `function_call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_index: Option<usize>,
    /// The tool call id involved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A sentence for humans.
    pub message: String,
}

/// Every problem in `conv`, ordered by message and part.
pub fn validate_conversation(conv: &Conversation, options: &MessagesOptions) -> Vec<Problem> {
    let graph = pair_messages(conv.format, &conv.messages);
    problems_with(conv.format, &conv.messages, &graph, options)
}

pub(crate) fn problems_with(
    format: Format,
    messages: &[Message],
    graph: &PairingGraph,
    options: &MessagesOptions,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let last = messages.len().saturating_sub(1);
    for stray in &graph.stray_results {
        let (kind, what) = match stray.reason {
            StrayReason::Orphan => (ProblemKind::OrphanResult, "answers no tool call".to_owned()),
            StrayReason::BeforeCall => (
                ProblemKind::ResultBeforeCall,
                after("comes before its call", stray.call),
            ),
            StrayReason::NotAdjacent => (
                ProblemKind::ResultNotAdjacent,
                after("is not directly after its call", stray.call),
            ),
            StrayReason::Duplicate => (
                ProblemKind::DuplicateResult,
                after("answers a call that already has a result", stray.call),
            ),
        };
        out.push(Problem {
            kind,
            message_index: stray.at.message,
            part_index: Some(stray.at.part),
            id: stray.id.clone(),
            message: format!("tool result {} {what}", show_id(stray.id.as_deref())),
        });
    }
    for exchange in &graph.exchanges {
        // NOTE: a call may wait for its result only when nothing but results follows it: the
        // host is about to run the tool.
        let pending_ok = options.allow_pending_calls && exchange.window_end >= last;
        for link in exchange
            .calls
            .iter()
            .filter(|l| l.result.is_none() && !pending_ok && !is_ui_call(messages, l.call))
        {
            out.push(Problem {
                kind: ProblemKind::MissingResult,
                message_index: link.call.message,
                part_index: Some(link.call.part),
                id: link.id.clone(),
                message: format!(
                    "tool call {} has no result after it",
                    show_id(link.id.as_deref())
                ),
            });
        }
    }
    for dup in &graph.duplicate_calls {
        out.push(Problem {
            kind: ProblemKind::DuplicateCallId,
            message_index: dup.call.message,
            part_index: Some(dup.call.part),
            id: Some(dup.id.clone()),
            message: format!(
                "tool call id {:?} is already used by messages[{}]",
                dup.id, dup.first.message
            ),
        });
    }
    for (m, message) in messages.iter().enumerate() {
        empty_content(format, m, m == last, message, &mut out);
        if message.role == Role::Assistant {
            continue;
        }
        for (p, part) in message
            .parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == PartKind::ToolCall)
        {
            out.push(Problem {
                kind: ProblemKind::MisplacedCall,
                message_index: m,
                part_index: Some(p),
                id: part.id.clone(),
                message: format!("tool call in a {} message", message.role.name()),
            });
        }
    }
    if format == Format::Anthropic {
        anthropic_order(messages, &mut out);
    }
    // By message, then part (a problem of the whole message first), then kind.
    crate::sort::sort_by_key(&mut out, |p| {
        let part = p.part_index.map_or(0, |i| i as u64 + 1);
        crate::sort::fields(p.message_index as u64, part << 8 | p.kind as u64)
    });
    out
}

fn after(what: &str, call: Option<super::pairing::PartRef>) -> String {
    match call {
        Some(call) => format!("{what} at messages[{}]", call.message),
        None => what.to_owned(),
    }
}

fn show_id(id: Option<&str>) -> String {
    match id {
        Some(id) => format!("{id:?}"),
        None => "(legacy function call)".to_owned(),
    }
}

fn problem(kind: ProblemKind, m: usize, part: Option<usize>, message: &str) -> Problem {
    Problem {
        kind,
        message_index: m,
        part_index: part,
        id: None,
        message: message.to_owned(),
    }
}

fn is_blank(text: Option<&str>) -> bool {
    text.is_some_and(|t| t.trim().is_empty())
}

pub(crate) fn empty_content(
    format: Format,
    m: usize,
    is_last: bool,
    message: &Message,
    out: &mut Vec<Problem>,
) {
    match format {
        Format::Anthropic => {
            // NOTE: Anthropic: "all messages must have non-empty content except for the optional
            // final assistant message" (a prefill may be empty).
            if is_last && message.role == Role::Assistant {
                return;
            }
            if message.parts.is_empty() {
                out.push(problem(
                    ProblemKind::EmptyContent,
                    m,
                    None,
                    "message content is empty",
                ));
            }
            for (p, part) in message.parts.iter().enumerate() {
                // NOTE: Anthropic: "text content blocks must contain non-whitespace text".
                if part.kind == PartKind::Text && is_blank(part.text()) {
                    out.push(problem(
                        ProblemKind::EmptyContent,
                        m,
                        Some(p),
                        "text is empty or only whitespace",
                    ));
                }
            }
        }
        Format::OpenAi => {
            if message.is_whole() {
                return;
            }
            let content_parts = message
                .parts
                .iter()
                .filter(|p| matches!(p.slot, Slot::Content | Slot::Item))
                .count();
            // NOTE: OpenAI: "Invalid 'messages[i].content': empty array. Expected an array with
            // minimum length 1".
            if message.content == Form::Array && content_parts == 0 {
                out.push(problem(
                    ProblemKind::EmptyContent,
                    m,
                    None,
                    "content is an empty array",
                ));
            }
            // NOTE: OpenAI requires an assistant message's content unless it has tool_calls,
            // function_call or audio.
            let has_audio = message.skeleton.get("audio").is_some_and(|a| !a.is_null());
            if message.role == Role::Assistant
                && matches!(message.content, Form::Absent | Form::Null)
                && message.parts.is_empty()
                && !has_audio
            {
                out.push(problem(
                    ProblemKind::EmptyContent,
                    m,
                    None,
                    "assistant message has no content and no tool calls",
                ));
            }
        }
        // NOTE: the AI SDK passes content to a provider chosen at run time, so the rules are
        // that provider's; none is assumed here.
        Format::AiSdk => {}
    }
}

fn anthropic_order(messages: &[Message], out: &mut Vec<Problem>) {
    // NOTE: Anthropic: "the first message must use the user role"; roles should alternate
    // (the API merges consecutive same-role turns, which moves blocks the caller placed).
    if let Some(first) = messages.first().filter(|m| m.role != Role::User) {
        let text = format!(
            "first message is from the {}, not the user",
            first.role.name()
        );
        out.push(problem(ProblemKind::RoleOrder, 0, None, &text));
    }
    for (m, pair) in messages.windows(2).enumerate() {
        if let [prev, next] = pair {
            if prev.role == next.role {
                let text = format!("two {} messages in a row", next.role.name());
                out.push(problem(ProblemKind::RoleOrder, m + 1, None, &text));
            }
        }
    }
    for (m, message) in messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
    {
        // NOTE: Anthropic: "tool_result blocks must come first in the content array".
        let mut seen_other = false;
        for (p, part) in message.parts.iter().enumerate() {
            if part.kind != PartKind::ToolResult {
                seen_other = true;
            } else if seen_other {
                let mut pr = problem(
                    ProblemKind::ToolResultNotFirst,
                    m,
                    Some(p),
                    "tool_result block after another block",
                );
                pr.id = part.id.clone();
                out.push(pr);
            }
        }
    }
}
