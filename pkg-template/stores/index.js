// context-keeper/stores: where offloaded tool output, compaction archives and session state
// live. Every store has automerge-repo's StorageAdapterInterface: load, save, remove,
// loadRange, removeRange (keys are string[], values Uint8Array) and an optional close.
export { StoreError, StoreQuotaError } from "./errors.js";
export { NAMESPACE, storeKey, encodeComponent, decodeComponent } from "./keys.js";
export { saveText, loadText, saveJSON, loadJSON } from "./text.js";
export { MemoryStore } from "./memory.js";
export { RoutingStore } from "./routing.js";
export { IndexedDBStore } from "./indexeddb.js";
export { DurableObjectStore } from "./durable-object.js";
export { KVStore } from "./kv.js";
export { FileSystemStore } from "./unavailable.js";
