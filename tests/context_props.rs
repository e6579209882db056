//! Properties of the reversible tiers on generated agent conversations in every format (tool
//! exchanges with parallel calls, thinking with signatures, images in results, file writes,
//! huge and tiny results, multi-byte text), with scripted store outcomes:
//! - pairing stays as valid as it was after every tier;
//! - user and assistant text, thinking and signatures come out byte-identical;
//! - prune and evict are idempotent;
//! - the conversation's token count never grows;
//! - an offload whose save failed replaces nothing, and every replaced result is, whole, in a
//!   save that was confirmed;
//! - compaction never breaks pairing, keeps the head and the recent turns byte-identical,
//!   writes a marker that reads back in every format, archives exactly the replaced messages,
//!   changes nothing on any failure, and stacked compactions re-applied to the full history
//!   give the same output byte for byte;
//! - the rolling window keeps the recent iterations byte-identical, never breaks pairing, holds
//!   the recent section to its budget whenever more than the latest iteration is kept, is
//!   deterministic, and re-applied from its state to the full history gives the same output.
#![cfg(not(target_arch = "wasm32"))]

use context_keeper::context::archive;
use context_keeper::context::compact::{self, CompactOptions, CompactOutcome};
use context_keeper::context::evict::{evict, EvictOptions};
use context_keeper::context::fold::SummaryOutcome;
use context_keeper::context::marker::marker_of;
use context_keeper::context::offload::{plan_messages, OffloadOptions};
use context_keeper::context::prune::{prune, PruneOptions};
use context_keeper::context::recovery::decode;
use context_keeper::context::rolling::{
    self, RollingBudget, RollingOptions, RollingOutcome, RollingState, SectionBudget,
};
use context_keeper::context::state::SessionState;
use context_keeper::context::{Original, Outcome};
use context_keeper::counting::Counter;
use context_keeper::counting::{count_conversation, CountCache, CountMessagesOptions};
use context_keeper::messages::{
    parse_messages, validate_conversation, Conversation, Format, MessagesOptions, PartKind,
};
use proptest::prelude::*;
use serde_json::{json, Value};

mod common;
use common::{input_of, Conv, Dialect, Step, ToolCall};

fn word() -> impl Strategy<Value = String> {
    "[a-z0-9éü東🙂 _./-]{1,12}"
}

/// A result: tiny, mid-sized or huge (many lines, or one minified line).
fn result_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => word(),
        2 => (word(), 50..400usize).prop_map(|(w, n)| (0..n).map(|i| format!("{i} {w}\n")).collect()),
        1 => (word(), 1_000..3_000usize).prop_map(|(w, n)| (0..n).map(|i| format!("{i}: {w} {w}\n")).collect()),
        1 => (word(), 10_000..30_000usize).prop_map(|(w, n)| w.repeat(n / w.len().max(1))),
    ]
}

fn call() -> impl Strategy<Value = ToolCall> {
    (
        prop_oneof![
            Just("bash"),
            Just("write_file"),
            Just("edit_file"),
            Just("read_offloaded")
        ],
        word(),
        prop_oneof![
            word(),
            (word(), 100..2_000usize).prop_map(|(w, n)| w.repeat(n))
        ],
        result_text(),
        any::<bool>(),
    )
        .prop_map(|(tool, path, body, result, image)| ToolCall {
            tool,
            path,
            body,
            result,
            image,
            error: false,
        })
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let exchange = (
        proptest::option::of(word()),
        prop::collection::vec(call(), 1..3),
    )
        // NOTE: the thinking is also the assistant's text beside the calls (OpenAI's `content`).
        .prop_map(|(thinking, calls)| Step::Exchange {
            text: thinking.clone(),
            thinking,
            calls,
        });
    (
        word(),
        prop::collection::vec(
            prop_oneof![1 => word().prop_map(user), 4 => exchange],
            1..14,
        ),
    )
        .prop_map(|(first, rest)| std::iter::once(user(first)).chain(rest).collect())
}

