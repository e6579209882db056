#!/usr/bin/env node
// Recall: does what a method sends hold what the agent used next? (DESIGN.md, "What to keep")
//
// Recorded agent runs are replayed call by call. At call n the history is messages[0..n) and
// the agent's real next message is messages[n]. Its references (bench/recall/refs.mjs: paths,
// identifiers, numbers, quoted strings from its text and tool-call arguments) that occur in the
// history outside the system prompt but not in its last two messages are the *earlier*
// references; those of the last two are the *newest* (every method keeps those messages, but
// the keeper may offload a huge result among them). Each method's output at call n is scored
// by the share of earlier references it holds (recall in context), and the keeper's also by
// the share it holds or can read back from its store (in context or store). Every tool result
// of the history that a keeper's output does not hold whole must be in its store, word for
// word: a result missing there is a loss, and `--check` fails on it.
//
// Methods, in one run: the full history; truncation to the keeper's budget (system prompt,
// task, newest whole exchanges); truncation to the keeper's own token count at each call;
// observation masking (tool outputs older than the newest 10 turns replaced by a placeholder,
// then truncated to the budget); the AI SDK's `pruneMessages` (reasoning before the last
// message and tool calls before the last two messages removed, then truncated); the keeper
// with its heuristic summary, with a one-line stand-in summarizer, and with a host that keeps
// what prepare returned (AI SDK 7's loop, a Worker that stores the returned history).
//
//   node bench/recall.mjs                          # held-out runs, 32k and 64k windows
//   node bench/recall.mjs --split=fit              # the runs the levels were chosen on (or =all)
//   node bench/recall.mjs --sets=swebench --windows=32000 --runs=5
//   node bench/recall.mjs --methods=keeper,truncate --json=/tmp/recall.json
//   node bench/recall.mjs --check                  # CI: the fit runs; fails on a result lost,
//                                                  # a reference in neither context nor store, a
//                                                  # call over the budget, or the keeper below
//                                                  # truncation at 64k
//   node bench/recall.mjs --misses=20              # the keeper's misses, with where they were
//   node bench/recall.mjs --pkg=DIR                # another build of the package (DIR/package.json)
//   node bench/recall.mjs --keeper='{"minTurnsBetween":6}'   # the keepers' options (for tuning)
//
// Measures the package in node_modules/context-keeper (build it first: npm run build).
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { textsOf, writtenTexts, referencesOf, occursIn, joined } from "./recall/refs.mjs";
import { truncate, mask, toModelMessages, headLength } from "./recall/baselines.mjs";
import { median, percentile } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/** The recorded runs (bench/agent/SOURCES names each one's repository, commit and path). */
export const SETS = {
  swebench: { files: /^swebench-long.*\.json\.gz$/, format: "openai", model: "gpt-4o" },
  claude: { files: /^anthropic-sessions.*\.json\.gz$/, format: "anthropic", model: "claude-sonnet-4-5" },
};

export const METHODS = ["full", "truncate", "truncate-same", "masking", "ai-sdk", "keeper", "keeper-standin", "keeper-returned"];
export const LABELS = {
  full: "full history",
  truncate: "truncation",
  "truncate-same": "truncation, keeper's tokens",
  masking: "observation masking",
  "ai-sdk": "AI SDK pruneMessages",
  keeper: "keeper",
  "keeper-standin": "keeper, stand-in summary",
  "keeper-returned": "keeper, returned history",
};
const KEEPERS = new Set(["keeper", "keeper-standin", "keeper-returned"]);
/** Observation masking keeps the outputs of this many newest turns (the paper's M). */
const MASK_TURNS = 10;
const STANDIN = "The earlier turns of this session were summarized here.";
const NOW = "2026-11-28T12:00:00Z";

export function loadSets(names, split) {
  const dir = process.env.RECALL_DATA ?? join(here, "agent");
  const files = readdirSync(dir).sort();
  const out = [];
  for (const name of names) {
    const set = SETS[name];
    if (set === undefined) throw new Error(`unknown set ${name}; the sets are ${Object.keys(SETS).join(", ")}`);
    const runs = [];
    for (const file of files.filter((f) => set.files.test(f))) {
      const data = JSON.parse(gunzipSync(readFileSync(join(dir, file))).toString("utf8"));
      for (const conv of data.conversations) {
        if (split !== "all" && conv.split !== split) continue;
        runs.push({ run: conv.run, split: conv.split, system: conv.system, messages: conv.messages, model: conv.model ?? data.model });
      }
    }
    out.push({ name, ...set, runs });
  }
  return out;
}

