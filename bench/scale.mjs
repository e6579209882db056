#!/usr/bin/env node
// A 10 MB, 5,000-message agent history through the keeper's prepare inside workerd, with
// Durable Object storage (bench/scale/worker.js, under `wrangler dev` from npm: a real workerd
// with miniflare's local SQLite-backed storage). Three phases, each in a fresh workerd:
//
//   setup    the object generates the history and stores it (chunked, DurableObjectStore)
//   cold     load only (the baseline), then the first prepare of the session (nothing stored
//            yet: offloads, prune, compaction with a scripted summarizer), then WARM turns: each
//            request appends one turn (an assistant call and its ~4 KB result), stores the
//            history and prepares it, with a new keeper per request (as a Worker that keeps
//            nothing) and then with one keeper kept on the object
//   restart  a new workerd (the isolate and the object gone, the storage kept): turns again,
//            the session's decisions and compaction read back from storage
//
// Memory: local workerd does not enforce the 128 MB isolate limit and reports no heap, so this
// gives what it can: the wasm linear memory of the package's instances (read inside the
// isolate; it never shrinks, so it is the high-water mark) and the resident set of the workerd
// process (VmRSS now, VmHWM its peak since that workerd started; the whole runtime, not one
// isolate), before and after each request. Time: the request round trip from Node, and inside
// the isolate (the clock there advances only across I/O; see worker.js).
//
//   node bench/scale.mjs [--messages=5000] [--bytes=10000000] [--turns=5]
//   node bench/scale.mjs --node    # the same history and calls in Node, wasm memory by stage
//   node bench/scale.mjs --node --only="keeper.prepare, cold"   # one stage alone
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startWrangler } from "../tests/workerd/wrangler.mjs";
import { median } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => { const [k, v] = a.replace(/^--/, "").split("="); return [k, v ?? true]; }));
const MESSAGES = Number(args.messages ?? 5_000);
const BYTES = Number(args.bytes ?? 10_000_000);
const TURNS = Number(args.turns ?? 5);
const MiB = (n) => (n / 2 ** 20).toFixed(1);

// --node: the same history through the same calls in this Node process, the wasm memory read
// after each stage (where the cold prepare's memory goes; Node has no 128 MB limit either).
if (args.node) {
  const { wasmBytes } = await import("./scale/memory.js");
  const { history } = await import("./scale/history.js");
  const ck = await import("context-keeper");
  const { MemoryStore } = await import("context-keeper/stores");
  const messages = history(MESSAGES, BYTES);
  const stages = [["loaded", () => {}]];
  stages.push(["validateMessages", () => ck.validateMessages(messages)]);
  stages.push(["countMessages (gpt-4o)", () => ck.countMessages(messages, { model: "gpt-4o" })]);
  const store = new MemoryStore();
  const summarize = () => "Intent: fix the failing test. Progress: read the files. Next: write the fix.";
  stages.push(["keeper.plan (dry run)", () => { const k = new ck.ContextKeeper({ model: "gpt-4o", store }); return k.plan(messages, { sessionId: "plan" }).finally(() => k.free()); }]);
  stages.push(["keeper.prepare, cold", () => { const k = new ck.ContextKeeper({ model: "gpt-4o", store, summarize }); return k.prepare(messages, { sessionId: "s" }).finally(() => k.free()); }]);
  stages.push(["keeper.prepare, +1 turn, new keeper", () => { messages.push(messages.at(-2), messages.at(-1)); const k = new ck.ContextKeeper({ model: "gpt-4o", store, summarize }); return k.prepare(messages, { sessionId: "s" }).finally(() => k.free()); }]);
  console.log(`## ${MESSAGES} messages, ${(Buffer.byteLength(JSON.stringify(messages)) / 1e6).toFixed(1)} MB in Node ${process.version}: wasm memory after each stage (high-water mark)\n`);
  console.log("| stage | ms | wasm memory after | JS heap used after |");
  console.log("| --- | ---: | ---: | ---: |");
  // --only=TEXT: the loaded history and the stages whose name starts with TEXT, each alone in
  // this fresh process (`--only="keeper.prepare, cold"`: the cold prepare's own high-water mark)
  const only = typeof args.only === "string" ? stages.filter(([name], i) => i === 0 || name.startsWith(args.only)) : stages;
  for (const [name, f] of only) {
    const start = performance.now();
    await f();
    const ms = performance.now() - start;
    console.log(`| ${name} | ${Math.round(ms)} | ${MiB(wasmBytes())} MiB | ${MiB(process.memoryUsage().heapUsed)} MiB |`);
  }
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), "ck-scale-config-"));
const config = join(dir, "wrangler.toml");
writeFileSync(config, `name = "ck-scale-bench"
main = ${JSON.stringify(join(here, "scale", "worker.js"))}
compatibility_date = "2026-04-01"
send_metrics = false

[[durable_objects.bindings]]
name = "SCALE_SESSION"
class_name = "ScaleSession"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["ScaleSession"]
`);
const persistTo = mkdtempSync(join(tmpdir(), "ck-scale-"));

