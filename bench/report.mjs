// Turns the results object of run.mjs into Markdown tables.
import { ESTIMATORS, EXACT, ENCODINGS } from "./peers.mjs";
import { PATHOLOGICAL_CLASSES } from "./corpus.mjs";

const CK = "context-keeper";
const CK_EST = "context-keeper~estimate";

const fixed = (x, digits = 2) =>
  x == null || !Number.isFinite(x) ? "–" : Math.abs(x) > 0 && Math.abs(x) < 0.1 ? x.toPrecision(2) : x.toFixed(digits);
const mb = (bytes) => (bytes == null ? "–" : `${(bytes / 2 ** 20).toFixed(1)} MiB`);
const kb = (bytes) => (bytes == null ? "–" : `${(bytes / 1024).toFixed(0)} KiB`);
const pct = (x) => (x == null ? "–" : `${(x * 100).toFixed(1)}%`);
const signedPct = (x) => (x == null ? "–" : `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`);

function table(header, rows) {
  return [
    `| ${header.join(" | ")} |`,
    `| ${header.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

/** MB/s of a run as shown: a time-out with no finished repetition is an upper bound. */
function speed(run) {
  if (!run) return { text: "–", value: null };
  if (run.mbps == null && run.timedOut) {
    const bound = run.timeoutBound;
    return { text: `< ${fixed(bound, 3)} (timeout)`, value: bound, bound: true };
  }
  if (run.mbps == null) return { text: run.error ? (run.error.startsWith("not run") ? "not run" : "error") : "–", value: null };
  return { text: `${fixed(run.mbps)}${run.timedOut ? "*" : ""}`, value: run.mbps };
}

function ratio(a, b) {
  if (a.value == null || b.value == null) return "–";
  if (b.bound && !a.bound) return `> ${fixed(a.value / b.value, 1)}×`;
  if (a.bound) return "–";
  return `${fixed(a.value / b.value, 2)}×`;
}

function throughputTable(results, encoding) {
  const find = (peer, cls) => results.throughput.find((r) => r.peer === peer && r.encoding === encoding && r.cls === cls);
  const extra = [...new Set(results.throughput.map((r) => r.cls))].filter((c) => !results.config.classes.includes(c));
  const classes = [...results.config.classes, ...extra]
    .filter((c) => encoding === "o200k_base" || !PATHOLOGICAL_CLASSES.includes(c));
  const peers = EXACT.filter((p) => results.throughput.some((r) => r.peer === p));
  const others = peers.filter((p) => p !== CK);
  const rows = classes.map((cls) => {
    const bytes = peers.map((p) => find(p, cls)?.bytesPerRep).find((b) => b != null);
    const check = results.exactness.filter((e) => e.encoding === encoding && e.cls === cls);
    const bad = check.filter((e) => e.mismatches > 0);
    // Only messages both sides counted are compared (a side may have failed or timed out).
    const unchecked = check.filter((e) => e.compared < (e.total ?? e.compared) || e.compared === 0)
      .map((e) => `${e.peer} (${e.compared}/${e.total ?? e.compared})`);
    const verdict = bad.length > 0
      ? `**MISMATCH** ${bad.map((b) => `${b.peer} (${b.mismatches})`).join(", ")}`
      : unchecked.length > 0 ? `equal where compared; unverified: ${unchecked.join(", ")}` : "all equal";
    const speeds = Object.fromEntries(peers.map((p) => [p, speed(find(p, cls))]));
    return [
      cls, bytes == null ? "–" : kb(bytes),
      ...peers.map((p) => speeds[p].text),
      ...(peers.includes(CK) ? others.map((p) => ratio(speeds[CK], speeds[p])) : []),
      verdict,
    ];
  });
  const header = ["class", "per rep", ...peers.map((p) => `${p} MB/s`),
    ...(peers.includes(CK) ? others.map((p) => `ck ÷ ${p}`) : []), "counts vs tiktoken"];
  return table(header, rows);
}

function firstCallTable(results) {
  const peers = [...new Set(results.firstCalls.map((f) => f.peer))];
  const rows = peers.map((peer) => {
    const of = (enc) => results.firstCalls.find((f) => f.peer === peer && f.encoding === enc);
    const o200k = of("o200k_base");
    const runs = results.throughput.filter((r) => r.peer === peer && r.memory);
    const peakRss = Math.max(...runs.map((r) => r.memory.maxRssBytes), 0) || null;
    const peakWasm = Math.max(...runs.map((r) => r.memory.wasmBytes ?? 0), 0) || null;
    return [
      peer,
      ...ENCODINGS.map((enc) => {
        const f = of(enc);
        // NOTE: import + first count where the child reported the split.
        return f?.importMs == null ? fixed(f?.firstMs, 1) : `${fixed(f.firstMs, 1)} (${fixed(f.importMs, 1)} + ${fixed(f.countMs, 1)})`;
      }),
      mb(o200k?.afterFirst?.wasmBytes), mb(o200k?.afterBoth?.wasmBytes),
      mb((o200k?.afterBoth ?? o200k?.afterFirst)?.rssBytes),
      mb(peakRss), mb(peakWasm),
    ];
  });
  return table(["peer", ...ENCODINGS.map((e) => `first count ${e}, ms (import + count)`), "wasm memory, o200k loaded",
    "wasm memory, both loaded", "RSS, both loaded", "peak RSS while counting", "wasm memory after counting"], rows);
}

function sizeTable(results) {
  const rows = [];
  for (const [name, s] of Object.entries(results.sizes)) {
    const files = Object.entries(s.files);
    if (files.length === 0) rows.push([`${name} ${s.version}`, kb(s.packageBytes), "–", "–", "–", "–"]);
    files.forEach(([file, f], i) => rows.push([
      i === 0 ? `${name} ${s.version}` : "", i === 0 ? kb(s.packageBytes) : "", file, kb(f.raw), kb(f.gzip), kb(f.brotli),
    ]));
  }
  return table(["package", "installed (all files)", "file", "raw", "gzip -9", "brotli -11"], rows);
}

function estimatorTable(results) {
  const estimators = ESTIMATORS.filter((p) => results.estimatorErrors.some((e) => e.peer === p));
  const classes = results.config.classes;
  const find = (peer, cls) => results.throughput.find((r) => r.peer === peer && r.cls === cls && r.encoding === "o200k_base");
  const rows = classes.map((cls) => {
    const err = (p) => results.estimatorErrors.find((e) => e.peer === p && e.cls === cls);
    const exact = speed(find(CK, cls));
    const est = speed(find(CK_EST, cls));
    return [
      cls,
      ...estimators.flatMap((p) => [pct(err(p)?.mean), pct(err(p)?.p90), signedPct(err(p)?.signedMean)]),
      ...estimators.map((p) => speed(find(p, cls)).text),
      estimators.includes(CK_EST) ? ratio(est, exact) : "–",
    ];
  });
  const header = ["class",
    ...estimators.flatMap((p) => [`${p} mean err`, "p90", "signed"]),
    ...estimators.map((p) => `${p} MB/s`), "ck estimate ÷ ck exact speed"];
  return table(header, rows);
}

/** The fast-engine issue's goals, checked against this run (o200k_base unless noted). */
function goals(results) {
  const lines = [];
  const mark = (ok) => (ok == null ? "–" : ok ? "yes" : "**no**");
  const run = (peer, cls, enc = "o200k_base") => results.throughput.find((r) => r.peer === peer && r.cls === cls && r.encoding === enc);
  const textClasses = results.config.classes;
  for (const enc of ENCODINGS) {
    const classes = textClasses.filter((c) => run(CK, c, enc));
    if (classes.length === 0) continue;
    const ratios = classes.map((c) => {
      const a = speed(run(CK, c, enc));
      const b = speed(run("gpt-tokenizer", c, enc));
      return a.value != null && b.value != null && !a.bound ? a.value / b.value : null;
    }).filter((x) => x != null);
    const minRatio = ratios.length ? Math.min(...ratios) : null;
    const failed = classes.filter((c) => run(CK, c, enc).mbps == null);
    const slowest = classes.map((c) => [c, speed(run(CK, c, enc))]).sort((a, b) => (a[1].value ?? 0) - (b[1].value ?? 0))[0];
    lines.push(`- ${enc}: exact MB/s ≥ 5× gpt-tokenizer in every class: ${mark(minRatio == null ? null : minRatio >= 5 && failed.length === 0)} (lowest ${fixed(minRatio, 2)}×${failed.length ? `; no number for ${failed.join(", ")}` : ""})`);
    lines.push(failed.length > 0
      ? `- ${enc}: no class below 5 MB/s: **no** (failed: ${failed.map((c) => `${c}: ${run(CK, c, enc).error?.split("\n")[0] ?? "timeout"}`).join("; ")})`
      : `- ${enc}: no class below 5 MB/s: ${mark(!slowest[1].bound && slowest[1].value >= 5)} (slowest: ${slowest[0]}, ${slowest[1].text} MB/s)`);
  }
  for (const enc of ENCODINGS) {
    const f = results.firstCalls.find((x) => x.peer === CK && x.encoding === enc);
    if (f) lines.push(`- first count after import, ${enc} ≤ 25 ms: ${mark(f.firstMs <= 25)} (${fixed(f.firstMs, 1)} ms: import ${fixed(f.importMs, 1)}, first count ${fixed(f.countMs, 1)})`);
    const entry = results.firstCalls.find((x) => x.peer === `${CK}/${enc.replace("_base", "")}` && x.encoding === enc);
    if (entry) lines.push(`  - with the \`${entry.peer}\` entry: ${fixed(entry.firstMs, 1)} ms (import ${fixed(entry.importMs, 1)}, first count ${fixed(entry.countMs, 1)})`);
  }
  const f = results.firstCalls.find((x) => x.peer === CK && x.encoding === "o200k_base");
  if (f?.afterBoth?.wasmBytes != null) {
    lines.push(`- wasm linear memory with both encodings loaded ≤ 16 MB: ${mark(f.afterBoth.wasmBytes <= 16 * 2 ** 20)} (${mb(f.afterBoth.wasmBytes)}; ${mb(f.afterFirst.wasmBytes)} with o200k_base only${f.afterFirst.wasmBytes < f.afterBoth.wasmBytes ? ", so cl100k_base loads only when first used" : ", no growth when cl100k_base is first used"})`);
  } else if (f) {
    lines.push(`- wasm linear memory: not readable; RSS with both encodings ${mb(f.afterBoth?.rssBytes)}`);
  }
  for (const cls of ["english", "code", "json", "multilingual"]) {
    const e = results.estimatorErrors.find((x) => x.peer === CK_EST && x.cls === cls);
    if (e) lines.push(`- estimator on ${cls}: mean ≤ 5% ${mark(e.mean <= 0.05)} (${pct(e.mean)}), p90 ≤ 10% ${mark(e.p90 <= 0.1)} (${pct(e.p90)})`);
  }
  const speedups = textClasses.map((c) => {
    const a = speed(run(CK_EST, c));
    const b = speed(run(CK, c));
    return a.value != null && b.value != null && !b.bound ? [c, a.value / b.value] : null;
  }).filter(Boolean);
  if (speedups.length) {
    const lowest = (list) => list.sort((a, b) => a[1] - b[1])[0];
    const [cls, min] = lowest([...speedups]);
    let line = `- estimator ≥ 10× faster than exact counting: ${mark(min >= 10)} (lowest ${fixed(min, 1)}×, on ${cls})`;
    // The generated runs are told apart: exact counting takes a digit run whole, so there it
    // is about as fast as the estimator, and a text class may pass where a run does not.
    const text = speedups.filter(([c]) => !PATHOLOGICAL_CLASSES.includes(c));
    if (text.length && text.length < speedups.length) {
      const [textCls, textMin] = lowest(text);
      line += `; on the text classes ${mark(textMin >= 10)} (lowest ${fixed(textMin, 1)}×, on ${textCls})`;
    }
    lines.push(line);
  }
  return lines.join("\n");
}

