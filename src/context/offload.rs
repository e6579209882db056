//! Tier 1, offload: a tool result over a token limit is saved to the store and replaced by a
//! pointer, its size and a preview; the model reads the rest back with the recovery tools.
//!
//! Sans-IO in two steps. [`plan_messages`] (a conversation) and [`plan_result`] (one result, at
//! the moment a tool returns) decide what to offload and return the [`Save`]s; the driver
//! performs them; `apply` replaces exactly the parts whose save came back [`Outcome::Saved`]
//! and reports the others as failures, leaving them as they were. The key of a result derives
//! from its call id and content only ([`offload_id`]), so the same result always gets the same
//! pointer and saving it again is harmless.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::archive;
use super::recovery::{self, hex, sha256_hex, RecordHeader, GREP_TOOL, LIST_TOOL, READ_TOOL};
use super::result::{self, ResultText};
use super::text::{cap_line, group, line_count};
use super::{
    part_mut, result_at, result_sites, Edit, Failure, Measure, Original, Outcome, Report,
    ResultSite, Save,
};
use super::{Action, NAMESPACE};
use crate::messages::{Conversation, PartRef, ResultShape};

/// Results over this many tokens are offloaded.
pub const DEFAULT_LIMIT_TOKENS: u64 = 20_000;
/// Lines of the head of a preview.
pub const DEFAULT_PREVIEW_LINES: usize = 10;
/// Lines of the tail of a preview.
pub const DEFAULT_PREVIEW_TAIL_LINES: usize = 3;
pub use super::recovery::DEFAULT_LINE_CHARS;
/// Tools whose results are never offloaded: small bookkeeping tools, and the recovery tools
/// themselves, so a read-back is never offloaded again.
pub const DEFAULT_EXCLUDE: [&str; 5] = [
    "write_todos",
    "list_skills",
    READ_TOOL,
    LIST_TOOL,
    GREP_TOOL,
];

/// The `kind` component of offload keys.
pub const KIND: &str = "offload";

/// Every pointer starts with this text; results that do are never offloaded again.
pub const POINTER_PREFIX: &str = "[offloaded tool output id=\"";

/// Options of `offloadToolResult` and `offloadMessages` (the store and the timeout are the
/// driver's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct OffloadOptions {
    /// The session the offloaded content belongs to: the second component of its keys.
    pub session_id: String,
    /// Results over this many tokens are offloaded. Default 20,000 (the ContextKeeper's
    /// default: an eighth of the window when that is less).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub limit_tokens: Option<u64>,
    /// The model, for exact token figures (its encoding). Default: estimated with o200k_base.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// Lines shown from the start of an offloaded result. Default 10.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub preview_lines: usize,
    /// Lines shown from its end. Default 3.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub preview_tail_lines: usize,
    /// Each preview line is cut to this many characters. Default 300.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub line_chars: usize,
    /// Tool names (or `*` patterns) never offloaded. Default: `write_todos`, `list_skills`
    /// and the recovery tools. Giving a list replaces the default; the recovery tools are
    /// always excluded.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub exclude: Vec<String>,
    /// The tool's name (`offloadToolResult` only).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_name: Option<String>,
    /// The tool call's id (`offloadToolResult` only).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_call_id: Option<String>,
}

impl OffloadOptions {
    /// Results over this many tokens are offloaded.
    pub fn limit(&self) -> u64 {
        self.limit_tokens.unwrap_or(DEFAULT_LIMIT_TOKENS)
    }
}

impl Default for OffloadOptions {
    fn default() -> Self {
        OffloadOptions {
            session_id: String::new(),
            limit_tokens: None,
            model: None,
            preview_lines: DEFAULT_PREVIEW_LINES,
            preview_tail_lines: DEFAULT_PREVIEW_TAIL_LINES,
            line_chars: DEFAULT_LINE_CHARS,
            exclude: DEFAULT_EXCLUDE.map(str::to_owned).to_vec(),
            tool_name: None,
            tool_call_id: None,
        }
    }
}

impl OffloadOptions {
    pub(crate) fn excludes(&self, tool: Option<&str>) -> bool {
        let Some(tool) = tool else { return false };
        [READ_TOOL, LIST_TOOL, GREP_TOOL].contains(&tool) || super::any_glob(&self.exclude, tool)
    }
}

