//! Golden fixtures for the message model (`tests/data/messages/*.input.json`, shared with the
//! JS tests) and the edge cases of parsing, editing and writing back.
//!
//! Each `NAME.input.json` has a `NAME.expected.json`: `options` (the input to every call),
//! `detected`, `format`, `kinds` (the part kinds of each message), `problems`, `repaired`,
//! `report` and `unrepaired`. Problems and report entries are compared without their
//! human-readable `message`. Run with `BLESS=1` to rewrite the expected files after a deliberate
//! change, then review the diff.

use std::fs;
use std::path::{Path, PathBuf};

use context_keeper::messages::{
    detect_format, parse_messages, parse_messages_str, repair_conversation_traced, repair_messages,
    validate_messages, CompactionMarker, Format, Message, MessagesOptions, PartKind, ProblemKind,
    Segment, ToolInput,
};
use serde_json::{json, Value};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/messages")
}

fn fixtures() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".input.json")?
                .to_owned();
            let text = fs::read_to_string(&path).unwrap();
            Some((name, serde_json::from_str(&text).unwrap()))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 10, "fixtures missing");
    out
}

/// Serialized problems / report entries without their prose.
fn without_prose(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(without_prose).collect()),
        Value::Object(mut obj) => {
            obj.shift_remove("message");
            Value::Object(obj)
        }
        other => other,
    }
}

fn actual(input: &Value, options: &MessagesOptions) -> Value {
    let conv = parse_messages(input, options).unwrap();
    let kinds: Vec<Vec<PartKind>> = conv
        .messages()
        .iter()
        .map(|m| m.parts().iter().map(|p| p.kind()).collect())
        .collect();
    let problems = validate_messages(input, options).unwrap();
    let repaired = repair_messages(input, options).unwrap();
    assert_eq!(
        repaired.format,
        conv.format(),
        "repair reads in the format parsing does"
    );
    json!({
        "options": options,
        "detected": detect_format(input),
        "format": conv.format(),
        "kinds": kinds,
        "problems": without_prose(serde_json::to_value(&problems).unwrap()),
        "repaired": repaired.messages,
        "report": without_prose(serde_json::to_value(&repaired.report).unwrap()),
        "unrepaired": without_prose(serde_json::to_value(&repaired.unrepaired).unwrap()),
    })
}

#[test]
fn golden_fixtures() {
    let bless = std::env::var_os("BLESS").is_some();
    for (name, input) in fixtures() {
        let expected_path = data_dir().join(format!("{name}.expected.json"));
        let existing: Option<Value> = fs::read_to_string(&expected_path)
            .ok()
            .map(|t| serde_json::from_str(&t).unwrap());
        let options: MessagesOptions = match &existing {
            Some(e) => serde_json::from_value(e["options"].clone()).unwrap(),
            None => MessagesOptions {
                allow_pending_calls: name.contains("pending"),
                ..Default::default()
            },
        };
        let got = actual(&input, &options);
        if bless {
            fs::write(
                &expected_path,
                serde_json::to_string_pretty(&got).unwrap() + "\n",
            )
            .unwrap();
            continue;
        }
        let expected =
            existing.unwrap_or_else(|| panic!("{name}: no expected file; run with BLESS=1"));
        assert_eq!(
            got,
            expected,
            "{name}: output differs from {}",
            expected_path.display()
        );
    }
}

#[test]
fn fixtures_round_trip_byte_for_byte() {
    for (name, input) in fixtures() {
        let text = fs::read_to_string(data_dir().join(format!("{name}.input.json"))).unwrap();
        let conv = parse_messages_str(&text, &MessagesOptions::default()).unwrap();
        // Key order included: the input re-serialized compactly equals the output.
        assert_eq!(
            conv.to_json_string(),
            serde_json::to_string(&input).unwrap(),
            "{name}"
        );
        assert_eq!(conv.into_value(), input, "{name}");
    }
}

