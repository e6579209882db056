#!/usr/bin/env node
// What a fresh runtime pays to start using the package (issue #43): in Node, in a Chromium page
// and in a workerd isolate, each sample in a fresh process, page or isolate, the time from
// before importing an entry to the end of its first call, split into the import and the first
// call, beside the warm figure of the same call (repeated in the same process after a warm-up;
// the median over batches) so the cold ÷ warm ratio shows. The calls (bench/cold/cases.js):
//   count     countTokens("The quick brown fox…", { model: "gpt-4o" }) on the main entry and
//             /o200k; estimateTokens on /lite (whose countTokens throws: no tables) and /estimate;
//             in Node also gpt-tokenizer's and js-tiktoken's first count (o200k_base, loaded as
//             bench/run.mjs's "first count" loads them), and the ratio context-keeper ÷
//             gpt-tokenizer (the issue's goal: at most 1/10)
//   small     a new MemoryStore and ContextKeeper (gpt-4o) and prepare of a 4-message chat
//   compact   the same with a window of 8,000 tokens and a synchronous summarizer returning a
//             fixed text, on the first 34 messages of tests/data/sessions' agent session (OpenAI
//             format, tool calls and results, 13k tokens): prepare compacts; the decision of
//             every sample is checked and printed
// Each runtime's samples take turns, round by round (every case's first sample, then every
// case's second, ...), so a slow spell of a shared machine falls on all cases alike.
//
// Node (bench/cold/node-child.mjs): a fresh `node` per sample; performance.now() around
//   `import()` of the entry's Node module (the file the package's "exports" give for `node`
//   `import`) and the first call. The stores module (MemoryStore) and the conversation are
//   loaded before the clock starts.
// Chromium (bench/cold/page.js): headless Debian chromium through playwright-core, with the
//   flags of tests/browser/chromium.mjs; a new browser context (its own renderer process and
//   cache) and page per sample, on a page this script serves on 127.0.0.1 (no-store, and
//   cross-origin isolated, so performance.now() has 5 µs resolution). Import = `import()` of
//   the entry's browser module: fetching its .wasm, compiling and instantiating it (the table
//   says whether that was WebAssembly.instantiateStreaming) and the JavaScript.
// workerd (bench/cold/worker.js): npm's workerd run directly (`workerd serve`, as
//   tests/workerd/workerd.mjs does), a new process per sample, so a new isolate; each entry's
//   Worker bundled once by wrangler (`wrangler deploy --dry-run`, as tests/workerd/workerd.mjs's
//   bundleWorker), and a baseline Worker without the package. Inside the isolate the clock is
//   Date.now() in whole milliseconds (performance.now() gives the same); it is checked to
//   advance during synchronous work (in npm's workerd 1.20260426 it does; Cloudflare's deployed
//   runtime advances it only at I/O, as bench/scale/worker.js notes): if it did not, the report
//   says so and only the outside columns mean anything. A Worker compiles its .wasm when it is
//   loaded, before any of its JavaScript runs, so three figures are given: (1) load: from
//   spawning workerd to the first answer of GET /ready (which touches nothing of the package;
//   polled every 2 ms), minus the same for the baseline Worker: compiling the .wasm and
//   evaluating the modules; (2) module evaluation, inside: the clock read before and after the
//   entry's modules evaluate (instantiating the .wasm and running the JavaScript), a part of
//   (1); (3) the first call, inside (from the handler's call to its end) and outside: the round
//   trip of that request (POST /first, holding nothing else) minus the baseline Worker's round
//   trip of the same request (same body, read and parsed). Then POST /warm gives the second call
//   and the warm figure inside the same isolate.
//
//   node bench/cold.mjs [--rounds=N] [--only=node,chromium,workerd] [--pkg=DIR] [--idle=MS]
//
// Defaults: 7 rounds in Node, 5 in Chromium and workerd (--rounds sets all); about 3 minutes on
// the 2-core VM. --pkg measures another build of the package (a directory like pkg/); default:
// the package in node_modules/context-keeper (build it first: npm run build). Prints Markdown to
// stdout (progress to stderr) and writes every sample to bench/results/cold-<timestamp>.json.
// --idle=MS (Node only): wait MS ms (a timer, so at least one turn of the event loop) between the
// import and the first call, as a server that imports the package at boot and serves its first
// request later; the wait is in neither column.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, extname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadSession } from "../tests/js/fixtures.mjs";
import { COMPACT_WINDOW } from "./cold/cases.js";
import { median } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = arg("only")?.split(",");
const wanted = (runtime) => !only || only.includes(runtime);
const roundsOf = (fallback) => Number(arg("rounds") ?? fallback);
const pkgDir = realpathSync(arg("pkg") ?? join(root, "node_modules", "context-keeper"));
const idleMs = arg("idle") === undefined ? undefined : Number(arg("idle"));
const log = (...args) => console.error(...args);
const started = new Date();

