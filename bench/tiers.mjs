#!/usr/bin/env node
// The context layer's reversible tiers: what they cost and what they save.
//   (a) pruneMessages on a generated 1,000-message AI SDK agent run, ours against the AI SDK's
//       own pruneMessages (`ai`, configured as close as it goes to "tool content older than the
//       last 3 assistant turns"): median and p90 ms per call, and tokens before and after.
//   (b) tokens saved per tier (offload into a MemoryStore, prune, evict; each alone, then all
//       three in that order) on the fixtures of tests/data and on the generated runs (OpenAI and
//       AI SDK ModelMessage format).
//   (c) offloading a 2 MB tool result into a MemoryStore.
// Tokens: countMessages (o200k_base, exact) of context-keeper, before and after.
//
//   node bench/tiers.mjs [--reps=50]
//
// Prints Markdown to stdout (progress to stderr) and writes the raw figures to
// bench/results/tiers-<timestamp>.json. Measures the package in node_modules/context-keeper
// (build it first: npm run build).
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pruneMessages as aiPruneMessages } from "ai";
import * as ck from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { prng } from "./corpus.mjs";
import { median, percentile } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const reps = Number(arg("reps", 50));
const log = (...args) => console.error(...args);
const KEEP_TURNS = 3;

// ---------------------------------------------------------------------------------------------
// A generated agent run: a coding agent's loop, seeded. Each assistant turn has a short thought
// (sometimes), one or two tool calls (bash, read_file, grep, list_dir, write_file with the
// file's content as an argument); each result is 200 B - 40 KB (log-uniform) of code, logs,
// JSON or a directory listing. Now and then the user speaks and the assistant answers.

const IDENT = ["config", "parse", "render", "user", "session", "token", "cache", "index", "buffer", "handler", "request", "value", "result", "error", "stream"];
const WORDS = ["the", "test", "fails", "because", "value", "is", "not", "set", "when", "cache", "expires", "after", "request", "returns", "early", "and", "we", "retry"];

function makeText(rand, kind, bytes) {
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const lines = [];
  let size = 0;
  let n = 0;
  while (size < bytes) {
    n++;
    let line;
    if (kind === "code") {
      const indent = "  ".repeat(Math.floor(rand() * 4));
      line = rand() < 0.15 ? `${indent}// ${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)}`
        : rand() < 0.5 ? `${indent}const ${pick(IDENT)}${n} = ${pick(IDENT)}.${pick(IDENT)}(${pick(IDENT)}, ${Math.floor(rand() * 1000)});`
          : `${indent}if (${pick(IDENT)} !== ${pick(IDENT)}) return ${pick(IDENT)}_${pick(IDENT)}(${n});`;
    } else if (kind === "log") {
      line = `2026-11-25T10:${String(n % 60).padStart(2, "0")}:${String((n * 7) % 60).padStart(2, "0")}.${String(n % 1000).padStart(3, "0")}Z ${pick(["INFO", "INFO", "DEBUG", "WARN", "ERROR"])} [${pick(IDENT)}] ${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)} id=${Math.floor(rand() * 1e9).toString(16)} ms=${Math.floor(rand() * 500)}`;
    } else if (kind === "json") {
      line = `  {"id": ${n}, "name": "${pick(IDENT)}-${pick(IDENT)}", "size": ${Math.floor(rand() * 1e6)}, "ok": ${rand() < 0.9}, "tags": ["${pick(WORDS)}", "${pick(WORDS)}"]},`;
    } else {
      line = `${rand() < 0.2 ? "d" : "-"}rw-r--r-- 1 dev dev ${String(Math.floor(rand() * 99999)).padStart(6)} Nov 25 10:${String(n % 60).padStart(2, "0")} src/${pick(IDENT)}/${pick(IDENT)}_${n}.${pick(["ts", "rs", "py", "json", "md"])}`;
    }
    lines.push(line);
    size += line.length + 1;
  }
  return (kind === "json" ? `[\n${lines.join("\n")}\n]` : lines.join("\n")).slice(0, Math.max(bytes, 200));
}

const TOOLS = [
  { name: "bash", kind: "log", args: (r, t) => ({ command: `npm test -- --grep ${IDENT[t % IDENT.length]}` }) },
  { name: "read_file", kind: "code", args: (r, t) => ({ path: `src/${IDENT[t % IDENT.length]}.ts` }) },
  { name: "grep", kind: "code", args: (r, t) => ({ pattern: IDENT[(t * 3) % IDENT.length], path: "src" }) },
  { name: "list_dir", kind: "listing", args: () => ({ path: "." }) },
  { name: "http_get", kind: "json", args: (r, t) => ({ url: `https://api.example.com/items?page=${t}` }) },
];

