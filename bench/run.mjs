#!/usr/bin/env node
// The benchmark harness: context-keeper against gpt-tokenizer, js-tiktoken, npm tiktoken (wasm)
// and tokenx, side by side in one run. Prints Markdown to stdout (progress to stderr) and writes
// every raw measurement to bench/results/<timestamp>.json. See bench/README.md.
//
//   node bench/run.mjs                 full run (a few minutes)
//   node bench/run.mjs --quick         smoke run (< 1 minute): small slices, o200k_base only
//   node bench/run.mjs --only=english,run-letters --peers=context-keeper,gpt-tokenizer
import { fork, execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { ALL_CLASSES, CONVERSATION, PATHOLOGICAL_CLASSES, classFile, loadClass } from "./corpus.mjs";
import { ENCODINGS, ENTRY_PEERS, ESTIMATORS, EXACT, PACKAGE, REFERENCE, isEstimator } from "./peers.mjs";
import { report } from "./report.mjs";
import { packageSizes } from "./sizes.mjs";
import { estimatorError, median, mismatches, throughputOf } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    peers: { type: "string" },
    encodings: { type: "string" },
    reps: { type: "string" },
    report: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});

// --report=<results.json>: print the Markdown of an earlier run again.
if (args.report) {
  console.log(report(JSON.parse(readFileSync(args.report, "utf8"))));
  process.exit(0);
}

if (args.help) {
  console.log(`node bench/run.mjs [--quick] [--only=<class,...>] [--peers=<peer,...>] [--encodings=<enc,...>] [--reps=N]
node bench/run.mjs --report=bench/results/<file>.json   (print an earlier run's tables again)
classes:   ${ALL_CLASSES.join(", ")}
peers:     ${[...EXACT, ...ESTIMATORS].join(", ")} (${REFERENCE} always runs: it is the reference)
encodings: ${ENCODINGS.join(", ")}`);
  process.exit(0);
}

/** Run settings; --quick trades precision for a run under a minute. */
const config = args.quick
  ? { quick: true, reps: 3, sliceBytes: 32 * 1024, pathologicalBytes: 2 * 1024, firstCallRuns: 1,
      encodings: ["o200k_base"], timeoutMs: 60_000, pathologicalTimeoutMs: 5_000, groupPathological: true }
  : { quick: false, reps: 5, sliceBytes: null, pathologicalBytes: 1024 * 1024, firstCallRuns: 5,
      encodings: ENCODINGS, timeoutMs: 300_000, pathologicalTimeoutMs: 10_000 };
if (args.reps) config.reps = Math.max(1, Number(args.reps));
if (args.encodings) config.encodings = args.encodings.split(",");

const list = (value, all, what) => {
  if (!value) return all;
  const picked = value.split(",");
  for (const p of picked) if (!all.includes(p)) throw new RangeError(`unknown ${what} "${p}"; known: ${all.join(", ")}`);
  return picked;
};
const classes = list(args.only, ALL_CLASSES, "class");
const peers = list(args.peers, [...EXACT, ...ESTIMATORS], "peer");
const exactPeers = EXACT.filter((p) => p === REFERENCE || peers.includes(p));
const estimators = ESTIMATORS.filter((p) => peers.includes(p));

const log = (...xs) => console.error(...xs);
const startedAt = performance.now();
const clock = () => `[${((performance.now() - startedAt) / 1000).toFixed(0).padStart(3)} s]`;

/**
 * Runs one task in a fresh `node --expose-gc` child and collects its reports. The child is
 * killed after `timeoutMs`; the repetitions it finished are kept and `timedOut` is set.
 */
function runChild(task, timeoutMs) {
  return startChild(task, timeoutMs).done;
}

/**
 * Starts a child (see {@link runChild}); `done` settles when it exits. For a task with
 * `turns`, `asked()` resolves once the child has asked for a turn (or has exited) and `go()`
 * gives it the turn it asked for.
 */
