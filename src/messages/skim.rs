//! Which strings [`validate_conversation`](super::validate_conversation) and
//! [`detect_format`](super::detect_format) read only in part, so that a reader of a large
//! conversation may skip copying the rest.
//!
//! Checking a conversation looks at roles, part types, tool call ids and names in full, but at
//! a text only to see that it is a string, whether it is blank (Anthropic rejects blank text
//! blocks) and whether it starts with [`COMPACTION_TAG`]. So a long string held by one of the
//! [`SKIMMABLE_FIELDS`] may be handed to those two functions cut to its first
//! [`SKIM_UNITS`] UTF-16 units, provided those are not all whitespace, and they return exactly
//! what they return for the whole string. Nothing else may read a skimmed value: a repair
//! writes text back, and counting counts it.

use super::COMPACTION_TAG;

/// The fields whose string values the checks read only as text (see the module docs): message
/// and tool result `content`, text, reasoning and refusal blocks, tool call arguments and
/// inputs, tool outputs, and the payloads of images, files and redacted reasoning.
// NOTE: ids, names, roles and types are read in full and must never be listed here; the tests
// below hold every listed field, made long, to the results of the whole string.
pub const SKIMMABLE_FIELDS: &[&str] = &[
    "content",
    "text",
    "thinking",
    "signature",
    "refusal",
    "arguments",
    "input",
    "args",
    "value",
    "result",
    "data",
    "url",
    "image",
    "file_data",
    "system",
];

/// How many UTF-16 units of a skimmed string are kept (a cut surrogate pair reads as U+FFFD).
pub const SKIM_UNITS: u32 = 64;

// NOTE: the kept start must hold the whole tag for `kind_of_text` to see it.
const _: () = assert!(COMPACTION_TAG.len() < SKIM_UNITS as usize);

