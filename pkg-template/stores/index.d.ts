// Types of context-keeper/stores.

/**
 * A store: automerge-repo's `StorageAdapterInterface`. Keys are arrays of strings, compared
 * component by component (a prefix `["a"]` matches `["a"]` and `["a", "x"]`, never `["ab"]`);
 * values are bytes. Any automerge-repo adapter is a store, and every store here is an
 * automerge-repo adapter.
 */
export interface Store {
  /** The value saved under `key`, or `undefined`. */
  load(key: StorageKey): Promise<Uint8Array | undefined>;
  /** Saves a copy of `data` under `key`, replacing any value there; resolves once it is stored. */
  save(key: StorageKey, data: Uint8Array): Promise<void>;
  /** Removes the value under `key`; a missing key is not an error. */
  remove(key: StorageKey): Promise<void>;
  /** Every value whose key starts with `prefix` (`[]`: all of them). */
  loadRange(prefix: StorageKey): Promise<Chunk[]>;
  /** Removes every value whose key starts with `prefix`. */
  removeRange(prefix: StorageKey): Promise<void>;
  close?(): Promise<void>;
}

export type StorageKey = string[];

export interface Chunk {
  key: StorageKey;
  data: Uint8Array | undefined;
}

/** How a store operation failed. */
export type StoreErrorKind = "backend" | "quota" | "inconsistent" | "corrupt" | "keyTooLong" | "closed";

/** A store operation that failed: `kind` says how, `key` which value (or prefix). */
export class StoreError extends Error {
  constructor(message: string, details?: { kind?: StoreErrorKind; key?: StorageKey; cause?: unknown });
  readonly name: "StoreError" | "StoreQuotaError";
  /**
   * "backend": the backend failed; "quota": out of space; "inconsistent": a chunked value whose
   * chunks are not all there (a torn write); "corrupt": bytes this store did not write;
   * "keyTooLong": more key than the backend holds; "closed": used after `close()`.
   */
  kind: StoreErrorKind;
  key: StorageKey | undefined;
}

/** The backend is out of space (IndexedDB's QuotaExceededError, a full disk, ...). */
export class StoreQuotaError extends StoreError {
  constructor(message: string, details?: { key?: StorageKey; cause?: unknown });
  readonly name: "StoreQuotaError";
  kind: "quota";
}

/** The namespace every key of the context layer starts with: "context-keeper". */
export const NAMESPACE: string;

/** The key of one value of the context layer: `[namespace, sessionId, kind, name]`. */
export function storeKey(parts: { namespace?: string; sessionId: string; kind: string; name: string }): StorageKey;

/**
 * A key component as a name of `[a-z0-9_.^%-]` that never starts with "." (upper case as "^"
 * and the letter, anything else as "%" and UTF-8 hex); `decodeComponent` reverses it.
 */
export function encodeComponent(component: string): string;
export function decodeComponent(name: string): string;

/** Saves `text` as UTF-8. */
export function saveText(store: Store, key: StorageKey, text: string): Promise<void>;
/** Loads UTF-8 text, or `undefined`; bytes that are not UTF-8 reject with a StoreError of kind "corrupt". */
export function loadText(store: Store, key: StorageKey): Promise<string | undefined>;
/** Saves `value` as UTF-8 JSON. */
export function saveJSON(store: Store, key: StorageKey, value: unknown): Promise<void>;
/** Loads what `saveJSON` saved, or `undefined`; text that is not JSON is a StoreError of kind "corrupt". */
export function loadJSON<T = unknown>(store: Store, key: StorageKey): Promise<T | undefined>;

/** Values in memory, copied on save and on load; `loadRange` in the order keys were first saved. */
export interface MemoryStore extends Store {}
export class MemoryStore {
  constructor();
  /** How many values it holds, and their bytes. */
  readonly size: { values: number; bytes: number };
}

