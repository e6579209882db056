//! Properties of the message model, on generated conversations in every format:
//! a round trip is lossless (key order included), repair output validates, repair of a valid
//! list is the identity, repair is idempotent, and no input of any shape makes a parser panic.
// NOTE: proptest is a host-only dev-dependency; the wasm tests are tests/wasm_*.rs.
#![cfg(not(target_arch = "wasm32"))]

use context_keeper::messages::{
    detect_format, parse_messages, parse_messages_str, repair_messages, validate_messages, Format,
    MessagesOptions, ProblemKind,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// One step of an abstract conversation, rendered into each format.
#[derive(Clone, Debug)]
enum Step {
    User {
        text: String,
        as_parts: bool,
    },
    Assistant {
        text: String,
        as_parts: bool,
    },
    /// An assistant message with tool calls (id, tool name, input), maybe reasoning and text.
    Calls {
        calls: Vec<(String, String, Value)>,
        reasoning: Option<String>,
        text: Option<String>,
    },
    /// Results (call id, content, error flag), in one carrier message per format's habit.
    Results {
        results: Vec<(String, String, bool)>,
        text: Option<String>,
    },
}

fn text() -> impl Strategy<Value = String> {
    // Non-blank, with multi-byte characters.
    "[a-zA-Z0-9éü東🙂][a-zA-Z0-9 éü東🙂\\n\"\\\\]{0,16}"
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![3 => text(), 1 => Just(String::new()), 1 => Just("  ".to_owned()), 1 => "\\PC{0,12}"]
}

fn input() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        text().prop_map(|t| json!({ "path": t })),
        (text(), 0..1000i64)
            .prop_map(|(t, n)| json!({ "query": t, "limit": n, "deep": [[{"x": null}]] })),
    ]
}

/// A conversation valid in every format: user, then tool exchanges each fully answered, then
/// an assistant reply; ids unique.
fn valid_steps() -> impl Strategy<Value = Vec<Step>> {
    let exchange = (
        prop::collection::vec((text(), input()), 1..4),
        prop::option::of(text()),
        prop::option::of(text()),
        any::<bool>(),
    );
    let turn = (
        text(),
        any::<bool>(),
        prop::collection::vec(exchange, 0..3),
        text(),
        any::<bool>(),
        any::<u64>(),
    );
    prop::collection::vec(turn, 1..5).prop_map(|turns| {
        let mut steps = Vec::new();
        let mut next_id = 0;
        for (user, user_parts, exchanges, reply, reply_parts, seed) in turns {
            steps.push(Step::User {
                text: user,
                as_parts: user_parts,
            });
            for (calls, reasoning, call_text, shuffle) in exchanges {
                let calls: Vec<(String, String, Value)> = calls
                    .into_iter()
                    .map(|(name, input)| {
                        next_id += 1;
                        (format!("call_{next_id}"), name, input)
                    })
                    .collect();
                let mut results: Vec<(String, String, bool)> = calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.0.clone(), format!("result {i} of {}", c.1), i % 2 == 1))
                    .collect();
                if shuffle {
                    let by = (seed % results.len() as u64) as usize;
                    results.rotate_left(by);
                }
                steps.push(Step::Calls {
                    calls,
                    reasoning,
                    text: call_text,
                });
                steps.push(Step::Results {
                    results,
                    text: None,
                });
            }
            steps.push(Step::Assistant {
                text: reply,
                as_parts: reply_parts,
            });
        }
        steps
    })
}

/// Anything: steps in any order, ids from a small pool (so orphans, duplicates, missing and
/// misplaced results all happen), blank texts.
fn broken_steps() -> impl Strategy<Value = Vec<Step>> {
    let id = (0..6u8).prop_map(|n| format!("id_{n}"));
    let step = prop_oneof![
        (any_text(), any::<bool>()).prop_map(|(text, as_parts)| Step::User { text, as_parts }),
        (any_text(), any::<bool>()).prop_map(|(text, as_parts)| Step::Assistant { text, as_parts }),
        (
            prop::collection::vec((id.clone(), text(), input()), 1..4),
            prop::option::of(any_text()),
            prop::option::of(any_text())
        )
            .prop_map(|(calls, reasoning, text)| Step::Calls {
                calls,
                reasoning,
                text
            }),
        (
            prop::collection::vec((id, any_text(), any::<bool>()), 1..4),
            prop::option::of(any_text())
        )
            .prop_map(|(results, text)| Step::Results { results, text }),
    ];
    prop::collection::vec(step, 0..12)
}

