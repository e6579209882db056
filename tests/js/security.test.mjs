// Security at the package's edge, through the built package: keys made from hostile tool names,
// call ids and session ids never leave their namespace and session (file system store in a
// temporary directory, IndexedDB through fake-indexeddb, memory); a grep pattern the model wrote
// with catastrophic backtracking returns at once on 100 KB, through every path a model reaches
// (grepOffloaded, the recovery tool, a keeper's tools); `__proto__` and `constructor` in
// messages and options change no prototype; a file system store under /proc fails with an error
// naming the directory instead of never settling.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { IDBFactory, IDBKeyRange } from "fake-indexeddb";
import * as ck from "context-keeper";
import { FileSystemStore, IndexedDBStore, MemoryStore, StoreError } from "context-keeper/stores";
import { HOSTILE_COMPONENTS } from "context-keeper/testing";
import { filesUnder } from "./store-fakes.mjs";

const {
  ContextKeeper, ContextKeeperError, countMessages, validateMessages, repairMessages, detectFormat,
  pruneMessages, evictToolInputs, offloadMessages, offloadToolResult, readOffloaded, listOffloaded,
  grepOffloaded, runRecoveryTool, activeMessages, isWithinLimit, modelInfo, listModels, countTokens,
} = ck;

// Ids and names a model or a hostile tool could produce, beyond the store suite's own list.
const HOSTILE = [...new Set([
  ...HOSTILE_COMPONENTS,
  "../../etc/passwd", "/etc/passwd", "/", "C:\\Windows\\System32", "..\\..\\x", "\\\\server\\share",
  "a\u0000/../../b", "context-keeper/victim/offload/x", "../victim", "%2e%2e%2fvictim", "..%2f..%2f",
  "\u202e\u0000", "x".repeat(100_000),
])].filter((id) => id !== ""); // an empty call id is not a tool call (its own error, not a key)

const output = (i) => Array.from({ length: 120 }, (_, line) => `result ${i} line ${line}: some tool output`).join("\n");

/** An OpenAI conversation with one offloadable result per id, each call named by another id. */
function conversation(ids) {
  return [
    { role: "user", content: "go" },
    ...ids.flatMap((id, i) => [
      { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: ids[(i + 7) % ids.length], arguments: "{}" } }] },
      { role: "tool", tool_call_id: id, content: output(i) },
    ]),
  ];
}

const snapshot = () => ({
  object: Object.getOwnPropertyNames(Object.prototype).sort(),
  array: Object.getOwnPropertyNames(Array.prototype).sort(),
  fn: Object.getOwnPropertyNames(Function.prototype).sort(),
});
const PRISTINE = snapshot();

function assertNoPollution(where) {
  assert.deepEqual(snapshot(), PRISTINE, `${where}: a prototype gained or lost a property`);
  for (const probe of [{}, [], () => {}]) {
    assert.equal(probe.polluted, undefined, `${where}: polluted is inherited`);
    assert.equal(probe.p2, undefined, `${where}: p2 is inherited`);
  }
  assert.equal(Object.prototype.constructor, Object, where);
}

const stores = {
  FileSystemStore: async () => {
    const root = await mkdtemp(join(tmpdir(), "ck-security-"));
    const dir = join(root, "store");
    return { store: new FileSystemStore({ dir }), root, dir, teardown: () => rm(root, { recursive: true, force: true }) };
  },
  IndexedDBStore: async () => ({ store: new IndexedDBStore({ indexedDB: new IDBFactory(), IDBKeyRange, name: "security" }), teardown: async () => {} }),
  MemoryStore: async () => ({ store: new MemoryStore(), teardown: async () => {} }),
};

