use super::*;
use crate::context::archive::{is_archive, read_archive};
use crate::context::fold::check_summary;
use crate::context::marker::{active_indices, is_native_marker};
use crate::messages::{parse_messages, validate_conversation, MessagesOptions};
use serde_json::json;

fn read(v: &Value) -> Conversation {
    parse_messages(
        v,
        &MessagesOptions {
            format: None,
            allow_pending_calls: true,
        },
    )
    .unwrap()
}

/// An OpenAI agent run: a system prompt, the task, then `turns` assistant turns, each a call
/// of `bash` and its result, with a user interjection every 5 turns.
fn run(turns: usize) -> Value {
    let mut list = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the failing test in src/export/csv.rs; run `cargo test --locked` to check."}),
    ];
    for t in 0..turns {
        list.push(json!({"role": "assistant", "content": format!("Turn {t}: looking at src/export/csv.rs"), "tool_calls": [
            {"id": format!("call_{t}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\":\"sed -n {t},+40p src/export/csv.rs\"}}")}}]}));
        list.push(json!({"role": "tool", "tool_call_id": format!("call_{t}"), "content": format!("line {t}\n{}", "fn export_row(amount: i64) -> String { todo!() }\n".repeat(30))}));
        if t % 5 == 4 {
            list.push(json!({"role": "user", "content": format!("keep going ({t})")}));
        }
    }
    Value::Array(list)
}

fn options() -> CompactOptions {
    CompactOptions {
        session_id: "s1".into(),
        keep_recent_turns: Some(3),
        model: Some("gpt-4o".into()),
        now: Some("2026-11-25T10:00:00Z".into()),
        ..CompactOptions::default()
    }
}

fn planned(v: &Value, state: SessionState) -> CompactPlan {
    plan(read(v), &options(), state, &mut Counter::new()).unwrap()
}

/// Finishing a plan whose archive was stored, with a summary.
trait Summarized {
    fn summarized(self, text: &str) -> Compacted;
}

impl Summarized for CompactPlan {
    fn summarized(self, text: &str) -> Compacted {
        self.finish(
            &[Outcome::Saved, Outcome::Saved],
            SummaryOutcome::Text(text.into()),
            None,
            &mut Counter::new(),
        )
    }
}

const SUMMARY: &str =
    "Intent: fix the failing test. Progress: read the export code. State: reading.";

fn compacted(v: &Value, state: SessionState) -> Compacted {
    let p = planned(v, state);
    assert!(p.has_work());
    p.summarized(SUMMARY)
}

#[test]
fn the_span_becomes_a_marker_and_the_rest_stays_byte_identical() {
    let input = run(12);
    let before = read(&input);
    let out = compacted(&input, SessionState::default());
    assert_eq!(out.report.outcome, CompactOutcome::Compacted);
    let msgs = out.conversation.messages();
    // system, first request, marker, then the last 3 turns (one opened by a user message)
    assert_eq!(msgs[0], before.messages()[0]);
    assert_eq!(msgs[1], before.messages()[1]);
    let marker = marker_of(&msgs[2]).expect("a marker after the head");
    assert_eq!(marker.number, 1);
    assert_eq!(marker.head, 2);
    assert_eq!(marker.time.as_deref(), Some("2026-11-25T10:00:00Z"));
    assert!(marker.summary.starts_with(SUMMARY));
    let span = out.report.span.unwrap();
    assert_eq!(span.from, 2);
    assert_eq!(marker.archived_messages as usize, span.to - span.from);
    assert_eq!(&msgs[3..], &before.messages()[span.to..]);
    assert_eq!(
        msgs.iter().filter(|m| m.role() == Role::Assistant).count(),
        3
    );
    // every untouched message is the caller's, by index
    for (i, o) in out.origin.iter().enumerate() {
        match o {
            Some(j) => assert_eq!(msgs[i], before.messages()[*j]),
            None => assert_eq!(i, 2),
        }
    }
    assert!(validate_conversation(&out.conversation, &MessagesOptions::default()).is_empty());
    assert!(out.report.tokens_after < out.report.tokens_before);
    assert!(out.report.replaced_tokens > out.report.summary_tokens);
    let state = out.state.unwrap();
    assert_eq!(state.compactions.len(), 1);
    assert_eq!(state.compactions[0].end as usize, span.to);
}