#[test]
fn fixtures_repair_is_idempotent_and_valid() {
    for (name, input) in fixtures() {
        let options = MessagesOptions {
            allow_pending_calls: name.contains("pending"),
            ..Default::default()
        };
        let once = repair_messages(&input, &options).unwrap();
        let problems = validate_messages(&once.messages, &options).unwrap();
        assert_eq!(problems, once.unrepaired, "{name}");
        let twice = repair_messages(&once.messages, &options).unwrap();
        assert!(twice.report.is_empty(), "{name}: {:?}", twice.report);
        assert_eq!(twice.messages, once.messages, "{name}");
        if validate_messages(&input, &options).unwrap().is_empty() {
            assert_eq!(
                once.messages, input,
                "{name}: repair of a valid list changed it"
            );
        }
    }
}

/// The options a fixture is run with (its expected file's `options`).
fn fixture_options(name: &str) -> MessagesOptions {
    let path = data_dir().join(format!("{name}.expected.json"));
    let expected: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    serde_json::from_value(expected["options"].clone()).unwrap()
}

#[test]
fn fixtures_repair_tells_which_messages_it_left_alone() {
    for (name, input) in fixtures() {
        let options = fixture_options(&name);
        let conv = parse_messages(&input, &options).unwrap();
        let before: Vec<Value> = conv.messages().iter().map(Message::to_value).collect();
        let outcome = repair_conversation_traced(conv, &options);
        let list = input.get("messages").unwrap_or(&input);
        assert_eq!(
            outcome.conversation.to_value(),
            repair_messages(&input, &options).unwrap().messages,
            "{name}"
        );
        let out = outcome.conversation.messages();
        assert_eq!(outcome.untouched.len(), out.len(), "{name}");
        let mut last = None;
        for (k, (message, at)) in out.iter().zip(&outcome.untouched).enumerate() {
            let Some(i) = *at else {
                // An edited or added message is no input message as it was.
                assert!(
                    !before.contains(&message.to_value()) || outcome.report.len() > 1,
                    "{name} [{k}]"
                );
                continue;
            };
            assert_eq!(message.to_value(), before[i], "{name} [{k}]");
            assert_eq!(list[i], before[i], "{name} [{k}]");
            assert!(
                last < Some(i),
                "{name}: untouched messages keep their order"
            );
            last = Some(i);
        }
        if outcome.report.is_empty() {
            assert_eq!(
                outcome.untouched,
                (0..before.len()).map(Some).collect::<Vec<_>>(),
                "{name}"
            );
        }
    }
}

#[test]
fn repair_tells_edited_messages_from_untouched_ones() {
    // Anthropic: a stray result next to a text, a call without a result before a user text,
    // two user messages in a row (merged), and messages nothing touches.
    let input = json!([
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "nobody", "content": "stray"},
            {"type": "text", "text": "next"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "no result"}]},
        {"role": "assistant", "content": "fine"},
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "end"}
    ]);
    let options = MessagesOptions::default();
    let conv = parse_messages(&input, &options).unwrap();
    let outcome = repair_conversation_traced(conv, &options);
    assert_eq!(
        outcome.untouched,
        vec![
            Some(0),
            Some(1),
            None,
            Some(3),
            None,
            Some(5),
            None,
            Some(8)
        ]
    );
}

#[test]
fn fixtures_detect_their_format() {
    for (name, input) in fixtures() {
        let want = match name.split('-').next().unwrap() {
            "openai" => Format::OpenAi,
            "anthropic" => Format::Anthropic,
            "aisdk" => Format::AiSdk,
            other => panic!("unknown prefix {other}"),
        };
        assert_eq!(detect_format(&input), Some(want), "{name}");
    }
}

fn load(name: &str) -> Value {
    serde_json::from_str(
        &fs::read_to_string(data_dir().join(format!("{name}.input.json"))).unwrap(),
    )
    .unwrap()
}

fn error_of(input: Value, format: Option<Format>) -> String {
    let options = MessagesOptions {
        format,
        ..Default::default()
    };
    parse_messages(&input, &options).unwrap_err().to_string()
}

