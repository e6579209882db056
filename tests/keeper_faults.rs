//! The fault campaign of the keeper (issue #23): generated conversations in every format (OpenAI,
//! Anthropic, AI SDK ModelMessage and UIMessage; tool exchanges with parallel calls, thinking
//! with signatures, images, provider-native compaction items, our markers, huge and tiny
//! results, unicode edge cases) are driven through [`Prepare`] to the end against generated
//! outcome schedules (saves that fail, write half or never confirm; summaries that fail, time
//! out, come back empty or enormous; flushes that fail; a driver that misreports). On every
//! prepare:
//! - no panic;
//! - the output is valid: the crate's validator finds no new problem, and an independent
//!   re-check written here (pairing, roles of the format, system first, thinking and native
//!   compaction items never edited) agrees;
//! - nothing is lost: every text of the input is in the output or in a save the schedule
//!   confirmed (offloads, trims, clears and evictions alike: every edit names its copy, and
//!   the copy reads back);
//! - the first user request (the task) is in the output byte for byte, unless it alone counts
//!   over a quarter of the window (DESIGN.md, Compact: then it is summarized, and its text is
//!   in the archive like the rest of the span); a report that says it was summarized says so of
//!   such a request only;
//! - the output is within the budget, or the report says why not;
//! - the same input, state and schedule give the same output, byte for byte.
//!
//! `cargo test --release --test keeper_faults` runs 4,100 sessions of 1 to 4 prepares, about
//! 10,000 prepares (a debug build 50 sessions); `KEEPER_FAULT_CASES` sets another count
//! (`KEEPER_FAULT_CASES=1000000` for the long run by hand) and `KEEPER_FAULT_SEED` another
//! seed.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};

use context_keeper::context::compact::CompactOutcome;
use context_keeper::context::decision::{stored_copy, DecisionMemo};
use context_keeper::context::flush::FlushOutcome;
use context_keeper::context::fold::SummaryOutcome;
use context_keeper::context::keeper::{
    Call, Event, KeeperOptions, Need, Prepare, Prepared, Thresholds,
};
use context_keeper::context::recovery::decode;
use context_keeper::context::state::SessionState;
use context_keeper::context::{Original, Outcome};
use context_keeper::counting::{count_conversation, CountCache, CountMessagesOptions, Counter};
use context_keeper::messages::{
    is_native_compaction, parse_messages, validate_conversation, Conversation, Format, Message,
    MessagesOptions, PartKind, Role, COMPACTION_TAG,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

mod common;
use common::{push, render, render_from, role_of, Conv, Dialect, Step, ToolCall};

// ---------------------------------------------------------------------------------------------
// Conversations

/// Text with the unicode edge cases: combining marks, ZWJ emoji, surrogate-pair characters,
/// right-to-left text, a lone BOM, NUL, CR LF, and JSON-escaped characters.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z0-9 _./-]{1,14}",
        2 => "[a-zé東🙂\u{301}\u{200d}\u{feff}\u{0}\r\n\t\"\\\\ שלום𝔘]{1,14}",
        1 => Just("👩\u{200d}👩\u{200d}👧\u{200d}👦 e\u{301} \u{202e}evil".to_owned()),
        1 => Just(String::new()),
    ]
}

/// A non-empty word of at least a few characters (what the lost-content check follows).
fn tag() -> impl Strategy<Value = String> {
    (word(), 0..100_000u32).prop_map(|(w, n)| format!("{w}#{n}"))
}

/// A result: empty, tiny, mid-sized, huge in lines, or one huge minified line.
fn result_text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        6 => tag(),
        3 => (tag(), 20..400usize).prop_map(|(w, n)| (0..n).map(|i| format!("{i} {w}\n")).collect()),
        1 => (tag(), 300..2_000usize).prop_map(|(w, n)| (0..n).map(|i| format!("{i}: {w} {w}\n")).collect()),
        1 => (tag(), 10_000..40_000usize).prop_map(|(w, n)| {
            let mut s = w.repeat(n / w.len().max(1));
            s.push_str(&w);
            s
        }),
    ]
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    (
        prop_oneof![
            3 => Just("bash"),
            1 => Just("write_file"),
            1 => Just("edit_file"),
            1 => Just("read_offloaded"),
            1 => Just("../../x"),
            1 => Just("__proto__"),
        ],
        tag(),
        prop_oneof![3 => tag(), 1 => (tag(), 100..3_000usize).prop_map(|(w, n)| w.repeat(n))],
        result_text(),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(tool, path, body, result, image, error)| ToolCall {
            tool,
            path,
            body,
            result,
            image,
            error,
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (tag(), prop::bool::weighted(0.1)).prop_map(|(text, image)| Step::User { text, image }),
        1 => tag().prop_map(Step::Assistant),
        8 => (
            proptest::option::of(tag()),
            proptest::option::of(tag()),
            prop::collection::vec(tool_call(), 1..4),
        )
            .prop_map(|(thinking, text, calls)| Step::Exchange { thinking, text, calls }),
        1 => tag().prop_map(Step::Native),
        1 => tag().prop_map(Step::Marker),
    ]
}