fn user(text: String) -> Step {
    Step::User { text, image: false }
}

/// The steps as a host in `format` would hand them over (the AI SDK's as ModelMessages).
fn render(format: Format, steps: &[Step]) -> Value {
    let dialect = match format {
        Format::OpenAi => Dialect::OpenAi,
        Format::Anthropic => Dialect::Anthropic,
        Format::AiSdk => Dialect::ModelMessage,
    };
    common::render(&Conv {
        dialect,
        system: None,
        steps: steps.to_vec(),
    })
}

fn read(format: Format, value: &Value) -> Conversation {
    let options = MessagesOptions {
        format: Some(format),
        allow_pending_calls: true,
    };
    parse_messages(value, &options).unwrap()
}

/// Whether `after` has no validation problem that `before` did not have (by kind, counted).
fn no_new_problems(after: &Conversation, before: &Conversation) -> bool {
    let mut had = problems(before);
    problems(after)
        .into_iter()
        .all(|p| match had.iter().position(|h| *h == p) {
            Some(i) => {
                had.swap_remove(i);
                true
            }
            None => false,
        })
}

fn problems(conv: &Conversation) -> Vec<String> {
    let options = MessagesOptions {
        format: Some(conv.format()),
        allow_pending_calls: true,
    };
    validate_conversation(conv, &options)
        .iter()
        .map(|p| format!("{:?}", p.kind))
        .collect()
}

fn tokens(conv: &Conversation) -> u64 {
    count_conversation(
        conv,
        &CountMessagesOptions::default(),
        &mut CountCache::new(64),
    )
    .unwrap()
    .total
}

/// Every part that is not a tool result or a file tool's call, as JSON: what no tier may touch.
fn untouchable(conv: &Conversation) -> Vec<String> {
    let mut out = Vec::new();
    for message in conv.messages() {
        for part in message.parts() {
            let file_call = part.kind() == PartKind::ToolCall
                && matches!(part.tool_name(), Some("write_file" | "edit_file"));
            if part.kind() != PartKind::ToolResult && !file_call {
                out.push(part.raw().to_string());
            }
        }
    }
    out
}

