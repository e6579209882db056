//! Tier 3, evict tool inputs: the content argument of a file write or edit call is replaced by
//! a pointer to the path it was written to (the file is where it can be read back); the call,
//! its id and its other arguments stay. A long result of such a call becomes a short note.
//!
//! Tools are named by the host (default `write_file` and `edit_file`): nothing is guessed from
//! a name alone. A call without a path argument keeps its content, since nothing would say
//! where to find it. Calls of the latest `keepLastAssistantTurns` turns stay (the model may
//! still be working on what it just wrote). Evicting its own output changes nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::recovery::READ_TOOL;
use super::result;
use super::text::{group, line_count, utf16_len};
use super::{
    any_glob, part_at, part_mut, result_at, Action, Edit, Measure, Original, Report, Turns,
};
use crate::messages::{pair_tools, Conversation, PairingGraph, PartRef, ToolInput};

/// Options of `evictToolInputs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct EvictOptions {
    /// The file write/edit tools (names or `*` patterns). Default `write_file`, `edit_file`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tools: Vec<String>,
    /// Tool names (or patterns) never evicted, even when `tools` names them.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub exclude: Vec<String>,
    /// The arguments that hold written content. Default `content`, `new_text`, `new_string`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub input_fields: Vec<String>,
    /// The arguments that name the file, the first present wins. Default `path`, `file_path`,
    /// `filePath`, `filename`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub path_fields: Vec<String>,
    /// Calls of this many latest assistant turns stay. Default 1.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub keep_last_assistant_turns: usize,
    /// Results of these calls longer than this (UTF-16 code units) become a short note.
    /// Default 500.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub result_chars: usize,
    /// The model, for exact token figures. Default: estimated with o200k_base.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// Evict as of message `horizon`: only calls before it, aged as when the conversation
    /// ended there (the keeper's recorded decision; not an option of `evictToolInputs`).
    #[serde(skip)]
    pub horizon: Option<usize>,
}

impl Default for EvictOptions {
    fn default() -> Self {
        let owned = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        EvictOptions {
            tools: owned(&["write_file", "edit_file"]),
            exclude: Vec::new(),
            input_fields: owned(&["content", "new_text", "new_string"]),
            path_fields: owned(&["path", "file_path", "filePath", "filename"]),
            keep_last_assistant_turns: 1,
            result_chars: 500,
            model: None,
            horizon: None,
        }
    }
}

/// An evicted argument's value starts with this.
pub const EVICTED_PREFIX: &str = "[context-keeper evicted ";
/// The note an evicted call's long result becomes starts with this.
pub const RESULT_NOTE: &str = "completed; read the file for its content";

/// A conversation after eviction.
#[derive(Clone, Debug)]
pub struct Evicted {
    /// The conversation.
    pub conversation: Conversation,
    /// Indices of the messages that changed.
    pub edited: Vec<usize>,
    /// What was done.
    pub report: Report,
}

/// A tool call: its place, its result's, its tool name and its id.
type Call = (PartRef, Option<PartRef>, Option<String>, Option<String>);

/// The pointer that replaces an argument's content; `stored` names the id of a stored copy
/// (the keeper's).
pub fn evicted_text(field: &str, content: &str, path: &str, stored: Option<&str>) -> String {
    let copy = match stored {
        Some(id) => format!(", or the copy stored as id=\"{id}\" with {READ_TOOL}"),
        None => String::new(),
    };
    format!(
        "{EVICTED_PREFIX}{field}: {} characters, {} lines, written to {path}; read the file for its content{copy}]",
        group(utf16_len(content)),
        group(line_count(content))
    )
}

/// The note a long result of a write call becomes; `stored` names the id of a stored copy.
pub fn result_note(path: &str, stored: Option<&str>) -> String {
    match stored {
        Some(id) => format!("{RESULT_NOTE}: {path} (the full output is stored as id=\"{id}\", read it with {READ_TOOL})"),
        None => format!("{RESULT_NOTE}: {path}"),
    }
}

/// The input object of a call, parsed when it is OpenAI's `arguments` text.
pub(crate) fn input_object(input: ToolInput<'_>) -> Option<serde_json::Map<String, Value>> {
    match input {
        ToolInput::Json(Value::Object(map)) => Some(map.clone()),
        ToolInput::Json(_) => None,
        ToolInput::Text(text) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
    }
}

/// Evicts the written content of file write/edit calls in `conv`.
pub fn evict(conv: Conversation, options: &EvictOptions) -> Evicted {
    let graph = pair_tools(&conv);
    evict_paired(conv, options, &graph)
}

/// A file write or edit call whose content may be evicted: where it is, its result, and what
/// it wrote.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    /// The call.
    pub call_at: PartRef,
    /// Its result, when it has one.
    pub answer: Option<PartRef>,
    /// The tool's name.
    pub name: String,
    /// The call's id.
    pub id: Option<String>,
    /// The path written, as the call named it.
    pub path: String,
    /// The content arguments (field, text) not yet evicted.
    pub inputs: Vec<(String, String)>,
}

