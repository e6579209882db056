#!/usr/bin/env node
// The keeper's `prepare` to a budget side by side with what users would otherwise pick, on the
// same conversations in one run: LangChain.js `trimMessages` (@langchain/core, with js-tiktoken
// as its token counter) given the same budget, and the AI SDK's `pruneMessages` (ai 7), which
// takes no budget at all (it drops reasoning and tool calls older than the last N messages;
// run with the settings of its documentation). For each: time (median of repetitions, the
// peers taking turns), the tokens it kept counted by one independent counter (npm tiktoken,
// o200k_base, OpenAI's per-message framing), whether that is over the budget, and whether the
// output is a valid conversation (every tool call answered by its result, every result after
// its call, nothing before the first user message but the system prompt).
//
// Conversations, OpenAI Chat Completions messages: prefixes of the 300-turn agent session of
// tests/data/sessions (tool calls, four screenshots, results up to 151,582 characters) and the
// two longest recorded mini-swe-agent runs of bench/agent (tool output as user messages). The
// keeper gets the OpenAI messages; LangChain gets them as its message classes and the AI SDK
// as ModelMessages, converted before timing; each output is mapped back to the OpenAI messages
// it kept for the count.
//
// The keeper is a new ContextKeeper with a new MemoryStore per repetition (a stateless first
// prepare: offload, prune, evict and compaction as needed; gpt-4o's framing, window chosen so
// that its budget is about 40% of the conversation), its summarizer a scripted callback (no
// LLM; a real one would add the model call). trimMessages gets the keeper's budget
// (`keeper.budget.compactAt`) as maxTokens, with the configuration LangChain's documentation
// gives for chat history (strategy "last", includeSystem, startOn "human"), and once more
// without startOn.
//
//   node bench/trim.mjs                     # every conversation, 5 repetitions (a peer stops
//                                           # after a repetition over 20 s: --slow=MS)
//   node bench/trim.mjs --only=session-35 --reps=9
//   node bench/trim.mjs --full              # also the whole session (644 messages, 953 KB):
//                                           # trimMessages takes minutes there
//
// Each timed run starts after a full garbage collection and, on the conversations under 20,000
// tokens, after one untimed run of every peer (on the longer ones trimMessages takes seconds,
// so only the fast peers get one).
//
// Writes every measurement to bench/results/trim-<time>.json.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { createRequire } from "node:module";
import v8 from "node:v8";
import vm from "node:vm";
import { ContextKeeper } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { trimMessages, SystemMessage, HumanMessage, AIMessage, ToolMessage } from "@langchain/core/messages";
import { pruneMessages } from "ai7";
import { getEncoding } from "js-tiktoken";
import { loadSession } from "../tests/js/fixtures.mjs";
import { median } from "./stats.mjs";

const require = createRequire(import.meta.url);
v8.setFlagsFromString("--expose-gc");
/** A full collection, between timed runs. */
const collectGarbage = vm.runInNewContext("gc");
/** Conversations under this many tokens get an untimed warm-up run of every peer. */
const WARM_UP_TOKENS = 20_000;
const tiktoken = require("tiktoken");
const args = Object.fromEntries(process.argv.slice(2).map((a) => { const [k, v] = a.replace(/^--/, "").split("="); return [k, v ?? true]; }));
const REPS = Number(args.reps ?? 5);
const SLOW_MS = Number(args.slow ?? 20_000);
const SHARE = Number(args.share ?? 0.4);
const fmt = (n) => Math.round(n).toLocaleString("en");
const versionOf = (name) => JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), "utf8")).version;

// ---- the conversations --------------------------------------------------------------------

const session = loadSession("openai");
const agentRuns = JSON.parse(gunzipSync(readFileSync(new URL("./agent/mini-swe-agent.json.gz", import.meta.url))).toString("utf8"))
  .conversations.map((c) => c.messages).sort((a, b) => JSON.stringify(b).length - JSON.stringify(a).length);
/** The first `n` messages, fewer if that would end inside a tool exchange (a call before its
 * result, or a result before the rest of its call's results). */
