// context-keeper/stores under Node: everything, with the file-system store.
export { StoreError, StoreQuotaError } from "./errors.js";
export { NAMESPACE, storeKey, encodeComponent, decodeComponent } from "./keys.js";
export { saveText, loadText, saveJSON, loadJSON } from "./text.js";
export { MemoryStore } from "./memory.js";
export { RoutingStore } from "./routing.js";
export { IndexedDBStore } from "./indexeddb.js";
export { DurableObjectStore } from "./durable-object.js";
export { KVStore } from "./kv.js";
export { FileSystemStore } from "./fs.js";