fn check_common(
    format: Format,
    before: &Conversation,
    after: &Conversation,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(problems(after), problems(before), "{} pairing", format);
    prop_assert_eq!(
        untouchable(after),
        untouchable(before),
        "{} untouched parts",
        format
    );
    prop_assert!(tokens(after) <= tokens(before), "{} tokens grew", format);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn prune_keeps_pairing_and_text_and_is_idempotent(steps in steps(), keep in 0..4usize, hard in 0..8usize) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let before = read(format, &input);
            let options = PruneOptions {
                keep_last_assistant_turns: keep,
                hard_clear_after_turns: Some(hard),
                soft_trim_chars: 400,
                soft_trim_head_chars: 100,
                soft_trim_tail_chars: 100,
                ..PruneOptions::default()
            };
            let pruned = prune(before.clone(), &options);
            check_common(format, &before, &pruned.conversation)?;
            let again = prune(pruned.conversation.clone(), &options);
            prop_assert!(again.report.edits.is_empty(), "{} not idempotent: {:?}", format, again.report.edits);
            prop_assert_eq!(again.conversation.to_value(), pruned.conversation.to_value());
            for (i, message) in before.messages().iter().enumerate() {
                if !pruned.edited.contains(&i) {
                    prop_assert_eq!(message.to_value(), pruned.conversation.messages()[i].to_value());
                }
            }
        }
    }

    #[test]
    fn evict_keeps_pairing_and_other_arguments_and_is_idempotent(steps in steps(), keep in 0..3usize) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let before = read(format, &input);
            let options = EvictOptions { keep_last_assistant_turns: keep, ..EvictOptions::default() };
            let evicted = evict(before.clone(), &options);
            prop_assert_eq!(problems(&evicted.conversation), problems(&before));
            prop_assert!(tokens(&evicted.conversation) <= tokens(&before));
            let again = evict(evicted.conversation.clone(), &options);
            prop_assert!(again.report.edits.is_empty(), "{} not idempotent", format);
            for edit in &evicted.report.edits {
                let Original::File { path } = &edit.original else { panic!("{edit:?}") };
                prop_assert!(!path.is_empty());
            }
            // Only write/edit calls and their results change, never other tools' parts.
            let others = |conv: &Conversation| -> Vec<String> {
                conv.messages().iter().flat_map(|m| m.parts()).filter(|p| {
                    p.kind() != PartKind::ToolResult && !matches!(p.tool_name(), Some("write_file" | "edit_file"))
                }).map(|p| p.raw().to_string()).collect()
            };
            prop_assert_eq!(others(&evicted.conversation), others(&before));
        }
    }

    #[test]
    fn offload_replaces_only_what_a_confirmed_save_holds(steps in steps(), fails in prop::collection::vec(any::<bool>(), 0..40)) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let before = read(format, &input);
            let options = OffloadOptions { session_id: "s".to_owned(), limit_tokens: Some(2_000), ..OffloadOptions::default() };
            let plan = plan_messages(before.clone(), &options);
            let saves: Vec<_> = plan.saves().cloned().collect();
            let outcomes: Vec<Outcome> = (0..saves.len())
                .map(|i| if fails.get(i).copied().unwrap_or(false) { Outcome::Failed("injected".to_owned()) } else { Outcome::Saved })
                .collect();
            let done = plan.apply(&outcomes);
            check_common(format, &before, &done.conversation)?;
            let failed = outcomes.iter().filter(|o| **o != Outcome::Saved).count();
            prop_assert_eq!(done.report.failures.len(), failed);
            prop_assert_eq!(done.report.edits.len(), saves.len() - failed);
            // Every message not edited is as it was; every edit's original is in a confirmed save.
            for (i, message) in before.messages().iter().enumerate() {
                if !done.edited.contains(&i) {
                    prop_assert_eq!(message.to_value(), done.conversation.messages()[i].to_value());
                }
            }
            for edit in &done.report.edits {
                let Original::Store { key, id } = &edit.original else { panic!() };
                let at = saves.iter().position(|s| &s.key == key).unwrap();
                prop_assert_eq!(&outcomes[at], &Outcome::Saved);
                let (_, text) = decode(id, &saves[at].bytes).unwrap();
                let original = before.messages()[edit.message_index].parts()[edit.part_index].raw().to_string();
                let escaped = serde_json::to_string(text).unwrap();
                prop_assert!(original.contains(escaped.trim_matches('"')), "{} the stored text is the original", format);
            }
            for failure in &done.report.failures {
                let i = failure.message_index;
                prop_assert_eq!(before.messages()[i].parts()[failure.part_index].raw(), done.conversation.messages()[i].parts()[failure.part_index].raw());
            }
        }
    }
}

