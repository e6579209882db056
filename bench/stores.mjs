// The stores' speed in their runtimes: memory, files and fake-indexeddb in Node, IndexedDB in
// headless Chromium, Durable Object storage (SQLite-backed, and at the KV-backed 128 KiB chunk
// size) and Workers KV inside workerd (wrangler dev's local bindings). Each runs
// bench/stores-timing.mjs: a 50 MiB value saved and loaded 5 times, a 2 MiB one 9 times, and
// 1,000 values of 1 KiB saved, loaded and read back with one loadRange. Medians, in ms.
//
//   node bench/stores.mjs                 # everything (about 2 minutes)
//   node bench/stores.mjs --only=node     # node | chromium | workerd
//
// Writes the raw repetitions to bench/results/stores-<timestamp>.json. Build pkg/ first.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { IDBFactory, IDBKeyRange } from "fake-indexeddb";
import { FileSystemStore, IndexedDBStore, MemoryStore } from "context-keeper/stores";
import { timeStore } from "./stores-timing.mjs";
import { median } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7).split(",");
const wanted = (group) => !only || only.includes(group);
const results = [];
const log = (...args) => console.error(...args);

if (wanted("node")) {
  const dir = mkdtempSync(join(tmpdir(), "ck-bench-stores-"));
  const node = {
    "MemoryStore": () => new MemoryStore(),
    "FileSystemStore": () => new FileSystemStore({ dir }),
    "IndexedDBStore (fake-indexeddb)": () => new IndexedDBStore({ indexedDB: new IDBFactory(), IDBKeyRange }),
  };
  for (const [name, open] of Object.entries(node)) {
    log(`node: ${name}`);
    const store = open();
    results.push({ name, runtime: `Node ${process.version}`, ...(await timeStore(store)), rssBytes: process.memoryUsage().rss });
    await store.close?.();
  }
  rmSync(dir, { recursive: true, force: true });
}

if (wanted("chromium")) {
  log("chromium: IndexedDBStore");
  const { openDemo } = await import("../tests/browser/chromium.mjs");
  const demo = await openDemo();
  try {
    const timings = await demo.page.evaluate(async (source) => {
      const timeStore = (0, eval)(`(${source})`);
      const { IndexedDBStore } = await import("/pkg/stores/index.js");
      const store = new IndexedDBStore({ name: "bench" });
      try {
        return await timeStore(store);
      } finally {
        await store.close();
      }
    }, timeStore.toString());
    const version = await demo.page.evaluate(() => navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1]);
    results.push({ name: "IndexedDBStore", runtime: `Chromium ${version}`, ...timings });
  } finally {
    await demo.close();
  }
}

if (wanted("workerd")) {
  const { startWrangler } = await import("../tests/workerd/wrangler.mjs");
  const persistTo = mkdtempSync(join(tmpdir(), "ck-bench-wrangler-"));
  const wrangler = await startWrangler({ persistTo });
  try {
    for (const [name, path] of [["DurableObjectStore (SQLite-backed)", "sqlite"], ["DurableObjectStore (128 KiB chunks)", "kv-backed"], ["KVStore", "kv"]]) {
      log(`workerd: ${name}`);
      const res = await fetch(`${wrangler.base}stores/${path}/bench`, { method: "POST" });
      if (!res.ok) throw new Error(`${name}: ${res.status} ${await res.text()}`);
      results.push({ name, runtime: "workerd (wrangler dev)", ...(await res.json()) });
    }
  } finally {
    await wrangler.stop();
    rmSync(persistTo, { recursive: true, force: true });
  }
}

const ms = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
console.log("| store | runtime | 50 MiB save | 50 MiB load | 2 MiB save | 2 MiB load | 1,000 × 1 KiB save | load | loadRange |");
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of results) {
  console.log(`| ${r.name} | ${r.runtime} | ${ms(median(r.large.save))} | ${ms(median(r.large.load))} | ${ms(median(r.medium.save))} | ${ms(median(r.medium.load))} | ${ms(r.small.saveMs)} | ${ms(r.small.loadMs)} | ${ms(r.small.loadRangeMs)} |`);
}
console.log("\nms, medians of 5 (50 MiB) and 9 (2 MiB) repetitions; the 1 KiB columns are totals for 1,000 values one after another. Inside workerd the clock advances only across I/O, which every store call is.");
mkdirSync(join(here, "results"), { recursive: true });
const file = join(here, "results", `stores-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), results }, null, 1));
log(`raw: ${file}`);
