//! Exact counts on the host against the golden counts of npm tiktoken (tests/data), and the
//! estimator's accuracy bounds.
// NOTE: tiktoken-rs, the reference, is a host-only dev-dependency.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use context_keeper::{count_tokens, estimate_tokens, resolve_encoding, Encoding};

fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn counts_equal_npm_tiktoken_on_every_text_fixture() {
    let texts: BTreeMap<String, String> = fixture("texts.json");
    let expected: BTreeMap<String, BTreeMap<Encoding, usize>> = fixture("texts.expected.json");
    assert_eq!(texts.len(), expected.len());
    for (name, text) in &texts {
        for encoding in Encoding::ALL {
            assert_eq!(
                count_tokens(text, encoding).unwrap(),
                expected[name][&encoding],
                "{name} with {encoding}"
            );
        }
    }
}

#[test]
fn counts_equal_tiktoken_rs_with_special_tokens_as_text() {
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    let text = "<|endoftext|> and <|fim_prefix|> are text here";
    assert_eq!(
        count_tokens(text, Encoding::Cl100kBase).unwrap(),
        bpe.encode_ordinary(text).len()
    );
}

#[test]
fn encodings_round_trip_through_their_names() {
    for encoding in Encoding::ALL {
        assert_eq!(encoding.name().parse::<Encoding>(), Ok(encoding));
        assert_eq!(resolve_encoding(Some(encoding.name()), None), Ok(encoding));
    }
}

#[test]
fn estimate_is_close_on_each_kind_of_text() {
    let texts: BTreeMap<String, String> = fixture("texts.json");
    // Bounds at what the estimator achieves on these short fixtures (a few points of slack).
    // Its weak spots: a sentence dense with contractions (4 in 22 words: 29 tokens, estimated
    // 34; o200k_base joins `'t` and `'s` to the word before, which the estimator now prices,
    // but not every such word is one token), short everyday Japanese (13 tokens, estimated
    // 25: error 0.923, bound 0.93, so one token more, an 8% worse estimate, fails) and the
    // Russian pangram (19 tokens, estimated 23, since the refit on agent traffic). The Rust
    // snippet is 36 tokens, estimated 38 since the refit with mixed punctuation (37 before).
    // On real messages it does better: see the per-message errors of `node bench/run.mjs` and
    // `node bench/agent.mjs`.
    for (name, bound) in [
        ("english", 0.2),
        ("code", 0.06),
        ("json", 0.05),
        ("chinese", 0.25),
        ("japanese", 0.93),
        ("russian", 0.25),
        ("korean", 0.07),
        ("mixed-case", 0.25),
    ] {
        let text = &texts[name];
        let exact = count_tokens(text, Encoding::O200kBase).unwrap() as f64;
        let estimate = estimate_tokens(text) as f64;
        let error = (estimate - exact).abs() / exact;
        assert!(
            error <= bound,
            "{name}: estimate {estimate} vs exact {exact}"
        );
    }
}

#[test]
fn estimate_is_close_on_a_whole_conversation() {
    let conversation: Vec<serde_json::Value> = fixture("sample-conversation.json");
    let text: String = conversation
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let exact = count_tokens(&text, Encoding::O200kBase).unwrap() as f64;
    let estimate = estimate_tokens(&text) as f64;
    assert!(
        (estimate - exact).abs() / exact <= 0.06,
        "estimate {estimate} vs exact {exact}"
    );
}
