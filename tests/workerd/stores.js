// The stores inside workerd, over the real bindings of `wrangler dev`: the shared suite runs in
// a SQLite-backed and a KV-backed Durable Object (DurableObjectStore over `ctx.storage`) and
// over a Workers KV namespace (KVStore), and a value written before a restart of wrangler is
// read after it. Routes (all POST): /stores/{sqlite,kv-backed}/{suite,write,read,probe,bench} and
// /stores/kv/{suite,write,read}; `bench` runs bench/stores-timing.mjs (for bench/stores.mjs).
import { DurableObject } from "cloudflare:workers";
import { DurableObjectStore, KVStore, saveText, loadText } from "context-keeper/stores";
import { runStoreTests } from "context-keeper/testing";
import { timeStore } from "../../bench/stores-timing.mjs";

/** The key and text written before a restart and read after it. */
const PERSIST_KEY = ["context-keeper", "../../session", "offload", "x".repeat(3000)];
const persistText = () => "kept across a restart 😀 ".repeat(100_000); // 2.6 MB: chunked on both kinds

async function clearKV(kv) {
  for (let cursor; ;) {
    const page = await kv.list(cursor ? { cursor } : {});
    await Promise.all(page.keys.map(({ name }) => kv.delete(name)));
    if (page.list_complete) return;
    cursor = page.cursor;
  }
}

const json = (value) => Response.json(value);

// NOTE: local workerd backs every Durable Object class with SQLite (`storage.sql` exists and
// values of 2 MB fit even in a class declared KV-backed), so the KV-backed object states the
// production limit of 128 KiB itself to run the suite at that chunk size.
const KV_BACKED_VALUE_BYTES = 128 * 1024 - 1024;

class SuiteObject extends DurableObject {
  options = {};

  async fetch(request) {
    const action = new URL(request.url).pathname.split("/").pop();
    const storage = this.ctx.storage;
    const open = () => new DurableObjectStore(storage, this.options);
    if (action === "suite") {
      const report = await runStoreTests(async () => {
        await storage.deleteAll();
        return { store: open(), reopen: async () => open() };
      });
      await storage.deleteAll();
      return json(report);
    }
    const store = open();
    if (action === "write") {
      await storage.deleteAll();
      await saveText(store, PERSIST_KEY, persistText());
      return json({ ok: true });
    }
    if (action === "read") return json({ same: (await loadText(store, PERSIST_KEY)) === persistText() });
    if (action === "bench") {
      await storage.deleteAll();
      return json(await timeStore(store));
    }
    if (action === "probe") {
      // What a 1 MB value becomes in the backend: how many chunk entries beside its manifest.
      await storage.deleteAll();
      await store.save(["probe"], new Uint8Array(1_000_000).fill(1));
      const names = [...(await storage.list()).keys()];
      await storage.deleteAll();
      return json({ entries: names.length, chunks: names.filter((n) => n.includes("#")).length });
    }
    return new Response("unknown action", { status: 404 });
  }
}

export class SqliteSuite extends SuiteObject {}
export class KvBackedSuite extends SuiteObject {
  options = { maxValueBytes: KV_BACKED_VALUE_BYTES };
}

/** Handles /stores/...; undefined for other paths. */
export async function handleStores(request, env) {
  const [, first, kind, action] = new URL(request.url).pathname.split("/");
  if (first !== "stores") return undefined;
  if (kind === "sqlite" || kind === "kv-backed") {
    const namespace = kind === "sqlite" ? env.SQLITE_SUITE : env.KV_BACKED_SUITE;
    return namespace.get(namespace.idFromName("suite")).fetch(`https://suite/${action}`, { method: "POST" });
  }
  if (kind === "kv") {
    const kv = env.STORE_KV;
    const store = new KVStore(kv);
    if (action === "suite") {
      const report = await runStoreTests(async () => {
        await clearKV(kv);
        return { store: new KVStore(kv), reopen: async () => new KVStore(kv) };
      });
      await clearKV(kv);
      return json(report);
    }
    if (action === "write") {
      await clearKV(kv);
      await saveText(store, PERSIST_KEY, persistText());
      return json({ ok: true, names: (await kv.list()).keys.map((k) => k.name.length) });
    }
    if (action === "read") return json({ same: (await loadText(store, PERSIST_KEY)) === persistText() });
    if (action === "bench") {
      await clearKV(kv);
      return json(await timeStore(store));
    }
  }
  return new Response("unknown route", { status: 404 });
}
