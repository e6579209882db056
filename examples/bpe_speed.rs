//! Host speed of the `bpe` engine against tiktoken-rs, per text class, and its load time.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-bpe cargo run --release --example bpe_speed -- [DIR]
//! ```
//!
//! DIR holds the corpora (`english.txt`, `code.txt`, `json.txt`, `multilingual.txt`; any
//! missing one is skipped). Every count is also checked against tiktoken-rs.

use std::time::{Duration, Instant};

use context_keeper::{bpe, Encoding};

fn mb_per_s(bytes: usize, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64()
}

/// Runs `f` at least `min` long (and at least twice); the best time of one run.
fn best<T>(min: Duration, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let mut best = Duration::MAX;
    let mut runs = 0;
    loop {
        let t = Instant::now();
        let out = f();
        best = best.min(t.elapsed());
        runs += 1;
        if runs >= 2 && start.elapsed() >= min {
            return (best, out);
        }
    }
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/bpe-corpus".into());

    // First use in this process: the load is part of the first call.
    for encoding in Encoding::ALL {
        let t = Instant::now();
        let n = bpe::count("hello world", encoding).unwrap();
        println!(
            "first count ({encoding}, includes load): {:.2} ms ({n} tokens)",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    for encoding in Encoding::ALL {
        let t = Instant::now();
        let reference = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base().unwrap(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base().unwrap(),
        };
        let n = reference.encode_ordinary("hello world").len();
        println!(
            "tiktoken-rs first count ({encoding}, includes load): {:.2} ms ({n} tokens)",
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    let mut classes: Vec<(String, String)> = Vec::new();
    for name in ["english", "code", "json", "multilingual"] {
        match std::fs::read(format!("{dir}/{name}.txt")) {
            Ok(bytes) => classes.push((name.into(), String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) => println!("skipping {name}: {e}"),
        }
    }
    let mb = 1 << 20;
    classes.push(("1MB 'a'".into(), "a".repeat(mb)));
    classes.push(("1MB ' '".into(), " ".repeat(mb)));
    classes.push(("1MB digits".into(), "1234567890".repeat(mb / 10)));
    classes.push(("1MB '!'".into(), "!".repeat(mb)));
    classes.push(("1MB 'ab'".into(), "ab".repeat(mb / 2)));
    classes.push(("1MB '中'".into(), "中".repeat(mb / 3)));
    classes.push(("1MB 'é'".into(), "é".repeat(mb / 2)));

    // tiktoken-rs fails (fancy-regex's backtrack limit) on long white-space runs.
    let no_reference = ["1MB ' '"];
    let only = std::env::var("BPE_ONLY").ok();
    let min = Duration::from_millis(300);
    println!(
        "\n{:<14} {:>10} {:>9} {:>12} {:>12} {:>8}",
        "class", "encoding", "MB", "ours MB/s", "tiktoken-rs", "ratio"
    );
    for (name, text) in &classes {
        if only.as_ref().is_some_and(|o| !name.starts_with(o.as_str())) {
            continue;
        }
        for encoding in Encoding::ALL {
            let (ours_t, ours) = best(min, || bpe::count(text, encoding).unwrap());
            let a = mb_per_s(text.len(), ours_t);
            if no_reference.contains(&name.as_str())
                || std::env::var_os("BPE_NO_REFERENCE").is_some()
            {
                println!(
                    "{name:<14} {:>10} {:>9.2} {a:>12.1} {:>12} {ours} tokens",
                    encoding.name(),
                    text.len() as f64 / 1e6,
                    "-"
                );
                continue;
            }
            let reference = match encoding {
                Encoding::O200kBase => tiktoken_rs::o200k_base().unwrap(),
                Encoding::Cl100kBase => tiktoken_rs::cl100k_base().unwrap(),
            };
            let (ref_t, want) = best(Duration::ZERO, || reference.encode_ordinary(text).len());
            assert_eq!(
                ours, want,
                "{name} {encoding}: ours {ours}, tiktoken-rs {want}"
            );
            let b = mb_per_s(text.len(), ref_t);
            println!(
                "{name:<14} {:>10} {:>9.2} {a:>12.1} {b:>12.1} {:>7.1}x",
                encoding.name(),
                text.len() as f64 / 1e6,
                a / b
            );
        }
    }
}
