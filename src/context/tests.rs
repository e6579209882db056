//! Tests of the tiers on conversations of every format, with scripted store outcomes.

use serde_json::{json, Value};

use super::evict::{evict, EvictOptions, EVICTED_PREFIX};
use super::offload::{plan_messages, plan_result, pointer_id, OffloadOptions};
use super::prune::{prune, PruneOptions, CLEARED_PREFIX, TRIM_NOTE};
use super::recovery::{decode, read_lines};
use super::{glob, Action, Original, Outcome, ToolFilter};
use crate::messages::{parse_messages, validate_conversation, Format, MessagesOptions};

fn read(input: &Value) -> crate::messages::Conversation {
    parse_messages(input, &MessagesOptions::default()).unwrap()
}

fn problems(conv: &crate::messages::Conversation) -> Vec<crate::messages::Problem> {
    validate_conversation(conv, &MessagesOptions::default())
}

fn big(lines: usize) -> String {
    (1..=lines)
        .map(|n| format!("line {n}: the quick brown fox jumps over the lazy dog {n}\n"))
        .collect()
}

fn offload_options() -> OffloadOptions {
    OffloadOptions {
        session_id: "s1".to_owned(),
        limit_tokens: Some(1_000),
        ..OffloadOptions::default()
    }
}

/// One tool exchange per turn, each result `size` lines, in `format`.
fn agent(format: Format, turns: usize, size: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
    for t in 0..turns {
        let id = format!("call_{t}");
        let output = big(size);
        match format {
            Format::OpenAi => {
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}));
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
            }
            Format::Anthropic => {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "let me look", "signature": "sig=="},
                    {"type": "tool_use", "id": id, "name": "bash", "input": {"command": "ls"}}]}));
                messages.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": id, "content": [
                        {"type": "text", "text": output},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}));
            }
            Format::AiSdk => {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "tool-call", "toolCallId": id, "toolName": "bash", "input": {"command": "ls"}}]}));
                messages.push(json!({"role": "tool", "content": [
                    {"type": "tool-result", "toolCallId": id, "toolName": "bash", "output": {"type": "text", "value": output}}]}));
            }
        }
    }
    messages.push(json!({"role": "user", "content": "and now?"}));
    Value::Array(messages)
}

/// `*` as "any run of characters", by dynamic programming over both strings: the reference
/// the fast `glob` is held to.
#[cfg(not(target_arch = "wasm32"))]
fn glob_reference(pattern: &[u8], name: &[u8]) -> bool {
    let mut row = vec![false; name.len() + 1];
    row[0] = true;
    for &p in pattern {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            next[j] = if p == b'*' {
                row[j] || (j > 0 && next[j - 1])
            } else {
                j > 0 && row[j - 1] && name[j - 1] == p
            };
        }
        row = next;
    }
    row[name.len()]
}

// NOTE: proptest is a host-only dev-dependency.
#[cfg(not(target_arch = "wasm32"))]
proptest::proptest! {
    #[test]
    fn glob_is_the_reference(pattern in "[ab*]{0,7}", name in "[ab]{0,7}") {
        proptest::prop_assert_eq!(glob(&pattern, &name), glob_reference(pattern.as_bytes(), name.as_bytes()));
    }
}

#[test]
fn glob_matches_stars_anywhere() {
    assert!(glob("bash", "bash"));
    assert!(!glob("bash", "bash2"));
    assert!(glob("mcp__*", "mcp__github__search"));
    assert!(glob("*_file", "write_file"));
    assert!(glob("*", ""));
    assert!(glob("a*b*c", "aXXbYYc"));
    assert!(!glob("a*b*c", "aXXcYYb"));
    let filter = ToolFilter {
        allow: Some(vec!["read_*".to_owned()]),
        deny: vec!["read_secret".to_owned()],
    };
    assert!(filter.accepts(Some("read_file")));
    assert!(!filter.accepts(Some("read_secret")));
    assert!(!filter.accepts(Some("bash")));
    assert!(!filter.accepts(None));
}