/** Per ref: the indices of the messages it occurs in (whole token). */
class Occurrences {
  constructor(hay) {
    this.hay = hay;
    this.memo = new Map();
  }
  of(ref) {
    let list = this.memo.get(ref);
    if (list === undefined) {
      list = [];
      for (let i = 0; i < this.hay.length; i++) if (this.hay[i] !== null && occursIn(this.hay[i], ref)) list.push(i);
      this.memo.set(ref, list);
    }
    return list;
  }
}

/** What a store holds, as texts, read incrementally: offload records and archived messages. */
class StoreTexts {
  constructor(store) {
    this.store = store;
    this.keys = new Set();
    this.texts = [];
    this.exact = new Set();
  }
  async refresh() {
    for (const { key, data } of await this.store.loadRange(["context-keeper"])) {
      const id = JSON.stringify(key);
      if (this.keys.has(id)) continue;
      this.keys.add(id);
      const text = new TextDecoder().decode(data);
      if (key[2] === "offload") {
        const body = text.slice(text.indexOf("\n") + 1);
        this.add(body);
      } else if (key[2] === "archive") {
        let record;
        try {
          record = JSON.parse(text);
        } catch {
          continue; // the Markdown transcript: the JSON archive holds the same messages
        }
        for (const m of record.messages ?? []) for (const t of textsOf(m)) this.add(t);
      }
    }
  }
  add(text) {
    this.texts.push(text);
    this.exact.add(text);
  }
  holdsWhole(text) {
    if (this.exact.has(text)) return true;
    return this.texts.some((t) => t.includes(text));
  }
  has(ref) {
    return this.texts.some((t) => occursIn(t, ref));
  }
}

function newTally() {
  return {
    calls: 0,
    refs: 0,
    inContext: 0,
    inStore: 0,
    hard: 0,
    hardInContext: 0,
    newest: 0,
    newestInContext: 0,
    tokens: 0,
    maxTokens: 0,
    over: 0,
    moves: 0,
    lost: 0,
    lostExamples: [],
    ms: [],
    decisions: {},
  };
}

/** A short name of what message `i` is, for the misses list. */
function roleAt(messages, i) {
  const m = messages[i];
  if (m.role === "tool" || (m.role === "user" && Array.isArray(m.content) && m.content.some((b) => b?.type === "tool_result"))) return "r";
  return m.role[0];
}

/** The tool call ids a message holds (its calls or the results it answers). */
function callIdsOf(m) {
  const out = (m.tool_calls ?? []).map((c) => c.id);
  if (m.tool_call_id) out.push(m.tool_call_id);
  if (Array.isArray(m.content)) for (const b of m.content) if (b?.tool_use_id || (b?.type === "tool_use" && b.id)) out.push(b.tool_use_id ?? b.id);
  return out;
}

/** Result texts of a message: its tool results' string leaves (OpenAI tool message, Anthropic
 * tool_result blocks). */
function resultTexts(message) {
  if (message.role === "tool") return typeof message.content === "string" ? [message.content] : textsOf(message);
  if (message.role === "user" && Array.isArray(message.content)) {
    return message.content.filter((b) => b?.type === "tool_result").flatMap((b) => textsOf({ content: [b] }));
  }
  return [];
}

/**
 * Replays one run at one window with every method. Returns each method's tally.
 */
