use super::pieces::*;
use super::*;
use crate::context::fold::{Phase, SummaryOutcome, SummaryRequest};
use crate::context::heuristic;
use crate::context::{Measure, Outcome};
use crate::counting::Counter;
use crate::messages::{parse_messages, validate_conversation};
use crate::messages::{Conversation, Message, MessagesOptions, PartRef, Role};
use serde_json::json;
use serde_json::Value;

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

const GOAL: &str = "Fix the failing test in src/export/csv.rs; run `cargo test --locked` to check.";

/// The body of iteration `i`'s tool result.
fn output(i: usize) -> String {
    format!(
        "line {i}\n{}",
        "fn export_row(amount: i64) -> String { todo!() }\n".repeat(20)
    )
}

/// Which of the formats an agent loop is written in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    OpenAi,
    Anthropic,
    ModelMessage,
    UiMessage,
}

const KINDS: [Kind; 4] = [
    Kind::OpenAi,
    Kind::Anthropic,
    Kind::ModelMessage,
    Kind::UiMessage,
];

/// An agent loop of `n` iterations: the task, then one `bash` call and its result per
/// iteration (a UIMessage holds them all as steps of one reply).
fn agent(kind: Kind, n: usize) -> Value {
    let mut list = Vec::new();
    match kind {
        Kind::OpenAi => {
            list.push(json!({"role": "system", "content": "You are a coding agent."}));
            list.push(json!({"role": "user", "content": GOAL}));
            for i in 0..n {
                list.push(json!({"role": "assistant", "content": format!("Step {i}: reading src/export/csv.rs"), "tool_calls": [
                    {"id": format!("call_{i}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\":\"sed -n {i},+40p src/export/csv.rs\"}}")}}]}));
                list.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": output(i)}));
            }
        }
        Kind::Anthropic => {
            list.push(json!({"role": "user", "content": GOAL}));
            for i in 0..n {
                list.push(json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": format!("think {i}"), "signature": format!("sig{i}")},
                    {"type": "tool_use", "id": format!("toolu_{i}"), "name": "bash", "input": {"command": format!("sed -n {i},+40p src/export/csv.rs")}}]}));
                list.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": output(i)}]}));
            }
        }
        Kind::ModelMessage => {
            list.push(json!({"role": "system", "content": "You are a coding agent."}));
            list.push(json!({"role": "user", "content": [{"type": "text", "text": GOAL}]}));
            for i in 0..n {
                list.push(json!({"role": "assistant", "content": [
                    {"type": "text", "text": format!("Step {i}")},
                    {"type": "tool-call", "toolCallId": format!("c{i}"), "toolName": "bash", "input": {"command": format!("sed -n {i},+40p src/export/csv.rs")}}]}));
                list.push(json!({"role": "tool", "content": [
                    {"type": "tool-result", "toolCallId": format!("c{i}"), "toolName": "bash", "output": {"type": "text", "value": output(i)}}]}));
            }
        }
        Kind::UiMessage => {
            list.push(json!({"id": "s", "role": "system", "parts": [{"type": "text", "text": "You are a coding agent."}]}));
            list.push(
                json!({"id": "u", "role": "user", "parts": [{"type": "text", "text": GOAL}]}),
            );
            if n > 0 {
                let mut parts = Vec::new();
                for i in 0..n {
                    parts.push(json!({"type": "step-start"}));
                    parts.push(json!({"type": "text", "text": format!("Step {i}")}));
                    parts.push(json!({"type": "tool-bash", "toolCallId": format!("c{i}"), "state": "output-available",
                        "input": {"command": format!("sed -n {i},+40p src/export/csv.rs")}, "output": output(i)}));
                }
                list.push(json!({"id": "a", "role": "assistant", "parts": parts}));
            }
        }
    }
    Value::Array(list)
}

fn options() -> RollingOptions {
    RollingOptions {
        session_id: "s1".into(),
        model: Some("gpt-4o".into()),
        now: Some("2026-11-25T10:00:00Z".into()),
        ..RollingOptions::default()
    }
}

const SUMMARY: &str = "Intent: fix the failing CSV test. Progress: read the export code step by step. State: still reading.";

