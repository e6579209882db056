// context-keeper/testing: the suite every store passes (`runStoreTests`), for ours and for
// adapters users bring, and `FaultyStore`, which makes a store fail on a schedule so code built
// on stores can prove it loses nothing. Plain JS with no test framework, so it runs in Node, a
// browser page and a Worker alike.
import { StoreError, StoreQuotaError } from "../stores/errors.js";

/** Key components no store may trust: each must stay apart from the others and round-trip exactly. */
export const HOSTILE_COMPONENTS = Object.freeze([
  "../../etc/passwd", "..", ".", "", "/", "\\", "a/b", "a\\b", "C:\\Windows", "__proto__", "constructor",
  "prototype", "hasOwnProperty", "\u0000", "a\u0000b", "A", "a", "%", "%2f", "^a", "~", "a~0123", "#", "x#0.0",
  "con", "NUL", "aux.txt", " ", "tab\there", "new\nline", "é", "e\u0301", "日本語", "😀", "\ud800", "\udc00x",
  "-", "_", ".hidden", "trailing.", "x".repeat(10_000), "é".repeat(3_000), "😀".repeat(2_000),
]);

const MiB = 1024 * 1024;

/**
 * The store suite. `setup()` returns a fresh, empty store dedicated to the test
 * (`{ store, reopen?, teardown? }`): `reopen()` gives a new store over the same backend, for the
 * persistence case, and `teardown()` cleans up. With `test` (node:test's `test`, vitest's `it`,
 * ...) each case is registered as a test; without, the cases run one after another and the
 * promise resolves with a report (`{ passed, failed, skipped, cases, timings }`).
 * @param {() => Promise<{ store: object, reopen?: () => Promise<object>, teardown?: () => Promise<void> }>} setup
 * @param {{ test?: (name: string, fn: () => Promise<void>) => unknown, largeBytes?: number, concurrency?: number, only?: string[] }} [options]
 */
export function runStoreTests(setup, { test, largeBytes = 50 * MiB, concurrency = 200, only } = {}) {
  if (typeof setup !== "function") throw new TypeError("runStoreTests: setup: expected a function returning { store, reopen?, teardown? }");
  const timings = {};
  const cases = CASES({ largeBytes, concurrency, timings }).filter(([name]) => !only || only.includes(name));
  const runCase = async (fn) => {
    const context = await setup();
    if (!isStoreLike(context?.store)) throw new TypeError("runStoreTests: setup() must resolve to { store } with load, save, remove, loadRange and removeRange");
    try {
      return await fn(context);
    } finally {
      await context.teardown?.();
    }
  };
  if (test) {
    for (const [name, fn] of cases) test(name, () => runCase(fn));
    return undefined;
  }
  return (async () => {
    const report = { passed: 0, failed: 0, skipped: 0, cases: [], timings };
    for (const [name, fn] of cases) {
      const start = now();
      try {
        const outcome = await runCase(fn);
        const skipped = outcome === SKIPPED;
        report[skipped ? "skipped" : "passed"]++;
        report.cases.push({ name, ok: true, skipped, ms: now() - start });
      } catch (err) {
        report.failed++;
        report.cases.push({ name, ok: false, ms: now() - start, error: `${err?.name ?? "Error"}: ${err?.message ?? String(err)}` });
      }
    }
    return report;
  })();
}

const SKIPPED = Symbol("skipped");
const now = () => globalThis.performance?.now() ?? Date.now();

