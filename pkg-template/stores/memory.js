// MemoryStore: values in a Map, for tests, Node services that keep nothing, and as the
// per-session half of a RoutingStore. It copies on save and on load, so neither the caller's
// array nor a returned one can change what is stored.
import { checkKey, checkValue } from "./errors.js";
import { hasPrefix } from "./keys.js";

export class MemoryStore {
  /** key JSON -> { key, data } */
  #values = new Map();

  async load(key) {
    checkKey(key);
    const entry = this.#values.get(JSON.stringify(key));
    return entry === undefined ? undefined : entry.data.slice();
  }

  async save(key, data) {
    checkKey(key);
    checkValue(key, data);
    this.#values.set(JSON.stringify(key), { key: [...key], data: copy(data) });
  }

  async remove(key) {
    checkKey(key);
    this.#values.delete(JSON.stringify(key));
  }

  /** In the order the keys were first saved. */
  async loadRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    const out = [];
    for (const { key, data } of this.#values.values()) {
      if (hasPrefix(key, prefix)) out.push({ key: [...key], data: data.slice() });
    }
    return out;
  }

  async removeRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    for (const [id, { key }] of this.#values) if (hasPrefix(key, prefix)) this.#values.delete(id);
  }

  /** How many values it holds, and their bytes. */
  get size() {
    let bytes = 0;
    for (const { data } of this.#values.values()) bytes += data.byteLength;
    return { values: this.#values.size, bytes };
  }
}

/** A plain Uint8Array copy of `data` (a Buffer or other subclass becomes a Uint8Array). */
export function copy(data) {
  const out = new Uint8Array(data.byteLength);
  out.set(data);
  return out;
}