fn content(text: &str, as_parts: bool) -> Value {
    if as_parts {
        json!([{ "type": "text", "text": text }])
    } else {
        json!(text)
    }
}

fn render(format: Format, steps: &[Step]) -> Value {
    let mut out = Vec::new();
    for step in steps {
        match (format, step) {
            (_, Step::User { text, as_parts }) => {
                out.push(json!({ "role": "user", "content": content(text, *as_parts) }))
            }
            (_, Step::Assistant { text, as_parts }) => {
                out.push(json!({ "role": "assistant", "content": content(text, *as_parts), "x-extra": {"kept": true} }));
            }
            (Format::OpenAi, Step::Calls { calls, text, .. }) => {
                let tool_calls: Vec<Value> = calls
                    .iter()
                    .map(|(id, name, input)| {
                        json!({ "id": id, "type": "function", "function": { "name": name, "arguments": input.to_string() } })
                    })
                    .collect();
                out.push(json!({ "role": "assistant", "content": text, "tool_calls": tool_calls }));
            }
            (Format::OpenAi, Step::Results { results, .. }) => {
                for (id, text, _) in results {
                    out.push(json!({ "role": "tool", "tool_call_id": id, "content": text }));
                }
            }
            (
                Format::Anthropic,
                Step::Calls {
                    calls,
                    reasoning,
                    text,
                },
            ) => {
                let mut blocks = Vec::new();
                if let Some(r) = reasoning {
                    blocks.push(json!({ "type": "thinking", "thinking": r, "signature": "c2ln" }));
                }
                if let Some(t) = text {
                    blocks.push(json!({ "type": "text", "text": t }));
                }
                for (id, name, input) in calls {
                    blocks.push(
                        json!({ "type": "tool_use", "id": id, "name": name, "input": input }),
                    );
                }
                out.push(json!({ "role": "assistant", "content": blocks }));
            }
            (Format::Anthropic, Step::Results { results, text }) => {
                let mut blocks: Vec<Value> = results
                    .iter()
                    .map(|(id, text, err)| {
                        if *err {
                            json!({ "type": "tool_result", "tool_use_id": id, "is_error": true, "content": [{ "type": "text", "text": text }] })
                        } else {
                            json!({ "type": "tool_result", "tool_use_id": id, "content": text })
                        }
                    })
                    .collect();
                if let Some(t) = text {
                    blocks.push(json!({ "type": "text", "text": t }));
                }
                out.push(json!({ "role": "user", "content": blocks }));
            }
            (
                Format::AiSdk,
                Step::Calls {
                    calls,
                    reasoning,
                    text,
                },
            ) => {
                let mut parts = Vec::new();
                if let Some(r) = reasoning {
                    parts.push(json!({ "type": "reasoning", "text": r }));
                }
                if let Some(t) = text {
                    parts.push(json!({ "type": "text", "text": t }));
                }
                for (id, name, input) in calls {
                    parts.push(json!({ "type": "tool-call", "toolCallId": id, "toolName": name, "input": input }));
                }
                out.push(json!({ "role": "assistant", "content": parts }));
            }
            (Format::AiSdk, Step::Results { results, .. }) => {
                let parts: Vec<Value> = results
                    .iter()
                    .map(|(id, text, err)| {
                        let ty = if *err { "error-text" } else { "text" };
                        json!({ "type": "tool-result", "toolCallId": id, "toolName": "t", "output": { "type": ty, "value": text } })
                    })
                    .collect();
                out.push(json!({ "role": "tool", "content": parts }));
            }
        }
    }
    let messages = Value::Array(out);
    match format {
        Format::Anthropic => {
            json!({ "model": "claude", "system": "be brief", "messages": messages, "max_tokens": 10 })
        }
        _ => messages,
    }
}

