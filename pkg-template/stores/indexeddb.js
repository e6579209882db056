// IndexedDBStore: values in a browser's IndexedDB, one object store keyed by the key arrays
// themselves (IndexedDB orders arrays component by component, so a prefix is one key range).
// Every request error, transaction error and abort settles the operation's promise; writes
// resolve when their transaction completes (durability "strict" by default: on disk, not only
// in the OS cache); running out of quota is a StoreQuotaError naming the key. Another tab that
// upgrades the database makes this one close its connection (and reopen it on the next call)
// instead of blocking the upgrade; an open that stays blocked past `blockedTimeoutMs` fails.
import { StoreError, StoreQuotaError, checkKey, checkValue, describeKey } from "./errors.js";
import { copy } from "./memory.js";

export class IndexedDBStore {
  #name;
  #storeName;
  #factory;
  #durability;
  #blockedTimeoutMs;
  #keyRange;
  /** @type {Promise<IDBDatabase> | undefined} the open (or opening) connection */
  #db;
  #closed = false;

  /**
   * @param {{ name?: string, storeName?: string, indexedDB?: IDBFactory, durability?: "strict" | "relaxed" | "default", blockedTimeoutMs?: number }} [options]
   *   `name`: the database ("context-keeper"); `storeName`: the object store in it ("values");
   *   `indexedDB` and `IDBKeyRange`: the runtime's (globalThis's by default; fake-indexeddb's in Node).
   */
  constructor({ name = "context-keeper", storeName = "values", indexedDB = globalThis.indexedDB, IDBKeyRange = globalThis.IDBKeyRange, durability = "strict", blockedTimeoutMs = 10_000 } = {}) {
    if (typeof name !== "string" || name === "") throw new TypeError(`IndexedDBStore: name: expected a non-empty string, found ${JSON.stringify(name)}`);
    if (typeof storeName !== "string" || storeName === "") throw new TypeError(`IndexedDBStore: storeName: expected a non-empty string, found ${JSON.stringify(storeName)}`);
    if (indexedDB == null || typeof indexedDB.open !== "function") {
      throw new TypeError("IndexedDBStore: indexedDB: this runtime has no IndexedDB; pass a factory (e.g. fake-indexeddb's indexedDB) or use another store");
    }
    if (IDBKeyRange == null || typeof IDBKeyRange.bound !== "function") throw new TypeError("IndexedDBStore: IDBKeyRange: this runtime has none; pass the one that goes with `indexedDB`");
    if (!["strict", "relaxed", "default"].includes(durability)) throw new TypeError(`IndexedDBStore: durability: expected "strict", "relaxed" or "default", found ${JSON.stringify(durability)}`);
    if (!(blockedTimeoutMs > 0)) throw new TypeError(`IndexedDBStore: blockedTimeoutMs: expected a positive number, found ${blockedTimeoutMs}`);
    this.#name = name;
    this.#storeName = storeName;
    this.#factory = indexedDB;
    this.#durability = durability;
    this.#blockedTimeoutMs = blockedTimeoutMs;
    this.#keyRange = IDBKeyRange;
  }

