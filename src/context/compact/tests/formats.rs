//! Compaction in each format: the markers written and recognised, provider-native compaction
//! items, and AI SDK `UIMessage`s cut at a step.

use super::*;

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