function startChild(task, timeoutMs) {
  const child = fork(join(here, "child.mjs"), [JSON.stringify(task)], {
    execArgv: ["--expose-gc"],
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const out = { task, reps: [], result: null, error: null, timedOut: false };
  let asks = 0;
  let exited = false;
  let wake = null;
  const timer = setTimeout(() => {
    out.timedOut = true;
    // The unfinished repetition's speed is below its bytes / the time spent on it so far.
    if (out.current) out.timeoutBound = out.current.bytes / 1e6 / ((performance.now() - out.current.at) / 1e3);
    child.kill("SIGKILL");
  }, timeoutMs);
  child.on("message", (m) => {
    if (m.type === "start") out.current = { cls: m.cls, bytes: m.bytes, at: performance.now() };
    else if (m.type === "rep") out.reps.push(m);
    else if (m.type === "done") out.result = m.result;
    else if (m.type === "error") out.error = m.message;
    else if (m.type === "turn") asks++;
    wake?.();
  });
  const done = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (!out.result && !out.error && !out.timedOut) out.error = `child exited with ${signal ?? code}`;
      exited = true;
      wake?.();
      resolve(out);
    });
  });
  const asked = async () => {
    while (asks === 0 && !exited) await new Promise((resolve) => (wake = resolve));
    return asks > 0;
  };
  const go = () => {
    asks--;
    child.send({ type: "go" });
  };
  return { done, asked, go };
}

/**
 * Runs `tasks` (one per peer) in children that take turns: each repetition of each class is
 * counted by every peer in turn, one child counting at a time, so a slow spell of a shared
 * machine falls on all peers alike and their ratios hold. The children load their peers at
 * the same time, untimed.
 */
async function runInTurns(tasks, timeoutMs) {
  const children = tasks.map((task) => startChild({ ...task, turns: true }, timeoutMs * tasks.length));
  let live = children;
  while (live.length > 0) {
    const next = [];
    for (const c of live) {
      if (!(await c.asked())) continue;
      c.go();
      // Its turn ends when it asks for the next one (or exits).
      await c.asked();
      next.push(c);
    }
    live = next;
  }
  return Promise.all(children.map((c) => c.done));
}

/**
 * First call after import, `config.firstCallRuns` fresh processes per (peer, encoding); with
 * context-keeper, its subpath entries too (each with only its own encoding). The processes run
 * one at a time, round by round (every peer's first process, then every peer's second, ...),
 * so a slow spell of the machine falls on all peers alike.
 */
async function measureFirstCalls() {
  const entries = peers.includes("context-keeper") ? Object.keys(ENTRY_PEERS) : [];
  const cases = [];
  for (const peer of [...exactPeers, ...estimators, ...entries]) {
    const own = ENTRY_PEERS[peer]; // a subpath entry's encodings: it cannot load the other
    const encodings = own ? own.filter((e) => isEstimator(peer) || config.encodings.includes(e))
      : isEstimator(peer) ? ["o200k_base"] : config.encodings;
    for (const encoding of encodings) {
      const otherEncoding = isEstimator(peer) || own ? null : ENCODINGS.find((e) => e !== encoding);
      cases.push({ task: { mode: "first", peer, encoding, otherEncoding }, runs: [] });
    }
  }
  for (let i = 0; i < config.firstCallRuns; i++) {
    for (const c of cases) c.runs.push(await runChild(c.task, 60_000));
  }
  return cases.map(({ task: { peer, encoding }, runs }) => {
    const ok = runs.filter((r) => r.result);
    const result = {
      peer, encoding,
      firstMs: median(ok.map((r) => r.result.firstMs)),
      importMs: median(ok.map((r) => r.result.importMs)),
      countMs: median(ok.map((r) => r.result.countMs)),
      runsMs: ok.map((r) => r.result.firstMs),
      afterFirst: ok.at(-1)?.result.afterFirst ?? null,
      afterBoth: ok.at(-1)?.result.afterBoth ?? null,
      error: runs.find((r) => r.error)?.error ?? null,
    };
    log(`${clock()} first call  ${peer.padEnd(28)} ${encoding}  ${result.firstMs?.toFixed(1)} ms (import ${result.importMs?.toFixed(1)} + count ${result.countMs?.toFixed(1)})${result.error ? `  ERROR ${result.error}` : ""}`);
    return result;
  });
}