// ---- what is measured -----------------------------------------------------------------------

const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
/** The file of `entry` ("context-keeper/o200k") for a runtime's export condition. */
function entryFile(entry, condition) {
  const exported = manifest.exports[entry === "context-keeper" ? "." : `./${entry.slice("context-keeper/".length)}`];
  const target = condition === "node" ? exported.node.import : exported[condition];
  return join(pkgDir, target);
}

const CALLS = {
  countTokens: "first `countTokens`",
  estimateTokens: "first `estimateTokens`",
  small: "first `prepare`, 4 messages",
  compact: `first \`prepare\`, 34 messages, compacts (window ${COMPACT_WINDOW.toLocaleString("en")})`,
};
/** [entry, kind] of every case, the count cases first. */
const PACKAGE_CASES = [
  ["context-keeper", "countTokens"],
  ["context-keeper/o200k", "countTokens"],
  ["context-keeper/lite", "estimateTokens"],
  ["context-keeper/estimate", "estimateTokens"],
  ["context-keeper", "small"],
  ["context-keeper/o200k", "small"],
  ["context-keeper/lite", "small"],
  ["context-keeper", "compact"],
  ["context-keeper/o200k", "compact"],
  ["context-keeper/lite", "compact"],
];
const PEER_CASES = [["gpt-tokenizer", "countTokens"], ["js-tiktoken", "countTokens"]];
/**
 * The warm figure (bench/cold/cases.js's warm): 250 ms and at least 20 calls of warm-up, then the
 * median of 15 batches of ≥ 10 ms (7 of ≥ 30 ms in workerd, whose clock counts whole milliseconds).
 */
const WARM = { warmupMs: 250, warmupCalls: 20, batches: 15, batchMs: 10 };
const WORKERD_WARM = { warmupMs: 250, warmupCalls: 20, batches: 7, batchMs: 30 };

/** The compaction case: the session's first 35 messages, fewer if that would end inside a tool exchange (as bench/trim.mjs's session-35). */
function prefix(messages, n) {
  let end = n;
  while (end < messages.length && messages[end].role === "tool") end--;
  while (end > 0 && messages[end - 1].role === "assistant" && messages[end - 1].tool_calls?.length) end--;
  return messages.slice(0, end);
}
const compactMessages = prefix(loadSession("openai"), 35);
const compactJson = JSON.stringify(compactMessages);
const scratch = mkdtempSync(join(tmpdir(), "ck-cold-"));
const compactFile = join(scratch, "compact.json");
writeFileSync(compactFile, compactJson);

/** Runs `sample(case, round)` for every case, round by round; returns the samples per case. */
async function inTurns(cases, rounds, label, sample) {
  const out = cases.map((c) => ({ entry: c[0], kind: c[1], samples: [] }));
  for (let r = 0; r < rounds; r++) {
    log(`${label}: round ${r + 1}/${rounds}`);
    for (const row of out) row.samples.push(await sample(row, r));
  }
  return out;
}

/** Throws unless every sample's outcome is what the case must give. */
function check(rows, runtime) {
  for (const row of rows) {
    for (const s of row.samples) {
      const result = s.result;
      const ok = row.entry === "none" ? true
        : row.kind === "compact" ? result?.decision === "compacted" && result.compaction === "compacted" && result.fits
        : row.kind === "small" ? result?.decision === "under" && result.fits
        : Number.isInteger(result) && result > 0;
      if (!ok) throw new Error(`${runtime}, ${row.entry}, ${row.kind}: unexpected outcome ${JSON.stringify(result)}`);
    }
  }
}