#[test]
fn bad_input_names_the_index_and_field() {
    let anthropic = Some(Format::Anthropic);
    let openai = Some(Format::OpenAi);
    let aisdk = Some(Format::AiSdk);
    let cases: Vec<(Value, Option<Format>, &str)> = vec![
        (
            json!({"role": "user"}),
            None,
            "messages: expected an array of messages or a request object with a `messages` array, found an object without `messages`",
        ),
        (json!({"messages": "hi"}), None, "messages.messages: expected an array, found a string"),
        (
            json!("hello"),
            None,
            "messages: expected an array of messages or a request object with a `messages` array, found a string",
        ),
        (
            json!(42),
            None,
            "messages: expected an array of messages or a request object with a `messages` array, found a number",
        ),
        (json!([{"role": "user", "content": "a"}, 7]), None, "messages[1]: expected an object, found a number"),
        (json!([{"content": "a"}]), None, "messages[0].role: expected a string, found nothing"),
        (
            json!([{"role": "robot", "content": "a"}]),
            openai,
            "messages[0].role: unknown role \"robot\"; expected \"system\", \"developer\", \"user\", \"assistant\", \"tool\" or \"function\"",
        ),
        (
            json!([{"role": "system", "content": "a"}]),
            anthropic,
            "messages[0].role: unknown role \"system\"; expected \"user\" or \"assistant\"",
        ),
        (
            json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "text", "text": "c"},
                {"type": "tool_result", "tool_use_id": 12}]}]),
            anthropic,
            "messages[0].content[3].tool_use_id: expected a string, found a number",
        ),
        (
            json!([{"role": "assistant", "content": [{"type": "tool_use", "name": "ls", "input": {}}]}]),
            anthropic,
            "messages[0].content[0].id: expected a string, found nothing",
        ),
        (
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": null}]}]}]),
            anthropic,
            "messages[0].content[0].content[0].text: expected a string, found null",
        ),
        (
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}]}]),
            anthropic,
            "messages[0].content[0].is_error: expected a boolean, found a string",
        ),
        (json!([{"role": "user"}]), anthropic, "messages[0].content: expected a string or an array, found nothing"),
        (json!({"system": 5, "messages": []}), anthropic, "system: expected a string or an array, found a number"),
        (
            json!({"system": [{"type": "text", "text": 1}], "messages": []}),
            anthropic,
            "system[0].text: expected a string, found a number",
        ),
        (json!([{"role": "tool", "content": "x"}]), openai, "messages[0].tool_call_id: expected a string, found nothing"),
        (
            json!([{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]),
            openai,
            "messages[0].tool_calls[0].id: expected a string, found nothing",
        ),
        (
            json!([{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}]),
            openai,
            "messages[0].tool_calls[0].function.arguments: expected a string, found an object",
        ),
        (json!([{"role": "assistant", "tool_calls": {}}]), openai, "messages[0].tool_calls: expected an array, found an object"),
        (json!([{"role": "user", "content": 3}]), openai, "messages[0].content: expected a string or an array, found a number"),
        (json!([{"role": "user", "content": [{"text": "x"}]}]), openai, "messages[0].content[0].type: expected a string, found nothing"),
        (json!([{"role": "tool", "content": "x"}]), aisdk, "messages[0].content: expected an array, found a string"),
        (
            json!([{"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c", "toolName": 5}]}]),
            aisdk,
            "messages[0].content[0].toolName: expected a string, found a number",
        ),
        (
            json!([{"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c", "toolName": "t", "output": {"value": 1}}]}]),
            aisdk,
            "messages[0].content[0].output.type: expected a string, found nothing",
        ),
    ];
    for (input, format, want) in cases {
        assert_eq!(error_of(input.clone(), format), want, "input: {input}");
    }
    let err = parse_messages_str("[{\"role\": ", &MessagesOptions::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("messages: invalid JSON"),
        "{err}"
    );
}

#[test]
fn unknown_part_types_pass_through() {
    let input = json!([{"role": "user", "content": [{"type": "hologram", "data": [1, 2, {"deep": true}]}, {"type": "text", "text": "hi"}]}]);
    for format in Format::ALL {
        let options = MessagesOptions {
            format: Some(format),
            ..Default::default()
        };
        let conv = parse_messages(&input, &options).unwrap();
        assert_eq!(conv.messages()[0].parts()[0].kind(), PartKind::Unknown);
        assert_eq!(conv.into_value(), input);
    }
}