/** The cases: [name, async ({ store, reopen }) => void]. */
function CASES({ largeBytes, concurrency, timings }) {
  return [
    ["load of a missing key resolves to undefined", async ({ store }) => {
      equal(await store.load(["suite", "missing"]), undefined, "load of a key never saved");
      deepEqual(await store.loadRange(["suite"]), [], "loadRange over an empty store");
    }],

    ["0 and 1 byte values round-trip as plain Uint8Arrays that are copies", async ({ store }) => {
      await store.save(["suite", "empty"], new Uint8Array(0));
      const empty = await store.load(["suite", "empty"]);
      bytesEqual(empty, new Uint8Array(0), "the 0-byte value");
      const one = Uint8Array.of(7);
      await store.save(["suite", "one"], one);
      one[0] = 8; // the caller's array changes after the save
      const back = await store.load(["suite", "one"]);
      bytesEqual(back, Uint8Array.of(7), "the 1-byte value (the caller changed its array after saving)");
      back[0] = 9; // and the returned one too
      bytesEqual(await store.load(["suite", "one"]), Uint8Array.of(7), "the 1-byte value (a returned array was changed)");
      // A view into a larger buffer saves only its own bytes.
      const buffer = Uint8Array.from({ length: 64 }, (_, i) => i);
      await store.save(["suite", "view"], buffer.subarray(10, 14));
      bytesEqual(await store.load(["suite", "view"]), Uint8Array.of(10, 11, 12, 13), "a subarray's bytes");
    }],

    [`a ${formatBytes(largeBytes)} value round-trips`, async ({ store }) => {
      const data = pattern(largeBytes, 1);
      let start = now();
      await store.save(["suite", "large"], data);
      timings.largeSaveMs = now() - start;
      start = now();
      const back = await store.load(["suite", "large"]);
      timings.largeLoadMs = now() - start;
      timings.largeBytes = largeBytes;
      bytesEqual(back, data, `the ${formatBytes(largeBytes)} value`);
      const range = await store.loadRange(["suite"]);
      equal(range.length, 1, "loadRange entries after one large save");
      bytesEqual(range[0].data, data, "the large value through loadRange");
    }],

    ["hostile key components stay apart and round-trip exactly", async ({ store }) => {
      const keys = [
        ...HOSTILE_COMPONENTS.map((c) => ["suite", c]),
        ...HOSTILE_COMPONENTS.map((c) => ["suite", "deep", c, c]),
        ["suite", "a", "b"], ["suite", "a/b"], ["suite", "a\u0000b"], ["suite", "ab"], ["suite", "a", "b", ""],
        ["suite", "", ""], ["suite", "", "", ""], ["suite", "..", "..", "etc", "passwd"],
      ];
      const unique = [...new Map(keys.map((k) => [JSON.stringify(k), k])).values()];
      await Promise.all(unique.map((key, i) => store.save(key, valueFor(i))));
      for (const [i, key] of unique.entries()) bytesEqual(await store.load(key), valueFor(i), `load ${short(key)}`);
      const range = await store.loadRange(["suite"]);
      sameEntries(range, unique.map((key, i) => ({ key, data: valueFor(i) })), "loadRange([\"suite\"])");
      const all = await store.loadRange([]);
      sameEntries(all, unique.map((key, i) => ({ key, data: valueFor(i) })), "loadRange([])");
      if (Object.keys(Object.prototype).length > 0 || ({}).constructor !== Object) throw new Error("a key changed Object.prototype");
    }],

    ["a prefix matches whole components only", async ({ store }) => {
      const keys = [["p"], ["p", "a"], ["p", "a", "x"], ["p", "a", "x", "y"], ["p", "ab"], ["p", "ab", "x"], ["p", "A"], ["p", "a.b"], ["q", "a"], ["pa"]];
      await Promise.all(keys.map((key, i) => store.save(key, valueFor(i))));
      const entries = (picked) => picked.map((key) => ({ key, data: valueFor(keys.findIndex((k) => JSON.stringify(k) === JSON.stringify(key))) }));
      sameEntries(await store.loadRange(["p", "a"]), entries([["p", "a"], ["p", "a", "x"], ["p", "a", "x", "y"]]), 'loadRange(["p", "a"])');
      sameEntries(await store.loadRange(["p"]), entries(keys.filter((k) => k[0] === "p")), 'loadRange(["p"])');
      sameEntries(await store.loadRange(["p", "a", "x", "y", "z"]), [], "loadRange below every key");
      sameEntries(await store.loadRange([]), entries(keys), "loadRange([])");
      await store.removeRange(["p", "a"]);
      sameEntries(await store.loadRange([]), entries(keys.filter((k) => !(k[0] === "p" && k[1] === "a"))), 'after removeRange(["p", "a"])');
      await store.removeRange(["p"]);
      sameEntries(await store.loadRange([]), entries([["q", "a"], ["pa"]]), 'after removeRange(["p"])');
      await store.removeRange([]);
      sameEntries(await store.loadRange([]), [], "after removeRange([])");
    }],

    [`${concurrency} concurrent saves and loads`, async ({ store }) => {
      const keys = Array.from({ length: concurrency }, (_, i) => ["suite", "many", `k${i}`]);
      await Promise.all(keys.map((key, i) => store.save(key, valueFor(i, 1 + (i % 7) * 300))));
      const loaded = await Promise.all(keys.map((key) => store.load(key)));
      loaded.forEach((data, i) => bytesEqual(data, valueFor(i, 1 + (i % 7) * 300), `load ${short(keys[i])}`));
      // Saves and loads of one key racing: every load sees one whole value.
      const racing = Array.from({ length: 8 }, (_, i) => pattern(3 * MiB + i * 1000, i + 10));
      const key = ["suite", "race"];
      const reads = [];
      await Promise.all(racing.map(async (value, i) => {
        await store.save(key, value);
        reads.push(await store.load(key));
        if (i % 2 === 0) reads.push(await store.load(key));
      }));
      for (const read of [...reads, await store.load(key)]) {
        if (!racing.some((value) => sameBytes(read, value))) throw new Error("a load during racing saves returned a value no save wrote");
      }
      equal((await store.loadRange(["suite", "race"])).length, 1, "entries under the raced key");
    }],

    ["overwrite replaces the whole value, large by small and back", async ({ store }) => {
      const key = ["suite", "over"];
      const large = pattern(5 * MiB + 17, 3);
      await store.save(key, large);
      await store.save(key, Uint8Array.of(1, 2, 3));
      bytesEqual(await store.load(key), Uint8Array.of(1, 2, 3), "small over large");
      sameEntries(await store.loadRange(["suite"]), [{ key, data: Uint8Array.of(1, 2, 3) }], "loadRange after small over large");
      await store.save(key, large);
      bytesEqual(await store.load(key), large, "large over small");
      const larger = pattern(7 * MiB, 4);
      await store.save(key, larger);
      bytesEqual(await store.load(key), larger, "large over large");
      await store.remove(key);
      equal(await store.load(key), undefined, "load after remove");
      sameEntries(await store.loadRange([]), [], "loadRange([]) after remove");
    }],

    ["remove and removeRange of what is not there resolve", async ({ store }) => {
      await store.remove(["suite", "never"]);
      await store.removeRange(["suite", "never"]);
      await store.save(["suite", "kept"], Uint8Array.of(1));
      await store.remove(["suite", "kept", "below"]);
      await store.remove(["suite"]);
      bytesEqual(await store.load(["suite", "kept"]), Uint8Array.of(1), "a value beside removed missing keys");
    }],

    ["values persist across a reopen", async ({ store, reopen }) => {
      if (!reopen) return SKIPPED;
      const keys = [["suite", "persist"], ["suite", "x".repeat(10_000), "__proto__"], ["suite", "big"]];
      const values = [Uint8Array.of(42), valueFor(5, 1000), pattern(3 * MiB, 9)];
      for (const [i, key] of keys.entries()) await store.save(key, values[i]);
      await store.close?.();
      const again = await reopen();
      try {
        for (const [i, key] of keys.entries()) bytesEqual(await again.load(key), values[i], `load ${short(key)} after reopening`);
        sameEntries(await again.loadRange(["suite"]), keys.map((key, i) => ({ key, data: values[i] })), "loadRange after reopening");
      } finally {
        await again.close?.();
      }
    }],
  ];
}

