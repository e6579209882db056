// The layer the Durable Object and Workers KV stores share: string-keyed backends with a limit
// on key and value size. A key's components are encoded (keys.js) and joined with "/", with a
// "/" after the last, so the string of a prefix is a prefix of the string of every key under it
// and of no other ("a/" is not a prefix of "ab/"). A value over the backend's limit, or under a
// key with a component too long to keep whole, is written as chunks (`<name>#<gen>.<i>`) and
// then, last, a manifest at `<name>` naming their generation, count and total size. A reader
// that finds a manifest whose chunks are not all there (a save that died half-way, or one
// racing it) says so instead of returning part of a value; a save that fails leaves the
// previous value readable. "#" is in no encoded component, so chunk names never collide with
// keys, and they sort right after the name they belong to.
import { StoreError, StoreQuotaError, checkKey, checkValue, describeKey } from "./errors.js";
import { decodeComponent, encodeKey, hasPrefix, isHashedName } from "./keys.js";
import { copy } from "./memory.js";

/**
 * What a backend provides. Names are ASCII strings; entries are `{ data }` (a raw value) or
 * `{ manifest }`.
 * @typedef {object} Backend
 * @property {string} label           for messages ("Durable Object storage", "Workers KV")
 * @property {object} handle          the binding, to share per-key locks between instances
 * @property {number} maxNameLength   longest name, in bytes (ASCII)
 * @property {number} componentLength longest encoded component before it is hashed
 * @property {number} chunkBytes      largest value written as one entry
 * @property {number} batch           most names in one get/put/delete call
 * @property {(names: string[]) => Promise<Map<string, {data?: Uint8Array, manifest?: object}>>} get
 * @property {(entries: Array<{name: string, data?: Uint8Array, manifest?: object}>) => Promise<void>} put
 * @property {(names: string[]) => Promise<void>} delete
 * @property {(prefix: string) => AsyncIterable<Array<{name: string, entry?: object}>>} list
 *   pages of names under a prefix, in order; `entry` when the listing carries values
 */

/** Room left in a name for a chunk suffix: "#", 8 hex digits, "." and an index. */
const CHUNK_SUFFIX = 24;

/** Per-key write locks, per backend binding, so two store objects over one binding queue too. */
const locks = new WeakMap();

export class ChunkedStore {
  /** @type {Backend} */
  #backend;
  /** name -> tail of the queue of operations on it */
  #locks;

  /** @param {Backend} backend */
  constructor(backend) {
    this.#backend = backend;
    if (!locks.has(backend.handle)) locks.set(backend.handle, new Map());
    this.#locks = locks.get(backend.handle);
  }

  async load(key) {
    checkKey(key);
    const name = await this.#name(key);
    // A manifest whose chunks are missing may have been replaced while it was read: read it
    // again; the same manifest twice with chunks missing is a torn value.
    let seen;
    for (;;) {
      const entry = (await this.#call("load", key, () => this.#backend.get([name]))).get(name);
      if (entry === undefined) return undefined;
      if (entry.data !== undefined) return copy(entry.data);
      try {
        return await this.#assemble(name, entry.manifest, key);
      } catch (err) {
        if (!(err instanceof StoreError) || err.kind !== "inconsistent" || seen === entry.manifest.gen) throw err;
        seen = entry.manifest.gen;
      }
    }
  }

  async save(key, data) {
    checkKey(key);
    checkValue(key, data);
    const bytes = copy(data); // what the caller passed now, whatever it does with its array later
    const name = await this.#name(key);
    const b = this.#backend;
    await this.#locked(name, async () => {
      const previous = (await this.#call("save", key, () => b.get([name]))).get(name);
      let gen;
      if (isHashedName(name) || bytes.byteLength > b.chunkBytes) {
        gen = randomGen();
        const chunks = [];
        for (let at = 0, i = 0; at < bytes.byteLength; at += b.chunkBytes, i++) {
          chunks.push({ name: chunkName(name, gen, i), at });
        }
        try {
          for (let i = 0; i < chunks.length; i += b.batch) {
            // Copies, one batch at a time: a backend that serializes a view (structured clone)
            // writes its whole underlying buffer.
            const batch = chunks.slice(i, i + b.batch).map(({ name, at }) => ({ name, data: bytes.slice(at, at + b.chunkBytes) }));
            await this.#call("save", key, () => b.put(batch));
          }
          const manifest = { ck: 1, key: [...key], size: bytes.byteLength, chunks: chunks.length, gen };
          await this.#call("save", key, () => b.put([{ name, manifest }]));
        } catch (err) {
          // The previous value is still whole; the new chunks are garbage.
          await this.#deleteAll(chunks.map((c) => c.name)).catch(() => {});
          throw err;
        }
      } else {
        await this.#call("save", key, () => b.put([{ name, data: bytes }]));
      }
      if (gen !== undefined || previous?.manifest !== undefined) {
        // Every other chunk under the name is unreachable now: the previous value's and any a
        // save that died left. Failing to delete them loses nothing.
        await this.#deleteStaleChunks(name, gen).catch(() => {});
      }
    });
  }

