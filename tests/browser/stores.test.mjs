// IndexedDBStore in real headless Chromium: the shared suite (50 MiB round trip included) in a
// page, values that outlive a reload, a quota Chromium enforces (set through the DevTools
// protocol) coming back as StoreQuotaError, and a second tab's upgrade that does not hang on
// the first tab's open connection.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDemo } from "./chromium.mjs";

let demo, page, pageErrors;

before(async () => {
  demo = await openDemo();
  ({ page, pageErrors } = demo);
});

after(async () => {
  await demo?.close();
});

test("the shared store suite passes for IndexedDBStore in Chromium", async () => {
  const report = await page.evaluate(async () => {
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const { runStoreTests } = await import("/pkg/testing/index.js");
    let n = 0;
    return runStoreTests(async () => {
      const name = `suite-${n++}`;
      const store = new IndexedDBStore({ name });
      return {
        store,
        reopen: async () => new IndexedDBStore({ name }),
        teardown: async () => {
          await store.close();
          await new Promise((resolve, reject) => {
            const request = indexedDB.deleteDatabase(name);
            request.onsuccess = resolve;
            request.onerror = () => reject(request.error);
          });
        },
      };
    });
  });
  const failed = report.cases.filter((c) => !c.ok);
  assert.deepEqual(failed, []);
  assert.equal(report.skipped, 0);
  assert.ok(report.passed >= 9, `${report.passed} cases passed`);
  console.log(`# IndexedDBStore (Chromium): 50 MiB save ${report.timings.largeSaveMs.toFixed(0)} ms, load ${report.timings.largeLoadMs.toFixed(0)} ms`);
  assert.deepEqual(pageErrors, []);
});

test("values outlive a reload of the page", async () => {
  await page.evaluate(async () => {
    const { IndexedDBStore, saveText } = await import("/pkg/stores/index.js");
    const store = new IndexedDBStore({ name: "reload" });
    await saveText(store, ["context-keeper", "s1", "offload", "../../etc/passwd"], "kept across a reload 😀");
    await store.close();
  });
  await page.reload();
  const text = await page.evaluate(async () => {
    const { IndexedDBStore, loadText } = await import("/pkg/stores/index.js");
    const store = new IndexedDBStore({ name: "reload" });
    try {
      return await loadText(store, ["context-keeper", "s1", "offload", "../../etc/passwd"]);
    } finally {
      await store.close();
    }
  });
  assert.equal(text, "kept across a reload 😀");
});

test("a write over the origin's quota is a StoreQuotaError naming the key, and the store keeps working", async () => {
  // A fresh origin (localhost, not 127.0.0.1): Chromium keeps granting an origin the space it
  // has just freed (the suite's 50 MiB), whatever quota is set afterwards.
  const page = await demo.page.context().newPage();
  await page.goto(demo.page.url().replace("127.0.0.1", "localhost"));
  const cdp = await page.context().newCDPSession(page);
  const origin = new URL(page.url()).origin;
  await cdp.send("Storage.overrideQuotaForOrigin", { origin, quotaSize: 2 * 1024 * 1024 });
  try {
    const result = await page.evaluate(async () => {
      const { IndexedDBStore, StoreQuotaError } = await import("/pkg/stores/index.js");
      const store = new IndexedDBStore({ name: "quota" });
      await store.save(["small"], Uint8Array.of(1, 2, 3));
      let error;
      try {
        // Random bytes, so Chromium's compression of large values cannot bring them under quota.
        const big = new Uint8Array(8 * 1024 * 1024);
        for (let at = 0; at < big.length; at += 65536) crypto.getRandomValues(big.subarray(at, at + 65536));
        await store.save(["context-keeper", "s1", "offload", "big"], big);
      } catch (err) {
        error = { quota: err instanceof StoreQuotaError, name: err.name, kind: err.kind, key: err.key, message: err.message };
      }
      const big = await store.load(["context-keeper", "s1", "offload", "big"]);
      await store.save(["after"], Uint8Array.of(9));
      const after = Array.from(await store.load(["after"]));
      const small = Array.from(await store.load(["small"]));
      await store.close();
      return { error, big: big === undefined ? "none" : big.length, after, small };
    });
    assert.deepEqual(result.error && { quota: result.error.quota, name: result.error.name, kind: result.error.kind, key: result.error.key }, {
      quota: true, name: "StoreQuotaError", kind: "quota", key: ["context-keeper", "s1", "offload", "big"],
    }, JSON.stringify(result.error));
    assert.match(result.error.message, /save \["context-keeper","s1","offload","big"\]: IndexedDB QuotaExceededError/);
    assert.equal(result.big, "none");
    assert.deepEqual(result.after, [9]);
    assert.deepEqual(result.small, [1, 2, 3]);
  } finally {
    await cdp.send("Storage.overrideQuotaForOrigin", { origin });
    await cdp.detach();
    await page.close();
  }
});

test("a second tab's upgrade does not hang on this tab's open store, which reopens after", async () => {
  await page.evaluate(async () => {
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    globalThis.tabStore = new IndexedDBStore({ name: "tabs" });
    await globalThis.tabStore.save(["a"], Uint8Array.of(1));
  });
  const other = await page.context().newPage();
  try {
    await other.goto(page.url());
    const upgraded = await other.evaluate(() => new Promise((resolve) => {
      const timer = setTimeout(() => resolve("hung"), 5000);
      const request = indexedDB.open("tabs", 7);
      request.onupgradeneeded = () => request.result.createObjectStore("added");
      request.onblocked = () => { clearTimeout(timer); resolve("blocked"); };
      request.onsuccess = () => { clearTimeout(timer); const v = request.result.version; request.result.close(); resolve(v); };
      request.onerror = () => { clearTimeout(timer); resolve(`error: ${request.error}`); };
    }));
    assert.equal(upgraded, 7);
  } finally {
    await other.close();
  }
  const after = await page.evaluate(async () => {
    await globalThis.tabStore.save(["b"], Uint8Array.of(2));
    const entries = await globalThis.tabStore.loadRange([]);
    await globalThis.tabStore.close();
    return entries.map((e) => [e.key, Array.from(e.data)]);
  });
  assert.deepEqual(after, [[["a"], [1]], [["b"], [2]]]);
  assert.deepEqual(pageErrors, []);
});