/** What a child needs to count one class: its cache file and slice size, or a generated size. */
function job(cls) {
  if (PATHOLOGICAL_CLASSES.includes(cls)) return { cls, pathologicalBytes: config.pathologicalBytes };
  const { bytes } = loadClass(cls);
  let sliceBytes = config.sliceBytes ?? Math.floor(bytes / (config.reps + 1));
  if (cls === CONVERSATION) sliceBytes = config.quick ? 128 * 1024 : Number.MAX_SAFE_INTEGER;
  return { cls, file: classFile(cls), sliceBytes };
}

/**
 * Runs `jobs` for one peer and encoding in one child, then splits its reports into one run per
 * class: `{ task: { peer, encoding, cls }, reps, memory, timedOut, timeoutBound, error, summary }`.
 */
async function runJobs(peer, encoding, jobs, timeoutMs) {
  const child = await runChild({ mode: "throughput", peer, encoding, reps: config.reps, jobs }, timeoutMs);
  return splitRuns(child, jobs, timeoutMs);
}

/** As {@link runJobs} for several peers at once, taking turns ({@link runInTurns}). */
async function runJobsInTurns(peers, encoding, jobs, timeoutMs) {
  const tasks = peers.map((peer) => ({ mode: "throughput", peer, encoding, reps: config.reps, jobs }));
  const children = await runInTurns(tasks, timeoutMs);
  return children.flatMap((child) => splitRuns(child, jobs, timeoutMs));
}

/** One child's reports, as one run per class. */
function splitRuns(child, jobs, timeoutMs) {
  const { peer, encoding } = child.task;
  // A child may report classes of its own (e.g. "conversation/countMessages").
  const reported = child.reps.map((r) => r.cls).filter((c) => !jobs.some((j) => j.cls === c));
  return [...jobs.map((j) => j.cls), ...new Set(reported)].map((cls) => {
    const reps = child.reps.filter((r) => r.cls === cls);
    const unfinished = child.timedOut && child.current?.cls === cls;
    const run = {
      task: { peer, encoding, cls }, reps, memory: child.result,
      timedOut: unfinished, timeoutBound: unfinished ? child.timeoutBound : null,
      error: child.error ?? (child.timedOut && reps.length === 0 && !unfinished ? "not run: time limit" : null),
    };
    run.summary = { ...throughputOf(run), timedOut: run.timedOut, timeoutBound: run.timeoutBound, timeoutMs, error: run.error };
    const t = run.summary;
    log(`${clock()} throughput  ${peer.padEnd(24)} ${encoding}  ${cls.padEnd(13)} ${t.mbps?.toFixed(2) ?? "-"} MB/s` +
      ` (${t.reps} reps)${run.timedOut ? ` TIMED OUT after ${timeoutMs / 1000} s` : ""}${run.error ? `  ERROR ${run.error.split("\n")[0]}` : ""}`);
    return run;
  });
}

/**
 * Throughput and per-message counts. Each exact peer counts the text classes and the
 * conversation in one child per encoding, the peers' children taking turns repetition by
 * repetition; each pathological class runs in a child of its own (killed at a time limit:
 * naive BPE is quadratic in a piece's length). Estimators count everything in one child.
 */
async function measureThroughput() {
  const runs = [];
  const textJobs = classes.filter((c) => !PATHOLOGICAL_CLASSES.includes(c)).map(job);
  const pathologicalJobs = classes.filter((c) => PATHOLOGICAL_CLASSES.includes(c)).map(job);
  for (const encoding of config.encodings) {
    if (textJobs.length > 0) runs.push(...await runJobsInTurns(exactPeers, encoding, textJobs, config.timeoutMs));
    if (encoding !== "o200k_base") continue;
    for (const peer of exactPeers) {
      // --quick counts short runs, all in one child; a full run gives each its own time limit.
      const groups = config.groupPathological ? [pathologicalJobs] : pathologicalJobs.map((j) => [j]);
      for (const g of groups.filter((x) => x.length > 0)) runs.push(...await runJobs(peer, encoding, g, config.pathologicalTimeoutMs));
    }
  }
  for (const peer of estimators) {
    runs.push(...await runJobs(peer, "o200k_base", [...textJobs, ...pathologicalJobs], config.timeoutMs));
  }
  return runs;
}

