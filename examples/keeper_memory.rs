//! The keeper's heap by phase, natively: a counting global allocator (current and peak bytes)
//! around one cold prepare of a generated 10 MB, 5,000-message OpenAI agent history (the
//! generator of `bench/scale/history.js`, ported: the same xorshift32 and sizes). Prints the
//! peak of each phase and what stays held after it, to find what holds the wasm keeper's
//! memory (`node bench/scale.mjs --node` gives the wasm figures). A realloc is counted as the
//! copy it makes (both blocks live at once), as wasm's allocator does when it cannot grow a
//! block in place.
//!
//!   cargo run --release --example keeper_memory [messages] [bytes]
use std::time::Instant;

use context_keeper::context::fold::SummaryOutcome;
use context_keeper::context::keeper::{Call, Event, KeeperOptions, Need, Prepare};
use context_keeper::context::state::SessionState;
use context_keeper::context::Outcome;
use context_keeper::counting::Counter;
use context_keeper::messages::{parse_listed, Format, ListedMessage};
use peak_alloc::PeakAlloc;
use serde_json::{json, Value};

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

const MIB: f64 = 1024.0 * 1024.0;

struct Phases {
    start: Instant,
}

impl Phases {
    /// Starts a phase: its peak is measured from here.
    fn begin(&mut self) {
        ALLOC.reset_peak_usage();
        self.start = Instant::now();
    }
    fn end(&mut self, name: &str) {
        let now = ALLOC.current_usage();
        let peak = ALLOC.peak_usage();
        let ms = self.start.elapsed().as_secs_f64() * 1e3;
        println!(
            "| {name} | {ms:.0} | {:.1} MiB | {:.1} MiB |",
            peak as f64 / MIB,
            now as f64 / MIB
        );
        self.begin();
    }
}

/// xorshift32, as bench/scale/history.js.
fn random(seed: u32) -> impl FnMut() -> f64 {
    let mut x = if seed == 0 { 1 } else { seed };
    move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        f64::from(x) / 4_294_967_296.0
    }
}

const WORDS: &str = "the of and to in is that for it as with was on be by this are from at or an have not which but can all if will there their one has when more so about what out up into than them some would other its only then these two may could first any like over such also new most after used should where through how each between well very because does here just same both under those while last must being since part found few without down use against never another might until few system value result error return file line test";
const CODE: [&str; 26] = [
    "def ",
    "class ",
    "return ",
    "import ",
    "self.",
    "if ",
    "else:",
    "for ",
    " in range(",
    "print(",
    "assert ",
    "== ",
    "None",
    "True",
    "False",
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    " = ",
    "+ 1",
    "_id",
    "_name",
    "__init__",
];

fn output(next: &mut impl FnMut() -> f64, bytes: usize, t: usize) -> String {
    let words: Vec<&str> = WORDS.split(' ').collect();
    let mut lines = Vec::new();
    let mut size = 0;
    let mut n = 1;
    while size < bytes {
        let count = 4 + (next() * 12.0) as usize;
        let mut parts = Vec::new();
        for _ in 0..count {
            if next() < 0.6 {
                parts.push(words[(next() * words.len() as f64) as usize].to_owned());
            } else {
                let code = CODE[(next() * CODE.len() as f64) as usize];
                parts.push(format!("{code}{}", (next() * 1000.0) as usize));
            }
        }
        let line = format!("file_{}.py:{n}: {}", t % 97, parts.join(" "));
        size += line.len() + 1;
        lines.push(line);
        n += 1;
    }
    lines.join("\n")
}

