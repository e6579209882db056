// context-keeper/stores in Node: the shared suite (context-keeper/testing) over the memory,
// file-system, IndexedDB (fake-indexeddb), routing, Durable Object and KV stores (the last two
// over stand-ins with the real limits; tests/workerd runs them over the real bindings), then
// what each adapter promises beyond the suite: no path outside the directory, quota and
// upgrades in IndexedDB, torn chunked writes, and FaultyStore's faults.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { IDBFactory, IDBKeyRange } from "fake-indexeddb";
import {
  DurableObjectStore, FileSystemStore, IndexedDBStore, KVStore, MemoryStore, RoutingStore, StoreError, StoreQuotaError,
  decodeComponent, encodeComponent, loadJSON, loadText, saveJSON, saveText, storeKey,
} from "context-keeper/stores";
import { FaultyStore, HOSTILE_COMPONENTS, randomFaults, runStoreTests } from "context-keeper/testing";
import { FakeDurableStorage, FakeKV, filesUnder } from "./store-fakes.mjs";

const MiB = 1024 * 1024;

/**
 * Registers the suite under a describe block (its 50 MiB round trip included; how long that
 * takes per adapter is measured by bench/stores.mjs, not here).
 */
function suite(name, setup) {
  describe(`${name}: the shared store suite`, () => {
    runStoreTests(setup, { test });
  });
}

async function tempDir() {
  return mkdtemp(join(tmpdir(), "ck-store-"));
}

suite("MemoryStore", async () => ({ store: new MemoryStore() }));

suite("FileSystemStore", async () => {
  const dir = await tempDir();
  return {
    store: new FileSystemStore({ dir }),
    reopen: async () => new FileSystemStore({ dir }),
    teardown: () => rm(dir, { recursive: true, force: true }),
  };
});

suite("IndexedDBStore (fake-indexeddb)", async () => {
  const indexedDB = new IDBFactory();
  const open = () => new IndexedDBStore({ indexedDB, IDBKeyRange, name: "suite" });
  const store = open();
  return { store, reopen: async () => open(), teardown: () => store.close() };
});

suite("RoutingStore", async () => {
  const persistent = new MemoryStore();
  return { store: new RoutingStore({ routes: { memories: persistent, suite: new MemoryStore() }, fallback: new MemoryStore() }) };
});

suite("DurableObjectStore (KV-backed limits)", async () => {
  const storage = new FakeDurableStorage();
  return { store: new DurableObjectStore(storage), reopen: async () => new DurableObjectStore(storage) };
});

suite("DurableObjectStore (SQLite-backed limits)", async () => {
  const storage = new FakeDurableStorage({ maxValueBytes: 2_000_000, sqlite: true });
  return { store: new DurableObjectStore(storage), reopen: async () => new DurableObjectStore(storage) };
});

suite("KVStore", async () => {
  const kv = new FakeKV({ pageSize: 7, maxValueBytes: 4 * MiB });
  return { store: new KVStore(kv, { maxValueBytes: 4 * MiB }), reopen: async () => new KVStore(kv, { maxValueBytes: 4 * MiB }) };
});