describe("hostile tool names, call ids and session ids stay in their namespace and session", () => {
  for (const [name, setup] of Object.entries(stores)) {
    test(name, async () => {
      const { store, root, dir, teardown } = await setup();
      try {
        // The victim session holds one offloaded result before the hostile ones arrive.
        const victim = await offloadMessages(conversation(["call_victim"]), { store, sessionId: "victim", limitTokens: 100 });
        assert.equal(victim.report.edits.length, 1);
        const victimId = victim.report.edits[0].original.id;
        const victimText = (await readOffloaded(victimId, { store, sessionId: "victim" })).rendered;
        const sessions = ["../victim", "victim/..", "/victim", "victim\u0000", "__proto__", "constructor", "x".repeat(5_000), "..", "."];
        for (const sessionId of sessions) {
          const out = await offloadMessages(conversation(HOSTILE), { store, sessionId, limitTokens: 100 });
          assert.equal(out.report.failures.length, 0, `${name} ${sessionId.slice(0, 20)}: ${JSON.stringify(out.report.failures[0])}`);
          assert.equal(out.report.edits.length, HOSTILE.length);
          for (const [i, edit] of out.report.edits.entries()) {
            const key = edit.original.key;
            assert.deepEqual(key.slice(0, 3), ["context-keeper", sessionId, "offload"], `key of ${JSON.stringify(HOSTILE[i]).slice(0, 40)}`);
            assert.equal(key.length, 4);
            // Every result reads back whole in its own session.
            const read = await readOffloaded(edit.original.id, { store, sessionId, limit: 1_000 });
            assert.ok(read.rendered.includes(`result ${i} line 119: some tool output`), `read back ${JSON.stringify(HOSTILE[i]).slice(0, 40)}`);
          }
          const listed = await listOffloaded({ store, sessionId });
          assert.equal(listed.offloads.length, HOSTILE.length, `${sessionId.slice(0, 20)} lists its own records only`);
        }
        // A single result through offloadToolResult and a keeper's processToolResult, hostile too.
        for (const id of ["../../../../tmp/escaped", "/tmp/escaped", "..\\..\\escaped"]) {
          const single = await offloadToolResult(output(1), { store, sessionId: "../victim", toolName: id, toolCallId: id, limitTokens: 100 });
          assert.deepEqual(single.offloaded.key.slice(0, 3), ["context-keeper", "../victim", "offload"]);
        }
        const keeper = new ContextKeeper({ model: "gpt-4o", store, offload: { limitTokens: 100 } });
        try {
          const kept = await keeper.processToolResult(output(2), { sessionId: "/etc", toolName: "../../passwd", toolCallId: "/etc/shadow" });
          assert.deepEqual(kept.offloaded.key.slice(0, 2), ["context-keeper", "/etc"]);
        } finally {
          keeper.free();
        }
        // The victim's record is untouched and alone in its session; hostile ids read nothing there.
        assert.equal((await readOffloaded(victimId, { store, sessionId: "victim" })).rendered, victimText);
        assert.deepEqual((await listOffloaded({ store, sessionId: "victim" })).offloads.map((o) => o.id), [victimId]);
        for (const id of ["../../etc/passwd", `../victim/offload/${victimId}`, "..", "/", "__proto__", "constructor"]) {
          await assert.rejects(readOffloaded(id, { store, sessionId: "victim" }), (err) => err instanceof ContextKeeperError && err.kind === "notFound", id);
        }
        // Every key in the store starts with the namespace and one of the sessions used.
        const all = await store.loadRange([]);
        const used = new Set(["victim", ...sessions, "/etc"]);
        for (const { key } of all) {
          assert.equal(key[0], "context-keeper");
          assert.ok(used.has(key[1]), `a key outside the sessions used: ${JSON.stringify(key).slice(0, 80)}`);
        }
        if (root) {
          // Nothing beside the store's directory, and nothing in it but encoded names.
          assert.deepEqual(await readdir(root), ["store"]);
          const files = await filesUnder(dir);
          assert.equal(files.length, all.length);
          for (const file of files) {
            const rel = relative(dir, file);
            assert.ok(!rel.startsWith(".."), rel);
            for (const part of rel.split(sep)) assert.match(part, /^[a-z0-9_^%~-][a-z0-9_.^%~-]*=?$/, part.slice(0, 60));
          }
          assert.equal(existsSync("/tmp/escaped"), false);
        }
        assertNoPollution(name);
      } finally {
        await teardown();
      }
    });
  }
});