fn planned(v: &Value, options: &RollingOptions, state: &RollingState) -> RollingPlan {
    plan(read(v), options, state.clone(), &mut Counter::new()).unwrap()
}

/// One call as the driver makes it: the saves confirmed, the summarizer answering `summary`.
fn call(
    v: &Value,
    options: &RollingOptions,
    state: &mut RollingState,
    summary: impl FnOnce(&SummaryRequest) -> SummaryOutcome,
) -> (Rolled, bool) {
    let p = planned(v, options, state);
    let asked = p.summary_request().is_some();
    let outcome = match p.summary_request() {
        Some(request) => summary(request),
        None => SummaryOutcome::NotCalled,
    };
    let saved = vec![Outcome::Saved; p.saves().len()];
    let out = p.finish(&saved, outcome, &mut Counter::new());
    if let Some(s) = &out.state {
        *state = s.clone();
    }
    (out, asked)
}

fn text(summary: &str) -> impl FnOnce(&SummaryRequest) -> SummaryOutcome + '_ {
    move |_| SummaryOutcome::Text(summary.to_owned())
}

/// The JSON of iteration pieces: what the raw section must hold byte for byte.
fn iteration_values(conv: &Conversation, from: usize) -> Vec<Value> {
    let starts = iteration_starts(conv, body_of(conv));
    let end = PartRef {
        message: conv.messages().len(),
        part: 0,
    };
    let pieces: Vec<Piece> = starts
        .iter()
        .enumerate()
        .skip(from)
        .flat_map(|(j, &s)| pieces_between(conv, s, starts.get(j + 1).copied().unwrap_or(end)))
        .collect();
    joined(conv, &pieces)
        .iter()
        .map(|p| p.message.to_value())
        .collect()
}

/// Where the iterations of a history without markers start.
fn body_of(conv: &Conversation) -> usize {
    let m = conv.messages();
    let systems = m.iter().take_while(|m| is_instruction(m)).count();
    systems + usize::from(m.get(systems).is_some_and(|m| m.role() == Role::User))
}

#[test]
fn iterations_are_assistant_turns_with_their_results_and_ui_steps() {
    for kind in KINDS {
        let conv = read(&agent(kind, 7));
        let starts = iteration_starts(&conv, body_of(&conv));
        assert_eq!(starts.len(), 7, "{kind:?}");
        if kind == Kind::UiMessage {
            assert!(starts.iter().all(|s| s.message == 2));
            assert_eq!(starts[1].part, 3);
        }
    }
    // a user message between turns opens the next iteration
    let mut v = agent(Kind::OpenAi, 3);
    v.as_array_mut()
        .unwrap()
        .insert(4, json!({"role": "user", "content": "go on"}));
    let conv = read(&v);
    let starts = iteration_starts(&conv, 2);
    assert_eq!(
        starts.iter().map(|s| s.message).collect::<Vec<_>>(),
        [2, 4, 7]
    );
}

