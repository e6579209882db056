use super::prepare::*;
use super::*;
use crate::context::flush::FlushOutcome;
use crate::context::fold::SummaryOutcome;
use crate::context::state::SessionState;
use crate::context::{Action, Edit, Original, Outcome};
use crate::counting::Counter;
use crate::messages::Conversation;
use crate::messages::{parse_messages, validate_conversation, MessagesOptions};
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

/// An OpenAI agent run of `turns` turns, each a `bash` call and a result of `result_lines`
/// lines, with a user interjection every 5 turns.
fn run(turns: usize, result_lines: usize) -> Vec<Value> {
    let mut list = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the failing test in src/export/csv.rs; run `cargo test --locked` to check."}),
    ];
    for t in 0..turns {
        list.push(json!({"role": "assistant", "content": format!("Turn {t}: looking at src/export/csv.rs"), "tool_calls": [
            {"id": format!("call_{t}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\":\"sed -n {t},+40p src/export/csv.rs\"}}")}}]}));
        let body: String = (0..result_lines)
            .map(|l| {
                format!(
                    "{t}:{l} fn export_row(amount: i64) -> String {{ format!(\"{{amount}}\") }}\n"
                )
            })
            .collect();
        list.push(json!({"role": "tool", "tool_call_id": format!("call_{t}"), "content": body}));
        if t % 5 == 4 {
            list.push(json!({"role": "user", "content": format!("keep going ({t})")}));
        }
    }
    list
}

fn options(window: u64) -> KeeperOptions {
    KeeperOptions {
        model: Some("gpt-4o".into()),
        context_window: Some(window),
        ..KeeperOptions::default()
    }
}

fn call(flush: bool) -> Call {
    Call {
        session_id: "s1".into(),
        now: Some("2026-11-25T10:00:00Z".into()),
        flush,
    }
}

/// What the driver did during one prepare.
#[derive(Default, Debug)]
struct Driven {
    saves: usize,
    flushes: usize,
    summaries: usize,
    /// The copies stored (when the saves succeed): key and bytes.
    stored: Vec<(Vec<String>, Vec<u8>)>,
}

/// Runs a prepare to the end: every save succeeds unless `fail_saves`, the flush replies
/// `SILENT`, the summarizer returns `summary` (or fails with it when it starts with `!`).
fn prepare(
    list: &[Value],
    options: &KeeperOptions,
    state: &SessionState,
    fail_saves: bool,
    summary: &str,
) -> (Prepared, Driven) {
    prepare_after(
        list,
        options,
        state,
        fail_saves,
        summary,
        &fast::Unrecorded::default(),
    )
}

/// [`prepare`], after the fast calls `unrecorded` tells of.
fn prepare_after(
    list: &[Value],
    options: &KeeperOptions,
    state: &SessionState,
    fail_saves: bool,
    summary: &str,
    unrecorded: &fast::Unrecorded,
) -> (Prepared, Driven) {
    let mut counter = Counter::new();
    let mut p = Prepare::start(
        read(&Value::Array(list.to_vec())),
        options,
        call(true),
        state.clone(),
        &mut counter,
    )
    .unwrap();
    p.add_unrecorded(unrecorded);
    let mut driven = Driven::default();
    loop {
        let event = match p.next(&mut counter).unwrap() {
            Need::Done => break,
            Need::Saves(saves) => {
                driven.saves += saves.len();
                if !fail_saves {
                    driven
                        .stored
                        .extend(saves.iter().map(|s| (s.key.clone(), s.bytes.clone())));
                }
                let o = if fail_saves {
                    Outcome::Failed("quota exceeded".into())
                } else {
                    Outcome::Saved
                };
                Event::Saved(vec![o; saves.len()])
            }
            Need::Flush(_) => {
                driven.flushes += 1;
                Event::Flushed(FlushOutcome::Replied(Some("SILENT".into())))
            }
            Need::Archive(saves) => {
                driven
                    .stored
                    .extend(saves.iter().map(|s| (s.key.clone(), s.bytes.clone())));
                Event::Archived(vec![Outcome::Saved; saves.len()])
            }
            Need::Summarize(_) => {
                driven.summaries += 1;
                Event::Summarized(match summary.strip_prefix('!') {
                    Some(reason) => SummaryOutcome::Failed(reason.into()),
                    None => SummaryOutcome::Text(summary.into()),
                })
            }
        };
        p.handle(event, &mut counter).unwrap();
    }
    (p.finish(&mut counter), driven)
}

