// The stores inside a real workerd (wrangler dev): the shared suite in a SQLite-backed and a
// KV-backed Durable Object and over Workers KV, chunking as each backend's limit demands, and
// values that outlive a restart of wrangler (its bindings persisted to a directory).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWrangler } from "./wrangler.mjs";

const persistTo = mkdtempSync(join(tmpdir(), "ck-wrangler-"));
let wrangler;

before(async () => {
  wrangler = await startWrangler({ persistTo });
});

after(async () => {
  await wrangler?.stop();
  rmSync(persistTo, { recursive: true, force: true });
});

async function post(path) {
  const res = await fetch(`${wrangler.base}${path}`, { method: "POST" });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${text.slice(0, 2000)}\n${wrangler.output().slice(-3000)}`);
  return JSON.parse(text);
}

for (const [name, path] of [["DurableObjectStore (SQLite-backed)", "stores/sqlite"], ["DurableObjectStore (KV-backed)", "stores/kv-backed"], ["KVStore", "stores/kv"]]) {
  test(`the shared store suite passes for ${name} inside workerd`, async () => {
    const report = await post(`${path}/suite`);
    assert.deepEqual(report.cases.filter((c) => !c.ok), []);
    assert.equal(report.skipped, 0);
    assert.ok(report.passed >= 9, `${report.passed} cases passed`);
    console.log(`# ${name} (workerd): 50 MiB save ${report.timings.largeSaveMs} ms, load ${report.timings.largeLoadMs} ms`);
  });
}

test("a 1 MB value is chunked at the KV-backed limit (128 KiB) and whole at the SQLite-backed one (2 MB)", async () => {
  assert.deepEqual(await post("stores/kv-backed/probe"), { entries: 9, chunks: 8 });
  assert.deepEqual(await post("stores/sqlite/probe"), { entries: 1, chunks: 0 });
});

test("values written before a restart of wrangler are read after it", async () => {
  for (const kind of ["sqlite", "kv-backed", "kv"]) await post(`stores/${kind}/write`);
  await wrangler.stop();
  wrangler = await startWrangler({ persistTo });
  for (const kind of ["sqlite", "kv-backed", "kv"]) assert.deepEqual(await post(`stores/${kind}/read`), { same: true }, kind);
});
