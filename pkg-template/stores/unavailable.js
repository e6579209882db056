// What `context-keeper/stores` exports as FileSystemStore outside Node (browsers, workerd):
// a class that says where it works instead of failing on a missing `node:fs`.
export class FileSystemStore {
  constructor() {
    throw new Error("FileSystemStore needs Node's file system; in a browser use IndexedDBStore, in a Worker DurableObjectStore or KVStore, anywhere MemoryStore");
  }
}
