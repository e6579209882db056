// Bad input at the package's edge, table by table, through the built package: every export
// with wrong types in every argument, unknown options, NaN, infinite, fractional and negative
// limits, stores that return what is not a value, summarizers and flushes that return what is
// not a string or throw what is not an Error, a 100 MB string and 200,000 messages. Each call
// gives a ContextKeeperError naming the field (kind and path) or a correct result: never a wasm
// trap, a TypeError of the glue, or a hang; and after each, the instance still counts a known
// text as npm tiktoken does.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import * as ck from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { referenceCount } from "./reference.mjs";

const {
  ContextKeeper, ContextKeeperError, detectFormat, validateMessages, repairMessages, modelInfo,
  countMessages, isWithinLimit, calibrate, clearCalibration, clearCountCache, countTokens,
  estimateTokens, pruneMessages, evictToolInputs, offloadToolResult, offloadMessages,
  readOffloaded, listOffloaded, grepOffloaded, recoveryTools, runRecoveryTool, compact,
  rollingWindow, readArchive, activeMessages,
} = ck;

const KINDS = new Set(["messages", "options", "encoding", "model", "store", "timeout", "notFound", "corrupt", "pattern", "busy"]);

// The instance keeps working: a known text counts as npm tiktoken counts it, and the estimate
// and a small conversation's count are what they were before any bad call.
const KNOWN = "The quick brown fox jumps over the lazy dog. 東京オフィス 🙂 fn main() {}";
const SMALL = [{ role: "user", content: "hello there" }, { role: "assistant", content: "hi, how can I help?" }];
const EXPECTED = { o200k: referenceCount(KNOWN, "o200k_base"), cl100k: referenceCount(KNOWN, "cl100k_base") };
const BASELINE = { estimate: estimateTokens(KNOWN), small: countMessages(SMALL, { model: "gpt-4o" }).total };

function assertAlive(where) {
  assert.equal(countTokens(KNOWN), EXPECTED.o200k, `${where}: o200k count after the call`);
  assert.equal(countTokens(KNOWN, { encoding: "cl100k_base" }), EXPECTED.cl100k, `${where}: cl100k count after the call`);
  assert.equal(estimateTokens(KNOWN), BASELINE.estimate, `${where}: estimate after the call`);
  assert.equal(countMessages(SMALL, { model: "gpt-4o" }).total, BASELINE.small, `${where}: countMessages after the call`);
}