/// The calls of `conv` whose content [`evict`] may replace: calls of the configured tools,
/// before the horizon and older than the kept turns, that name a path.
#[inline(never)]
pub(crate) fn candidates<'g>(
    conv: &Conversation,
    options: &EvictOptions,
    graph: &'g PairingGraph,
) -> Vec<Candidate> {
    // NOTE: a history names few tools, each in many calls: each name is matched once, and
    // only the calls of matching tools are looked at further.
    let mut matched: Vec<(&str, bool)> = Vec::new();
    let mut named = |name: &'g str| match matched.iter().find(|(n, _)| *n == name) {
        Some(&(_, known)) => known,
        None => {
            let known = any_glob(&options.tools, name) && !any_glob(&options.exclude, name);
            matched.push((name, known));
            known
        }
    };
    // NOTE: pairing lists an AI SDK UIMessage tool part as a call that is its own result.
    let mut calls: Vec<Call> = Vec::new();
    for exchange in &graph.exchanges {
        for link in &exchange.calls {
            if link.name.as_deref().is_some_and(&mut named) {
                calls.push((link.call, link.result, link.name.clone(), link.id.clone()));
            }
        }
    }
    if calls.is_empty() {
        return Vec::new();
    }
    crate::sort::sort_by_key(&mut calls, |c| {
        crate::sort::fields(c.0.message as u64, c.0.part as u64)
    });
    let turns = Turns::until(conv, options.horizon);
    let mut out = Vec::new();
    for (call_at, answer, name, id) in calls {
        let after_horizon = options
            .horizon
            .is_some_and(|h| call_at.message >= h || answer.is_some_and(|a| a.message >= h));
        if after_horizon || turns.age(call_at) < options.keep_last_assistant_turns {
            continue;
        }
        let Some(name) = name else {
            continue;
        };
        let Some(part) = part_at(conv, call_at) else {
            continue;
        };
        let Some(input) = part.tool_input().and_then(input_object) else {
            continue;
        };
        let path = options
            .path_fields
            .iter()
            .find_map(|f| input.get(f).and_then(Value::as_str));
        let Some(path) = path else { continue };
        let inputs = (options.input_fields.iter())
            .filter_map(|field| {
                let content = input.get(field).and_then(Value::as_str)?;
                (!content.starts_with(EVICTED_PREFIX)).then(|| (field.clone(), content.to_owned()))
            })
            .collect();
        out.push(Candidate {
            call_at,
            answer,
            name,
            id,
            path: path.to_owned(),
            inputs,
        });
    }
    out
}

/// [`evict`] with `conv`'s tool pairing, which the caller has at hand (a conversation whose
/// results were only rewritten pairs as before).
pub(crate) fn evict_paired(
    conv: Conversation,
    options: &EvictOptions,
    graph: &PairingGraph,
) -> Evicted {
    let measure = Measure::for_model(options.model.as_deref());
    // (call place, field, replacement, edit) and (result place, note, edit)
    let mut inputs: Vec<(PartRef, String, String, Edit)> = Vec::new();
    let mut results: Vec<(PartRef, String, Edit)> = Vec::new();
    for candidate in candidates(&conv, options, graph) {
        let Candidate {
            call_at,
            answer,
            name,
            id,
            path,
            inputs: fields,
        } = candidate;
        for (field, content) in fields {
            let replacement = evicted_text(&field, &content, &path, None);
            let (before, after) = (measure.tokens(&content), measure.tokens(&replacement));
            if after >= before {
                continue;
            }
            inputs.push((
                call_at,
                field.clone(),
                replacement,
                Edit {
                    action: Action::EvictInput,
                    message_index: call_at.message,
                    part_index: call_at.part,
                    tool_name: Some(name.clone()),
                    tool_call_id: id.clone(),
                    field: Some(field),
                    tokens_before: before,
                    tokens_after: after,
                    estimated: measure.estimated(),
                    original: Original::File { path: path.clone() },
                },
            ));
        }
        let Some(answer) = answer else { continue };
        let Some((_, text)) = result_at(&conv, answer) else {
            continue;
        };
        if utf16_len(&text.text) <= options.result_chars || text.text.starts_with(RESULT_NOTE) {
            continue;
        }
        let note = result_note(&path, None);
        let (before, after) = (measure.tokens(&text.text), measure.tokens(&note));
        if after >= before {
            continue;
        }
        results.push((
            answer,
            note,
            Edit {
                action: Action::EvictResult,
                message_index: answer.message,
                part_index: answer.part,
                tool_name: Some(name.clone()),
                tool_call_id: id.clone(),
                field: None,
                tokens_before: before,
                tokens_after: after,
                estimated: measure.estimated(),
                original: Original::File { path },
            },
        ));
    }
    let mut conversation = conv;
    let mut report = Report::default();
    let mut edited = Vec::new();
    let mut edits: Vec<Edit> = Vec::new();
    for (at, field, replacement, edit) in inputs {
        let done = part_mut(&mut conversation, at).is_some_and(|part| {
            part.set_input_field(&field, Value::String(replacement))
                .is_ok()
        });
        if done {
            edited.push(at.message);
            edits.push(edit);
        }
    }
    for (at, note, edit) in results {
        if let Some((shape, value)) =
            part_mut(&mut conversation, at).and_then(|p| p.result_slot_mut())
        {
            result::write(shape, value, note);
            edited.push(at.message);
            edits.push(edit);
        }
    }
    crate::sort::sort_by_key(&mut edits, |e| {
        crate::sort::fields(e.message_index as u64, e.part_index as u64)
    });
    for edit in edits {
        report.push(edit);
    }
    crate::sort::sort_by_key(&mut edited, |&m| m as u128);
    edited.dedup();
    Evicted {
        conversation,
        edited,
        report,
    }
}