  /** Deletes the chunks under `name` of every generation but `keep`. */
  async #deleteStaleChunks(name, keep) {
    const stale = [];
    for await (const page of this.#backend.list(`${name}#`)) {
      for (const { name: chunk } of page) if (keep === undefined || !chunk.startsWith(`${name}#${keep}.`)) stale.push(chunk);
    }
    await this.#deleteAll(stale);
  }

  async remove(key) {
    checkKey(key);
    const name = await this.#name(key);
    await this.#locked(name, async () => {
      await this.#call("remove", key, () => this.#backend.delete([name]));
      // Every chunk under the name, including those of saves that died half-way.
      await this.#call("remove", key, () => this.#deleteStaleChunks(name, undefined));
    });
  }

  async loadRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    const at = await this.#prefixName(prefix);
    const out = [];
    for await (const page of this.#call("loadRange", prefix, () => this.#backend.list(at), true)) {
      const names = page.filter((e) => !isChunk(e.name));
      const missing = names.filter((e) => e.entry === undefined).map((e) => e.name);
      const fetched = missing.length > 0 ? await this.#getAll(missing, prefix) : new Map();
      for (const { name, entry: listed } of names) {
        const entry = listed ?? fetched.get(name);
        if (entry === undefined) continue; // removed since it was listed
        let key;
        if (entry.manifest !== undefined) {
          key = entry.manifest.key;
          // A chunked value read back from its manifest; one removed meanwhile is skipped.
          let data;
          try {
            data = await this.load(key);
          } catch (err) {
            throw new StoreError(`loadRange ${describeKey(prefix)}: ${err.message}`, { kind: err.kind, key, cause: err });
          }
          if (data !== undefined && hasPrefix(key, prefix)) out.push({ key, data });
        } else {
          key = decodeName(name);
          out.push({ key, data: copy(entry.data) });
        }
      }
    }
    return out;
  }

  async removeRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    const at = await this.#prefixName(prefix);
    const names = [];
    for await (const page of this.#call("removeRange", prefix, () => this.#backend.list(at), true)) {
      names.push(...page.map((e) => e.name));
    }
    // Values (and manifests) first, so no manifest outlives its chunks.
    await this.#call("removeRange", prefix, async () => {
      await this.#deleteAll(names.filter((n) => !isChunk(n)));
      await this.#deleteAll(names.filter(isChunk));
    });
  }

  /** The backend's name for a key. */
  async #name(key) {
    const { names } = await encodeKey(key, this.#backend.componentLength);
    const name = `${names.join("/")}/`;
    if (name.length + CHUNK_SUFFIX > this.#backend.maxNameLength) {
      throw new StoreError(
        `${describeKey(key)}: the key has too many components for ${this.#backend.label} (${name.length} characters encoded; at most ${this.#backend.maxNameLength - CHUNK_SUFFIX})`,
        { kind: "keyTooLong", key },
      );
    }
    return name;
  }

  async #prefixName(prefix) {
    if (prefix.length === 0) return "";
    const { names } = await encodeKey(prefix, this.#backend.componentLength);
    return `${names.join("/")}/`;
  }

  async #assemble(name, manifest, key) {
    if (!isManifest(manifest)) {
      throw new StoreError(`load ${describeKey(key)}: the entry is not a value this store wrote`, { kind: "corrupt", key });
    }
    if (JSON.stringify(manifest.key) !== JSON.stringify(key)) {
      throw new StoreError(`load ${describeKey(key)}: the entry belongs to another key (${describeKey(manifest.key)})`, { kind: "corrupt", key });
    }
    const names = Array.from({ length: manifest.chunks }, (_, i) => chunkName(name, manifest.gen, i));
    const chunks = await this.#getAll(names, key);
    const out = new Uint8Array(manifest.size);
    let at = 0;
    for (const chunk of names) {
      const data = chunks.get(chunk)?.data;
      if (data === undefined || at + data.byteLength > manifest.size) {
        throw new StoreError(`load ${describeKey(key)}: chunk ${chunk} of ${manifest.chunks} is ${data === undefined ? "missing" : "larger than the manifest says"}`, { kind: "inconsistent", key });
      }
      out.set(data, at);
      at += data.byteLength;
    }
    if (at !== manifest.size) {
      throw new StoreError(`load ${describeKey(key)}: the chunks hold ${at} bytes, the manifest says ${manifest.size}`, { kind: "inconsistent", key });
    }
    return out;
  }

  async #getAll(names, key) {
    const out = new Map();
    for (let i = 0; i < names.length; i += this.#backend.batch) {
      const part = await this.#call("load", key, () => this.#backend.get(names.slice(i, i + this.#backend.batch)));
      for (const [name, entry] of part) out.set(name, entry);
    }
    return out;
  }

  async #deleteAll(names) {
    for (let i = 0; i < names.length; i += this.#backend.batch) {
      await this.#backend.delete(names.slice(i, i + this.#backend.batch));
    }
  }

  /** Runs `fn` after every earlier operation on `name` through any store over this binding. */
  async #locked(name, fn) {
    const before = this.#locks.get(name) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const tail = run.catch(() => {});
    this.#locks.set(name, tail);
    try {
      return await run;
    } finally {
      if (this.#locks.get(name) === tail) this.#locks.delete(name);
    }
  }

  /**
   * Calls the backend, turning what it throws into a StoreError that names the operation and
   * key (a StoreQuotaError when it says it is out of space). `iterable` wraps an async iterable.
   */
  #call(op, key, fn, iterable = false) {
    const wrap = (err) => {
      if (err instanceof StoreError) return err;
      const message = `${op} ${describeKey(key)}: ${this.#backend.label} failed: ${err?.message ?? String(err)}`;
      return isQuota(err) ? new StoreQuotaError(message, { key, cause: err }) : new StoreError(message, { key, cause: err });
    };
    if (iterable) {
      const pages = fn();
      return (async function* () {
        try {
          yield* pages;
        } catch (err) {
          throw wrap(err);
        }
      })();
    }
    return Promise.resolve().then(fn).catch((err) => { throw wrap(err); });
  }
}