// ---- Node -------------------------------------------------------------------------------------

async function node(rounds) {
  const storesUrl = pathToFileURL(join(pkgDir, manifest.exports["./stores"].node)).href;
  const rows = await inTurns([...PACKAGE_CASES, ...PEER_CASES], rounds, "node", ({ entry, kind }) => {
    const peer = !entry.startsWith("context-keeper");
    const task = {
      entry, kind, storesUrl, warm: WARM, idleMs,
      ...(peer ? {} : { url: pathToFileURL(entryFile(entry, "node")).href }),
      ...(kind === "compact" ? { input: compactFile } : {}),
    };
    const out = execFileSync(process.execPath, [join(here, "cold", "node-child.mjs"), JSON.stringify(task)], { cwd: root, encoding: "utf8" });
    return JSON.parse(out.trim().split("\n").pop());
  });
  check(rows, "node");
  return { runtime: `Node ${process.version}${idleMs === undefined ? "" : `, ${idleMs} ms idle between the import and the first call`}`, rows };
}

// ---- Chromium ---------------------------------------------------------------------------------

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8", ".json": "application/json", ".wasm": "application/wasm" };

/** Serves a blank page at /, bench/cold/ at /cold/ and the package at /pkg/ on loopback, uncached and cross-origin isolated. */
function serveBench() {
  const folders = [["/cold/", join(here, "cold")], ["/pkg/", pkgDir]];
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    const headers = { "cache-control": "no-store", "cross-origin-opener-policy": "same-origin", "cross-origin-embedder-policy": "require-corp", "cross-origin-resource-policy": "same-origin" };
    if (path === "/") {
      res.writeHead(200, { ...headers, "content-type": TYPES[".html"] });
      return res.end("<!doctype html><title>cold</title>");
    }
    const folder = folders.find(([prefix]) => path.startsWith(prefix));
    const file = folder && join(folder[1], path.slice(folder[0].length));
    try {
      if (!file || !file.startsWith(folder[1] + sep)) throw new Error("outside");
      const body = readFileSync(file);
      res.writeHead(200, { ...headers, "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404, headers);
      res.end("not found");
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((ok) => server.close(ok)) })));
}

async function chromium(rounds) {
  const { chromium: playwright } = await import("playwright-core");
  const { chromiumPath } = await import("../tests/browser/chromium.mjs");
  const server = await serveBench();
  const browser = await playwright.launch({
    executablePath: chromiumPath,
    headless: true,
    // the flags of tests/browser/chromium.mjs (root: --no-sandbox; a closed network)
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const urlOf = (file) => `/pkg/${relative(pkgDir, file).split(sep).join("/")}`;
    const storesUrl = urlOf(join(pkgDir, manifest.exports["./stores"].default));
    const rows = await inTurns(PACKAGE_CASES, rounds, "chromium", async ({ entry, kind }) => {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        const errors = [];
        page.on("pageerror", (err) => errors.push(err));
        await page.goto(`${server.url}/`);
        const task = { url: urlOf(entryFile(entry, "browser")), storesUrl, kind, compactMessages: kind === "compact" ? compactMessages : null, warm: WARM };
        const sample = await page.evaluate(async (t) => (await import("/cold/page.js")).run(t), task);
        if (errors.length) throw errors[0];
        return sample;
      } finally {
        await context.close();
      }
    });
    check(rows, "chromium");
    return { runtime: `Chromium ${browser.version()}`, rows };
  } finally {
    await browser.close();
    await server.close();
  }
}

// ---- workerd ----------------------------------------------------------------------------------