/// What an offloaded result became: its id and size. Also the header of its stored record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Offloaded {
    /// The store key.
    pub key: Vec<String>,
    /// The id the pointer names and the recovery tools take.
    pub id: String,
    /// Tokens of the offloaded text.
    pub tokens: u64,
    /// Whether `tokens` is an estimate.
    pub estimated: bool,
    /// Lines of the offloaded text.
    pub lines: usize,
    /// Its UTF-8 bytes.
    pub bytes: usize,
}

/// The id of an offloaded result: the call id (its characters outside `[A-Za-z0-9_-]` as `_`,
/// at most 40 of them; `result` without one), `-`, and the first 16 hex digits of the SHA-256
/// of the call id, a NUL and `text_sha256` (the text's own SHA-256, which the record keeps, so
/// the text is hashed once). Stable across runs and releases.
pub fn offload_id(call_id: Option<&str>, text_sha256: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(call_id.unwrap_or_default().as_bytes());
    hash.update([0]);
    hash.update(text_sha256.as_bytes());
    let hex = hex(hash.finalize().get(..8).unwrap_or_default());
    let stem: String = match call_id.filter(|id| !id.is_empty()) {
        Some(id) => id
            .chars()
            .take(40)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect(),
        None => "result".to_owned(),
    };
    format!("{stem}-{hex}")
}

/// The store key prefix under which a session's offloaded results are.
pub fn offload_prefix(session_id: &str) -> Vec<String> {
    [NAMESPACE, session_id, KIND].map(str::to_owned).to_vec()
}

/// The store key of an offloaded result.
pub fn offload_key(session_id: &str, id: &str) -> Vec<String> {
    let mut key = offload_prefix(session_id);
    key.push(id.to_owned());
    key
}

/// The id named by a pointer, if `text` is one.
pub fn pointer_id(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(POINTER_PREFIX)?;
    rest.get(..rest.find('"')?)
}

/// The text that replaces an offloaded result: the pointer line, a preview of its first and
/// last lines (each capped), and how to read the rest.
pub fn pointer_text(offloaded: &Offloaded, text: &str, options: &OffloadOptions) -> String {
    let mut out = format!(
        "{POINTER_PREFIX}{}\": {} tokens{}, {} lines, {} bytes]\n",
        offloaded.id,
        group(offloaded.tokens as usize),
        if offloaded.estimated {
            " (estimated)"
        } else {
            ""
        },
        group(offloaded.lines),
        group(offloaded.bytes),
    );
    let total = offloaded.lines;
    let (head, tail) = (options.preview_lines, options.preview_tail_lines);
    let cap = options.line_chars;
    let mut push = |line: &str| {
        out.push_str(&cap_line(line, cap));
        out.push('\n');
    };
    if total <= head + tail {
        push("Preview:");
        text.lines().for_each(&mut push);
    } else {
        push(&format!("First {head} lines:"));
        text.lines().take(head).for_each(&mut push);
        push(&format!(
            "[... {} lines not shown ...]",
            group(total - head - tail)
        ));
        if tail > 0 {
            push(&format!("Last {tail} lines:"));
            let last: Vec<&str> = text.lines().rev().take(tail).collect();
            last.into_iter().rev().for_each(&mut push);
        }
    }
    out.push_str(&format!(
        "The full output is stored. Read it by lines with {READ_TOOL} {{\"id\": \"{}\", \"offset\": {}, \"limit\": 200}}, or search it with {GREP_TOOL} {{\"pattern\": \"...\", \"id\": \"{}\"}}.",
        offloaded.id,
        head.min(total) + 1,
        offloaded.id
    ));
    out
}

/// One result to offload, decided.
#[derive(Clone, Debug)]
struct Step {
    at: PartRef,
    shape: ResultShape,
    save: Save,
    replacement: String,
    edit: Edit,
}

/// Decides for one result text: `None` when it stays (under the limit, already a pointer).
fn decide(
    text: &ResultText<'_>,
    call_id: Option<&str>,
    tool_name: Option<&str>,
    options: &OffloadOptions,
    measure: &Measure,
) -> Option<(Offloaded, Save, String, u64)> {
    // NOTE: a token covers at least one byte, so a text of no more bytes than the limit is
    // under it without counting.
    let limit = options.limit();
    if text.text.len() as u64 <= limit || pointer_id(&text.text).is_some() {
        return None;
    }
    if options.excludes(tool_name) {
        return None;
    }
    let tokens = measure.tokens(&text.text);
    if tokens <= limit {
        return None;
    }
    let sha256 = sha256_hex(&text.text);
    let id = offload_id(call_id, &sha256);
    let key = offload_key(&options.session_id, &id);
    let offloaded = Offloaded {
        key: key.clone(),
        id,
        tokens,
        estimated: measure.estimated(),
        lines: line_count(&text.text),
        bytes: text.text.len(),
    };
    let header = RecordHeader {
        v: 1,
        id: offloaded.id.clone(),
        tool_name: tool_name.map(str::to_owned),
        tool_call_id: call_id.map(str::to_owned),
        tokens,
        estimated: offloaded.estimated,
        lines: offloaded.lines,
        bytes: offloaded.bytes,
        sha256,
    };
    let save = Save {
        key,
        bytes: header.encode(&text.text),
    };
    let replacement = pointer_text(&offloaded, &text.text, options);
    let after = measure.tokens(&replacement);
    Some((offloaded, save, replacement, after))
}

