//! The tool pairing graph: which call each tool result answers.
//!
//! NOTE: every provider wants a tool call's result right after the call: OpenAI in the run of
//! `tool` messages that follows the assistant message ("messages with role 'tool' must be a
//! response to a preceding message with 'tool_calls'"), Anthropic in the user turn that
//! follows (consecutive user messages are merged into one turn), and the AI SDK converts to
//! those. So a result pairs with a call of the same id in its *window*: the carrier messages
//! (`tool`/`function` for OpenAI, `tool` for the AI SDK, `user` for Anthropic) that directly
//! follow the call's message. The AI SDK also lets an assistant message carry the results of
//! provider-executed calls made earlier in that same message. An AI SDK `UIMessage` tool part
//! is a call and, once its state has one, its result too: it answers itself.

use std::collections::HashMap;

use serde::Serialize;

use super::format::Format;
use super::model::{Conversation, Message, PartKind, Role, Slot};

/// A part's place: message index and part index in [`super::Message::parts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartRef {
    /// Index of the message in the `messages` array.
    pub message: usize,
    /// Index of the part in the message's parts.
    pub part: usize,
}

/// One tool call and the result that answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolLink {
    /// The call's id (`None` for OpenAI's legacy `function_call`).
    pub id: Option<String>,
    /// The tool's name.
    pub name: Option<String>,
    /// Where the call is.
    pub call: PartRef,
    /// Where its result is, if it has one in the call's window.
    pub result: Option<PartRef>,
}

/// An assistant message with tool calls, the results that answer them, and the reasoning that
/// must stay with them (Anthropic requires the thinking blocks of a tool-use turn to be sent
/// back unchanged while the tool loop runs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExchange {
    /// Index of the assistant message holding the calls.
    pub message: usize,
    /// Index of the last message of the call's window (the message itself when the window is
    /// empty). Results belong in `message + 1 ..= window_end`.
    pub window_end: usize,
    /// Part indices of reasoning and redacted reasoning in the assistant message.
    pub reasoning: Vec<usize>,
    /// The calls, in order.
    pub calls: Vec<ToolLink>,
}

/// Why a tool result answers no call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StrayReason {
    /// No call anywhere has its id.
    Orphan,
    /// The call with its id comes later.
    BeforeCall,
    /// The call with its id is earlier but not directly before it.
    NotAdjacent,
    /// Its call already has a result.
    Duplicate,
}

/// A tool result that answers no call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StrayResult {
    /// Where the result is.
    pub at: PartRef,
    /// The id it answers.
    pub id: Option<String>,
    /// Why it pairs with nothing.
    pub reason: StrayReason,
    /// The call with its id, when there is one.
    pub call: Option<PartRef>,
}

/// A tool call whose id an earlier call already has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateCall {
    /// The later call.
    pub call: PartRef,
    /// The first call with the same id.
    pub first: PartRef,
    /// The id.
    pub id: String,
}

/// Every tool call and result of a conversation, paired.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingGraph {
    /// Assistant messages with tool calls, in order.
    pub exchanges: Vec<ToolExchange>,
    /// Results that answer no call, in order.
    pub stray_results: Vec<StrayResult>,
    /// Calls that reuse an id where the provider wants unique ids.
    pub duplicate_calls: Vec<DuplicateCall>,
}

/// Whether messages of this role carry the results of the calls just before them.
pub(crate) fn is_carrier(format: Format, role: Role) -> bool {
    match format {
        Format::OpenAi => matches!(role, Role::Tool | Role::Function),
        Format::Anthropic => role == Role::User,
        Format::AiSdk => role == Role::Tool,
    }
}

/// For one exchange: the indices of the links of each id, in order, and how many of them
/// already have a result. A list, not a map: an exchange has a few calls.
type OpenLinks<'a> = Vec<(Option<&'a str>, (Vec<usize>, usize))>;