#[test]
fn offload_saves_then_replaces_only_confirmed_results_in_every_format() {
    for format in Format::ALL {
        let input = agent(format, 3, 400);
        let plan = plan_messages(read(&input), &offload_options());
        assert_eq!(plan.len(), 3, "{format}");
        let saves: Vec<_> = plan.saves().cloned().collect();
        // The second save fails: its result must stay whole.
        let outcomes = [
            Outcome::Saved,
            Outcome::Failed("quota".to_owned()),
            Outcome::Saved,
        ];
        let done = plan.apply(&outcomes);
        assert_eq!(done.report.edits.len(), 2, "{format}");
        assert_eq!(done.report.failures.len(), 1);
        assert_eq!(done.report.failures[0].reason, "quota");
        assert_eq!(
            done.report.failures[0].tool_call_id.as_deref(),
            Some("call_1")
        );
        let out = done.conversation.to_value();
        let text = out.to_string();
        assert!(
            text.contains("line 399: the quick"),
            "{format}: the failed result stays whole"
        );
        assert_eq!(text.matches("[offloaded tool output id=").count(), 2);
        assert_eq!(problems(&done.conversation), problems(&read(&input)));
        // Every offloaded text is in the save, whole, and reads back.
        for edit in &done.report.edits {
            let Original::Store { key, id } = &edit.original else {
                panic!()
            };
            let save = saves.iter().find(|s| &s.key == key).unwrap();
            assert_eq!(key[..3], ["context-keeper", "s1", "offload"]);
            let (header, stored) = decode(id, &save.bytes).unwrap();
            assert_eq!(stored, big(400));
            assert_eq!(header.tool_name.as_deref(), Some("bash"));
            assert!(edit.tokens_after < edit.tokens_before / 5);
        }
        if format == Format::Anthropic {
            // The image of the result stays beside the pointer; thinking is untouched.
            assert_eq!(out[2]["content"][0]["content"][1]["type"], "image");
            assert_eq!(out[1], input[1]);
        }
        assert_eq!(done.edited, [2, 6], "{format}");
    }
}

#[test]
fn offload_is_idempotent_and_keys_derive_from_content() {
    let input = agent(Format::OpenAi, 1, 400);
    let first = plan_messages(read(&input), &offload_options());
    let again = plan_messages(read(&input), &offload_options());
    let keys =
        |p: &super::offload::OffloadPlan| p.saves().map(|s| s.key.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&first), keys(&again));
    let done = first.apply(&[Outcome::Saved]);
    let second = plan_messages(done.conversation, &offload_options());
    assert!(second.is_empty(), "a pointer is never offloaded again");
    // Another content under the same call id gets another key.
    let mut other = input.clone();
    other[2]["content"] = json!(big(401));
    let third = plan_messages(read(&other), &offload_options());
    assert_ne!(
        keys(&third),
        keys(&plan_messages(read(&input), &offload_options()))
    );
}

#[test]
fn offload_skips_excluded_tools_and_small_results_and_a_missing_outcome_fails() {
    let mut input = agent(Format::OpenAi, 2, 400);
    input[1]["tool_calls"][0]["function"]["name"] = json!("read_offloaded");
    input[4]["content"] = json!("small");
    let plan = plan_messages(read(&input), &offload_options());
    assert!(plan.is_empty());
    let input = agent(Format::OpenAi, 2, 400);
    let plan = plan_messages(read(&input), &offload_options());
    let done = plan.apply(&[Outcome::Saved]);
    assert_eq!(
        (done.report.edits.len(), done.report.failures.len()),
        (1, 1)
    );
    assert_eq!(done.report.failures[0].reason, "the save has no outcome");
}

#[test]
fn a_lone_result_is_offloaded_in_its_own_shape() {
    let options = OffloadOptions {
        tool_name: Some("bash".to_owned()),
        tool_call_id: Some("toolu_1".to_owned()),
        ..offload_options()
    };
    // A string.
    let plan = plan_result(json!(big(400)), &options);
    let save = plan.save().unwrap().clone();
    let done = plan.apply(Some(&Outcome::Saved));
    let content = done.content.as_str().unwrap();
    assert_eq!(
        pointer_id(content),
        Some(done.offloaded.as_ref().unwrap().id.as_str())
    );
    assert!(content.contains("line 1: the quick"));
    assert!(content.contains("line 400: the quick"));
    assert!(!content.contains("line 200: the quick"));
    assert_eq!(done.offloaded.unwrap().lines, 400);
    assert!(decode("x", &save.bytes).is_ok());
    // A failure keeps it.
    let plan = plan_result(json!(big(400)), &options);
    let kept = plan.apply(Some(&Outcome::Failed(
        "timed out after 10000 ms".to_owned(),
    )));
    assert_eq!(kept.content, json!(big(400)));
    assert_eq!(kept.failure.as_deref(), Some("timed out after 10000 ms"));
    // An AI SDK json output becomes a text output; content parts keep their media.
    let json_output = json!({"type": "json", "value": {"rows": (0..2000).collect::<Vec<_>>()}});
    let done = plan_result(json_output, &options).apply(Some(&Outcome::Saved));
    assert_eq!(done.content["type"], "text");
    let parts = json!({"type": "content", "value": [
        {"type": "text", "text": big(400)}, {"type": "media", "data": "AA", "mediaType": "image/png"}]});
    let done = plan_result(parts, &options).apply(Some(&Outcome::Saved));
    assert_eq!(done.content["value"][1]["type"], "media");
    // Under the limit: unchanged, nothing to save.
    let plan = plan_result(json!("ok"), &options);
    assert!(plan.save().is_none());
    assert_eq!(plan.apply(None).content, json!("ok"));
}

