//! A build without tables (`--no-default-features --features full`: the `context-keeper/lite`
//! entry) counts with the estimator: messages, tool definitions and the tiers' figures are
//! estimates, marked not exact, with the same framing as an exact count; the exact count of one
//! text still refuses; calibration applies to every model, since none is counted exactly.
//!
//! `cargo test --no-default-features --features full --test estimator_only` (scripts/test runs
//! it, and the keeper's fault campaign on the same build).
#![cfg(not(any(feature = "o200k", feature = "cl100k")))]

use context_keeper::count::ESTIMATOR_ONLY;
use context_keeper::counting::{CountMessagesOptions, Counter, ModelOverrides};
use context_keeper::messages::{parse_messages, MessagesOptions};
use context_keeper::{count_tokens, estimate_tokens, CountError, Encoding};
use serde_json::{json, Value};

fn options(model: &str) -> CountMessagesOptions {
    CountMessagesOptions {
        model: Some(model.to_owned()),
        ..CountMessagesOptions::default()
    }
}

fn conversation(value: &Value) -> context_keeper::messages::Conversation {
    parse_messages(value, &MessagesOptions::default()).unwrap()
}

const TEXT: &str = "The migration failed on line 42 of src/db/schema.rs: expected `users.id` \
                    to be a UUID, found an integer. Retrying with --force rewrote 3 tables.";

#[test]
fn the_build_holds_no_tables_and_says_so() {
    const { assert!(ESTIMATOR_ONLY) };
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        assert!(!encoding.is_built());
        // The exact count of a text is never an estimate in disguise.
        let err = count_tokens(TEXT, encoding).unwrap_err();
        assert_eq!(err, CountError::NotBuilt { encoding });
        assert!(err.to_string().contains("is not in this build"), "{err}");
    }
}

#[test]
fn messages_count_with_the_estimator_and_the_models_framing() {
    let conv = conversation(&json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": TEXT},
        {"role": "assistant", "content": "Ok."},
    ]));
    let mut counter = Counter::new();
    let count = counter.count(&conv, &options("gpt-4o")).unwrap();
    assert!(!count.exact, "an estimate is never exact");
    assert!(!count.calibrated);
    let texts = ["You are terse.", TEXT, "Ok."].map(|t| estimate_tokens(t) as u64);
    assert_eq!(count.by_kind.text, texts.iter().sum::<u64>());
    // OpenAI's chat framing: 3 tokens a message and the role's (one for each of these roles),
    // then 3 for the reply's priming.
    for (i, text) in texts.iter().enumerate() {
        assert_eq!(count.per_message[i], text + 4, "message {i}");
    }
    assert_eq!(count.total, texts.iter().sum::<u64>() + 3 * 4 + 3);

    // Claude's framing and tool definitions, estimated the same way.
    let tools = json!([{"name": "run", "description": "Runs a shell command and returns its output.",
        "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]);
    let claude = conversation(&json!([{"role": "user", "content": TEXT}]));
    let count = counter
        .count(
            &claude,
            &CountMessagesOptions {
                tools: Some(tools),
                ..options("claude-sonnet-4-5")
            },
        )
        .unwrap();
    assert!(!count.exact);
    assert!(count.tools > 0 && count.by_kind.text == estimate_tokens(TEXT) as u64);
}

#[test]
fn calibration_applies_to_every_model() {
    let conv = conversation(&json!([{"role": "user", "content": TEXT}]));
    let mut counter = Counter::new();
    let before = counter.count(&conv, &options("gpt-4o")).unwrap();
    // gpt-4o is counted exactly in a build with its tables, and then calibration leaves it
    // alone; here its counts are estimates, which a provider's report can correct.
    let calibration = counter.calibrate("gpt-4o", &ModelOverrides::default(), 100, 125);
    assert!(calibration.applied);
    assert_eq!(calibration.ratio, 1.25);
    let after = counter.count(&conv, &options("gpt-4o")).unwrap();
    assert!(after.calibrated);
    assert_eq!(after.uncalibrated, Some(before.total));
    assert_eq!(after.total, (before.total as f64 * 1.25).round() as u64);
}