/**
 * A neutral run of `count` messages: [{ role, text?, thought?, calls: [{ id, name, input }] }]
 * and tool results [{ role: "tool", id, name, output }], turned into either format below.
 */
function neutralRun(seed, count) {
  const rand = prng(seed);
  const size = () => Math.round(200 * Math.exp(rand() * Math.log(40_000 / 200))); // 200 B - 40 KB, log-uniform
  const run = [{ role: "system", text: "You are a coding agent working in the user's repository. Use the tools; keep changes small." }, { role: "user", text: "The export drops rows whose amount is negative. Find out why and fix it." }];
  let turn = 0;
  for (;;) {
    turn++;
    let block;
    if (rand() < 0.08) {
      block = [
        { role: "assistant", text: `So far: ${makeText(rand, "code", 120).replace(/\n/g, " ")}`, calls: [] },
        { role: "user", text: rand() < 0.5 ? "ok, go on" : "Also check the CSV header while you are there." },
      ];
    } else {
      const calls = [];
      const parallel = rand() < 0.25 ? 2 : 1;
      for (let c = 0; c < parallel; c++) {
        const id = `call_${seed}_${turn}_${c}`;
        if (rand() < 0.12) {
          calls.push({ id, name: "write_file", input: { path: `src/${IDENT[turn % IDENT.length]}_${turn}.ts`, content: makeText(rand, "code", size()) }, output: "wrote the file" });
        } else {
          const tool = TOOLS[Math.floor(rand() * TOOLS.length)];
          calls.push({ id, name: tool.name, input: tool.args(rand, turn), output: makeText(rand, tool.kind, size()) });
        }
      }
      block = [{ role: "assistant", thought: rand() < 0.5 ? `Next I look at ${calls.map((c) => c.name).join(" and ")}.` : undefined, calls }];
      for (const call of calls) block.push({ role: "tool", id: call.id, name: call.name, output: call.output });
    }
    // A turn goes in whole (a call never without its results), or the run ends.
    if (run.length + block.length > count - 1) break;
    run.push(...block);
  }
  // Pad to the count with a short exchange; the last message is the user's.
  while (run.length < count - 1) run.push(run.at(-1).role === "user" ? { role: "assistant", text: "Continuing.", calls: [] } : { role: "user", text: "go on" });
  if (run.at(-1).role === "user") run[run.length - 1] = { role: "assistant", text: "Continuing.", calls: [] };
  run.push({ role: "user", text: "Run the tests once more and tell me the result." });
  return run;
}

function toOpenAI(run) {
  return run.map((m) => {
    if (m.role === "system" || m.role === "user") return { role: m.role, content: m.text };
    if (m.role === "tool") return { role: "tool", tool_call_id: m.id, content: m.output };
    const message = { role: "assistant", content: m.text ?? m.thought ?? null };
    if (m.calls.length) message.tool_calls = m.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.input) } }));
    return message;
  });
}

function toAISDK(run) {
  return run.map((m) => {
    if (m.role === "system") return { role: "system", content: m.text };
    if (m.role === "user") return { role: "user", content: [{ type: "text", text: m.text }] };
    if (m.role === "tool") return { role: "tool", content: [{ type: "tool-result", toolCallId: m.id, toolName: m.name, output: { type: "text", value: m.output } }] };
    const content = [];
    if (m.thought) content.push({ type: "reasoning", text: m.thought });
    if (m.text) content.push({ type: "text", text: m.text });
    for (const c of m.calls) content.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: c.input });
    return { role: "assistant", content };
  });
}

const tokens = (messages) => ck.countMessages(messages).total;
const bytesOf = (messages) => Buffer.byteLength(JSON.stringify(messages));

// ---------------------------------------------------------------------------------------------
// (a) ours against the AI SDK's pruneMessages.

/** Milliseconds of `reps` calls of `f`, after a warm-up of at least 250 ms. */
function time(f) {
  for (const until = performance.now() + 250; performance.now() < until;) f();
  const ms = [];
  for (let r = 0; r < reps; r++) {
    const start = performance.now();
    f();
    ms.push(performance.now() - start);
  }
  return ms;
}