#[test]
fn the_archive_holds_the_span_as_json_and_markdown() {
    let input = run(8);
    let p = planned(&input, SessionState::default());
    let saves = p.saves().to_vec();
    assert_eq!(saves.len(), 2);
    assert_eq!(saves[0].key[..3], ["context-keeper", "s1", "archive"]);
    assert!(saves[0].key[3].starts_with("0001-"));
    assert_eq!(saves[1].key[3], format!("{}.md", saves[0].key[3]));
    let record = read_archive(&saves[0].bytes).unwrap();
    assert_eq!(record.number, 1);
    assert_eq!(record.previous, None);
    let whole = input.as_array().unwrap();
    let request = p.summary_request().unwrap();
    assert_eq!(record.messages, request.messages.to_values());
    assert_eq!(record.messages[0], whole[2]);
    let md = String::from_utf8(saves[1].bytes.clone()).unwrap();
    assert!(md.contains("### 2. assistant") && md.contains("Tool call `bash` (call_0)"));
    assert!(request.prompt.contains("at most 2000 tokens"));
    assert!(request.transcript.starts_with("### 2. assistant"));
    // the same input plans the same keys and bytes
    let again = planned(&input, SessionState::default());
    assert_eq!(again.saves().to_vec(), saves);
}

#[test]
fn an_archive_is_checked_without_its_messages_as_it_is_read() {
    let input = run(8);
    let p = planned(&input, SessionState::default());
    let json = String::from_utf8(p.saves().make(0).unwrap().bytes).unwrap();
    let mut record: Value = serde_json::from_str(&json).unwrap();
    let edits: [(&str, Value); 8] = [
        ("version", json!("1")),
        ("number", json!(-1)),
        ("format", json!("gemini")),
        ("previous", json!([1, 2])),
        ("messages", json!({})),
        ("messages", Value::Null),
        ("continues", json!("yes")),
        ("unknown", json!(1)), // kept: a later version's field
    ];
    let mut cases: Vec<Vec<u8>> = vec![
        json.clone().into_bytes(),
        json.as_bytes()[..json.len() / 2].to_vec(),
        b"[]".to_vec(),
        vec![0xff],
    ];
    for (field, value) in edits {
        let mut bad = record.clone();
        bad[field] = value;
        cases.push(serde_json::to_vec(&bad).unwrap());
    }
    for field in [
        "version",
        "number",
        "format",
        "messages",
        "previous",
        "continues",
    ] {
        let mut bad = record.clone();
        bad.as_object_mut().unwrap().remove(field);
        cases.push(serde_json::to_vec(&bad).unwrap());
    }
    record["messages"] = json!([1, "text", null, [{}], {"role": "user"}]);
    cases.push(serde_json::to_vec(&record).unwrap());
    let mut read = 0;
    for bytes in &cases {
        let whole = read_archive(bytes).is_some();
        assert_eq!(
            is_archive(bytes),
            whole,
            "{}",
            String::from_utf8_lossy(bytes)
        );
        read += usize::from(whole);
    }
    // the real record, a later version's field, no `previous` or `continues`, any messages
    assert_eq!(read, 5);
}

#[test]
fn every_failure_leaves_the_messages_as_they_were() {
    let input = run(10);
    let before = read(&input);
    let cases: Vec<(Vec<Outcome>, SummaryOutcome, Phase)> =
        vec![
        (
            vec![Outcome::Failed("quota".into()), Outcome::Saved],
            SummaryOutcome::NotCalled,
            Phase::Archive,
        ),
        (vec![Outcome::Saved], SummaryOutcome::NotCalled, Phase::Archive),
        (
            vec![Outcome::Saved, Outcome::Saved],
            SummaryOutcome::Failed("timed out after 10000 ms".into()),
            Phase::Summarize,
        ),
        (
            vec![Outcome::Saved, Outcome::Saved],
            SummaryOutcome::Text("   ".into()),
            Phase::Check,
        ),
        (
            vec![Outcome::Saved, Outcome::Saved],
            SummaryOutcome::Text("Error: 429 Too Many Requests".into()),
            Phase::Check,
        ),
        (
            vec![Outcome::Saved, Outcome::Saved],
            SummaryOutcome::Text(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                    .into(),
            ),
            Phase::Check,
        ),
        (
            vec![Outcome::Saved, Outcome::Saved],
            SummaryOutcome::Text("word ".repeat(100_000)),
            Phase::Check,
        ),
    ];
    for (archive, summary, phase) in cases {
        let out = planned(&input, SessionState::default()).finish(
            &archive,
            summary,
            None,
            &mut Counter::new(),
        );
        assert_eq!(out.report.outcome, CompactOutcome::Failed);
        assert_eq!(out.report.phase, Some(phase));
        assert!(out.report.reason.is_some());
        assert_eq!(out.conversation, before);
        assert!(out.origin.iter().enumerate().all(|(i, o)| *o == Some(i)));
        assert!(
            out.state.is_none(),
            "nothing recorded: the next call tries again"
        );
    }
}