#[test]
fn a_forty_iteration_loop_folds_exactly_at_each_interval_in_every_format() {
    for kind in KINDS {
        let mut state = RollingState::default();
        let mut asked_at = Vec::new();
        let mut previous_prefix: Option<Vec<Value>> = None;
        for t in 1..=40 {
            let input = agent(kind, t);
            let before = read(&input);
            let (out, asked) = call(&input, &options(), &mut state, |req| {
                assert!(!req.messages.is_empty());
                SummaryOutcome::Text(format!("{SUMMARY} (through iteration {t})"))
            });
            if asked {
                asked_at.push(t);
                assert_eq!(out.report.outcome, RollingOutcome::Folded, "{kind:?} {t}");
                assert_eq!(out.report.trigger, Some(Trigger::Interval));
            } else {
                assert_eq!(
                    out.report.outcome,
                    RollingOutcome::Unchanged,
                    "{kind:?} {t}"
                );
            }
            let folded = out.report.folded;
            assert_eq!(
                folded,
                (t as u64 / 10 * 10).saturating_sub(5),
                "{kind:?} {t}"
            );
            assert_eq!(out.report.raw_iterations, t as u64 - folded);
            // the raw iterations are byte-identical to the input's
            let msgs = out.conversation.messages();
            let raw: Vec<Value> = iteration_values(&before, folded as usize);
            let tail: Vec<Value> = msgs[msgs.len() - raw.len()..]
                .iter()
                .map(Message::to_value)
                .collect();
            assert_eq!(tail, raw, "{kind:?} {t}");
            // valid for the provider
            let problems = validate_conversation(&out.conversation, &MessagesOptions::default());
            assert!(problems.is_empty(), "{kind:?} {t}: {problems:?}");
            // the prefix (everything up to the summary) is stable between intervals
            let prefix: Vec<Value> = msgs[..msgs.len() - raw.len()]
                .iter()
                .map(Message::to_value)
                .collect();
            if folded > 0 {
                let marker = out.marker.as_ref().expect("a marker");
                assert_eq!(marker.iterations, Some(folded));
                assert!(marker.summary.starts_with(SUMMARY));
                if !asked {
                    assert_eq!(previous_prefix.as_ref(), Some(&prefix), "{kind:?} {t}");
                }
            }
            previous_prefix = Some(prefix);
        }
        assert_eq!(asked_at, [10, 20, 30, 40], "{kind:?}");
    }
}

#[test]
fn given_its_own_output_back_it_carries_on_as_with_the_full_history() {
    let mut full_state = RollingState::default();
    let mut own_state = RollingState::default();
    let mut sent: Option<Value> = None;
    for t in 1..=25 {
        let full = agent(Kind::OpenAi, t);
        let (a, _) = call(&full, &options(), &mut full_state, |_| {
            SummaryOutcome::Text(format!("{SUMMARY} {t}"))
        });
        // the host keeps what it sent and appends the new iteration
        let own = match &sent {
            None => full.clone(),
            Some(prev) => {
                let mut list = prev.as_array().unwrap().clone();
                let whole = full.as_array().unwrap();
                list.extend(whole[whole.len() - 2..].iter().cloned());
                Value::Array(list)
            }
        };
        let (b, _) = call(&own, &options(), &mut own_state, |_| {
            SummaryOutcome::Text(format!("{SUMMARY} {t}"))
        });
        // the same, but for the count before (of the input each was given)
        let figures = |c: &Conversation| {
            let json = c.to_json_string();
            let mut out = String::new();
            for (i, piece) in json.split("tokensBefore").enumerate() {
                if i > 0 {
                    out.push_str(piece.trim_start_matches(|c: char| !c.is_alphabetic()));
                } else {
                    out.push_str(piece);
                }
            }
            out
        };
        assert_eq!(
            figures(&a.conversation),
            figures(&b.conversation),
            "iteration {t}"
        );
        assert_eq!(a.report.folded, b.report.folded);
        sent = Some(b.conversation.to_value());
    }
}

#[test]
fn a_failed_summary_keeps_the_iterations_raw_and_retries_at_the_next_interval() {
    let failures: Vec<Box<dyn Fn() -> SummaryOutcome>> = vec![
        Box::new(|| SummaryOutcome::Failed("the summarizer failed: boom".into())),
        Box::new(|| SummaryOutcome::Failed("timed out after 100 ms".into())),
        Box::new(|| SummaryOutcome::Text("".into())),
        Box::new(|| SummaryOutcome::Text("Error: 429 Too Many Requests".into())),
        Box::new(|| SummaryOutcome::Text("word ".repeat(50_000))),
    ];
    for fail in failures {
        let mut state = RollingState::default();
        let mut asked_at = Vec::new();
        for t in 1..=21 {
            let input = agent(Kind::OpenAi, t);
            let before = read(&input);
            let (out, asked) = call(&input, &options(), &mut state, |_| {
                if t == 10 {
                    fail()
                } else {
                    SummaryOutcome::Text(SUMMARY.into())
                }
            });
            if asked {
                asked_at.push(t);
            }
            if t == 10 {
                assert_eq!(out.report.outcome, RollingOutcome::Failed);
                assert!(out.report.reason.is_some() && out.report.phase.is_some());
                assert_eq!(out.conversation, before, "nothing replaced");
                assert!(out.origin.iter().enumerate().all(|(i, o)| *o == Some(i)));
                assert_eq!(out.report.next_fold_at, 20);
                assert_eq!(state.failures.len(), 1);
            }
            if (10..20).contains(&t) {
                assert_eq!(out.report.folded, 0);
                assert_eq!(out.conversation, before);
            }
            if t == 20 {
                assert_eq!(out.report.outcome, RollingOutcome::Folded);
                assert_eq!(out.report.span, Some(IterationSpan { from: 0, to: 15 }));
            }
        }
        assert_eq!(asked_at, [10, 20]);
    }
}