/// What to offload in a conversation: its saves, and the edits that wait for them.
#[derive(Clone, Debug)]
pub struct OffloadPlan {
    conversation: Conversation,
    steps: Vec<Step>,
}

/// A conversation after [`OffloadPlan::apply`].
#[derive(Clone, Debug)]
pub struct OffloadedMessages {
    /// The conversation, with the confirmed offloads made.
    pub conversation: Conversation,
    /// Indices of the messages that changed; every other message is as it was read.
    pub edited: Vec<usize>,
    /// Every offload and every failure.
    pub report: Report,
}

/// Plans the offload of every tool result of `conv` over the limit: results of excluded tools
/// and pointers stay.
pub fn plan_messages(conv: Conversation, options: &OffloadOptions) -> OffloadPlan {
    let sites = result_sites(&conv);
    plan_sites(conv, options, &sites)
}

/// [`plan_messages`] with `conv`'s [`result_sites`], which the caller has at hand.
pub(crate) fn plan_sites(
    conv: Conversation,
    options: &OffloadOptions,
    sites: &[ResultSite],
) -> OffloadPlan {
    let measure = Measure::for_model(options.model.as_deref());
    let mut steps = Vec::new();
    for site in sites {
        let Some((shape, text)) = result_at(&conv, site.at) else {
            continue;
        };
        let tool = site.tool_name.as_deref();
        let call_id = site.call_id.as_deref();
        let Some((offloaded, save, replacement, after)) =
            decide(&text, call_id, tool, options, &measure)
        else {
            continue;
        };
        steps.push(Step {
            at: site.at,
            shape,
            save,
            replacement,
            edit: Edit {
                action: Action::Offload,
                message_index: site.at.message,
                part_index: site.at.part,
                tool_name: site.tool_name.clone(),
                tool_call_id: site.call_id.clone(),
                field: None,
                tokens_before: offloaded.tokens,
                tokens_after: after,
                estimated: offloaded.estimated,
                original: Original::Store {
                    key: offloaded.key,
                    id: offloaded.id,
                },
            },
        });
    }
    OffloadPlan {
        conversation: conv,
        steps,
    }
}

impl OffloadPlan {
    /// The saves to make, in order; [`OffloadPlan::apply`] takes one outcome for each.
    pub fn saves(&self) -> impl Iterator<Item = &Save> {
        self.steps.iter().map(|s| &s.save)
    }

    /// The id of each offload, in the order of the saves.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(|s| match &s.edit.original {
            Original::Store { id, .. } => id.as_str(),
            _ => "",
        })
    }

    /// How many saves there are.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether nothing is to be offloaded.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Makes the offloads whose save was confirmed. A missing outcome counts as a failure.
    pub fn apply(self, outcomes: &[Outcome]) -> OffloadedMessages {
        let OffloadPlan {
            mut conversation,
            steps,
        } = self;
        let mut report = Report::default();
        let mut edited = Vec::new();
        for (i, step) in steps.into_iter().enumerate() {
            match outcomes.get(i) {
                Some(Outcome::Saved) => {}
                other => {
                    report.failures.push(failure(&step, other));
                    continue;
                }
            }
            let Some((_, value)) =
                part_mut(&mut conversation, step.at).and_then(|part| part.result_slot_mut())
            else {
                continue;
            };
            result::write(step.shape, value, step.replacement);
            if edited.last() != Some(&step.at.message) {
                edited.push(step.at.message);
            }
            report.push(step.edit);
        }
        OffloadedMessages {
            conversation,
            edited,
            report,
        }
    }
}