/// Whether a string held by the field `key` may be skimmed.
pub fn is_skimmable(key: &str) -> bool {
    SKIMMABLE_FIELDS.contains(&key)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::messages::{
        detect_format, parse_message, parse_messages, parse_skimmed_messages_value,
        repair_conversation_traced, validate_conversation, MessagesOptions, RepairOutcome,
    };

    /// `text` as a reader that skims would hand it on: cut to its first [`SKIM_UNITS`] UTF-16
    /// units unless those are all whitespace.
    fn skim_text(text: &str) -> String {
        let units: Vec<u16> = text.encode_utf16().collect();
        let head = String::from_utf16_lossy(units.get(..SKIM_UNITS as usize).unwrap_or(&units));
        if head.trim().is_empty() {
            text.to_owned()
        } else {
            head
        }
    }

    /// `value` with every string of a skimmable field skimmed, however short (the walk skims
    /// only long ones, which the padding below makes them).
    fn skim(value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::String(s) if key.is_some_and(is_skimmable) => Value::String(skim_text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| skim(v, None)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), skim(v, Some(k))))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// `value` with `pad` added to every string of a skimmable field, in front or behind.
    fn lengthen(value: &Value, key: Option<&str>, pad: &str, front: bool) -> Value {
        match value {
            Value::String(s) if key.is_some_and(is_skimmable) => Value::String(if front {
                format!("{pad}{s}")
            } else {
                format!("{s}{pad}")
            }),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| lengthen(v, None, pad, front))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), lengthen(v, Some(k), pad, front)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Problems, or the error, as JSON text, to compare.
    fn checked(input: &Value, options: &MessagesOptions) -> String {
        match parse_messages(input, options) {
            Ok(conv) => {
                serde_json::to_string(&validate_conversation(&conv, options)).unwrap_or_default()
            }
            Err(err) => err.to_string(),
        }
    }

    fn fixtures() -> Vec<(String, Value, MessagesOptions)> {
        let dir = format!("{}/tests/data/messages", env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let Some(stem) = name.strip_suffix(".input.json") else {
                continue;
            };
            let read = |p: &std::path::Path| -> Value {
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
            };
            let expected = read(&path.with_file_name(format!("{stem}.expected.json")));
            let options: MessagesOptions =
                serde_json::from_value(expected["options"].clone()).unwrap();
            out.push((stem.to_owned(), read(&path), options));
        }
        assert!(out.len() >= 10);
        out
    }

    #[test]
    fn skimmed_text_validates_and_detects_as_the_whole_text() {
        let pads = [
            "x".repeat(300),
            " ".repeat(300),
            "\n\t ".repeat(100),
            "é🦀".repeat(200),
            format!("{COMPACTION_TAG} {{}}>\n"),
            String::new(),
        ];
        for (name, input, options) in fixtures() {
            for pad in &pads {
                for front in [true, false] {
                    let long = lengthen(&input, None, pad, front);
                    let skimmed = skim(&long, None);
                    assert_eq!(
                        detect_format(&long),
                        detect_format(&skimmed),
                        "{name} {pad:?} {front}"
                    );
                    assert_eq!(
                        checked(&long, &options),
                        checked(&skimmed, &options),
                        "{name} {pad:?} {front}"
                    );
                    let auto = MessagesOptions::default();
                    assert_eq!(checked(&long, &auto), checked(&skimmed, &auto), "{name}");
                }
            }
        }
    }

    /// What a repair decided, as JSON text, to compare.
    fn decisions(outcome: &RepairOutcome) -> String {
        let report = serde_json::to_string(&outcome.report).unwrap_or_default();
        let unrepaired = serde_json::to_string(&outcome.unrepaired).unwrap_or_default();
        format!("{report} {unrepaired} {:?}", outcome.untouched)
    }

    /// The repair of a skimmed conversation decides as the repair of the whole one; once the
    /// messages it did not leave alone are read again whole (as `repairMessages` does), the
    /// messages it edits or adds are not skimmed and are those of the whole repair.
    #[test]
    fn skimmed_repair_decides_as_the_whole_and_writes_only_whole_messages() {
        let pads = ["x".repeat(300), " ".repeat(300), "é🦀".repeat(200)];
        for (name, input, options) in fixtures() {
            for pad in &pads {
                for front in [true, false] {
                    let long = lengthen(&input, None, pad, front);
                    let whole = parse_messages(&long, &options)
                        .unwrap_or_else(|err| panic!("{name} {pad:?} does not parse: {err}"));
                    let whole = repair_conversation_traced(whole, &options);
                    let skimmed =
                        || parse_skimmed_messages_value(skim(&long, None), &options).unwrap();
                    let first = repair_conversation_traced(skimmed(), &options);
                    assert_eq!(decisions(&first), decisions(&whole), "{name} {pad:?}");
                    let list = long.get("messages").unwrap_or(&long).as_array().unwrap();
                    let mut conv = skimmed();
                    let format = conv.format();
                    for (i, message) in conv.messages_mut().iter_mut().enumerate() {
                        if !first.untouched.contains(&Some(i)) {
                            *message = parse_message(format, list[i].clone()).unwrap();
                        }
                    }
                    let again = repair_conversation_traced(conv, &options);
                    assert_eq!(decisions(&again), decisions(&whole), "{name} {pad:?}");
                    let out = again.conversation.messages().iter().zip(&again.untouched);
                    for (k, (message, at)) in out.enumerate() {
                        let expected = &whole.conversation.messages()[k];
                        match at {
                            None => {
                                assert!(!message.is_skimmed(), "{name} {pad:?} [{k}]");
                                assert_eq!(message.to_value(), expected.to_value(), "{name}");
                            }
                            Some(i) => {
                                assert!(message.is_skimmed(), "{name} [{k}]");
                                assert_eq!(expected.to_value(), list[*i], "{name} [{k}]");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn blank_and_tagged_texts_keep_what_the_checks_see() {
        let blank = " ".repeat(SKIM_UNITS as usize + 10);
        assert_eq!(skim_text(&blank), blank);
        let tagged = format!("{COMPACTION_TAG} {}", "y".repeat(500));
        assert!(skim_text(&tagged).starts_with(COMPACTION_TAG));
        let late = format!("{}x", " ".repeat(SKIM_UNITS as usize));
        assert_eq!(skim_text(&late), late, "all-blank start: the whole text");
        let compared = [
            "role",
            "type",
            "id",
            "tool_call_id",
            "tool_use_id",
            "toolCallId",
            "name",
            "toolName",
        ];
        for key in compared {
            assert!(!is_skimmable(key), "{key} is read in full");
        }
    }
}