/// One compaction of `conv` with a scripted outcome.
fn compact_once(
    conv: Conversation,
    options: &CompactOptions,
    state: SessionState,
    archive: &[Outcome],
    summary: SummaryOutcome,
) -> compact::Compacted {
    let mut counter = Counter::new();
    let plan = compact::plan(conv, options, state, &mut counter).unwrap();
    let archive = &archive[..archive.len().min(plan.saves().len())];
    plan.finish(archive, summary, None, &mut counter)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_pairing_head_and_recent_turns(
        steps in steps(),
        keep in 1..4usize,
        by_tokens in proptest::option::of(50..5_000u64),
        fail in 0..4usize,
    ) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let before = read(format, &input);
            let options = CompactOptions {
                session_id: "p".into(),
                keep_recent_turns: Some(keep),
                keep_recent_tokens: by_tokens,
                now: Some("t".into()),
                ..CompactOptions::default()
            };
            let mut counter = Counter::new();
            let plan = compact::plan(before.clone(), &options, SessionState::default(), &mut counter).unwrap();
            let request = plan.summary_request().cloned();
            let saves = plan.saves().to_vec();
            let (archive, summary) = match fail {
                0 => (vec![Outcome::Failed("full".into()), Outcome::Saved], SummaryOutcome::NotCalled),
                1 => (vec![Outcome::Saved; 2], SummaryOutcome::Failed("down".into())),
                2 => (vec![Outcome::Saved; 2], SummaryOutcome::Text(String::new())),
                _ => (vec![Outcome::Saved; 2], SummaryOutcome::Text("s".into())),
            };
            let out = plan.finish(&archive, summary, None, &mut counter);
            let after = &out.conversation;
            // every case accounted for: nothing to fold, a failure injected, or a compaction
            match (request.is_some(), fail, out.report.outcome) {
                (false, _, outcome) => prop_assert_eq!(outcome, CompactOutcome::Unchanged, "{}", format),
                // (or refused: a marker no smaller than the span it would replace saves nothing)
                (true, 3, outcome) => prop_assert!(
                    outcome == CompactOutcome::Compacted
                        || out.report.reason.as_deref().is_some_and(|r| r.contains("would not be smaller")),
                    "{} {:?}: {:?}", format, outcome, out.report.reason
                ),
                (true, _, outcome) => prop_assert_eq!(outcome, CompactOutcome::Failed, "{}", format),
            }
            if out.report.outcome != CompactOutcome::Compacted {
                prop_assert_eq!(after.to_value(), before.to_value(), "{} changed on {:?}", format, out.report.outcome);
                prop_assert!(out.state.is_none());
                continue;
            }
            prop_assert!(no_new_problems(after, &before), "{} pairing: {:?}", format, problems(after));
            // untouched messages are the input's, by index, in order
            let mut last = None;
            for (i, origin) in out.origin.iter().enumerate() {
                if let Some(j) = origin {
                    prop_assert_eq!(&after.messages()[i], &before.messages()[*j]);
                    prop_assert!(last.is_none_or(|l| l < *j));
                    last = Some(*j);
                }
            }
            // one marker, read back from the written JSON in the format
            let back = read(format, &after.to_value());
            let markers: Vec<_> = back.messages().iter().filter_map(marker_of).collect();
            prop_assert_eq!(markers.len(), 1, "{}", format);
            prop_assert!(markers[0].summary.starts_with('s'));
            // the archive holds exactly the replaced messages (the task, when merged, stays)
            let record = archive::read_archive(&saves[0].bytes).unwrap();
            prop_assert_eq!(&record.messages, &request.unwrap().messages.to_values());
            let span = out.report.span.unwrap();
            prop_assert!(record.messages.len() <= span.to - span.from);
            for (k, m) in record.messages.iter().rev().enumerate() {
                prop_assert_eq!(m, &before.messages()[span.to - 1 - k].to_value());
            }
            prop_assert!(tokens(after) <= tokens(&before), "{} tokens grew: {} -> {}", format, tokens(&before), tokens(after));
            // the full history again: the same output, byte for byte, with no summary
            let again = compact_once(before.clone(), &options, out.state.clone().unwrap(), &[], SummaryOutcome::NotCalled);
            prop_assert_eq!(again.report.outcome, CompactOutcome::Reapplied);
            prop_assert_eq!(again.conversation.to_json_string(), after.to_json_string());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn rolling_window_keeps_recent_iterations_and_its_budget(
        steps in steps(),
        keep in 1..4usize,
        every in 1..5usize,
        recent in proptest::option::of(100..20_000u64),
        fail in 0..3usize,
    ) {
        for format in Format::ALL {
            let input = render(format, &steps);
            let before = read(format, &input);
            let options = RollingOptions {
                session_id: "p".into(),
                keep_iterations: keep,
                resummarize_every: every,
                budget: recent.map(|r| RollingBudget::Sections(SectionBudget { recent: Some(r), ..SectionBudget::default() })),
                now: Some("t".into()),
                ..RollingOptions::default()
            };
            let run = |state: RollingState| {
                let mut counter = Counter::new();
                let plan = rolling::plan(before.clone(), &options, state, &mut counter).unwrap();
                let saves = plan.saves().len();
                let asked = plan.summary_request().is_some();
                let summary = match fail {
                    0 => SummaryOutcome::Failed("down".into()),
                    _ => SummaryOutcome::Text("s".into()),
                };
                (plan.finish(&vec![Outcome::Saved; saves], summary, &mut counter), asked)
            };
            let (out, asked) = run(RollingState::default());
            let after = &out.conversation;
            // deterministic
            prop_assert_eq!(run(RollingState::default()).0.conversation.to_json_string(), after.to_json_string());
            // every case accounted for: no fold due, a failure injected, or a fold
            match (asked, fail, out.report.outcome) {
                (false, _, outcome) => prop_assert_eq!(outcome, RollingOutcome::Unchanged, "{}", format),
                (true, 0, outcome) => prop_assert_eq!(outcome, RollingOutcome::Failed, "{}", format),
                (true, _, outcome) => prop_assert_eq!(outcome, RollingOutcome::Folded, "{}", format),
            }
            if out.report.outcome != RollingOutcome::Folded {
                prop_assert_eq!(after.to_value(), before.to_value(), "{} changed on {:?}", format, out.report.outcome);
                continue;
            }
            prop_assert!(no_new_problems(after, &before), "{} pairing: {:?}", format, problems(after));
            // the recent iterations: the input's last messages, byte for byte, after the marker
            let marker_at = after.messages().iter().rposition(|m| marker_of(m).is_some()).unwrap();
            let tail = &after.messages()[marker_at + 1..];
            let n = before.messages().len();
            prop_assert!(!tail.is_empty());
            for (k, m) in tail.iter().enumerate() {
                prop_assert_eq!(m, &before.messages()[n - tail.len() + k]);
                prop_assert_eq!(out.origin[marker_at + 1 + k], Some(n - tail.len() + k));
            }
            // the recent budget holds whenever more than the latest iteration stays
            if let Some(r) = recent {
                let section = out.report.sections.recent;
                prop_assert!(section.tokens <= r || out.report.raw_iterations == 1, "{} recent {} > {} with {} raw", format, section.tokens, r, out.report.raw_iterations);
            }
            prop_assert!(out.report.raw_iterations >= 1);
            // the full history again, with the stored state: the same output, no new fold
            let (again, _) = run(out.state.clone().unwrap());
            prop_assert_eq!(again.report.outcome, RollingOutcome::Unchanged);
            prop_assert_eq!(again.conversation.to_json_string(), after.to_json_string());
        }
    }
}