log("generating runs");
const neutralA = neutralRun(1, 1000);
const neutralB = neutralRun(2, 1000);
const aisdkRun = toAISDK(neutralA);
const openaiRun = toOpenAI(neutralB);
for (const [name, m] of [["AI SDK", aisdkRun], ["OpenAI", openaiRun]]) {
  const problems = ck.validateMessages(m);
  if (problems.length) throw new Error(`${name} run is not valid: ${JSON.stringify(problems.slice(0, 3))}`);
}

// The AI SDK keeps tool calls and results by message count: the last N messages, N reaching
// back to our third-latest assistant turn.
const assistantAt = aisdkRun.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
const keepMessages = aisdkRun.length - assistantAt.at(-KEEP_TURNS);
const aiOptions = { toolCalls: `before-last-${keepMessages}-messages`, reasoning: "none", emptyMessages: "remove" };
const ourOptions = { keepLastAssistantTurns: KEEP_TURNS };

log("timing pruneMessages");
const ours = ck.pruneMessages(aisdkRun, ourOptions);
const theirs = aiPruneMessages({ messages: aisdkRun, ...aiOptions });
if (ck.validateMessages(ours.messages).length) throw new Error("our pruned run is not valid");
const oursMs = time(() => ck.pruneMessages(aisdkRun, ourOptions));
const theirsMs = time(() => aiPruneMessages({ messages: aisdkRun, ...aiOptions }));
const before = tokens(aisdkRun);
const a = {
  messages: aisdkRun.length,
  bytes: bytesOf(aisdkRun),
  toolResults: aisdkRun.filter((m) => m.role === "tool").length,
  keepMessages,
  tokensBefore: before,
  ours: { ms: oursMs, median: median(oursMs), p90: percentile(oursMs, 90), tokensAfter: tokens(ours.messages), messagesAfter: ours.messages.length, edits: ours.report.edits.length },
  theirs: { ms: theirsMs, median: median(theirsMs), p90: percentile(theirsMs, 90), tokensAfter: tokens(theirs), messagesAfter: theirs.length },
};

// ---------------------------------------------------------------------------------------------
// (b) tokens saved per tier.

async function tiers(name, messages) {
  const row = { name, messages: Array.isArray(messages) ? messages.length : messages.messages.length, tokensBefore: tokens(messages), tiers: {} };
  const tier = async (label, f) => {
    try {
      const { messages: out, report } = await f();
      row.tiers[label] = { tokensAfter: tokens(out), edits: report.edits.length, failures: report.failures.length, out };
    } catch (err) {
      row.tiers[label] = { error: `${err.name} ${err.kind ?? ""}: ${err.message}`.slice(0, 160) };
    }
  };
  await tier("offload", () => ck.offloadMessages(messages, { store: new MemoryStore(), sessionId: "bench" }));
  await tier("offload 2k", () => ck.offloadMessages(messages, { store: new MemoryStore(), sessionId: "bench", limitTokens: 2_000 }));
  await tier("prune", () => ck.pruneMessages(messages));
  await tier("evict", () => ck.evictToolInputs(messages));
  await tier("all three", async () => {
    const offloaded = await ck.offloadMessages(messages, { store: new MemoryStore(), sessionId: "bench" });
    const pruned = ck.pruneMessages(offloaded.messages);
    const evicted = ck.evictToolInputs(pruned.messages);
    return { messages: evicted.messages, report: { edits: [...offloaded.report.edits, ...pruned.report.edits, ...evicted.report.edits], failures: offloaded.report.failures } };
  });
  for (const t of Object.values(row.tiers)) delete t.out;
  return row;
}

log("tiers on the fixtures and the runs");
const b = [];
const fixtures = join(here, "..", "tests", "data");
for (const file of readdirSync(join(fixtures, "messages")).filter((f) => f.endsWith(".input.json")).sort()) {
  b.push(await tiers(`messages/${file.replace(".input.json", "")}`, JSON.parse(readFileSync(join(fixtures, "messages", file), "utf8"))));
}
b.push(await tiers("sample-conversation", JSON.parse(readFileSync(join(fixtures, "sample-conversation.json"), "utf8"))));
b.push(await tiers("generated OpenAI run (1,000)", openaiRun));
b.push(await tiers("generated AI SDK run (1,000)", aisdkRun));

// ---------------------------------------------------------------------------------------------
// (c) a 2 MB result into a MemoryStore.

