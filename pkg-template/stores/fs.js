// FileSystemStore (Node): one file per value under `dir`. A key's components become one
// directory each, the last a file named with a trailing "=": `["a", "b"]` is `dir/a/b=`, so the
// value of `["a"]` (`dir/a=`) and the directory of keys under it (`dir/a/`) live side by side.
// Every component is encoded (keys.js): the names are [a-z0-9_.^%~-] and never start with ".",
// so no key names `..`, a separator or a hidden file, and none leaves `dir`. A file holds a
// header with its key (so a name shortened by hashing still knows its key, and a file that does
// not hold the key asked for is caught) and then the value. A write goes to a temporary file in
// the same directory, is fsynced, renamed over the old one and the directory fsynced: a crash
// leaves the old value or the new one, never part of one.
import { mkdir, open, readdir, readFile, rename, rm, rmdir, unlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { StoreError, StoreQuotaError, checkKey, checkValue, describeKey } from "./errors.js";
import { encodeKey, hasPrefix } from "./keys.js";

/** Longest encoded component kept whole; most file systems allow 255 bytes a name. */
const COMPONENT_LENGTH = 200;
const MAGIC = new TextEncoder().encode("CK1\n");
const VALUE_SUFFIX = "=";
const TEMP_PREFIX = ".tmp-";

export class FileSystemStore {
  #dir;

  /** @param {{ dir: string }} options the directory that holds the values (created if missing) */
  constructor({ dir } = {}) {
    if (typeof dir !== "string" || dir === "") throw new TypeError(`FileSystemStore: dir: expected a directory path, found ${JSON.stringify(dir)}`);
    this.#dir = resolve(dir);
  }

  /** The directory, absolute. */
  get dir() {
    return this.#dir;
  }

  async load(key) {
    checkKey(key);
    const file = await this.#file(key);
    let bytes;
    try {
      bytes = await readFile(file);
    } catch (err) {
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return undefined;
      throw fsError("load", key, err);
    }
    const { key: stored, data } = parse(bytes, key);
    if (JSON.stringify(stored) !== JSON.stringify(key)) {
      throw new StoreError(`load ${describeKey(key)}: the file holds ${describeKey(stored)}`, { kind: "corrupt", key });
    }
    return data;
  }

  async save(key, data) {
    checkKey(key);
    checkValue(key, data);
    const header = headerOf(key);
    const body = new Uint8Array(data); // the bytes as passed now
    const file = await this.#file(key);
    const parent = dirname(file);
    // A concurrent remove may take an emptied parent directory away between mkdir and rename.
    for (let attempt = 0; ; attempt++) {
      try {
        await makeDirectories(parent);
        await writeAtomically(parent, file, [header, body]);
        return;
      } catch (err) {
        if (err.code !== "ENOENT" || attempt >= 4) throw fsError("save", key, err);
      }
    }
  }

  async remove(key) {
    checkKey(key);
    const file = await this.#file(key);
    try {
      await unlink(file);
    } catch (err) {
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return;
      throw fsError("remove", key, err);
    }
    await this.#prune(dirname(file));
  }

  /** In path order: a key's value before the keys under it. */
  async loadRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    const out = [];
    const take = async (file) => {
      let bytes;
      try {
        bytes = await readFile(file);
      } catch (err) {
        if (err.code === "ENOENT") return; // removed meanwhile
        throw fsError("loadRange", prefix, err);
      }
      const { key, data } = parse(bytes, prefix);
      if (hasPrefix(key, prefix)) out.push({ key, data });
    };
    if (prefix.length === 0) {
      await this.#walk(this.#dir, take);
    } else {
      const file = await this.#file(prefix);
      await take(file);
      await this.#walk(file.slice(0, -VALUE_SUFFIX.length), take);
    }
    return out;
  }

  async removeRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    try {
      if (prefix.length === 0) {
        const names = await readdir(this.#dir).catch((err) => (err.code === "ENOENT" ? [] : Promise.reject(err)));
        await Promise.all(names.map((name) => rm(join(this.#dir, name), { recursive: true, force: true })));
        return;
      }
      const file = await this.#file(prefix);
      await rm(file, { force: true });
      await rm(file.slice(0, -VALUE_SUFFIX.length), { recursive: true, force: true });
      await this.#prune(dirname(file));
    } catch (err) {
      throw fsError("removeRange", prefix, err);
    }
  }

  /** The file of a key: `dir/<c1>/.../<cn>=`. */
  async #file(key) {
    const { names } = await encodeKey(key, COMPONENT_LENGTH);
    return `${join(this.#dir, ...names)}${VALUE_SUFFIX}`;
  }

  /** Calls `take` on every value file under `dir`, in name order. */
  async #walk(dir, take) {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return;
      throw err;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await this.#walk(path, take);
      else if (entry.isFile() && entry.name.endsWith(VALUE_SUFFIX) && !entry.name.startsWith(TEMP_PREFIX)) await take(path);
    }
  }

  /** Removes emptied directories from `dir` up to (not including) the store's own. */
  async #prune(dir) {
    while (dir.startsWith(this.#dir + sep)) {
      try {
        await rmdir(dir);
      } catch {
        return; // not empty (or gone): stop
      }
      dir = dirname(dir);
    }
  }
}

function headerOf(key) {
  const json = new TextEncoder().encode(JSON.stringify(key));
  const header = new Uint8Array(MAGIC.length + 4 + json.length);
  header.set(MAGIC, 0);
  new DataView(header.buffer).setUint32(MAGIC.length, json.length, true);
  header.set(json, MAGIC.length + 4);
  return header;
}

/** A value file's key and data; anything else is a StoreError of kind "corrupt". */
function parse(bytes, asked) {
  const corrupt = (why) => new StoreError(`load ${describeKey(asked)}: not a value file of this store (${why})`, { kind: "corrupt", key: asked });
  if (bytes.length < MAGIC.length + 4 || MAGIC.some((b, i) => bytes[i] !== b)) throw corrupt("no header");
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(MAGIC.length, true);
  const start = MAGIC.length + 4;
  if (start + length > bytes.length) throw corrupt("truncated header");
  let key;
  try {
    key = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(start, start + length)));
  } catch {
    throw corrupt("unreadable key");
  }
  if (!Array.isArray(key) || !key.every((c) => typeof c === "string")) throw corrupt("unreadable key");
  const data = new Uint8Array(bytes.length - start - length);
  data.set(bytes.subarray(start + length));
  return { key, data };
}