function prefix(messages, n) {
  let end = n;
  while (end < messages.length && messages[end].role === "tool") end--;
  while (end > 0 && messages[end - 1].role === "assistant" && messages[end - 1].tool_calls?.length) end--;
  return messages.slice(0, end);
}
const conversations = [
  { name: "session-35", what: "agent session, first 35 messages", messages: prefix(session, 35) },
  { name: "session-300", what: "agent session, first 300 messages", messages: prefix(session, 300) },
  ...(args.full ? [{ name: `session-${session.length}`, what: "agent session, whole", messages: session }] : []),
  { name: `mini-swe-${agentRuns[0].length}`, what: "mini-swe-agent run, longest", messages: agentRuns[0] },
  { name: `mini-swe-${agentRuns[1].length}`, what: "mini-swe-agent run, second longest", messages: agentRuns[1] },
].filter((c) => !args.only || args.only.split(",").includes(c.name));

// ---- the independent counter: npm tiktoken, o200k_base, OpenAI's framing --------------------

// NOTE: OpenAI's cookbook framing for gpt-4o: 3 tokens a message, its role and content, each
// tool call's name and arguments, 3 to prime the reply. An image part costs 765 tokens (a
// 1024x1024 image at high detail): the same for every peer, so it changes no comparison.
const IMAGE_TOKENS = 765;
const reference = tiktoken.get_encoding("o200k_base");
const refCount = (text) => reference.encode(text, [], []).length;
function referenceTokens(messages) {
  let total = 3;
  for (const m of messages) {
    total += 3 + refCount(m.role);
    if (typeof m.content === "string") total += refCount(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) total += p.type === "text" ? refCount(p.text) : IMAGE_TOKENS;
    for (const call of m.tool_calls ?? []) total += refCount(call.function.name) + refCount(call.function.arguments);
  }
  return total;
}

/** Problems that make `messages` an invalid conversation for the provider (empty when valid). */
function problems(messages) {
  const out = [];
  let open = new Set();
  let seenUser = false;
  messages.forEach((m, i) => {
    if (m.role !== "tool" && open.size > 0) out.push(`message ${i}: ${open.size} tool call(s) before it unanswered`), (open = new Set());
    if (m.role === "user") seenUser = true;
    if (m.role === "assistant" && !seenUser) out.push(`message ${i}: assistant before any user message`);
    if (m.role === "assistant") open = new Set((m.tool_calls ?? []).map((c) => c.id));
    if (m.role === "tool") {
      if (!open.has(m.tool_call_id)) out.push(`message ${i}: tool result without its call`);
      open.delete(m.tool_call_id);
    }
  });
  if (open.size > 0) out.push(`end: ${open.size} tool call(s) unanswered`);
  if (!seenUser) out.push("no user message (a provider rejects the request)");
  return out;
}

// ---- LangChain: conversion, the counter users write, trimMessages ---------------------------

function toLangChain(messages) {
  return messages.map((m, i) => {
    const id = `m${i}`;
    if (m.role === "system") return new SystemMessage({ id, content: m.content });
    if (m.role === "user") return new HumanMessage({ id, content: m.content });
    if (m.role === "tool") return new ToolMessage({ id, content: m.content, tool_call_id: m.tool_call_id });
    return new AIMessage({
      id,
      content: m.content ?? "",
      tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments), type: "tool_call" })),
    });
  });
}
// NOTE: when not even the system prompt fits, trimMessages (includeSystem) returns [undefined].
const fromLangChain = (original, kept) => kept.filter(Boolean).map((m) => original[Number(m.id.slice(1))]);

// The counter of LangChain's trimMessages guide (js-tiktoken, 3 tokens a message and its role),
// with each tool call's name and arguments added (the guide's counts message content only, so a
// trim to its figure would overshoot on tool-calling histories).
const jsEncoding = getEncoding("o200k_base");
const ROLE = { system: "system", human: "user", ai: "assistant", tool: "tool" };
async function langchainCounter(messages) {
  let total = 3;
  for (const m of messages) {
    total += 3 + jsEncoding.encode(ROLE[m.getType()] ?? m.getType()).length;
    if (typeof m.content === "string") total += jsEncoding.encode(m.content).length;
    else for (const p of m.content) total += p.type === "text" ? jsEncoding.encode(p.text).length : IMAGE_TOKENS;
    for (const call of m.tool_calls ?? []) total += jsEncoding.encode(call.name).length + jsEncoding.encode(JSON.stringify(call.args)).length;
  }
  return total;
}

// ---- AI SDK: ModelMessages and back ---------------------------------------------------------