// --- checks (no assertion library, so the suite runs anywhere) ---

function equal(actual, expected, what) {
  if (!Object.is(actual, expected)) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`);
}

function deepEqual(actual, expected, what) {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)?.slice(0, 300)}`);
}

function bytesEqual(actual, expected, what) {
  if (!(actual instanceof Uint8Array)) throw new Error(`${what}: expected a Uint8Array, got ${actual === null ? "null" : typeof actual}`);
  if (Object.getPrototypeOf(actual) !== Uint8Array.prototype) throw new Error(`${what}: expected a plain Uint8Array, got a ${actual.constructor?.name}`);
  if (actual.byteLength !== expected.byteLength) throw new Error(`${what}: expected ${expected.byteLength} bytes, got ${actual.byteLength}`);
  const at = firstDifference(actual, expected);
  if (at >= 0) throw new Error(`${what}: bytes differ at offset ${at}`);
}

function sameBytes(a, b) {
  return a instanceof Uint8Array && a.byteLength === b.byteLength && firstDifference(a, b) < 0;
}

function firstDifference(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** Entries equal as sets (stores may return them in any order). */
function sameEntries(actual, expected, what) {
  if (!Array.isArray(actual)) throw new Error(`${what}: expected an array, got ${typeof actual}`);
  const key = (entry) => JSON.stringify(entry.key);
  const want = new Map(expected.map((e) => [key(e), e.data]));
  const got = new Map();
  for (const entry of actual) {
    if (!Array.isArray(entry?.key)) throw new Error(`${what}: an entry without a key array: ${JSON.stringify(entry)?.slice(0, 200)}`);
    if (got.has(key(entry))) throw new Error(`${what}: ${short(entry.key)} appears twice`);
    got.set(key(entry), entry.data);
  }
  const extra = [...got.keys()].filter((k) => !want.has(k));
  const missing = [...want.keys()].filter((k) => !got.has(k));
  if (extra.length || missing.length) {
    throw new Error(`${what}: ${missing.length} missing (${missing.slice(0, 3).map(shortJSON).join(", ")}), ${extra.length} unexpected (${extra.slice(0, 3).map(shortJSON).join(", ")})`);
  }
  for (const [k, data] of want) bytesEqual(got.get(k), data, `${what}: ${shortJSON(k)}`);
}

const shortJSON = (json) => (json.length > 80 ? `${json.slice(0, 60)}…(${json.length} chars)` : json);
const short = (key) => shortJSON(JSON.stringify(key));

/** A distinct small value for index i. */
function valueFor(i, length = 3) {
  return Uint8Array.from({ length }, (_, j) => (i * 31 + j * 7 + 1) & 0xff);
}

/** `length` bytes of a seeded pattern (not constant, so misplaced chunks show). */
function pattern(length, seed) {
  const out = new Uint8Array(length);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i += 4) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    out[i] = x; out[i + 1] = x >>> 8; out[i + 2] = x >>> 16; out[i + 3] = x >>> 24;
  }
  return out;
}

