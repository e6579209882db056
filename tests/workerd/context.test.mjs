// The context layer inside a real workerd (wrangler dev), in tests/workerd/context.js: a 2.6 MB
// tool result offloaded into DurableObjectStore over a Durable Object's own storage (SQLite-
// backed, and chunked at the KV-backed 128 KiB limit) and read back whole, by readOffloaded and
// by the read_offloaded recovery tool, after wrangler was restarted (the object evicted, its
// storage persisted to a directory); a save that hangs timing out inside the object; pruning and
// eviction inside the Worker; and a ContextKeeper session in a Durable Object of its own (a new
// keeper per request, its history, offloads and state in the object's storage) that goes on
// after the restart where it was: its standing decision, offloads and running figures loaded.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startWrangler } from "./wrangler.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// A config of its own (as the bundle test has): tests/workerd/wrangler.toml is the counting and
// stores Worker's. In a temporary directory; wrangler resolves "context-keeper" from context.js.
const dir = mkdtempSync(join(tmpdir(), "ck-wrangler-context-config-"));
const config = join(dir, "wrangler.toml");
writeFileSync(config, `name = "ck-context-test"
main = ${JSON.stringify(join(here, "context.js"))}
compatibility_date = "2026-04-01"
send_metrics = false

[[durable_objects.bindings]]
name = "CONTEXT_SQLITE"
class_name = "ContextSqlite"

[[durable_objects.bindings]]
name = "CONTEXT_KV_BACKED"
class_name = "ContextKvBacked"

[[durable_objects.bindings]]
name = "KEEPER_SESSION"
class_name = "KeeperSession"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["ContextSqlite", "KeeperSession"]
new_classes = ["ContextKvBacked"]
`);
const persistTo = mkdtempSync(join(tmpdir(), "ck-wrangler-context-"));

let wrangler;

before(async () => {
  wrangler = await startWrangler({ config, persistTo });
});