/// `steps` as `useChat` holds them: a user `UIMessage` per user step, and one assistant
/// `UIMessage` per run of exchanges, a `step-start` before each (its thinking, then its tool
/// parts with their outputs).
fn render_ui(steps: &[Step]) -> Value {
    let mut out: Vec<Value> = Vec::new();
    let mut n = 0;
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::User { text, .. } => out.push(json!({"id": format!("u{i}"), "role": "user", "parts": [{"type": "text", "text": text}]})),
            // NOTE: `steps()` makes none of these.
            Step::Assistant(_) | Step::Native(_) | Step::Marker(_) => {}
            Step::Exchange { thinking, calls, .. } => {
                if out.last().is_none_or(|m| m["role"] != "assistant") {
                    out.push(json!({"id": format!("a{i}"), "role": "assistant", "parts": []}));
                }
                let Some(Value::Array(parts)) = out.last_mut().and_then(|m| m.get_mut("parts")) else {
                    unreachable!()
                };
                parts.push(json!({"type": "step-start"}));
                if let Some(t) = thinking {
                    parts.push(json!({"type": "reasoning", "text": t, "providerMetadata": {"anthropic": {"signature": "s"}}}));
                }
                for c in calls {
                    n += 1;
                    parts.push(json!({"type": format!("tool-{}", c.tool), "toolCallId": format!("call_{n}"), "state": "output-available", "input": input_of(c), "output": c.result}));
                }
            }
        }
    }
    Value::Array(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A UIMessage cut at a step: the output validates, the rest of the message is its parts
    /// from the cut on (every other field as it was), the archive holds the messages replaced
    /// and the first parts of the cut one, and two stacked compactions re-applied to the full
    /// history give the same output byte for byte.
    #[test]
    fn ui_messages_are_cut_at_steps_and_stacked_cuts_reapply(
        steps in steps(),
        keep in 1..5usize,
        by_tokens in proptest::option::of(50..3_000u64),
    ) {
        let input = render_ui(&steps);
        let before = read(Format::AiSdk, &input);
        let options = CompactOptions {
            session_id: "p".into(),
            keep_recent_turns: Some(keep),
            keep_recent_tokens: by_tokens,
            now: Some("t".into()),
            ..CompactOptions::default()
        };
        let mut counter = Counter::new();
        let plan = compact::plan(before.clone(), &options, SessionState::default(), &mut counter).unwrap();
        let saves = plan.saves().to_vec();
        let out = plan.finish(&[Outcome::Saved, Outcome::Saved], SummaryOutcome::Text("s".into()), None, &mut counter);
        if out.report.outcome != CompactOutcome::Compacted {
            prop_assert_eq!(out.conversation.to_value(), input);
            return Ok(());
        }
        let after = out.conversation.to_value();
        prop_assert!(no_new_problems(&out.conversation, &before), "{:?}", problems(&out.conversation));
        let span = out.report.span.unwrap();
        let record = archive::read_archive(&saves[0].bytes).unwrap();
        let mut archived: Vec<Value> = input.as_array().unwrap()[span.from..span.to].to_vec();
        let marker_at = out.origin.iter().position(Option::is_none).unwrap();
        if let Some(part) = span.to_part {
            let whole = &input[span.to];
            prop_assert_eq!(&whole["parts"][part]["type"], "step-start");
            let mut rest = whole.clone();
            rest["parts"] = Value::Array(whole["parts"].as_array().unwrap()[part..].to_vec());
            prop_assert_eq!(after[marker_at + 1].to_string(), rest.to_string());
            let mut piece = whole.clone();
            piece["parts"] = Value::Array(whole["parts"].as_array().unwrap()[..part].to_vec());
            archived.push(piece);
        }
        prop_assert_eq!(&record.messages, &archived);
        // the full history again: the same output, byte for byte, with no summary
        let state = out.state.clone().unwrap();
        let again = compact_once(before.clone(), &options, state.clone(), &[], SummaryOutcome::NotCalled);
        prop_assert_eq!(again.report.outcome, CompactOutcome::Reapplied);
        prop_assert_eq!(again.conversation.to_json_string(), out.conversation.to_json_string());
        // a second compaction of the output, keeping fewer turns, stacks; the full history
        // then gets it back byte for byte
        let tighter = CompactOptions { keep_recent_turns: Some(1), keep_recent_tokens: None, ..options.clone() };
        let second = compact_once(read(Format::AiSdk, &after), &tighter, state, &[Outcome::Saved, Outcome::Saved], SummaryOutcome::Text("s2".into()));
        if second.report.outcome == CompactOutcome::Compacted {
            let again = compact_once(before.clone(), &CompactOptions { keep_recent_turns: Some(1_000), ..tighter }, second.state.clone().unwrap(), &[], SummaryOutcome::NotCalled);
            prop_assert_eq!(again.report.outcome, CompactOutcome::Reapplied);
            prop_assert_eq!(again.report.reapplied, Some(2));
            prop_assert_eq!(again.conversation.to_json_string(), second.conversation.to_json_string());
        }
    }
}
