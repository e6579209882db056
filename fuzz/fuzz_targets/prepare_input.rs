//! What the `prepare` target checks on any input: bytes as JSON
//! `{"messages": ..., "options": ..., "state": ..., "faults": "..."}` (the conversation in any
//! format, the keeper's options, a stored session state, and a fault schedule: one letter per
//! store write, summary and flush, `o`k or `f`ail, `e`mpty, `h`euristic), driven through
//! `Prepare` to the end. No input may panic; an input that parses and is valid gives a valid
//! output, within the budget or with a reason.
//!
//! Shared by the libFuzzer target (fuzz/fuzz_targets/prepare.rs) and the stable test that
//! replays its fixtures (tests/keeper_faults.rs, `fuzz_fixtures_replay`).

use context_keeper::context::flush::FlushOutcome;
use context_keeper::context::fold::SummaryOutcome;
use context_keeper::context::keeper::{Call, Event, KeeperOptions, Need, Prepare};
use context_keeper::context::state::SessionState;
use context_keeper::context::Outcome;
use context_keeper::counting::Counter;
use context_keeper::messages::{parse_messages, validate_conversation, MessagesOptions};
use serde_json::Value;

/// Drives one prepare of `data`; panics on a broken invariant.
pub fn check(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let messages = input.get("messages").cloned().unwrap_or(Value::Null);
    let options = input
        .get("options")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"contextWindow": 2000}));
    // The options as the package reads them (a search for the field at fault on an error):
    // the same options as serde's, or an error where serde has one.
    let read = context_keeper::options::from_value::<KeeperOptions>(options.clone());
    let Ok(options) = serde_json::from_value::<KeeperOptions>(options) else {
        assert!(read.is_err(), "options serde refuses were read");
        return;
    };
    assert_eq!(
        read.ok().as_ref(),
        Some(&options),
        "options read otherwise than serde"
    );
    let state = input
        .get("state")
        .cloned()
        .and_then(|s| serde_json::from_value::<SessionState>(s).ok())
        .unwrap_or_default();
    let faults: Vec<char> = input
        .get("faults")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .collect();
    let mut faults = faults.into_iter();
    let mut next = move || faults.next().unwrap_or('o');
    let parse = MessagesOptions {
        format: None,
        allow_pending_calls: true,
    };
    let Ok(conv) = parse_messages(&messages, &parse) else {
        return;
    };
    let format = conv.format();
    let same = MessagesOptions {
        format: Some(format),
        allow_pending_calls: true,
    };
    let valid = validate_conversation(&conv, &same).is_empty();
    let mut counter = Counter::new();
    let call = Call {
        session_id: "fuzz".into(),
        now: Some("2026-11-26T00:00:00Z".into()),
        flush: true,
    };
    let Ok(mut p) = Prepare::start(conv, &options, call, state, &mut counter) else {
        return;
    };
    let save = |c: char| match c {
        'f' => Outcome::Failed("injected".into()),
        _ => Outcome::Saved,
    };
    for _ in 0..64 {
        let need = match p.next(&mut counter) {
            Ok(need) => need,
            Err(_) => return,
        };
        match need {
            Need::Done => {
                let out = p.finish(&mut counter);
                if valid {
                    let problems = validate_conversation(&out.conversation, &same);
                    assert!(
                        problems.is_empty(),
                        "a valid input came out with {problems:?}"
                    );
                }
                let report = &out.report;
                assert!(
                    report.fits || !report.managed || report.over_budget.is_some(),
                    "over the budget with no reason: {report:?}"
                );
                let written = out.conversation.to_json_string();
                assert!(
                    parse_messages(
                        &serde_json::from_str(&written).expect("output is JSON"),
                        &same
                    )
                    .is_ok(),
                    "the output does not parse back"
                );
                return;
            }
            Need::Saves(saves) => {
                let outcomes: Vec<Outcome> = saves.iter().map(|_| save(next())).collect();
                (p.handle(Event::Saved(outcomes), &mut counter)).expect("saved");
            }
            Need::Flush(_) => {
                let outcome = match next() {
                    'f' => FlushOutcome::Failed("injected".into()),
                    'e' => FlushOutcome::Replied(None),
                    _ => FlushOutcome::Replied(Some("SILENT".into())),
                };
                if p.handle(Event::Flushed(outcome), &mut counter).is_err() {
                    return;
                }
            }
            Need::Archive(saves) => {
                let outcomes: Vec<Outcome> = (0..saves.len()).map(|_| save(next())).collect();
                if p.handle(Event::Archived(outcomes), &mut counter).is_err() {
                    return;
                }
            }
            Need::Summarize(_) => {
                let summary = match next() {
                    'f' => SummaryOutcome::Failed("injected".into()),
                    'e' => SummaryOutcome::Text(String::new()),
                    'h' => SummaryOutcome::Heuristic,
                    _ => SummaryOutcome::Text("a summary".into()),
                };
                if p.handle(Event::Summarized(summary), &mut counter).is_err() {
                    return;
                }
            }
        }
    }
    panic!("the prepare asked for more than 64 steps");
}