fn conv() -> impl Strategy<Value = Conv> {
    (
        prop_oneof![
            Just(Dialect::OpenAi),
            Just(Dialect::Anthropic),
            Just(Dialect::ModelMessage),
            Just(Dialect::UiMessage)
        ],
        proptest::option::of(tag()),
        (
            tag(),
            prop_oneof![
                9 => Just(String::new()),
                1 => (tag(), 1_000..20_000usize).prop_map(|(w, n)| w.repeat(n / 8)),
            ],
        ),
        prop::collection::vec(step(), 0..16),
    )
        .prop_map(|(dialect, system, (first, extra), rest)| {
            let first = Step::User {
                text: format!("{first}{extra}"),
                image: false,
            };
            Conv {
                dialect,
                system,
                steps: std::iter::once(first).chain(rest).collect(),
            }
        })
}

fn parse_options(format: Format) -> MessagesOptions {
    MessagesOptions {
        format: Some(format),
        allow_pending_calls: true,
    }
}

// ---------------------------------------------------------------------------------------------
// Schedules

/// How one store write goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SaveFault {
    Ok,
    /// It threw.
    Fail,
    /// Half the bytes landed, then it threw.
    Half,
    /// It never settled: the driver's timeout fired.
    Hang,
}

/// What the summarizer does.
#[derive(Clone, Debug, PartialEq, Eq)]
enum SummaryFault {
    Text(String),
    Fail,
    Timeout,
    Empty,
    Blank,
    Enormous(usize),
    /// No summarizer: the built-in heuristic.
    Heuristic,
}

/// What the memory flush does.
#[derive(Clone, Debug, PartialEq, Eq)]
enum FlushFault {
    Silent,
    NoText,
    Facts(String),
    Fail,
}

#[derive(Clone, Debug)]
struct Schedule {
    saves: Vec<SaveFault>,
    summaries: Vec<SummaryFault>,
    flushes: Vec<FlushFault>,
    /// The driver hands back fewer save outcomes than asked for.
    short_outcomes: bool,
    /// The driver calls the summarizer even when an archive save failed.
    eager_summary: bool,
}

fn schedule() -> impl Strategy<Value = Schedule> {
    let save = prop_oneof![
        6 => Just(SaveFault::Ok),
        1 => Just(SaveFault::Fail),
        1 => Just(SaveFault::Half),
        1 => Just(SaveFault::Hang),
    ];
    let summary = prop_oneof![
        4 => tag().prop_map(SummaryFault::Text),
        1 => Just(SummaryFault::Fail),
        1 => Just(SummaryFault::Timeout),
        1 => Just(SummaryFault::Empty),
        1 => Just(SummaryFault::Blank),
        1 => (10_000..400_000usize).prop_map(SummaryFault::Enormous),
        1 => Just(SummaryFault::Heuristic),
    ];
    let flush = prop_oneof![
        2 => Just(FlushFault::Silent),
        1 => Just(FlushFault::NoText),
        1 => tag().prop_map(FlushFault::Facts),
        1 => Just(FlushFault::Fail),
    ];
    (
        prop::collection::vec(save, 0..16),
        prop::collection::vec(summary, 0..4),
        prop::collection::vec(flush, 0..3),
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(saves, summaries, flushes, short_outcomes, eager_summary)| Schedule {
                saves,
                summaries,
                flushes,
                short_outcomes,
                eager_summary,
            },
        )
}

#[derive(Clone, Debug)]
struct Setup {
    window: u64,
    model: Option<&'static str>,
    flush: bool,
    breakpoints: bool,
    min_turns_between: usize,
    keep_turns: usize,
    reserve: Option<f64>,
    /// Prepares in the session, and whether each next one gets the previous output (AI SDK 7)
    /// instead of the full history (AI SDK 5 and 6).
    prepares: usize,
    chain_outputs: bool,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![
            1 => 300..2_000u64,
            3 => 2_000..20_000u64,
            2 => 20_000..200_000u64,
        ],
        prop_oneof![4 => Just(None), 1 => Just(Some("gpt-4o")), 1 => Just(Some("claude-sonnet-4-5"))],
        any::<bool>(),
        prop::bool::weighted(0.2),
        0..6usize,
        0..4usize,
        proptest::option::of(prop_oneof![Just(0.1), Just(500.0), Just(0.3)]),
        1..5usize,
        any::<bool>(),
    )
        .prop_map(
            |(
                window,
                model,
                flush,
                breakpoints,
                min_turns_between,
                keep_turns,
                reserve,
                prepares,
                chain_outputs,
            )| Setup {
                window,
                model,
                flush,
                breakpoints,
                min_turns_between,
                keep_turns,
                reserve,
                prepares,
                chain_outputs,
            },
        )
}

fn keeper_options(setup: &Setup) -> KeeperOptions {
    let mut options = KeeperOptions {
        model: setup.model.map(str::to_owned),
        context_window: Some(setup.window),
        thresholds: Thresholds::default(),
        min_turns_between: setup.min_turns_between,
        cache_breakpoints: setup.breakpoints,
        ..KeeperOptions::default()
    };
    options.prune.keep_last_assistant_turns = setup.keep_turns;
    if let Some(reserve) = setup.reserve {
        options.flush.reserve_tokens = reserve;
    }
    options
}