#[test]
fn json_nested_too_deep_is_an_error_not_a_crash() {
    let depth = 100_000;
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let err = parse_messages_str(&text, &MessagesOptions::default()).unwrap_err();
    assert!(err.to_string().contains("recursion limit"), "{err}");
    let text = format!(
        "[{{\"role\":\"user\",\"content\":{}{}}}]",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    assert!(parse_messages_str(&text, &MessagesOptions::default()).is_err());
    // Nesting inside a tool input, under the limit, is kept as it is.
    let nested = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let text = format!(
        "[{{\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{{\"x\":{nested}}}}}]}}]"
    );
    let conv = parse_messages_str(&text, &MessagesOptions::default()).unwrap();
    assert_eq!(conv.to_json_string(), text);
}

#[test]
fn huge_strings_are_linear() {
    // NOTE: 100 MB in release; an unoptimized serde_json takes ~20 s on that, so debug runs
    // (plain `cargo test`) use 16 MB, which exercises the same code.
    let megabytes = if cfg!(debug_assertions) { 16 } else { 100 };
    let size = megabytes * 1024 * 1024;
    let big = "x".repeat(size);
    let text = format!("[{{\"role\":\"user\",\"content\":\"{big}\"}},{{\"role\":\"assistant\",\"content\":\"ok\"}}]");
    drop(big);
    let start = std::time::Instant::now();
    let conv = parse_messages_str(&text, &MessagesOptions::default()).unwrap();
    assert_eq!(
        conv.messages()[0].parts()[0].text().map(str::len),
        Some(size)
    );
    assert!(
        context_keeper::messages::validate_conversation(&conv, &MessagesOptions::default())
            .is_empty()
    );
    assert_eq!(conv.into_json_string().len(), text.len());
    // Generous: this takes a few seconds; a quadratic pass would take hours.
    assert!(start.elapsed().as_secs() < 60);
}

#[test]
fn edits_change_only_what_they_name() {
    // OpenAI: replace one tool result and one call argument; every other message is untouched.
    let input = load("openai-parallel-tools");
    let mut conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    let msgs = conv.messages_mut();
    assert_eq!(
        msgs[3].parts()[0].result_content(),
        vec![Segment::Text("{\"temp\":14,\"sky\":\"overcast\"}")]
    );
    msgs[3].parts_mut()[0].set_result_text("[trimmed]").unwrap();
    let call = &mut msgs[2].parts_mut()[1];
    assert_eq!(
        call.tool_input(),
        Some(ToolInput::Text("{\"city\":\"東京\",\"unit\":\"celsius\"}"))
    );
    call.set_input_field("city", json!("Tokyo")).unwrap();
    assert!(msgs[1].parts_mut()[0].set_result_text("no").is_err());
    let out = conv.into_value();
    let mut want = input.clone();
    want[3]["content"] = json!("[trimmed]");
    want[2]["tool_calls"][1]["function"]["arguments"] =
        json!("{\"city\":\"Tokyo\",\"unit\":\"celsius\"}");
    assert_eq!(out, want);
    assert_eq!(
        serde_json::to_string(&out[2]["tool_calls"][0]).unwrap(),
        serde_json::to_string(&input[2]["tool_calls"][0]).unwrap()
    );

    // Anthropic: multi-part tool result becomes one string; the error flag and the envelope stay.
    let input = load("anthropic-thinking-tools");
    let mut conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    assert_eq!(conv.system().unwrap().parts().len(), 2);
    let result = &mut conv.messages_mut()[2].parts_mut()[1];
    assert!(result.is_error());
    assert_eq!(
        result.result_content(),
        vec![
            Segment::Text("error: file not found: src/lib.rs"),
            Segment::Text("hint: the crate root is src/main.rs")
        ]
    );
    result.set_result_text("[cleared]").unwrap();
    let call = &mut conv.messages_mut()[1].parts_mut()[2];
    assert_eq!(
        call.tool_input(),
        Some(ToolInput::Json(&json!({"path": "Cargo.toml"})))
    );
    call.set_input_field("path", json!("ref:1")).unwrap();
    let out = conv.into_value();
    let mut want = input.clone();
    want["messages"][2]["content"][1]["content"] = json!("[cleared]");
    want["messages"][1]["content"][2]["input"]["path"] = json!("ref:1");
    assert_eq!(out, want);
    assert_eq!(
        serde_json::to_string(&out).unwrap().find("\"system\""),
        serde_json::to_string(&input).unwrap().find("\"system\"")
    );

    // AI SDK: v5 output and v4 result.
    let input = load("aisdk-v5-tools");
    let mut conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    let err = &mut conv.messages_mut()[3].parts_mut()[1];
    assert!(err.is_error());
    err.set_result_text("gone").unwrap();
    assert_eq!(
        conv.to_value()[3]["content"][1]["output"],
        json!({"type": "error-text", "value": "gone"})
    );
    let input = load("aisdk-v4-names");
    let mut conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    conv.messages_mut()[2].parts_mut()[0]
        .set_result_text("gone")
        .unwrap();
    conv.messages_mut()[1].parts_mut()[2]
        .set_input_field("city", json!("Bern"))
        .unwrap();
    let out = conv.into_value();
    assert_eq!(out[2]["content"][0]["result"], json!("gone"));
    assert_eq!(out[1]["content"][2]["args"], json!({"city": "Bern"}));
}

#[test]
fn result_content_segments_cover_every_output_type() {
    let input = load("aisdk-v5-tools");
    let conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    let json_out = conv.messages()[3].parts()[0].result_content();
    assert_eq!(
        json_out,
        vec![Segment::Json(&json!({"2020": 1.0, "2024": 1.21}))]
    );
    let content = conv.messages()[4].parts()[0].result_content();
    assert_eq!(content.len(), 2);
    assert_eq!(content[0], Segment::Text("Rendered chart:"));
    assert!(matches!(content[1], Segment::Media(_)));
    let reasoning = &conv.messages()[2].parts()[0];
    assert_eq!(
        (reasoning.kind(), reasoning.text()),
        (
            PartKind::Reasoning,
            Some("Need the numbers from both sources.")
        )
    );
}

#[test]
fn pairing_graph_links_parallel_calls_and_thinking() {
    let input = load("anthropic-thinking-tools");
    let conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
    let graph = context_keeper::messages::pair_tools(&conv);
    assert_eq!(graph.exchanges.len(), 2);
    let first = &graph.exchanges[0];
    assert_eq!(
        (first.message, first.window_end, first.reasoning.clone()),
        (1, 2, vec![0])
    );
    let results: Vec<_> = first
        .calls
        .iter()
        .map(|l| l.result.map(|r| (r.message, r.part)))
        .collect();
    assert_eq!(results, vec![Some((2, 0)), Some((2, 1))]);
    assert_eq!(graph.exchanges[1].reasoning, vec![0]);
    assert!(graph.stray_results.is_empty() && graph.duplicate_calls.is_empty());
}

#[test]
fn compaction_marker_message_round_trips_in_every_format() {
    let marker = CompactionMarker {
        number: 1,
        time: Some("2025-01-01T00:00:00Z".into()),
        archived_messages: 12,
        tokens_before: 90_000,
        summary: "The user wants X; done Y; next Z.".into(),
        ..CompactionMarker::default()
    };
    for name in [
        "openai-parallel-tools",
        "anthropic-thinking-tools",
        "aisdk-v5-tools",
    ] {
        let input = load(name);
        let mut conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
        let format = conv.format();
        conv.messages_mut()
            .insert(0, Message::compaction(format, &marker));
        let text = conv.to_json_string();
        let back = parse_messages_str(
            &text,
            &MessagesOptions {
                format: Some(format),
                ..Default::default()
            },
        )
        .unwrap();
        let part = &back.messages()[0].parts()[0];
        assert_eq!(part.kind(), PartKind::Compaction, "{name}");
        assert_eq!(part.compaction_marker().as_ref(), Some(&marker), "{name}");
        // The rest is unchanged.
        assert_eq!(
            back.messages()[1..]
                .iter()
                .map(Message::to_value)
                .collect::<Vec<_>>(),
            conv.messages()[1..]
                .iter()
                .map(Message::to_value)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn pending_calls_are_allowed_only_at_the_end() {
    let input = load("openai-pending-calls");
    let strict = validate_messages(&input, &MessagesOptions::default()).unwrap();
    assert_eq!(
        strict.iter().map(|p| p.kind).collect::<Vec<_>>(),
        vec![ProblemKind::MissingResult]
    );
    let lenient = MessagesOptions {
        allow_pending_calls: true,
        ..Default::default()
    };
    assert!(validate_messages(&input, &lenient).unwrap().is_empty());
    let mut more = input.clone();
    more.as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": "well?"}));
    assert_eq!(validate_messages(&more, &lenient).unwrap().len(), 1);
}

/// A 500-message, about 2 MB conversation in `format`: user turns, assistant tool calls and
/// tool results of about 12 KB, with multi-byte text.
fn big_conversation(format: Format) -> Value {
    let chunk = "fn main() { println!(\"héllo 東京 🙂\"); } // line of tool output\n".repeat(215);
    let mut steps = Vec::new();
    for i in 0..125 {
        let id = format!("call_{i:04}");
        let user = format!("Step {i}: please read file number {i} and summarise it.");
        let (call, result) = match format {
            Format::OpenAi => (
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/f{i}.rs\"}}")}}]}),
                json!({"role": "tool", "tool_call_id": id, "content": chunk}),
            ),
            Format::Anthropic => (
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "read_file", "input": {"path": format!("src/f{i}.rs")}}]}),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": chunk}]}),
            ),
            Format::AiSdk => (
                json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": id, "toolName": "read_file", "input": {"path": format!("src/f{i}.rs")}}]}),
                json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": id, "toolName": "read_file", "output": {"type": "text", "value": chunk}}]}),
            ),
        };
        steps.push(json!({"role": "user", "content": user}));
        steps.push(call);
        steps.push(result);
        steps.push(json!({"role": "assistant", "content": format!("File {i} prints a greeting in three scripts.")}));
    }
    Value::Array(steps)
}

