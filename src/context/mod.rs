//! The context layer: keeps a conversation inside its model's window without losing a byte of
//! what the user or the tools said.
//!
//! Sans-IO (DESIGN.md, "How the context layer is built"): this module decides and rewrites and
//! never waits on anything. What needs the outside world is a machine ([`machine`]): an
//! offload, a compaction, a rolling window or a keeper's prepare says what it needs next
//! ([`machine::Need`]: saves, a flush, an archive, a summary), the driver (JS, in
//! pkg-template, one loop for all of them) performs it with its timeouts and hands back what
//! came of it ([`machine::Event`]), and the machine replaces only the parts whose copy was
//! confirmed. Reading back ([`recovery`])
//! takes the bytes the driver loaded. Nothing here reads a clock or randomness: the same input
//! and options give the same output, byte for byte, and keys derive from content and call id.
//!
//! Every tier reads the conversation through the one message model ([`crate::messages`]),
//! edits only tool results and tool-call inputs (never user or assistant text, never thinking
//! or its signatures), and reports every edit ([`report`]).
//!
//! # The modules
//!
//! | what | modules |
//! | --- | --- |
//! | the tiers: cut a tool result or a file write's input, its copy stored first | [`offload`], [`prune`], [`evict`], [`result`] (where a result's text sits), [`recovery`] (reading copies back) |
//! | the fold: older messages archived and replaced by a summary | [`fold`] (the pipeline every fold shares), [`archive`] (the stored record), [`marker`] (what stands in the span's place), [`heuristic`] (the summary without a summarizer), [`transcript`], [`facts`] (the details pinned) |
//! | the policies that choose what to cut or fold | [`decision`] (the keeper's cuts), [`usage`] (what the agent used since), [`compact`] (a cut point), [`rolling`] (the rolling window's iterations), [`flush`] (the memory flush before a fold) |
//! | the keeper: one call a turn, ordering the rest | [`keeper`] (its sans-IO machine), [`state`] (the session state it stores) |
//! | what every machine asks of its driver | [`machine`] (needs, events, a fold's steps) |
//!
//! # Words
//!
//! - *turn*: one assistant message (or one step of an AI SDK `UIMessage`) with the tool results
//!   that answer it ([`Turns`]); the rolling window calls a turn with the user message before
//!   it an *iteration*.
//! - *exchange*: a tool call and its result; nothing ever splits one.
//! - *cut*: a tier's edit of one text (offload, soft trim, hard clear, evict), made only once
//!   its copy is stored; a *standing* cut is one an earlier call made, re-applied.
//! - *decision*: the set of cuts the keeper makes at one call, brought down to a target; it
//!   *holds* (is not re-made) for `minTurnsBetween` turns, so the prompt's prefix stays.
//! - *fold*: older messages archived and replaced by one *marker* holding their summary
//!   (compaction, the rolling window, the keeper's compaction); a marker's *overlay* in the
//!   state lets the full history be recognised and the fold re-applied without a summarizer.
//! - *budget*: the thresholds of the window the keeper works to (`pruneAt`, `compactAt`, ...).
//! - *plan*: what a tier or fold decided before any effect (a [`compact::CompactPlan`], an
//!   [`offload::OffloadPlan`]); as a *machine* it says what the driver must store or ask, one
//!   [`machine::Need`] at a time, and the *driver* performs it and hands back each outcome
//!   ([`machine::Event`]). A keeper's dry run (`plan` in the package) is a prepare whose
//!   driver performs nothing.

pub mod archive;
pub mod compact;
pub mod decision;
pub mod evict;
pub mod facts;
pub mod flush;
pub mod fold;
pub mod heuristic;
pub mod keeper;
pub mod machine;
pub mod marker;
pub mod offload;
pub mod prune;
pub mod recovery;
pub mod report;
pub mod result;
pub mod rolling;
pub mod state;
pub mod text;
pub mod transcript;
pub mod usage;

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::messages::{Conversation, Message, Part, PartKind, PartRef, ResultShape, Role};
use crate::Encoding;