/** The workerd processes in wrangler's process group: `{ pid, rss, hwm }` in bytes. */
function workerd(group) {
  const out = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (Number(fields[2]) !== group || !comm.startsWith("workerd")) continue;
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = (key) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? 0) * 1024;
      out.push({ pid: Number(pid), rss: kb("VmRSS"), hwm: kb("VmHWM") });
    } catch {}
  }
  return out;
}
const memory = (w) => workerd(w.pid).reduce((a, p) => ({ rss: a.rss + p.rss, hwm: a.hwm + p.hwm }), { rss: 0, hwm: 0 });

async function post(w, path) {
  const before = memory(w);
  const start = performance.now();
  const res = await fetch(`${w.base}scale/${path}`, { method: "POST" });
  const text = await res.text();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 2000)}\n${w.output().slice(-3000)}`);
  const after = memory(w);
  const body = JSON.parse(text);
  const row = { path, ms: Math.round(ms), ...body, rssBefore: before.rss, rssAfter: after.rss, hwm: after.hwm };
  console.error(`${path}: ${row.ms} ms round trip; inside ${JSON.stringify(body.times)}; wasm ${MiB(body.wasmBytes)} MiB; workerd RSS ${MiB(before.rss)} -> ${MiB(after.rss)} MiB, peak ${MiB(after.hwm)} MiB${body.report ? `; ${JSON.stringify(body.report)}` : ""}`);
  return row;
}

const rows = {};
const q = `session=scale`;
let w;
try {
  w = await startWrangler({ config, persistTo });
  rows.idle = memory(w);
  rows.setup = await post(w, `setup?${q}&messages=${MESSAGES}&bytes=${BYTES}`);
  await w.stop();

  w = await startWrangler({ config, persistTo });
  rows.coldIdle = memory(w);
  rows.load = await post(w, `load?${q}`);
  rows.cold = await post(w, `prepare?${q}`);
  rows.warm = [];
  for (let t = 0; t < TURNS; t++) rows.warm.push(await post(w, `prepare?${q}&turns=1`));
  rows.kept = [];
  for (let t = 0; t < TURNS + 1; t++) rows.kept.push(await post(w, `prepare?${q}&turns=1&keep=1`));
  await w.stop();

  w = await startWrangler({ config, persistTo });
  rows.restartIdle = memory(w);
  rows.restart = [];
  for (let t = 0; t < TURNS; t++) rows.restart.push(await post(w, `prepare?${q}&turns=1`));
} finally {
  await w?.stop();
  rmSync(persistTo, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
}

const med = (xs, f) => median(xs.map(f));
const ms = (x) => `${Math.round(x).toLocaleString("en")} ms`;
const line = (label, rs, note = "") => {
  const rt = med(rs, (r) => r.ms);
  const prep = med(rs, (r) => r.times.prepare);
  const last = rs.at(-1);
  console.log(`| ${label} | ${rs.length} | ${ms(rt)} | ${ms(prep)} | ${rs[0].times.append === undefined ? "–" : ms(med(rs, (r) => r.times.append))} | ${MiB(Math.max(...rs.map((r) => r.wasmBytes)))} MiB | ${MiB(Math.max(...rs.map((r) => r.rssAfter)))} MiB | ${MiB(last.hwm)} MiB | ${last.report.decision}, ${last.report.tokensBefore.toLocaleString("en")} -> ${last.report.tokensAfter.toLocaleString("en")} tokens, fits ${last.report.fits}, ${last.out} messages, ${last.problems} problems${note} |`);
};
console.log(`## A ${(rows.setup.bytes / 1e6).toFixed(1)} MB, ${rows.setup.messages}-message history through prepare in workerd (Durable Object storage)\n`);
console.log(`setup: generated in ${ms(rows.setup.times.generate)}, stored in ${ms(rows.setup.times.store)}. workerd RSS idle ${MiB(rows.coldIdle.rss)} MiB; load only (read + parse the stored history): ${ms(rows.load.ms)} round trip, ${ms(rows.load.times.load)} inside, RSS after ${MiB(rows.load.rssAfter)} MiB.\n`);
console.log("| prepare | requests | round trip (median) | prepare inside (median) | append + store turn | wasm memory (max) | workerd RSS after (max) | workerd peak RSS | last report |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
line("cold: first prepare of the session, new workerd", [rows.cold]);
line("warm: +1 turn, a new keeper per request", rows.warm);
line("warm: +1 turn, one keeper kept on the object (first builds it)", rows.kept);
line("after a restart: +1 turn, new workerd, state from storage", rows.restart);

mkdirSync(join(here, "results"), { recursive: true });
const file = join(here, "results", `scale-${new Date().toISOString().replaceAll(":", "-")}.json`);
writeFileSync(file, JSON.stringify({ node: process.version, messages: MESSAGES, bytes: BYTES, rows }, null, 1));
console.error(`wrote ${file}`);