fn failure(step: &Step, outcome: Option<&Outcome>) -> Failure {
    Failure {
        message_index: step.at.message,
        part_index: step.at.part,
        tool_name: step.edit.tool_name.clone(),
        tool_call_id: step.edit.tool_call_id.clone(),
        key: step.save.key.clone(),
        reason: match outcome {
            Some(Outcome::Failed(reason)) => reason.clone(),
            _ => "the save has no outcome".to_owned(),
        },
    }
}

/// The shape of a lone tool result, as a tool returns it: a string or content blocks
/// (Anthropic `tool_result` content, OpenAI content parts), an AI SDK output
/// (`{type: "text" | "json" | "content" | "error-text" | "error-json", value}`), or any other
/// JSON value.
pub fn shape_of(result: &Value) -> ResultShape {
    let output_type = result.get("type").and_then(Value::as_str);
    let is_output = result.get("value").is_some()
        && matches!(
            output_type,
            Some("text" | "json" | "content" | "error-text" | "error-json")
        );
    match result {
        Value::String(_) | Value::Array(_) => ResultShape::Content,
        Value::Object(_) if is_output => ResultShape::Output,
        _ => ResultShape::Plain,
    }
}

/// The offload of one result, decided.
#[derive(Clone, Debug)]
pub struct ResultPlan {
    content: Value,
    step: Option<(ResultShape, Offloaded, Save, String)>,
}

/// A lone result after [`ResultPlan::apply`].
#[derive(Clone, Debug, PartialEq)]
pub struct OffloadedResult {
    /// The result to hand the model: the pointer (in the result's own shape, images kept), or
    /// the result as it was.
    pub content: Value,
    /// The offload, when it was made.
    pub offloaded: Option<Offloaded>,
    /// Why the result stayed although it is over the limit.
    pub failure: Option<String>,
}

/// Plans the offload of one tool result (`tool_name` and `tool_call_id` from the options).
pub fn plan_result(result: Value, options: &OffloadOptions) -> ResultPlan {
    let measure = Measure::for_model(options.model.as_deref());
    let shape = shape_of(&result);
    let step = result::read(shape, &result).and_then(|text| {
        let (offloaded, save, replacement, _) = decide(
            &text,
            options.tool_call_id.as_deref(),
            options.tool_name.as_deref(),
            options,
            &measure,
        )?;
        Some((shape, offloaded, save, replacement))
    });
    ResultPlan {
        content: result,
        step,
    }
}

impl ResultPlan {
    /// The save to make, if the result is to be offloaded.
    pub fn save(&self) -> Option<&Save> {
        self.step.as_ref().map(|(_, _, save, _)| save)
    }

    /// The result after the save's outcome (`None`: no save was planned).
    pub fn apply(self, outcome: Option<&Outcome>) -> OffloadedResult {
        let ResultPlan {
            mut content, step, ..
        } = self;
        let Some((shape, offloaded, _, replacement)) = step else {
            return OffloadedResult {
                content,
                offloaded: None,
                failure: None,
            };
        };
        match outcome {
            Some(Outcome::Saved) => {
                result::write(shape, &mut content, replacement);
                OffloadedResult {
                    content,
                    offloaded: Some(offloaded),
                    failure: None,
                }
            }
            other => OffloadedResult {
                content,
                offloaded: None,
                failure: Some(match other {
                    Some(Outcome::Failed(reason)) => reason.clone(),
                    _ => "the save has no outcome".to_owned(),
                }),
            },
        }
    }
}

/// Whether a save of `bytes` under `key` reads the key first: a copy stored there already must
/// not be overwritten by a write that may fail halfway. Offload records (by id: a header naming
/// a checksum) and archives are read first; other keys are written straight away.
pub fn reads_before_write(key: &[String], bytes: &[u8]) -> bool {
    match key.get(2).map(String::as_str) {
        Some(archive::KIND) => true,
        Some(KIND) => key.get(3).is_some() && recovery::decode_header(bytes).is_some(),
        _ => false,
    }
}

/// Whether `stored`, what `key` holds, is already the copy a save of `bytes` would write: the
/// same bytes for an archive; for an offload record, a header naming the same checksum and a
/// text that matches it (a torn copy is not: writing repairs it).
pub fn holds_copy(key: &[String], bytes: &[u8], stored: &[u8]) -> bool {
    match key.get(2).map(String::as_str) {
        Some(archive::KIND) => stored == bytes,
        Some(KIND) => {
            let (Some(id), Some(wanted)) = (key.get(3), recovery::decode_header(bytes)) else {
                return false;
            };
            recovery::decode(id, stored).is_ok_and(|(header, _)| header.sha256 == wanted.sha256)
        }
        _ => false,
    }
}
