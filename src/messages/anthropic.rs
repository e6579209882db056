//! Anthropic Messages.
//!
//! Messages are `user` or `assistant`, with `content` a string or an array of blocks: `text`,
//! `image`, `document`, `tool_use` (`id`, `name`, `input`), `tool_result` (`tool_use_id`,
//! `content` as a string or blocks, `is_error`), `thinking` (`thinking`, `signature`) and
//! `redacted_thinking` (`data`). Other block types (server tools, search results, citations
//! containers...) are kept opaque. The system prompt is not a message: it is the request's
//! top-level `system`, a string or text blocks, so pass the request object
//! `{system, messages, ...}` to keep it; it is read as a [`Role::System`] message.

use std::mem;

use serde_json::{json, Value};

use super::aisdk;
use super::content::parse_content;
use super::error::{as_obj, into_obj, opt_bool, opt_str, req_role, req_str, ParseError};
use super::format::Format;
use super::model::{Form, KeyCell, Message, MessageData, Part, PartInfo, PartKind, Role, Slot};

const ROLES: &str = "\"user\" or \"assistant\"";

pub(crate) fn parse_message(value: Value) -> Result<Message, ParseError> {
    let mut obj = into_obj(value)?;
    let role = req_role(&obj, &[Role::User, Role::Assistant], ROLES)?;
    if aisdk::is_ui_message(&obj) {
        return Err(ParseError::ui_message("a string or an array"));
    }
    let content = match obj.get_mut("content") {
        Some(v @ (Value::String(_) | Value::Array(_))) => Some(mem::take(v)),
        other => {
            return Err(ParseError::expected(
                ".content",
                "a string or an array",
                other.map(|v| &*v),
            ))
        }
    };
    let (content_form, parts) = parse_content(Format::Anthropic, content, block_info)?;
    Ok(Message::from(MessageData {
        role,
        format: Format::Anthropic,
        skeleton: obj,
        content: content_form,
        tool_calls: Form::Absent,
        parts,
        skimmed: false,
        key: KeyCell::default(),
    }))
}

/// The top-level `system`: a string or text blocks.
pub(crate) fn parse_system(value: Value) -> Result<Message, ParseError> {
    let (content, parts) = match value {
        Value::String(s) => (
            Form::String,
            vec![Part::content_string(Format::Anthropic, s)],
        ),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for (j, item) in items.into_iter().enumerate() {
                let info = block_info(&item).map_err(|e| e.under(format_args!("[{j}]")))?;
                parts.push(Part::from_info(Format::Anthropic, Slot::Item, info, item));
            }
            (Form::Array, parts)
        }
        other => {
            return Err(ParseError::expected(
                "",
                "a string or an array",
                Some(&other),
            ))
        }
    };
    Ok(Message::from(MessageData {
        role: Role::System,
        format: Format::Anthropic,
        skeleton: serde_json::Map::new(),
        content,
        tool_calls: Form::Absent,
        parts,
        skimmed: false,
        key: KeyCell::default(),
    }))
}

fn block_info(value: &Value) -> Result<PartInfo, ParseError> {
    let obj = as_obj(value)?;
    Ok(match req_str(obj, "type")? {
        "text" => PartInfo::text(req_str(obj, "text")?, "text"),
        "image" => PartInfo::of(PartKind::Image),
        "document" => PartInfo::of(PartKind::File),
        "thinking" => {
            req_str(obj, "thinking")?;
            opt_str(obj, "signature")?;
            PartInfo::of(PartKind::Reasoning).key("thinking")
        }
        "redacted_thinking" => PartInfo::of(PartKind::RedactedReasoning),
        "tool_use" => {
            let id = req_str(obj, "id")?;
            PartInfo::of(PartKind::ToolCall)
                .id(Some(id))
                .name(Some(req_str(obj, "name")?))
        }
        "tool_result" => {
            let id = req_str(obj, "tool_use_id")?;
            let is_error = opt_bool(obj, "is_error")?.unwrap_or(false);
            match obj.get("content") {
                None | Some(Value::Null | Value::String(_)) => {}
                Some(Value::Array(items)) => {
                    for (k, item) in items.iter().enumerate() {
                        nested_block(item).map_err(|e| e.under(format_args!(".content[{k}]")))?;
                    }
                }
                Some(other) => {
                    return Err(ParseError::expected(
                        ".content",
                        "a string or an array",
                        Some(other),
                    ))
                }
            }
            PartInfo::of(PartKind::ToolResult)
                .id(Some(id))
                .error(is_error)
        }
        _ => PartInfo::of(PartKind::Unknown),
    })
}

/// A block inside a `tool_result`'s content.
fn nested_block(value: &Value) -> Result<(), ParseError> {
    let obj = as_obj(value)?;
    if req_str(obj, "type")? == "text" {
        req_str(obj, "text")?;
    }
    Ok(())
}

/// The `tool_result` block that answers `call`, with `text` as its content.
pub(crate) fn result_block(call: &Part, text: &str) -> Part {
    let id = call.call_id().unwrap_or_default();
    let raw = json!({ "type": "tool_result", "tool_use_id": id, "content": text });
    let info = PartInfo::of(PartKind::ToolResult).id(Some(id));
    Part::from_info(Format::Anthropic, Slot::Item, info, raw)
}
