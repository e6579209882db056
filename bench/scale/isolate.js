// The history of bench/scale.mjs in npm's workerd run directly (tests/workerd/workerd.mjs), so
// that V8 caps the isolate's JS heap (`--max-heap-size`): used by bench/isolate.mjs (the
// smallest heap a cold prepare completes in) and tests/workerd/isolate.test.mjs (the cold
// prepare of a 10 MB history fits a 128 MB isolate).
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker, startWorkerd } from "../../tests/workerd/workerd.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const objects = { SCALE_SESSION: "ScaleSession" };

/**
 * Bundles bench/scale/worker.js and stores a generated history of `messages` messages and
 * about `bytes` bytes in a Durable Object (in a workerd without a cap). `cold(heapMiB, turns)`
 * then runs the session's first prepare (and `turns` more requests, each one turn longer) in a
 * new workerd whose JS heap V8 caps at `heapMiB`, on a fresh copy of that storage; it resolves
 * to one row per request: `{ ok, ms, outOfMemory, ...the Worker's answer }`.
 */
export async function isolateRuns({ messages = 5_000, bytes = 10_000_000 } = {}) {
  const bundle = bundleWorker(join(here, "worker.js"), objects);
  const stored = mkdtempSync(join(tmpdir(), "ck-isolate-"));
  const close = () => {
    rmSync(stored, { recursive: true, force: true });
    bundle.remove();
  };
  let made;
  try {
    const setup = await startWorkerd(bundle, { objects, disk: stored });
    try {
      const res = await fetch(`${setup.base}scale/setup?session=s&messages=${messages}&bytes=${bytes}`, { method: "POST" });
      if (res.status !== 200) throw new Error(`setup: ${res.status} ${await res.text()}`);
      made = await res.json();
    } finally {
      await setup.stop();
    }
  } catch (err) {
    close();
    throw err;
  }

  async function cold(heapMiB, turns = 0) {
    const disk = mkdtempSync(join(tmpdir(), "ck-isolate-try-"));
    cpSync(stored, disk, { recursive: true });
    const w = await startWorkerd(bundle, { objects, disk, heapMiB });
    const rows = [];
    try {
      for (let t = 0; t <= turns; t++) {
        const start = performance.now();
        const res = await fetch(`${w.base}scale/prepare?session=s${t > 0 ? "&turns=1" : ""}`, { method: "POST" }).catch((err) => err);
        const ms = Math.round(performance.now() - start);
        const ok = res instanceof Response && res.status === 200;
        const body = ok ? await res.json() : { error: res instanceof Response ? `${res.status} ${await res.text()}` : res.message };
        // NOTE: V8's out of memory aborts workerd: the request fails with the connection
        const outOfMemory = !ok && /out of memory|heap limit|allocation failed/i.test(w.output());
        rows.push({ heapMiB, ok, ms, outOfMemory, ...body });
        if (!ok) break;
      }
      return rows;
    } finally {
      await w.stop();
      rmSync(disk, { recursive: true, force: true });
    }
  }
  return { made, cold, close };
}
