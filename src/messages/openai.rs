//! OpenAI Chat Completions messages.
//!
//! `system` / `developer` / `user` / `assistant` messages have `content` as a string, an array
//! of parts (`text`, `refusal`, `image_url`, `input_audio`, `file`) or `null`; an assistant may
//! add `tool_calls` (`{id, type: "function", function: {name, arguments}}`, or `custom`) and
//! the legacy `function_call`. A `tool` message answers one call by `tool_call_id`; a legacy
//! `function` message answers the `function_call` just before it, by position.
//!
//! One role-less item is read too: the Responses API's compaction item,
//! `{type: "compaction", encrypted_content, id?, created_by?}` (what `/responses/compact` and
//! server-side compaction return, to be passed back as input). It is opaque: kept verbatim as
//! one whole-message part ([`PartKind::Unknown`], recognised by
//! [`super::is_native_compaction`]), read as the assistant's (the model wrote it).

use std::mem;

use serde_json::{json, Value};

use super::aisdk;
use super::content::parse_content;
use super::error::{as_obj, into_obj, opt_obj, opt_str, req_role, req_str, ParseError};
use super::format::Format;
use super::model::{Form, KeyCell, Message, MessageData, Part, PartInfo, PartKind, Role, Slot};

const ROLES: &str = "\"system\", \"developer\", \"user\", \"assistant\", \"tool\" or \"function\"";

pub(crate) fn parse_message(value: Value) -> Result<Message, ParseError> {
    let mut obj = into_obj(value)?;
    if !obj.contains_key("role") && obj.get("type").and_then(Value::as_str) == Some("compaction") {
        return compaction_item(obj);
    }
    let role = req_role(
        &obj,
        &[
            Role::System,
            Role::Developer,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Function,
        ],
        ROLES,
    )?;
    if matches!(role, Role::Tool | Role::Function) {
        let info = if role == Role::Tool {
            let id = req_str(&obj, "tool_call_id")?;
            PartInfo::of(PartKind::ToolResult)
                .id(Some(id))
                .name(opt_str(&obj, "name")?)
        } else {
            PartInfo::of(PartKind::ToolResult).name(Some(req_str(&obj, "name")?))
        };
        check_result_content(obj.get("content"))?;
        let part = Part::from_info(Format::OpenAi, Slot::Whole, info, Value::Object(obj));
        return Ok(Message::whole(Format::OpenAi, role, part));
    }
    opt_str(&obj, "name")?;
    // NOTE: read as OpenAI, an AI SDK UIMessage would have no content and count nothing.
    if aisdk::is_ui_message(&obj) {
        return Err(ParseError::ui_message("a string, an array or null"));
    }
    let content = obj.get_mut("content").map(mem::take);
    let (content_form, mut parts) = parse_content(Format::OpenAi, content, item_info)?;
    let mut tool_calls = Form::Absent;
    if role == Role::Assistant {
        match obj.get_mut("tool_calls") {
            None => {}
            Some(Value::Null) => tool_calls = Form::Null,
            Some(Value::Array(calls)) => {
                tool_calls = Form::Array;
                for (j, call) in mem::take(calls).into_iter().enumerate() {
                    let info = tool_call_info(&call)
                        .map_err(|e| e.under(format_args!(".tool_calls[{j}]")))?;
                    parts.push(Part::from_info(Format::OpenAi, Slot::ToolCall, info, call));
                }
            }
            Some(other) => {
                return Err(ParseError::expected(".tool_calls", "an array", Some(other)))
            }
        }
        match obj.get_mut("function_call") {
            None | Some(Value::Null) => {}
            Some(call) => {
                let info = function_call_info(call).map_err(|e| e.under(".function_call"))?;
                let call = mem::take(call);
                parts.push(Part::from_info(
                    Format::OpenAi,
                    Slot::FunctionCall,
                    info,
                    call,
                ));
            }
        }
    }
    Ok(Message::from(MessageData {
        role,
        format: Format::OpenAi,
        skeleton: obj,
        content: content_form,
        tool_calls,
        parts,
        skimmed: false,
        key: KeyCell::default(),
    }))
}

/// A Responses API compaction item: `encrypted_content` a string (required), `id` and
/// `created_by` strings when present. Every field stays as it is.
fn compaction_item(obj: serde_json::Map<String, Value>) -> Result<Message, ParseError> {
    req_str(&obj, "encrypted_content")?;
    // NOTE: `id` is the item's own, not a tool call's: it stays out of the part's call id so
    // that pairing never reads it as one.
    opt_str(&obj, "id")?;
    opt_str(&obj, "created_by")?;
    let part = Part::from_info(
        Format::OpenAi,
        Slot::Whole,
        PartInfo::of(PartKind::Unknown),
        Value::Object(obj),
    );
    Ok(Message::whole(Format::OpenAi, Role::Assistant, part))
}

/// A content part's shape.
fn item_info(value: &Value) -> Result<PartInfo, ParseError> {
    let obj = as_obj(value)?;
    Ok(match req_str(obj, "type")? {
        "text" => PartInfo::text(req_str(obj, "text")?, "text"),
        "refusal" => {
            req_str(obj, "refusal")?;
            PartInfo::of(PartKind::Text).key("refusal")
        }
        "image_url" => PartInfo::of(PartKind::Image),
        "input_audio" | "file" => PartInfo::of(PartKind::File),
        _ => PartInfo::of(PartKind::Unknown),
    })
}

fn tool_call_info(value: &Value) -> Result<PartInfo, ParseError> {
    let obj = as_obj(value)?;
    let id = req_str(obj, "id")?;
    opt_str(obj, "type")?;
    let name = if let Some(function) = opt_obj(obj, "function")? {
        opt_str(function, "arguments").map_err(|e| e.under(".function"))?;
        Some(req_str(function, "name").map_err(|e| e.under(".function"))?)
    } else if let Some(custom) = opt_obj(obj, "custom")? {
        opt_str(custom, "input").map_err(|e| e.under(".custom"))?;
        Some(req_str(custom, "name").map_err(|e| e.under(".custom"))?)
    } else {
        None
    };
    Ok(PartInfo::of(PartKind::ToolCall).id(Some(id)).name(name))
}

fn function_call_info(value: &Value) -> Result<PartInfo, ParseError> {
    let obj = as_obj(value)?;
    opt_str(obj, "arguments")?;
    Ok(PartInfo::of(PartKind::ToolCall).name(Some(req_str(obj, "name")?)))
}

/// A `tool` or `function` message's content: a string, text parts, or `null`.
fn check_result_content(content: Option<&Value>) -> Result<(), ParseError> {
    match content {
        None | Some(Value::Null | Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => {
            for (j, item) in items.iter().enumerate() {
                item_info(item).map_err(|e| e.under(format_args!(".content[{j}]")))?;
            }
            Ok(())
        }
        Some(other) => Err(ParseError::expected(
            ".content",
            "a string or an array",
            Some(other),
        )),
    }
}

/// The result message that answers `call`, with `text` as its content.
pub(crate) fn result_message(call: &Part, text: &str) -> Message {
    let (role, raw) = match call.call_id() {
        Some(id) => (
            Role::Tool,
            json!({ "role": "tool", "tool_call_id": id, "content": text }),
        ),
        None => (
            Role::Function,
            json!({ "role": "function", "name": call.tool_name().unwrap_or_default(), "content": text }),
        ),
    };
    let info = PartInfo::of(PartKind::ToolResult)
        .id(call.call_id())
        .name(call.tool_name());
    Message::whole(
        Format::OpenAi,
        role,
        Part::from_info(Format::OpenAi, Slot::Whole, info, raw),
    )
}