/// Parse + validate + write back of a 2 MB, 500-message conversation, against an exact count
/// of the same text. Run: `cargo test --release --test messages -- --ignored --nocapture`.
#[test]
#[ignore = "timing; run in release"]
fn perf_parse_validate_write_2mb() {
    use std::time::Instant;
    for format in Format::ALL {
        let text = big_conversation(format).to_string();
        assert_eq!(big_conversation(format).as_array().unwrap().len(), 500);
        let options = MessagesOptions {
            format: Some(format),
            ..Default::default()
        };
        let runs = 20;
        let start = Instant::now();
        for _ in 0..runs {
            let conv = parse_messages_str(&text, &options).unwrap();
            assert!(context_keeper::messages::validate_conversation(&conv, &options).is_empty());
            assert_eq!(conv.to_json_string().len(), text.len());
        }
        let ours = start.elapsed() / runs;
        context_keeper::count_tokens("warm up the tables", context_keeper::Encoding::O200kBase)
            .unwrap();
        let start = Instant::now();
        let tokens =
            context_keeper::count_tokens(&text, context_keeper::Encoding::O200kBase).unwrap();
        let count = start.elapsed();
        println!(
            "{format}: {:.2} MB, parse+validate+write {ours:?}; exact o200k count of the JSON text {count:?} ({tokens} tokens): {:.1}%",
            text.len() as f64 / 1e6,
            100.0 * ours.as_secs_f64() / count.as_secs_f64()
        );
    }
}

