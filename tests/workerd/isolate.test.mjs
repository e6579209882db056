// A 10 MB, 5,000-message history's first prepare (a compaction) fits a
// Cloudflare Worker's 128 MB isolate with a quarter of it to spare for the host's own work: run
// in workerd with V8 capping the JS heap at 40 MiB (bench/scale/isolate.js), it completes, and
// that heap, the package's wasm memory (its high-water mark, which never shrinks) and the bytes
// handed to the store at once come to at most 96 MiB. The cap is shown to bite: at 16 MiB the
// same request dies of V8's out of memory. The wasm memory alone is held under 44 MiB: it was
// 31.9 MiB when this was written, and 41.0 MiB since the keeper compacts before it offloads
// (the results that the old order offloaded first now go to the archive and the summary
// request whole, so the span the compaction holds is larger); another copy of the span (9.7
// MiB: the archive's saves made together) or the summary request's JSON as one text (15 MiB)
// passes that. `node bench/isolate.mjs` finds the smallest heap the cold prepare completes in
// (29 MiB now, with 9.7 MiB of saves in flight: 79.7 MiB in all, 62% of the isolate).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { isolateRuns } from "../../bench/scale/isolate.js";

const MiB = 2 ** 20;
const HEAP_MIB = 40;
/** Three quarters of the isolate's 128 MiB. */
const NEED_MIB = 96;
const WASM_MIB = 44;
const runs = await isolateRuns({ messages: 5_000, bytes: 10_000_000 });
after(() => runs.close());

test("the cap is real: with a 16 MiB JS heap the cold prepare dies of V8's out of memory", async () => {
  const [row] = await runs.cold(16);
  assert.equal(row.ok, false, "the cold prepare completed in a 16 MiB heap: the cap is not applied");
  assert.ok(row.outOfMemory, `failed, but not of memory: ${row.error}`);
});

test(`a 10 MB history's cold prepare and a turn after it fit three quarters of a 128 MB isolate (JS heap capped at ${HEAP_MIB} MiB)`, async () => {
  assert.ok(runs.made.bytes > 10_000_000 && runs.made.messages === 5_000, JSON.stringify(runs.made));
  const rows = await runs.cold(HEAP_MIB, 1);
  for (const row of rows) {
    assert.ok(row.ok, `a prepare failed in a ${HEAP_MIB} MiB heap: ${row.outOfMemory ? "out of memory" : row.error}`);
    assert.equal(row.report.fits, true);
    assert.equal(row.problems, 0);
    assert.ok(row.wasmBytes <= WASM_MIB * MiB, `wasm memory ${(row.wasmBytes / MiB).toFixed(1)} MiB, over ${WASM_MIB} MiB`);
    const need = HEAP_MIB * MiB + row.wasmBytes + row.savingBytes;
    assert.ok(need <= NEED_MIB * MiB, `heap ${HEAP_MIB} MiB + wasm ${(row.wasmBytes / MiB).toFixed(1)} MiB + saves in flight ${(row.savingBytes / MiB).toFixed(1)} MiB = ${(need / MiB).toFixed(1)} MiB, over ${NEED_MIB} MiB`);
  }
  const [first, next] = rows;
  assert.equal(first.report.decision, "compacted");
  // the compaction makes the room: nothing is cut before it (cuts are its fallback)
  assert.equal(first.report.compaction, "compacted", JSON.stringify(first.report));
  assert.ok(first.report.tokensAfter <= first.report.budget, JSON.stringify(first.report));
  assert.equal(next.messages, 5_002);
});