after(async () => {
  await wrangler?.stop();
  rmSync(persistTo, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

async function post(path) {
  const res = await fetch(`${wrangler.base}${path}`, { method: "POST" });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${text.slice(0, 2000)}\n${wrangler.output().slice(-3000)}`);
  return JSON.parse(text);
}

const KINDS = [["SQLite-backed", "sqlite"], ["KV-backed, 128 KiB chunks", "kv-backed"]];
const offloads = {};

for (const [name, kind] of KINDS) {
  test(`a 2.6 MB result offloads into DurableObjectStore (${name}) inside a Durable Object`, async () => {
    const result = await post(`context/${kind}/offload`);
    offloads[kind] = result;
    assert.equal(result.failure, null);
    assert.ok(result.bytes > 2_000_000, `${result.bytes} bytes`);
    assert.equal(result.offloaded.lines, 24_000);
    assert.equal(result.offloaded.bytes, result.bytes);
    assert.deepEqual(result.offloaded.key.slice(0, 3), ["context-keeper", "workerd-session", "offload"]);
    assert.ok(result.pointer.startsWith(`[offloaded tool output id="${result.offloaded.id}"`), result.pointer);
    assert.ok(result.pointerChars < 8_000);
    // Over the backend's value limit: a manifest and its chunks, not one entry per record.
    assert.ok(result.storageEntries > 2, `${result.storageEntries} storage entries`);
    assert.deepEqual(result.swept.edited, [[5, "offload"]]);
    assert.deepEqual(result.swept.failures, []);
    assert.deepEqual(result.swept.same, result.swept.same.map((_, i) => i !== 5), "untouched messages are the caller's objects");
    assert.deepEqual(result.swept.valid, []);
  });
}

test("a save that never settles times out inside the Durable Object; the next offload stores the result", async () => {
  const result = await post("context/sqlite/fault");
  assert.equal(result.firstSame, true, "the caller's own value");
  assert.equal(result.firstOffloaded, null);
  assert.match(result.firstFailure, /timed out after 100 ms/);
  assert.equal(result.secondFailure, null);
  assert.equal(result.secondSame, true);
  assert.deepEqual(result.error, { isContextKeeperError: true, kind: "notFound", path: "id" });
});

test("pruneMessages and evictToolInputs run inside the Worker", async () => {
  const result = await post("context/prune");
  assert.equal(result.unchanged, true, "the input is not mutated");
  assert.equal(result.untouchedAreCallers, true);
  assert.equal(result.actions.filter((a) => a === "hardClear").length, 4);
  assert.equal(result.actions.filter((a) => a === "softTrim").length, 7);
  assert.ok(result.tokensSaved > 10_000, `${result.tokensSaved} tokens saved`);
  assert.deepEqual(result.valid, []);
  assert.equal(result.lastResultWhole, true);
  assert.equal(result.trimmed, true);
  assert.equal(result.idempotent, 0);
  assert.deepEqual(result.evicted, [[1, "evictInput", "src/f0.ts"], [3, "evictInput", "src/f1.ts"]]);
  assert.equal(result.evictedPath, "src/f0.ts");
  assert.equal(result.evictedPointer, true);
  assert.deepEqual(result.error, { isContextKeeperError: true, kind: "options", path: "options.keepLastTurns" });
});

const KEEPER_TURNS = 30;
const keeperTurns = [];

test("a ContextKeeper session in a Durable Object: a new keeper per request, within a 16k window every turn", async () => {
  for (let t = 0; t < KEEPER_TURNS / 2; t++) keeperTurns.push(await post(`context/keeper/turn?session=do-1&turn=${t}`));
  for (const [t, turn] of keeperTurns.entries()) {
    assert.deepEqual(turn.valid, [], `turn ${t}`);
    assert.equal(turn.report.fits, true, `turn ${t}: ${turn.report.overBudget}`);
    assert.ok(turn.report.tokensAfter <= turn.report.budget.compactAt);
  }
  assert.equal(keeperTurns[0].report.unchangedPrefix, null, "the first prepare of the session");
  assert.ok(keeperTurns.some((turn) => turn.report.offloaded > 0), "the 20,000-token results, larger than the window, are offloaded");
  // the window fills every five turns: the keeper compacts the turns before the newest
  assert.ok(keeperTurns.some((turn) => turn.report.decision === "compacted"), JSON.stringify(keeperTurns.map((turn) => turn.report.decision)));
});

test("after a restart of wrangler, the offloaded results read back whole, also through read_offloaded", async () => {
  assert.deepEqual(Object.keys(offloads).sort(), ["kv-backed", "sqlite"], "the offload tests ran first");
  await wrangler.stop();
  wrangler = await startWrangler({ config, persistTo });
  for (const [, kind] of KINDS) {
    const result = await post(`context/${kind}/read`);
    assert.equal(result.id, offloads[kind].offloaded.id, kind);
    assert.deepEqual(result.listed, [{ toolCallId: "call_1", lines: 3_000 }, { toolCallId: "call_big", lines: 24_000 }], kind);
    assert.deepEqual(result.damaged, []);
    assert.equal(result.same, true, `${kind}: read back ${result.readLength} of ${result.outputLength} characters`);
    assert.equal(result.reads, 12);
    assert.equal(result.totalLines, 24_000);
    assert.equal(result.toolHasLastLines, true, result.tool);
    assert.equal(result.toolEnds, true, result.tool);
    assert.deepEqual(result.grep, [23990, 23991, 23992, 23993, 23994, 23995, 23996, 23997, 23998, 23999]);
    assert.equal(result.grepTexts, true);
    assert.match(result.grepTool, /L12345:/);
    assert.match(result.missing, /^Error: no offloaded output has id "nope"/);
    assert.equal(result.sweptSame, true);
  }
  // the keeper's session goes on where it was: its decisions, offloads and figures survived
  for (let t = KEEPER_TURNS / 2; t < KEEPER_TURNS; t++) keeperTurns.push(await post(`context/keeper/turn?session=do-1&turn=${t}`));
  const first = keeperTurns[KEEPER_TURNS / 2];
  assert.notEqual(first.report.unchangedPrefix, null, "the state of the previous isolate was loaded");
  for (const [t, turn] of keeperTurns.entries()) {
    assert.deepEqual(turn.valid, [], `turn ${t}`);
    assert.equal(turn.report.fits, true, `turn ${t}: ${turn.report.overBudget}`);
  }
  const { stats, offloads: stored, damaged, firstLines, readLines, readComplete } = await post("context/keeper/stats?session=do-1");
  assert.equal(stats.prepared, KEEPER_TURNS, "every prepare of both isolates is counted");
  // every result offloaded or cut in any output has its copy in the store, stored once
  const offloadedIds = new Set(keeperTurns.flatMap((turn) => turn.offloadedIds));
  const cutIds = new Set(keeperTurns.flatMap((turn) => turn.cutIds));
  assert.equal(offloadedIds.size, KEEPER_TURNS / 5, "each long result offloaded");
  assert.equal(stored, new Set([...offloadedIds, ...cutIds]).size, "each copy stored once");
  assert.equal(stats.events.offloads, KEEPER_TURNS / 5);
  assert.deepEqual(damaged, []);
  assert.equal(readLines, firstLines, "an offloaded result reads back whole");
  assert.equal(firstLines, 1_000);
  assert.equal(readComplete, true);
  // the window fills every five turns: compactions make the room (cuts are their fallback)
  assert.ok(stats.saved.offload > 0 && stats.saved.compact > 0, JSON.stringify(stats));
  assert.equal(stats.events.compactions, keeperTurns.filter((turn) => turn.report.decision === "compacted").length);
  assert.ok(stats.events.compactions > 0);
});