fn options(format: Format) -> MessagesOptions {
    MessagesOptions {
        format: Some(format),
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn valid_conversations_round_trip_validate_and_repair_to_themselves(steps in valid_steps()) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let text = input.to_string();
            let conv = parse_messages_str(&text, &options(format)).unwrap();
            prop_assert_eq!(conv.to_json_string(), text.clone());
            let has_calls = steps.iter().any(|s| matches!(s, Step::Calls { .. }));
            let detected = detect_format(&input);
            prop_assert!(detected == Some(format) || (!has_calls && format != Format::Anthropic && detected.is_none()), "{detected:?}");
            let problems = validate_messages(&input, &MessagesOptions::default()).unwrap();
            prop_assert!(problems.is_empty(), "{format}: {problems:?}\n{text}");
            let repaired = repair_messages(&input, &options(format)).unwrap();
            prop_assert!(repaired.report.is_empty());
            prop_assert_eq!(repaired.messages.to_string(), text);
        }
    }

    #[test]
    fn any_conversation_round_trips_and_repairs_to_valid(steps in broken_steps(), pending in any::<bool>()) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let text = input.to_string();
            let opts = MessagesOptions { format: Some(format), allow_pending_calls: pending };
            let conv = parse_messages_str(&text, &opts).unwrap();
            prop_assert_eq!(conv.to_json_string(), text.clone());
            let repaired = repair_messages(&input, &opts).unwrap();
            // Only problems repair declares it leaves alone remain, and they are what validate sees.
            let after = validate_messages(&repaired.messages, &opts).unwrap();
            prop_assert_eq!(&after, &repaired.unrepaired);
            for problem in &after {
                prop_assert!(
                    format == Format::Anthropic && problem.kind == ProblemKind::RoleOrder && problem.message_index == 0,
                    "{format}: left {problem:?}\ninput {text}\nrepaired {}", repaired.messages
                );
            }
            // Repair is idempotent, and the identity when nothing was wrong.
            let again = repair_messages(&repaired.messages, &opts).unwrap();
            prop_assert!(again.report.is_empty(), "{format}: second repair did {:?}", again.report);
            prop_assert_eq!(&again.messages, &repaired.messages);
            if validate_messages(&input, &opts).unwrap().is_empty() {
                prop_assert_eq!(&repaired.messages, &input);
            }
        }
    }
}