describe("keys", () => {
  test("storeKey builds [namespace, sessionId, kind, name] and checks each part", () => {
    assert.deepEqual(storeKey({ sessionId: "s1", kind: "offload", name: "call_1" }), ["context-keeper", "s1", "offload", "call_1"]);
    assert.deepEqual(storeKey({ namespace: "app", sessionId: "", kind: "k", name: "../x" }), ["app", "", "k", "../x"]);
    assert.throws(() => storeKey({ sessionId: 5, kind: "k", name: "n" }), { name: "TypeError", message: /sessionId: expected a string, found number/ });
    assert.throws(() => storeKey({ sessionId: "s", kind: "k" }), { name: "TypeError", message: /name: expected a string/ });
  });

  test("the component codec is injective, safe and reversible", () => {
    const seen = new Map();
    const random = seeded(7);
    const samples = [...HOSTILE_COMPONENTS];
    const alphabet = ["a", "Z", "/", "\\", ".", "%", "^", "~", "\u0000", "é", "😀", "\ud800", "\udfff", "日", " ", "-", "_", "#"];
    for (let i = 0; i < 5000; i++) {
      samples.push(Array.from({ length: Math.floor(random() * 6) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(""));
    }
    for (const component of samples) {
      const name = encodeComponent(component);
      assert.match(name, /^[a-z0-9_^%-][a-z0-9_.^%-]*$/, `name of ${JSON.stringify(component)}`);
      assert.equal(decodeComponent(name), component);
      const other = seen.get(name);
      assert.ok(other === undefined || other === component, `${JSON.stringify(component)} and ${JSON.stringify(other)} share ${name}`);
      seen.set(name, component);
    }
    assert.notEqual(encodeComponent("A"), encodeComponent("a"));
    assert.equal(encodeComponent(".."), "%2e.");
    assert.throws(() => decodeComponent("a/b"), TypeError);
  });
});

describe("FileSystemStore", () => {
  test("hostile keys make files inside the directory only, named from a safe alphabet", async () => {
    const root = await tempDir();
    const dir = join(root, "store");
    const store = new FileSystemStore({ dir });
    const keys = HOSTILE_COMPONENTS.flatMap((c) => [[c], ["ns", c, c], [c, "..", "..", "escaped"]]);
    for (const [i, key] of keys.entries()) await store.save(key, Uint8Array.of(i & 0xff));
    // Nothing beside the store's directory in the parent, and every name inside it is safe.
    assert.deepEqual(await readdir(root), ["store"]);
    const files = await filesUnder(dir);
    assert.ok(files.length > 0);
    for (const file of files) {
      const rel = relative(dir, file);
      assert.ok(!rel.startsWith(".."), rel);
      for (const part of rel.split(sep)) {
        assert.match(part, /^[a-z0-9_^%~-][a-z0-9_.^%~-]*=?$/, `path component ${JSON.stringify(part)}`);
        assert.ok(Buffer.byteLength(part) <= 255, `name of ${Buffer.byteLength(part)} bytes`);
      }
    }
    const unique = new Set(keys.map((k) => JSON.stringify(k)));
    assert.equal(files.length, unique.size);
    assert.equal((await store.loadRange([])).length, unique.size);
    await store.removeRange([]);
    assert.deepEqual(await readdir(dir), []);
    await rm(root, { recursive: true, force: true });
  });

  test("remove prunes emptied directories and leaves no temporary files", async () => {
    const dir = await tempDir();
    const store = new FileSystemStore({ dir });
    await store.save(["a", "b", "c"], Uint8Array.of(1));
    await store.save(["a", "x"], Uint8Array.of(2));
    await store.remove(["a", "b", "c"]);
    assert.deepEqual((await filesUnder(dir)).map((f) => relative(dir, f)), [join("a", "x=")]);
    await store.remove(["a", "x"]);
    assert.deepEqual(await readdir(dir), []);
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.save(["k"], Uint8Array.of(i))));
    assert.deepEqual(await readdir(dir), ["k="]);
    await rm(dir, { recursive: true, force: true });
  });

  test("a file the store did not write is a corrupt-kind StoreError, not a value", async () => {
    const dir = await tempDir();
    const store = new FileSystemStore({ dir });
    await writeFile(join(dir, "stray="), "hello");
    await assert.rejects(store.load(["stray"]), (err) => err instanceof StoreError && err.kind === "corrupt" && /not a value file/.test(err.message));
    // A file holding another key (a hashed name's collision, or a copied file) is caught too.
    await store.save(["one"], Uint8Array.of(1));
    await mkdir(join(dir, "sub"));
    const { readFile } = await import("node:fs/promises");
    await writeFile(join(dir, "two="), await readFile(join(dir, "one=")));
    await assert.rejects(store.load(["two"]), (err) => err.kind === "corrupt" && /holds \["one"\]/.test(err.message));
    await rm(dir, { recursive: true, force: true });
  });

  test("a failing file system is a StoreError naming the key", async () => {
    const root = await tempDir();
    await writeFile(join(root, "file"), "not a directory");
    const store = new FileSystemStore({ dir: join(root, "file") });
    await assert.rejects(store.save(["k"], Uint8Array.of(1)), (err) => err instanceof StoreError && err.kind === "backend" && /save \["k"\]: (ENOTDIR|EEXIST)/.test(err.message));
    await rm(root, { recursive: true, force: true });
  });
});