/// The entry of `id` in `links`.
fn links_of<'l, 'a>(
    links: &'l mut OpenLinks<'a>,
    id: &Option<&str>,
) -> Option<&'l mut (Vec<usize>, usize)> {
    links.iter_mut().find(|(k, _)| k == id).map(|(_, v)| v)
}

/// Pairs every tool result of `conv` with the call it answers.
pub fn pair_tools(conv: &Conversation) -> PairingGraph {
    pair_messages(conv.format(), conv.messages())
}

pub(crate) fn pair_messages(format: Format, messages: &[Message]) -> PairingGraph {
    let mut graph = PairingGraph::default();
    // exchange_of[m]: the exchange of message m; owner[m]: the exchange whose window holds m.
    let mut exchange_of: Vec<Option<usize>> = vec![None; messages.len()];
    let mut owner: Vec<Option<usize>> = vec![None; messages.len()];
    let mut first_call: HashMap<&str, PartRef> = HashMap::new();
    // All calls by id, in order, to tell "before its call" from "not adjacent" from "orphan".
    let mut calls_by_id: HashMap<Option<&str>, Vec<PartRef>> = HashMap::new();
    // Per exchange: the links of each id, in order, and how many of them have a result.
    let mut open: Vec<OpenLinks<'_>> = Vec::new();
    let mut current: Option<usize> = None;
    for (m, message) in messages.iter().enumerate() {
        if let Some(ex) = current.filter(|_| is_carrier(format, message.role)) {
            set(&mut owner, m, Some(ex));
            if let Some(exchange) = graph.exchanges.get_mut(ex) {
                exchange.window_end = m;
            }
            continue;
        }
        current = None;
        // NOTE: only assistant messages make calls; a call part elsewhere is a
        // `MisplacedCall` problem and pairs with nothing.
        if message.role != Role::Assistant || !message.has_tool_calls() {
            continue;
        }
        let mut exchange = ToolExchange {
            message: m,
            window_end: m,
            reasoning: Vec::new(),
            calls: Vec::new(),
        };
        let mut ids_here: Vec<(&str, PartRef)> = Vec::new();
        let mut open_here: OpenLinks<'_> = Vec::new();
        for (p, part) in message.parts.iter().enumerate() {
            let at = PartRef {
                message: m,
                part: p,
            };
            match part.kind {
                PartKind::Reasoning | PartKind::RedactedReasoning => exchange.reasoning.push(p),
                PartKind::ToolCall => {
                    let id = part.call_id();
                    calls_by_id.entry(id).or_default().push(at);
                    if let Some(id) = id {
                        // NOTE: Anthropic rejects a reused tool_use id anywhere in the request
                        // ("tool_use ids must be unique"); OpenAI and the AI SDK only need ids
                        // to tell the calls of one message apart.
                        let here = ids_here.iter().find(|(k, _)| *k == id).map(|(_, at)| at);
                        let seen = match format {
                            Format::Anthropic => first_call.get(id).or(here),
                            _ => here,
                        };
                        if let Some(first) = seen {
                            graph.duplicate_calls.push(DuplicateCall {
                                call: at,
                                first: *first,
                                id: id.to_owned(),
                            });
                        }
                        first_call.entry(id).or_insert(at);
                        if here.is_none() {
                            ids_here.push((id, at));
                        }
                    }
                    let answered = part.holds_result();
                    if !answered {
                        let index = exchange.calls.len();
                        match links_of(&mut open_here, &id) {
                            Some((indices, _)) => indices.push(index),
                            None => open_here.push((id, (vec![index], 0))),
                        }
                    }
                    exchange.calls.push(ToolLink {
                        id: id.map(str::to_owned),
                        name: part.name.clone(),
                        call: at,
                        result: answered.then_some(at),
                    });
                }
                _ => {}
            }
        }
        set(&mut exchange_of, m, Some(graph.exchanges.len()));
        current = Some(graph.exchanges.len());
        graph.exchanges.push(exchange);
        open.push(open_here);
    }

    for (m, message) in messages.iter().enumerate() {
        for (p, part) in message.parts.iter().enumerate() {
            if part.kind != PartKind::ToolResult {
                continue;
            }
            let at = PartRef {
                message: m,
                part: p,
            };
            let id = part.call_id();
            let same_message = (format == Format::AiSdk && message.role == Role::Assistant)
                .then(|| exchange_of.get(m).copied().flatten())
                .flatten();
            let window = owner.get(m).copied().flatten();
            let mut answered = None;
            let mut linked = false;
            for ex in [same_message, window].into_iter().flatten() {
                let (Some((links, next)), Some(exchange)) = (
                    open.get_mut(ex).and_then(|o| links_of(o, &id)),
                    graph.exchanges.get_mut(ex),
                ) else {
                    continue;
                };
                match links.get(*next).and_then(|&i| exchange.calls.get_mut(i)) {
                    // A call later in the result's own message does not count.
                    Some(link) if link.call.message == m && link.call.part > p => {}
                    Some(link) => {
                        link.result = Some(at);
                        *next += 1;
                        linked = true;
                        break;
                    }
                    None => {
                        answered = links
                            .last()
                            .and_then(|&i| exchange.calls.get(i))
                            .map(|l| l.call);
                    }
                }
            }
            if linked {
                continue;
            }
            let calls = calls_by_id.get(&id).map(Vec::as_slice).unwrap_or_default();
            // NOTE: binary searches keep this linear overall, even with thousands of calls
            // sharing one id.
            let split = calls.partition_point(|c| (c.message, c.part) < (m, p));
            let earlier = split.checked_sub(1).and_then(|i| calls.get(i)).copied();
            let later = calls.get(split).copied();
            let (reason, call) = if let Some(call) = answered {
                (StrayReason::Duplicate, Some(call))
            } else if let Some(call) = earlier {
                let done = link_of(&graph, &exchange_of, call).is_some_and(|l| l.result.is_some());
                (
                    if done {
                        StrayReason::Duplicate
                    } else {
                        StrayReason::NotAdjacent
                    },
                    Some(call),
                )
            } else if let Some(call) = later {
                (StrayReason::BeforeCall, Some(call))
            } else {
                (StrayReason::Orphan, None)
            };
            graph.stray_results.push(StrayResult {
                at,
                id: id.map(str::to_owned),
                reason,
                call,
            });
        }
    }
    graph
}

