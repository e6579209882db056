// KVStore: a Workers KV namespace (`env.MY_KV`). Keys are at most 512 bytes, so a component
// longer than 100 characters encoded is hashed and the key kept in the value's manifest; values
// over 25 MiB are chunked, the manifest written last (chunked.js). `loadRange` pages through
// `list({ prefix, cursor })`. KV is eventually consistent: a read in another location right
// after a write may see the old value or none (see the README for what it suits).
import { ChunkedStore, checkBackend, checkMaxValueBytes, parseManifest } from "./chunked.js";

/** Workers KV takes values of up to 25 MiB. */
const KV_CHUNK = 25 * 1024 * 1024 - 64 * 1024;
/** In-flight requests at once, under the Workers limit of six open connections. */
const PARALLEL = 6;

export class KVStore extends ChunkedStore {
  /**
   * @param {KVNamespace} namespace the binding (`env.MY_KV`)
   * @param {{ maxValueBytes?: number }} [options] the largest value written whole (25 MiB by default)
   */
  constructor(namespace, { maxValueBytes } = {}) {
    checkBackend("KVStore", "namespace", namespace, ["get", "getWithMetadata", "put", "delete", "list"], "a Workers KV binding (env.MY_KV)");
    checkMaxValueBytes("KVStore", maxValueBytes);
    super({
      label: "Workers KV",
      handle: namespace,
      maxNameLength: 512,
      componentLength: 100,
      chunkBytes: maxValueBytes ?? KV_CHUNK,
      batch: 64,
      async get(names) {
        const out = new Map();
        await each(names, async (name) => {
          const { value, metadata } = await namespace.getWithMetadata(name, "arrayBuffer");
          if (value === null) return;
          if (metadata?.ck === 1) {
            const manifest = parseManifest(new Uint8Array(value));
            out.set(name, { manifest: manifest ?? { ck: 0 } });
          } else {
            out.set(name, { data: new Uint8Array(value) });
          }
        });
        return out;
      },
      async put(entries) {
        await each(entries, ({ name, data, manifest }) => manifest === undefined
          ? namespace.put(name, data)
          : namespace.put(name, JSON.stringify(manifest), { metadata: { ck: 1 } }));
      },
      async delete(names) {
        await each(names, (name) => namespace.delete(name));
      },
      async *list(prefix) {
        let cursor;
        for (;;) {
          const page = await namespace.list(cursor === undefined ? { prefix } : { prefix, cursor });
          if (page.keys.length > 0) yield page.keys.map(({ name }) => ({ name }));
          if (page.list_complete || !page.cursor) return;
          cursor = page.cursor;
        }
      },
    });
  }
}

/** Runs `fn` over `items`, PARALLEL at a time. */
async function each(items, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
}