/**
 * Routes each key to the store of the longest route that is a prefix of it, the rest to
 * `fallback`: `new RoutingStore({ routes: { memories: persistent }, fallback: perSession })`.
 */
export interface RoutingStore extends Store {}
export class RoutingStore {
  constructor(options: {
    /** `{ name: store }` routes keys whose first component is `name`; a list routes any prefix. */
    routes?: Record<string, Store> | Array<{ prefix: StorageKey; store: Store }>;
    fallback: Store;
  });
  /** The store a key is kept in. */
  storeFor(key: StorageKey): Store;
  /** Closes every store it routes to. */
  close(): Promise<void>;
}

/**
 * Values in a browser's IndexedDB. Writes resolve when their transaction completes; every
 * error and abort rejects (out of quota: StoreQuotaError); another tab's upgrade closes this
 * connection, and the next call reopens it.
 */
export interface IndexedDBStore extends Store {}
export class IndexedDBStore {
  constructor(options?: {
    /** The database; default "context-keeper". */
    name?: string;
    /** The object store in it; default "values". */
    storeName?: string;
    /** The factory (an `IDBFactory`); default globalThis.indexedDB (in Node, fake-indexeddb's). */
    indexedDB?: { open(name: string, version?: number): unknown };
    /** The `IDBKeyRange` class that goes with `indexedDB`; default globalThis.IDBKeyRange. */
    IDBKeyRange?: { bound(lower: unknown, upper: unknown, lowerOpen?: boolean, upperOpen?: boolean): unknown };
    /** Transaction durability; default "strict". */
    durability?: "strict" | "relaxed" | "default";
    /** How long an open may wait for another tab to close for an upgrade; default 10,000 ms. */
    blockedTimeoutMs?: number;
  });
  /** Closes the connection; later calls reject with a StoreError of kind "closed". */
  close(): Promise<void>;
}

/** The parts of a Durable Object's storage (`ctx.storage`) the store uses. */
export interface DurableObjectStorageLike {
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(keys: string[]): Promise<number>;
  list(options: { prefix?: string; startAfter?: string; limit?: number }): Promise<Map<string, unknown>>;
  readonly sql?: unknown;
}

/**
 * A Durable Object's storage. Values over the backend's limit (128 KiB KV-backed, 2 MB
 * SQLite-backed) are written as chunks and then a manifest, so a torn write is never read as
 * a whole value.
 */
export interface DurableObjectStore extends Store {}
export class DurableObjectStore {
  constructor(storage: DurableObjectStorageLike, options?: { maxValueBytes?: number });
}

/** The parts of a Workers KV binding the store uses. */
export interface KVNamespaceLike {
  get(key: string, type: "arrayBuffer"): Promise<ArrayBuffer | null>;
  getWithMetadata(key: string, type: "arrayBuffer"): Promise<{ value: ArrayBuffer | null; metadata: unknown }>;
  put(key: string, value: string | ArrayBuffer | ArrayBufferView, options?: { metadata?: unknown }): Promise<void>;
  delete(key: string): Promise<void>;
  list(options: { prefix?: string; cursor?: string }): Promise<{ keys: Array<{ name: string }>; list_complete: boolean; cursor?: string }>;
}

/**
 * A Workers KV namespace. Eventually consistent: a read elsewhere right after a write may miss
 * it. Long key components are hashed (the key is kept in the value's manifest); values over
 * 25 MiB are chunked.
 */
export interface KVStore extends Store {}
export class KVStore {
  constructor(namespace: KVNamespaceLike, options?: { maxValueBytes?: number });
}

/**
 * Node only: one file per value under `dir`, written to a temporary file, fsynced and renamed
 * into place. Every key component is escaped, so no key reaches outside `dir`. Elsewhere the
 * constructor throws.
 */
export interface FileSystemStore extends Store {}
export class FileSystemStore {
  constructor(options: { dir: string });
  /** The directory, absolute. */
  readonly dir: string;
}
