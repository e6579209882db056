//! What the integration tests share: generated conversations rendered as a host would hand
//! them over, in each dialect (OpenAI, Anthropic, AI SDK ModelMessage and UIMessage). Used by
//! tests/keeper_faults.rs (the fault campaign) and tests/context_props.rs (the tiers'
//! properties), each with its own generators of [`Conv`].
// NOTE: each test crate that declares `mod common;` uses a part of this.
#![allow(dead_code)]

use context_keeper::messages::{CompactionMarker, Format};
use serde_json::{json, Value};

/// The four dialects: the three formats, and the AI SDK's UIMessage beside its ModelMessage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Anthropic,
    ModelMessage,
    UiMessage,
}

impl Dialect {
    pub fn format(self) -> Format {
        match self {
            Dialect::OpenAi => Format::OpenAi,
            Dialect::Anthropic => Format::Anthropic,
            Dialect::ModelMessage | Dialect::UiMessage => Format::AiSdk,
        }
    }
}

#[derive(Clone, Debug)]
pub struct ToolCall {
    pub tool: &'static str,
    pub path: String,
    pub body: String,
    pub result: String,
    pub image: bool,
    pub error: bool,
}

#[derive(Clone, Debug)]
pub enum Step {
    User {
        text: String,
        image: bool,
    },
    Assistant(String),
    Exchange {
        thinking: Option<String>,
        text: Option<String>,
        calls: Vec<ToolCall>,
    },
    /// A provider-native compaction item (where the format has one).
    Native(String),
    /// Our own marker, as a previous prepare would have written it.
    Marker(String),
}

#[derive(Clone, Debug)]
pub struct Conv {
    pub dialect: Dialect,
    pub system: Option<String>,
    pub steps: Vec<Step>,
}

pub fn input_of(call: &ToolCall) -> Value {
    let field = if call.tool == "edit_file" {
        "new_string"
    } else {
        "content"
    };
    json!({ "path": call.path, field: call.body, "mode": "w" })
}

pub fn marker_text(summary: &str) -> String {
    CompactionMarker {
        number: 1,
        time: Some("2026-01-01T00:00:00Z".into()),
        archived_messages: 4,
        tokens_before: 1_000,
        summary: summary.to_owned(),
        ..CompactionMarker::default()
    }
    .to_text()
}

pub const PNG: &str = "iVBORw0KGgo=";

/// Appends a message; in Anthropic's format, where two messages in a row of one role are
/// invalid, a short turn of the other role goes between them.
pub fn push(out: &mut Vec<Value>, d: Dialect, message: Value) {
    if d == Dialect::Anthropic {
        let role = role_of(&message).to_owned();
        let last = out.last().map(|m| role_of(m).to_owned());
        let filler = match (last.as_deref(), role.as_str()) {
            (None, "assistant") | (Some("assistant"), "assistant") => Some("user"),
            (Some("user"), "user") => Some("assistant"),
            _ => None,
        };
        if let Some(filler) = filler {
            out.push(json!({"role": filler, "content": format!("({filler} goes on)")}));
        }
    }
    out.push(message);
}

/// The conversation as the host would hand it over, in its dialect.
pub fn render(conv: &Conv) -> Value {
    render_from(conv, 0)
}

