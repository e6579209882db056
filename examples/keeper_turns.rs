//! The keeper's core per turn, natively: an OpenAI agent history grows by a call and its
//! result per turn (texts from this repository's own files) and is prepared before each call,
//! every save confirmed and the heuristic summary used. Prints the median, p99 and max time
//! per turn and the slowest turns by decision, to profile the core without the JS boundary
//! (`perf record cargo run --release --example keeper_turns`).
//!
//!   cargo run --release --example keeper_turns [messages] [window]
use std::time::Instant;

use context_keeper::context::fold::SummaryOutcome;
use context_keeper::context::keeper::{Call, Event, KeeperOptions, Need, Prepare};
use context_keeper::context::state::SessionState;
use context_keeper::context::Outcome;
use context_keeper::counting::Counter;
use context_keeper::messages::{parse_listed, Format, ListedMessage, Message};
use serde_json::json;

fn texts() -> Vec<String> {
    let mut out = Vec::new();
    for dir in [
        "src",
        "src/context",
        "src/messages",
        "src/counting",
        "pkg-template/context",
    ] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            if let Ok(text) = std::fs::read_to_string(&path) {
                // pieces of 2-12 KB, as tool output is
                for chunk in text.as_bytes().chunks(2_000 + text.len() % 10_000) {
                    out.push(String::from_utf8_lossy(chunk).into_owned());
                }
            }
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let messages: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let window: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(128_000);
    let texts = texts();
    let pick = |i: usize| texts[(i * 7919) % texts.len()].clone();
    let options = KeeperOptions {
        model: Some("gpt-4o".into()),
        context_window: Some(window),
        ..KeeperOptions::default()
    };
    let mut list = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Read every file and report."}),
    ];
    let mut counter = Counter::new();
    let mut kept: Vec<Message> = Vec::new();
    // NOTE: as the wasm keeper does, each prepare hands back what its cuts made of the
    // messages, for the next one.
    let mut memo = context_keeper::context::decision::DecisionMemo::new();
    let mut state_bytes: Option<Vec<u8>> = None;
    let mut costs: Vec<(f64, String, usize)> = Vec::new();
    let mut t = 0;
    while list.len() < messages {
        let id = format!("call_{t}");
        let head: String = pick(t).chars().take(200).collect();
        list.push(json!({"role": "assistant", "content": format!("Step {t}: {head}"), "tool_calls": [{"id": id, "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\":\"cat src/file_{}.rs\"}}", t % 40)}}]}));
        list.push(json!({"role": "tool", "tool_call_id": id, "content": pick(t + 1)}));
        t += 1;
        let start = Instant::now();
        // NOTE: as the wasm keeper reads a history it saw before: the messages it parsed last
        // time are taken as they were, only the new ones are parsed.
        let listed = (list.iter().enumerate())
            .map(|(i, value)| match kept.get(i) {
                Some(message) => ListedMessage::Parsed(message.clone()),
                None => ListedMessage::Value(value.clone()),
            })
            .collect();
        let conv = parse_listed(Format::OpenAi, None, listed).expect("parses");
        kept = conv.messages().to_vec();
        let parsed = start.elapsed().as_secs_f64() * 1e3;
        let state = SessionState::from_bytes(state_bytes.as_deref());
        let call = Call {
            session_id: "s".into(),
            now: Some("2026-11-25T12:00:00Z".into()),
            flush: false,
        };
        let mut p = Prepare::start(conv, &options, call, state, &mut counter)
            .expect("starts")
            .with_memo(std::mem::take(&mut memo));
        loop {
            let event = match p.next(&mut counter).expect("next") {
                Need::Done => break,
                Need::Saves(saves) => Event::Saved(vec![Outcome::Saved; saves.len()]),
                Need::Flush(_) => unreachable!("no flush configured"),
                Need::Archive(saves) => Event::Archived(vec![Outcome::Saved; saves.len()]),
                Need::Summarize(_) => Event::Summarized(SummaryOutcome::Heuristic),
            };
            p.handle(event, &mut counter).expect("handled");
        }
        let mut done = p.finish(&mut counter);
        memo = std::mem::take(&mut done.memo);
        if let Some(state) = &done.state {
            state_bytes = Some(state.to_bytes());
        }
        let ms = start.elapsed().as_secs_f64() * 1e3;
        costs.push((
            ms,
            format!("{:?} (parse {parsed:.2} ms)", done.report.decision),
            list.len(),
        ));
    }
    let mut sorted: Vec<f64> = costs.iter().map(|c| c.0).collect();
    sorted.sort_by(f64::total_cmp);
    let at = |p: f64| sorted[(((p / 100.0) * sorted.len() as f64) as usize).min(sorted.len() - 1)];
    println!(
        "turns {} messages {}: median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        costs.len(),
        list.len(),
        at(50.0),
        at(99.0),
        sorted[sorted.len() - 1]
    );
    let mut slow: Vec<_> = costs.iter().collect();
    slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ms, what, n) in slow.iter().take(12) {
        println!("{ms:8.2} ms  {n:5} messages  {what}");
    }
}