const chunkName = (name, gen, i) => `${name}#${gen}.${i}`;
const isChunk = (name) => name.includes("#");

function isManifest(m) {
  return m !== null && typeof m === "object" && m.ck === 1 && Array.isArray(m.key)
    && Number.isSafeInteger(m.size) && m.size >= 0 && Number.isSafeInteger(m.chunks) && m.chunks >= 0
    && typeof m.gen === "string" && /^[0-9a-f]{8}$/.test(m.gen);
}

/** The key a raw entry's name encodes (names of raw entries are never hashed). */
function decodeName(name) {
  return name.slice(0, -1).split("/").map(decodeComponent);
}

function randomGen() {
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const isQuota = (err) => /quota|SQLITE_FULL|storage limit|out of space|ENOSPC/i.test(String(err?.message ?? err)) || err?.name === "QuotaExceededError";

/** Checks a constructor's binding: an object with the backend's methods. */
export function checkBackend(who, what, binding, methods, expected) {
  if (binding === null || typeof binding !== "object" || methods.some((m) => typeof binding[m] !== "function")) {
    throw new TypeError(`${who}: ${what}: expected ${expected}`);
  }
}

/** Checks the `maxValueBytes` option: absent, or a positive integer. */
export function checkMaxValueBytes(who, value) {
  if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
    throw new TypeError(`${who}: maxValueBytes: expected a positive integer, found ${value}`);
  }
}

/** Reads a manifest written by this layer from JSON bytes (Workers KV keeps values as bytes). */
export function parseManifest(bytes) {
  try {
    const manifest = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return isManifest(manifest) ? manifest : undefined;
  } catch {
    return undefined;
  }
}