/**
 * Creates `dir` and its missing parents, one level at a time.
 * NOTE: not `mkdir(dir, { recursive: true })`: Node's recursive mkdir retries for ever where
 * the kernel answers ENOENT for a directory whose parent exists (anywhere under /proc), so a
 * store there never settled. Here such a directory is an error naming it; a parent that a
 * concurrent remove took away is created again, a bounded number of times.
 */
async function makeDirectories(dir) {
  const missing = [];
  for (let path = dir; ; ) {
    try {
      await mkdir(path);
      break;
    } catch (err) {
      if (err.code === "EEXIST") break;
      const parent = dirname(path);
      if (err.code !== "ENOENT" || parent === path || missing.length > 4096) throw err;
      missing.push(path);
      path = parent;
    }
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    try {
      await mkdir(missing[i]);
    } catch (err) {
      if (err.code === "EEXIST") continue;
      if (err.code === "ENOENT") {
        // The parent exists (made or found just before): the file system refuses the name.
        const refused = new Error(`cannot create the directory ${missing[i]}: ${err.message} (its parent exists; a file system such as /proc takes no new directories)`);
        refused.code = "ENOENT";
        throw refused;
      }
      throw err;
    }
  }
}

async function writeAtomically(parent, file, parts) {
  const temp = join(parent, `${TEMP_PREFIX}${randomSuffix()}`);
  const handle = await open(temp, "wx");
  try {
    for (const part of parts) await handle.write(part);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
  // The rename itself is durable once the directory is synced (not possible on every platform).
  const dir = await open(parent, "r").catch(() => undefined);
  if (dir) {
    await dir.sync().catch(() => {});
    await dir.close();
  }
}

function randomSuffix() {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function fsError(op, key, err) {
  const message = `${op} ${describeKey(key)}: ${err?.code ?? "file system"}: ${err?.message ?? String(err)}`;
  if (err?.code === "ENOSPC" || err?.code === "EDQUOT") return new StoreQuotaError(message, { key, cause: err });
  return new StoreError(message, { key, cause: err });
}