#[test]
fn the_preview_caps_long_lines() {
    let minified = "x".repeat(200_000);
    let options = OffloadOptions {
        tool_call_id: Some("c".to_owned()),
        ..offload_options()
    };
    let done = plan_result(json!(minified), &options).apply(Some(&Outcome::Saved));
    let content = done.content.as_str().unwrap();
    assert!(content.len() < 1_000, "{}", content.len());
    assert!(content.contains("more characters on this line"));
}

#[test]
fn prune_trims_old_results_clears_very_old_ones_and_is_idempotent() {
    for format in Format::ALL {
        let input = agent(format, 14, 200);
        let conv = read(&input);
        let options = PruneOptions::default();
        let pruned = prune(conv, &options);
        let edits = &pruned.report.edits;
        // 14 turns: the last 3 stay, turns 0..=3 (age >= 10) are cleared, 4..=10 trimmed.
        let cleared = edits
            .iter()
            .filter(|e| e.action == Action::HardClear)
            .count();
        let trimmed = edits
            .iter()
            .filter(|e| e.action == Action::SoftTrim)
            .count();
        assert_eq!((cleared, trimmed), (4, 7), "{format}");
        let out = pruned.conversation.to_value();
        let text = out.to_string();
        assert_eq!(text.matches(CLEARED_PREFIX).count(), 4);
        assert_eq!(text.matches(TRIM_NOTE).count(), 7);
        // The latest three results are whole; user text and thinking are untouched.
        let n = input.as_array().unwrap().len();
        for i in [n - 2, n - 4, n - 6, 0, n - 1] {
            assert_eq!(out[i], input[i], "{format} message {i}");
        }
        for i in (1..n - 1).step_by(2) {
            assert_eq!(
                out[i], input[i],
                "{format}: assistant message {i} is never edited"
            );
        }
        if format == Format::Anthropic {
            assert_eq!(
                out[2]["content"][0]["content"][1]["type"], "image",
                "images stay"
            );
        }
        assert_eq!(
            problems(&pruned.conversation),
            problems(&read(&input)),
            "{format}"
        );
        let again = prune(pruned.conversation.clone(), &options);
        assert!(
            again.report.edits.is_empty(),
            "{format}: {:?}",
            again.report.edits
        );
        assert_eq!(again.conversation.to_value(), out);
        assert!(pruned.report.tokens_saved > 0);
    }
}

#[test]
fn prune_holds_back_until_it_frees_enough_and_honours_tool_lists() {
    let input = agent(Format::OpenAi, 5, 200);
    let options = PruneOptions {
        clear_at_least_tokens: 1_000_000,
        ..PruneOptions::default()
    };
    let pruned = prune(read(&input), &options);
    assert!(pruned.report.edits.is_empty());
    let held = pruned.report.held.unwrap();
    assert!(held.would_save > 0);
    assert_eq!(pruned.conversation.to_value(), input);
    let denied = PruneOptions {
        tools: ToolFilter {
            allow: None,
            deny: vec!["ba*".to_owned()],
        },
        ..PruneOptions::default()
    };
    assert!(prune(read(&input), &denied).report.edits.is_empty());
}

#[test]
fn prune_clears_a_pointer_but_keeps_its_id() {
    let input = agent(Format::OpenAi, 12, 400);
    let offloaded = plan_messages(read(&input), &offload_options());
    let n = offloaded.len();
    let done = offloaded.apply(&vec![Outcome::Saved; n]);
    let pruned = prune(done.conversation, &PruneOptions::default());
    let first = pruned.conversation.to_value()[2]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(first.starts_with(CLEARED_PREFIX), "{first}");
    let Original::Store { id, .. } = &pruned.report.edits[0].original else {
        panic!()
    };
    assert!(first.contains(id.as_str()));
    // Pointers younger than the hard limit are not soft-trimmed.
    assert!(pruned
        .report
        .edits
        .iter()
        .all(|e| e.action == Action::HardClear));
}