function toModelMessages(messages) {
  const names = new Map();
  return messages.map((m) => {
    if (m.role === "system") return { role: "system", content: m.content };
    if (m.role === "user") {
      return {
        role: "user",
        content: typeof m.content === "string" ? m.content
          : m.content.map((p) => (p.type === "text" ? { type: "text", text: p.text } : { type: "image", image: p.image_url.url })),
      };
    }
    if (m.role === "tool") {
      return { role: "tool", content: [{ type: "tool-result", toolCallId: m.tool_call_id, toolName: names.get(m.tool_call_id), output: { type: "text", value: m.content } }] };
    }
    const content = m.content ? [{ type: "text", text: m.content }] : [];
    for (const c of m.tool_calls ?? []) {
      names.set(c.id, c.function.name);
      content.push({ type: "tool-call", toolCallId: c.id, toolName: c.function.name, input: JSON.parse(c.function.arguments) });
    }
    return { role: "assistant", content };
  });
}
function fromModelMessages(original, kept) {
  const calls = new Map(original.flatMap((m) => (m.tool_calls ?? []).map((c) => [c.id, c])));
  const results = new Map(original.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m]));
  return kept.flatMap((m) => {
    if (m.role === "system") return [{ role: "system", content: m.content }];
    if (m.role === "user") {
      return [{ role: "user", content: typeof m.content === "string" ? m.content
        : m.content.map((p) => (p.type === "text" ? p : { type: "image_url", image_url: { url: p.image } })) }];
    }
    if (m.role === "tool") return m.content.map((p) => results.get(p.toolCallId));
    const text = m.content.filter((p) => p.type === "text").map((p) => p.text).join("");
    const toolCalls = m.content.filter((p) => p.type === "tool-call").map((p) => calls.get(p.toolCallId));
    return [{ role: "assistant", content: text || null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }];
  });
}

// ---- the peers --------------------------------------------------------------------------------

const summarize = () => "Intent: fix the issue in the repository. Progress: read the code, ran the tests. Next: finish the fix.";
const NOW = "2026-11-26T12:00:00Z";

/** A window whose budget (`compactAt`) is about `SHARE` of the conversation's tokens. */
function windowFor(messages) {
  const target = SHARE * referenceTokens(messages);
  // compactAt = min(0.95 w, w - min(20,000, w / 4)): 0.75 w up to 80,000, then w - 20,000
  return Math.round(target <= 60_000 ? target / 0.75 : target + 20_000);
}

const peers = {
  "context-keeper": {
    prepareInput: (c) => c.messages,
    run: async (input, c) => {
      const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: c.window, store: new MemoryStore(), summarize });
      try {
        const { messages, report } = await keeper.prepare(input, { sessionId: "bench", now: NOW });
        return { messages, note: `${report.decision}${report.fits ? "" : `, over: ${report.overBudget}`}; its count ${fmt(report.tokensAfter)}` };
      } finally {
        keeper.free();
      }
    },
  },
  "LangChain trimMessages, startOn human": {
    slow: true, // seconds a run from 150 KB up: no warm-up run there
    prepareInput: (c) => toLangChain(c.messages),
    run: async (input, c) => {
      const kept = await trimMessages(input, { maxTokens: c.budget, tokenCounter: langchainCounter, strategy: "last", includeSystem: true, startOn: "human" });
      return { messages: fromLangChain(c.messages, kept) };
    },
  },
  // Without startOn the trim keeps what fits, but may begin with a tool result whose call it cut.
  "LangChain trimMessages, no startOn": {
    slow: true,
    prepareInput: (c) => toLangChain(c.messages),
    run: async (input, c) => {
      const kept = await trimMessages(input, { maxTokens: c.budget, tokenCounter: langchainCounter, strategy: "last", includeSystem: true });
      return { messages: fromLangChain(c.messages, kept) };
    },
  },
  "AI SDK pruneMessages": {
    prepareInput: (c) => toModelMessages(c.messages),
    run: async (input, c) => {
      // the settings of its documentation: reasoning and tool calls before the last two messages
      const kept = pruneMessages({ messages: input, reasoning: "before-last-message", toolCalls: "before-last-2-messages", emptyMessages: "remove" });
      return { messages: fromModelMessages(c.messages, kept) };
    },
  },
};

// ---- the run ----------------------------------------------------------------------------------