pub use report::{Action, Edit, Failure, Held, Original, Report};

/// The namespace every key of the context layer starts with (the stores' `NAMESPACE`).
pub const NAMESPACE: &str = "context-keeper";

/// One value to store: the driver calls `store.save(key, bytes)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Save {
    /// `[namespace, sessionId, kind, name]`.
    pub key: Vec<String>,
    /// The value.
    pub bytes: Vec<u8>,
}

/// How a [`Save`] went, as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The store confirmed the write (its promise resolved).
    Saved,
    /// It threw, rejected, timed out or was out of quota; the reason is for the report.
    Failed(String),
}

/// Token figures for edited text: the model's encoding when it is built into this binary, else
/// the estimator (both through the memo of [`crate::text_counts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measure {
    encoding: Encoding,
    exact: bool,
}

impl Measure {
    /// Counts for `model` (by the registry; an unknown or absent model counts with o200k_base
    /// and every figure is marked estimated).
    pub fn for_model(model: Option<&str>) -> Measure {
        let (encoding, exact) = match model {
            Some(name) => {
                let info = crate::model::model_info(name);
                (info.encoding, info.exact && info.known)
            }
            None => (Encoding::O200kBase, false),
        };
        Measure {
            encoding,
            exact: exact && encoding.is_built(),
        }
    }

    /// The tokens of `text`.
    pub fn tokens(&self, text: &str) -> u64 {
        crate::text_counts::tokens(text, self.encoding) as u64
    }

    /// Whether figures are estimates.
    pub fn estimated(&self) -> bool {
        !self.exact
    }
}

/// Tool names to act on: `allow` (every tool when absent) minus `deny`; `*` in a name matches
/// any run of characters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ToolFilter {
    /// Only these tools (names or `*` patterns). Absent: every tool.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub allow: Option<Vec<String>>,
    /// Never these tools; wins over `allow`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether a tool of this name (or of no known name) is acted on. A tool without a name
    /// passes only when there is no allow list.
    pub fn accepts(&self, name: Option<&str>) -> bool {
        let Some(name) = name else {
            return self.allow.is_none();
        };
        !any_glob(&self.deny, name)
            && self
                .allow
                .as_ref()
                .is_none_or(|allow| any_glob(allow, name))
    }
}

/// Whether any of `patterns` matches `name` ([`glob`]).
pub fn any_glob(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| glob(p, name))
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters (also none).
pub fn glob(pattern: &str, name: &str) -> bool {
    let Some((first, tail)) = pattern.split_once('*') else {
        return pattern == name; // no `*`: the whole name
    };
    let (middle, last) = tail.rsplit_once('*').unwrap_or(("", tail));
    // NOTE: the prefix, then the suffix, then each middle piece leftmost in what is between.
    let Some(rest) = name.strip_prefix(first) else {
        return false;
    };
    let Some(mut rest) = rest.strip_suffix(last) else {
        return false;
    };
    for piece in middle.split('*').filter(|p| !p.is_empty()) {
        match rest.find(piece) {
            Some(at) => rest = rest.get(at + piece.len()..).unwrap_or_default(),
            None => return false,
        }
    }
    true
}

/// The assistant turns of a conversation, to tell how old a tool call is. A turn starts at
/// every assistant message, and inside an AI SDK `UIMessage` at every `step-start` part after
/// its first part (one such message holds every step of an agent's reply).
#[derive(Clone, Debug)]
pub struct Turns {
    starts: Vec<PartRef>,
}

/// The parts of `message` that begin a turn: the first of an assistant message, and each later
/// `step-start` part of an AI SDK `UIMessage`.
fn step_starts(message: &Message) -> impl Iterator<Item = usize> + '_ {
    let assistant = message.role() == Role::Assistant;
    let ui = assistant && message.is_ui_message();
    let steps = (message.parts().iter().enumerate().skip(1))
        .filter(move |_| ui)
        .filter(|(_, part)| {
            part.raw().get("type").and_then(serde_json::Value::as_str) == Some("step-start")
        })
        .map(|(p, _)| p);
    assistant.then_some(0).into_iter().chain(steps)
}

