//! A standing decision applied again: what the keeper's second application (after the new
//! cuts' copies are stored) makes from the first must be what a fresh application makes.

use serde_json::{json, Value};

use super::*;
use crate::context::evict::EvictOptions;
use crate::context::offload::OffloadOptions;
use crate::context::prune::PruneOptions;
use crate::context::{result_sites_paired, Measure};
use crate::messages::{pair_tools, parse_messages, Conversation, MessagesOptions};

/// An Anthropic agent run: each turn a `bash` call and a `write_file` call answered in one
/// user message, results of a few hundred lines.
fn run(turns: usize) -> Conversation {
    let mut list =
        vec![json!({"role": "user", "content": "Fix the failing test in src/export/csv.rs."})];
    for t in 0..turns {
        let body = |kind: &str| -> String {
            (0..120 + t * 7 % 90)
                .map(|l| format!("{kind} {t}:{l} fn export_row(amount: i64) -> String {{ amount.to_string() }}\n"))
                .collect()
        };
        list.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Turn {t}: reading src/export/csv_{t}.rs")},
            {"type": "tool_use", "id": format!("toolu_a{t}"), "name": "bash", "input": {"command": format!("cat src/export/csv_{t}.rs")}},
            {"type": "tool_use", "id": format!("toolu_b{t}"), "name": "write_file", "input": {"path": format!("src/out_{t}.rs"), "content": body("written")}},
        ]}));
        list.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_a{t}"), "content": body("read")},
            {"type": "tool_result", "tool_use_id": format!("toolu_b{t}"), "content": "ok"},
        ]}));
    }
    parse_messages(
        &Value::Array(list),
        &MessagesOptions {
            format: None,
            allow_pending_calls: true,
        },
    )
    .unwrap()
}

#[test]
fn applying_again_from_an_earlier_application_makes_what_a_fresh_one_makes() {
    let conv = run(24);
    let graph = pair_tools(&conv);
    let sites = result_sites_paired(&conv, &graph);
    let (prune, evict, offload) = (
        PruneOptions::default(),
        EvictOptions::default(),
        OffloadOptions::default(),
    );
    let shape = Shape {
        prune: &prune,
        evict: &evict,
        offload: &offload,
        session_id: "s1",
        measure: Measure::for_model(Some("gpt-4o")),
    };
    let end = conv.messages().len();
    let mut memo = DecisionMemo::new();
    // standing decisions from shallow to deep, each made on top of the one before
    let mut decisions: Vec<Vec<Cut>> = vec![Vec::new()];
    for target in [60_000, 40_000, 25_000, 12_000, 4_000] {
        let standing = decisions.last().cloned().unwrap_or_default();
        let decided = decide(
            &conv,
            &sites,
            &graph,
            end,
            &standing,
            80_000,
            target,
            &shape,
            &mut memo,
            |_| true,
        );
        decisions.push(decided.cuts);
    }
    assert!(
        decisions.windows(2).filter(|w| w[0] != w[1]).count() >= 3,
        "the decisions differ"
    );
    // decisions made afresh, whose cuts of one result differ in level from the chained ones
    for target in [30_000, 8_000] {
        let decided = decide(
            &conv,
            &sites,
            &graph,
            end,
            &[],
            80_000,
            target,
            &shape,
            &mut memo,
            |_| true,
        );
        decisions.push(decided.cuts);
    }
    // one that drops a cut, as a failed save does
    let mut odd = decisions[3].clone();
    assert!(!odd.is_empty());
    odd.remove(0);
    decisions.push(odd);
    for before in &decisions {
        for after in &decisions {
            let fresh = apply(conv.clone(), after, &sites, &graph, &shape, &mut memo, None);
            let first = apply(
                conv.clone(),
                before,
                &sites,
                &graph,
                &shape,
                &mut memo,
                None,
            );
            let previous = Previous {
                cuts: before,
                applied: first,
            };
            let again = apply(
                conv.clone(),
                after,
                &sites,
                &graph,
                &shape,
                &mut memo,
                Some(previous),
            );
            let values = |c: &Conversation| -> Vec<Value> {
                c.messages().iter().map(|m| m.to_value()).collect()
            };
            assert_eq!(values(&again.conversation), values(&fresh.conversation));
            assert_eq!(again.edited, fresh.edited);
            for (a, f) in [
                (&again.offloaded, &fresh.offloaded),
                (&again.pruned, &fresh.pruned),
                (&again.evicted, &fresh.evicted),
            ] {
                assert_eq!(a.edits, f.edits);
                assert_eq!(a.tokens_saved, f.tokens_saved);
            }
        }
    }
}
