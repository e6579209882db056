// In-memory stand-ins for a Durable Object's storage and a Workers KV binding, with the real
// ones' limits (keys per call, key and value sizes, list paging), so the chunked layer's torn
// writes and limits can be driven from Node. The stores also run against the real bindings
// inside workerd (tests/workerd/stores.test.mjs); these fakes are for the failure paths a real
// backend will not produce on demand.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { serialize } from "node:v8";

/** The size of a stored value as the runtime serializes it (a view carries its whole buffer). */
const sizeOf = (value) => serialize(value).length;

const clone = (value) => (value instanceof Uint8Array ? value.slice() : structuredClone(value));

export class FakeDurableStorage {
  /** @type {Map<string, unknown>} */
  map = new Map();
  calls = [];
  /** Set to a function (op, names) => void that may throw, to inject failures. */
  failWhen;

  constructor({ maxValueBytes = 128 * 1024, sqlite = false } = {}) {
    this.maxValueBytes = maxValueBytes;
    if (sqlite) this.sql = {};
  }

  #check(op, names) {
    this.calls.push({ op, names: [...names] });
    if (names.length > 128) throw new RangeError(`${op}: at most 128 keys per call, got ${names.length}`);
    for (const name of names) if (new TextEncoder().encode(name).length > 2048) throw new RangeError(`${op}: key over 2048 bytes`);
    this.failWhen?.(op, names);
  }

  async get(keys) {
    this.#check("get", keys);
    const out = new Map();
    for (const key of keys) if (this.map.has(key)) out.set(key, clone(this.map.get(key)));
    return out;
  }

  async put(entries) {
    const names = Object.keys(entries);
    this.#check("put", names);
    for (const name of names) {
      if (sizeOf(entries[name]) > this.maxValueBytes) throw new RangeError(`put: value of ${name} over ${this.maxValueBytes} bytes`);
    }
    for (const name of names) this.map.set(name, clone(entries[name]));
  }

  async delete(keys) {
    this.#check("delete", keys);
    let n = 0;
    for (const key of keys) n += this.map.delete(key) ? 1 : 0;
    return n;
  }

  async list({ prefix = "", startAfter, limit = Infinity } = {}) {
    this.calls.push({ op: "list", names: [prefix] });
    const names = [...this.map.keys()].filter((k) => k.startsWith(prefix) && (startAfter === undefined || k > startAfter)).sort();
    return new Map(names.slice(0, limit).map((k) => [k, clone(this.map.get(k))]));
  }
}

export class FakeKV {
  /** @type {Map<string, { value: Uint8Array, metadata: unknown }>} */
  map = new Map();
  failWhen;

  constructor({ pageSize = 1000, maxValueBytes = 25 * 1024 * 1024 } = {}) {
    this.pageSize = pageSize;
    this.maxValueBytes = maxValueBytes;
  }

  #check(op, name) {
    if (new TextEncoder().encode(name).length > 512) throw new Error(`KV ${op} failed: 414 UTF-8 encoded length of ${name.length} exceeds key length limit of 512.`);
    this.failWhen?.(op, name);
  }

  async get(name, type) {
    return (await this.getWithMetadata(name, type)).value;
  }

  async getWithMetadata(name, type) {
    this.#check("get", name);
    if (type !== "arrayBuffer") throw new Error("FakeKV: only arrayBuffer reads");
    const entry = this.map.get(name);
    if (!entry) return { value: null, metadata: null };
    return { value: entry.value.slice().buffer, metadata: entry.metadata ?? null };
  }

  async put(name, value, { metadata } = {}) {
    this.#check("put", name);
    const bytes = typeof value === "string" ? new TextEncoder().encode(value) : new Uint8Array(value.buffer ?? value, value.byteOffset ?? 0, value.byteLength).slice();
    if (bytes.byteLength > this.maxValueBytes) throw new Error(`KV put failed: 413 value over ${this.maxValueBytes} bytes`);
    if (metadata !== undefined && JSON.stringify(metadata).length > 1024) throw new Error("KV put failed: metadata over 1024 bytes");
    this.map.set(name, { value: bytes, metadata });
  }

  async delete(name) {
    this.#check("delete", name);
    this.map.delete(name);
  }

  async list({ prefix = "", cursor } = {}) {
    const names = [...this.map.keys()].filter((k) => k.startsWith(prefix)).sort();
    const start = cursor === undefined ? 0 : Number(cursor);
    const page = names.slice(start, start + this.pageSize);
    const complete = start + this.pageSize >= names.length;
    return { keys: page.map((name) => ({ name, metadata: this.map.get(name).metadata ?? undefined })), list_complete: complete, cursor: complete ? undefined : String(start + this.pageSize) };
  }
}

/** Every file under `dir`, at any depth (what a file-system store wrote). */
export async function filesUnder(dir) {
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
}