describe("a grep pattern with catastrophic backtracking returns in linear time", () => {
  // Each is exponential for a backtracking engine on its text (V8's own RegExp, measured here:
  // `(a+)+$` on 26 characters of the first text took 1.2 s, doubling with each character more);
  // the Rust regex crate is linear, and every path a model reaches runs it.
  // [pattern, a 100 KB line, whether that line matches]
  const cases = [
    ["(a+)+$", "a".repeat(100_000) + "!", false],
    ["(x+x+)+y", "x".repeat(100_000), false],
    ["^(a|a)*$", "a".repeat(100_000) + "b", false],
    ["(.*a){20}", "a".repeat(100_000), true],
    ["(\\w+\\s?)+$", "word ".repeat(20_000) + "!", false],
  ];
  const timings = {};
  for (const [pattern, text, longMatches] of cases) {
    test(`${pattern} on ${text.length} characters`, async () => {
      const store = new MemoryStore();
      const sessionId = "grep";
      const big = text + "\n" + "a line that matches nothing\n".repeat(100);
      const { offloaded } = await offloadToolResult(big, { store, sessionId, toolName: "read_file", toolCallId: "c1", limitTokens: 100 });
      assert.ok(offloaded, "the text is offloaded");
      const keeper = new ContextKeeper({ model: "gpt-4o", store });
      try {
        const paths = {
          grepOffloaded: () => grepOffloaded(pattern, { store, sessionId }),
          "grepOffloaded with id": () => grepOffloaded(pattern, { store, sessionId, id: offloaded.id }),
          runRecoveryTool: () => runRecoveryTool("grep_offloaded", { pattern }, { store, sessionId }),
          "keeper tools": () => keeper.tools({ sessionId }).handle("grep_offloaded", JSON.stringify({ pattern, ignore_case: true })),
        };
        for (const [path, run] of Object.entries(paths)) {
          const start = performance.now();
          const result = await run();
          const ms = performance.now() - start;
          timings[`${pattern} ${path}`] = Math.round(ms);
          assert.ok(result !== undefined && result !== null, path);
          // Linear: 100 KB goes in well under a second on a shared machine (a few ms alone).
          assert.ok(ms < 1_000, `${path}: ${ms.toFixed(0)} ms`);
        }
        // The result is right, too: the short lines as V8's RegExp sees them, the long one known.
        const found = await grepOffloaded(pattern, { store, sessionId, maxMatches: 1_000 });
        const short = new RegExp(pattern).test("a line that matches nothing") ? 100 : 0;
        assert.equal(found.matches.length, short + (longMatches ? 1 : 0), pattern);
      } finally {
        keeper.free();
      }
    });
  }
  test("a pattern too big to compile is a pattern-kind error, and grep works after", async () => {
    const store = new MemoryStore();
    await offloadToolResult("a\n".repeat(5_000), { store, sessionId: "s", toolName: "t", toolCallId: "c", limitTokens: 10 });
    for (const pattern of ["(a{1000}){1000}", "\\w{5000}{5000}", "(", "[z-a]"]) {
      const start = performance.now();
      await assert.rejects(grepOffloaded(pattern, { store, sessionId: "s" }), (err) => err instanceof ContextKeeperError && err.kind === "pattern", pattern.slice(0, 30));
      assert.ok(performance.now() - start < 1_000);
    }
    const after = await grepOffloaded("^a$", { store, sessionId: "s", maxMatches: 3 });
    assert.equal(after.matches.length, 3);
  });
  test("the timings (ms)", () => console.log(timings));
});

