// One measurement in a fresh process (started by run.mjs with `node --expose-gc`), so imports,
// caches, JIT state and memory of one peer never leak into another's numbers.
//
//   node --expose-gc bench/child.mjs '<task JSON>'
//
// Reports go to the parent over IPC: { type: "rep", ... } after each timed repetition (so a
// run killed at its time limit still has its finished repetitions), then { type: "done", ... }.
// A throughput task with `turns: true` takes turns with other peers' children: before each
// repetition it sends { type: "turn" } and waits for { type: "go" } (see run.mjs).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { pathological, utf8Bytes } from "./corpus.mjs";
import { ESTIMATORS, loadPeer } from "./peers.mjs";

/** Every wasm instance created in this process, to read its linear memory later. */
const instances = [];

/**
 * Records wasm instances as they are made. wasm-bindgen's Node output and npm tiktoken call
 * `new WebAssembly.Instance`; browser-style loaders call `WebAssembly.instantiate`.
 */
function watchWasm() {
  const Original = WebAssembly.Instance;
  WebAssembly.Instance = class extends Original {
    constructor(module, imports) {
      super(module, imports);
      instances.push(this);
    }
  };
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = async (...args) => {
    const result = await instantiate(...args);
    instances.push(result instanceof Original ? result : result.instance);
    return result;
  };
}

/** Bytes of all wasm linear memories (the Memory exports' buffers), or null if no wasm ran. */
function wasmMemoryBytes() {
  if (instances.length === 0) return null;
  let total = 0;
  for (const instance of instances) {
    for (const value of Object.values(instance.exports)) {
      if (value instanceof WebAssembly.Memory) total += value.buffer.byteLength;
    }
  }
  return total;
}

function memory() {
  return {
    rssBytes: process.memoryUsage().rss,
    maxRssBytes: process.resourceUsage().maxRSS * 1024, // the kernel's high-water mark
    wasmBytes: wasmMemoryBytes(),
  };
}

/** Sends a report to the parent, or prints it when run by hand (no IPC channel). */
const send = (message) =>
  process.send ? new Promise((resolve) => process.send(message, resolve)) : console.log(JSON.stringify(message));

/** "go" messages from the parent not yet taken, and a waiter for the next one. */
let goes = 0;
let wake = null;
process.on("message", (m) => {
  if (m?.type !== "go") return;
  goes++;
  wake?.();
});

/**
 * With `task.turns`, asks for this child's next turn and waits until it is given, so that
 * only one peer counts at any moment; otherwise returns at once.
 */
async function turn(task) {
  if (!task.turns || !process.send) return;
  await send({ type: "turn" });
  while (goes === 0) await new Promise((resolve) => (wake = resolve));
  wake = null;
  goes--;
}

/**
 * First call after import: from before `import()` to the end of the first count of a short
 * string, in this fresh process (`firstMs`), and its two parts: until the peer is loaded
 * (`importMs`: the import, and for peers that build an encoder, that too), then the count
 * (`countMs`). Then loads the other encoding too and reads memory, which shows what one
 * encoding costs and what both cost.
 */
async function firstCall({ peer, encoding, otherEncoding }) {
  const start = performance.now();
  const counter = await loadPeer(peer, encoding);
  const loaded = performance.now();
  const tokens = counter.count("Hello, world! This is the first count.");
  const end = performance.now();
  const [firstMs, importMs, countMs] = [end - start, loaded - start, end - loaded];
  const afterFirst = memory();
  let afterBoth = null;
  if (otherEncoding) {
    const other = await loadPeer(peer, otherEncoding);
    other.count("And a second encoding.");
    afterBoth = memory();
  }
  return { firstMs, importMs, countMs, tokens, afterFirst, afterBoth };
}

/**
 * The texts of each repetition, as disjoint slices: slice 0 warms up (untimed), slices 1..reps
 * are timed. A text class is cut into consecutive runs of messages of about `sliceBytes`; the
 * conversation is counted whole (or its first `sliceBytes`) every time, with caches reset; a
 * pathological class makes a fresh long run per repetition.
 */
