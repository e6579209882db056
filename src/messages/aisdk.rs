//! Vercel AI SDK `ModelMessage` (v5), also reading v4's `CoreMessage` names.
//!
//! Roles are `system` (string content), `user`, `assistant` (string or parts) and `tool`
//! (parts). Parts: `text`, `image`, `file`, `reasoning`, `tool-call` (`toolCallId`, `toolName`,
//! `input`, v4 `args`) and `tool-result` (`toolCallId`, `toolName`, `output` typed `text`,
//! `json`, `error-text`, `error-json` or `content`; v4 `result`, `experimental_content` and
//! `isError`). Other part types are kept opaque.
//!
//! A `system`, `user` or `assistant` message with `parts` and no `content` is a `UIMessage`
//! (what `useChat` holds, v5 and later), read part by part as `convertToModelMessages` would
//! send it: `text`, `reasoning`, `file` (and `reasoning-file`), and tool parts
//! (`tool-<name>` or `dynamic-tool`, with `toolCallId`, `input`, and by `state` an `output`,
//! `errorText` or denial) as calls that hold their own result ([`Part::holds_result`]).
//! `step-start`, `source-url`, `source-document`, `data-*`, a tool call still streaming its
//! input, and what a user message (all but text and files) or a system message (all but text)
//! does not keep are [`PartKind::UiOnly`]: not sent.

use std::mem;

use serde_json::{json, Map, Value};

use super::content::parse_content;
use super::error::{as_obj, into_obj, opt_bool, opt_obj, opt_str, req_role, req_str, ParseError};
use super::format::Format;
use super::model::{Form, KeyCell, Message, MessageData, Part, PartInfo, PartKind, Role, Slot};

const ROLES: &str = "\"system\", \"user\", \"assistant\" or \"tool\"";

pub(crate) fn parse_message(value: Value) -> Result<Message, ParseError> {
    let mut obj = into_obj(value)?;
    let role = req_role(
        &obj,
        &[Role::System, Role::User, Role::Assistant, Role::Tool],
        ROLES,
    )?;
    if role != Role::Tool && is_ui_message(&obj) {
        return parse_ui_message(role, obj);
    }
    let content = match (role, obj.get_mut("content")) {
        (Role::Tool, Some(v @ Value::Array(_))) => Some(mem::take(v)),
        (Role::Tool, other) => {
            return Err(ParseError::expected(
                ".content",
                "an array",
                other.map(|v| &*v),
            ))
        }
        (_, Some(v @ (Value::String(_) | Value::Array(_)))) => Some(mem::take(v)),
        (_, other) => {
            return Err(ParseError::expected(
                ".content",
                "a string or an array",
                other.map(|v| &*v),
            ))
        }
    };
    let (content_form, parts) = parse_content(Format::AiSdk, content, part_info)?;
    Ok(Message::from(MessageData {
        role,
        format: Format::AiSdk,
        skeleton: obj,
        content: content_form,
        tool_calls: Form::Absent,
        parts,
        skimmed: false,
        key: KeyCell::default(),
    }))
}

/// Whether a message object is an AI SDK `UIMessage`: no `content` (absent or `null`), and a
/// `parts` array.
pub(crate) fn is_ui_message(obj: &Map<String, Value>) -> bool {
    matches!(obj.get("content"), None | Some(Value::Null))
        && matches!(obj.get("parts"), Some(Value::Array(_)))
}

/// A `UIMessage`: its `parts` become the message's parts (and are written back there).
fn parse_ui_message(role: Role, mut obj: Map<String, Value>) -> Result<Message, ParseError> {
    let items = match obj.get_mut("parts").map(mem::take) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let mut parts = Vec::with_capacity(items.len());
    for (j, value) in items.into_iter().enumerate() {
        let info = ui_part_info(role, &value).map_err(|e| e.under(format_args!(".parts[{j}]")))?;
        parts.push(Part::from_info(Format::AiSdk, Slot::UiPart, info, value));
    }
    Ok(Message::from(MessageData {
        role,
        format: Format::AiSdk,
        skeleton: obj,
        content: Form::Parts,
        tool_calls: Form::Absent,
        parts,
        skimmed: false,
        key: KeyCell::default(),
    }))
}