log("offloading 2 MB");
const big = Array.from({ length: 30_000 }, (_, i) => `line ${i + 1}: ${"abcdefghij ".repeat(6)}`).join("\n") + "\n";
const offloadMs = [];
for (let r = -1; r < 9; r++) {
  const store = new MemoryStore();
  const output = `run ${r}\n${big}`;
  const start = performance.now();
  const { offloaded } = await ck.offloadToolResult(output, { store, sessionId: "bench", toolName: "bash", toolCallId: `c${r}` });
  const ms = performance.now() - start;
  if (!offloaded) throw new Error("the 2 MB result was not offloaded");
  if (r >= 0) offloadMs.push(ms);
}
const c = { bytes: Buffer.byteLength(big) + 7, ms: offloadMs, median: median(offloadMs) };

// ---------------------------------------------------------------------------------------------
// Report.

const f1 = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
const pct = (after, before) => (before ? `${((100 * (before - after)) / before).toFixed(1)}%` : "-");
const n = (x) => x.toLocaleString("en-US");

console.log(`\n## (a) pruneMessages on a 1,000-message AI SDK agent run (${(a.bytes / 1e6).toFixed(2)} MB JSON, ${a.toolResults} tool results of 200 B - 40 KB), ${reps} calls each\n`);
console.log("| | median ms | p90 ms | tokens before | tokens after | saved | messages after |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
console.log(`| context-keeper pruneMessages({ keepLastAssistantTurns: ${KEEP_TURNS} }) | ${f1(a.ours.median)} | ${f1(a.ours.p90)} | ${n(a.tokensBefore)} | ${n(a.ours.tokensAfter)} | ${pct(a.ours.tokensAfter, a.tokensBefore)} | ${a.ours.messagesAfter} |`);
console.log(`| ai pruneMessages({ toolCalls: '${aiOptions.toolCalls}', reasoning: 'none' }) | ${f1(a.theirs.median)} | ${f1(a.theirs.p90)} | ${n(a.tokensBefore)} | ${n(a.theirs.tokensAfter)} | ${pct(a.theirs.tokensAfter, a.tokensBefore)} | ${a.theirs.messagesAfter} |`);
console.log(`\nratio (ours ÷ ai, median ms): ${(a.ours.median / a.theirs.median).toFixed(2)}`);
console.log(`NOTE: the two do different things: ours soft-trims (head + tail) tool results older than the last ${KEEP_TURNS} assistant turns and clears those older than 10, keeping every call, its result and their pairing (and reports each edit, with token counts); the AI SDK's removes the tool calls and results outside the last ${keepMessages} messages (= our last ${KEEP_TURNS} assistant turns here) and then the messages left empty, and counts nothing.`);

console.log(`\n## (b) tokens per tier (countMessages, o200k_base)\n`);
const labels = ["offload", "offload 2k", "prune", "evict", "all three"];
console.log(`| conversation | messages | tokens | ${labels.map((l) => `${l}: after (saved, edits)`).join(" | ")} |`);
console.log(`| --- | ---: | ---: | ${labels.map(() => "---:").join(" | ")} |`);
for (const row of b) {
  const cells = labels.map((l) => {
    const t = row.tiers[l];
    if (t.error) return `error: ${t.error.split(":")[0]}`;
    return `${n(t.tokensAfter)} (${pct(t.tokensAfter, row.tokensBefore)}, ${t.edits})`;
  });
  console.log(`| ${row.name} | ${row.messages} | ${n(row.tokensBefore)} | ${cells.join(" | ")} |`);
}
console.log("\nThe fixtures are request objects or message arrays of 3-11 short messages (under 3 KB): no tier has anything to do on them at its defaults, which is the expected outcome.");
console.log("offload: offloadMessages into a MemoryStore at the default limit (20,000 tokens); offload 2k: limitTokens 2,000; prune and evict: their defaults; all three: offload, prune, evict in that order, defaults.");
const errors = b.flatMap((row) => labels.filter((l) => row.tiers[l].error).map((l) => `${row.name} / ${l}: ${row.tiers[l].error}`));
if (errors.length) console.log(`\nerrors (expected on the broken fixtures):\n${errors.map((e) => `- ${e}`).join("\n")}`);

console.log(`\n## (c) offloadToolResult of a ${(c.bytes / 1e6).toFixed(2)} MB result into a MemoryStore (Node ${process.version})\n`);
console.log(`median ${f1(c.median)} ms of ${c.ms.length} (after one warm-up): ${c.ms.map(f1).join(", ")}`);

mkdirSync(join(here, "results"), { recursive: true });
const file = join(here, "results", `tiers-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), node: process.version, reps, a, b, c }, null, 1));
log(`raw: ${file}`);