// ---------------------------------------------------------------------------------------------
// The driver: a simulated store and callbacks answering from the schedule

/// What the store holds and what the driver saw.
#[derive(Default)]
struct Store {
    /// Writes the store confirmed.
    confirmed: BTreeMap<Vec<String>, Vec<u8>>,
    /// Torn writes (never read as whole).
    torn: BTreeMap<Vec<String>, Vec<u8>>,
}

struct Faults<'a> {
    schedule: &'a Schedule,
    save: usize,
    summary: usize,
    flush: usize,
}

impl Faults<'_> {
    fn save(&mut self, store: &mut Store, key: &[String], bytes: &[u8]) -> Outcome {
        let fault = self
            .schedule
            .saves
            .get(self.save)
            .copied()
            .unwrap_or(SaveFault::Ok);
        self.save += 1;
        match fault {
            SaveFault::Ok => {
                store.confirmed.insert(key.to_vec(), bytes.to_vec());
                Outcome::Saved
            }
            SaveFault::Fail => Outcome::Failed("QuotaExceededError".into()),
            SaveFault::Half => {
                store
                    .torn
                    .insert(key.to_vec(), bytes[..bytes.len() / 2].to_vec());
                Outcome::Failed("connection reset".into())
            }
            SaveFault::Hang => Outcome::Failed("timed out after 10000 ms".into()),
        }
    }

    fn summary(&mut self) -> SummaryOutcome {
        let fault = self.schedule.summaries.get(self.summary).cloned();
        self.summary += 1;
        match fault.unwrap_or(SummaryFault::Text("the summary".into())) {
            SummaryFault::Text(t) => SummaryOutcome::Text(t),
            SummaryFault::Fail => SummaryOutcome::Failed("rate limited".into()),
            SummaryFault::Timeout => SummaryOutcome::Failed("timed out after 60000 ms".into()),
            SummaryFault::Empty => SummaryOutcome::Text(String::new()),
            SummaryFault::Blank => SummaryOutcome::Text(" \n\t ".into()),
            SummaryFault::Enormous(n) => SummaryOutcome::Text("summary line\n".repeat(n / 13)),
            SummaryFault::Heuristic => SummaryOutcome::Heuristic,
        }
    }

    fn flush(&mut self) -> FlushOutcome {
        let fault = self.schedule.flushes.get(self.flush).cloned();
        self.flush += 1;
        match fault.unwrap_or(FlushFault::Silent) {
            FlushFault::Silent => FlushOutcome::Replied(Some("SILENT".into())),
            FlushFault::NoText => FlushOutcome::Replied(None),
            FlushFault::Facts(t) => FlushOutcome::Replied(Some(t)),
            FlushFault::Fail => FlushOutcome::Failed("the agent threw".into()),
        }
    }
}

/// One prepare driven to the end, with the memo of earlier prepares (handed in and taken back,
/// as the wasm keeper does; a new one for a prepare without). Panics (failing the case) only
/// on a core error, which a conversation the keeper counted once must never give.
fn drive(
    input: Conversation,
    options: &KeeperOptions,
    state: &SessionState,
    flush: bool,
    faults: &mut Faults<'_>,
    store: &mut Store,
    memo: &mut DecisionMemo,
) -> Result<Prepared, String> {
    let mut counter = Counter::new();
    let call = Call {
        session_id: "fault-session".into(),
        now: Some("2026-11-26T12:00:00Z".into()),
        flush,
    };
    let mut p = Prepare::start(input, options, call, state.clone(), &mut counter)
        .map_err(|e| format!("start: {e}"))?
        .with_memo(std::mem::take(memo));
    for _ in 0..32 {
        match p.next(&mut counter).map_err(|e| format!("next: {e}"))? {
            Need::Done => {
                let mut done = p.finish(&mut counter);
                *memo = std::mem::take(&mut done.memo);
                return Ok(done);
            }
            Need::Saves(saves) => {
                let saves = saves.to_vec();
                let mut outcomes: Vec<Outcome> = saves
                    .iter()
                    .map(|s| faults.save(store, &s.key, &s.bytes))
                    .collect();
                if faults.schedule.short_outcomes {
                    outcomes.truncate(outcomes.len() / 2);
                }
                p.handle(Event::Saved(outcomes), &mut counter)
                    .map_err(|e| format!("saved: {e}"))?;
            }
            Need::Flush(_) => {
                let outcome = faults.flush();
                p.handle(Event::Flushed(outcome), &mut counter)
                    .map_err(|e| format!("flushed: {e}"))?;
            }
            Need::Archive(saves) => {
                // each save made, stored and dropped before the next is made
                let outcomes: Vec<Outcome> = saves
                    .iter()
                    .map(|s| faults.save(store, &s.key, &s.bytes))
                    .collect();
                let all_saved = outcomes.iter().all(|o| *o == Outcome::Saved);
                p.handle(Event::Archived(outcomes), &mut counter)
                    .map_err(|e| format!("archived: {e}"))?;
                if !all_saved && faults.schedule.eager_summary {
                    // a driver that asks the summarizer although the archive failed, and
                    // hands over a summary no step asked for
                    p.handle(Event::Summarized(faults.summary()), &mut counter)
                        .map_err(|e| format!("summarized: {e}"))?;
                }
            }
            Need::Summarize(_) => {
                p.handle(Event::Summarized(faults.summary()), &mut counter)
                    .map_err(|e| format!("summarized: {e}"))?;
            }
        }
    }
    Err("the prepare asked for more than 32 steps".into())
}