describe("__proto__ and constructor in messages and options change no prototype", () => {
  // JSON.parse makes `__proto__` an own property, as a request body parsed from the network has.
  const hostileMessages = () => JSON.parse(JSON.stringify(conversation(["c1", "__proto__", "constructor", "c4"]))
    .replace(/"role":"(user|tool|assistant)",/g, '"role":"$1","__proto__":{"polluted":1},"constructor":{"prototype":{"p2":1}},'));
  const hostileOptions = (extra = {}) => Object.assign(JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":{"p2":1}}}'), extra);

  /** Every object reached from `value` has a plain prototype, and none inherits `polluted`. */
  function assertPlain(value, where, seen = new Set()) {
    if (value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    const proto = Object.getPrototypeOf(value);
    const plain = proto === Object.prototype || proto === Array.prototype || proto === null || value instanceof Error || ArrayBuffer.isView(value);
    assert.ok(plain, `${where}: an object with prototype ${proto?.constructor?.name}`);
    assert.equal(value.polluted, Object.hasOwn(value, "polluted") ? value.polluted : undefined, where);
    for (const key of Object.keys(value)) assertPlain(value[key], `${where}.${key}`, seen);
  }

  test("messages with __proto__ and constructor keys", async () => {
    const input = hostileMessages();
    assert.ok(Object.hasOwn(input[0], "__proto__"), "the fixture holds an own __proto__ key");
    const before = JSON.stringify(input);
    const store = new MemoryStore();
    const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 2_000, store, offload: { limitTokens: 200 } });
    const calls = {
      detectFormat: () => detectFormat(input),
      countMessages: () => countMessages(input),
      isWithinLimit: () => isWithinLimit(input, 1_000_000),
      validateMessages: () => validateMessages(input),
      repairMessages: () => repairMessages(input),
      pruneMessages: () => pruneMessages(input, { keepLastAssistantTurns: 1, hardClearAfterTurns: 2 }),
      evictToolInputs: () => evictToolInputs(input),
      activeMessages: () => activeMessages(input),
      offloadMessages: () => offloadMessages(input, { store, sessionId: "s", limitTokens: 100 }),
      prepare: () => keeper.prepare(input, { sessionId: "k" }),
      plan: () => keeper.plan(input, { sessionId: "k2" }),
    };
    try {
      for (const [name, call] of Object.entries(calls)) {
        const result = await call();
        assertNoPollution(name);
        assertPlain(result, name);
        assert.equal(JSON.stringify(input), before, `${name} mutated its input`);
        const messages = result?.messages;
        if (Array.isArray(messages)) {
          // Edited or not, every message keeps its own __proto__ key as data, not as a prototype.
          for (const [i, message] of messages.entries()) {
            assert.equal(Object.getPrototypeOf(message), Object.prototype, `${name} [${i}]`);
            if (Object.hasOwn(input[i] ?? {}, "__proto__") && message.role === input[i].role) {
              assert.ok(Object.hasOwn(message, "__proto__"), `${name} [${i}] lost its __proto__ key`);
            }
          }
        }
      }
      const count = countMessages(input);
      assert.equal(count.total, countMessages(JSON.parse(before.replaceAll('"__proto__":{"polluted":1},', '"x_proto":{"polluted":1},'))).total, "__proto__ counts as any other key of its size");
    } finally {
      keeper.free();
    }
  });

  test("options with __proto__ and constructor keys", async () => {
    const input = conversation(["c1", "c2"]);
    const store = new MemoryStore();
    // Each is a result or a typed error; neither changes a prototype.
    const calls = {
      countMessages: () => countMessages(input, hostileOptions()),
      countTokens: () => countTokens("hello", hostileOptions()),
      modelInfo: () => modelInfo("gpt-4o", hostileOptions()),
      listModels: () => listModels(hostileOptions()),
      validateMessages: () => validateMessages(input, hostileOptions()),
      repairMessages: () => repairMessages(input, hostileOptions()),
      pruneMessages: () => pruneMessages(input, hostileOptions()),
      evictToolInputs: () => evictToolInputs(input, hostileOptions({ tools: hostileOptions() })),
      offloadMessages: () => offloadMessages(input, hostileOptions({ store, sessionId: "s" })),
      keeper: async () => {
        const keeper = new ContextKeeper(hostileOptions({ model: "gpt-4o", store }));
        try {
          return await keeper.prepare(input, hostileOptions({ sessionId: "s" }));
        } finally {
          keeper.free();
        }
      },
    };
    for (const [name, call] of Object.entries(calls)) {
      let result;
      try {
        result = await call();
      } catch (err) {
        assert.ok(err instanceof ContextKeeperError, `${name}: ${err}`);
        assert.ok(["options", "messages"].includes(err.kind), `${name}: ${err.kind}`);
      }
      assertNoPollution(name);
      assertPlain(result, name);
    }
  });
});

describe("FileSystemStore under /proc", { skip: !existsSync("/proc/self") && "no /proc here" }, () => {
  test("a save fails at once with an error naming the directory, instead of never settling", async () => {
    for (const dir of ["/proc/context-keeper-test", "/proc/self/context-keeper/deep"]) {
      const store = new FileSystemStore({ dir });
      let timer;
      const hang = new Promise((resolve) => { timer = setTimeout(() => resolve("hang"), 5_000); });
      const outcome = await Promise.race([store.save(["a", "b"], Uint8Array.of(1)).then(() => "saved", (err) => err), hang]);
      clearTimeout(timer);
      assert.ok(outcome instanceof StoreError, `${dir}: ${outcome}`);
      assert.match(outcome.message, /save \["a","b"\]: .*cannot create the directory \/proc\//);
      // The rest answers as for an empty store.
      assert.equal(await store.load(["a", "b"]), undefined);
      assert.deepEqual(await store.loadRange([]), []);
    }
  });

  test("a store in a normal directory still creates its missing parents", async () => {
    const root = await mkdtemp(join(tmpdir(), "ck-security-"));
    try {
      const store = new FileSystemStore({ dir: join(root, "a", "b", "c") });
      await store.save(["k", "l"], Uint8Array.of(7));
      assert.deepEqual(await store.load(["k", "l"]), Uint8Array.of(7));
      assert.ok((await stat(join(root, "a", "b", "c", "k"))).isDirectory());
      assert.ok((await readFile(join(root, "a", "b", "c", "k", "l="))).length > 1);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