/// A `UIMessage` part's shape, and whether `convertToModelMessages` sends it for `role`.
fn ui_part_info(role: Role, value: &Value) -> Result<PartInfo, ParseError> {
    let obj = as_obj(value)?;
    let ty = req_str(obj, "type")?;
    Ok(match ty {
        "text" => PartInfo::text(req_str(obj, "text")?, "text"),
        // NOTE: a system message keeps its text parts only, joined.
        _ if role == Role::System => PartInfo::of(PartKind::UiOnly),
        "file" => {
            opt_str(obj, "url")?;
            opt_str(obj, "mediaType")?;
            PartInfo::of(PartKind::File)
        }
        "step-start" | "source-url" | "source-document" => PartInfo::of(PartKind::UiOnly),
        // NOTE: data parts are dropped unless the host passes a `convertDataPart`.
        _ if ty.starts_with("data-") => PartInfo::of(PartKind::UiOnly),
        // NOTE: a user message keeps its text and file parts only.
        _ if role == Role::User => PartInfo::of(PartKind::UiOnly),
        "reasoning" => {
            req_str(obj, "text")?;
            PartInfo::of(PartKind::Reasoning).key("text")
        }
        "reasoning-file" => PartInfo::of(PartKind::File),
        "dynamic-tool" => ui_tool_info(obj, req_str(obj, "toolName")?)?,
        _ => match ty.strip_prefix("tool-") {
            Some(name) => ui_tool_info(obj, name)?,
            None => PartInfo::of(PartKind::Unknown),
        },
    })
}

/// A `UIMessage` tool part: a call that holds its result once its `state` has one.
fn ui_tool_info(obj: &Map<String, Value>, name: &str) -> Result<PartInfo, ParseError> {
    let id = req_str(obj, "toolCallId")?;
    let state = opt_str(obj, "state")?;
    // NOTE: a call still streaming its input is not sent at all.
    if state == Some("input-streaming") {
        return Ok(PartInfo::of(PartKind::UiOnly));
    }
    Ok(PartInfo::of(PartKind::ToolCall)
        .id(Some(id))
        .name(Some(name))
        .error(matches!(state, Some("output-error" | "output-denied"))))
}

/// The top-level `system` of a `generateText`-style call: a string.
pub(crate) fn parse_system(value: Value) -> Result<Message, ParseError> {
    match value {
        Value::String(s) => Ok(Message::from(MessageData {
            role: Role::System,
            format: Format::AiSdk,
            skeleton: serde_json::Map::new(),
            content: Form::String,
            tool_calls: Form::Absent,
            parts: vec![Part::content_string(Format::AiSdk, s)],
            skimmed: false,
            key: KeyCell::default(),
        })),
        other => Err(ParseError::expected("", "a string", Some(&other))),
    }
}

fn part_info(value: &Value) -> Result<PartInfo, ParseError> {
    let obj = as_obj(value)?;
    Ok(match req_str(obj, "type")? {
        "text" => PartInfo::text(req_str(obj, "text")?, "text"),
        "image" => PartInfo::of(PartKind::Image),
        "file" => PartInfo::of(PartKind::File),
        "reasoning" => {
            req_str(obj, "text")?;
            PartInfo::of(PartKind::Reasoning).key("text")
        }
        "redacted-reasoning" => PartInfo::of(PartKind::RedactedReasoning),
        "tool-call" => {
            let id = req_str(obj, "toolCallId")?;
            PartInfo::of(PartKind::ToolCall)
                .id(Some(id))
                .name(Some(req_str(obj, "toolName")?))
        }
        "tool-result" => {
            let id = req_str(obj, "toolCallId")?;
            let name = opt_str(obj, "toolName")?;
            let mut is_error = opt_bool(obj, "isError")?.unwrap_or(false);
            if let Some(output) = opt_obj(obj, "output")? {
                let ty = req_str(output, "type").map_err(|e| e.under(".output"))?;
                // NOTE: `execution-denied` (v6) tells the model the tool did not run, like an error.
                is_error |= ty.starts_with("error-") || ty == "execution-denied";
            }
            PartInfo::of(PartKind::ToolResult)
                .id(Some(id))
                .name(name)
                .error(is_error)
        }
        _ => PartInfo::of(PartKind::Unknown),
    })
}

/// The `tool-result` part that answers `call`, with `text` as its output. A call written with
/// v4's `args` gets a v4 `result`.
pub(crate) fn result_part(call: &Part, text: &str) -> Part {
    let id = call.call_id().unwrap_or_default();
    let name = call.tool_name().unwrap_or_default();
    let v4 = call.raw().get("args").is_some() && call.raw().get("input").is_none();
    let raw = if v4 {
        json!({ "type": "tool-result", "toolCallId": id, "toolName": name, "result": text })
    } else {
        json!({ "type": "tool-result", "toolCallId": id, "toolName": name, "output": { "type": "text", "value": text } })
    };
    let info = PartInfo::of(PartKind::ToolResult)
        .id(Some(id))
        .name(Some(name));
    Part::from_info(Format::AiSdk, Slot::Item, info, raw)
}