describe("IndexedDBStore (fake-indexeddb)", () => {
  const make = (indexedDB, options = {}) => new IndexedDBStore({ indexedDB, IDBKeyRange, name: "t", ...options });

  test("a QuotaExceededError comes back as a StoreQuotaError with the key, and the store keeps working", async () => {
    const indexedDB = new IDBFactory();
    const store = make(indexedDB);
    await store.save(["kept"], Uint8Array.of(1));
    const { IDBObjectStore } = await import("fake-indexeddb");
    const put = IDBObjectStore.prototype.put;
    // Thrown by put (as Firefox does), and as the transaction's abort (as Chromium does).
    IDBObjectStore.prototype.put = function () { throw new DOMException("quota", "QuotaExceededError"); };
    try {
      await assert.rejects(store.save(["big", "one"], new Uint8Array(10)), (err) =>
        err instanceof StoreQuotaError && err.kind === "quota" && JSON.stringify(err.key) === '["big","one"]' && /save \["big","one"\]: IndexedDB QuotaExceededError/.test(err.message));
      IDBObjectStore.prototype.put = function (...args) {
        const request = put.apply(this, args);
        this.transaction.abort();
        Object.defineProperty(this.transaction, "error", { value: new DOMException("quota", "QuotaExceededError") });
        return request;
      };
      await assert.rejects(store.save(["big", "two"], new Uint8Array(10)), StoreQuotaError);
    } finally {
      IDBObjectStore.prototype.put = put;
    }
    assert.deepEqual(await store.load(["kept"]), Uint8Array.of(1));
    assert.equal(await store.load(["big", "one"]), undefined);
    await store.save(["after"], Uint8Array.of(2));
    assert.deepEqual(await store.load(["after"]), Uint8Array.of(2));
  });

  test("another connection's upgrade closes ours instead of blocking, and the next call reopens", async () => {
    const indexedDB = new IDBFactory();
    const store = make(indexedDB);
    await store.save(["a"], Uint8Array.of(1));
    const upgraded = await new Promise((resolve, reject) => {
      const request = indexedDB.open("t", 5);
      request.onupgradeneeded = () => request.result.createObjectStore("other");
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
      request.onblocked = () => reject(new Error("the upgrade was blocked by the store's connection"));
    });
    assert.equal(upgraded.version, 5);
    upgraded.close();
    assert.deepEqual(await store.load(["a"]), Uint8Array.of(1));
    await store.close();
  });

  test("an open blocked by a connection that never closes fails after blockedTimeoutMs", async () => {
    const indexedDB = new IDBFactory();
    // Someone else's database of the same name, without our object store, held open.
    const held = await new Promise((resolve) => {
      const request = indexedDB.open("t", 1);
      request.onupgradeneeded = () => request.result.createObjectStore("theirs");
      request.onsuccess = () => resolve(request.result);
    });
    held.onversionchange = () => {}; // ignores upgrades
    const store = make(indexedDB, { blockedTimeoutMs: 100 });
    await assert.rejects(store.load(["a"]), (err) => err instanceof StoreError && /does not close for an upgrade/.test(err.message));
    held.close();
    // Once the other connection closes, the store creates its object store and works.
    assert.equal(await store.load(["a"]), undefined);
    await store.save(["a"], Uint8Array.of(3));
    assert.deepEqual(await store.load(["a"]), Uint8Array.of(3));
  });

  test("after close(), calls reject with a StoreError of kind closed", async () => {
    const store = make(new IDBFactory());
    await store.save(["a"], Uint8Array.of(1));
    await store.close();
    await assert.rejects(store.load(["a"]), (err) => err instanceof StoreError && err.kind === "closed");
  });

  test("a value someone else wrote is a corrupt-kind StoreError", async () => {
    const indexedDB = new IDBFactory();
    const store = make(indexedDB);
    await store.save(["a"], Uint8Array.of(1));
    await store.close();
    const db = await new Promise((resolve) => { const r = indexedDB.open("t"); r.onsuccess = () => resolve(r.result); });
    await new Promise((resolve) => {
      const tx = db.transaction("values", "readwrite");
      tx.objectStore("values").put({ not: "bytes" }, ["b"]);
      tx.oncomplete = resolve;
    });
    db.close();
    await assert.rejects(make(indexedDB).load(["b"]), (err) => err.kind === "corrupt");
  });
});