async function replay(ck, stores, set, run, window, methods, misses, keeperOptions) {
  const { messages } = run;
  // NOTE: the run's own model where the recording names it (Claude models differ in whether
  // earlier thinking stays in context), else the set's.
  const model = run.model ?? set.model;
  const format = set.format;
  const anthropic = format === "anthropic";
  const wrap = (list) => (anthropic ? (run.system === undefined ? { messages: list } : { system: run.system, messages: list }) : list);
  const listOf = (out) => (Array.isArray(out) ? out : out.messages);
  const countOf = (list, fmt = format) => ck.countMessages(fmt === "aisdk" ? list : wrap(list), { model, format: fmt });
  const budgetKeeper = new ck.ContextKeeper({ model, contextWindow: window, store: new stores.MemoryStore() });
  const budget = budgetKeeper.budget.compactAt;
  budgetKeeper.free();

  // the texts of every message the references are looked for in (system prompts left out)
  const hay = messages.map((m) => (m.role === "system" || m.role === "developer" ? null : joined(textsOf(m))));
  const occ = new Occurrences(hay);
  const index = new Map(messages.map((m, i) => [m, i]));
  const head = headLength(messages);
  const task = messages.slice(0, head).findLastIndex((m) => m.role === "user");
  const changedText = new WeakMap();
  const textOfChanged = (m) => {
    let t = changedText.get(m);
    if (t === undefined) changedText.set(m, (t = joined(textsOf(m))));
    return t;
  };
  const model_ = toModelMessages(messages, anthropic ? run.system : undefined);

  const state = {};
  for (const method of methods) {
    state[method] = { tally: newTally(), previous: null, stable: new WeakMap() };
    if (KEEPERS.has(method)) {
      const store = new stores.MemoryStore();
      state[method].store = new StoreTexts(store);
      state[method].keeper = new ck.ContextKeeper({
        ...keeperOptions,
        model,
        contextWindow: window,
        store,
        ...(method === "keeper-standin" ? { summarize: () => STANDIN } : {}),
      });
    }
  }

  for (let n = head; n < messages.length; n++) {
    if (messages[n].role !== "assistant") continue;
    const history = messages.slice(0, n);
    const refs = referencesOf(writtenTexts(messages[n]));
    const earlier = [];
    const newest = [];
    for (const ref of refs) {
      const at = occ.of(ref);
      if (at.some((i) => i >= n - 2 && i < n)) newest.push(ref);
      else if (at.some((i) => i < n - 2)) earlier.push(ref);
    }
    const hard = new Set(earlier.filter((ref) => !occ.of(ref).includes(task)));
    const full = countOf(history);

    for (const method of methods) {
      const s = state[method];
      const t = s.tally;
      let out;
      let tokens;
      const started = performance.now();
      if (method === "full") {
        out = history;
        tokens = full.total;
      } else if (method === "truncate") {
        out = truncate(history, budget, (l) => countOf(l));
      } else if (method === "truncate-same") {
        const same = state.keeper?.lastTokens ?? budget;
        out = truncate(history, same, (l) => countOf(l));
      } else if (method === "masking") {
        out = truncate(mask(history, MASK_TURNS), budget, (l) => countOf(l));
      } else if (method === "ai-sdk") {
        const start = model_.first[n] ?? model_.messages.length;
        const pruned = ck.__aiPrune(model_.messages.slice(0, start));
        out = truncate(pruned, budget, (l) => countOf(l, "aisdk"));
        tokens = countOf(out, "aisdk").total;
      } else {
        const input = method === "keeper-returned" && s.previous !== null ? s.previous.concat(messages.slice(s.previousN, n)) : history;
        const { messages: prepared, report } = await s.keeper.prepare(wrap(input), { sessionId: "recall", now: NOW });
        out = listOf(prepared);
        tokens = report.tokensAfter;
        if (method === "keeper") s.lastTokens = tokens;
        t.decisions[report.decision] = (t.decisions[report.decision] ?? 0) + 1;
        s.previousN = n;
      }
      t.ms.push(performance.now() - started);
      tokens ??= countOf(out).total;

      // which input messages the output holds as they were
      const present = new Uint8Array(messages.length);
      const changed = [];
      for (const m of out) {
        const i = index.get(m);
        if (i !== undefined) present[i] = 1;
        else changed.push(m);
      }
      const inContext = (ref) => occ.of(ref).some((i) => present[i] === 1) || changed.some((m) => occursIn(textOfChanged(m), ref));
      if (s.store !== undefined) await s.store.refresh();
      for (const ref of earlier) {
        t.refs++;
        const found = inContext(ref);
        if (method === "truncate" && found) (s.found ??= new Set()).add(`${n}\u0000${ref}`);
        if (found) t.inContext++;
        if (found || (s.store !== undefined && s.store.has(ref))) t.inStore++;
        if (!found && misses !== undefined && method === "keeper") {
          // where the reference was, and what the output made of those messages: d(ropped), c(ut)
          const at = occ.of(ref).filter((i) => i < n - 2);
          // the output holds a cut copy of a message (by its tool call ids) or none: compacted
          const cutIds = new Set(changed.flatMap((m) => callIdsOf(m)));
          const how = at.map((i) => (callIdsOf(messages[i]).some((id) => cutIds.has(id)) ? "cut" : "dropped"));
          const truncation = state.truncate?.found?.has(`${n}\u0000${ref}`);
          misses.push({ run: run.run, window, call: n, ref, how, truncation, at: at.map((i) => `${i}${present[i] ? "" : roleAt(messages, i)}`) });
        }
        if (hard.has(ref)) {
          t.hard++;
          if (found) t.hardInContext++;
        }
      }
      for (const ref of newest) {
        t.newest++;
        if (inContext(ref)) t.newestInContext++;
      }
      // every tool result the output does not hold whole is in the store, word for word
      if (s.store !== undefined) {
        for (let i = 0; i < n; i++) {
          if (present[i] === 1) continue;
          for (const text of resultTexts(messages[i])) {
            if (text.length === 0 || s.store.holdsWhole(text)) continue;
            if (changed.some((m) => textOfChanged(m).includes(text))) continue;
            t.lost++;
            if (t.lostExamples.length < 3) t.lostExamples.push(`${run.run} call ${n}: the result in message ${i} (${text.length} chars)`);
          }
        }
      }
      t.calls++;
      t.tokens += tokens;
      t.maxTokens = Math.max(t.maxTokens, tokens);
      if (tokens > budget && method !== "full") t.over++;
      // the prompt prefix moved: the previous output is not a prefix of this one
      if (s.previous !== null) {
        const stable = (m) => {
          let j = s.stable.get(m);
          if (j === undefined) s.stable.set(m, (j = JSON.stringify(m)));
          return j;
        };
        const prev = s.previous;
        for (let k = 0; k < prev.length; k++) {
          if (out[k] !== prev[k] && (out[k] === undefined || stable(out[k]) !== stable(prev[k]))) {
            t.moves++;
            break;
          }
        }
      }
      s.previous = out;
    }
  }
  for (const method of methods) state[method].keeper?.free();
  return Object.fromEntries(methods.map((m) => [m, state[m].tally]));
}