/// How many turns `message` begins ([`Turns`]).
pub fn turn_starts(message: &Message) -> usize {
    step_starts(message).count()
}

impl Turns {
    /// The turns of `conv`.
    pub fn of(conv: &Conversation) -> Turns {
        Turns::until(conv, None)
    }

    /// The turns of `conv` that begin before message `horizon` (all of them when `None`):
    /// ages are then counted as they were when the conversation ended there.
    pub fn until(conv: &Conversation, horizon: Option<usize>) -> Turns {
        let mut starts = Vec::new();
        let end = horizon.unwrap_or(usize::MAX);
        for (m, message) in conv
            .messages()
            .iter()
            .enumerate()
            .take_while(|(m, _)| *m < end)
        {
            starts.extend(step_starts(message).map(|part| PartRef { message: m, part }));
        }
        Turns { starts }
    }

    /// How many turns there are.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Where each turn starts, in order: an assistant message's first part, or a `step-start`
    /// part of a `UIMessage`.
    pub fn starts(&self) -> &[PartRef] {
        &self.starts
    }

    /// How many assistant turns began after the one holding `at`: 0 in the latest turn. A
    /// place before the first turn counts every turn as after it.
    pub fn age(&self, at: PartRef) -> usize {
        let begun = self.starts.partition_point(|start| *start <= at);
        self.starts.len().saturating_sub(begun.max(1)) + usize::from(begun == 0)
    }
}

/// Every part holding a tool result, with the place of the call it answers (or its own place
/// when it answers none) and the tool's name (from the call when the result has none).
#[derive(Debug)]
pub(crate) struct ResultSite {
    pub at: PartRef,
    pub call_at: PartRef,
    pub tool_name: Option<String>,
    pub call_id: Option<String>,
}

pub(crate) fn result_sites(conv: &Conversation) -> Vec<ResultSite> {
    result_sites_paired(conv, &crate::messages::pair_tools(conv))
}

/// [`result_sites`] with `conv`'s tool pairing at hand.
pub(crate) fn result_sites_paired(
    conv: &Conversation,
    graph: &crate::messages::PairingGraph,
) -> Vec<ResultSite> {
    let mut call_of = std::collections::HashMap::new();
    for exchange in &graph.exchanges {
        for link in &exchange.calls {
            if let Some(result) = link.result {
                call_of.insert(result, (link.call, link.name.clone()));
            }
        }
    }
    let mut sites = Vec::new();
    for (m, message) in conv.messages().iter().enumerate() {
        for (p, part) in message.parts().iter().enumerate() {
            let at = PartRef {
                message: m,
                part: p,
            };
            let holds = part.kind() == PartKind::ToolResult || part.holds_result();
            if !holds {
                continue;
            }
            let (call_at, call_name) = match call_of.get(&at) {
                Some((call, name)) => (*call, name.clone()),
                None => (at, None),
            };
            sites.push(ResultSite {
                at,
                call_at,
                tool_name: part.tool_name().map(str::to_owned).or(call_name),
                call_id: part.call_id().map(str::to_owned),
            });
        }
    }
    sites
}

/// The part at `at`.
pub(crate) fn part_at(conv: &Conversation, at: PartRef) -> Option<&Part> {
    conv.messages().get(at.message)?.parts().get(at.part)
}

/// The tool result held by the part at `at`, its shape and its text; `None` when the part
/// holds no result with text ([`result::read`]).
pub(crate) fn result_at(
    conv: &Conversation,
    at: PartRef,
) -> Option<(ResultShape, result::ResultText<'_>)> {
    let (shape, value) = part_at(conv, at)?.result_slot()?;
    Some((shape, result::read(shape, value)?))
}

/// The part at `at`, to edit.
pub(crate) fn part_mut(conv: &mut Conversation, at: PartRef) -> Option<&mut Part> {
    conv.messages_mut()
        .get_mut(at.message)?
        .parts_mut()
        .get_mut(at.part)
}

#[cfg(test)]
mod tests;
