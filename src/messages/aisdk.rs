//! Vercel AI SDK `ModelMessage` (v5), also reading v4's `CoreMessage` names.
//!
//! Roles are `system` (string content), `user`, `assistant` (string or parts) and `tool`
//! (parts). Parts: `text`, `image`, `file`, `reasoning`, `tool-call` (`toolCallId`, `toolName`,
//! `input`, v4 `args`) and `tool-result` (`toolCallId`, `toolName`, `output` typed `text`,
//! `json`, `error-text`, `error-json` or `content`; v4 `result` and `isError`). Other part types
//! are kept opaque.

use std::mem;

use serde_json::{json, Value};

use super::error::{as_obj, into_obj, opt_bool, opt_obj, opt_str, req_role, req_str, ParseError};
use super::model::{Form, Format, Message, Part, PartInfo, PartKind, Role, Slot};
use super::parse_content;

const ROLES: &str = "\"system\", \"user\", \"assistant\" or \"tool\"";

pub(crate) fn parse_message(value: Value) -> Result<Message, ParseError> {
    let mut obj = into_obj(value)?;
    let role = req_role(
        &obj,
        &[Role::System, Role::User, Role::Assistant, Role::Tool],
        ROLES,
    )?;
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
    Ok(Message {
        role,
        format: Format::AiSdk,
        skeleton: obj,
        content: content_form,
        tool_calls: Form::Absent,
        parts,
        skimmed: false,
    })
}

/// The top-level `system` of a `generateText`-style call: a string.
pub(crate) fn parse_system(value: Value) -> Result<Message, ParseError> {
    match value {
        Value::String(s) => Ok(Message {
            role: Role::System,
            format: Format::AiSdk,
            skeleton: serde_json::Map::new(),
            content: Form::String,
            tool_calls: Form::Absent,
            parts: vec![Part::content_string(Format::AiSdk, s)],
            skimmed: false,
        }),
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
