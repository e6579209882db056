// Type-checks context-keeper/stores and context-keeper/testing as a consumer sees them.
import {
  MemoryStore, RoutingStore, IndexedDBStore, DurableObjectStore, KVStore, FileSystemStore, StoreError, StoreQuotaError,
  saveText, loadText, loadJSON, storeKey, type Store, type StorageKey, type Chunk,
} from "context-keeper/stores";
import { runStoreTests, FaultyStore, randomFaults, type StoreTestReport } from "context-keeper/testing";

// A user's own adapter is a Store by shape alone.
class MapStore implements Store {
  #map = new Map<string, Uint8Array>();
  async load(key: StorageKey) { return this.#map.get(JSON.stringify(key)); }
  async save(key: StorageKey, data: Uint8Array) { this.#map.set(JSON.stringify(key), data.slice()); }
  async remove(key: StorageKey) { this.#map.delete(JSON.stringify(key)); }
  async loadRange(prefix: StorageKey): Promise<Chunk[]> {
    return [...this.#map].map(([k, data]) => ({ key: JSON.parse(k) as string[], data })).filter(({ key }) => prefix.every((c, i) => key[i] === c));
  }
  async removeRange(prefix: StorageKey) { for (const { key } of await this.loadRange(prefix)) await this.remove(key); }
}

async function use() {
  const key: StorageKey = storeKey({ sessionId: "s1", kind: "offload", name: "call_1" });
  const routed: Store = new RoutingStore({ routes: { memories: new FileSystemStore({ dir: "/tmp/m" }) }, fallback: new MemoryStore() });
  await saveText(routed, key, "text");
  const text: string | undefined = await loadText(routed, key);
  const json = await loadJSON<{ a: number }>(routed, key);
  const n: number | undefined = json?.a;
  const stores: Store[] = [new IndexedDBStore({ name: "x" }), new MapStore(), new FaultyStore(new MemoryStore(), [{ op: "save", fault: "half", nth: 2 }])];
  try {
    await stores[0].save(key, new Uint8Array(1));
  } catch (err) {
    if (err instanceof StoreQuotaError) console.log(err.key, err.kind);
    else if (err instanceof StoreError && err.kind === "inconsistent") console.log(err.message);
  }
  const report: StoreTestReport = await runStoreTests(async () => ({ store: new MapStore() }), { largeBytes: 1024 });
  const registered: undefined = runStoreTests(async () => ({ store: new MapStore() }), { test: (name, fn) => fn() });
  new FaultyStore(new MemoryStore(), randomFaults({ seed: 3, rate: 0.1 }));
  return [text, n, report.timings.largeSaveMs, registered];
}

declare const storage: { get(keys: string[]): Promise<Map<string, unknown>>; put(entries: Record<string, unknown>): Promise<void>; delete(keys: string[]): Promise<number>; list(options: object): Promise<Map<string, unknown>> };
declare const kv: ConstructorParameters<typeof KVStore>[0];
new DurableObjectStore(storage, { maxValueBytes: 1_000_000 });
new KVStore(kv);

// @ts-expect-error: keys are string arrays
new MemoryStore().load("a");
// @ts-expect-error: values are bytes
new MemoryStore().save(["a"], "text");
// @ts-expect-error: a fault must be one of the known ones
new FaultyStore(new MemoryStore(), [{ fault: "explode" }]);

export { use };