const SUMMARY: &str = "Intent: fix the failing test in src/export/csv.rs. Progress: read the export code turn by turn. State: still reading.";

fn values(p: &Prepared) -> Vec<Value> {
    p.conversation
        .messages()
        .iter()
        .map(|m| m.to_value())
        .collect()
}

#[test]
fn under_the_threshold_the_input_comes_back_untouched() {
    let list = run(6, 5);
    let (out, driven) = prepare(
        &list,
        &options(128_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    assert_eq!(out.report.decision, Decision::Under);
    assert!(out.report.managed && out.report.fits);
    assert_eq!(out.report.tokens_before, out.report.tokens_after);
    assert_eq!(values(&out), list);
    assert!(out.origin.iter().enumerate().all(|(i, o)| *o == Some(i)));
    assert_eq!(driven.saves + driven.flushes + driven.summaries, 0);
    assert_eq!(out.report.unchanged_prefix, None, "no previous output");
}

#[test]
fn an_unknown_window_or_enabled_false_turns_management_off() {
    let list = run(3, 5);
    let mut o = options(128_000);
    o.context_window = None;
    o.model = Some("my-own-model".into());
    let (out, _) = prepare(&list, &o, &SessionState::default(), false, SUMMARY);
    assert!(!out.report.managed);
    assert_eq!(out.report.decision, Decision::Off);
    assert!(out
        .report
        .reason
        .as_deref()
        .unwrap()
        .contains("contextWindow"));
    assert_eq!(values(&out), list);
    assert!(out.state.is_none());
    let mut o = options(100);
    o.enabled = false;
    let (out, _) = prepare(&list, &o, &SessionState::default(), false, SUMMARY);
    assert!(!out.report.managed);
    assert_eq!(values(&out), list);
}

#[test]
fn an_unknown_model_without_a_window_is_refused_by_name_with_the_nearest_names() {
    let with = |model: &str, window: Option<u64>, enabled: bool| KeeperOptions {
        model: Some(model.to_owned()),
        context_window: window,
        enabled,
        ..KeeperOptions::default()
    };
    let typo = with("gpt4o", None, true).check_model().unwrap_err();
    assert!(typo.starts_with("unknown model \"gpt4o\""), "{typo}");
    assert!(typo.contains("Did you mean one of \"gpt-4o\""), "{typo}");
    assert!(typo.contains("contextWindow"), "{typo}");
    let nothing_near = with("nope", None, true).check_model().unwrap_err();
    assert!(!nothing_near.contains("Did you mean"), "{nothing_near}");
    // a window given, a known model, or management turned off: nothing to refuse
    assert_eq!(with("nope", Some(32_000), true).check_model(), Ok(()));
    assert_eq!(with("gpt-4o-2024-08-06", None, true).check_model(), Ok(()));
    assert_eq!(with("nope", None, false).check_model(), Ok(()));
    assert_eq!(KeeperOptions::default().check_model(), Ok(()));
}

#[test]
fn budget_figures_follow_the_thresholds_and_accept_fractions() {
    let b = options(200_000).budget().unwrap();
    assert_eq!(
        (b.prune_at, b.compact_at, b.flush_at),
        (170_000, 180_000, 176_000)
    );
    assert_eq!((b.prune_target, b.compact_target), (140_000, 140_000));
    // a 1M window: 95% is under window - reserve
    let b = options(1_000_000).budget().unwrap();
    assert_eq!((b.prune_at, b.compact_at), (850_000, 950_000));
    // a 32k window: the reserve is at most a quarter, and pruning comes 5% before
    let b = options(32_000).budget().unwrap();
    assert_eq!((b.prune_at, b.compact_at), (22_400, 24_000));
    assert_eq!((b.prune_target, b.compact_target), (20_800, 20_800));
    let mut o = options(32_000);
    o.flush.reserve_tokens = 0.1;
    assert_eq!(o.budget().unwrap().compact_at, 28_800);
    // absolute thresholds
    o.thresholds.prune = 10_000.0;
    assert_eq!(o.budget().unwrap().prune_at, 10_000);
}

/// A `cat data.csv` call and a result over the default offload limit (20,000 tokens).
fn huge_exchange() -> [Value; 2] {
    let huge: String = (0..4000)
        .map(|l| format!("row {l}: 0.{l} 1.{l} 2.{l}\n"))
        .collect();
    [
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_big", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"cat data.csv\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_big", "content": huge}),
    ]
}

#[test]
fn the_newest_result_reaches_the_model_whole_while_it_fits() {
    // about 60,000 tokens: within a 128k window's budget, it is what the model asked for
    let mut list = run(4, 5);
    list.extend(huge_exchange());
    let (out, driven) = prepare(
        &list,
        &options(128_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    assert_eq!(driven.saves, 0);
    assert!(out.report.offloaded.is_empty());
    assert_eq!(values(&out), list);
}

#[test]
fn a_newest_result_too_large_for_the_window_is_offloaded_once_and_stays_offloaded() {
    let mut list = run(4, 5);
    list.extend(huge_exchange());
    let window = 64_000;
    let (out, driven) = prepare(
        &list,
        &options(window),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    assert_eq!(driven.saves, 1);
    assert_eq!(out.report.offloaded.len(), 1);
    let edit = &out.report.offloaded[0];
    assert_eq!(edit.message_index, list.len() - 1);
    assert!(out.report.fits);
    assert!(out.report.tokens_after < out.report.tokens_before / 2);
    let state = out.state.clone().unwrap();
    assert_eq!(state.keeper.offloaded.len(), 1);
    assert_eq!(state.keeper.cuts.len(), 1);
    // again, with the state: the same output, no save asked for
    let (again, driven) = prepare(&list, &options(window), &state, false, SUMMARY);
    assert_eq!(driven.saves, 0);
    assert_eq!(values(&again), values(&out));
    assert_eq!(again.report.unchanged_prefix, Some(list.len()));
    // a turn later it is no longer the newest: still the same pointer, the prefix unchanged
    let mut later = list.clone();
    later.extend(run(5, 5).split_off(2 + 8));
    let (next, driven) = prepare(&later, &options(window), &state, false, SUMMARY);
    assert_eq!(driven.saves, 0);
    assert_eq!(values(&next)[..list.len()], values(&out)[..]);
    assert_eq!(next.report.unchanged_prefix, Some(list.len()));
}

#[test]
fn the_unchanged_prefix_counts_what_the_fast_calls_sent() {
    let window = 64_000;
    let list = run(2, 5);
    let (out, _) = prepare(
        &list,
        &options(window),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    let state = out.state.clone().unwrap();
    // two fast calls appended a turn each to what the full prepare sent
    let grown = run(4, 5);
    let appended = read(&Value::Array(grown[list.len()..].to_vec()));
    let mut standing = fast::Standing::new(out_budget(window), false, 0, 0, 0);
    let answer = standing.answer(appended.messages(), 0, || 0).unwrap();
    let fast_calls = |since: usize| fast::Unrecorded {
        prepared: 2,
        since,
        output: answer.output.clone(),
        ..fast::Unrecorded::default()
    };
    let (next, _) = prepare_after(
        &grown,
        &options(window),
        &state,
        false,
        SUMMARY,
        &fast_calls(list.len()),
    );
    assert_eq!(next.report.unchanged_prefix, Some(grown.len()));
    assert_eq!(next.state.unwrap().keeper.stats.prepared, 4);
    // without them, only what the state saw; on another output than theirs, likewise
    let (alone, _) = prepare(&grown, &options(window), &state, false, SUMMARY);
    assert_eq!(alone.report.unchanged_prefix, Some(list.len()));
    let (other, _) = prepare_after(
        &grown,
        &options(window),
        &state,
        false,
        SUMMARY,
        &fast_calls(list.len() - 1),
    );
    assert_eq!(other.report.unchanged_prefix, Some(list.len()));
}

fn out_budget(window: u64) -> Budget {
    options(window).budget().unwrap()
}

#[test]
fn a_failed_offload_keeps_the_result_and_reports_it() {
    let mut list = run(2, 5);
    list.extend(huge_exchange());
    let (out, _) = prepare(
        &list,
        &options(64_000),
        &SessionState::default(),
        true,
        SUMMARY,
    );
    // the result stays whole (the older turns are compacted around it instead)
    assert_eq!(values(&out).last(), list.last());
    assert_eq!(out.report.failures.len(), 1);
    assert_eq!(out.report.failures[0].reason, "quota exceeded");
    assert_eq!(out.report.failures[0].message_index, list.len() - 1);
    assert_eq!(
        out.report.failures[0].tool_call_id.as_deref(),
        Some("call_big")
    );
    assert!(out.report.offloaded.is_empty());
    let state = out.state.unwrap();
    assert!(state.keeper.offloaded.is_empty() && state.keeper.cuts.is_empty());
}

/// Replays a growing run through prepare with a small window, carrying the state, and
/// returns each call's output and report.
fn replay(turns: usize, window: u64, summary: &str) -> Vec<(Vec<Value>, Prepared, Driven)> {
    let full = run(turns, 40);
    let mut state = SessionState::default();
    let mut out = Vec::new();
    let mut end = 4;
    while end <= full.len() {
        // histories that end after a tool result
        if full[end - 1]["role"] == "tool" {
            let history = full[..end].to_vec();
            let (p, d) = prepare(&history, &options(window), &state, false, summary);
            if let Some(s) = &p.state {
                state = s.clone();
            }
            out.push((history, p, d));
        }
        end += 1;
    }
    out
}

/// The 120-turn replay under a 12k window, made once for the tests that read it.
fn shared_replay() -> &'static [(Vec<Value>, Prepared, Driven)] {
    static CALLS: std::sync::OnceLock<Vec<(Vec<Value>, Prepared, Driven)>> =
        std::sync::OnceLock::new();
    CALLS.get_or_init(|| replay(120, 12_000, SUMMARY))
}

#[test]
fn a_growing_session_stays_in_budget_and_valid_and_moves_its_prefix_in_steps() {
    let calls = shared_replay();
    let budget = options(12_000).budget().unwrap();
    let mut moves = 0;
    let mut compactions = 0;
    for (i, (history, p, _)) in calls.iter().enumerate() {
        assert!(p.report.fits, "call {i}: {:?}", p.report.over_budget);
        assert!(p.report.tokens_after <= budget.compact_at);
        let problems = validate_conversation(&p.conversation, &MessagesOptions::default());
        assert!(problems.is_empty(), "call {i}: {problems:?}");
        // the last exchange is always verbatim
        let out = values(p);
        assert_eq!(out.last(), history.last());
        assert_eq!(out[0], history[0]);
        if i > 0 {
            let previous = calls[i - 1].1.report.messages;
            if p.report.unchanged_prefix != Some(previous) {
                moves += 1;
            }
        }
        compactions += usize::from(p.report.decision == Decision::Compacted);
    }
    assert!(compactions >= 1, "the run outgrows pruning");
    // NOTE: a 12k window that turns of 1,000 tokens fill in eight: every decision or
    // compaction makes room for at least five turns.
    assert!(
        moves * 5 <= calls.len(),
        "{moves} moves in {} calls",
        calls.len()
    );
}

#[test]
fn the_same_history_and_state_give_the_same_output_byte_for_byte() {
    let calls = shared_replay();
    // any call again with the state stored before it: same output, no summary asked
    let mut state = SessionState::default();
    for (history, p, _) in calls {
        let (again, driven) = prepare(
            history,
            &options(12_000),
            &state,
            false,
            "!must not be called",
        );
        if p.report.decision != Decision::Compacted {
            assert_eq!(driven.summaries, 0);
            assert_eq!(values(&again), values(p));
        }
        if let Some(s) = &p.state {
            state = s.clone();
        }
    }
    // the full history after the last call, with the final state: the last output
    let (history, last, _) = calls.last().unwrap();
    let (again, driven) = prepare(
        history,
        &options(12_000),
        &state,
        false,
        "!must not be called",
    );
    assert_eq!(driven.summaries, 0);
    assert_eq!(values(&again), values(last));
    assert_eq!(again.report.unchanged_prefix, Some(last.report.messages));
}

#[test]
fn a_failed_summary_leaves_the_history_pruned_and_says_why_it_does_not_fit() {
    let calls = replay(90, 12_000, "!the summarizer failed: 529 overloaded");
    let last = &calls.last().unwrap().1;
    assert!(!last.report.fits);
    let why = last.report.over_budget.as_deref().unwrap();
    assert!(why.contains("compaction failed"), "{why}");
    assert!(last.state.as_ref().unwrap().keeper.stats.events.failures > 0);
    // nothing archived was replaced: every message is the history's, or a pruned copy
    let (history, p, _) = calls.last().unwrap();
    assert_eq!(p.conversation.messages().len(), history.len());
    // every call over the budget says the compaction failed, or that it made a new decision
    // before it did: never that it was under the threshold
    for (_, p, _) in &calls {
        if !p.report.fits {
            assert!(
                matches!(
                    p.report.decision,
                    Decision::CompactionFailed | Decision::Pruned | Decision::Cleared
                ),
                "{:?} at {} tokens",
                p.report.decision,
                p.report.tokens_after
            );
        }
    }
    assert!(matches!(
        last.report.decision,
        Decision::CompactionFailed | Decision::Pruned | Decision::Cleared
    ));
}

#[test]
fn one_user_message_over_the_window_is_named() {
    let mut list = run(1, 5);
    list.push(json!({"role": "user", "content": "word ".repeat(9_000)}));
    let (out, _) = prepare(
        &list,
        &options(4_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    assert!(!out.report.fits);
    let why = out.report.over_budget.unwrap();
    assert!(
        why.starts_with(&format!("message {} (user) alone is", list.len() - 1)),
        "{why}"
    );
}

#[test]
fn the_flush_runs_once_per_cycle_before_the_compaction() {
    let calls = shared_replay();
    let flushes: usize = calls.iter().map(|(_, _, d)| d.flushes).sum();
    let compactions = calls
        .iter()
        .filter(|(_, p, _)| p.report.decision == Decision::Compacted)
        .count();
    assert!(flushes >= 1);
    assert!(
        flushes <= compactions + 1,
        "{flushes} flushes, {compactions} compactions"
    );
}

#[test]
fn anthropic_breakpoints_go_on_the_system_prompt_and_the_stable_prefix() {
    let mut messages =
        vec![json!({"role": "user", "content": "Summarize the logs in /var/log/app."})];
    for t in 0..30 {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Reading part {t}.")},
            {"type": "tool_use", "id": format!("toolu_{t}"), "name": "bash", "input": {"command": format!("sed -n {t}p app.log")}}]}));
        let body: String = (0..40)
            .map(|l| format!("{t}:{l} GET /api/v1/items 200 12ms\n"))
            .collect();
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{t}"), "content": body}]}));
    }
    let request = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a log analyst."}], "messages": messages});
    let mut o = options(12_000);
    o.model = Some("claude-sonnet-4-5".into());
    o.cache_breakpoints = true;
    let mut counter = Counter::new();
    let mut p = Prepare::start(
        read(&request),
        &o,
        call(false),
        SessionState::default(),
        &mut counter,
    )
    .unwrap();
    loop {
        match p.next(&mut counter).unwrap() {
            Need::Done => break,
            Need::Saves(saves) => {
                let n = saves.len();
                p.handle(Event::Saved(vec![Outcome::Saved; n]), &mut counter)
                    .unwrap();
            }
            Need::Flush(_) => p
                .handle(Event::Flushed(FlushOutcome::Replied(None)), &mut counter)
                .unwrap(),
            Need::Archive(saves) => {
                let n = saves.len();
                p.handle(Event::Archived(vec![Outcome::Saved; n]), &mut counter)
                    .unwrap();
            }
            Need::Summarize(_) => p
                .handle(
                    Event::Summarized(SummaryOutcome::Text(SUMMARY.into())),
                    &mut counter,
                )
                .unwrap(),
        }
    }
    let out = p.finish(&mut counter);
    assert!(out.system_edited);
    assert_eq!(out.report.breakpoints.len(), 2, "{:?}", out.report);
    let value = out.conversation.to_value();
    assert_eq!(
        value["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let at = usize::try_from(out.report.breakpoints[1]).unwrap();
    let marked = &value["messages"][at]["content"];
    assert_eq!(
        marked.as_array().unwrap().last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );
    assert!(validate_conversation(&out.conversation, &MessagesOptions::default()).is_empty());
}

/// A history of `turns` reads of 120-line files, each with a function on line 57; the turn
/// after each read in `cited` names that function (the agent used the result), the others
/// name nothing of what they read.
fn cited_history(turns: usize, cited: impl Fn(usize) -> bool) -> Vec<Value> {
    let mut list = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the export."}),
    ];
    for t in 0..turns {
        let text = match t.checked_sub(1).filter(|&p| cited(p)) {
            Some(p) => format!("export_special_row_{p} at line 57 is suspect; reading part {t}."),
            None => format!("Reading part {t}."),
        };
        list.push(json!({"role": "assistant", "content": text, "tool_calls": [
            {"id": format!("call_{t}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\":\"cat -n src/part_{t}.rs\"}}")}}]}));
        let body: String = (1..=120)
            .map(|l| match l {
                57 => format!("{l:6}\tfn export_special_row_{t}(amount: i64) -> String {{\n"),
                _ => format!("{l:6}\t    let value_{t}_{l} = compute(amount, {l});\n"),
            })
            .collect();
        list.push(json!({"role": "tool", "tool_call_id": format!("call_{t}"), "content": body}));
    }
    list
}

#[test]
fn every_cut_is_stored_first_and_names_its_copy() {
    let list = cited_history(16, |t| t == 2);
    let (out, driven) = prepare(
        &list,
        &options(32_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    assert!(matches!(
        out.report.decision,
        Decision::Pruned | Decision::Cleared
    ));
    assert!(out.report.fits);
    assert!(!out.report.pruned.is_empty());
    let stored: std::collections::HashMap<&[String], &[u8]> = driven
        .stored
        .iter()
        .map(|(k, b)| (k.as_slice(), b.as_slice()))
        .collect();
    let output = values(&out);
    for edit in &out.report.pruned {
        let Original::Store { key, id } = &edit.original else {
            panic!("{edit:?} names no stored copy");
        };
        let bytes = stored.get(key.as_slice()).expect("stored before the cut");
        let (_, text) = super::super::recovery::decode(id, bytes).unwrap();
        // the copy is the original, word for word, and the cut text names it
        assert_eq!(list[edit.message_index]["content"].as_str(), Some(text));
        let cut = output[edit.message_index]["content"].as_str().unwrap();
        assert!(cut.contains(&format!("id=\"{id}\"")), "{cut}");
        assert!(cut.len() < text.len());
    }
    let state = out.state.unwrap();
    assert!(!state.keeper.cuts.is_empty());
    assert_eq!(state.keeper.offloaded.len(), driven.stored.len());
}

#[test]
fn a_cut_whose_copy_cannot_be_stored_is_not_made() {
    let list = cited_history(16, |t| t == 2);
    let (out, _) = prepare(
        &list,
        &options(32_000),
        &SessionState::default(),
        true,
        SUMMARY,
    );
    assert!(out.report.pruned.is_empty());
    assert!(!out.report.failures.is_empty());
    assert!(out
        .report
        .failures
        .iter()
        .all(|f| f.reason == "quota exceeded"));
    // every tool result is whole, or archived by the compaction that took the cuts' place
    let output = values(&out);
    for message in output.iter().filter(|m| m["role"] == "tool") {
        assert!(list.contains(message));
    }
    assert!(out.state.unwrap().keeper.cuts.is_empty());
}

#[test]
fn results_the_agent_used_go_last() {
    let list = cited_history(16, |t| t == 2);
    let (out, _) = prepare(
        &list,
        &options(32_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    let at = |call: &str| list.iter().position(|m| m["tool_call_id"] == call).unwrap();
    let cut: Vec<usize> = out.report.pruned.iter().map(|e| e.message_index).collect();
    // the older results nobody used were cut; the one the agent used stays whole
    assert!(
        cut.contains(&at("call_0")) && cut.contains(&at("call_1")),
        "{cut:?}"
    );
    assert!(!cut.contains(&at("call_2")), "{cut:?}");
    assert_eq!(values(&out)[at("call_2")], list[at("call_2")]);
}

#[test]
fn trims_keep_the_lines_later_turns_used() {
    // every result used: the oldest are trimmed to head, tail and the line used
    let list = cited_history(16, |_| true);
    let (out, _) = prepare(
        &list,
        &options(32_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    let trims: Vec<&Edit> = (out.report.pruned.iter())
        .filter(|e| e.action == Action::SoftTrim)
        .collect();
    assert!(!trims.is_empty(), "{:?}", out.report.pruned);
    let output = values(&out);
    for edit in trims {
        let text = output[edit.message_index]["content"].as_str().unwrap();
        let t = edit
            .tool_call_id
            .as_deref()
            .unwrap()
            .trim_start_matches("call_");
        let line = format!("L57: {:6}\tfn export_special_row_{t}(amount: i64)", 57);
        assert!(text.contains(&line), "{text}");
        assert!(
            text.contains("and the line later turns used, by number"),
            "{text}"
        );
    }
}

#[test]
fn a_returned_history_is_not_cut_twice() {
    let list = cited_history(16, |t| t == 2);
    let (out, _) = prepare(
        &list,
        &options(32_000),
        &SessionState::default(),
        false,
        SUMMARY,
    );
    let state = out.state.clone().unwrap();
    // the host keeps what prepare returned and sends it back
    let returned = values(&out);
    let (again, driven) = prepare(&returned, &options(32_000), &state, false, SUMMARY);
    assert_eq!(values(&again), returned);
    assert_eq!(driven.saves, 0);
    assert!(again.report.pruned.is_empty());
}

#[test]
fn output_hashes_are_written_as_the_formatter_writes_them() {
    for value in [0u32, 1, 0xf, 0xabc, 0x8000_0000, 0xdead_beef, u32::MAX] {
        let mut out = String::new();
        push_hex8(&mut out, value);
        assert_eq!(out, format!("{value:08x}"));
    }
}

#[test]
fn a_figure_out_of_range_is_named_by_its_path() {
    let invalid = |options: KeeperOptions| options.invalid().map(|(path, _)| path);
    assert_eq!(invalid(options(32_000)), None);
    let zero = KeeperOptions {
        context_window: Some(0),
        ..options(32_000)
    };
    assert_eq!(invalid(zero).as_deref(), Some("contextWindow"));
    let mut nan = options(32_000);
    nan.thresholds.prune_target = f64::NAN;
    assert_eq!(invalid(nan).as_deref(), Some("thresholds.pruneTarget"));
    let mut negative = options(32_000);
    negative.thresholds.compact = -0.5;
    let (path, reason) = negative.invalid().unwrap();
    assert_eq!(path, "thresholds.compact");
    assert!(reason.ends_with("found -0.5"), "{reason}");
    let mut reserve = options(32_000);
    reserve.flush.reserve_tokens = -1.0;
    assert_eq!(invalid(reserve).as_deref(), Some("reserveTokens"));
}
