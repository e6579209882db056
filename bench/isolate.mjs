#!/usr/bin/env node
// Does a 10 MB, 5,000-message history's cold prepare fit a 128 MB Worker isolate? Local
// workerd enforces no memory limit, but V8 enforces its own heap limit when given one: this
// runs bench/scale/worker.js (the Durable Object of bench/scale.mjs) in npm's workerd started
// directly with V8's `--max-heap-size` (bench/scale/isolate.js), and finds by bisection the
// smallest JS heap (whole MiB) in which the session's first prepare completes. What the
// isolate holds besides its JS heap is measured in the same request: the package's wasm linear
// memory (its high-water mark: it never shrinks) and the most bytes handed to the store's
// `save` and not yet settled at once (the saves' copies out of wasm). Their sum is the
// isolate's need. Each try is a new workerd on a fresh copy of the stored history (a prepare
// that completed stores its offloads, archives and state, so the next would not be cold).
//
//   node bench/isolate.mjs [--messages=5000] [--bytes=10000000] [--low=16] [--high=128]
import { isolateRuns } from "./scale/isolate.js";

const args = Object.fromEntries(process.argv.slice(2).map((a) => { const [k, v] = a.replace(/^--/, "").split("="); return [k, v ?? true]; }));
const MiB = (n) => (n / 2 ** 20).toFixed(1);
const runs = await isolateRuns({ messages: Number(args.messages ?? 5_000), bytes: Number(args.bytes ?? 10_000_000) });
try {
  const { made } = runs;
  console.error(`history: ${made.messages} messages, ${(made.bytes / 1e6).toFixed(1)} MB`);
  const tries = new Map();
  const cold = async (heap) => {
    const [row] = await runs.cold(heap);
    tries.set(heap, row);
    console.error(`heap ${heap} MiB: ${row.ok ? `completed in ${row.ms} ms, wasm ${MiB(row.wasmBytes)} MiB, saving ${MiB(row.savingBytes)} MiB, ${row.report.decision}, fits ${row.report.fits}, ${row.problems} problems` : `failed${row.outOfMemory ? " (V8: out of memory)" : `: ${row.error}`}`}`);
    return row.ok;
  };
  let low = Number(args.low ?? 16);
  let high = Number(args.high ?? 128);
  if (!(await cold(high))) throw new Error(`the cold prepare failed with a ${high} MiB heap`);
  if (await cold(low)) throw new Error(`the cold prepare completed with a ${low} MiB heap: lower --low`);
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (await cold(mid)) high = mid;
    else low = mid;
  }
  const best = tries.get(high);
  const failed = tries.get(low);
  const need = high * 2 ** 20 + best.wasmBytes + best.savingBytes;
  console.log(`## A ${(made.bytes / 1e6).toFixed(1)} MB, ${made.messages}-message history's first prepare in one workerd isolate\n`);
  console.log("| smallest JS heap it completes in | wasm memory (high-water) | saves in flight (peak) | sum | of 128 MiB | round trip | report |");
  console.log("| ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  console.log(`| ${high} MiB (${low} MiB: ${failed.outOfMemory ? "out of memory" : failed.error}) | ${MiB(best.wasmBytes)} MiB | ${MiB(best.savingBytes)} MiB | ${MiB(need)} MiB | ${Math.round((100 * need) / 2 ** 27)}% | ${best.ms} ms | ${best.report.decision}, ${best.report.tokensBefore.toLocaleString("en")} -> ${best.report.tokensAfter.toLocaleString("en")} tokens, fits ${best.report.fits}, ${best.problems} problems |`);
} finally {
  runs.close();
}