#[test]
fn error_texts_are_told_from_summaries() {
    let m = Measure::for_model(Some("gpt-4o"));
    for bad in [
        "Traceback (most recent call last):\n  File x",
        "TypeError: fetch failed",
        "<!DOCTYPE html><title>502</title>",
        "Request failed with status code 529 (overloaded_error)",
        "I'm sorry, but I can't help with that.",
        r#"{"error": {"message": "Incorrect API key provided"}}"#,
    ] {
        assert!(check_summary(bad, 10_000, &m).is_err(), "{bad}");
    }
    let good = "Intent: fix the error in src/a.rs (a TypeError: fetch failed was seen in tests).";
    assert!(check_summary(good, 10_000, &m).is_ok());
}

#[test]
fn a_later_compaction_folds_the_previous_summary_in() {
    let input = run(12);
    let first = compacted(&input, SessionState::default());
    // the host sends back what it got, with more turns
    let mut grown = first.conversation.to_value().as_array().unwrap().clone();
    let more = run(20);
    grown.extend(more.as_array().unwrap()[2..].iter().skip(40).cloned());
    let grown = Value::Array(grown);
    let p = planned(&grown, first.state.clone().unwrap());
    let request = p.summary_request().unwrap();
    let previous = request.previous_summary.as_deref().unwrap();
    assert!(previous.starts_with(SUMMARY));
    // the first summary lost the path the recent turns still name: pinned
    assert!(previous.contains("- `src/export/csv.rs`"), "{previous}");
    assert!(read_archive(&p.saves().make(0).unwrap().bytes)
        .unwrap()
        .previous
        .is_some());
    let second = p.summarized("Both summaries folded.");
    let marker = second.marker.unwrap();
    assert_eq!(marker.number, 2);
    let span = second.report.span.unwrap();
    assert_eq!(span.from, 2, "the previous marker is replaced");
    let first_marker = first.marker.unwrap();
    assert_eq!(
        marker.archived_messages,
        first_marker.archived_messages + (span.to - span.from - 1) as u64
    );
    assert_eq!(
        second
            .conversation
            .messages()
            .iter()
            .filter(|m| marker_of(m).is_some())
            .count(),
        1
    );
}

#[test]
fn facts_pinned_from_json_tool_inputs_end_at_escaped_newlines() {
    // Regression (the 300-turn session of tests/data/sessions): tool inputs are read as JSON
    // text, where `as e:\n` was pinned as the Windows path `e:\n` and a path followed by `\n`
    // was no path at all.
    let mut input = run(8);
    let list = input.as_array_mut().unwrap();
    let code = "try:\n    load()\nexcept OSError as e:\n    raise\n# uses app/io_util.py\n";
    let args = json!({"command": format!("cat <<'EOF' > app/io.py\n{code}EOF")}).to_string();
    list[2]["tool_calls"][0]["function"]["arguments"] = json!(args);
    list.push(
        json!({"role": "user", "content": "Is app/io_util.py still imported? See `e:` too."}),
    );
    let out = compacted(&input, SessionState::default());
    let pinned: Vec<&str> = out.report.pinned.iter().map(|f| f.text.as_str()).collect();
    assert!(pinned.contains(&"app/io_util.py"), "{pinned:?}");
    assert!(pinned.iter().all(|f| !f.contains('\\')), "{pinned:?}");
}

#[test]
fn the_full_history_gets_the_stored_compaction_back_without_a_summary() {
    let input = run(12);
    let first = compacted(&input, SessionState::default());
    let state = first.state.clone().unwrap();
    let p = planned(&input, state.clone());
    assert!(!p.has_work(), "nothing beyond the recent turns");
    let again = p.finish(&[], SummaryOutcome::NotCalled, None, &mut Counter::new());
    assert_eq!(again.report.outcome, CompactOutcome::Reapplied);
    assert_eq!(again.report.reapplied, Some(1));
    assert_eq!(
        again.conversation.to_json_string(),
        first.conversation.to_json_string(),
        "byte for byte"
    );
    assert_eq!(again.origin, first.origin);
    // a history whose early messages changed is not matched
    let mut edited = input.clone();
    edited[3]["content"] = json!("changed");
    let p = planned(&edited, state);
    assert!(p.reapplied.is_none());
}

