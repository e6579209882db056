//! Calibrates and checks the table-free estimator (`src/estimate.rs`) against exact o200k_base
//! counts, per message of the bench corpora.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-estimate cargo run --release --example estimate_fit -- \
//!     [DIR] [--fit] [--worst] [--pairs]
//! ```
//!
//! DIR (default `bench/.cache`) holds the bench corpora as `bench/corpus.mjs` caches them:
//! `english.v6.json`, `code.v6.json`, `json.v6.json`, `multilingual.v6.json`, each
//! `{"messages": [string, ...]}` (run `node bench/run.mjs --quick` once to build them). Blocks of
//! 8 consecutive messages alternate between a fit half and a held-out half; the multilingual
//! corpus has one message per language, so no language is in both halves.
//!
//! It prints, per class and half, the mean and p90 of |estimate - exact| / exact and the signed
//! mean (+ = overestimates), multilingual also per script family, then the speed of the estimate
//! against exact counting on the host.
//!
//! With `--fit` it first refits `WEIGHTS` on the fit half only and prints the new array to paste
//! into `src/estimate.rs`; the report then uses the refitted weights. The fit minimises the mean
//! relative error per message, each class weighted equally (iteratively reweighted least
//! squares for the L1 objective, a small ridge pulling towards the current weights so that
//! counters the corpora barely exercise keep their hand-set values, weights kept >= 0). The
//! command used: `FIT_ITERS=10 FIT_RIDGE=0.01 FIT_ABS=0.001 ... -- --fit`. Put the weights the
//! docs of `WEIGHTS` name as set by hand back after pasting.
//!
//! `--worst` also prints the held-out messages each class misses most. `--pairs` prints the
//! `RARE` letter-pair table from the fit half of the english and code corpora.

// Index loops read best in the small linear algebra below.
#![allow(clippy::needless_range_loop)]

// The estimator's source, compiled into this example to reach its counters and weights.
#[allow(dead_code)]
#[path = "../src/estimate.rs"]
mod estimate;

use std::time::Instant;

use context_keeper::{count_tokens, Encoding};
use estimate::{features, FEATURES, WEIGHTS};

const CLASSES: [&str; 4] = ["english", "code", "json", "multilingual"];

struct Sample {
    class: usize,
    fit: bool,
    text: String,
    exact: f64,
    f: [u64; FEATURES],
    family: &'static str,
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
    let t: f64 = f.iter().zip(w).map(|(&n, &w)| n as f64 * w).sum();
    t.round().max(1.0)
}

fn stats(errs: &mut [(f64, f64)]) -> (f64, f64, f64, usize) {
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
            let mut errs: Vec<(f64, f64)> = samples
                .iter()
                .filter(|s| s.class == ci && s.fit == half)
                .map(|s| {
                    let e = est(s);
                    ((e - s.exact).abs() / s.exact, (e - s.exact) / s.exact)
                })
                .collect();
            let (m, p, sg, n) = stats(&mut errs);
            let h = if half { "fit" } else { "held-out" };
            println!("| {class} | {h} | {n} | {m:.1} | {p:.1} | {sg:+.1} |");
        }
    }
    let mut fams: Vec<&str> = samples
        .iter()
        .filter(|s| s.class == 3)
        .map(|s| s.family)
        .collect();
    fams.sort();
    fams.dedup();
    println!("\nmultilingual by script family (held-out half)\n");
    println!("| family | n | mean % | p90 % | signed % |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for fam in fams {
        let mut errs: Vec<(f64, f64)> = samples
            .iter()
            .filter(|s| s.class == 3 && !s.fit && s.family == fam)
            .map(|s| {
                let e = est(s);
                ((e - s.exact).abs() / s.exact, (e - s.exact) / s.exact)
            })
            .collect();
        let (m, p, sg, n) = stats(&mut errs);
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
    let mut per_class = [0usize; 4];
    for s in &fit {
        per_class[s.class] += 1;
    }
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
    for iter in 0..iters {
        let mut a = vec![vec![0.0; FEATURES]; FEATURES];
        let mut b = vec![0.0; FEATURES];
        for s in &fit {
            let x: Vec<f64> = s.f.iter().map(|&n| n as f64).collect();
            let pred: f64 = x.iter().zip(&w).map(|(x, w)| x * w).sum();
            let rel = if iter == 0 {
                1.0
            } else {
                ((pred - s.exact) / s.exact).abs().max(0.01)
            };
            // Weight: class share, relative error, and IRLS for |.|.
            let v = 1.0 / per_class[s.class] as f64 / (s.exact * s.exact) / rel;
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

/// Prints `RARE`: for each small letter, the small letters that follow it in under 0.02% of the
/// letter pairs inside words of the fit half of the english and code corpora.
fn print_rare_pairs(samples: &[Sample]) {
    let mut counts = [[0u64; 26]; 26];
    let mut total = 0u64;
    for s in samples.iter().filter(|s| s.fit && s.class <= 1) {
        for w in s.text.as_bytes().windows(2) {
            let (a, b) = (w[0].to_ascii_lowercase(), w[1]);
            if a.is_ascii_lowercase() && b.is_ascii_lowercase() {
                counts[usize::from(a - b'a')][usize::from(b - b'a')] += 1;
                total += 1;
            }
        }
    }
    let rows: Vec<String> = counts
        .iter()
        .map(|row| {
            let bits = row.iter().enumerate().fold(0u32, |acc, (j, &n)| {
                acc | (u32::from((n as f64) < total as f64 * 0.0002) << j)
            });
            format!("{bits:#x}")
        })
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
    args.retain(|a| a != "--fit" && a != "--worst" && a != "--pairs");
    let dir = args
        .first()
        .cloned()
        .unwrap_or_else(|| "bench/.cache".into());

    let mut samples = Vec::new();
    for (ci, class) in CLASSES.iter().enumerate() {
        let path = format!("{dir}/{class}.v6.json");
        let Ok(raw) = std::fs::read_to_string(&path) else {
            eprintln!("skipping {path}: not found");
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
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
                fit: (i / 8) % 2 == 0,
                f: features(&text),
                family: if ci == 3 { family(&text) } else { "" },
                text,
                exact,
            });
        }
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
