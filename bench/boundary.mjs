#!/usr/bin/env node
// How conversations should cross the JS/wasm boundary: parse + validate + write back the bench's
// ~2 MB, ~670-message conversation three ways, next to an exact count of the same conversation
// for scale (the target: under 10% of it):
// - what ships (src/bindings/walk.rs): validateMessages, and repairMessages on the conversation
//   with one stray tool result in it (both read long texts in part, src/messages/skim.rs, and a
//   repair writes back only what it changed), and the walk reading everything and writing the
//   whole conversation back (a full round trip, as the two below);
// - one JSON string each way (JSON.stringify in, serde_json, JSON.parse out);
// - serde-wasm-bindgen (a generic walk of the object graph each way).
//
//   node bench/boundary.mjs [--reps=N]
//
// It builds a probe package once (Cargo feature `boundary-probe`, which adds the hidden
// `__boundaryProbe` export) into bench/.cache/probe; the published package never has it.
import { execFileSync } from "node:child_process";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CONVERSATION, conversationTexts, loadClass } from "./corpus.mjs";
import { median } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const probeDir = join(here, ".cache", "probe");
const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice(7) ?? 7);

/** Builds the probe package when it is missing or older than the Rust sources. */
function buildProbe() {
  const wasm = join(probeDir, "context_keeper_bg.wasm");
  const newest = ["src/bindings/messages.rs", "src/bindings/walk.rs", "src/messages/mod.rs", "src/messages/repair.rs", "src/messages/skim.rs", "Cargo.toml"]
    .map((f) => statSync(join(root, f)).mtimeMs)
    .reduce((a, b) => Math.max(a, b));
  if (existsSync(wasm) && statSync(wasm).mtimeMs > newest) return;
  console.error("boundary: building the probe package (feature boundary-probe)...");
  execFileSync("wasm-pack", ["build", "--release", "--target", "nodejs", "--no-pack", "--out-dir", probeDir,
    "--out-name", "context_keeper", "--", "--features", "boundary-probe"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  // NOTE: the workspace is "type": "module"; the nodejs target's output is CommonJS.
  writeFileSync(join(probeDir, "package.json"), '{ "type": "commonjs" }\n');
}

/**
 * Median milliseconds of `reps` runs of `f`, after ten warm-up runs: V8 compiles wasm in tiers,
 * and the first calls of a function run its baseline code (a chat UI calls these over and over).
 */
function time(f) {
  for (let i = 0; i < 10; i++) f();
  const ms = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    f();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

buildProbe();
const probe = createRequire(import.meta.url)(join(probeDir, "context_keeper.js"));
const { chat } = loadClass(CONVERSATION);
const { texts } = conversationTexts(chat);
const bytes = Buffer.byteLength(JSON.stringify(chat));

// Both strategies must agree before either is timed.
const [viaJson, problemsJson] = probe.__boundaryProbe(chat, "json");
const [viaSerde, problemsSerde] = probe.__boundaryProbe(chat, "serde");
const [viaWalk, problemsWalk] = probe.__boundaryProbe(chat, "walk");
if ([viaJson, viaSerde, viaWalk].some((via) => JSON.stringify(via) !== JSON.stringify(chat))) {
  throw new Error("boundary: a strategy did not round-trip the conversation");
}
if ([problemsSerde, problemsWalk].some((p) => JSON.stringify(p) !== JSON.stringify(problemsJson))) {
  throw new Error("boundary: strategies disagree");
}

// The walk's repair must drop exactly the stray result and give back everything else as it was.
const broken = [...chat.slice(0, 5), { role: "tool", tool_call_id: "stray", content: "lost" }, ...chat.slice(5)];
const repaired = probe.repairMessages(broken);
if (repaired.report.length !== 1 || repaired.messages.length !== chat.length || repaired.messages.some((m, i) => m !== chat[i])) {
  throw new Error("boundary: the walk's repair did not give back the conversation");
}
if (JSON.stringify(probe.validateMessages(chat)) !== JSON.stringify(problemsJson)) throw new Error("boundary: the walk disagrees");

const validate = time(() => probe.validateMessages(chat));
const repair = time(() => probe.repairMessages(broken));
const json = time(() => probe.__boundaryProbe(chat, "json"));
const serde = time(() => probe.__boundaryProbe(chat, "serde"));
const walkWhole = time(() => probe.__boundaryProbe(chat, "walk"));
const exact = time(() => texts.reduce((n, t) => n + probe.countTokens(t), 0));
const pct = (ms) => `${((100 * ms) / exact).toFixed(1)}%`;

console.log(`\nBoundary: parse + validate + write back, ${chat.length} messages, ${(bytes / 1e6).toFixed(2)} MB of JSON (median of ${reps})\n`);
console.log("| strategy | ms | time vs serde-wasm-bindgen | share of an exact o200k count |");
console.log("|---|---:|---:|---:|");
const row = (name, ms) => console.log(`| ${name} | ${ms.toFixed(1)} | ${(ms / serde).toFixed(2)}x | ${pct(ms)} |`);
row("walk (shipped): validateMessages", validate);
row("walk (shipped): repairMessages, one edit", repair);
row("walk read whole, written back whole as JSON", walkWhole);
row("one JSON string each way", json);
row("serde-wasm-bindgen", serde);
console.log(`| exact o200k count of the message texts | ${exact.toFixed(1)} | | 100% |`);