#[test]
fn stacked_compactions_reapply_to_the_full_history() {
    let full = run(50);
    let list = full.as_array().unwrap();
    // compaction 1 on the first 60 messages
    let part = Value::Array(list[..60].to_vec());
    let one = compacted(&part, SessionState::default());
    // the host sends the full history so far (AI SDK 5/6 style): re-applied, then compacted
    let part2 = Value::Array(list[..100].to_vec());
    let p = planned(&part2, one.state.clone().unwrap());
    assert_eq!(p.reapplied, Some(1));
    let two = p.summarized("Second.");
    // the span is in the full history's indices: from the head, through the re-applied marker
    let span = two.report.span.unwrap();
    assert_eq!(span.from, 2);
    assert_eq!(
        two.marker.as_ref().unwrap().archived_messages as usize,
        span.to - 2
    );
    assert_eq!(two.marker.as_ref().unwrap().number, 2);
    let state = two.state.clone().unwrap();
    assert!(state.compactions[1].chain.is_some());
    // the full history again: compaction 2 is re-applied, byte for byte
    let again =
        planned(&part2, state).finish(&[], SummaryOutcome::NotCalled, None, &mut Counter::new());
    assert_eq!(again.report.reapplied, Some(2));
    assert_eq!(
        again.conversation.to_json_string(),
        two.conversation.to_json_string()
    );
    // and every untouched message maps to the full history's
    let before = read(&part2);
    for (i, o) in again.origin.iter().enumerate() {
        if let Some(j) = o {
            assert_eq!(again.conversation.messages()[i], before.messages()[*j]);
        }
    }
}

#[test]
fn the_cut_never_falls_inside_a_tool_exchange() {
    // parallel calls whose results arrive over several messages
    let mut list = vec![json!({"role": "user", "content": "go"})];
    for t in 0..6 {
        list.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("a{t}"), "type": "function", "function": {"name": "x", "arguments": "{}"}},
            {"id": format!("b{t}"), "type": "function", "function": {"name": "y", "arguments": "{}"}}]}));
        list.push(
            json!({"role": "tool", "tool_call_id": format!("a{t}"), "content": "r".repeat(2_000)}),
        );
        list.push(
            json!({"role": "tool", "tool_call_id": format!("b{t}"), "content": "r".repeat(2_000)}),
        );
    }
    let input = Value::Array(list);
    for keep in 1..=5 {
        for tokens in [None, Some(10), Some(700), Some(1_500)] {
            let o = CompactOptions {
                keep_recent_turns: Some(keep),
                keep_recent_tokens: tokens,
                ..options()
            };
            let p = plan(
                read(&input),
                &o,
                SessionState::default(),
                &mut Counter::new(),
            )
            .unwrap();
            if !p.has_work() {
                continue;
            }
            let out = p.summarized("s");
            assert!(
                validate_conversation(&out.conversation, &MessagesOptions::default()).is_empty(),
                "keep {keep} tokens {tokens:?}"
            );
            // the latest exchange always stays
            let last = out.conversation.messages().last().unwrap();
            assert_eq!(last.parts()[0].call_id(), Some("b5"));
        }
    }
}

/// A message text long enough that a marker replacing a few of them saves tokens (a marker no
/// smaller than its span is refused).
fn words(tag: &str) -> String {
    format!(
        "{tag} {}",
        "the export code reads each row and formats it; ".repeat(12)
    )
}