const results = [];
for (const c of conversations) {
  c.bytes = JSON.stringify(c.messages).length;
  c.tokens = referenceTokens(c.messages);
  c.window = windowFor(c.messages);
  const probe = new ContextKeeper({ model: "gpt-4o", contextWindow: c.window, store: new MemoryStore() });
  c.budget = probe.budget.compactAt;
  probe.free();
  console.error(`${c.name}: ${c.messages.length} messages, ${fmt(c.bytes)} bytes, ${fmt(c.tokens)} tokens; window ${fmt(c.window)}, budget ${fmt(c.budget)}`);
  const runs = Object.fromEntries(Object.keys(peers).map((p) => [p, { times: [], done: false }]));
  // One untimed run each first (compilation: V8's JIT, the wasm's lazy tiers), except for a
  // peer too slow to run twice.
  for (const peer of Object.values(peers)) {
    if (c.tokens < WARM_UP_TOKENS || !peer.slow) await peer.run(peer.prepareInput(c), c);
  }
  for (let rep = 0; rep < REPS; rep++) {
    for (const [name, peer] of Object.entries(peers)) {
      const r = runs[name];
      if (r.done) continue;
      const input = peer.prepareInput(c);
      // NOTE: each timed run starts on a collected heap, so no peer pays for the garbage of the
      // one before it (trimMessages leaves megabytes; a 1 ms prepare measured 2.4-36 ms after it).
      collectGarbage();
      const start = performance.now();
      const out = await peer.run(input, c);
      const ms = performance.now() - start;
      r.times.push(ms);
      if (rep === 0) {
        r.messages = out.messages.length;
        r.tokens = referenceTokens(out.messages);
        r.problems = problems(out.messages);
        r.note = out.note;
      }
      if (ms > SLOW_MS) r.done = true;
      console.error(`  ${name} rep ${rep}: ${ms.toFixed(1)} ms`);
    }
  }
  for (const [name, r] of Object.entries(runs)) {
    results.push({
      conversation: c.name, what: c.what, inMessages: c.messages.length, bytes: c.bytes, inTokens: c.tokens, window: c.window, budget: c.budget,
      peer: name, reps: r.times.length, ms: median(r.times), times: r.times, messages: r.messages, tokens: r.tokens,
      over: r.tokens > c.budget, problems: r.problems, note: r.note,
    });
  }
}

// ---- the report -------------------------------------------------------------------------------

const ms = (x) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : x >= 10 ? `${x.toFixed(1)} ms` : `${x.toFixed(2)} ms`);
const versions = `context-keeper ${versionOf("context-keeper")}, @langchain/core ${versionOf("@langchain/core")} + js-tiktoken ${versionOf("js-tiktoken")}, ai ${versionOf("ai7")}; counted by tiktoken ${versionOf("tiktoken")} (o200k_base)`;
console.log(`## prepare to a budget, side by side (${versions}; Node ${process.version})\n`);
console.log("| conversation | budget | peer | reps | time (median) | time ÷ context-keeper | tokens kept | kept ÷ context-keeper | over budget | valid | messages kept |");
console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |");
for (const r of results) {
  const ck = results.find((x) => x.conversation === r.conversation && x.peer === "context-keeper");
  console.log(`| ${r.conversation} (${r.inMessages} msgs, ${fmt(r.bytes / 1024)} KiB, ${fmt(r.inTokens)} tokens) | ${fmt(r.budget)} | ${r.peer} | ${r.reps} | ${ms(r.ms)} | ${(r.ms / ck.ms).toFixed(r.ms / ck.ms >= 10 ? 0 : 2)}× | ${fmt(r.tokens)} | ${(r.tokens / ck.tokens).toFixed(2)} | ${r.over ? `**yes** (+${fmt(r.tokens - r.budget)})` : "no"} | ${r.problems.length ? `**no**: ${r.problems[0]}${r.problems.length > 1 ? ` (+${r.problems.length - 1})` : ""}` : "yes"} | ${r.messages} |`);
}
console.log("\nThe keeper's own report, first repetition:");
for (const r of results.filter((x) => x.peer === "context-keeper")) console.log(`- ${r.conversation}: ${r.note}`);

mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
const file = new URL(`./results/trim-${new Date().toISOString().replaceAll(":", "-")}.json`, import.meta.url);
writeFileSync(file, JSON.stringify({ node: process.version, versions, reps: REPS, share: SHARE, results }, null, 1));
console.error(`wrote ${file.pathname}`);
