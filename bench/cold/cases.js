// The calls bench/cold.mjs times, the same in every runtime (Node, a Chromium page, a workerd
// isolate): this module imports nothing, so each runtime's wrapper loads it before its clock
// starts and only the package's entry is imported inside the timed span.
//
//   countTokens     countTokens(TEXT, { model: "gpt-4o" })
//   estimateTokens  estimateTokens(TEXT) (the entries without tables: /lite's countTokens throws)
//   small           a new MemoryStore and ContextKeeper (gpt-4o, its 128k window), prepare of a
//                   4-message chat (system, user, assistant, user), free
//   compact         the same with `contextWindow: COMPACT_WINDOW` and a synchronous summarizer
//                   returning a fixed text, on the first 34 messages of the 300-turn agent
//                   session of tests/data/sessions (OpenAI format: tool calls and results):
//                   prepare compacts them (the decision is returned and checked)

export const TEXT = "The quick brown fox jumps over the lazy dog.";
export const NOW = "2026-11-25T12:00:00Z";
export const COMPACT_WINDOW = 8_000;
export const SMALL = [
  { role: "system", content: "You are a helpful assistant. Answer briefly." },
  { role: "user", content: "What is the capital of France?" },
  { role: "assistant", content: "Paris is the capital of France." },
  { role: "user", content: "And how many people live there?" },
];
const SUMMARY = "Intent: fix the issue in the repository. Progress: read the code, ran the tests. Next: finish the fix.";

/** What a call returned, reduced to what the report prints and checks. */
const outcome = (report) => ({
  decision: report.decision,
  compaction: report.compaction?.outcome ?? null,
  tokensBefore: report.tokensBefore,
  tokensAfter: report.tokensAfter,
  fits: report.fits,
});

/**
 * The call of `kind` on the entry `ck` (its module namespace), as a function that runs it once
 * and returns its outcome: a number for the counts, a promise of the report's figures for prepare.
 * `compactMessages`: the conversation of the compaction case.
 */
export function caller(ck, MemoryStore, kind, compactMessages) {
  switch (kind) {
    case "countTokens":
      return () => ck.countTokens(TEXT, { model: "gpt-4o" });
    case "estimateTokens":
      return () => ck.estimateTokens(TEXT);
    case "small":
    case "compact": {
      const options = kind === "small" ? { model: "gpt-4o" } : { model: "gpt-4o", contextWindow: COMPACT_WINDOW, summarize: () => SUMMARY };
      const messages = kind === "small" ? SMALL : compactMessages;
      return async () => {
        const keeper = new ck.ContextKeeper({ ...options, store: new MemoryStore() });
        try {
          return outcome((await keeper.prepare(messages, { sessionId: "cold", now: NOW })).report);
        } finally {
          keeper.free();
        }
      };
    }
    default:
      throw new RangeError(`unknown case ${kind}`);
  }
}

/** Runs `call` once, awaiting it only when it returns a promise (the counts are synchronous). */
export async function once(call) {
  const value = call();
  return value !== null && typeof value === "object" && typeof value.then === "function" ? await value : value;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/**
 * The warm figure: after `warmupMs` of untimed calls (and at least `warmupCalls`: V8 optimizes a
 * hot function after it has run a while), `batches` batches of calls, each
 * repeated until it has run `batchMs` (so a clock of coarse resolution still measures it: 1 ms in
 * workerd, 5-100 µs in a page), and the median over batches of time ÷ calls, in ms. `maxCalls`
 * bounds a batch if the clock does not advance.
 */
export async function warm(call, now, { warmupMs = 250, warmupCalls = 20, batches = 15, batchMs = 10, maxCalls = 1e6 } = {}) {
  let start = now();
  for (let i = 0; i < warmupCalls || (now() - start < warmupMs && i < maxCalls); i++) await once(call);
  const perCall = [];
  for (let b = 0; b < batches; b++) {
    let calls = 0;
    start = now();
    let elapsed = 0;
    do {
      await once(call);
      calls++;
      elapsed = now() - start;
    } while (elapsed < batchMs && calls < maxCalls);
    perCall.push(elapsed / calls);
  }
  return median(perCall);
}

/** Times the first run of `call` (ms) and returns it with the call's outcome. */
export async function timeOnce(call, now) {
  const t0 = now();
  const result = await once(call);
  return { ms: now() - t0, result };
}

/** The first-call part of a sample, once the entry is imported: the call, the same call again, then the warm figure. */
export async function firstAndWarm(ck, MemoryStore, kind, compactMessages, now, warmOptions) {
  const call = caller(ck, MemoryStore, kind, compactMessages);
  const first = await timeOnce(call, now);
  const second = await timeOnce(call, now);
  const warmMs = warmOptions === null ? null : await warm(call, now, warmOptions);
  return { firstMs: first.ms, secondMs: second.ms, warmMs, result: first.result };
}