#[test]
fn markers_are_written_in_each_format_and_recognised() {
    let anthropic = json!({"system": "sys", "messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "text", "text": words("a")}]},
        {"role": "user", "content": words("b")},
        {"role": "assistant", "content": [{"type": "text", "text": words("c")}]},
        {"role": "user", "content": words("d")},
        {"role": "assistant", "content": [{"type": "text", "text": words("e")}]}]});
    let ui = json!([
        {"id": "1", "role": "user", "parts": [{"type": "text", "text": "task"}]},
        {"id": "2", "role": "assistant", "parts": [{"type": "text", "text": words("a")}]},
        {"id": "3", "role": "user", "parts": [{"type": "text", "text": words("b")}]},
        {"id": "4", "role": "assistant", "parts": [{"type": "text", "text": words("c")}]}]);
    let o = CompactOptions {
        keep_recent_turns: Some(1),
        ..options()
    };
    for input in [anthropic, ui] {
        let p = plan(
            read(&input),
            &o,
            SessionState::default(),
            &mut Counter::new(),
        )
        .unwrap();
        let out = p.summarized("s");
        assert_eq!(out.report.outcome, CompactOutcome::Compacted, "{input}");
        let value = out.conversation.to_value();
        let back = read(&value);
        let at = back.messages().iter().position(|m| marker_of(m).is_some());
        assert_eq!(at, Some(1), "{value}");
        let problems = validate_conversation(&back, &MessagesOptions::default());
        assert!(problems.is_empty(), "{problems:?}");
        if back.messages()[1].is_ui_message() {
            assert_eq!(value[1]["id"], "context-keeper-compaction-1");
        }
        // what the model sees: the head, then the marker on
        assert_eq!(
            active_indices(&back),
            (0..back.messages().len()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_model_sees_what_precedes_an_openai_compaction_item_and_nothing_before_anthropics_block() {
    // OpenAI's compacted window: the user messages it kept, the item, then the new turns.
    let openai = json!([
        {"role": "user", "content": "task"},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok"}]);
    let conv = parse_messages(&openai, &MessagesOptions::default()).unwrap();
    assert_eq!(active_indices(&conv), vec![0, 1, 2, 3]);
    // Anthropic drops every block before its compaction block.
    let anthropic = json!([
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "compaction", "content": "provider summary"}]},
        {"role": "user", "content": "next"}]);
    let conv = read(&anthropic);
    assert_eq!(active_indices(&conv), vec![1, 2]);
    // A failed Anthropic compaction (no summary) drops nothing.
    let failed = json!([
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "compaction", "content": null}]},
        {"role": "user", "content": "next"}]);
    assert_eq!(active_indices(&read(&failed)), vec![0, 1, 2]);
}

#[test]
fn provider_native_compaction_starts_the_span_after_it() {
    let input = json!({"messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "compaction", "content": "provider summary"}]},
        {"role": "user", "content": words("x")},
        {"role": "assistant", "content": [{"type": "text", "text": words("y")}]},
        {"role": "user", "content": words("z")},
        {"role": "assistant", "content": [{"type": "text", "text": words("w")}]}]});
    let conv = read(&input);
    assert_eq!(active_indices(&conv), vec![1, 2, 3, 4, 5]);
    let o = CompactOptions {
        keep_recent_turns: Some(1),
        ..options()
    };
    let out = plan(conv, &o, SessionState::default(), &mut Counter::new())
        .unwrap()
        .summarized("s");
    let span = out.report.span.unwrap();
    // read as Anthropic (its `compaction` block says so): the marker, a user message, cannot
    // come before the user's "z", so the cut moves to the assistant's "w"
    assert_eq!(out.conversation.format(), Format::Anthropic);
    assert_eq!((span.from, span.to), (2, 5));
    assert!(is_native_marker(&out.conversation.messages()[1]));
}

#[test]
fn a_first_request_over_a_quarter_of_the_window_is_summarized_and_its_details_pinned() {
    let mut v = run(8);
    v[1]["content"] = json!(format!(
        "Fix src/export/csv.rs. {}",
        "context ".repeat(3_000)
    ));
    let o = CompactOptions {
        context_window: Some(8_000),
        ..options()
    };
    let p = plan(read(&v), &o, SessionState::default(), &mut Counter::new()).unwrap();
    let out = p.summarized("short");
    assert!(out.report.first_request_summarized);
    assert_eq!(out.report.span.unwrap().from, 1);
    assert_eq!(marker_of(&out.conversation.messages()[1]).unwrap().head, 1);
}

#[test]
fn without_a_summarizer_the_heuristic_summary_is_used_and_said() {
    let input = run(10);
    let out = planned(&input, SessionState::default()).finish(
        &[Outcome::Saved, Outcome::Saved],
        SummaryOutcome::Heuristic,
        None,
        &mut Counter::new(),
    );
    assert_eq!(out.report.outcome, CompactOutcome::Compacted);
    assert!(out.report.heuristic);
}

#[test]
fn the_flush_runs_once_per_cycle_before_the_summary() {
    let input = run(10);
    let o = CompactOptions {
        flush: true,
        ..options()
    };
    let p = plan(
        read(&input),
        &o,
        SessionState::default(),
        &mut Counter::new(),
    )
    .unwrap();
    let request = p.flush_request().unwrap().clone();
    assert_eq!(request.cycle, 1);
    // the summary fails: the flush is still recorded, so a retry does not flush again
    let out = p.finish(
        &[Outcome::Saved, Outcome::Saved],
        SummaryOutcome::Failed("down".into()),
        Some(FlushOutcome::Replied(Some("SILENT".into()))),
        &mut Counter::new(),
    );
    assert!(out.report.flush.as_ref().unwrap().silent);
    let state = out.state.unwrap();
    let p = plan(read(&input), &o, state, &mut Counter::new()).unwrap();
    assert!(p.flush_request().is_none());
    let out = p.summarized(SUMMARY);
    assert_eq!(out.report.outcome, CompactOutcome::Compacted);
    // the next cycle flushes again, before the next compaction
    let state = out.state.unwrap();
    let request = flush::request(&o.flush_options, &state, 0, 128_000, true);
    assert_eq!(request.map(|r| r.cycle), Some(2));
}