export function report(results) {
  const { env, config } = results;
  const bad = results.exactness.filter((e) => e.mismatches > 0);
  const parts = [
    `# context-keeper benchmark (${config.quick ? "quick" : "full"} run)`,
    "",
    `${env.date}; ${env.cpu}, ${env.memoryGiB} GiB; Node ${env.node}; commit ${env.commit ?? "?"}; load average ${env.loadAverageAtStart.join(" ")} at start, ${env.loadAverageAtEnd.join(" ")} at end; ${env.seconds} s.`,
    `Versions: ${Object.entries(env.versions).map(([k, v]) => `${k} ${v}`).join(", ")}.`,
    "",
  ];
  if (bad.length > 0) {
    parts.push(`> **EXACTNESS MISMATCH** against npm tiktoken: ${bad.map((b) => `${b.peer} ${b.encoding} ${b.cls}: ${b.mismatches} of ${b.compared} messages (first: ${JSON.stringify(b.firstMismatches[0])})`).join("; ")}`, "");
  }
  parts.push("## Goals of the fast-engine issue", "", goals(results), "");
  for (const enc of config.encodings) {
    if (!results.throughput.some((r) => r.encoding === enc && EXACT.includes(r.peer))) continue;
    parts.push(`## Exact counting, ${enc}: MB/s on unseen text (median of ${config.reps} repetitions)`, "", throughputTable(results, enc), "");
  }
  parts.push("`*` timed out after some repetitions (median of those). `< x (timeout)`: no repetition finished within the time limit; x = bytes ÷ time spent on it.", "");
  const failed = results.throughput.filter((r) => r.error && !r.error.startsWith("not run"));
  if (failed.length > 0) {
    parts.push("Errors (the child's stderr has the whole message):", "",
      ...failed.map((r) => `- ${r.peer} ${r.encoding} ${r.cls}: \`${r.error.split("\n")[0]}\``), "");
  }
  parts.push("## Estimators against exact o200k_base, per message", "", estimatorTable(results), "");
  parts.push("## First call after import and memory", "", firstCallTable(results), "");
  parts.push("## Package size", "", sizeTable(results), "");
  const corpora = Object.entries(results.corpora).map(([k, c]) => `${k} ${kb(c.bytes)} in ${c.chatMessages ?? c.messages} messages`);
  parts.push(`Corpora: ${corpora.join("; ")}.`);
  return parts.join("\n");
}