// ---------------------------------------------------------------------------------------------
// The checks

/// The part JSON without `cache_control` (the breakpoints the keeper may add).
fn plain(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), plain(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(plain).collect()),
        other => other.clone(),
    }
}

fn items(message: &Value) -> Vec<Value> {
    match message.get("content").or_else(|| message.get("parts")) {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

fn ty(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

fn str_of<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get(key).and_then(Value::as_str)
}

/// The messages of the written output (an Anthropic envelope's `messages`), and its system.
fn messages_of(value: &Value) -> (Option<Value>, Vec<Value>) {
    match value {
        Value::Array(list) => (None, list.clone()),
        Value::Object(env) => (
            env.get("system").cloned(),
            env.get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        ),
        _ => (None, Vec::new()),
    }
}

/// The independent re-check of a written conversation: roles of the format, system first,
/// every tool call answered after it and every result after its call.
fn recheck(dialect: Dialect, value: &Value) -> Result<(), String> {
    let (_, messages) = messages_of(value);
    if messages.is_empty() {
        return Err("no messages".into());
    }
    let roles: &[&str] = match dialect {
        Dialect::OpenAi => &["system", "developer", "user", "assistant", "tool"],
        Dialect::Anthropic => &["user", "assistant"],
        Dialect::ModelMessage => &["system", "user", "assistant", "tool"],
        Dialect::UiMessage => &["system", "user", "assistant"],
    };
    let mut seen_other = false;
    for (i, m) in messages.iter().enumerate() {
        let role = role_of(m);
        if !roles.contains(&role) {
            return Err(format!("message {i}: role {role:?} not in {dialect:?}"));
        }
        if role == "system" && seen_other {
            return Err(format!(
                "message {i}: a system message after the first turn"
            ));
        }
        seen_other |= role != "system";
    }
    let first = messages
        .iter()
        .find(|m| role_of(m) != "system")
        .map(role_of);
    if first != Some("user") {
        return Err(format!("the first turn is {first:?}, not the user's"));
    }
    match dialect {
        Dialect::OpenAi => {
            let mut open: Vec<String> = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                if role_of(m) == "tool" {
                    let id = str_of(m, "tool_call_id").unwrap_or("");
                    let Some(at) = open.iter().position(|o| o == id) else {
                        return Err(format!("message {i}: result {id:?} without its call"));
                    };
                    open.remove(at);
                    continue;
                }
                if !open.is_empty() {
                    return Err(format!("message {i}: calls {open:?} left unanswered"));
                }
                if let Some(Value::Array(calls)) = m.get("tool_calls") {
                    open = calls
                        .iter()
                        .map(|c| str_of(c, "id").unwrap_or("").to_owned())
                        .collect();
                }
            }
            if !open.is_empty() {
                return Err(format!("calls {open:?} left unanswered at the end"));
            }
        }
        Dialect::Anthropic | Dialect::ModelMessage => {
            if dialect == Dialect::Anthropic {
                for (i, pair) in messages.windows(2).enumerate() {
                    if role_of(&pair[0]) == role_of(&pair[1]) {
                        return Err(format!("messages {i} and {}: one role twice", i + 1));
                    }
                }
            }
            let (call_ty, result_ty, call_id, result_id) = if dialect == Dialect::Anthropic {
                ("tool_use", "tool_result", "id", "tool_use_id")
            } else {
                ("tool-call", "tool-result", "toolCallId", "toolCallId")
            };
            let mut open: Vec<String> = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                let parts = items(m);
                let results: Vec<String> = parts
                    .iter()
                    .filter(|p| ty(p) == result_ty)
                    .map(|p| str_of(p, result_id).unwrap_or("").to_owned())
                    .collect();
                for id in &results {
                    let Some(at) = open.iter().position(|o| o == id) else {
                        return Err(format!("message {i}: result {id:?} without its call"));
                    };
                    open.remove(at);
                }
                let calls: Vec<String> = parts
                    .iter()
                    .filter(|p| ty(p) == call_ty)
                    .map(|p| str_of(p, call_id).unwrap_or("").to_owned())
                    .collect();
                // a message that carries no result closes the previous calls
                if results.is_empty() && !open.is_empty() {
                    return Err(format!("message {i}: calls {open:?} left unanswered"));
                }
                if !calls.is_empty() && !open.is_empty() {
                    return Err(format!("message {i}: calls {open:?} left unanswered"));
                }
                open.extend(calls);
            }
            if !open.is_empty() {
                return Err(format!("calls {open:?} left unanswered at the end"));
            }
        }
        Dialect::UiMessage => {
            for (i, m) in messages.iter().enumerate() {
                for p in items(m) {
                    let t = ty(&p);
                    if t.starts_with("tool-") || t == "dynamic-tool" {
                        let state = str_of(&p, "state").unwrap_or("");
                        let ok = match state {
                            "output-available" => p.get("output").is_some(),
                            "output-error" => p.get("errorText").is_some(),
                            _ => false,
                        };
                        if !ok || str_of(&p, "toolCallId").is_none() {
                            return Err(format!("message {i}: tool part in state {state:?}"));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Parts no tier may edit: thinking and reasoning (with their signatures) and native
/// compaction items. Each in the output must be one of the input's, byte for byte.
fn sealed(value: &Value) -> Vec<Value> {
    let (_, messages) = messages_of(value);
    messages
        .iter()
        .flat_map(items)
        .filter(|p| {
            matches!(ty(p), "thinking" | "redacted_thinking" | "reasoning")
                || is_native_compaction(p)
        })
        .map(|p| plain(&p))
        .collect()
}

/// Every text of the input worth following: string leaves of its parts (and of string
/// contents), with the index of their message (`None`: the envelope's system prompt) and the
/// call id of the part they are in.
fn texts(conv: &Conversation) -> Vec<(Option<usize>, String, Option<String>)> {
    fn leaves(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) if s.chars().count() >= 3 => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
            Value::Object(map) => {
                for (k, v) in map {
                    if !matches!(
                        k.as_str(),
                        "type"
                            | "role"
                            | "id"
                            | "toolCallId"
                            | "tool_call_id"
                            | "tool_use_id"
                            | "state"
                    ) {
                        leaves(v, out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let messages = conv.system().into_iter().map(|m| (None, m));
    let messages = messages.chain(
        conv.messages()
            .iter()
            .enumerate()
            .map(|(i, m)| (Some(i), m)),
    );
    for (at, message) in messages {
        for part in message.parts() {
            let mut found = Vec::new();
            leaves(part.raw(), &mut found);
            // An OpenAI call's arguments are a JSON string: follow their values.
            if part.kind() == PartKind::ToolCall {
                if let Some(args) = part
                    .raw()
                    .pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .and_then(|a| serde_json::from_str::<Value>(a).ok())
                {
                    found.retain(|s| !s.starts_with('{'));
                    leaves(&args, &mut found);
                }
            }
            let id = part.call_id().map(str::to_owned);
            out.extend(found.into_iter().map(|s| (at, s, id.clone())));
        }
        if message.parts().is_empty() {
            let mut found = Vec::new();
            leaves(&message.to_value(), &mut found);
            out.extend(found.into_iter().map(|s| (at, s, None)));
        }
    }
    out
}

fn escaped(text: &str) -> String {
    let json = serde_json::to_string(text).unwrap_or_default();
    json[1..json.len() - 1].to_owned()
}

/// The whole invariant set on one prepare: `input` went in, `out` came back, `store` holds
/// what the schedule confirmed.
fn check(
    dialect: Dialect,
    input: &Conversation,
    out: &Prepared,
    store: &Store,
    options: &KeeperOptions,
) -> Result<(), String> {
    let format = dialect.format();
    let written = out.conversation.to_value();
    // valid, by our validator: no problem the input did not have
    let problems = |c: &Conversation| -> Vec<String> {
        validate_conversation(c, &parse_options(format))
            .iter()
            .map(|p| format!("{:?}", p.kind))
            .collect()
    };
    let after = problems(&out.conversation);
    if !after.is_empty() {
        return Err(format!(
            "the validator: {after:?} (input: {:?})",
            problems(input)
        ));
    }
    // the written output reads back in its format, and passes the re-check
    let back = parse_messages(&written, &parse_options(format))
        .map_err(|e| format!("the output does not parse back: {e}"))?;
    if back.to_value() != written {
        return Err("the output does not round-trip".into());
    }
    recheck(dialect, &written)?;
    // the system prompt stays first, as it was
    let (in_system, in_messages) = messages_of(&input.to_value());
    let (out_system, out_messages) = messages_of(&written);
    if in_system.as_ref().map(plain) != out_system.as_ref().map(plain) {
        return Err("the envelope's system prompt changed".into());
    }
    if let Some(first) = in_messages.first().filter(|m| role_of(m) == "system") {
        if out_messages.first().map(plain) != Some(plain(first)) {
            return Err("the system message is not first, as it was".into());
        }
    }
    // thinking, signatures and native compaction items: never edited
    let sealed_in = sealed(&input.to_value());
    for part in sealed(&written) {
        if !sealed_in.contains(&part) {
            return Err(format!("a sealed part was edited: {part}"));
        }
    }
    // untouched messages are the input's own, by index
    for (i, origin) in out.origin.iter().enumerate() {
        if let Some(j) = origin {
            if out.conversation.messages().get(i) != input.messages().get(*j) {
                return Err(format!("output {i} claims to be input {j} but is not"));
            }
        }
    }
    // nothing lost: every edit's original is in a save the store confirmed, and reads back
    let report = &out.report;
    for edit in report
        .offloaded
        .iter()
        .chain(&report.pruned)
        .chain(&report.evicted)
    {
        let Original::Store { key, id } = &edit.original else {
            return Err(format!(
                "an edit whose original is not in the store: {edit:?}"
            ));
        };
        let bytes = store.confirmed.get(key).ok_or_else(|| {
            format!(
                "{:?} {id} points at a key never confirmed: {key:?}",
                edit.action
            )
        })?;
        decode(id, bytes).map_err(|e| format!("{:?} {id} does not read back: {e}", edit.action))?;
    }
    let output_json = out.conversation.to_json_string();
    let saved: Vec<String> = store
        .confirmed
        .iter()
        .map(|(key, bytes)| match key.get(2).map(String::as_str) {
            Some("offload") | Some("results") => decode(&key[3], bytes)
                .map(|(_, t)| t.to_owned())
                .unwrap_or_else(|_| String::from_utf8_lossy(bytes).into_owned()),
            _ => String::from_utf8_lossy(bytes).into_owned(),
        })
        .collect();
    // NOTE: a message the output holds as it was (its origin) keeps all its text, and a
    // previous compaction's marker may be folded into the next summary (its originals are in
    // the archive it names).
    let kept: BTreeSet<usize> = out.origin.iter().flatten().copied().collect();
    let compacted = report
        .compaction
        .as_ref()
        .is_some_and(|c| c.outcome == CompactOutcome::Compacted);
    for (at, text, id) in texts(input) {
        if at.is_none_or(|i| kept.contains(&i)) {
            continue;
        }
        if compacted && text.starts_with(COMPACTION_TAG) {
            continue;
        }
        let esc = escaped(&text);
        // (an OpenAI call's arguments are JSON in a JSON string: escaped twice)
        if output_json.contains(&esc) || output_json.contains(&escaped(&esc)) {
            continue;
        }
        if saved
            .iter()
            .any(|s| s.contains(&text) || s.contains(&esc) || s.contains(&escaped(&esc)))
        {
            continue;
        }
        // a text a prepare cut before (a returned history) names the copy of its original
        if let Some(id) = stored_copy(&text) {
            if store
                .confirmed
                .keys()
                .any(|k| k.last().map(String::as_str) == Some(id))
            {
                continue;
            }
        }
        let shown: String = text.chars().take(80).collect();
        return Err(format!(
            "lost: {shown:?} ({} chars, call {id:?}) is in neither the output nor a confirmed save",
            text.chars().count()
        ));
    }
    // the task stays
    first_request(dialect, input, out, options)?;
    // within the budget, or a reason
    if report.managed {
        let budget = report.budget.ok_or("a managed report without its budget")?;
        if report.fits != (report.tokens_after <= budget.compact_at) {
            return Err(format!(
                "fits is {} with {} tokens for a budget of {}",
                report.fits, report.tokens_after, budget.compact_at
            ));
        }
        if !report.fits && report.over_budget.as_deref().is_none_or(str::is_empty) {
            return Err("over the budget with no reason".into());
        }
        let recount = count_conversation(
            &out.conversation,
            &CountMessagesOptions {
                model: options.model.clone(),
                format: Some(format),
                ..CountMessagesOptions::default()
            },
            &mut CountCache::new(64),
        )
        .map_err(|e| format!("the output cannot be counted: {e}"))?;
        if recount.total != report.tokens_after {
            return Err(format!(
                "tokensAfter {} but the output counts {}",
                report.tokens_after, recount.total
            ));
        }
    } else if report.reason.is_none() {
        return Err("unmanaged with no reason".into());
    }
    Ok(())
}

/// The first text of the first message after the leading system messages, when that message
/// is a user's request (no tool results, not a marker): its index and text.
fn task_of(messages: &[Message]) -> Option<(usize, &str)> {
    let at = messages
        .iter()
        .take_while(|m| m.role() == Role::System)
        .count();
    let first = messages.get(at).filter(|m| m.role() == Role::User)?;
    if first
        .parts()
        .iter()
        .any(|p| p.kind() == PartKind::ToolResult)
    {
        return None;
    }
    let text = first
        .parts()
        .first()
        .filter(|p| p.kind() == PartKind::Text)
        .and_then(|p| p.text())?;
    (!text.starts_with(COMPACTION_TAG)).then_some((at, text))
}

/// DESIGN.md (Compact): "the system prompt and the first user message (what the agent was asked
/// to do) are kept verbatim ahead of the summary, unless that message alone is over a quarter
/// of the window; then it is summarized". So the input's first request is the output's, byte
/// for byte (the first text of the first message after the system prompt; in Anthropic's
/// format the marker may follow it in the same message), unless it counts over a quarter of the
/// window; and a report that says it was summarized says so of such a request only.
fn first_request(
    dialect: Dialect,
    input: &Conversation,
    out: &Prepared,
    options: &KeeperOptions,
) -> Result<(), String> {
    let Some((at, task)) = task_of(input.messages()) else {
        return Ok(());
    };
    let verbatim = task_of(out.conversation.messages()).is_some_and(|(_, t)| t == task);
    let summarized = out
        .report
        .compaction
        .as_ref()
        .is_some_and(|c| c.first_request_summarized);
    if verbatim && !summarized {
        return Ok(());
    }
    let window = out
        .report
        .budget
        .map(|b| b.window)
        .ok_or("the first request changed with no budget")?;
    // NOTE: the request alone, as the rule says: in the whole input a provider-native
    // compaction after it (Anthropic's `compaction` block) counts it as 0, which would hold a
    // request summarized by an earlier prepare (when it was over a quarter) to being verbatim.
    let mut alone = input.clone();
    alone.messages_mut().truncate(at + 1);
    let count = count_conversation(
        &alone,
        &CountMessagesOptions {
            model: options.model.clone(),
            format: Some(dialect.format()),
            ..CountMessagesOptions::default()
        },
        &mut CountCache::new(64),
    )
    .map_err(|e| format!("the input cannot be counted: {e}"))?;
    let tokens = count.per_message.get(at).copied().unwrap_or(0);
    if tokens.saturating_mul(4) <= window {
        let shown: String = task.chars().take(80).collect();
        return Err(format!(
            "the first request {shown:?} ({tokens} tokens, not over a quarter of the {window}-token window) is {}",
            if verbatim {
                "reported summarized"
            } else {
                "not in the output verbatim"
            }
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The campaign

#[derive(Clone, Debug)]
struct Case {
    conv: Conv,
    /// Steps added between prepares.
    more: Vec<Vec<Step>>,
    setup: Setup,
    schedule: Schedule,
    /// Run the first prepare twice, to check it is deterministic.
    twice: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        conv(),
        prop::collection::vec(prop::collection::vec(step(), 1..4), 3),
        setup(),
        schedule(),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(conv, more, setup, schedule, twice)| Case {
            conv,
            more,
            setup,
            schedule,
            twice,
        })
}

/// What the campaign saw: prepares by decision, compaction and flush outcome, failures.
type Tally = BTreeMap<String, usize>;

fn tally(seen: &mut Tally, out: &Prepared, dialect: Dialect) {
    let r = &out.report;
    let mut bump = |k: String| *seen.entry(k).or_default() += 1;
    bump(format!("dialect {dialect:?}"));
    bump(format!("decision {:?}", r.decision));
    bump(format!("fits {}", r.fits));
    if let Some(c) = &r.compaction {
        bump(format!("compaction {:?}", c.outcome));
        if c.first_request_summarized {
            bump("first request summarized".into());
        }
    }
    if let Some(f) = &r.flush {
        bump(format!("flush failed {}", f.failure.is_some()));
    }
    if !r.failures.is_empty() {
        bump("offload failures".into());
    }
    if !r.offloaded.is_empty() {
        bump("offloaded".into());
    }
    if !r.pruned.is_empty() {
        bump("pruned".into());
    }
    if !r.evicted.is_empty() {
        bump("evicted".into());
    }
}

/// Runs one session and checks every prepare; returns the number of prepares.
fn run_case(case: &Case, seen: &mut Tally) -> Result<usize, String> {
    let format = case.conv.dialect.format();
    let options = keeper_options(&case.setup);
    let mut store = Store::default();
    let mut faults = Faults {
        schedule: &case.schedule,
        save: 0,
        summary: 0,
        flush: 0,
    };
    let mut state = SessionState::default();
    let mut history = case.conv.clone();
    let mut input = parse_messages(&render(&history), &parse_options(format))
        .map_err(|e| format!("the generated input does not parse: {e}"))?;
    let mut runs = 0;
    // NOTE: as the wasm keeper runs: one memo across the prepares, each message worked out
    // ahead as it arrives (its fast path), and the messages it read before the same objects
    // (the same `Message`), so the memo is used, not only filled.
    let mut memo = DecisionMemo::new();
    let mut previous: Vec<Message> = Vec::new();
    for k in 0..case.setup.prepares {
        let before_faults = (faults.save, faults.summary, faults.flush);
        for message in input.messages_mut() {
            if let Some(same) = previous.iter().find(|p| *p == message) {
                *message = same.clone();
            }
            memo.prime(message);
        }
        previous = input.messages().to_vec();
        let out = drive(
            input.clone(),
            &options,
            &state,
            case.setup.flush,
            &mut faults,
            &mut store,
            &mut memo,
        )?;
        runs += 1;
        tally(seen, &out, case.conv.dialect);
        check(case.conv.dialect, &input, &out, &store, &options)
            .map_err(|e| format!("prepare {k}: {e}\nreport: {:?}", out.report))?;
        // deterministic: the same input, state and schedule give the same bytes, with the
        // memo of the earlier prepares or without
        if case.twice {
            let mut again = Faults {
                schedule: &case.schedule,
                save: before_faults.0,
                summary: before_faults.1,
                flush: before_faults.2,
            };
            let twice = drive(
                input.clone(),
                &options,
                &state,
                case.setup.flush,
                &mut again,
                &mut Store::default(),
                &mut DecisionMemo::new(),
            )?;
            if twice.conversation.to_json_string() != out.conversation.to_json_string() {
                return Err(format!("prepare {k}: not deterministic"));
            }
            if twice.report != out.report {
                return Err(format!(
                    "prepare {k}: the report differs without the memo\nwith: {:?}\nwithout: {:?}",
                    out.report, twice.report
                ));
            }
        }
        if let Some(next) = out.state.clone() {
            state = next;
        }
        let Some(more) = case.more.get(k) else { break };
        if k + 1 >= case.setup.prepares {
            break;
        }
        history.steps.extend(more.iter().cloned());
        input = if case.setup.chain_outputs {
            // AI SDK 7: the last output and the new steps
            let mut value = out.conversation.to_value();
            let added = render_from(
                &Conv {
                    dialect: history.dialect,
                    system: None,
                    steps: more.clone(),
                },
                history.steps.len() - more.len(),
            );
            let (_, added) = messages_of(&added);
            let list = match &mut value {
                Value::Object(env) => env.get_mut("messages"),
                list => Some(list),
            };
            if let Some(Value::Array(list)) = list {
                for message in added {
                    push(list, history.dialect, message);
                }
            }
            parse_messages(&value, &parse_options(format))
                .map_err(|e| format!("the chained input does not parse: {e}"))?
        } else {
            parse_messages(&render(&history), &parse_options(format))
                .map_err(|e| format!("the grown input does not parse: {e}"))?
        };
    }
    Ok(runs)
}

/// Sessions to run: `KEEPER_FAULT_CASES`, else 4,100 in a release build (what CI runs,
/// `cargo test --release --test keeper_faults`: about 10,000 prepares, a session averaging 2.5)
/// and 50 in a debug one (`cargo test`, where the core runs many times slower).
fn cases() -> u32 {
    let default = if cfg!(debug_assertions) { 50 } else { 4_100 };
    std::env::var("KEEPER_FAULT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn the_keeper_survives_every_fault_schedule() {
    let cases = cases();
    let config = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/keeper_faults.proptest-regressions",
        ))),
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    // NOTE: a fixed seed keeps CI reproducible; KEEPER_FAULT_SEED picks another for long runs.
    let seed: u64 = std::env::var("KEEPER_FAULT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(23);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let started = std::time::Instant::now();
    let prepares = std::cell::Cell::new(0usize);
    let sessions = std::cell::Cell::new(0usize);
    let seen = std::cell::RefCell::new(Tally::new());
    let result = runner.run(&case(), |case| {
        let runs = run_case(&case, &mut seen.borrow_mut()).map_err(TestCaseError::fail)?;
        prepares.set(prepares.get() + runs);
        sessions.set(sessions.get() + 1);
        if sessions.get() % 10_000 == 0 {
            eprintln!(
                "keeper_faults: {} sessions, {} prepares passed, {:.0} s",
                sessions.get(),
                prepares.get(),
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    });
    // NOTE: the runner replays the seeds of tests/keeper_faults.proptest-regressions before the
    // `cases` new ones, and on a failure runs the shrunk cases too: the closure's runs are not
    // the sessions generated.
    let runs = sessions.get();
    match &result {
        Ok(()) => eprintln!(
            "keeper_faults: all {cases} sessions passed (and {} replayed from the regressions file), {} prepares, seed {seed}, {:.1} s",
            runs.saturating_sub(cases as usize),
            prepares.get(),
            started.elapsed().as_secs_f64()
        ),
        Err(_) => eprintln!(
            "keeper_faults: failed after {runs} session runs (replays and shrinking included), seed {seed}, {:.1} s",
            started.elapsed().as_secs_f64()
        ),
    }
    for (what, n) in seen.borrow().iter() {
        eprintln!("  {what}: {n}");
    }
    if let Err(e) = result {
        panic!("{e}");
    }
    // NOTE: a campaign that passes without reaching what it is for proves nothing: at the sizes
    // CI runs (300 sessions and up) every decision, outcome, failure and format must have come
    // up at least once (300 sessions saw each at least 9 times).
    if cases >= 300 {
        let seen = seen.borrow();
        let missing: Vec<&str> = COVERAGE
            .iter()
            .copied()
            .filter(|what| !seen.contains_key(*what))
            .collect();
        assert!(
            missing.is_empty(),
            "the campaign never reached: {missing:?}"
        );
    }
}

/// What every campaign of 300 sessions or more must reach (keys of [`tally`]).
const COVERAGE: [&str; 23] = [
    "dialect OpenAi",
    "dialect Anthropic",
    "dialect ModelMessage",
    "dialect UiMessage",
    "decision Under",
    "decision Held",
    "decision Pruned",
    "decision Cleared",
    "decision Offloaded",
    "decision Compacted",
    "decision CompactionFailed",
    "compaction Compacted",
    "compaction Failed",
    "compaction Unchanged",
    "first request summarized",
    "fits true",
    "fits false",
    "flush failed false",
    "flush failed true",
    "offload failures",
    "offloaded",
    "pruned",
    "evicted",
];

#[path = "../fuzz/fuzz_targets/prepare_input.rs"]
mod prepare_input;

/// The `prepare` fuzz target's seeds and every crash it found, replayed on stable.
#[test]
fn fuzz_fixtures_replay() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-prepare");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        eprintln!("{}", path.display());
        prepare_input::check(&bytes);
        n += 1;
    }
    assert!(n > 0, "no fixture in {}", dir.display());
}