async function workerd(rounds) {
  const { bundleWorker } = await import("../tests/workerd/workerd.mjs");
  const { freePort, wranglerEnv } = await import("../tests/workerd/wrangler.mjs");
  const bin = join(root, "node_modules", ".bin", "workerd");
  const version = JSON.parse(readFileSync(join(root, "node_modules", "workerd", "package.json"), "utf8")).version;
  // The Workers' sources, beside bench/cold/worker.js, resolving `context-keeper` to the package measured.
  const dir = mkdtempSync(join(here, "cold", ".workerd-cold-"));
  const bundles = {};
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkgDir, join(dir, "node_modules", "context-keeper"));
    writeFileSync(join(dir, "clock.js"), "globalThis.__coldStart = Date.now();\n");
    const entries = ["none", ...new Set(PACKAGE_CASES.map(([entry]) => entry))];
    for (const entry of entries) {
      const file = join(dir, `${entry === "none" ? "baseline" : entry.replace("/", "-")}.js`);
      writeFileSync(file, [
        `import { MemoryStore } from "context-keeper/stores";`,
        `import { handler } from "../worker.js";`,
        `import "./clock.js";`,
        entry === "none" ? "const ck = null;" : `import * as ck from ${JSON.stringify(entry)};`,
        "const evaluation = { start: globalThis.__coldStart, end: Date.now() };",
        "export default handler(ck, MemoryStore, evaluation);",
        "",
      ].join("\n"));
      log(`workerd: bundling ${entry}`);
      bundles[entry] = bundleWorker(file);
    }

    /** A new workerd serving `bundle`: the time to its first answer of GET /ready, and a fetch. */
    async function start(bundle) {
      const port = await freePort();
      const modules = bundle.modules.map((m) => `(name = "${m.name}", ${m.kind} = embed "out/${m.name}")`).join(", ");
      const config = join(bundle.dir, `config-${port}.capnp`);
      writeFileSync(config, `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ ${modules} ],
  compatibilityDate = "2026-04-01",
);
`);
      const base = `http://127.0.0.1:${port}`;
      const t0 = performance.now();
      const child = spawn(bin, ["serve", config, "--experimental"], { stdio: ["ignore", "pipe", "pipe"], env: wranglerEnv });
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
      const stop = async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
        rmSync(config, { force: true });
      };
      for (;;) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`workerd exited (${child.exitCode ?? child.signalCode}):\n${output}`);
        try {
          const res = await fetch(`${base}/ready`);
          const readyMs = performance.now() - t0;
          const { evaluation } = await res.json();
          return { readyMs, evaluation, base, stop };
        } catch {}
        if (performance.now() - t0 > 30_000) {
          await stop();
          throw new Error(`workerd did not answer within 30 s:\n${output}`);
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    }

    const post = async (url, body) => {
      const t0 = performance.now();
      const res = await fetch(url, { method: "POST", body });
      const json = await res.json();
      const ms = performance.now() - t0;
      if (json.error) throw new Error(json.error);
      return { ms, json };
    };

    // whether the clock runs during synchronous work in this workerd
    const probe = await start(bundles.none);
    const clockAdvances = (await (await fetch(`${probe.base}/clock`)).json()).advances;
    await probe.stop();
    if (!clockAdvances) log("workerd: Date.now() does not advance during synchronous work: the inside columns are not measurements");

    const cases = [["none", "countTokens"], ["none", "compact"], ...PACKAGE_CASES];
    const rows = await inTurns(cases, rounds, `workerd ${version}`, async ({ entry, kind }) => {
      const w = await start(bundles[entry]);
      try {
        const body = kind === "compact" ? compactJson : undefined;
        const first = await post(`${w.base}/first?kind=${kind}`, body);
        const again = entry === "none" ? null : await post(`${w.base}/warm?kind=${kind}&warm=${encodeURIComponent(JSON.stringify(WORKERD_WARM))}`, body);
        return {
          readyMs: w.readyMs,
          evaluationMs: w.evaluation.end - w.evaluation.start,
          firstRoundTripMs: first.ms,
          firstMs: first.json.ms,
          secondMs: again?.json.secondMs ?? null,
          warmMs: again?.json.warmMs ?? null,
          result: first.json.result,
        };
      } finally {
        await w.stop();
      }
    });
    check(rows.filter((r) => r.entry !== "none"), "workerd");
    return { runtime: `workerd ${version}`, clockAdvances, rows };
  } finally {
    for (const b of Object.values(bundles)) b.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the report -------------------------------------------------------------------------------

const ms = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toFixed(3));
/** A median of whole milliseconds (workerd's clock). */
const whole = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number.isInteger(x) ? String(x) : x.toFixed(1));
const times = (x) => (x === null || !Number.isFinite(x) ? "–" : `${x >= 100 ? x.toFixed(0) : x.toFixed(1)}×`);
const med = (row, f) => median(row.samples.map(f).filter((x) => x !== null && x !== undefined));
const entryName = (entry) => (entry === "context-keeper" || !entry.startsWith("context-keeper") ? `\`${entry}\`` : `\`/${entry.slice("context-keeper/".length)}\``);