/// Whether the call at `call` is an AI SDK `UIMessage` tool part: without a result yet it
/// waits for the UI (the host runs the tool, or asks for approval), and a result part after
/// it would be the wrong shape, so it is neither reported nor stubbed.
pub(crate) fn is_ui_call(messages: &[Message], call: PartRef) -> bool {
    (messages.get(call.message))
        .and_then(|m| m.parts.get(call.part))
        .is_some_and(|p| p.slot == Slot::UiPart)
}

/// The link of the call at `call`.
pub(crate) fn link_of<'g>(
    graph: &'g PairingGraph,
    exchange_of: &[Option<usize>],
    call: PartRef,
) -> Option<&'g ToolLink> {
    let ex = exchange_of.get(call.message).copied().flatten()?;
    find_link(graph.exchanges.get(ex)?, call)
}

fn find_link(exchange: &ToolExchange, call: PartRef) -> Option<&ToolLink> {
    let i = exchange
        .calls
        .binary_search_by_key(&call.part, |l| l.call.part)
        .ok()?;
    exchange.calls.get(i).filter(|l| l.call == call)
}

fn set<T>(slots: &mut [T], index: usize, value: T) {
    if let Some(slot) = slots.get_mut(index) {
        *slot = value;
    }
}

impl PairingGraph {
    /// The link of the call at `call`, if there is a call there.
    pub fn link(&self, call: PartRef) -> Option<&ToolLink> {
        let i = self
            .exchanges
            .binary_search_by_key(&call.message, |e| e.message)
            .ok()?;
        find_link(self.exchanges.get(i)?, call)
    }
}