#[test]
fn lone_surrogates_read_as_replacement_characters() {
    // JSON.stringify writes a JS string's lone surrogate as an escape; serde_json alone rejects it.
    let text = r#"[{"role":"user","content":"a\ud800b \udc00 \ud83d\ude00 \\ud800 \ud800"}]"#;
    let conv = parse_messages_str(text, &MessagesOptions::default()).unwrap();
    assert_eq!(
        conv.messages()[0].parts()[0].text(),
        Some("a\u{FFFD}b \u{FFFD} 😀 \\ud800 \u{FFFD}")
    );
    let problems =
        context_keeper::messages::validate_messages_str(text, &MessagesOptions::default()).unwrap();
    assert!(problems.is_empty());
}

/// Found by the fuzzer: a tool_use in a user message, merged with the next user message,
/// ended up after its own result.
#[test]
fn calls_outside_assistant_messages_are_reported_and_dropped() {
    let input = json!({"system": "s", "messages": [
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "x"},
            {"type": "tool_use", "id": "toolu_grep", "name": "grep", "input": {}}
        ]},
        {"role": "user", "content": [
            {"type": "text", "text": "Here you go:"},
            {"type": "tool_result", "tool_use_id": "toolu_grep", "content": "src/lib.rs:4: TODO"}
        ]},
        {"role": "assistant", "content": "Two files."}
    ]});
    let options = MessagesOptions::default();
    let kinds: Vec<ProblemKind> = validate_messages(&input, &options)
        .unwrap()
        .iter()
        .map(|p| p.kind)
        .collect();
    assert!(kinds.contains(&ProblemKind::MisplacedCall), "{kinds:?}");
    let repaired = repair_messages(&input, &options).unwrap();
    assert!(repaired.unrepaired.is_empty(), "{:?}", repaired.unrepaired);
    assert_eq!(
        repaired.messages["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Here you go:"}]},
            {"role": "assistant", "content": "Two files."}
        ])
    );
}