/** The medians of a row of Node or Chromium samples. */
function summary(row) {
  const imp = med(row, (s) => s.importMs);
  const first = med(row, (s) => s.firstMs);
  const total = med(row, (s) => s.importMs + s.firstMs);
  const warm = med(row, (s) => s.warmMs);
  return { imp, first, total, second: med(row, (s) => s.secondMs), warm, firstRatio: first / warm, totalRatio: total / warm };
}

function outcomeNote(rows) {
  const compact = rows.filter((r) => r.kind === "compact" && r.entry !== "none");
  return compact.map((r) => {
    const o = r.samples[0].result;
    return `${entryName(r.entry)} ${o.decision} (${o.tokensBefore.toLocaleString("en")} → ${o.tokensAfter.toLocaleString("en")} tokens) in all ${r.samples.length} samples`;
  }).join("; ");
}

function printLocal(result, what) {
  const { rows } = result;
  const n = rows[0].samples.length;
  console.log(`\n### ${result.runtime}: ${what}, medians of ${n}\n`);
  const wasm = result.runtime.startsWith("Chromium");
  console.log(`| entry | call | import (ms) | first call (ms) | import + first call (ms) | second call (ms) | warm (ms) | first call ÷ warm | (import + first) ÷ warm |${wasm ? " .wasm compiled with |" : ""}`);
  console.log(`| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${wasm ? " --- |" : ""}`);
  for (const row of rows) {
    const s = summary(row);
    const how = wasm ? ` ${[...new Set(row.samples.flatMap((x) => x.compiledWith))].join(", ") || "–"} |` : "";
    console.log(`| ${entryName(row.entry)} | ${CALLS[row.kind]} | ${ms(s.imp)} | ${ms(s.first)} | **${ms(s.total)}** | ${ms(s.second)} | ${ms(s.warm)} | ${times(s.firstRatio)} | ${times(s.totalRatio)} |${how}`);
  }
  console.log(`\nCompaction case: ${outcomeNote(rows)}.`);
  if (wasm) console.log(`Pages cross-origin isolated (5 µs clock): ${rows.every((r) => r.samples.every((s) => s.isolated)) ? "yes" : "**no** (100 µs clock)"}.`);
  const gpt = rows.find((r) => r.entry === "gpt-tokenizer");
  if (gpt) {
    const peerTotal = summary(gpt).total;
    const ratios = rows.filter((r) => r.kind === "countTokens" && r.entry.startsWith("context-keeper"))
      .map((r) => `${entryName(r.entry)} ${ms(summary(r).total)} ms ÷ ${ms(peerTotal)} ms = **${(summary(r).total / peerTotal).toFixed(3)}** (1/${(peerTotal / summary(r).total).toFixed(1)})`);
    console.log(`First count (import + first call) ÷ gpt-tokenizer's, goal ≤ 0.10: ${ratios.join("; ")}.`);
  }
}

