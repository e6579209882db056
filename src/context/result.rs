//! A tool result's text, read from and written back into the JSON shapes results come in,
//! keeping what is not text: images, files and blocks of unknown types stay where they are
//! when the text around them is offloaded, trimmed or cleared.
//!
//! Which field of which format holds the result is [`Part::result_slot`]'s to know; this
//! module knows the three [`ResultShape`]s those fields have.
//!
//! [`Part::result_slot`]: crate::messages::Part::result_slot

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::messages::ResultShape;

/// The text of a tool result: what offloading stores, pruning trims, and counting measures.
/// Borrowed from the result when it is one string, so reading every result of a long
/// conversation copies none of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultText<'a> {
    /// Text blocks joined by line feeds; a JSON result pretty-printed (two-space indents, so
    /// that reading by lines and searching by line work on it).
    pub text: Cow<'a, str>,
    /// Blocks kept beside the text (images, files, unknown blocks).
    pub kept_blocks: usize,
}

fn block_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// Whether a content block is text this module reads and rewrites.
fn is_text_block(item: &Value) -> bool {
    block_type(item) == Some("text") && item.get("text").is_some_and(Value::is_string)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Reads the text of a result of `shape`; `None` when it has no text to edit (no text
/// blocks, an AI SDK output of another type such as `execution-denied`, `null`).
pub fn read(shape: ResultShape, value: &Value) -> Option<ResultText<'_>> {
    match shape {
        ResultShape::Content => read_content(value),
        ResultShape::Output => {
            let ty = value.get("type").and_then(Value::as_str)?;
            let inner = value.get("value")?;
            match ty {
                "text" | "error-text" => inner.as_str().map(|s| ResultText {
                    text: Cow::Borrowed(s),
                    kept_blocks: 0,
                }),
                "json" | "error-json" => Some(ResultText {
                    text: Cow::Owned(pretty(inner)),
                    kept_blocks: 0,
                }),
                "content" => read_content(inner),
                _ => None,
            }
        }
        ResultShape::Plain => match value {
            Value::Null => None,
            Value::String(s) => Some(ResultText {
                text: Cow::Borrowed(s),
                kept_blocks: 0,
            }),
            other => Some(ResultText {
                text: Cow::Owned(pretty(other)),
                kept_blocks: 0,
            }),
        },
    }
}

fn read_content(value: &Value) -> Option<ResultText<'_>> {
    match value {
        Value::String(s) => Some(ResultText {
            text: Cow::Borrowed(s),
            kept_blocks: 0,
        }),
        Value::Array(items) => {
            let mut texts = items
                .iter()
                .filter(|item| is_text_block(item))
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .peekable();
            texts.peek()?;
            let text = Cow::Owned(texts.collect::<Vec<_>>().join("\n"));
            let kept_blocks = items.iter().filter(|item| !is_text_block(item)).count();
            Some(ResultText { text, kept_blocks })
        }
        _ => None,
    }
}

/// Writes `text` as the whole text of a result of `shape`, keeping every block that is not
/// text, in order: the first text block takes `text` and the other text blocks go. A JSON
/// output becomes a text output (an error stays an error).
pub fn write(shape: ResultShape, value: &mut Value, text: String) {
    match shape {
        ResultShape::Content => write_content(value, text),
        ResultShape::Output => {
            let Value::Object(output) = value else {
                *value = Value::String(text);
                return;
            };
            let ty = output.get("type").and_then(Value::as_str).unwrap_or("text");
            match ty {
                "content" => {
                    if let Some(inner) = output.get_mut("value") {
                        write_content(inner, text);
                    }
                }
                _ => {
                    let ty = if ty.starts_with("error") {
                        "error-text"
                    } else {
                        "text"
                    };
                    set(output, "type", Value::String(ty.to_owned()));
                    set(output, "value", Value::String(text));
                }
            }
        }
        ResultShape::Plain => *value = Value::String(text),
    }
}

fn write_content(value: &mut Value, text: String) {
    let Value::Array(items) = value else {
        *value = Value::String(text);
        return;
    };
    let mut text = Some(text);
    items.retain_mut(|item| {
        if !is_text_block(item) {
            return true;
        }
        match (text.take(), item) {
            (Some(t), Value::Object(block)) => {
                set(block, "text", Value::String(t));
                true
            }
            _ => false,
        }
    });
    if let Some(t) = text {
        // NOTE: no text block to take it (the result was all images): the text goes first.
        let mut block = Map::new();
        block.insert("type".to_owned(), Value::String("text".to_owned()));
        block.insert("text".to_owned(), Value::String(t));
        items.insert(0, Value::Object(block));
    }
}

fn set(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get_mut(key) {
        Some(slot) => *slot = value,
        None => {
            map.insert(key.to_owned(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_are_joined_and_images_kept_in_place() {
        let mut value = json!([
            {"type": "text", "text": "one"},
            {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            {"type": "text", "text": "two"}
        ]);
        let read = read(ResultShape::Content, &value).unwrap();
        assert_eq!((&*read.text, read.kept_blocks), ("one\ntwo", 1));
        write(ResultShape::Content, &mut value, "pointer".to_owned());
        assert_eq!(
            value,
            json!([
                {"type": "text", "text": "pointer"},
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
            ])
        );
    }

    #[test]
    fn a_result_of_images_only_has_no_text_and_gets_one_first() {
        let mut value = json!([{"type": "image_url", "image_url": {"url": "x"}}]);
        assert_eq!(read(ResultShape::Content, &value), None);
        write(ResultShape::Content, &mut value, "note".to_owned());
        assert_eq!(value[0], json!({"type": "text", "text": "note"}));
        assert_eq!(value[1]["type"], "image_url");
    }

    #[test]
    fn ai_sdk_outputs_keep_their_error_flag_and_json_becomes_text() {
        let mut value = json!({"type": "error-json", "value": {"a": [1, 2]}});
        let read_back = read(ResultShape::Output, &value).unwrap();
        assert_eq!(read_back.text, "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
        write(ResultShape::Output, &mut value, "cut".to_owned());
        assert_eq!(value, json!({"type": "error-text", "value": "cut"}));

        let mut content = json!({"type": "content", "value": [
            {"type": "text", "text": "log"}, {"type": "media", "data": "AA", "mediaType": "image/png"}]});
        write(ResultShape::Output, &mut content, "cut".to_owned());
        assert_eq!(content["value"][0]["text"], "cut");
        assert_eq!(content["value"][1]["type"], "media");
        let denied = json!({"type": "execution-denied", "reason": "no"});
        assert_eq!(read(ResultShape::Output, &denied), None);
    }
}
