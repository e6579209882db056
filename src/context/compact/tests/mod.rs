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

/// Running a plan's machine to its end: every archive save confirmed, the summarizer
/// returning `text`.
trait Summarized {
    fn summarized(self, text: &str) -> Compacted;
}

impl Summarized for CompactPlan {
    fn summarized(mut self, text: &str) -> Compacted {
        loop {
            let event = match self.next() {
                Need::Done => return self.done(&mut Counter::new()),
                Need::Archive(saves) => Event::Archived(vec![Outcome::Saved; saves.len()]),
                Need::Summarize(_) => Event::Summarized(SummaryOutcome::Text(text.into())),
                need => panic!("a compaction without a flush asked for {need:?}"),
            };
            self.handle(event);
        }
    }
}

#[test]
fn the_machine_asks_for_the_flush_then_the_archive_then_the_summary_only_once_it_is_stored() {
    let input = run(12);
    let flushing = CompactOptions {
        flush: true,
        ..options()
    };
    let mut p = plan(
        read(&input),
        &flushing,
        SessionState::default(),
        &mut Counter::new(),
    )
    .unwrap();
    assert!(matches!(p.next(), Need::Flush(_)), "{:?}", p.next());
    p.handle(Event::Flushed(FlushOutcome::Replied(None)));
    assert!(
        matches!(p.next(), Need::Archive(saves) if saves.len() == 2),
        "{:?}",
        p.next()
    );
    // a save that failed: no summary is asked for, and nothing is replaced
    p.handle(Event::Archived(vec![
        Outcome::Saved,
        Outcome::Failed("quota".into()),
    ]));
    assert!(matches!(p.next(), Need::Done), "{:?}", p.next());
    let failed = p.clone().done(&mut Counter::new());
    assert_eq!(failed.report.outcome, CompactOutcome::Failed);
    assert_eq!(failed.conversation.messages(), read(&input).messages());
    assert!(
        failed.report.flush.is_some(),
        "the flush ran and is reported"
    );
    // every save confirmed: the summary is asked for, then nothing more
    let mut p = planned(&input, SessionState::default());
    assert!(
        matches!(p.next(), Need::Archive(_)),
        "without a flush, the archive comes first"
    );
    p.handle(Event::Archived(vec![Outcome::Saved; 2]));
    assert!(matches!(p.next(), Need::Summarize(_)), "{:?}", p.next());
    p.handle(Event::Summarized(SummaryOutcome::Text(SUMMARY.into())));
    assert!(matches!(p.next(), Need::Done), "{:?}", p.next());
    assert_eq!(
        p.done(&mut Counter::new()).report.outcome,
        CompactOutcome::Compacted
    );
    // nothing to fold: done at once
    let short = planned(&run(2), SessionState::default());
    assert!(!short.has_work());
    assert!(matches!(short.next(), Need::Done), "{:?}", short.next());
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

/// Markers in each format, provider-native compaction items, and AI SDK `UIMessage`s cut at a
/// step.
mod formats;