function formatBytes(n) {
  return n >= MiB ? `${+(n / MiB).toFixed(1)} MiB` : `${n} byte${n === 1 ? "" : "s"}`;
}

function isStoreLike(store) {
  return store != null && ["load", "save", "remove", "loadRange", "removeRange"].every((m) => typeof store[m] === "function");
}

// --- FaultyStore ---

const OPS = ["load", "save", "remove", "loadRange", "removeRange"];
const FAULTS = ["throw", "reject", "hang", "quota", "half", "missing", "garbage", "delay"];

/**
 * A store that forwards to `inner` and fails on a schedule. Faults: "throw" (synchronously),
 * "reject", "hang" (never settles), "quota" (rejects with a StoreQuotaError), "half" (a save
 * writes the first half of the value, then rejects), "missing" (a load finds nothing),
 * "garbage" (a load returns other bytes of the same length), "delay" (`ms` later, then as
 * usual). `schedule` is a list of rules `{ op?, fault, nth?, key?, times?, ms? }` (the first that
 * matches applies: `op` one operation or "*", `nth` the n-th call of that operation counting
 * from 1 or a list of them, `key` a prefix the key must start with, `times` how often it
 * fires) or a function `(op, key, n) => fault | { fault, ms } | undefined`. Every call is in `log`.
 */
export class FaultyStore {
  #inner;
  #schedule;
  #counts = Object.fromEntries(OPS.map((op) => [op, 0]));
  #fired = new Map();
  /** @type {Array<{ op: string, key: string[], n: number, fault: string | undefined }>} */
  log = [];

  constructor(inner, schedule = []) {
    if (!isStoreLike(inner)) throw new TypeError("FaultyStore: inner: expected a store (load, save, remove, loadRange, removeRange)");
    if (typeof schedule !== "function" && !Array.isArray(schedule)) throw new TypeError("FaultyStore: schedule: expected an array of rules or a function");
    if (Array.isArray(schedule)) {
      schedule.forEach((rule, i) => {
        if (!FAULTS.includes(rule?.fault)) throw new TypeError(`FaultyStore: schedule[${i}].fault: expected one of ${FAULTS.join(", ")}, found ${JSON.stringify(rule?.fault)}`);
        if (rule.op !== undefined && rule.op !== "*" && !OPS.includes(rule.op)) throw new TypeError(`FaultyStore: schedule[${i}].op: expected one of ${OPS.join(", ")} or "*", found ${JSON.stringify(rule.op)}`);
      });
    }
    this.#inner = inner;
    this.#schedule = schedule;
  }

  /** The store faults are injected into. */
  get inner() {
    return this.#inner;
  }