/// Thousands of calls sharing one id, and their results: every pass stays near linear.
#[test]
fn many_calls_with_one_id_do_not_hang() {
    let n = 5_000;
    let calls: Vec<Value> = (0..n)
        .map(|_| json!({"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}))
        .collect();
    let mut messages = vec![
        json!({"role": "user", "content": "go"}),
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
    ];
    messages
        .extend((0..n + 10).map(|_| json!({"role": "tool", "tool_call_id": "x", "content": "r"})));
    messages.push(json!({"role": "user", "content": "and now"}));
    messages
        .extend((0..n).map(|_| json!({"role": "tool", "tool_call_id": "x", "content": "late"})));
    let input = Value::Array(messages);
    let start = std::time::Instant::now();
    let options = MessagesOptions::default();
    let problems = validate_messages(&input, &options).unwrap();
    assert_eq!(
        problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateCallId)
            .count(),
        n - 1
    );
    let repaired = repair_messages(&input, &options).unwrap();
    assert!(repaired.unrepaired.is_empty());
    assert!(validate_messages(&repaired.messages, &options)
        .unwrap()
        .is_empty());
    assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
}

#[test]
fn ui_messages_read_write_and_pair_their_tool_parts() {
    let ui = json!([
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "weather?"}]},
        {"id": "a", "role": "assistant", "parts": [
            {"type": "tool-weather", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "sunny"},
            {"type": "tool-weather", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "rain"},
            {"type": "text", "text": "Sunny."}]}
    ]);
    assert_eq!(detect_format(&ui), Some(Format::AiSdk));
    let conv = parse_messages(&ui, &MessagesOptions::default()).unwrap();
    let assistant = &conv.messages()[1];
    assert!(assistant.is_ui_message());
    let call = &assistant.parts()[0];
    assert_eq!(
        (
            call.kind(),
            call.call_id(),
            call.tool_name(),
            call.holds_result()
        ),
        (PartKind::ToolCall, Some("c1"), Some("weather"), true)
    );
    assert_eq!(call.result_content(), vec![Segment::Text("sunny")]);
    // Edits write back into `parts`, keeping every other field.
    let mut edited = conv.clone();
    edited.messages_mut()[1].parts_mut()[2]
        .set_text("Sunny, 21 °C.")
        .unwrap();
    let mut want = ui.clone();
    want[1]["parts"][2]["text"] = json!("Sunny, 21 °C.");
    assert_eq!(edited.into_value(), want);
    // A tool part holds its result: only the reused id is a problem, and repair renames it.
    let problems = validate_messages(&ui, &MessagesOptions::default()).unwrap();
    let kinds: Vec<ProblemKind> = problems.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![ProblemKind::DuplicateCallId]);
    let repaired = repair_messages(&ui, &MessagesOptions::default()).unwrap();
    assert_eq!(repaired.messages[1]["parts"][1]["toolCallId"], "c1-2");
    assert_eq!(repaired.messages[1]["parts"][1]["output"], "rain");
    assert!(repaired.messages[1].get("content").is_none());

    // A call waiting for its output (or an approval) is the UI's business: no stub is added.
    let waiting = json!([
        {"role": "user", "parts": [{"type": "text", "text": "book it"}]},
        {"role": "assistant", "parts": [
            {"type": "tool-book", "toolCallId": "b1", "state": "input-available", "input": {"n": 2}}]},
        {"role": "user", "parts": [{"type": "text", "text": "well?"}]}
    ]);
    assert_eq!(
        validate_messages(&waiting, &MessagesOptions::default()).unwrap(),
        vec![]
    );
    let repaired = repair_messages(&waiting, &MessagesOptions::default()).unwrap();
    assert_eq!((repaired.report.len(), &repaired.messages), (0, &waiting));

    // A user or system message keeps text (and files) only; a tool call still streaming its
    // input is not sent; data parts and sources never are.
    let kinds_of = |value: Value| -> Vec<PartKind> {
        let conv = parse_messages(&json!([value]), &MessagesOptions::default()).unwrap();
        conv.messages()[0]
            .parts()
            .iter()
            .map(|p| p.kind())
            .collect()
    };
    assert_eq!(
        kinds_of(json!({"role": "user", "parts": [
            {"type": "text", "text": "a"}, {"type": "file", "mediaType": "application/pdf", "url": "https://x/a.pdf"},
            {"type": "reasoning", "text": "b"}, {"type": "tool-x", "toolCallId": "t", "state": "output-available"},
            {"type": "data-x", "data": 1}]})),
        vec![
            PartKind::Text,
            PartKind::File,
            PartKind::UiOnly,
            PartKind::UiOnly,
            PartKind::UiOnly
        ]
    );
    assert_eq!(
        kinds_of(json!({"role": "assistant", "parts": [
            {"type": "tool-x", "toolCallId": "t", "state": "input-streaming"},
            {"type": "source-document", "sourceId": "s", "mediaType": "text/plain", "title": "t"},
            {"type": "some-future-part", "x": 1}]})),
        vec![PartKind::UiOnly, PartKind::UiOnly, PartKind::Unknown]
    );
    assert_eq!(
        error_of(
            json!([{"role": "assistant", "parts": [{"type": "dynamic-tool", "toolCallId": "t"}]}]),
            None
        ),
        "messages[0].parts[0].toolName: expected a string, found nothing"
    );
    // Read as OpenAI or Anthropic, a UIMessage is an error that says what it is.
    for format in [Format::OpenAi, Format::Anthropic] {
        let err = error_of(ui.clone(), Some(format));
        assert!(
            err.starts_with("messages[0].content: expected a string")
                && err.ends_with(
                    "found none but `parts` (an AI SDK UIMessage): read it with format \"aisdk\", or convert it with convertToModelMessages first"
                ),
            "{err}"
        );
    }
}

/// Regression (found by `mutated_conversations_never_panic` in CI): an AI SDK `tool` message
/// left holding only a stray Anthropic block after its results were repaired away was
/// detected as Anthropic, which has no `tool` role, so the repaired output could not be read.
#[test]
fn a_tool_message_is_never_detected_as_anthropic() {
    let input = json!([{"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "id_0", "toolName": "t", "output": {"type": "text", "value": "a"}},
        {"type": "tool_use"}]}]);
    let options = MessagesOptions::default();
    let repaired = repair_messages(&input, &options).unwrap();
    assert_eq!(
        context_keeper::messages::detect_format(&repaired.messages),
        Some(Format::AiSdk)
    );
    assert!(validate_messages(&repaired.messages, &options).is_ok());
}