#[test]
fn an_archive_that_fails_keeps_the_iterations_raw() {
    let input = agent(Kind::OpenAi, 10);
    let p = planned(&input, &options(), &RollingState::default());
    assert_eq!(p.saves().len(), 2);
    let out = p.finish(
        &[Outcome::Failed("quota".into()), Outcome::Saved],
        SummaryOutcome::NotCalled,
        &mut Counter::new(),
    );
    assert_eq!(out.report.outcome, RollingOutcome::Failed);
    assert_eq!(out.report.phase, Some(Phase::Archive));
    assert_eq!(out.report.failures.len(), 1);
    assert_eq!(out.conversation, read(&input));
    assert!(out.state.unwrap().failed);
}

#[test]
fn the_archive_holds_the_folded_iterations_and_chains_to_the_previous_one() {
    let mut state = RollingState::default();
    let input = agent(Kind::OpenAi, 10);
    let p = planned(&input, &options(), &state);
    let record = super::super::archive::read_archive(&p.saves().make(0).unwrap().bytes).unwrap();
    assert_eq!(record.messages, input.as_array().unwrap()[2..12].to_vec());
    assert_eq!(record.previous, None);
    assert!(p.saves().to_vec()[0].key[3].starts_with("rolling-0001-"));
    assert_eq!(
        p.saves().to_vec()[1].key[3],
        format!("{}.md", p.saves().to_vec()[0].key[3])
    );
    let first_key = p.saves().to_vec()[0].key.clone();
    let out = p.finish(
        &[Outcome::Saved, Outcome::Saved],
        SummaryOutcome::Text(SUMMARY.into()),
        &mut Counter::new(),
    );
    state = out.state.unwrap();
    let p = planned(&agent(Kind::OpenAi, 20), &options(), &state);
    let record = super::super::archive::read_archive(&p.saves().make(0).unwrap().bytes).unwrap();
    assert_eq!(record.previous, Some(first_key));
    assert_eq!(record.number, 2);
    let previous = p
        .summary_request()
        .unwrap()
        .previous_summary
        .clone()
        .unwrap();
    assert!(previous.starts_with(SUMMARY), "{previous}");
}

#[test]
fn without_a_summarizer_the_heuristic_summary_is_used_and_marked() {
    let input = agent(Kind::Anthropic, 10);
    let p = planned(&input, &options(), &RollingState::default());
    let out = p.finish(
        &[Outcome::Saved, Outcome::Saved],
        SummaryOutcome::Heuristic,
        &mut Counter::new(),
    );
    assert_eq!(out.report.outcome, RollingOutcome::Folded);
    assert!(out.report.heuristic);
    let marker = out.marker.unwrap();
    assert!(marker.summary.starts_with(heuristic::HEURISTIC_HEADER));
    assert!(marker.summary.contains("src/export/csv.rs"));
    // Anthropic: the first request and the marker share one user message
    let msgs = out.conversation.messages();
    assert_eq!(msgs[0].role(), Role::User);
    assert_eq!(msgs[0].parts().len(), 2);
    assert_eq!(msgs[1].role(), Role::Assistant);
    assert!(validate_conversation(&out.conversation, &MessagesOptions::default()).is_empty());
}