/** Runs `call` (sync or async) within `ms`: `{ value }` or `{ error }`; a hang fails. */
async function settle(call, where, ms = 10_000) {
  let timer;
  const hang = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${where}: no answer in ${ms} ms`)), ms); });
  try {
    return { value: await Promise.race([Promise.resolve().then(call), hang]) };
  } catch (error) {
    if (error instanceof Error && error.message === `${where}: no answer in ${ms} ms`) throw error;
    return { error };
  } finally {
    clearTimeout(timer);
  }
}

/** A ContextKeeperError of a known kind; `path` (string or RegExp) when given. */
function assertTyped(error, where, { kind, path } = {}) {
  assert.ok(error instanceof ContextKeeperError, `${where}: ${error?.name}: ${error?.message ?? String(error)}`);
  assert.ok(KINDS.has(error.kind), `${where}: kind ${error.kind}`);
  if (kind !== undefined) assert.equal(error.kind, kind, `${where}: ${error.message}`);
  if (path instanceof RegExp) assert.match(String(error.path), path, `${where}: ${error.message}`);
  else if (path !== undefined) assert.equal(error.path, path, `${where}: ${error.message}`);
  if (error.kind === "options" || error.kind === "messages") assert.ok(error.path, `${where}: no path in ${error.message}`);
  assert.ok(!/unreachable|RuntimeError|memory access/.test(error.message), `${where}: ${error.message}`);
}

/** An agent conversation: `n` tool exchanges of `chars`-character results, each answered. */
const agent = (n, chars = 2_000) => [
  { role: "system", content: "You are a coding agent." },
  { role: "user", content: "Fix the failing test." },
  ...Array.from({ length: n }, (_, i) => [
    { role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "read_file", arguments: `{"path":"src/f${i}.rs"}` } }] },
    { role: "tool", tool_call_id: `c${i}`, content: `line ${i} of the file\n`.repeat(Math.ceil(chars / 20)).slice(0, chars) },
    { role: "assistant", content: `Read file ${i}.` },
    { role: "user", content: `Go on with file ${i + 1}.` },
  ]).flat(),
];

/** A chat long enough that only a compaction brings it under a 4,000-token window. */
const chat = (turns = 40) => [
  { role: "system", content: "You are helpful." },
  ...Array.from({ length: turns }, (_, i) => [
    { role: "user", content: `Question ${i}: ` + "tell me more about the design of the parser. ".repeat(12) },
    { role: "assistant", content: `Answer ${i}: ` + "the parser reads each message once and keeps its spans. ".repeat(12) },
  ]).flat(),
];

// ---------------------------------------------------------------------------------------------
// 1. Every export, every argument, every wrong type.

const throwing = new Error("the caller's own getter threw");
const proxy = new Proxy({}, { get() { throw throwing; }, ownKeys() { throw throwing; }, has() { throw throwing; }, getPrototypeOf() { throw throwing; } });
let cyclic = { a: 1 };
cyclic.self = cyclic;
let deep = [];
for (let i = 0; i < 100_000; i++) deep = [deep];

const WRONG = {
  undefined: undefined, null: null, number: 5, NaN: NaN, negative: -1, Infinity: Infinity, string: "x",
  emptyString: "", array: [], object: {}, symbol: Symbol("s"), bigint: 10n, function: () => 1,
  date: new Date(0), bytes: new Uint8Array(3), cyclic, deep, proxy,
};

const store = new MemoryStore();
const session = { store, sessionId: "edge" };
// A real offloaded record and a real archive, for the readers' good arguments.
const seeded = await offloadToolResult("a line of output\n".repeat(2_000), { ...session, toolName: "read_file", toolCallId: "seed", limitTokens: 100 });
const archived = await compact(chat(), { ...session, contextWindow: 4_000, summarize: () => "The user asked about the parser; the answers explained its spans.", now: 0 });
assert.ok(seeded.offloaded && archived.marker?.key, "the seeds are stored");
// Each export with arguments that work; the matrix replaces one at a time.
const EXPORTS = {
  detectFormat: [(a) => detectFormat(a), [SMALL]],
  validateMessages: [(a, b) => validateMessages(a, b), [SMALL, {}]],
  repairMessages: [(a, b) => repairMessages(a, b), [SMALL, {}]],
  modelInfo: [(a, b) => modelInfo(a, b), ["gpt-4o", {}]],
  countMessages: [(a, b) => countMessages(a, b), [SMALL, {}]],
  isWithinLimit: [(a, b, c) => isWithinLimit(a, b, c), [SMALL, 1_000, {}]],
  calibrate: [(a) => calibrate(a), [{ model: "claude-sonnet-4-5", messages: SMALL, inputTokens: 30 }]],
  countTokens: [(a, b) => countTokens(a, b), ["hello", {}]],
  estimateTokens: [(a) => estimateTokens(a), ["hello"]],
  pruneMessages: [(a, b) => pruneMessages(a, b), [agent(2), {}]],
  evictToolInputs: [(a, b) => evictToolInputs(a, b), [agent(2), {}]],
  activeMessages: [(a, b) => activeMessages(a, b), [SMALL, {}]],
  offloadToolResult: [(a, b) => offloadToolResult(a, b), ["x".repeat(100), { ...session, toolName: "t", toolCallId: "c" }]],
  offloadMessages: [(a, b) => offloadMessages(a, b), [agent(2), session]],
  readOffloaded: [(a, b) => readOffloaded(a, b), [seeded.offloaded.id, session]],
  listOffloaded: [(a) => listOffloaded(a), [session]],
  grepOffloaded: [(a, b) => grepOffloaded(a, b), ["x", session]],
  recoveryTools: [(a, b) => recoveryTools(a, b), ["aisdk", session]],
  runRecoveryTool: [(a, b, c) => runRecoveryTool(a, b, c), ["list_offloaded", {}, session]],
  compact: [(a, b) => compact(a, b), [agent(3), { ...session, now: 0 }]],
  rollingWindow: [(a, b) => rollingWindow(a, b), [agent(3), { ...session, now: 0 }]],
  readArchive: [(a, b) => readArchive(a, b), [archived.marker, { store }]],
  ContextKeeper: [(a) => new ContextKeeper(a), [{ model: "gpt-4o", store }]],
  "ContextKeeper.prepare": [(a, b) => new ContextKeeper({ model: "gpt-4o", store }).prepare(a, b), [SMALL, { sessionId: "edge" }]],
  "ContextKeeper.processToolResult": [(a, b) => new ContextKeeper({ model: "gpt-4o", store }).processToolResult(a, b), ["x", { sessionId: "edge" }]],
  "ContextKeeper.recordUsage": [(a, b) => new ContextKeeper({ model: "claude-sonnet-4-5", store }).recordUsage(a, b), ["edge", { inputTokens: 10 }]],
  "ContextKeeper.stats": [(a) => new ContextKeeper({ model: "gpt-4o", store }).stats(a), ["edge"]],
  "ContextKeeper.tools": [(a) => new ContextKeeper({ model: "gpt-4o", store }).tools(a), [{ sessionId: "edge" }]],
};

describe("every export, every argument, every wrong type: a typed error or a result", () => {
  for (const [name, [call, args]] of Object.entries(EXPORTS)) {
    test(name, async () => {
      const good = await settle(() => call(...args), `${name}(good)`);
      assert.equal(good.error, undefined, `${name} with good arguments: ${good.error}`);
      for (let position = 0; position < args.length; position++) {
        for (const [label, wrong] of Object.entries(WRONG)) {
          const where = `${name} argument ${position} = ${label}`;
          const bad = [...args];
          bad[position] = wrong;
          const { error } = await settle(() => call(...bad), where);
          // The caller's own getter's exception passes through as it was; anything else thrown
          // is the package's typed error.
          if (error !== undefined && error !== throwing) assertTyped(error, where);
        }
        assertAlive(`${name} argument ${position}`);
      }
    });
  }
  test("clearCalibration and clearCountCache take no arguments and ignore any", () => {
    for (const wrong of Object.values(WRONG)) {
      clearCalibration(wrong);
      clearCountCache(wrong);
    }
    assertAlive("clear*");
  });
});

// ---------------------------------------------------------------------------------------------
// 2. Limits and options: NaN, infinities, fractions, negatives and unknown names, field by field.

const NUMBERS = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity, "-1": -1, "1.5": 1.5, '"5"': "5" };
// [label, call taking the value, the path its error names, values that are fine (as a result)]
const LIMITS = [
  ["isWithinLimit limit", (v) => isWithinLimit(SMALL, v), "limit", ["1.5", "Infinity"]],
  ["offloadMessages limitTokens", (v) => offloadMessages(agent(2), { ...session, limitTokens: v }), "options.limitTokens"],
  ["offloadMessages previewLines", (v) => offloadMessages(agent(2), { ...session, previewLines: v }), "options.previewLines"],
  ["offloadMessages timeoutMs", (v) => offloadMessages(agent(2), { ...session, timeoutMs: v }), "options.timeoutMs", ["Infinity", "1.5"]],
  ["offloadToolResult limitTokens", (v) => offloadToolResult("x", { ...session, limitTokens: v }), "options.limitTokens"],
  ["pruneMessages softTrimChars", (v) => pruneMessages(agent(2), { softTrimChars: v }), "options.softTrimChars"],
  ["pruneMessages keepLastAssistantTurns", (v) => pruneMessages(agent(2), { keepLastAssistantTurns: v }), "options.keepLastAssistantTurns"],
  ["pruneMessages hardClearAfterTurns", (v) => pruneMessages(agent(2), { hardClearAfterTurns: v }), "options.hardClearAfterTurns"],
  ["evictToolInputs clearAtLeastTokens", (v) => evictToolInputs(agent(2), { clearAtLeastTokens: v }), /^options\.clearAtLeastTokens$|^options$/],
  ["readOffloaded offset", (v) => readOffloaded("x", { ...session, offset: v }), "options.offset"],
  ["readOffloaded limit", (v) => readOffloaded("x", { ...session, limit: v }), "options.limit"],
  ["grepOffloaded maxMatches", (v) => grepOffloaded("x", { ...session, maxMatches: v }), "options.maxMatches"],
  ["grepOffloaded lineChars", (v) => grepOffloaded("x", { ...session, lineChars: v }), "options.lineChars"],
  ["compact keepRecentTurns", (v) => compact(agent(3), { ...session, keepRecentTurns: v }), "options.keepRecentTurns"],
  ["compact contextWindow", (v) => compact(agent(3), { ...session, contextWindow: v }), "options.contextWindow"],
  ["rollingWindow keepIterations", (v) => rollingWindow(agent(3), { ...session, keepIterations: v }), "options.keepIterations"],
  ["rollingWindow resummarizeEvery", (v) => rollingWindow(agent(3), { ...session, resummarizeEvery: v }), "options.resummarizeEvery"],
  ["ContextKeeper contextWindow", (v) => new ContextKeeper({ model: "gpt-4o", store, contextWindow: v }), "options.contextWindow"],
  ["ContextKeeper thresholds.prune", (v) => new ContextKeeper({ model: "gpt-4o", store, thresholds: { prune: v } }), "options.thresholds.prune", ["1.5"]],
  ["ContextKeeper thresholds.compactTarget", (v) => new ContextKeeper({ model: "gpt-4o", store, thresholds: { compactTarget: v } }), "options.thresholds.compactTarget", ["1.5"]],
  ["ContextKeeper offload.limitTokens", (v) => new ContextKeeper({ model: "gpt-4o", store, offload: { limitTokens: v } }), "options.offload.limitTokens"],
  ["ContextKeeper timeoutMs", (v) => new ContextKeeper({ model: "gpt-4o", store, timeoutMs: v }), "options.timeoutMs", ["Infinity", "1.5"]],
  // The flush's figures sit among the keeper's and the compaction's own options.
  ["ContextKeeper reserveTokens", (v) => new ContextKeeper({ model: "gpt-4o", store, reserveTokens: v }), "options.reserveTokens", ["1.5"]],
  ["ContextKeeper flushMargin", (v) => new ContextKeeper({ model: "gpt-4o", store, flushMargin: v }), "options.flushMargin", ["1.5"]],
  ["compact reserveTokens", (v) => compact(agent(3), { ...session, reserveTokens: v }), "options.reserveTokens", ["1.5"]],
  ["compact flushMargin", (v) => compact(agent(3), { ...session, flushMargin: v }), "options.flushMargin", ["1.5"]],
  ["calibrate inputTokens", (v) => calibrate({ model: "claude-sonnet-4-5", messages: SMALL, inputTokens: v }), "usage.inputTokens"],
  ["modelInfo models[].contextWindow", (v) => modelInfo("mine", { models: { mine: { contextWindow: v } } }), /^options\.models(\.mine|\["mine"\])\.contextWindow$/],
];

describe("NaN, infinite, fractional, negative and string limits name their field", () => {
  for (const [label, call, path, fine = []] of LIMITS) {
    test(label, async () => {
      for (const [name, value] of Object.entries(NUMBERS)) {
        const where = `${label} = ${name}`;
        const { value: result, error } = await settle(() => call(value), where);
        if (fine.includes(name)) {
          if (error !== undefined) assertTyped(error, where);
          continue;
        }
        assert.ok(error !== undefined, `${where}: accepted (${JSON.stringify(result)?.slice(0, 80)})`);
        assertTyped(error, where, { kind: "options", path });
      }
      assertAlive(label);
    });
  }
  test("a zero window or threshold is an options error, not management silently off", async () => {
    assertTyped((await settle(() => new ContextKeeper({ model: "gpt-4o", store, contextWindow: 0 }), "window 0")).error, "window 0", { kind: "options", path: "options.contextWindow" });
    assertTyped((await settle(() => new ContextKeeper({ model: "gpt-4o", store, thresholds: { prune: 0 } }), "prune 0")).error, "prune 0", { kind: "options", path: "options.thresholds.prune" });
    // The limits that mean "as small as can be" still work and say what they did.
    assert.equal(isWithinLimit(SMALL, 0), false);
    const keeper = new ContextKeeper({ model: "gpt-4o", store, thresholds: { prune: 0.5, compact: 0.9 } });
    assert.ok(keeper.budget.pruneAt < keeper.budget.compactAt);
    keeper.free();
  });
});

// Every export that takes options, with one it does not know.
const UNKNOWN = [
  ["countMessages", (o) => countMessages(SMALL, o)],
  ["isWithinLimit", (o) => isWithinLimit(SMALL, 1_000, o)],
  ["modelInfo", (o) => modelInfo("gpt-4o", o)],
  ["listModels", (o) => ck.listModels(o)],
  ["pruneMessages", (o) => pruneMessages(agent(2), o)],
  ["evictToolInputs", (o) => evictToolInputs(agent(2), o)],
  ["activeMessages", (o) => activeMessages(SMALL, o)],
  ["offloadMessages", (o) => offloadMessages(agent(2), { ...session, ...o })],
  ["offloadToolResult", (o) => offloadToolResult("x", { ...session, ...o })],
  ["grepOffloaded", (o) => grepOffloaded("x", { ...session, ...o })],
  ["compact", (o) => compact(agent(3), { ...session, ...o })],
  ["rollingWindow", (o) => rollingWindow(agent(3), { ...session, ...o })],
  ["ContextKeeper", (o) => new ContextKeeper({ model: "gpt-4o", store, ...o })],
  ["ContextKeeper.thresholds", (o) => new ContextKeeper({ model: "gpt-4o", store, thresholds: o })],
  ["ContextKeeper.offload", (o) => new ContextKeeper({ model: "gpt-4o", store, offload: o })],
];
// Options read through a few named getters (the hot path, or a bag shared with other APIs):
// an unknown name there changes nothing, which the test checks instead.
const IGNORED = [
  ["countTokens", (o) => countTokens(KNOWN, o), () => countTokens(KNOWN)],
  ["validateMessages", (o) => validateMessages(agent(1), o), () => validateMessages(agent(1))],
  ["repairMessages", (o) => repairMessages(SMALL, o).messages, () => repairMessages(SMALL).messages],
  ["listOffloaded", (o) => listOffloaded({ ...session, ...o }).then((r) => r.offloads.length), () => listOffloaded(session).then((r) => r.offloads.length)],
  ["readOffloaded", (o) => readOffloaded("nothing", { ...session, ...o }).catch((e) => e.kind), () => readOffloaded("nothing", session).catch((e) => e.kind)],
];

describe("unknown options", () => {
  for (const [label, call] of UNKNOWN) {
    test(`${label}: an options error naming the unknown field`, async () => {
      for (const name of ["modle", "limit_tokens", "__proto__x"]) {
        const { error } = await settle(() => call({ [name]: 1 }), `${label} ${name}`);
        assertTyped(error, `${label} ${name}`, { kind: "options", path: new RegExp(`^options(\\.\\w+)*(\\.${name})?$`) });
        assert.ok(error.message.includes(name), `${label}: the message names ${name}: ${error.message}`);
      }
      assertAlive(label);
    });
  }
  for (const [label, withUnknown, without] of IGNORED) {
    test(`${label}: an unknown option changes nothing`, async () => {
      assert.deepEqual(await withUnknown({ modle: "gpt-4o", bogus: NaN }), await without());
      assertAlive(label);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// 3. Stores that return what is not a value.

const NOT_VALUES = { string: "bytes", number: 5, array: [1, 2, 3], object: { 0: 1 }, arrayBuffer: new ArrayBuffer(4), dataView: new DataView(new ArrayBuffer(4)), true: true };

/** A store whose every read gives `value` (and whose range reads give it as entries' data). */
const lyingStore = (value) => ({
  load: async () => value,
  save: async () => {},
  remove: async () => {},
  loadRange: async (prefix) => [{ key: [...prefix, "record"], data: value }],
  removeRange: async () => {},
});

describe("a store that returns what is not a Uint8Array is a store-kind error", () => {
  for (const [label, value] of Object.entries(NOT_VALUES)) {
    test(label, async () => {
      const liar = lyingStore(value);
      const calls = {
        readOffloaded: () => readOffloaded("record", { store: liar, sessionId: "s" }),
        listOffloaded: () => listOffloaded({ store: liar, sessionId: "s" }),
        grepOffloaded: () => grepOffloaded("x", { store: liar, sessionId: "s" }),
        "grepOffloaded by id": () => grepOffloaded("x", { store: liar, sessionId: "s", id: "record" }),
        "runRecoveryTool read": () => runRecoveryTool("read_offloaded", { id: "record" }, { store: liar, sessionId: "s" }),
        readArchive: () => readArchive(["context-keeper", "s", "archive", "a"], { store: liar }),
        compact: () => compact(chat(), { store: liar, sessionId: "s", summarize: () => "short summary" }),
        rollingWindow: () => rollingWindow(agent(6), { store: liar, sessionId: "s", keepIterations: 1 }),
        "ContextKeeper.prepare": () => new ContextKeeper({ model: "gpt-4o", store: liar }).prepare(SMALL, { sessionId: "s" }),
        "ContextKeeper.stats": () => new ContextKeeper({ model: "gpt-4o", store: liar }).stats("s"),
        "ContextKeeper.loadMemory": () => new ContextKeeper({ model: "gpt-4o", store: liar }).loadMemory(),
      };
      for (const [name, call] of Object.entries(calls)) {
        const where = `${name} given ${label}`;
        const { value: result, error } = await settle(call, where);
        // The recovery tool hands the model a text; everything else rejects with the store's kind.
        if (name === "runRecoveryTool read") {
          assert.equal(error?.kind, "store", `${where}: ${error ?? result}`);
          continue;
        }
        // A prepare is made without a state it cannot read, and says why (issue #42).
        if (name === "ContextKeeper.prepare") {
          assert.equal(error, undefined, `${where}: ${error}`);
          assert.match(result.report.stateFailure, /not a Uint8Array.*made without the session's state/, where);
          continue;
        }
        assert.ok(error !== undefined, `${where}: accepted (${JSON.stringify(result)?.slice(0, 100)})`);
        assertTyped(error, where, { kind: "store" });
        assert.match(error.message, /not a Uint8Array|not a value|not an array|is damaged/, where);
      }
      assertAlive(label);
    });
  }
  test("a store whose loadRange gives no array, or entries without keys, is a store-kind error or skips them", async () => {
    for (const [label, range] of Object.entries({ string: "x", object: {}, null: null, number: 1 })) {
      const liar = { ...lyingStore(undefined), loadRange: async () => range };
      assertTyped((await settle(() => listOffloaded({ store: liar, sessionId: "s" }), label)).error, `loadRange ${label}`, { kind: "store" });
    }
    const partial = { ...lyingStore(undefined), loadRange: async () => [null, 5, { key: "x" }, { key: ["context-keeper", "s", "offload"] }] };
    assert.deepEqual((await listOffloaded({ store: partial, sessionId: "s" })).offloads, []);
    assertAlive("loadRange");
  });
});

// ---------------------------------------------------------------------------------------------
// 4. Summarizers and flushes that return what is not a string, or throw what is not an Error.

const BAD_CALLBACKS = {
  "returns 42": () => 42,
  "returns an object": () => ({ text: "summary" }),
  "returns undefined": () => undefined,
  "returns null": () => null,
  "resolves 7": async () => 7,
  "throws 42": () => { throw 42; },
  "throws null": () => { throw null; },
  "throws undefined": () => { throw undefined; },
  "rejects with a string": async () => { throw "model overloaded"; },
  "throws a symbol": () => { throw Symbol("s"); },
  "throws an object whose toString throws": () => { throw { toString() { throw new Error("toString"); } }; },
};

describe("a summarizer or flush that misbehaves leaves the messages as they were, and says why", () => {
  for (const [label, callback] of Object.entries(BAD_CALLBACKS)) {
    test(label, async () => {
      const history = chat();
      const before = JSON.stringify(history);
      const s = new MemoryStore();
      const compacted = await compact(history, { store: s, sessionId: "s", summarize: callback, contextWindow: 4_000 });
      assert.equal(compacted.report.outcome, "failed", `compact: ${compacted.report.outcome}`);
      assert.match(compacted.report.reason, /summar/, compacted.report.reason);
      assert.deepEqual(compacted.messages, history);
      assert.ok(compacted.messages.every((m, i) => m === history[i]), "the caller's own objects");

      const rolled = await rollingWindow(agent(12), { store: s, sessionId: "r", summarize: callback, keepIterations: 2, resummarizeEvery: 2 });
      assert.equal(rolled.report.outcome, "failed", `rolling: ${rolled.report.outcome}`);

      const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 4_000, store: s, summarize: callback });
      const prepared = await keeper.prepare(history, { sessionId: "k" });
      assert.equal(prepared.report.decision, "compactionFailed", `keeper: ${prepared.report.decision}`);
      assert.ok(prepared.report.failures.length > 0 || prepared.report.compaction?.reason, "the report says why");
      keeper.free();

      // A flush that misbehaves is reported and the compaction goes on.
      const flusher = new ContextKeeper({ model: "gpt-4o", contextWindow: 4_000, store: s, flush: callback, summarize: () => "The user asked about the parser; the answers explained its spans." });
      const flushed = await flusher.prepare(chat(), { sessionId: "f" });
      assert.notEqual(flushed.report.decision, "under");
      flusher.free();
      assert.equal(JSON.stringify(history), before, "the input is never mutated");
      assertAlive(label);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// 5. Size: a 100 MB string, 200,000 messages.

describe("size", () => {
  const sentence = "The quick brown fox jumps over the lazy dog. ";
  const repeats = Math.ceil((100 * 1024 * 1024) / sentence.length);
  let big;

  test("a 100 MB string: countTokens and estimateTokens count it, as its parts add up", () => {
    big = sentence.repeat(repeats);
    // Each repeat after the first adds what the second adds to the first (BPE pieces do not
    // cross ". T"): exact counts of the whole follow from two short counts.
    for (const encoding of ["o200k_base", "cl100k_base"]) {
      const one = countTokens(sentence, { encoding });
      const step = countTokens(sentence.repeat(2), { encoding }) - one;
      assert.equal(countTokens(sentence.repeat(1_000), { encoding }), one + 999 * step, encoding);
      const start = performance.now();
      assert.equal(countTokens(big, { encoding }), one + (repeats - 1) * step, encoding);
      console.log(`countTokens 100 MB ${encoding}: ${(performance.now() - start).toFixed(0)} ms`);
    }
    const start = performance.now();
    const estimate = estimateTokens(big);
    console.log(`estimateTokens 100 MB: ${(performance.now() - start).toFixed(0)} ms`);
    const exact = countTokens(big);
    assert.ok(Math.abs(estimate - exact) / exact < 0.3, `estimate ${estimate} vs ${exact}`);
    assert.equal(estimateTokens(big), estimate, "the same estimate twice");
    assert.equal(countMessages([{ role: "user", content: big }], { model: "gpt-4o" }).byKind.text, exact);
    big = undefined;
    assertAlive("100 MB");
  });

  test("200,000 messages: countMessages, isWithinLimit and prepare", async () => {
    const messages = Array.from({ length: 200_000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `message number ${i}` }));
    let start = performance.now();
    const count = countMessages(messages, { model: "gpt-4o" });
    console.log(`countMessages 200,000 messages: ${(performance.now() - start).toFixed(0)} ms`);
    assert.equal(count.perMessage.length, messages.length);
    assert.equal(count.perMessage.reduce((a, b) => a + b, 0) + 3, count.total);
    for (const i of [0, 1, 99_999, 199_999]) {
      assert.equal(count.perMessage[i], countMessages([messages[i]], { model: "gpt-4o" }).total - 3, `message ${i}`);
    }
    start = performance.now();
    assert.equal(isWithinLimit(messages, count.total, { model: "gpt-4o" }), count.total);
    assert.equal(isWithinLimit(messages, count.total - 1, { model: "gpt-4o" }), false);
    console.log(`isWithinLimit 200,000 messages twice: ${(performance.now() - start).toFixed(0)} ms`);

    const keeper = new ContextKeeper({ model: "gpt-4o", store: new MemoryStore() });
    start = performance.now();
    const { messages: out, report } = await keeper.prepare(messages, { sessionId: "big" });
    console.log(`prepare 200,000 messages: ${(performance.now() - start).toFixed(0)} ms, ${report.decision}, ${report.tokensBefore} -> ${report.tokensAfter} tokens`);
    assert.equal(report.tokensBefore, count.total);
    assert.ok(report.fits, `does not fit: ${report.overBudget}`);
    assert.ok(report.tokensAfter <= keeper.budget.window);
    assert.equal(countMessages(out, { model: "gpt-4o" }).total, report.tokensAfter);
    assert.deepEqual(validateMessages(out), []);
    assert.equal(out.at(-1), messages.at(-1), "the latest message is the caller's own");
    keeper.free();
    assertAlive("200,000 messages");
  });
});
