// Small statistics helpers and the analysis of raw child reports into the numbers the report shows.

export const median = (xs) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** The p-th percentile (0..100), nearest-rank. */
export const percentile = (xs, p) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

export const mean = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/** MB/s with MB = 10^6 bytes of UTF-8. */
export const mbPerSecond = (bytes, ms) => (ms > 0 ? bytes / 1e6 / (ms / 1e3) : null);

/** Median MB/s over the timed (non-warm-up) repetitions of one throughput run. */
export function throughputOf(run) {
  const timed = run.reps.filter((r) => !r.warmup);
  return {
    mbps: median(timed.map((r) => mbPerSecond(r.bytes, r.ms))),
    reps: timed.length,
    bytesPerRep: median(timed.map((r) => r.bytes)),
  };
}

/**
 * Per-message counts of a run keyed by message index ("i" for text classes, "rep:r" for
 * pathological runs, whose texts are generated per repetition).
 */
export function countsByKey(run) {
  const out = new Map();
  run.reps.forEach((rep, r) => {
    if (rep.first < 0) out.set(`rep:${r}`, rep.counts[0]);
    else rep.counts.forEach((c, i) => out.set(String(rep.first + i), c));
  });
  return out;
}

/**
 * Messages whose count differs from the reference's (`[{ key, count, reference }]`), how many
 * messages both counted (`compared`) and how many this run counted (`total`).
 */
export function mismatches(run, reference) {
  const mine = countsByKey(run);
  const ref = countsByKey(reference);
  const out = [];
  for (const [key, count] of mine) {
    if (ref.has(key) && ref.get(key) !== count) out.push({ key, count, reference: ref.get(key) });
  }
  return { compared: [...mine.keys()].filter((k) => ref.has(k)).length, total: mine.size, mismatches: out };
}

/** Sums counts of texts that belong to one message (`owners[i]` = message of text i). */
function groupBy(counts, owners) {
  const out = new Map();
  for (const [key, c] of counts) {
    const owner = String(owners[Number(key)]);
    out.set(owner, (out.get(owner) ?? 0) + c);
  }
  return out;
}

/**
 * Error of an estimator against exact counts, per message: mean and p90 of |est-exact|/exact
 * and the signed mean of (est-exact)/exact. Messages whose exact count is 0 are skipped. With
 * `owners` (the conversation), the texts of one chat message are summed first.
 */
export function estimatorError(run, exact, owners = null) {
  let est = countsByKey(run);
  let ref = countsByKey(exact);
  if (owners) {
    est = groupBy(est, owners);
    ref = groupBy(ref, owners);
  }
  const abs = [];
  const signed = [];
  for (const [key, e] of est) {
    const x = ref.get(key);
    if (!x) continue;
    abs.push(Math.abs(e - x) / x);
    signed.push((e - x) / x);
  }
  return { messages: abs.length, mean: mean(abs), p90: percentile(abs, 90), signedMean: mean(signed) };
}