#[test]
fn nothing_to_compact_is_said_not_failed() {
    let input = run(2);
    let p = planned(&input, SessionState::default());
    assert!(!p.has_work());
    let out = p.finish(&[], SummaryOutcome::NotCalled, None, &mut Counter::new());
    assert_eq!(out.report.outcome, CompactOutcome::Unchanged);
    assert!(out.report.reason.unwrap().contains("nothing to compact"));
    assert!(plan(
        read(&json!([])),
        &options(),
        SessionState::default(),
        &mut Counter::new()
    )
    .is_ok());
}

/// Found by the fault campaign (tests/js/keeper-faults.test.mjs): an Anthropic history handed
/// back with its marker after the first request's blocks, whose recent turns would start with a
/// user message, came out with two user messages in a row. The cut moves to where the recent
/// turns start with the assistant.
#[test]
fn a_later_anthropic_compaction_after_blocks_keeps_the_roles_alternating() {
    let anthropic = |turns: usize| -> Vec<Value> {
        let mut list = vec![json!({"role": "user", "content": "Fix the export."})];
        for t in 0..turns {
            list.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": format!("t{t}"), "name": "bash", "input": {"command": format!("sed -n {t}p a.rs")}}]}));
            list.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{t}"), "content": "fn export_row() {}\n".repeat(40)}]}));
            list.push(json!({"role": "assistant", "content": format!("Turn {t} read.")}));
            list.push(json!({"role": "user", "content": format!("go on ({t})")}));
        }
        list
    };
    let options = CompactOptions {
        keep_recent_turns: None,
        keep_recent_tokens: Some(1),
        ..options()
    };
    let mut history = anthropic(6);
    history.pop();
    let first = plan(
        read(&Value::Array(history)),
        &options,
        SessionState::default(),
        &mut Counter::new(),
    )
    .unwrap()
    .summarized(SUMMARY);
    let head = first.conversation.messages()[0].parts().len();
    assert!(head > 1, "the marker follows the first request's blocks");
    // the host sends back what it got, with more turns ending in a user message
    let mut grown = first.conversation.to_value().as_array().unwrap().clone();
    grown.push(json!({"role": "user", "content": "Next, the import."}));
    grown.extend(anthropic(4).into_iter().skip(1).map(|m| {
        let mut m = m;
        if let Some(id) = m.pointer_mut("/content/0/id") {
            *id = json!(format!("later-{}", id.as_str().unwrap()));
        }
        if let Some(id) = m.pointer_mut("/content/0/tool_use_id") {
            *id = json!(format!("later-{}", id.as_str().unwrap()));
        }
        m
    }));
    let grown = read(&Value::Array(grown));
    let options_same = MessagesOptions {
        format: Some(Format::Anthropic),
        allow_pending_calls: true,
    };
    assert!(validate_conversation(&grown, &options_same).is_empty());
    let p = plan(grown, &options, first.state.unwrap(), &mut Counter::new()).unwrap();
    let second = p.summarized("Both summaries folded.");
    assert_eq!(second.report.outcome, CompactOutcome::Compacted);
    let problems = validate_conversation(&second.conversation, &options_same);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn an_openai_compaction_item_is_read_kept_verbatim_and_never_summarized() {
    let item = json!({"type": "compaction", "id": "cmp_68f", "encrypted_content": "gAAAAABo".repeat(40), "created_by": "server"});
    let mut list = vec![
        json!({"role": "user", "content": "Fix the failing test in src/export/csv.rs."}),
        item.clone(),
    ];
    let Value::Array(rest) = run(12) else {
        unreachable!()
    };
    list.extend(rest.into_iter().skip(2));
    let input = Value::Array(list);
    let conv = read(&input);
    assert_eq!(conv.format(), Format::OpenAi);
    assert!(validate_conversation(&conv, &MessagesOptions::default()).is_empty());
    assert!(is_native_marker(&conv.messages()[1]));
    assert_eq!(conv.messages()[1].to_value(), item, "read verbatim");
    let out = compacted(&input, SessionState::default());
    let span = out.report.span.unwrap();
    // nothing before it is summarized again: the span starts after it, and it stays
    assert_eq!(span.from, 2);
    let messages = out.conversation.to_value();
    assert_eq!(messages[1], item);
    assert!(messages[2]["content"]
        .as_str()
        .unwrap()
        .starts_with(crate::messages::COMPACTION_TAG));
    // a bad item is a typed error naming its field; another role-less item is still one
    for (bad, path) in [
        (
            json!({"type": "compaction"}),
            "messages[0].encrypted_content",
        ),
        (
            json!({"type": "compaction", "encrypted_content": 7}),
            "messages[0].encrypted_content",
        ),
        (
            json!({"type": "compaction", "encrypted_content": "x", "id": 1}),
            "messages[0].id",
        ),
        (
            json!({"type": "reasoning", "summary": []}),
            "messages[0].role",
        ),
    ] {
        let err = parse_messages(
            &json!([bad]),
            &MessagesOptions {
                format: Some(Format::OpenAi),
                allow_pending_calls: false,
            },
        )
        .unwrap_err();
        assert_eq!(err.path, path, "{bad}");
    }
}

/// A `useChat` history: the request, then one assistant `UIMessage` holding `steps` steps
/// (each a `step-start`, a text and a `bash` tool part with its output).
fn ui_run(steps: usize) -> Value {
    let mut parts = Vec::new();
    for t in 0..steps {
        parts.push(json!({"type": "step-start"}));
        parts.push(json!({"type": "text", "text": format!("Step {t}: reading src/export/csv.rs")}));
        parts.push(json!({"type": "tool-bash", "toolCallId": format!("call_{t}"), "state": "output-available",
            "input": {"command": format!("sed -n {t},+40p src/export/csv.rs")},
            "output": format!("line {t}\n{}", "fn export_row(amount: i64) -> String { todo!() }\n".repeat(30))}));
    }
    json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Fix the failing test in src/export/csv.rs."}]},
        {"id": "a1", "role": "assistant", "metadata": {"model": "m"}, "parts": parts}
    ])
}

