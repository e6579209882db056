// DurableObjectStore: a Durable Object's own storage (`ctx.storage`). Values over the backend's
// limit (128 KiB on KV-backed objects, 2 MB on SQLite-backed ones) are chunked with a manifest
// written last (chunked.js); every call carries at most 128 keys; `loadRange` pages through
// `list({ prefix })`.
import { ChunkedStore, checkBackend, checkMaxValueBytes } from "./chunked.js";

/** KV-backed Durable Objects take values of 128 KiB (131,072 bytes, serialized); keep room for the serialization's header. */
const KV_BACKED_CHUNK = 128 * 1024 - 1024;
/** SQLite-backed Durable Objects take values of 2 MB. */
const SQLITE_CHUNK = 2_000_000 - 64 * 1024;

export class DurableObjectStore extends ChunkedStore {
  /**
   * @param {DurableObjectStorage} storage `ctx.storage` (`this.state.storage` in older code)
   * @param {{ maxValueBytes?: number }} [options] the largest value written whole; by default the
   *   backend's limit, found from whether the object is SQLite-backed
   */
  constructor(storage, { maxValueBytes } = {}) {
    checkBackend("DurableObjectStore", "storage", storage, ["get", "put", "delete", "list"], "a Durable Object's storage (ctx.storage)");
    checkMaxValueBytes("DurableObjectStore", maxValueBytes);
    super({
      label: "Durable Object storage",
      handle: storage,
      maxNameLength: 2048,
      componentLength: 400,
      chunkBytes: maxValueBytes ?? (isSqliteBacked(storage) ? SQLITE_CHUNK : KV_BACKED_CHUNK),
      batch: 128,
      async get(names) {
        const found = await storage.get(names);
        const out = new Map();
        for (const [name, value] of found) out.set(name, entryOf(value));
        return out;
      },
      async put(entries) {
        const object = {};
        for (const { name, data, manifest } of entries) object[name] = manifest ?? data;
        await storage.put(object);
      },
      async delete(names) {
        await storage.delete(names);
      },
      async *list(prefix) {
        let startAfter;
        for (;;) {
          const page = await storage.list(startAfter === undefined ? { prefix, limit: 128 } : { prefix, startAfter, limit: 128 });
          const entries = [...page].map(([name, value]) => ({ name, entry: name.includes("#") ? undefined : entryOf(value) }));
          if (entries.length > 0) yield entries;
          if (entries.length < 128) return;
          startAfter = entries[entries.length - 1].name;
        }
      },
    });
  }
}

/** SQLite-backed objects have `storage.sql`; on KV-backed ones reading it throws. */
function isSqliteBacked(storage) {
  try {
    return storage.sql != null;
  } catch {
    return false;
  }
}

function entryOf(value) {
  if (value instanceof Uint8Array) return { data: value };
  if (value instanceof ArrayBuffer) return { data: new Uint8Array(value) };
  return { manifest: value };
}