#[test]
fn a_summary_over_its_bound_is_trimmed_at_a_line_or_sentence_end() {
    let opts = RollingOptions {
        max_summary_tokens: 60,
        ..options()
    };
    let long: String = (0..40)
        .map(|i| format!("Sentence number {i} says what happened. "))
        .collect();
    let input = agent(Kind::OpenAi, 10);
    let (out, _) = call(&input, &opts, &mut RollingState::default(), text(&long));
    assert_eq!(out.report.outcome, RollingOutcome::Folded);
    assert!(out.report.summary_trimmed);
    let summary = out.marker.unwrap().summary;
    let m = Measure::for_model(Some("gpt-4o"));
    assert!(m.tokens(&summary) <= 60, "{}", m.tokens(&summary));
    let body = summary.split("\n[summary trimmed").next().unwrap();
    assert!(body.ends_with("happened."), "{body:?}");
}

#[test]
fn the_recent_budget_folds_the_oldest_iterations_early_and_never_cuts_one() {
    let per_iteration = {
        let p = planned(
            &agent(Kind::OpenAi, 1),
            &options(),
            &RollingState::default(),
        );
        p.costs[0]
    };
    let opts = RollingOptions {
        budget: Some(RollingBudget::Sections(SectionBudget {
            recent: Some(per_iteration * 3 + per_iteration / 2),
            ..SectionBudget::default()
        })),
        ..options()
    };
    let mut state = RollingState::default();
    let (out, asked) = call(&agent(Kind::OpenAi, 4), &opts, &mut state, text(SUMMARY));
    assert!(asked, "over budget at 4 iterations");
    assert_eq!(out.report.trigger, Some(Trigger::Budget));
    assert_eq!(out.report.raw_iterations, 3);
    assert!(out.report.within_budget, "{:?}", out.report.over_budget);
    assert!(out.report.sections.recent.truncated);
    // the next call is within budget again only by folding again
    let (out, _) = call(&agent(Kind::OpenAi, 5), &opts, &mut state, text(SUMMARY));
    assert_eq!(out.report.raw_iterations, 3);
    // an iteration larger than the whole budget stays whole, and the report says why
    let tiny = RollingOptions {
        budget: Some(RollingBudget::Sections(SectionBudget {
            recent: Some(10),
            ..SectionBudget::default()
        })),
        ..options()
    };
    let (out, _) = call(
        &agent(Kind::OpenAi, 3),
        &tiny,
        &mut RollingState::default(),
        text(SUMMARY),
    );
    assert_eq!(out.report.raw_iterations, 1);
    assert!(!out.report.within_budget);
    assert!(out.report.over_budget.unwrap().contains("latest iteration"));
}

#[test]
fn a_failure_waits_for_its_interval_even_over_budget() {
    let opts = RollingOptions {
        budget: Some(RollingBudget::Sections(SectionBudget {
            recent: Some(600),
            ..SectionBudget::default()
        })),
        ..options()
    };
    let mut state = RollingState::default();
    let (out, asked) = call(&agent(Kind::OpenAi, 4), &opts, &mut state, |_| {
        SummaryOutcome::Failed("boom".into())
    });
    assert!(asked);
    assert_eq!(out.report.outcome, RollingOutcome::Failed);
    let (out, asked) = call(&agent(Kind::OpenAi, 5), &opts, &mut state, text(SUMMARY));
    assert!(!asked, "retried only at the next interval");
    assert!(!out.report.within_budget);
    assert!(out
        .report
        .over_budget
        .unwrap()
        .contains("tried again at iteration 14"));
    let (_, asked) = call(&agent(Kind::OpenAi, 14), &opts, &mut state, text(SUMMARY));
    assert!(asked);
}