  /** Calls of each operation so far. */
  get counts() {
    return { ...this.#counts };
  }

  load(key) {
    return this.#call("load", key, async (fault) => {
      const data = await this.#inner.load(key);
      if (fault === "missing") return undefined;
      if (fault === "garbage" && data !== undefined) return garble(data);
      return data;
    });
  }

  save(key, data) {
    return this.#call("save", key, async (fault) => {
      if (fault === "half") {
        await this.#inner.save(key, data.slice(0, Math.floor(data.byteLength / 2)));
        throw new StoreError(`save ${JSON.stringify(key)}: injected fault: half the value was written`, { key });
      }
      return this.#inner.save(key, data);
    });
  }

  remove(key) {
    return this.#call("remove", key, () => this.#inner.remove(key));
  }

  loadRange(prefix) {
    return this.#call("loadRange", prefix, async (fault) => {
      const entries = await this.#inner.loadRange(prefix);
      if (fault === "missing") return entries.slice(1);
      if (fault === "garbage" && entries.length > 0) return [{ ...entries[0], data: garble(entries[0].data) }, ...entries.slice(1)];
      return entries;
    });
  }

  removeRange(prefix) {
    return this.#call("removeRange", prefix, () => this.#inner.removeRange(prefix));
  }

  async close() {
    await this.#inner.close?.();
  }

  #call(op, key, run) {
    const n = ++this.#counts[op];
    const { fault, ms } = this.#pick(op, key, n);
    this.log.push({ op, key: Array.isArray(key) ? [...key] : key, n, fault });
    const injected = (what) => `${op} ${JSON.stringify(key)}: injected fault: ${what}`;
    switch (fault) {
      case "throw":
        throw new StoreError(injected("thrown"), { key });
      case "reject":
        return Promise.reject(new StoreError(injected("rejected"), { key }));
      case "quota":
        return Promise.reject(new StoreQuotaError(injected("out of quota"), { key }));
      case "hang":
        return new Promise(() => {});
      case "delay":
        return new Promise((resolve) => setTimeout(resolve, ms ?? 10)).then(() => run(undefined));
      default:
        return Promise.resolve().then(() => run(fault));
    }
  }

  #pick(op, key, n) {
    if (typeof this.#schedule === "function") {
      const picked = this.#schedule(op, key, n);
      if (picked === undefined || picked === null) return {};
      const out = typeof picked === "string" ? { fault: picked } : picked;
      if (!FAULTS.includes(out.fault)) throw new TypeError(`FaultyStore: the schedule returned ${JSON.stringify(picked)}; expected one of ${FAULTS.join(", ")}`);
      return out;
    }
    for (const [i, rule] of this.#schedule.entries()) {
      if (rule.op !== undefined && rule.op !== "*" && rule.op !== op) continue;
      if (rule.nth !== undefined && !(Array.isArray(rule.nth) ? rule.nth.includes(n) : rule.nth === n)) continue;
      if (rule.key !== undefined && !(Array.isArray(key) && rule.key.every((c, j) => key[j] === c))) continue;
      const fired = this.#fired.get(i) ?? 0;
      if (rule.times !== undefined && fired >= rule.times) continue;
      this.#fired.set(i, fired + 1);
      return { fault: rule.fault, ms: rule.ms };
    }
    return {};
  }
}

/**
 * A seeded schedule for FaultyStore: each call fails with probability `rate`, with a fault
 * drawn from `faults` (those that apply to the operation). Same seed, same faults.
 * @param {{ seed?: number, rate?: number, faults?: string[] }} [options]
 */
export function randomFaults({ seed = 1, rate = 0.2, faults = ["throw", "reject", "quota", "half", "missing", "garbage"] } = {}) {
  let x = (seed >>> 0) || 0x9e3779b9;
  const next = () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 0x100000000;
  };
  const applies = { half: ["save"], missing: ["load", "loadRange"], garbage: ["load", "loadRange"] };
  return (op) => {
    const roll = next();
    const pick = next();
    const usable = faults.filter((f) => !applies[f] || applies[f].includes(op));
    if (roll >= rate || usable.length === 0) return undefined;
    return usable[Math.floor(pick * usable.length)];
  };
}

function garble(data) {
  const out = new Uint8Array(data.byteLength);
  for (let i = 0; i < out.length; i++) out[i] = data[i] ^ 0xa5;
  return out;
}
