// The context layer's golden fixtures (tests/data/context, shared with tests/context_fixtures.rs)
// through the built package: a new ContextKeeper with a MemoryStore and a summarizer that
// returns the case's summary prepares each input once, and what it returns (the messages, the
// report) and what it stored (every record, by key) must be what the Rust core wrote into the
// expected file, byte for byte. So the package's driver (its store calls, its order, its
// reports) cannot drift from the core.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { ContextKeeper } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";

const dir = new URL("../data/context/", import.meta.url);
const cases = readdirSync(dir)
  .filter((f) => f.endsWith(".input.json"))
  .sort()
  .map((f) => ({
    name: f.replace(".input.json", ""),
    input: JSON.parse(readFileSync(new URL(f, dir), "utf8")),
    expected: JSON.parse(readFileSync(new URL(f.replace(".input.json", ".expected.json"), dir), "utf8")),
  }));

const decoder = new TextDecoder("utf-8", { fatal: true });
/** A stored record as the expected file shows it: JSON as JSON, other text as a string. */
function record(data) {
  const text = typeof data === "string" ? data : decoder.decode(data);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

test("there are at least 12 fixtures, each tier in each format", () => {
  assert.ok(cases.length >= 12, `${cases.length} fixtures`);
  for (const tier of ["prune", "evict", "offload", "compaction"]) {
    for (const format of ["openai", "anthropic", "aisdk"]) {
      assert.ok(cases.some((c) => c.name === `${tier}-${format}`), `${tier}-${format}`);
    }
  }
});

for (const { name, input, expected } of cases) {
  test(`fixture ${name}: the package returns and stores what the core wrote`, async () => {
    const store = new MemoryStore();
    const keeper = new ContextKeeper({ ...input.options, store, summarize: () => input.summary });
    const before = structuredClone(input.messages);
    try {
      const { messages, report } = await keeper.prepare(input.messages, { sessionId: input.sessionId, now: input.now });
      assert.deepEqual(input.messages, before, "the caller's history is not changed");
      // (a request object comes back as a request object)
      assert.deepEqual(JSON.parse(JSON.stringify(messages)), expected.output);
      assert.deepEqual(JSON.parse(JSON.stringify(report)), expected.report);
      // word for word, in the core's key order (the driver makes the edits' objects itself)
      assert.equal(JSON.stringify(report), JSON.stringify(expected.report));
      const stored = (await store.loadRange([])).map(({ key, data }) => ({ key, value: record(data) }));
      stored.sort((a, b) => (JSON.stringify(a.key) < JSON.stringify(b.key) ? -1 : 1));
      assert.deepEqual(stored, expected.stored);
    } finally {
      keeper.free();
    }
  });
}