describe("chunked stores (Durable Object, KV)", () => {
  test("a value over the limit is chunks plus a manifest, every call within 128 keys, and no chunk outlives an overwrite", async () => {
    const storage = new FakeDurableStorage();
    const store = new DurableObjectStore(storage);
    const big = bytes(20 * MiB + 5, 1);
    await store.save(["k"], big);
    const chunks = [...storage.map.keys()].filter((k) => k.includes("#"));
    assert.equal(chunks.length, Math.ceil(big.byteLength / (127 * 1024)));
    assert.ok(storage.calls.every((c) => c.names.length <= 128));
    assert.deepEqual(await store.load(["k"]), big);
    // The manifest is the last write of the save.
    const lastPut = storage.calls.filter((c) => c.op === "put").at(-1);
    assert.deepEqual(lastPut.names, ["k/"]);
    await store.save(["k"], Uint8Array.of(1));
    assert.deepEqual([...storage.map.keys()], ["k/"]);
    await store.save(["k"], big);
    await store.remove(["k"]);
    assert.equal(storage.map.size, 0);
  });

  test("a save that dies part-way leaves the previous value readable, and its chunks are cleaned up", async () => {
    const storage = new FakeDurableStorage();
    const store = new DurableObjectStore(storage);
    const old = bytes(300_000, 2);
    await store.save(["k"], old);
    let puts = 0;
    storage.failWhen = (op) => { if (op === "put" && ++puts === 2) throw new Error("network lost"); };
    await assert.rejects(store.save(["k"], bytes(30 * MiB, 3)), (err) => err instanceof StoreError && err.kind === "backend" && /save \["k"\]: Durable Object storage failed: network lost/.test(err.message));
    storage.failWhen = undefined;
    assert.deepEqual(await store.load(["k"]), old);
    const oldGen = [...storage.map.keys()].find((k) => k.includes("#")).split("#")[1].split(".")[0];
    assert.ok([...storage.map.keys()].every((k) => !k.includes("#") || k.includes(`#${oldGen}.`)), "chunks of the failed save remain");
  });

  test("chunks a crashed save left behind go with the next chunked save, or a plain save over a chunked value", async () => {
    const storage = new FakeDurableStorage();
    const store = new DurableObjectStore(storage);
    const chunkNames = () => [...storage.map.keys()].filter((k) => k.includes("#"));
    storage.map.set("k/#deadbeef.0", new Uint8Array(10)); // a save that died before its manifest
    await store.save(["k"], bytes(300_000, 5));
    assert.equal(chunkNames().length, 3);
    assert.ok(chunkNames().every((k) => !k.includes("deadbeef")));
    storage.map.set("k/#deadbeef.0", new Uint8Array(10));
    await store.save(["k"], Uint8Array.of(1));
    assert.deepEqual(chunkNames(), []);
    assert.deepEqual(await store.load(["k"]), Uint8Array.of(1));
  });

  test("a manifest whose chunks are missing is an inconsistent-kind StoreError, never part of a value", async () => {
    const storage = new FakeDurableStorage();
    const store = new DurableObjectStore(storage);
    await store.save(["k"], bytes(400_000, 4));
    storage.map.delete([...storage.map.keys()].filter((k) => k.includes("#")).sort().at(-1));
    await assert.rejects(store.load(["k"]), (err) => err instanceof StoreError && err.kind === "inconsistent" && /missing/.test(err.message));
    await assert.rejects(store.loadRange([]), (err) => err.kind === "inconsistent");
  });

  test("a key too long for the backend is hashed, and its key comes back from the manifest", async () => {
    const kv = new FakeKV();
    const store = new KVStore(kv);
    const key = ["context-keeper", "s".repeat(600), "offload", "😀".repeat(400)];
    await store.save(key, Uint8Array.of(1, 2));
    assert.ok([...kv.map.keys()].every((k) => Buffer.byteLength(k) <= 512));
    assert.deepEqual(await store.load(key), Uint8Array.of(1, 2));
    assert.deepEqual(await store.loadRange(["context-keeper", "s".repeat(600)]), [{ key, data: Uint8Array.of(1, 2) }]);
    assert.deepEqual(await store.loadRange(["context-keeper", "s".repeat(599)]), []);
  });

  test("a key with too many components for the backend is a keyTooLong StoreError", async () => {
    const store = new KVStore(new FakeKV());
    await assert.rejects(store.save(Array.from({ length: 6 }, () => "x".repeat(200)), Uint8Array.of(1)), (err) => err.kind === "keyTooLong");
  });

  test("a backend out of space is a StoreQuotaError", async () => {
    const storage = new FakeDurableStorage({ sqlite: true, maxValueBytes: 2_000_000 });
    storage.failWhen = (op) => { if (op === "put") throw new Error("SQLITE_FULL: database or disk is full"); };
    await assert.rejects(new DurableObjectStore(storage).save(["k"], Uint8Array.of(1)), StoreQuotaError);
  });
});