#[test]
fn the_goal_and_the_instructions_are_cut_with_a_note_by_their_own_rules() {
    let mut v = agent(Kind::OpenAi, 3);
    let big = format!(
        "{GOAL}\n{}",
        "Detail of the task, line after line.\n".repeat(400)
    );
    v[1] = json!({"role": "user", "content": big});
    v[0] = json!({"role": "system", "content": "Rule. ".repeat(3_000)});
    let opts = RollingOptions {
        budget: Some(RollingBudget::Sections(SectionBudget {
            goal: Some(200),
            instructions: Some(100),
            ..SectionBudget::default()
        })),
        min_instructions_tokens: 500,
        ..options()
    };
    let (out, _) = call(&v, &opts, &mut RollingState::default(), text(SUMMARY));
    let r = &out.report;
    assert!(r.sections.goal.truncated && r.sections.instructions.truncated);
    assert!(r.sections.goal.tokens <= 200, "{}", r.sections.goal.tokens);
    // never below the instructions' own minimum
    assert_eq!(r.sections.instructions.budget, Some(500));
    assert!(r.sections.instructions.tokens <= 500);
    assert!(r.sections.instructions.tokens > 300);
    let goal = out.conversation.messages()[1].parts()[0].text().unwrap();
    assert!(goal.starts_with("Fix the failing test"));
    assert!(goal.contains("the middle of the first request was cut by context-keeper"));
    assert_eq!(out.origin[0], None);
    assert_eq!(out.origin[1], None);
    assert_eq!(out.origin[2], Some(2));
}

#[test]
fn host_instructions_come_first_and_a_total_budget_is_shared() {
    let opts = RollingOptions {
        instructions: Some("Always run the tests.".into()),
        budget: Some(RollingBudget::Total(4_000)),
        ..options()
    };
    let (out, _) = call(
        &agent(Kind::OpenAi, 12),
        &opts,
        &mut RollingState::default(),
        text(SUMMARY),
    );
    let msgs = out.conversation.messages();
    assert_eq!(msgs[0].parts()[0].text(), Some("Always run the tests."));
    assert_eq!(msgs[0].role(), Role::System);
    assert!(out.report.tokens_after <= 4_000, "{:?}", out.report);
    assert!(out.report.within_budget);
    // Anthropic arrays cannot carry them
    let err = plan(
        read(&agent(Kind::Anthropic, 2)),
        &opts,
        RollingState::default(),
        &mut Counter::new(),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        RollingError::Options {
            path: "options.instructions",
            ..
        }
    ));
    // a request object can
    let request = json!({"messages": agent(Kind::Anthropic, 2)});
    let p = plan(
        read(&request),
        &opts,
        RollingState::default(),
        &mut Counter::new(),
    )
    .unwrap();
    let out = p.finish(&[], SummaryOutcome::NotCalled, &mut Counter::new());
    assert_eq!(
        out.conversation.to_value()["system"],
        json!("Always run the tests.")
    );
}

#[test]
fn a_ui_message_is_cut_at_a_step_and_its_kept_steps_stay_byte_identical() {
    let input = agent(Kind::UiMessage, 12);
    let (out, _) = call(
        &input,
        &options(),
        &mut RollingState::default(),
        text(SUMMARY),
    );
    assert_eq!(out.report.folded, 7);
    let msgs = out.conversation.messages();
    // system, goal, marker, the assistant message holding the last 5 steps
    assert_eq!(msgs.len(), 4);
    assert_eq!(out.origin, [Some(0), Some(1), None, None]);
    let kept = msgs[3].to_value();
    assert_eq!(kept["id"], "a");
    let all = input[2]["parts"].as_array().unwrap();
    assert_eq!(kept["parts"].as_array().unwrap(), &all[21..].to_vec());
    assert_eq!(msgs[2].to_value()["id"], "context-keeper-compaction-1");
}

#[test]
fn a_state_that_does_not_match_the_history_starts_over() {
    let mut state = RollingState::default();
    call(
        &agent(Kind::OpenAi, 10),
        &options(),
        &mut state,
        text(SUMMARY),
    );
    assert_eq!(state.folded, 5);
    // another loop under the same session id
    let mut other = agent(Kind::OpenAi, 12);
    other[2]["content"] = json!("something else");
    let (out, asked) = call(&other, &options(), &mut state, text(SUMMARY));
    assert!(out.report.state_reset.is_some());
    assert!(asked, "the reset state is due at once");
    assert_eq!(out.report.folded, 7);
}