  async load(key) {
    checkKey(key);
    const value = await this.#run("load", key, "readonly", (store, done) => {
      const request = store.get(key);
      request.onsuccess = () => done(request.result);
    });
    if (value === undefined) return undefined;
    return asBytes(value, key);
  }

  async save(key, data) {
    checkKey(key);
    checkValue(key, data);
    // A view of part of a buffer would clone the whole buffer; a Buffer would come back as one.
    const value = data.constructor === Uint8Array && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength ? data : copy(data);
    await this.#run("save", key, "readwrite", (store) => store.put(value, key));
  }

  async remove(key) {
    checkKey(key);
    await this.#run("remove", key, "readwrite", (store) => store.delete(key));
  }

  /** In key order (component by component, by UTF-16 code units). */
  async loadRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    const { keys, values } = await this.#run("loadRange", prefix, "readonly", (store, done) => {
      const range = rangeOf(this.#keyRange, prefix);
      const out = {};
      const keysRequest = store.getAllKeys(range);
      const valuesRequest = store.getAll(range);
      keysRequest.onsuccess = () => { out.keys = keysRequest.result; };
      valuesRequest.onsuccess = () => { out.values = valuesRequest.result; done(out); };
    });
    return keys.map((key, i) => ({ key, data: asBytes(values[i], key) }));
  }

  async removeRange(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    await this.#run("removeRange", prefix, "readwrite", (store) => store.delete(rangeOf(this.#keyRange, prefix)));
  }

  /** Closes the connection; later calls fail with a StoreError of kind "closed". */
  async close() {
    this.#closed = true;
    const db = this.#db;
    this.#db = undefined;
    if (db) (await db.catch(() => undefined))?.close();
  }

  /**
   * One transaction: `fn(store, done)` issues its requests and may call `done(result)`; the
   * promise resolves with the result once the transaction completes, and rejects on any
   * request error, transaction error or abort. A connection closed under us (another tab's
   * upgrade) is reopened once.
   */
  async #run(op, key, mode, fn) {
    for (let attempt = 0; ; attempt++) {
      const db = await this.#open(op, key);
      let tx;
      try {
        tx = db.transaction(this.#storeName, mode, { durability: this.#durability });
      } catch (err) {
        // InvalidStateError: the connection is closing (a version change); open a new one.
        if (err?.name === "InvalidStateError" && attempt === 0 && !this.#closed) {
          this.#forget(db);
          continue;
        }
        throw this.#error(op, key, err);
      }
      return new Promise((resolve, reject) => {
        let result;
        let settled = false;
        const fail = (err) => {
          if (settled) return;
          settled = true;
          reject(this.#error(op, key, err));
        };
        tx.oncomplete = () => {
          if (settled) return;
          settled = true;
          resolve(result);
        };
        // A request's error aborts the transaction (nothing here prevents that); pending requests
        // then fail with AbortError. The abort carries the cause (QuotaExceededError, ...).
        let requestError;
        tx.onerror = (event) => {
          const error = event.target?.error;
          if (requestError === undefined && error && error.name !== "AbortError") requestError = error;
        };
        tx.onabort = () => fail(tx.error ?? requestError ?? new DOMException("the transaction was aborted", "AbortError"));
        try {
          fn(tx.objectStore(this.#storeName), (value) => { result = value; });
        } catch (err) {
          // A request that throws synchronously (DataCloneError, QuotaExceededError, ...).
          fail(err);
          try { tx.abort(); } catch { /* already finished */ }
        }
      });
    }
  }

  #error(op, key, err) {
    if (err instanceof StoreError) return err;
    const message = `${op} ${describeKey(key)}: IndexedDB ${err?.name ?? "error"}: ${err?.message ?? String(err)}`;
    if (err?.name === "QuotaExceededError") return new StoreQuotaError(message, { key, cause: err });
    return new StoreError(message, { key, cause: err });
  }

  #forget(db) {
    const current = this.#db;
    if (current) current.then((open) => { if (open === db && this.#db === current) this.#db = undefined; }, () => {});
    try { db.close(); } catch { /* closed */ }
  }

  #open(op, key) {
    if (this.#closed) return Promise.reject(new StoreError(`${op} ${describeKey(key)}: the store is closed`, { kind: "closed", key }));
    if (this.#db === undefined) {
      const opening = this.#connect().then((db) => {
        const forget = () => {
          try { db.close(); } catch { /* closed */ }
          if (this.#db === opening) this.#db = undefined;
        };
        // Another tab wants to upgrade: let it; the next call here reopens.
        db.onversionchange = forget;
        // The browser closed it (storage cleared, disk error).
        db.onclose = forget;
        return db;
      });
      opening.catch(() => { if (this.#db === opening) this.#db = undefined; });
      this.#db = opening;
    }
    return this.#db.catch((err) => { throw this.#error(op, key, err); });
  }

  /** Opens the database, creating the object store (by a version upgrade) if it is missing. */
  async #connect(version) {
    const db = await new Promise((resolve, reject) => {
      const request = version === undefined ? this.#factory.open(this.#name) : this.#factory.open(this.#name, version);
      let timer;
      const stop = () => clearTimeout(timer);
      request.onupgradeneeded = () => {
        const db = request.result;
        if (!db.objectStoreNames.contains(this.#storeName)) db.createObjectStore(this.#storeName);
      };
      request.onsuccess = () => {
        stop();
        if (timer === null) request.result.close(); // gave up waiting already
        else resolve(request.result);
      };
      request.onerror = (event) => {
        stop();
        event.preventDefault?.();
        reject(request.error ?? new DOMException("open failed", "UnknownError"));
      };
      request.onblocked = () => {
        // Another connection has not closed for our upgrade; wait a while, then give up.
        timer = setTimeout(() => {
          timer = null;
          reject(new StoreError(`IndexedDB database "${this.#name}" is open in another tab that does not close for an upgrade`, { kind: "backend" }));
        }, this.#blockedTimeoutMs);
      };
    });
    if (db.objectStoreNames.contains(this.#storeName)) return db;
    // The database exists without our object store (another library's, or an older version).
    const next = db.version + 1;
    db.close();
    return this.#connect(next);
  }
}

/** The key range of a prefix: from the prefix itself to just before `[...prefix, []]` (an array sorts after every string). */
function rangeOf(IDBKeyRange, prefix) {
  return IDBKeyRange.bound(prefix, [...prefix, []], false, true);
}

function asBytes(value, key) {
  if (value instanceof Uint8Array) return value.constructor === Uint8Array ? value : copy(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new StoreError(`load ${describeKey(key)}: the stored value is ${value === null ? "null" : typeof value}, not bytes this store wrote`, { kind: "corrupt", key });
}