describe("RoutingStore", () => {
  test("the longest prefix wins, and ranges span every store they reach", async () => {
    const memories = new MemoryStore();
    const project = new MemoryStore();
    const session = new MemoryStore();
    const store = new RoutingStore({
      routes: [{ prefix: ["memories"], store: memories }, { prefix: ["memories", "project"], store: project }],
      fallback: session,
    });
    await store.save(["memories", "user"], Uint8Array.of(1));
    await store.save(["memories", "project", "x"], Uint8Array.of(2));
    await store.save(["context-keeper", "s1", "offload", "c"], Uint8Array.of(3));
    await store.save(["memoriesX"], Uint8Array.of(4));
    assert.equal(memories.size.values, 1);
    assert.equal(project.size.values, 1);
    assert.equal(session.size.values, 2);
    assert.equal(store.storeFor(["memories", "project"]), project);
    assert.deepEqual((await store.loadRange([])).map((e) => e.key).sort(), [["context-keeper", "s1", "offload", "c"], ["memories", "project", "x"], ["memories", "user"], ["memoriesX"]].sort());
    assert.deepEqual((await store.loadRange(["memories"])).map((e) => e.key).sort(), [["memories", "project", "x"], ["memories", "user"]]);
    await store.removeRange(["context-keeper"]);
    assert.equal(session.size.values, 1);
    assert.equal(memories.size.values, 1);
    await store.removeRange(["memories"]);
    assert.equal(memories.size.values + project.size.values, 0);
    assert.equal(session.size.values, 1);
  });

  test("options are checked", () => {
    assert.throws(() => new RoutingStore({ routes: { memories: {} }, fallback: new MemoryStore() }), /routes\[0\].*expected a store/);
    assert.throws(() => new RoutingStore({ routes: {} }), /fallback: expected a store/);
    assert.throws(() => new RoutingStore({ routes: [{ prefix: ["a"], store: new MemoryStore() }, { prefix: ["a"], store: new MemoryStore() }], fallback: new MemoryStore() }), /routed twice/);
  });
});