/** Compares every exact peer's counts with the reference's; estimator error vs exact o200k. */
function analyse(runs) {
  const find = (peer, encoding, cls) => runs.find((r) => r.task.peer === peer && r.task.encoding === encoding && r.task.cls === cls);
  const exactness = [];
  const errors = [];
  for (const run of runs) {
    const { peer, encoding, cls } = run.task;
    const reference = find(REFERENCE, encoding, cls);
    if (!isEstimator(peer) && peer !== REFERENCE) {
      const check = reference ? mismatches(run, reference) : { compared: 0, mismatches: [] };
      exactness.push({ peer, encoding, cls, ...check, firstMismatches: check.mismatches.slice(0, 5), mismatches: check.mismatches.length });
    }
    const owners = cls === CONVERSATION ? loadClass(cls).owners : null;
    if (isEstimator(peer) && reference) errors.push({ peer, cls, ...estimatorError(run, reference, owners) });
  }
  return { exactness, errors };
}

function gitCommit() {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: root, encoding: "utf8" }).trim() !== "";
    return `${head}${dirty ? " (src/ modified)" : ""}`;
  } catch {
    return null;
  }
}

function environment() {
  const version = (name) => JSON.parse(readFileSync(join(realpathSync(join(root, "node_modules", name)), "package.json"), "utf8")).version;
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${cpus()[0]?.model ?? "?"} x${cpus().length}`,
    memoryGiB: +(totalmem() / 2 ** 30).toFixed(1),
    loadAverageAtStart: loadavg().map((x) => +x.toFixed(2)),
    commit: gitCommit(),
    versions: Object.fromEntries([...new Set(Object.values(PACKAGE))].map((p) => [p, version(p)])),
  };
}

async function main() {
  const started = Date.now();
  const env = environment();
  log(`bench: ${config.quick ? "quick" : "full"} run; classes ${classes.join(", ")}; load average ${env.loadAverageAtStart.join(" ")}`);
  const corpora = Object.fromEntries(classes.filter((c) => !PATHOLOGICAL_CLASSES.includes(c)).map((c) => {
    const { messages, bytes, sha256, chat } = loadClass(c);
    return [c, { messages: messages.length, chatMessages: chat?.length, bytes, sha256 }];
  }));
  const sizes = packageSizes([...new Set(peers.map((p) => PACKAGE[p]))]);
  const firstCalls = await measureFirstCalls();
  const runs = await measureThroughput();
  const { exactness, errors } = analyse(runs);
  env.loadAverageAtEnd = loadavg().map((x) => +x.toFixed(2));
  env.seconds = Math.round((Date.now() - started) / 1000);

  const results = {
    env, config: { ...config, classes, peers }, corpora, sizes, firstCalls, exactness, estimatorErrors: errors,
    throughput: runs.map(({ task, summary, reps, memory }) => ({
      peer: task.peer, encoding: task.encoding, cls: task.cls, ...summary,
      memory, reps: reps.map(({ warmup, ms, bytes }) => ({ warmup, ms, bytes })),
    })),
  };
  mkdirSync(join(here, "results"), { recursive: true });
  const file = join(here, "results", `${env.date.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(results, null, 1));
  console.log(report(results));
  log(`bench: wrote ${file} (${env.seconds} s)`);
  const bad = exactness.filter((e) => e.mismatches > 0);
  if (bad.length > 0) {
    log(`\n!!! EXACTNESS MISMATCH: ${bad.map((b) => `${b.peer} ${b.encoding} ${b.cls} (${b.mismatches} messages)`).join("; ")}\n`);
  }
}

await main();