function slices({ cls, file, reps, sliceBytes, pathologicalBytes }) {
  if (pathologicalBytes) {
    const out = [{ first: -1, texts: [pathological(cls, 25, Math.min(4096, pathologicalBytes / 2))] }];
    for (let r = 0; r < reps; r++) out.push({ first: -1, texts: [pathological(cls, r, pathologicalBytes)] });
    return out;
  }
  const { messages } = JSON.parse(readFileSync(file, "utf8"));
  const take = (from, max = sliceBytes) => {
    const texts = [];
    let bytes = 0;
    for (let i = from; i < messages.length && bytes < max; i++) {
      texts.push(messages[i]);
      bytes += utf8Bytes(messages[i]);
    }
    return { first: from, texts };
  };
  // The conversation is counted whole each time (caches reset); a prefix warms up.
  if (cls === "conversation") return [take(0, Math.min(sliceBytes, 128 * 1024)), ...Array.from({ length: reps }, () => take(0))];
  const out = [];
  let from = 0;
  for (let r = 0; r <= reps && from < messages.length; r++) {
    const slice = take(from);
    out.push(slice);
    from += slice.texts.length;
  }
  return out;
}

/** How long the warm-up slice is counted, untimed, before the timed repetitions (one pass at least). */
const WARM_UP_MS = 250;

/**
 * Counts the warm-up slice `texts` again until `WARM_UP_MS` have gone by (`spent` already); the
 * loop over the slices resets the peer's cache before the next one. V8 compiles wasm and JS with a
 * baseline tier first and optimizes a hot function in the background after it has run a while: one
 * pass over a slice is about 2 ms for the estimators, too short for that, and the timed repetitions
 * after it were uneven (the estimator, two processes each: 69-302 MB/s over the five timed slices
 * after one pass, 148-265 after twenty). A peer that takes longer than `WARM_UP_MS` over the slice
 * counts it once.
 */
function warmUp(counter, texts, spent) {
  const end = performance.now() + WARM_UP_MS - spent;
  while (performance.now() < end) for (const text of texts) counter.count(text);
}

/**
 * Times counting each slice's messages, one call per message (as a chat UI counts them), for
 * every class of the task in turn, with the peer loaded once.
 */
async function throughput(task) {
  const counter = await loadPeer(task.peer, task.encoding);
  for (const job of task.jobs) {
    for (const [index, slice] of slices({ ...job, reps: task.reps }).entries()) {
      counter.reset?.();
      globalThis.gc?.();
      const bytes = slice.texts.reduce((n, t) => n + utf8Bytes(t), 0);
      await turn(task);
      await send({ type: "start", cls: job.cls, index, bytes });
      const counts = new Array(slice.texts.length);
      const start = performance.now();
      for (let i = 0; i < slice.texts.length; i++) counts[i] = counter.count(slice.texts[i]);
      const ms = performance.now() - start;
      if (index === 0) warmUp(counter, slice.texts, ms);
      // Pathological texts are generated, so only their totals are worth sending.
      const sent = job.pathologicalBytes ? [counts.reduce((a, b) => a + b, 0)] : counts;
      await send({ type: "rep", cls: job.cls, warmup: index === 0, ms, bytes, first: slice.first, counts: sent });
    }
  }
  try {
    await viaCountMessages(task, counter);
  } catch (error) {
    console.error(`bench: countMessages failed: ${error}`); // optional row; the rest stands
  }
  counter.free?.();
  return memory();
}

/**
 * If the package grows a `countMessages(messages, options)`, the conversation is also counted
 * whole in one call per repetition, reported as class "conversation/countMessages", for exact
 * peers only: `countMessages` counts exactly, so under an estimator's name it would time exact
 * counting again. Its total includes per-message framing, so it is not compared with the
 * reference. The package's per-message count cache is cleared before every repetition
 * (untimed), so each one counts the conversation afresh; the engine's small cache of recent
 * pieces stays warm, as in real use.
 */
async function viaCountMessages(task, counter) {
  const countMessages = counter.module?.countMessages;
  const clearCache = counter.module?.clearCountCache;
  const job = task.jobs.find((j) => j.cls === "conversation");
  if (typeof countMessages !== "function" || !job || ESTIMATORS.includes(task.peer)) return;
  const { chat, bytes } = JSON.parse(readFileSync(job.file, "utf8"));
  const cls = "conversation/countMessages";
  for (let index = 0; index <= task.reps; index++) {
    if (typeof clearCache === "function") clearCache();
    globalThis.gc?.();
    await turn(task);
    await send({ type: "start", cls, index, bytes });
    const start = performance.now();
    const result = countMessages(chat, { encoding: task.encoding });
    const ms = performance.now() - start;
    const total = typeof result === "number" ? result : (result?.total ?? result?.tokens ?? null);
    await send({ type: "rep", cls, warmup: index === 0, ms, bytes, first: -1, counts: [total] });
  }
}

const task = JSON.parse(process.argv[2]);
watchWasm();
try {
  const result = task.mode === "first" ? await firstCall(task) : await throughput(task);
  await send({ type: "done", result });
} catch (error) {
  await send({ type: "error", message: String(error?.stack ?? error) });
}
process.disconnect?.();