describe("text helpers", () => {
  test("saveText and loadText round-trip UTF-8; bytes that are not UTF-8 are corrupt", async () => {
    const store = new MemoryStore();
    await saveText(store, ["t"], "héllo 😀 日本");
    assert.equal(await loadText(store, ["t"]), "héllo 😀 日本");
    assert.deepEqual(await store.load(["t"]), new TextEncoder().encode("héllo 😀 日本"));
    assert.equal(await loadText(store, ["missing"]), undefined);
    await store.save(["bad"], Uint8Array.of(0xff, 0xfe));
    await assert.rejects(loadText(store, ["bad"]), (err) => err instanceof StoreError && err.kind === "corrupt");
    await assert.rejects(saveText(store, ["t"], 5), { name: "TypeError", message: /text: expected a string, found number/ });
    await saveJSON(store, ["j"], { a: [1, "x"] });
    assert.deepEqual(await loadJSON(store, ["j"]), { a: [1, "x"] });
    await saveText(store, ["notjson"], "{");
    await assert.rejects(loadJSON(store, ["notjson"]), (err) => err.kind === "corrupt");
  });
});

describe("bad arguments are TypeErrors naming the argument", () => {
  const stores = {
    MemoryStore: () => new MemoryStore(),
    FileSystemStore: () => new FileSystemStore({ dir: join(tmpdir(), "ck-never-written") }),
    IndexedDBStore: () => new IndexedDBStore({ indexedDB: new IDBFactory(), IDBKeyRange }),
    DurableObjectStore: () => new DurableObjectStore(new FakeDurableStorage()),
    KVStore: () => new KVStore(new FakeKV()),
    RoutingStore: () => new RoutingStore({ fallback: new MemoryStore() }),
  };
  for (const [name, make] of Object.entries(stores)) {
    test(name, async () => {
      const store = make();
      await assert.rejects(store.load("a"), { name: "TypeError", message: /key: expected an array of strings, found a string/ });
      await assert.rejects(store.load([]), { name: "TypeError", message: /key: expected at least one component/ });
      await assert.rejects(store.save(["a", 1], Uint8Array.of(1)), { name: "TypeError", message: /key\[1\]: expected a string, found a number/ });
      await assert.rejects(store.save(["a"], "text"), { name: "TypeError", message: /save \["a"\]: data: expected a Uint8Array, found a string/ });
      await assert.rejects(store.save(["a"], [1, 2]), { name: "TypeError", message: /data: expected a Uint8Array, found an array/ });
      await assert.rejects(store.loadRange("a"), { name: "TypeError", message: /prefix: expected an array/ });
      await assert.rejects(store.removeRange([null]), { name: "TypeError", message: /prefix\[0\]: expected a string, found null/ });
    });
  }
  test("constructors", () => {
    assert.throws(() => new FileSystemStore({}), /dir: expected a directory path/);
    assert.throws(() => new IndexedDBStore({ indexedDB: undefined }), /this runtime has no IndexedDB/);
    assert.throws(() => new DurableObjectStore({}), /expected a Durable Object's storage/);
    assert.throws(() => new KVStore(null), /expected a Workers KV binding/);
    assert.throws(() => new KVStore(new FakeKV(), { maxValueBytes: -1 }), /maxValueBytes: expected a positive integer/);
  });
});

describe("FaultyStore", () => {
  test("each fault does what it says, on the calls its rule picks", async () => {
    const inner = new MemoryStore();
    const store = new FaultyStore(inner, [
      { op: "save", nth: 1, fault: "throw" },
      { op: "save", nth: 2, fault: "reject" },
      { op: "save", nth: 3, fault: "quota" },
      { op: "save", nth: 4, fault: "half" },
      { op: "save", nth: 5, fault: "hang" },
      { op: "load", key: ["g"], fault: "garbage", times: 1 },
      { op: "load", key: ["m"], fault: "missing" },
    ]);
    assert.throws(() => store.save(["a"], Uint8Array.of(1)), (err) => err instanceof StoreError && /injected fault: thrown/.test(err.message));
    await assert.rejects(store.save(["a"], Uint8Array.of(1)), /injected fault: rejected/);
    await assert.rejects(store.save(["a"], Uint8Array.of(1)), StoreQuotaError);
    assert.equal(await inner.load(["a"]), undefined);
    await assert.rejects(store.save(["h"], Uint8Array.of(1, 2, 3, 4)), /half the value was written/);
    assert.deepEqual(await inner.load(["h"]), Uint8Array.of(1, 2));
    const hung = store.save(["x"], Uint8Array.of(1));
    assert.equal(await Promise.race([hung.then(() => "settled"), new Promise((r) => setTimeout(() => r("pending"), 50))]), "pending");
    await store.save(["g"], Uint8Array.of(1, 2));
    await store.save(["m"], Uint8Array.of(3));
    const garbled = await store.load(["g"]);
    assert.equal(garbled.length, 2);
    assert.notDeepEqual(garbled, Uint8Array.of(1, 2));
    assert.deepEqual(await store.load(["g"]), Uint8Array.of(1, 2)); // times: 1
    assert.equal(await store.load(["m"]), undefined);
    assert.deepEqual(await inner.load(["m"]), Uint8Array.of(3));
    assert.deepEqual(store.log.map((e) => e.fault), ["throw", "reject", "quota", "half", "hang", undefined, undefined, "garbage", undefined, "missing"]);
    assert.deepEqual(store.counts, { load: 3, save: 7, remove: 0, loadRange: 0, removeRange: 0 });
  });

  test("randomFaults is deterministic per seed and fails at about its rate", async () => {
    const run = async (seed) => {
      const store = new FaultyStore(new MemoryStore(), randomFaults({ seed, rate: 0.3 }));
      const outcomes = [];
      for (let i = 0; i < 400; i++) {
        try {
          await store.save(["k", String(i)], Uint8Array.of(1, 2));
          outcomes.push("ok");
        } catch (err) {
          outcomes.push(err.kind);
        }
      }
      return outcomes;
    };
    const a = await run(1);
    assert.deepEqual(a, await run(1));
    assert.notDeepEqual(a, await run(2));
    const failed = a.filter((o) => o !== "ok").length;
    assert.ok(failed > 80 && failed < 160, `${failed} of 400 failed at rate 0.3`);
  });

  test("a schedule is checked", () => {
    assert.throws(() => new FaultyStore(new MemoryStore(), [{ fault: "explode" }]), /schedule\[0\].fault: expected one of/);
    assert.throws(() => new FaultyStore({}, []), /inner: expected a store/);
  });
});

function bytes(length, seed) {
  const out = new Uint8Array(length);
  const random = seeded(seed);
  for (let i = 0; i < length; i += 997) out[i] = Math.floor(random() * 256);
  for (let i = 0; i < length; i++) out[i] ^= i & 0xff;
  return out;
}

function seeded(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 0x100000000;
  };
}

describe("the README's ten-line custom adapter", async () => {
  // The example as the README shows it, run through the suite, so the README stays true.
  const { readFile } = await import("node:fs/promises");
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const code = readme.match(/```js\n(class MapStore \{[\s\S]*?\n\})\n```/)?.[1];
  test("is in the README and is at most ten lines", () => {
    assert.ok(code, "no `class MapStore` block in README.md");
    assert.ok(code.split("\n").length <= 10, `${code.split("\n").length} lines`);
  });
  const MapStore = new Function(`${code}\nreturn MapStore;`)();
  runStoreTests(async () => ({ store: new MapStore() }), { test, largeBytes: 5 * MiB });
});
