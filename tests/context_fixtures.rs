//! The context layer's golden fixtures: for each `tests/data/context/<case>.input.json` (a
//! conversation in one format, the keeper's options, the session, the time and the summary the
//! summarizer returns), what one prepare of a new session makes of it, byte for byte, in
//! `<case>.expected.json`: the conversation sent (its pointers, trims, clears and markers), the
//! report, and every record stored (offload copies, archives and transcripts, the session
//! state). The package is held to the same files by `tests/js/context-fixtures.test.mjs`, so
//! the core and what a host gets from the package cannot drift apart.
//!
//! The inputs are turns of the bundled agent session (`tests/data/context/make.mjs` writes
//! them). A change to what the keeper writes shows as a diff of the expected files in review;
//! `UPDATE_FIXTURES=1 cargo test --test context_fixtures` rewrites them.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use context_keeper::context::fold::SummaryOutcome;
use context_keeper::context::keeper::{Call, Event, KeeperOptions, Need, Prepare, Prepared};
use context_keeper::context::state::{state_key, SessionState};
use context_keeper::context::Outcome;
use context_keeper::counting::Counter;
use context_keeper::messages::{parse_messages_value, MessagesOptions};
use serde_json::{json, Value};

fn dir() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "tests", "data", "context"]
        .iter()
        .collect()
}

/// Runs one prepare of a new session to its end, every save confirmed, the summarizer
/// returning `summary`; the prepared output and what was stored, by key.
fn prepare(input: &Value) -> (Prepared, BTreeMap<Vec<String>, Vec<u8>>) {
    let conv = parse_messages_value(
        input["messages"].clone(),
        &MessagesOptions {
            format: None,
            allow_pending_calls: true,
        },
    )
    .expect("the input reads");
    let options: KeeperOptions =
        serde_json::from_value(input["options"].clone()).expect("the options read");
    let call = Call {
        session_id: input["sessionId"].as_str().expect("sessionId").to_owned(),
        now: input["now"].as_str().map(str::to_owned),
        flush: false,
    };
    let summary = input["summary"].as_str().map(str::to_owned);
    let mut counter = Counter::new();
    let mut stored = BTreeMap::new();
    let mut p = Prepare::start(
        conv,
        &options,
        call.clone(),
        SessionState::default(),
        &mut counter,
    )
    .expect("the prepare starts");
    loop {
        let event = match p.next(&mut counter).expect("next") {
            Need::Done => break,
            Need::Saves(saves) => {
                for save in &saves {
                    stored.insert(save.key.clone(), save.bytes.clone());
                }
                Event::Saved(vec![Outcome::Saved; saves.len()])
            }
            Need::Flush(_) => unreachable!("no flush is configured"),
            Need::Archive(saves) => Event::Archived(
                saves
                    .iter()
                    .map(|save| {
                        stored.insert(save.key, save.bytes);
                        Outcome::Saved
                    })
                    .collect(),
            ),
            Need::Summarize(_) => Event::Summarized(match &summary {
                Some(text) => SummaryOutcome::Text(text.clone()),
                None => SummaryOutcome::Heuristic,
            }),
        };
        p.handle(event, &mut counter).expect("handled");
    }
    let done = p.finish(&mut counter);
    if let Some(state) = &done.state {
        stored.insert(state_key(&call.session_id), state.to_bytes());
    }
    (done, stored)
}

/// A stored record as the expected file shows it: JSON as JSON, other text as a string.
fn record(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text.into_owned()))
}

/// The expected file of `input`.
fn expected(input: &Value) -> String {
    let (done, stored) = prepare(input);
    let doc = json!({
        "output": done.conversation.to_value(),
        "report": serde_json::to_value(&done.report).expect("the report serializes"),
        "stored": stored
            .iter()
            .map(|(key, bytes)| json!({ "key": key, "value": record(bytes) }))
            .collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&doc).expect("the document serializes") + "\n"
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/data/context")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".input.json"))
        .collect();
    cases.sort();
    cases
}

fn expected_path(input: &Path) -> PathBuf {
    PathBuf::from(
        input
            .to_string_lossy()
            .replace(".input.json", ".expected.json"),
    )
}

#[test]
fn the_keeper_writes_what_the_fixtures_hold() {
    let cases = cases();
    assert!(cases.len() >= 12, "{} fixtures", cases.len());
    let update = std::env::var_os("UPDATE_FIXTURES").is_some();
    let mut differ = Vec::new();
    for path in &cases {
        let input: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read"))
            .expect("the input is JSON");
        let now = expected(&input);
        let out = expected_path(path);
        if update {
            std::fs::write(&out, &now).expect("write");
            continue;
        }
        let golden = std::fs::read_to_string(&out).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (UPDATE_FIXTURES=1 cargo test --test context_fixtures writes it)",
                out.display()
            )
        });
        if golden != now {
            let line = golden
                .lines()
                .zip(now.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| golden.lines().count().min(now.lines().count()));
            differ.push(format!(
                "{} differs from what the keeper writes now, first at line {}:\n  expected: {}\n  now:      {}",
                out.display(),
                line + 1,
                golden.lines().nth(line).unwrap_or("<end>"),
                now.lines().nth(line).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{}\n(review the change; UPDATE_FIXTURES=1 cargo test --test context_fixtures rewrites them)",
        differ.join("\n")
    );
}

#[test]
fn each_fixture_uses_the_tier_it_is_named_for() {
    for path in cases() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let input: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (done, stored) = prepare(&input);
        let report = serde_json::to_value(&done.report).unwrap();
        let used = |field: &str| report[field].as_array().is_some_and(|a| !a.is_empty());
        let tier = name.split('-').next().unwrap();
        let ok = match tier {
            "prune" => used("pruned"),
            "evict" => used("evicted"),
            "offload" => used("offloaded"),
            "compaction" => report["compaction"]["outcome"] == "compacted",
            other => panic!("{name}: no tier named {other}"),
        };
        assert!(ok, "{name}: the keeper did not use {tier}: {report}");
        assert_eq!(report["fits"], true, "{name}");
        // every cut's copy was stored before the cut was made
        for field in ["pruned", "evicted", "offloaded"] {
            for edit in report[field].as_array().unwrap() {
                let key: Vec<String> = serde_json::from_value(edit["original"]["key"].clone())
                    .expect("a stored original");
                assert!(stored.contains_key(&key), "{name}: {key:?} not stored");
            }
        }
    }
}