fn history(messages: usize, bytes: usize) -> Vec<Value> {
    let mut next = random(23);
    let mut out = vec![
        json!({"role": "system", "content": "You are a coding agent. Use the bash tool to read and change files."}),
        json!({"role": "user", "content": "The test suite fails in src/file_3.py; find out why and fix it."}),
    ];
    let turns = (messages - out.len()) / 2;
    let average =
        (bytes as f64 - (turns / 100) as f64 * 120_000.0) / (turns - turns / 100) as f64 - 160.0;
    for t in 0..turns {
        let id = format!("call_{t}");
        let big = t % 100 == 99;
        let size = if big {
            120_000
        } else {
            (average * (0.25 + 1.5 * next())) as usize
        };
        let args = json!({"command": format!("cat -n src/file_{}.py", t % 97)}).to_string();
        out.push(json!({"role": "assistant", "content": format!("Turn {t}: looking at file_{}.py", t % 97), "tool_calls": [{"id": id, "type": "function", "function": {"name": "bash", "arguments": args}}]}));
        out.push(
            json!({"role": "tool", "tool_call_id": id, "content": output(&mut next, size, t)}),
        );
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let messages: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5_000);
    let bytes: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let mut counter = Counter::new();
    let list = history(messages, bytes);
    let size: usize = list.iter().map(|v| v.to_string().len()).sum();
    println!(
        "{} messages, {:.1} MB of JSON; heap {:.1} MiB with the history as `Value`s (as the wasm bindings read it)\n",
        list.len(),
        size as f64 / 1e6,
        ALLOC.current_usage() as f64 / MIB
    );
    // NOTE: the bindings read the JS list into `Value`s (one per message) and parse them; the
    // Values the history was generated as stand for what the JS heap holds.
    let read: Vec<ListedMessage> = list.into_iter().map(ListedMessage::Value).collect();
    let mut phases = Phases {
        start: Instant::now(),
    };
    println!("| phase | ms | heap peak in the phase | heap held after |");
    println!("| --- | ---: | ---: | ---: |");
    phases.begin();
    let conv = parse_listed(Format::OpenAi, None, read).expect("parses");
    phases.end("parse (Values in, Messages out)");
    let options = KeeperOptions {
        model: Some("gpt-4o".into()),
        ..KeeperOptions::default()
    };
    let call = Call {
        session_id: "s".into(),
        now: Some("2026-11-25T12:00:00Z".into()),
        flush: false,
    };
    let state = SessionState::from_bytes(None);
    let mut p = Prepare::start(conv, &options, call, state, &mut counter).expect("starts");
    phases.end("Prepare::start (count, pairing, offload plan)");
    loop {
        match p.next(&mut counter).expect("next") {
            Need::Done => break,
            Need::Saves(saves) => {
                let n = saves.len();
                let b: usize = saves.iter().map(|s| s.bytes.len()).sum();
                phases.end(&format!(
                    "next: saves asked ({n} saves, {:.1} MB)",
                    b as f64 / 1e6
                ));
                p.handle(Event::Saved(vec![Outcome::Saved; n]), &mut counter)
                    .expect("saved");
                phases.end("saved (offloads applied)");
            }
            Need::Flush(_) => unreachable!("no flush configured"),
            Need::Archive(saves) => {
                let n = saves.len();
                let b: usize = saves.iter().map(|s| s.bytes.len()).sum();
                phases.end(&format!(
                    "next: decide (prune, evict) + compaction plan ({n} archive saves, {:.1} MB)",
                    b as f64 / 1e6
                ));
                p.handle(Event::Archived(vec![Outcome::Saved; n]), &mut counter)
                    .expect("archived");
                phases.end("archived");
            }
            Need::Summarize(request) => {
                // NOTE: outside the phases: the request as the host gets it (the bindings
                // convert it message by message, never to one JSON text).
                let r = serde_json::to_string(request).map_or(0, |s| s.len());
                println!(
                    "|   (the summary request: {:.1} MB as JSON) | | | |",
                    r as f64 / 1e6
                );
                phases.begin();
                p.handle(Event::Summarized(SummaryOutcome::Heuristic), &mut counter)
                    .expect("summarized");
                phases.end("summarized (compaction applied, pruned again)");
            }
        }
    }
    let done = p.finish(&mut counter);
    phases.end("finish");
    let out: Vec<Value> = done
        .conversation
        .messages()
        .iter()
        .map(|m| m.clone().into_value())
        .collect();
    phases.end(&format!("output as Values ({} messages)", out.len()));
    let state = done.state.as_ref().map(|s| s.to_bytes());
    phases.end(&format!(
        "state bytes ({} B)",
        state.as_ref().map_or(0, Vec::len)
    ));
    println!(
        "\nreport: {:?}, {} -> {} tokens",
        done.report.decision, done.report.tokens_before, done.report.tokens_after
    );
    drop((out, done, state));
    phases.end("dropped the prepare (the counter's cache stays)");
}