function merge(into, from) {
  for (const [k, v] of Object.entries(from)) {
    if (k === "ms") into.ms.push(...v);
    else if (k === "lostExamples") into.lostExamples.push(...v.slice(0, 3 - into.lostExamples.length));
    else if (k === "maxTokens") into.maxTokens = Math.max(into.maxTokens, v);
    else if (k === "decisions") for (const [d, c] of Object.entries(v)) into.decisions[d] = (into.decisions[d] ?? 0) + c;
    else into[k] += v;
  }
}

/**
 * Runs the benchmark. Returns `{ [set]: { [window]: { budget, runs, calls, methods: { [m]: tally } } } }`.
 */
export async function runRecall({ sets = Object.keys(SETS), split = "held-out", windows = [32_000, 64_000], runs, methods = METHODS, misses, progress, pkg, keeperOptions = {} } = {}) {
  const require = createRequire(import.meta.url);
  // NOTE: --pkg=DIR measures another build of the package (DIR holds its package.json).
  const ck = pkg === undefined ? require("context-keeper") : require(resolve(pkg));
  const stores = await import(pkg === undefined ? "context-keeper/stores" : pathToFileURL(join(resolve(pkg), "stores", "node.js")).href);
  const { pruneMessages } = await import("ai");
  // NOTE: the AI SDK's documented use: reasoning kept only in the last message, tool calls and
  // results only in the last two, and messages left empty removed.
  ck.__aiPrune = (messages) => pruneMessages({ messages, reasoning: "before-last-message", toolCalls: "before-last-2-messages", emptyMessages: "remove" });
  const results = {};
  for (const set of loadSets(sets, split)) {
    results[set.name] = {};
    const picked = runs === undefined ? set.runs : set.runs.slice(0, runs);
    for (const window of windows) {
      const total = { runs: picked.length, methods: Object.fromEntries(methods.map((m) => [m, newTally()])) };
      const probe = new ck.ContextKeeper({ model: picked[0]?.model ?? set.model, contextWindow: window, store: new stores.MemoryStore() });
      total.budget = probe.budget.compactAt;
      probe.free();
      for (const run of picked) {
        const tallies = await replay(ck, stores, set, run, window, methods, misses, keeperOptions);
        for (const m of methods) merge(total.methods[m], tallies[m]);
        progress?.(`${set.name} ${window} ${run.run}: ${tallies[methods[0]].calls} calls`);
      }
      results[set.name][window] = total;
    }
  }
  return results;
}

const pct = (a, b) => (b === 0 ? "–" : `${((100 * a) / b).toFixed(1)}%`);
const k = (x) => `${(x / 1000).toFixed(1)}k`;

export function table(result, methods) {
  const rows = [
    ["earlier references in context", (t) => pct(t.inContext, t.refs)],
    ["  of those not in the task", (t) => pct(t.hardInContext, t.hard)],
    ["in context or store", (t) => pct(t.inStore, t.refs)],
    ["newest exchange's references in context", (t) => pct(t.newestInContext, t.newest)],
    ["mean / max tokens sent", (t) => `${k(t.tokens / Math.max(1, t.calls))} / ${k(t.maxTokens)}`],
    ["calls over the budget", (t) => pct(t.over, t.calls)],
    ["prefix moved", (t) => pct(t.moves, Math.max(1, t.calls - result.runs))],
    ["tool results lost", (t) => String(t.lost)],
    ["median / p99 ms a call", (t) => `${median(t.ms).toFixed(2)} / ${percentile(t.ms, 99).toFixed(2)}`],
  ];
  const lines = [`| at each call | ${methods.map((m) => LABELS[m]).join(" | ")} |`, `|---|${methods.map(() => "---:").join("|")}|`];
  for (const [label, f] of rows) lines.push(`| ${label} | ${methods.map((m) => f(result.methods[m])).join(" | ")} |`);
  return lines.join("\n");
}