/// JSON of any shape, biased toward the keys and values the parsers look at.
fn json_value() -> impl Strategy<Value = Value> {
    let word = prop_oneof![
        Just("user"),
        Just("assistant"),
        Just("system"),
        Just("tool"),
        Just("function"),
        Just("developer"),
        Just("text"),
        Just("tool_use"),
        Just("tool_result"),
        Just("tool-call"),
        Just("tool-result"),
        Just("thinking"),
        Just("image"),
        Just("image_url"),
        Just("file"),
        Just("reasoning"),
        Just("json"),
        Just("error-text"),
        Just("content"),
        Just("id_1"),
        Just(""),
        Just("<context-keeper-compaction {\"number\":1}>\nx"),
    ]
    .prop_map(|s| Value::String(s.to_owned()));
    let key = prop_oneof![
        Just("role"),
        Just("content"),
        Just("type"),
        Just("text"),
        Just("tool_calls"),
        Just("id"),
        Just("tool_call_id"),
        Just("tool_use_id"),
        Just("toolCallId"),
        Just("toolName"),
        Just("input"),
        Just("args"),
        Just("output"),
        Just("result"),
        Just("name"),
        Just("function"),
        Just("function_call"),
        Just("arguments"),
        Just("is_error"),
        Just("isError"),
        Just("system"),
        Just("messages"),
        Just("value"),
        Just("thinking"),
        Just("custom"),
        Just("audio"),
    ]
    .prop_map(str::to_owned);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        word,
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn exercise(input: &Value) {
    let _ = detect_format(input);
    for format in [
        None,
        Some(Format::OpenAi),
        Some(Format::Anthropic),
        Some(Format::AiSdk),
    ] {
        for allow_pending_calls in [false, true] {
            let opts = MessagesOptions {
                format,
                allow_pending_calls,
            };
            if let Ok(conv) = parse_messages(input, &opts) {
                // Whatever parses round-trips.
                assert_eq!(&conv.to_value(), input);
                let _ = validate_messages(input, &opts);
                let repaired = repair_messages(input, &opts).unwrap();
                // The repaired conversation reads in the input's format. (Not always by
                // detection: repair can remove what outvoted an odd part, as in
                // `repair_keeps_the_format_not_its_detection`.)
                let read_as = MessagesOptions {
                    format: format.or(detect_format(input)),
                    allow_pending_calls,
                };
                let _ = validate_messages(&repaired.messages, &read_as).unwrap();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The host-side stand-in for the cargo-fuzz targets: arbitrary JSON never panics.
    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        exercise(&value);
        exercise(&Value::Array(vec![value.clone()]));
        exercise(&json!({ "system": value.clone(), "messages": [value] }));
    }

    /// Arbitrary bytes as JSON text never panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        for format in [None, Some(Format::OpenAi), Some(Format::Anthropic), Some(Format::AiSdk)] {
            let _ = parse_messages_str(&text, &MessagesOptions { format, ..Default::default() });
        }
    }

    /// Generated conversations with one value replaced anywhere never panic.
    #[test]
    fn mutated_conversations_never_panic(steps in broken_steps(), junk in json_value(), pick in any::<prop::sample::Index>()) {
        for format in Format::ALL {
            let mut input = render(format, &steps);
            let mut slots = Vec::new();
            collect_paths(&input, &mut Vec::new(), &mut slots);
            if !slots.is_empty() {
                let path = &slots[pick.index(slots.len())];
                if let Some(slot) = pointer_mut(&mut input, path) {
                    *slot = junk.clone();
                }
            }
            exercise(&input);
        }
    }
}

fn collect_paths(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(i.to_string());
                collect_paths(item, at, out);
                at.pop();
            }
        }
        Value::Object(obj) => {
            for (k, item) in obj {
                at.push(k.clone());
                collect_paths(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn pointer_mut<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, seg| match v {
        Value::Array(items) => items.get_mut(seg.parse::<usize>().ok()?),
        Value::Object(obj) => obj.get_mut(seg),
        _ => None,
    })
}

/// Found by `mutated_conversations_never_panic`: an OpenAI conversation whose assistant content
/// holds a part typed `tool_use` with nothing else (OpenAI keeps a part it does not know as it
/// is). Its `tool` messages outvote that part, so it is read as OpenAI; repair drops those
/// messages (their calls are missing), and what is left detects as Anthropic, where the part
/// lacks its `id`. The repaired conversation is in the input's format, and reads in it.
#[test]
fn repair_keeps_the_format_not_its_detection() {
    let input = serde_json::json!([
        {"role": "assistant", "content": [{"type": "tool_use"}]},
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "id_0", "content": "a"},
    ]);
    let auto = MessagesOptions::default();
    assert_eq!(detect_format(&input), Some(Format::OpenAi));
    assert!(parse_messages(&input, &auto).is_ok());
    let repaired = repair_messages(&input, &auto).unwrap();
    assert_eq!(repaired.messages.as_array().unwrap().len(), 2);
    assert_eq!(detect_format(&repaired.messages), Some(Format::Anthropic));
    assert_eq!(
        repaired.format,
        Format::OpenAi,
        "what to validate the output in"
    );
    let openai = MessagesOptions {
        format: Some(Format::OpenAi),
        ..MessagesOptions::default()
    };
    validate_messages(&repaired.messages, &openai).unwrap();
}
