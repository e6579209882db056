#!/usr/bin/env node
// What `keeper.prepare` costs per turn on a growing agent history: the 1,000-message target of
// the keeper (at most 2 ms a turn at the median, 10 ms at p99, summarizer excluded). An OpenAI
// agent session grows by one assistant call and its tool result per turn (texts from the bench
// corpora, so sizes and tokenization are real), and is prepared before every model call with a
// MemoryStore and gpt-4o's 128k window: most turns take the fast path (only the new messages
// read), some make a prune decision or compact. The summarizer is a synchronous callback whose
// time is measured and taken out.
//
//   node bench/keeper.mjs [--messages=1000] [--window=128000] [--pkg=path/to/context_keeper.js]
//
// Measures the package in node_modules/context-keeper (build it first: npm run build).
import { createRequire } from "node:module";
import { writeFileSync, mkdirSync } from "node:fs";
import { loadClass } from "./corpus.mjs";
import { median } from "./stats.mjs";

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const MESSAGES = Number(arg("messages", 1000));
const WINDOW = Number(arg("window", 128_000));
const require = createRequire(import.meta.url);
const ck = require(arg("pkg", "context-keeper"));
const { MemoryStore } = await import("context-keeper/stores");

const texts = ["english", "code", "json"].flatMap((name) => loadClass(name).messages);
const pick = (i) => texts[(i * 7919) % texts.length];

function grow(history, t) {
  const id = `call_${t}`;
  history.push({ role: "assistant", content: `Step ${t}: ${pick(t).slice(0, 200)}`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat src/file_${t % 40}.rs` }) } }] });
  history.push({ role: "tool", tool_call_id: id, content: pick(t + 1) });
}

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function run(label, makeKeeper) {
  let summarizerMs = 0;
  const keeper = makeKeeper(() => {
    const start = performance.now();
    const text = "Intent: keep working through the files. Progress: read them in order. Next: the rest.";
    summarizerMs += performance.now() - start;
    return text;
  });
  const history = [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "Read every file and report." }];
  const costs = [];
  const turns = [];
  const decisions = {};
  let turn = 0;
  while (history.length < MESSAGES) {
    grow(history, turn++);
    const input = history.slice();
    summarizerMs = 0;
    const start = performance.now();
    const { report } = await keeper.prepare(input, { sessionId: label, now: "2026-11-25T12:00:00Z" });
    costs.push(performance.now() - start - summarizerMs);
    decisions[report.decision] = (decisions[report.decision] ?? 0) + 1;
    turns.push({ messages: history.length, decision: report.decision, ms: costs[costs.length - 1] });
    if (!report.fits) throw new Error(`turn ${turn}: over budget: ${report.overBudget}`);
  }
  const last = costs.slice(-100);
  // the turns that made or changed a decision, from 700 messages on (the early ones also pay
  // V8's first compile of the decision's code)
  const late = turns.filter((t) => t.decision !== "under" && t.messages >= 700).map((t) => t.ms);
  return {
    label,
    turns: costs.length,
    messages: history.length,
    medianMs: +median(costs).toFixed(3),
    p99Ms: +percentile(costs, 99).toFixed(3),
    maxMs: +Math.max(...costs).toFixed(3),
    last100MedianMs: +median(last).toFixed(3),
    last100P99Ms: +percentile(last, 99).toFixed(3),
    slowest: [...turns].sort((a, b) => b.ms - a.ms).slice(0, 5).map((t) => ({ ...t, ms: +t.ms.toFixed(2) })),
    lateDecisionTurns: late.length,
    lateDecisionMedianMs: late.length === 0 ? null : +median(late).toFixed(3),
    lateDecisionMaxMs: late.length === 0 ? null : +Math.max(...late).toFixed(3),
    decisions,
  };
}

const results = [];
results.push(await run("warm keeper (one instance, fast path)", (summarize) => new ck.ContextKeeper({ model: "gpt-4o", contextWindow: WINDOW, store: new MemoryStore(), summarize })));
const shared = new MemoryStore();
results.push(await run("stateless (a new keeper per turn, state in the store)", (summarize) => {
  const options = { model: "gpt-4o", contextWindow: WINDOW, store: shared, summarize };
  return { prepare: (h, o) => { const k = new ck.ContextKeeper(options); return k.prepare(h, o).finally(() => k.free()); } };
}));

for (const r of results) {
  console.log(`${r.label}: ${r.turns} turns to ${r.messages} messages; per turn median ${r.medianMs} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms; last 100 turns median ${r.last100MedianMs} ms, p99 ${r.last100P99Ms} ms; decision turns from 700 messages (${r.lateDecisionTurns}) median ${r.lateDecisionMedianMs} ms, max ${r.lateDecisionMaxMs} ms; decisions ${JSON.stringify(r.decisions)}; slowest turns ${r.slowest.map((t) => `${t.ms} ms (${t.messages} messages, ${t.decision})`).join(", ")}`);
}
mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
const file = new URL(`./results/keeper-${new Date().toISOString().replaceAll(":", "-")}.json`, import.meta.url);
writeFileSync(file, JSON.stringify({ node: process.version, window: WINDOW, results }, null, 2));