async function main() {
  const args = Object.fromEntries(
    process.argv.slice(2).map((a) => {
      const [key, v] = a.replace(/^--/, "").split("=");
      return [key, v ?? true];
    }),
  );
  const check = args.check === true;
  const options = {
    sets: args.sets ? args.sets.split(",") : undefined,
    split: args.split ?? (check ? "fit" : "held-out"),
    windows: args.windows ? args.windows.split(",").map(Number) : undefined,
    runs: args.runs ? Number(args.runs) : undefined,
    methods: args.methods ? args.methods.split(",") : check ? ["truncate", "keeper", "keeper-returned"] : METHODS,
    misses: args.misses ? [] : undefined,
    progress: args.quiet || check ? undefined : (line) => console.error(line),
    pkg: typeof args.pkg === "string" ? args.pkg : undefined,
    keeperOptions: args.keeper ? JSON.parse(args.keeper) : {},
  };
  const started = performance.now();
  const results = await runRecall(options);
  for (const [set, byWindow] of Object.entries(results)) {
    for (const [window, result] of Object.entries(byWindow)) {
      const calls = result.methods[options.methods[0]].calls;
      if (calls === 0) continue;
      console.log(`\n### ${set}, ${options.split} runs (${result.runs} runs, ${calls} calls), window ${window} (budget ${result.budget})\n`);
      console.log(table(result, options.methods));
      const keeper = result.methods.keeper;
      if (keeper) console.log(`\nkeeper decisions: ${Object.entries(keeper.decisions).map(([d, c]) => `${d} ${c}`).join(", ")}`);
      for (const m of options.methods) {
        for (const example of result.methods[m].lostExamples) console.log(`lost by ${LABELS[m]}: ${example}`);
      }
    }
  }
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)`);
  if (options.misses) {
    const kinds = {};
    for (const m of options.misses) {
      const key = (m.how.includes("cut") ? (m.how.includes("dropped") ? "cut and compacted" : "cut") : "compacted") + (m.truncation ? ", truncation has it" : "");
      kinds[key] = (kinds[key] ?? 0) + 1;
    }
    console.log(`\nthe keeper's misses (${options.misses.length}): ${JSON.stringify(kinds)}`);
    console.log("(messages by index; r: a tool result, a/u: assistant/user, not in the output as it was)");
    const step = Math.max(1, Math.floor(options.misses.length / Number(args.misses)));
    for (const m of options.misses.filter((_, i) => i % step === 0).slice(0, Number(args.misses))) console.log(`  ${m.run.slice(0, 8)} @${m.window} call ${m.call}: ${JSON.stringify(m.ref)} (in messages ${m.at.join(", ")})`);
  }
  if (args.json) writeFileSync(args.json, JSON.stringify(results, (key, v) => (key === "ms" || key === "lostExamples" ? undefined : v), 1));
  if (check) {
    const failures = [];
    for (const [set, byWindow] of Object.entries(results)) {
      for (const [window, result] of Object.entries(byWindow)) {
        const { truncate: trunc, keeper, "keeper-returned": returned } = result.methods;
        for (const [name, t] of [["keeper", keeper], ["keeper, returned history", returned]]) {
          if (t.lost > 0) failures.push(`${set} @${window}: ${name} lost ${t.lost} tool results (in neither its output nor its store)`);
          if (t.inStore !== t.refs) failures.push(`${set} @${window}: ${name} holds ${t.inStore} of ${t.refs} references in context or store`);
          if (t.over > 0) failures.push(`${set} @${window}: ${name} went over the budget on ${t.over} calls`);
        }
        // NOTE: at 32k the keeper is level with truncation and not yet always above it (bench/README.md)
        if (Number(window) >= 64_000 && keeper.inContext < trunc.inContext) failures.push(`${set} @${window}: the keeper kept ${keeper.inContext} references, truncation ${trunc.inContext}`);
      }
    }
    if (failures.length > 0) {
      console.error(`\nrecall check failed:\n- ${failures.join("\n- ")}`);
      process.exit(1);
    }
    console.log("\nrecall check: ok");
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
