#!/usr/bin/env node
// What re-counting a conversation costs once it has been counted: the case of a chat UI that
// counts on every keystroke and before every send. A 1,000-message OpenAI conversation (~3 MB,
// texts from the bench corpora) is counted cold, then again unchanged, then after one message
// was appended, next to the cost of counting the new message alone. Also: the same messages as
// new objects (as after loading them from storage): read again, but not tokenized again.
//
//   node bench/incremental.mjs [--reps=N] [--pkg=path/to/context_keeper.js]
//
// Measures the package in node_modules/context-keeper (build it first: npm run build).
import { createRequire } from "node:module";
import { loadClass, utf8Bytes } from "./corpus.mjs";
import { median } from "./stats.mjs";

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const reps = Number(arg("reps", 9));
const require = createRequire(import.meta.url);
const ck = require(arg("pkg", "context-keeper"));

const MESSAGES = 1000;

/** A deterministic 1,000-message conversation: user questions and assistant answers. */
function conversation() {
  const texts = ["english", "code", "json"].flatMap((name) => loadClass(name).messages);
  return Array.from({ length: MESSAGES }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: texts[(i * 7919) % texts.length],
  }));
}

/** Median milliseconds of `reps` runs of `f(rep)`, each after `setup(rep)`, after one warm-up. */
function time(f, setup = () => {}) {
  setup(-1);
  f(-1);
  const ms = [];
  for (let r = 0; r < reps; r++) {
    setup(r);
    const start = performance.now();
    f(r);
    ms.push(performance.now() - start);
  }
  return median(ms);
}

const history = conversation();
const bytes = utf8Bytes(JSON.stringify(history));
const unseen = (r) => ({ role: "user", content: `Question ${r + 2}: what changed in ${"module ".repeat(3 + (r % 5))}since yesterday, and why?` });

const rows = [];
let copy;
rows.push(["cold: every message read and tokenized", time(() => ck.countMessages(copy), () => {
  ck.clearCountCache();
  copy = structuredClone(history);
})]);
ck.countMessages(history);
rows.push(["again, nothing changed", time(() => ck.countMessages(history))]);
let grown;
rows.push(["again after one message was appended", time(() => ck.countMessages(grown), (r) => {
  ck.countMessages(history);
  grown = [...history, unseen(r)];
})]);
let alone;
rows.push(["the appended message counted alone", time(() => ck.countMessages(alone), (r) => {
  alone = [unseen(r + 1000)];
})]);
rows.push(["the same messages as new objects (read, not tokenized)", time(() => ck.countMessages(copy), () => {
  ck.countMessages(history);
  copy = structuredClone(history);
})]);
// NOTE: the count itself must not depend on the path it took.
ck.clearCountCache();
const fresh = ck.countMessages(structuredClone(history)).total;
if (ck.countMessages(history).total !== fresh) throw new Error("incremental: a cached count differs from a fresh one");

const cold = rows[0][1];
console.log(`\nIncremental counting: countMessages on ${MESSAGES} messages, ${(bytes / 1e6).toFixed(2)} MB of JSON (median of ${reps})\n`);
console.log("| case | ms | share of the cold count |");
console.log("|---|---:|---:|");
for (const [name, ms] of rows) console.log(`| ${name} | ${ms.toFixed(2)} | ${((100 * ms) / cold).toFixed(1)}% |`);