function printWorkerd(result) {
  const { rows } = result;
  const n = rows[0].samples.length;
  const base = (kind) => rows.find((r) => r.entry === "none" && r.kind === (kind === "compact" ? "compact" : "countTokens"));
  const baseReady = med(base("countTokens"), (s) => s.readyMs);
  console.log(`\n### ${result.runtime}: a new workerd process (isolate) per sample, medians of ${n}\n`);
  console.log(`Baseline Worker (no package): ready ${ms(baseReady)} ms after spawning workerd; first request's round trip ${ms(med(base("countTokens"), (s) => s.firstRoundTripMs))} ms (${ms(med(base("compact"), (s) => s.firstRoundTripMs))} ms with the compaction case's body). Clock advances during synchronous work: ${result.clockAdvances ? "yes" : "**no**"}.\n`);
  console.log("| entry | call | ready after spawn (ms) | load: ready − baseline (ms) | of which module evaluation, inside (ms, whole) | first call, inside (ms, whole) | first call, outside: round trip − baseline (ms) | load + first call (ms) | second call, inside (ms, whole) | warm, inside (ms) | first call ÷ warm | (load + first) ÷ warm |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const row of rows.filter((r) => r.entry !== "none")) {
    const ready = med(row, (s) => s.readyMs);
    const load = ready - baseReady;
    const first = med(row, (s) => s.firstMs);
    const outside = med(row, (s) => s.firstRoundTripMs) - med(base(row.kind), (s) => s.firstRoundTripMs);
    const warm = med(row, (s) => s.warmMs);
    console.log(`| ${entryName(row.entry)} | ${CALLS[row.kind]} | ${ms(ready)} | ${ms(load)} | ${whole(med(row, (s) => s.evaluationMs))} | ${whole(first)} | ${ms(outside)} | **${ms(load + first)}** | ${whole(med(row, (s) => s.secondMs))} | ${ms(warm)} | ${times(first / warm)} | ${times((load + first) / warm)} |`);
  }
  console.log(`\nCompaction case: ${outcomeNote(rows)}.`);
}

function gitCommit() {
  try {
    const env = { ...process.env, GIT_OPTIONAL_LOCKS: "0" }; // read only: no index refresh
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8", env }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src", "pkg-template"], { cwd: root, encoding: "utf8", env }).trim() !== "";
    return dirty ? `${head} (src/ or pkg-template/ modified)` : head;
  } catch {
    return null;
  }
}

/** SHA-256 (first 12 hex digits) of each .wasm the measured entries load, to tell builds apart. */
function wasmHashes() {
  const out = {};
  for (const file of ["node/context_keeper_bg.wasm", "web/context_keeper_bg.wasm", ...["o200k", "lite", "estimate"].map((e) => `${e}/web/context_keeper_${e}_bg.wasm`)]) {
    const path = join(pkgDir, file);
    if (existsSync(path)) out[file] = createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 12);
  }
  return out;
}

const environment = {
  started: started.toISOString(),
  pkg: pkgDir,
  pkgBuilt: (() => { try { return execFileSync("stat", ["-c", "%y", join(pkgDir, "package.json")], { encoding: "utf8" }).trim(); } catch { return null; } })(),
  wasm: wasmHashes(),
  commit: gitCommit(),
  node: process.version,
  cpu: `${cpus()[0]?.model ?? "?"} x${cpus().length}`,
  loadAverageAtStart: loadavg().map((x) => +x.toFixed(2)),
};
const results = {};
try {
  if (wanted("node")) results.node = await node(roundsOf(7));
  if (wanted("chromium")) results.chromium = await chromium(roundsOf(5));
  if (wanted("workerd")) results.workerd = await workerd(roundsOf(5));
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
environment.loadAverageAtEnd = loadavg().map((x) => +x.toFixed(2));
environment.seconds = Math.round((Date.now() - started) / 1000);

console.log(`## Cold start (\`node bench/cold.mjs\`)\n`);
console.log(`${environment.started}, ${environment.seconds} s; the package in ${environment.pkg} (built ${environment.pkgBuilt ?? "?"}; the repository at ${environment.commit ?? "?"}); ${environment.cpu}; load average ${environment.loadAverageAtStart.join(", ")} at the start, ${environment.loadAverageAtEnd.join(", ")} at the end.`);
if (results.node) printLocal(results.node, "a fresh process per sample");
if (results.chromium) printLocal(results.chromium, "a fresh browser context and page per sample");
if (results.workerd) printWorkerd(results.workerd);

mkdirSync(join(here, "results"), { recursive: true });
const file = join(here, "results", `cold-${started.toISOString().replaceAll(":", "-")}.json`);
writeFileSync(file, JSON.stringify({ environment, results }, null, 2));
log(`wrote ${relative(root, file)}`);