/// `history` with its last message's parts cut to the first `upto`.
fn ui_upto(history: &Value, upto: usize) -> Value {
    let mut out = history.clone();
    let last = out.as_array_mut().unwrap().last_mut().unwrap();
    let parts: Vec<Value> = last["parts"].as_array().unwrap()[..upto].to_vec();
    last["parts"] = Value::Array(parts);
    out
}

#[test]
fn a_ui_message_is_cut_at_a_step_and_the_rest_stays_byte_identical() {
    let full = ui_run(10);
    let source = full[1]["parts"].as_array().unwrap().clone();
    let state = SessionState::default();
    let p = plan(read(&full), &options(), state, &mut Counter::new()).unwrap();
    assert!(p.has_work(), "{:?}", p.reason);
    let saves = p.saves().to_vec();
    let out = p.summarized(SUMMARY);
    assert_eq!(out.report.outcome, CompactOutcome::Compacted);
    // the last 3 steps (keepRecentTurns 3) stay: the cut is before the 8th step-start
    let span = out.report.span.unwrap();
    assert_eq!((span.from, span.to, span.to_part), (1, 1, Some(21)));
    let messages = out.conversation.to_value();
    assert_eq!(messages.as_array().unwrap().len(), 3);
    assert_eq!(messages[0], full[0]);
    assert!(marker_of(&out.conversation.messages()[1]).is_some());
    // the rest of the message: its own object minus the archived parts, byte for byte
    let mut rest = full[1].clone();
    rest["parts"] = Value::Array(source[21..].to_vec());
    assert_eq!(messages[2], rest);
    assert_eq!(messages[2].to_string(), rest.to_string());
    assert_eq!(out.origin, vec![Some(0), None, None]);
    assert!(validate_conversation(&out.conversation, &MessagesOptions::default()).is_empty());
    // the archive holds the steps replaced, as the first parts of the same message
    let record = read_archive(&saves[0].bytes).unwrap();
    let mut archived = full[1].clone();
    archived["parts"] = Value::Array(source[..21].to_vec());
    assert_eq!(record.messages, vec![archived]);
    assert!(!record.continues);
    let marker = out.marker.unwrap();
    assert_eq!(marker.archived_messages, 1);
    // the count went down, and the marker says by how much
    assert!(marker.tokens_after < marker.tokens_before);
    let recount = Counter::new()
        .count(&out.conversation, &options().count_options(Format::AiSdk))
        .unwrap()
        .total;
    assert!(
        recount.abs_diff(marker.tokens_after) <= 2,
        "{recount} {marker:?}"
    );
    // the output comes back: recognised, nothing to do
    let state = out.state.unwrap();
    let back = plan(
        read(&messages),
        &options(),
        state.clone(),
        &mut Counter::new(),
    )
    .unwrap();
    assert!(!back.has_work());
    // the full history, grown by two steps: the compaction re-applied without a summary,
    // byte for byte what a host keeping the output holds once it appends the same steps
    let grown = ui_run(12);
    let again = plan(
        read(&grown),
        &CompactOptions {
            keep_recent_turns: Some(1_000),
            ..options()
        },
        state,
        &mut Counter::new(),
    )
    .unwrap();
    assert!(!again.has_work());
    let again = again.finish(&[], SummaryOutcome::NotCalled, None, &mut Counter::new());
    assert_eq!(again.report.outcome, CompactOutcome::Reapplied);
    let mut kept = messages.clone();
    let tail = kept[2]["parts"].as_array_mut().unwrap();
    tail.extend(grown[1]["parts"].as_array().unwrap()[30..].iter().cloned());
    assert_eq!(again.conversation.to_value().to_string(), kept.to_string());
    assert_eq!(again.origin, vec![Some(0), None, None]);
}