#[test]
fn soft_trim_counts_utf16_and_keeps_characters_whole() {
    let text = "😀".repeat(3_000);
    let trimmed = super::prune::soft_trim(&text, 1_501, 1_501);
    assert!(trimmed.starts_with(&"😀".repeat(750)));
    assert!(trimmed.contains("of 6,000 characters"));
}

fn writes(format: Format) -> Value {
    let content = big(100);
    let mut messages = vec![json!({"role": "user", "content": "write it"})];
    for t in 0..3 {
        let id = format!("w{t}");
        match format {
            Format::OpenAi => {
                let args = json!({"path": format!("src/f{t}.rs"), "content": content, "mode": "w"})
                    .to_string();
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "write_file", "arguments": args}}]}));
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("wrote\n{content}")}));
            }
            Format::Anthropic => {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": id, "name": "write_file", "input": {"path": format!("src/f{t}.rs"), "content": content, "mode": "w"}}]}));
                messages.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": id, "content": format!("wrote\n{content}")}]}));
            }
            Format::AiSdk => {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "tool-call", "toolCallId": id, "toolName": "write_file", "input": {"path": format!("src/f{t}.rs"), "content": content, "mode": "w"}}]}));
                messages.push(json!({"role": "tool", "content": [
                    {"type": "tool-result", "toolCallId": id, "toolName": "write_file", "output": {"type": "text", "value": format!("wrote\n{content}")}}]}));
            }
        }
    }
    Value::Array(messages)
}

#[test]
fn evict_replaces_written_content_with_a_pointer_to_the_path() {
    for format in Format::ALL {
        let input = writes(format);
        let evicted = evict(read(&input), &EvictOptions::default());
        // The latest turn stays: two calls evicted, two results noted.
        let inputs = evicted
            .report
            .edits
            .iter()
            .filter(|e| e.action == Action::EvictInput)
            .count();
        let results = evicted
            .report
            .edits
            .iter()
            .filter(|e| e.action == Action::EvictResult)
            .count();
        assert_eq!((inputs, results), (2, 2), "{format}");
        assert_eq!(evicted.edited, [1, 2, 3, 4]);
        let out = evicted.conversation.to_value();
        assert_eq!(out[5], input[5]);
        assert_eq!(out[6], input[6]);
        let call = out[1].to_string();
        assert!(call.contains(EVICTED_PREFIX), "{format}: {call}");
        assert!(call.contains("src/f0.rs"));
        assert!(
            call.contains("\\\"mode\\\":\\\"w\\\"") || call.contains("\"mode\":\"w\""),
            "{format}: other arguments stay"
        );
        let Original::File { path } = &evicted.report.edits[0].original else {
            panic!()
        };
        assert_eq!(path, "src/f0.rs");
        assert_eq!(problems(&evicted.conversation), problems(&read(&input)));
        let again = evict(evicted.conversation.clone(), &EvictOptions::default());
        assert!(again.report.edits.is_empty(), "{format}: idempotent");
    }
}

#[test]
fn evict_leaves_calls_without_a_path_and_unnamed_tools() {
    let mut input = writes(Format::Anthropic);
    input[1]["content"][0]["input"]
        .as_object_mut()
        .unwrap()
        .remove("path");
    input[3]["content"][0]["name"] = json!("save_note");
    let evicted = evict(read(&input), &EvictOptions::default());
    assert!(evicted.report.edits.is_empty());
    assert_eq!(evicted.conversation.to_value(), input);
}

#[test]
fn reads_of_an_offloaded_result_page_through_all_of_it() {
    let text = big(1_000);
    let options = OffloadOptions {
        tool_call_id: Some("c".to_owned()),
        ..offload_options()
    };
    let plan = plan_result(json!(text), &options);
    let bytes = plan.save().unwrap().bytes.clone();
    let (_, stored) = decode("c", &bytes).unwrap();
    let mut offset = 1;
    let mut lines = Vec::new();
    while let Some(next) = {
        let read = read_lines("c", stored, offset, 300, 300);
        lines.push(read.text);
        read.next_offset
    } {
        offset = next;
    }
    assert_eq!(lines.join("\n") + "\n", text);
}
