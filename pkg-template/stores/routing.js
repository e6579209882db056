// RoutingStore: each key goes to the store of the longest route that is a prefix of it, the
// rest to the fallback: long-term memory (`memories`) in a store that outlives sessions, the
// rest per session. Range operations span every store whose routes they reach.
import { checkKey } from "./errors.js";
import { hasPrefix } from "./keys.js";

export class RoutingStore {
  /** [{ prefix, store }], longest prefix first */
  #routes;
  #fallback;

  /**
   * @param {{ routes: Record<string, object> | Array<{ prefix: string[], store: object }>, fallback: object }} options
   *   `routes` as an object routes one first component each (`{ memories: store }`); as an array,
   *   any prefix.
   */
  constructor({ routes = {}, fallback } = {}) {
    if (!isStore(fallback)) throw new TypeError("RoutingStore: fallback: expected a store (load, save, remove, loadRange, removeRange)");
    const list = Array.isArray(routes)
      ? routes.map(({ prefix, store }) => ({ prefix, store }))
      : Object.entries(routes).map(([name, store]) => ({ prefix: [name], store }));
    list.forEach(({ prefix, store }, i) => {
      checkKey(prefix, `RoutingStore: routes[${i}].prefix`);
      if (!isStore(store)) throw new TypeError(`RoutingStore: routes[${i}] (${JSON.stringify(prefix)}): expected a store`);
    });
    const seen = new Set();
    for (const { prefix } of list) {
      const id = JSON.stringify(prefix);
      if (seen.has(id)) throw new TypeError(`RoutingStore: the prefix ${id} is routed twice`);
      seen.add(id);
    }
    this.#routes = list.sort((a, b) => b.prefix.length - a.prefix.length);
    this.#fallback = { prefix: [], store: fallback };
  }

  /** The route a key belongs to: the longest prefix of it, or the fallback. */
  #owner(key) {
    return this.#routes.find((route) => hasPrefix(key, route.prefix)) ?? this.#fallback;
  }

  /** The store a key is kept in. */
  storeFor(key) {
    checkKey(key);
    return this.#owner(key).store;
  }

  async load(key) {
    return this.storeFor(key).load(key);
  }

  async save(key, data) {
    return this.storeFor(key).save(key, data);
  }

  async remove(key) {
    return this.storeFor(key).remove(key);
  }

  /**
   * The routes a range reaches, each with the prefix to ask its store for: the route owning the
   * prefix, and every route below the prefix.
   */
  #reach(prefix) {
    checkKey(prefix, "prefix", { prefix: true });
    const owner = this.#owner(prefix);
    const below = this.#routes.filter((route) => route.prefix.length > prefix.length && hasPrefix(route.prefix, prefix));
    return [{ route: owner, ask: prefix }, ...below.map((route) => ({ route, ask: route.prefix }))];
  }

  async loadRange(prefix) {
    const parts = await Promise.all(this.#reach(prefix).map(async ({ route, ask }) =>
      (await route.store.loadRange(ask)).filter(({ key }) => this.#owner(key) === route)));
    return parts.flat();
  }

  async removeRange(prefix) {
    // Every key under the prefix belongs to its owner's route or to a route below the prefix,
    // all of which go whole; a store shared by several of them loses nothing it should keep.
    await Promise.all(this.#reach(prefix).map(({ route, ask }) => route.store.removeRange(ask)));
  }

  async close() {
    const stores = new Set([this.#fallback.store, ...this.#routes.map((r) => r.store)]);
    await Promise.all([...stores].map((store) => store.close?.()));
  }
}

export const isStore = (store) =>
  store != null && ["load", "save", "remove", "loadRange", "removeRange"].every((name) => typeof store[name] === "function");