/// [`render`], with step `k` numbered `offset + k` (message and call ids).
pub fn render_from(conv: &Conv, offset: usize) -> Value {
    let mut out = Vec::new();
    let d = conv.dialect;
    let text_msg = |role: &str, text: &str, id: usize| -> Value {
        match d {
            Dialect::UiMessage => {
                json!({"id": format!("m{id}"), "role": role, "parts": [{"type": "text", "text": text}]})
            }
            Dialect::ModelMessage if role == "assistant" => {
                json!({"role": role, "content": [{"type": "text", "text": text}]})
            }
            _ => json!({"role": role, "content": text}),
        }
    };
    if let (Some(system), false) = (&conv.system, d == Dialect::Anthropic) {
        push(&mut out, d, text_msg("system", system, 0));
    }
    for (k, step) in conv.steps.iter().enumerate() {
        let id = offset + k + 1;
        match step {
            Step::User { text, image } => {
                if !image {
                    push(&mut out, d, text_msg("user", text, id));
                    continue;
                }
                push(
                    &mut out,
                    d,
                    match d {
                        Dialect::OpenAi => json!({"role": "user", "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]}),
                        Dialect::Anthropic => json!({"role": "user", "content": [
                        {"type": "text", "text": text},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}),
                        Dialect::ModelMessage => json!({"role": "user", "content": [
                        {"type": "text", "text": text},
                        {"type": "image", "image": PNG, "mediaType": "image/png"}]}),
                        Dialect::UiMessage => {
                            json!({"id": format!("m{id}"), "role": "user", "parts": [
                        {"type": "text", "text": text},
                        {"type": "file", "mediaType": "image/png", "url": format!("data:image/png;base64,{PNG}")}]})
                        }
                    },
                );
            }
            Step::Assistant(text) => push(&mut out, d, text_msg("assistant", text, id)),
            Step::Marker(summary) => {
                // NOTE: the keeper writes its marker as a user message in every format.
                push(&mut out, d, text_msg("user", &marker_text(summary), id));
            }
            Step::Native(summary) => match d {
                // Chat Completions has no native compaction item: plain assistant text.
                Dialect::OpenAi => push(&mut out, d, text_msg("assistant", summary, id)),
                Dialect::Anthropic => push(
                    &mut out,
                    d,
                    json!({"role": "assistant", "content": [
                    {"type": "compaction", "content": summary, "encrypted_content": format!("enc-{summary}")}]}),
                ),
                Dialect::ModelMessage => push(
                    &mut out,
                    d,
                    json!({"role": "assistant", "content": [
                    {"type": "text", "text": summary, "providerOptions": {"anthropic": {"type": "compaction"}}}]}),
                ),
                Dialect::UiMessage => push(
                    &mut out,
                    d,
                    json!({"id": format!("m{id}"), "role": "assistant", "parts": [
                    {"type": "text", "text": summary, "providerMetadata": {"anthropic": {"type": "compaction"}}}]}),
                ),
            },
            Step::Exchange {
                thinking,
                text,
                calls,
            } => {
                let ids: Vec<String> = calls
                    .iter()
                    .enumerate()
                    .map(|(j, _)| format!("call_{id}_{j}"))
                    .collect();
                match d {
                    Dialect::OpenAi => {
                        let tool_calls: Vec<Value> = calls
                            .iter()
                            .zip(&ids)
                            .map(|(c, id)| {
                                json!({
                            "id": id, "type": "function",
                            "function": {"name": c.tool, "arguments": input_of(c).to_string()}})
                            })
                            .collect();
                        push(
                            &mut out,
                            d,
                            json!({"role": "assistant", "content": text, "tool_calls": tool_calls}),
                        );
                        for (c, id) in calls.iter().zip(&ids) {
                            push(
                                &mut out,
                                d,
                                json!({"role": "tool", "tool_call_id": id, "content": c.result}),
                            );
                        }
                    }
                    Dialect::Anthropic => {
                        let mut blocks = Vec::new();
                        if let Some(t) = thinking {
                            blocks.push(json!({"type": "thinking", "thinking": t, "signature": format!("sig-{t}")}));
                        }
                        if let Some(t) = text {
                            blocks.push(json!({"type": "text", "text": t}));
                        }
                        for (c, id) in calls.iter().zip(&ids) {
                            blocks.push(json!({"type": "tool_use", "id": id, "name": c.tool, "input": input_of(c)}));
                        }
                        push(&mut out, d, json!({"role": "assistant", "content": blocks}));
                        let results: Vec<Value> = calls.iter().zip(&ids).map(|(c, id)| {
                            let content = if c.image {
                                json!([{"type": "text", "text": c.result},
                                       {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}])
                            } else {
                                json!(c.result)
                            };
                            json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": c.error})
                        }).collect();
                        push(&mut out, d, json!({"role": "user", "content": results}));
                    }
                    Dialect::ModelMessage => {
                        let mut parts = Vec::new();
                        if let Some(t) = thinking {
                            parts.push(json!({"type": "reasoning", "text": t,
                                "providerOptions": {"anthropic": {"signature": format!("sig-{t}")}}}));
                        }
                        if let Some(t) = text {
                            parts.push(json!({"type": "text", "text": t}));
                        }
                        for (c, id) in calls.iter().zip(&ids) {
                            parts.push(json!({"type": "tool-call", "toolCallId": id, "toolName": c.tool, "input": input_of(c)}));
                        }
                        push(&mut out, d, json!({"role": "assistant", "content": parts}));
                        let results: Vec<Value> = calls.iter().zip(&ids).map(|(c, id)| {
                            let output = match (c.image, c.error) {
                                (true, _) => json!({"type": "content", "value": [
                                    {"type": "text", "text": c.result},
                                    {"type": "media", "data": PNG, "mediaType": "image/png"}]}),
                                (false, true) => json!({"type": "error-text", "value": c.result}),
                                (false, false) => json!({"type": "text", "value": c.result}),
                            };
                            json!({"type": "tool-result", "toolCallId": id, "toolName": c.tool, "output": output})
                        }).collect();
                        push(&mut out, d, json!({"role": "tool", "content": results}));
                    }
                    Dialect::UiMessage => {
                        let mut parts = vec![json!({"type": "step-start"})];
                        if let Some(t) = thinking {
                            parts.push(json!({"type": "reasoning", "text": t, "state": "done",
                                "providerMetadata": {"anthropic": {"signature": format!("sig-{t}")}}}));
                        }
                        if let Some(t) = text {
                            parts.push(json!({"type": "text", "text": t, "state": "done"}));
                        }
                        for (c, id) in calls.iter().zip(&ids) {
                            parts.push(if c.error {
                                json!({"type": format!("tool-{}", c.tool), "toolCallId": id,
                                    "state": "output-error", "input": input_of(c), "errorText": c.result})
                            } else {
                                json!({"type": format!("tool-{}", c.tool), "toolCallId": id,
                                    "state": "output-available", "input": input_of(c), "output": c.result})
                            });
                        }
                        push(
                            &mut out,
                            d,
                            json!({"id": format!("m{id}"), "role": "assistant", "parts": parts}),
                        );
                    }
                }
            }
        }
    }
    match (d, &conv.system) {
        (Dialect::Anthropic, Some(system)) => json!({"system": system, "messages": out}),
        _ => Value::Array(out),
    }
}

pub fn role_of(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}
