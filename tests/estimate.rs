//! Properties of the table-free estimator: it never panics, is 0 only for empty text, grows
//! (nearly) monotonically as text is appended, runs in linear time, and stays close to the
//! exact o200k_base count on a mix of real text (the fixtures in `tests/data`).
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use context_keeper::{count_tokens, estimate_tokens, Encoding};
use proptest::prelude::*;

fn texts() -> BTreeMap<String, String> {
    let path = format!("{}/tests/data/texts.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Pieces of real-ish text of every kind the estimator prices, for the generators below.
const PARTS: &[&str] = &[
    "The quick brown fox jumps over the lazy dog. ",
    "fn main() {\n    let x = parseJSON(&input)?;\n}\n",
    "{\"name\": \"context-keeper\", \"version\": \"0.1.0\", \"count\": 42}",
    "Все люди рождаются свободными и равными в своем достоинстве и правах. ",
    "人人生而自由,在尊严和权利上一律平等。",
    "すべての人間は、生まれながらにして自由であり、",
    "모든 인간은 태어날 때부터 자유로우며 ",
    "كل الناس يولدون أحراراً متساوين في الكرامة والحقوق. ",
    "सभी मनुष्यों को गौरव और अधिकारों के मामले में ",
    "Declaración Universal de Derechos Humanos, l'être humain ",
    "        indented\n\n\n",
    "emoji 🎉🚀 and dashes — “quotes” ",
    "1234567890 3.14159 0xdeadbeef ",
    "don't you'll we're I'm ",
    "    \t  \r\n",
];

#[test]
fn zero_only_for_empty_text() {
    assert_eq!(estimate_tokens(""), 0);
    for s in [" ", "\n", "a", "1", ".", "\u{0301}", "🎉", "\t\t", "中"] {
        assert!(estimate_tokens(s) >= 1, "{s:?}");
    }
}

#[test]
fn linear_time_on_ten_megabytes() {
    // Every kind of piece, and pathological runs: must finish (no quadratic behaviour).
    let mixed: String = PARTS
        .iter()
        .cycle()
        .take(PARTS.len() * 2_000)
        .copied()
        .collect();
    let mut big = mixed.repeat(10_000_000 / mixed.len() + 1);
    big.push_str(&"a".repeat(1_000_000));
    big.push_str(&" ".repeat(1_000_000));
    big.push_str(&"!".repeat(1_000_000));
    big.push_str(&"9".repeat(1_000_000));
    let n = estimate_tokens(&big);
    assert!(n > big.len() / 20, "{n} tokens for {} bytes", big.len());
}

#[test]
fn every_unicode_plane() {
    // Code points from all 17 planes (every 251st, surrogates skipped), alone and in runs,
    // after ASCII letters and spaces: no panic, never 0, at most a few tokens per character.
    for plane in 0..=16u32 {
        let chars: Vec<char> = (plane << 16..(plane + 1) << 16)
            .step_by(251)
            .filter_map(char::from_u32)
            .collect();
        let text: String = chars.iter().flat_map(|&c| [c, 'a', c, c, ' ']).collect();
        let n = estimate_tokens(&text);
        assert!(
            n >= 1 && n <= 4 * text.chars().count(),
            "plane {plane}: {n}"
        );
        for &c in chars.iter().take(50) {
            assert!(estimate_tokens(&c.to_string()) >= 1, "{c:?}");
        }
    }
}

#[test]
fn runs_of_every_class_at_any_length() {
    // Runs are priced by cell up to 30 characters and one by one beyond: the estimate must
    // grow smoothly across that boundary and stay near the exact count for long runs.
    for run in ["a", "Q", "7", " ", "\n", "-", "é", "中", "\t"] {
        let mut last = 0;
        for n in 1..=70 {
            let text = format!("x {}y", run.repeat(n));
            let estimate = estimate_tokens(&text);
            assert!(
                estimate + 2 >= last,
                "{run:?} x {n}: {estimate} after {last}"
            );
            last = estimate;
        }
        // NOTE: tabs are priced as spaces (one token per 80), but o200k_base has tokens for
        // short tab runs only: 1000 tabs are 66 tokens, estimated 12. Known weak spot.
        if run == "\t" {
            continue;
        }
        for n in [100, 1000, 10_000] {
            let text = format!("x {}y", run.repeat(n));
            let exact = count_tokens(&text, Encoding::O200kBase).unwrap();
            let estimate = estimate_tokens(&text);
            // Loose: such runs are rare in real text. o200k_base packs some far better than
            // the estimate (a run of one letter is a few long tokens, but each of its letter
            // pairs counts as rare), yet the estimate stays linear, under 1.5 tokens per
            // character, and never far below the exact count.
            let chars = text.chars().count();
            assert!(
                estimate <= chars * 3 / 2 + 10 && exact <= 3 * estimate + 10,
                "{run:?} x {n}: {estimate} vs {exact}"
            );
        }
    }
}

#[test]
fn mixed_punctuation_is_priced_by_its_length() {
    // Closing brackets of nested JSON, a chain of calls, a table rule: o200k_base merges a
    // character repeated into few tokens but mixed punctuation only in twos and threes. Before
    // the estimator told the two apart, `"]}` eight times (18 tokens) was estimated at 2, and a
    // longer run could cost less than a shorter one (`,},}` 2, `,},},},},},}` 1).
    // A bracket or a quote repeated is the same: o200k_base has no long runs of those.
    for unit in [",}", "\"]}", "});", "|-", ")]", "\"}]}", "]", "}", "\""] {
        let mut last = 0;
        for n in 1..=40 {
            let text = format!("x {}y", unit.repeat(n));
            let exact = count_tokens(&text, Encoding::O200kBase).unwrap();
            let estimate = estimate_tokens(&text);
            assert!(estimate >= last, "{unit:?} x {n}: {estimate} after {last}");
            assert!(
                estimate.abs_diff(exact) <= 2 + exact * 2 / 5,
                "{unit:?} x {n}: {estimate} vs {exact}"
            );
            last = estimate;
        }
    }
    // A rule of one character stays cheap.
    for rule in ["=", "-", "#", "*"] {
        let text = format!("x\n{}\ny", rule.repeat(60));
        let estimate = estimate_tokens(&text);
        assert!(estimate <= 8, "{rule:?} x 60: {estimate}");
    }
}

#[test]
fn long_whitespace_runs_are_cheap() {
    // o200k_base has one token for up to 79 spaces.
    for n in [8, 40, 79, 200, 1000] {
        let text = format!("x\n{}y", " ".repeat(n));
        let exact = count_tokens(&text, Encoding::O200kBase).unwrap();
        let estimate = estimate_tokens(&text);
        assert!(
            estimate.abs_diff(exact) <= 1 + exact / 4,
            "{n}: {estimate} vs {exact}"
        );
    }
}

#[test]
fn close_on_a_mix_of_real_text() {
    // Each fixture alone, and concatenations of the generator parts.
    let mut cases: Vec<String> = texts()
        .into_iter()
        .filter(|(name, text)| !text.is_empty() && name != "long-run")
        .map(|(_, text)| text)
        .collect();
    let japanese = texts()["japanese"].clone();
    for i in 0..PARTS.len() {
        let mix: String = PARTS.iter().cycle().skip(i).take(7).copied().collect();
        cases.push(mix.repeat(3));
    }
    let mut total = 0.0;
    for text in &cases {
        let exact = count_tokens(text, Encoding::O200kBase).unwrap() as f64;
        let estimate = estimate_tokens(text) as f64;
        let error = (estimate - exact).abs() / exact;
        // Known weak spot: short everyday Japanese, which o200k_base packs into few tokens
        // (13 here, estimate 25, error 0.923: its one long piece of kanji and kana is priced per
        // letter). The bound is that figure: one token more (an 8% worse estimate) fails.
        let bound = if *text == japanese { 0.93 } else { 0.3 };
        assert!(error <= bound, "{estimate} vs {exact} on {text:?}");
        total += error;
    }
    let mean = total / cases.len() as f64;
    assert!(mean <= 0.14, "mean error {mean}");
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z0-9 .,'\n\t{}\"():;_-]{0,200}",
        prop::collection::vec(prop::sample::select(PARTS), 0..8).prop_map(|v| v.concat()),
    ]
}

proptest! {
    #[test]
    fn never_panics_and_zero_only_when_empty(text in text_strategy()) {
        let n = estimate_tokens(&text);
        prop_assert_eq!(n == 0, text.is_empty());
    }

    #[test]
    fn appending_never_lowers_much(a in text_strategy(), b in text_strategy()) {
        // Appending text can re-cut the pieces at the seam (a word grows, a space joins the
        // next word), which may cost about a token, never more than two.
        let whole = format!("{a}{b}");
        prop_assert!(estimate_tokens(&whole) + 2 >= estimate_tokens(&a),
            "{} < {}", estimate_tokens(&whole), estimate_tokens(&a));
    }

    #[test]
    fn grows_with_repetition(text in text_strategy()) {
        prop_assume!(!text.is_empty());
        let once = estimate_tokens(&text);
        let thrice = estimate_tokens(&text.repeat(3));
        prop_assert!(thrice + 2 >= 2 * once, "{} vs {}", thrice, once);
    }
}