#[test]
fn the_same_input_and_state_give_the_same_output() {
    let mut state = RollingState::default();
    call(
        &agent(Kind::ModelMessage, 10),
        &options(),
        &mut state,
        text(SUMMARY),
    );
    let a = call(
        &agent(Kind::ModelMessage, 14),
        &options(),
        &mut state.clone(),
        text(SUMMARY),
    )
    .0;
    let b = call(
        &agent(Kind::ModelMessage, 14),
        &options(),
        &mut state.clone(),
        text(SUMMARY),
    )
    .0;
    assert_eq!(
        a.conversation.to_json_string(),
        b.conversation.to_json_string()
    );
    assert_eq!(a.report, b.report);
}

#[test]
fn options_out_of_range_and_budgets_are_read() {
    for opts in [
        RollingOptions {
            keep_iterations: 0,
            ..options()
        },
        RollingOptions {
            resummarize_every: 0,
            ..options()
        },
    ] {
        assert!(plan(
            read(&agent(Kind::OpenAi, 1)),
            &opts,
            RollingState::default(),
            &mut Counter::new()
        )
        .is_err());
    }
    let read_budget = |v: Value| serde_json::from_value::<RollingBudget>(v);
    assert_eq!(
        read_budget(json!(8000)).unwrap(),
        RollingBudget::Total(8000)
    );
    assert_eq!(
        read_budget(json!(8000.0)).unwrap(),
        RollingBudget::Total(8000)
    );
    assert!(matches!(
        read_budget(json!({"recent": 10})).unwrap(),
        RollingBudget::Sections(_)
    ));
    assert!(read_budget(json!({"nope": 10}))
        .unwrap_err()
        .to_string()
        .contains("nope"));
    assert!(read_budget(json!("x")).is_err());
    assert!(read_budget(json!(-1)).is_err());
    // state bytes round-trip; damage reads as fresh
    let mut state = RollingState::default();
    call(
        &agent(Kind::OpenAi, 10),
        &options(),
        &mut state,
        text(SUMMARY),
    );
    assert_eq!(RollingState::from_bytes(Some(&state.to_bytes())), state);
    assert_eq!(
        RollingState::from_bytes(Some(b"{x")),
        RollingState::default()
    );
}

#[test]
fn fair_shares_leave_short_parts_whole() {
    assert_eq!(fair_shares(&[5, 3_000], 400), [5, 395]);
    assert_eq!(fair_shares(&[300, 300], 400), [200, 200]);
    assert_eq!(fair_shares(&[], 400), Vec::<u64>::new());
    assert_eq!(fair_shares(&[10, 20], 1_000), [10, 20]);
}

#[test]
fn a_fold_counts_with_the_counter_it_is_handed_never_a_process_wide_one() {
    // A model counted by proxy, whose counts a calibration scales.
    let opts = RollingOptions {
        model: Some("claude-sonnet-4-5".into()),
        budget: Some(RollingBudget::Total(4_000)),
        ..options()
    };
    let v = agent(Kind::Anthropic, 30);
    let fold = |counter: &mut Counter| {
        let p = plan(read(&v), &opts, RollingState::default(), counter).unwrap();
        let saved = vec![Outcome::Saved; p.saves().len()];
        let out = p.finish(&saved, SummaryOutcome::Text(SUMMARY.into()), counter);
        assert_eq!(out.report.outcome, RollingOutcome::Folded);
        let marker = out.marker.as_ref().map(|m| m.tokens_after);
        (marker, out.report.tokens_after, out.conversation.to_value())
    };
    let plain = fold(&mut Counter::new());
    // the process-wide counter calibrated wildly: nothing the fold writes moves
    crate::counting::with_default_counter(|c| {
        c.calibrate(
            "claude-sonnet-4-5",
            &crate::counting::ModelOverrides::default(),
            1_000,
            1_900,
        )
    });
    assert_eq!(fold(&mut Counter::new()), plain);
    crate::counting::with_default_counter(Counter::clear_calibrations);
    // the counter handed in is the one that counts: calibrated, the fold is made and reported
    // by its figures
    let mut calibrated = Counter::new();
    calibrated.calibrate(
        "claude-sonnet-4-5",
        &crate::counting::ModelOverrides::default(),
        1_000,
        1_900,
    );
    let scaled = fold(&mut calibrated);
    assert_ne!(scaled, plain);
}