#[test]
fn stacked_step_cuts_in_one_ui_message_reapply_and_archive_the_pieces_in_order() {
    let full = ui_run(16);
    let source = full[1]["parts"].as_array().unwrap().clone();
    // the first compaction after 10 steps
    let first = compacted(&ui_upto(&full, 30), SessionState::default());
    let state = first.state.clone().unwrap();
    assert_eq!(first.report.span.unwrap().to_part, Some(21));
    // the host keeps the output and appends six more steps to the rest of the message
    let mut sent = first.conversation.to_value();
    sent[2]["parts"]
        .as_array_mut()
        .unwrap()
        .extend(source[30..].iter().cloned());
    let p = plan(read(&sent), &options(), state, &mut Counter::new()).unwrap();
    assert!(p.has_work(), "{:?}", p.reason);
    let saves = p.saves().to_vec();
    let second = p.summarized("Intent: fix the test. State: steps 0 to 12 done.");
    assert_eq!(second.report.outcome, CompactOutcome::Compacted);
    // the cut falls inside the rest again: parts 21..39 of the message are the new span
    let span = second.report.span.unwrap();
    assert_eq!((span.from, span.to, span.to_part), (1, 2, Some(18)));
    let record = read_archive(&saves[0].bytes).unwrap();
    assert!(record.continues);
    let mut piece = full[1].clone();
    piece["parts"] = Value::Array(source[21..39].to_vec());
    assert_eq!(record.messages, vec![piece]);
    let marker = second.marker.clone().unwrap();
    assert_eq!(marker.archived_messages, 1, "the same message, continued");
    let out = second.conversation.to_value();
    let mut rest = full[1].clone();
    rest["parts"] = Value::Array(source[39..].to_vec());
    assert_eq!(out[2], rest);
    // the full history with the state: the second compaction re-applied, byte for byte
    let state = second.state.unwrap();
    assert_eq!(
        state.compactions.last().unwrap().cuts,
        vec![[1, 21], [1, 39]]
    );
    let again = plan(
        read(&full),
        &CompactOptions {
            keep_recent_turns: Some(1_000),
            ..options()
        },
        state,
        &mut Counter::new(),
    )
    .unwrap()
    .finish(&[], SummaryOutcome::NotCalled, None, &mut Counter::new());
    assert_eq!(again.report.outcome, CompactOutcome::Reapplied);
    assert_eq!(again.report.reapplied, Some(2));
    assert_eq!(again.conversation.to_value().to_string(), out.to_string());
}

#[test]
fn a_token_budget_cuts_a_ui_message_at_a_step_within_it() {
    let full = ui_run(10);
    let o = CompactOptions {
        keep_recent_turns: None,
        keep_recent_tokens: Some(2_000),
        ..options()
    };
    let out = plan(
        read(&full),
        &o,
        SessionState::default(),
        &mut Counter::new(),
    )
    .unwrap()
    .summarized(SUMMARY);
    assert_eq!(out.report.outcome, CompactOutcome::Compacted);
    let span = out.report.span.unwrap();
    let part = span.to_part.unwrap();
    assert_eq!(span.to, 1);
    assert_eq!(full[1]["parts"][part]["type"], "step-start");
    let kept = &out.conversation.messages()[2];
    let tokens = single_count(
        kept,
        &out.conversation,
        &o,
        &Measure::for_model(Some("gpt-4o")),
        &mut Counter::new(),
    );
    assert!(tokens <= 2_000, "{tokens}");
    assert!(
        part < 27,
        "at least two steps kept (a step counts about 450 tokens)"
    );
}
