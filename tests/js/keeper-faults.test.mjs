// The keeper's fault campaign in JS (issue #23): many sessions through the built package, each
// a growing agent conversation in one of the four dialects (OpenAI, Anthropic, AI SDK
// ModelMessage and UIMessage) prepared turn by turn with a FaultyStore over the memory store
// (saves that throw, reject, run out of quota, write half or hang; loads that miss or return
// garbage) and a summarizer and flush that throw, throw non-Errors, hang, return nothing, a
// non-string, an empty or an enormous summary. Half the sessions hand prepare its previous
// output plus the new turn (AI SDK 7), half the full history (AI SDK 5 and 6); every few turns
// the keeper is dropped and a new one made over the same store (a restarted Worker).
// Each prepare either rejects with a ContextKeeperError (a store the state could not be read
// from) or resolves to: a valid conversation (the package's validator), within the budget or
// with a reason, the input untouched, every offload readable back from the store equal to the
// original, and no text lost (in the output, a confirmed save, or a reported prune/evict).
// KEEPER_FAULT_PREPARES sets the number of prepares (default 10,000), KEEPER_FAULT_SEED the seed;
// KEEPER_FAULT_DUMP=file writes each prepare (input, output, report) there before its checks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ContextKeeper, ContextKeeperError, validateMessages, readOffloaded } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";

const PREPARES = Number(process.env.KEEPER_FAULT_PREPARES ?? 10_000);
const SEED = Number(process.env.KEEPER_FAULT_SEED ?? 23);
const NOW = "2026-11-26T12:00:00.000Z";
const PNG = "iVBORw0KGgo=";
const COMPACTION_TAG = "<context-keeper-compaction";

function rng(seed) {
  let x = (seed >>> 0) || 0x9e3779b9;
  const next = () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 0x100000000;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
  };
}

const WORDS = ["alpha", "é", "東京", "🙂", "e\u0301", "👩\u200d👩\u200d👧", "\u202eevil", "tab\there", "cr\r\nlf", "\"quoted\"", "back\\slash", "\u0000nul", "__proto__", "constructor", "שלום", "\ufeffbom"];

function text(r, n = 1 + r.int(4)) {
  return Array.from({ length: n }, () => r.pick(WORDS)).join(" ") + ` #${r.int(1e6)}`;
}

/** A tool result: empty, tiny, mid-sized or huge. */
function result(r) {
  const roll = r.next();
  if (roll < 0.1) return "";
  if (roll < 0.5) return text(r);
  const w = text(r, 1);
  if (roll < 0.85) return Array.from({ length: 20 + r.int(200) }, (_, i) => `${i} ${w}`).join("\n");
  if (roll < 0.95) return Array.from({ length: 200 + r.int(600) }, (_, i) => `${i}: ${w} ${w}`).join("\n");
  return w.repeat(500 + r.int(2_000));
}

const TOOLS = ["bash", "bash", "write_file", "edit_file", "../../x", "__proto__"];

/** One step of the conversation in `dialect`: messages to append. */
function step(r, dialect, k) {
  const roll = r.next();
  if (roll < 0.2) {
    const t = text(r);
    if (dialect === "ui") return [{ id: `u${k}`, role: "user", parts: [{ type: "text", text: t }] }];
    return [{ role: "user", content: t }];
  }
  const calls = Array.from({ length: 1 + r.int(3) }, (_, j) => ({
    id: `call_${k}_${j}`, tool: r.pick(TOOLS), path: `src/${text(r, 1)}.rs`, body: text(r), result: result(r), image: r.chance(0.1), thinking: r.chance(0.3) ? text(r) : null,
  }));
  const input = (c) => ({ path: c.path, [c.tool === "edit_file" ? "new_string" : "content"]: c.body });
  const thinking = calls[0].thinking;
  if (dialect === "openai") {
    return [
      { role: "assistant", content: thinking, tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.tool, arguments: JSON.stringify(input(c)) } })) },
      ...calls.map((c) => ({ role: "tool", tool_call_id: c.id, content: c.result })),
    ];
  }
  if (dialect === "anthropic") {
    return [
      { role: "assistant", content: [...(thinking ? [{ type: "thinking", thinking, signature: `sig-${thinking}` }] : []), ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.tool, input: input(c) }))] },
      { role: "user", content: calls.map((c) => ({ type: "tool_result", tool_use_id: c.id, content: c.image ? [{ type: "text", text: c.result }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }] : c.result })) },
    ];
  }
  if (dialect === "aisdk") {
    return [
      { role: "assistant", content: [...(thinking ? [{ type: "reasoning", text: thinking, providerOptions: { anthropic: { signature: `sig-${thinking}` } } }] : []), ...calls.map((c) => ({ type: "tool-call", toolCallId: c.id, toolName: c.tool, input: input(c) }))] },
      { role: "tool", content: calls.map((c) => ({ type: "tool-result", toolCallId: c.id, toolName: c.tool, output: c.image ? { type: "content", value: [{ type: "text", text: c.result }, { type: "media", data: PNG, mediaType: "image/png" }] } : { type: "text", value: c.result } })) },
    ];
  }
  return [{
    id: `a${k}`, role: "assistant", parts: [
      { type: "step-start" },
      ...(thinking ? [{ type: "reasoning", text: thinking, state: "done" }] : []),
      ...calls.map((c) => ({ type: `tool-${c.tool}`, toolCallId: c.id, state: "output-available", input: input(c), output: c.result })),
    ],
  }];
}

function head(r, dialect) {
  const task = text(r, 3);
  if (dialect === "ui") return [{ id: "s", role: "system", parts: [{ type: "text", text: "You are an agent." }] }, { id: "u0", role: "user", parts: [{ type: "text", text: task }] }];
  if (dialect === "anthropic") return [{ role: "user", content: task }];
  return [{ role: "system", content: "You are an agent." }, { role: "user", content: task }];
}

/** Anthropic: no two messages of one role in a row. */
function append(list, dialect, messages) {
  for (const m of messages) {
    const last = list[list.length - 1];
    if (dialect === "anthropic" && last && last.role === m.role) list.push({ role: m.role === "user" ? "assistant" : "user", content: "(go on)" });
    list.push(m);
  }
}

/** String leaves of a value worth following (3+ characters), skipping ids and types. */
function leaves(value, out = []) {
  if (typeof value === "string") {
    if (value.length >= 3) out.push(value);
  } else if (Array.isArray(value)) {
    for (const v of value) leaves(v, out);
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (["type", "role", "id", "toolCallId", "tool_call_id", "tool_use_id", "state"].includes(k)) continue;
      if (k === "arguments" && typeof v === "string") {
        try { leaves(JSON.parse(v), out); } catch { out.push(v); }
        continue;
      }
      leaves(v, out);
    }
  }
  return out;
}

const escaped = (s) => JSON.stringify(s).slice(1, -1);

/** The call ids of a message's parts. */
function callIds(message) {
  const ids = [];
  if (message.tool_call_id) ids.push(message.tool_call_id);
  for (const c of message.tool_calls ?? []) ids.push(c.id);
  for (const p of Array.isArray(message.content) ? message.content : message.parts ?? []) {
    if (p && typeof p === "object") for (const k of ["id", "tool_use_id", "toolCallId"]) if (typeof p[k] === "string") ids.push(p[k]);
  }
  return ids;
}

/**
 * A store over `inner` that records the writes it confirmed (`confirmed`: key to text) and the
 * texts they hold (`confirmed.leaves`: an archive's string leaves, an offload's body).
 */
function confirming(inner, confirmed) {
  confirmed.leaves = new Set();
  return {
    load: (k) => inner.load(k),
    save: async (k, v) => {
      await inner.save(k, v);
      const text = new TextDecoder().decode(v);
      confirmed.set(JSON.stringify(k), text);
      let json;
      try { json = JSON.parse(text); } catch { json = undefined; }
      if (json !== undefined) for (const s of leaves(json)) confirmed.leaves.add(s);
      else confirmed.leaves.add(text.slice(text.indexOf("\n") + 1));
    },
    remove: (k) => inner.remove(k),
    loadRange: (p) => inner.loadRange(p),
    removeRange: (p) => inner.removeRange(p),
  };
}

function faults(r) {
  return (op) => {
    if (!r.chance(op === "save" ? 0.2 : 0.05)) return undefined;
    if (op === "save") return r.pick(["throw", "reject", "quota", "half", "hang"]);
    if (op === "load" || op === "loadRange") return r.pick(["missing", "garbage", "throw", "reject"]);
    return r.pick(["throw", "reject"]);
  };
}

function summarizer(r, stats) {
  return ({ transcript }) => {
    stats.summaries++;
    const roll = r.next();
    if (roll < 0.08) throw new Error("rate limited");
    if (roll < 0.12) throw "a string, not an Error"; // eslint-disable-line no-throw-literal
    if (roll < 0.15) return new Promise(() => {}); // never settles: the timeout
    if (roll < 0.2) return "";
    if (roll < 0.25) return 42;
    if (roll < 0.3) return "enormous summary line\n".repeat(5_000 + r.int(20_000));
    if (roll < 0.35) return Promise.reject(new TypeError("network"));
    return `Summary of ${transcript.length} characters: ${text(r, 2)}`;
  };
}

function flusher(r) {
  return () => {
    const roll = r.next();
    if (roll < 0.2) throw new Error("flush failed");
    if (roll < 0.3) return undefined;
    if (roll < 0.4) return { not: "text" };
    if (roll < 0.5) return new Promise(() => {});
    return "SILENT";
  };
}

async function checkPrepared({ input, frozen, messages, report, dialect, confirmed, inner, store, sessionId, budget }) {
  const where = `${dialect} ${report.decision}`;
  assert.equal(JSON.stringify(input), frozen, `${where}: the input was mutated`);
  assert.deepEqual(validateMessages(messages, { format: dialect === "ui" ? "aisdk" : dialect }), [], `${where}: invalid output`);
  if (report.managed) {
    assert.equal(report.fits, report.tokensAfter <= budget.compactAt, `${where}: fits`);
    if (!report.fits) assert.ok(typeof report.overBudget === "string" && report.overBudget.length > 0, `${where}: over the budget with no reason`);
  }
  // every offload reads back, equal to the original result
  const originals = new Map();
  for (const m of input) {
    if (m.role === "tool" && typeof m.content === "string") originals.set(m.tool_call_id, m.content);
    for (const p of Array.isArray(m.content) ? m.content : m.parts ?? []) {
      if (p?.type === "tool_result") originals.set(p.tool_use_id, typeof p.content === "string" ? p.content : p.content.find((b) => b.type === "text")?.text);
      if (p?.type === "tool-result") originals.set(p.toolCallId, p.output.type === "text" ? p.output.value : p.output.value.find((b) => b.type === "text")?.text);
      if (p?.toolCallId && p.state === "output-available" && typeof p.output === "string") originals.set(p.toolCallId, p.output);
    }
  }
  for (const edit of report.offloaded) {
    const { key, id } = edit.original;
    assert.ok(confirmed.has(JSON.stringify(key)), `${where}: offload ${id} under a key never confirmed`);
    const bytes = await inner.load(key);
    const stored = new TextDecoder().decode(bytes);
    const body = stored.slice(stored.indexOf("\n") + 1);
    const original = originals.get(edit.toolCallId);
    if (original !== undefined && body !== original) {
      const history = store.log.filter((e) => JSON.stringify(e.key) === JSON.stringify(key)).map((e) => `${e.op}#${e.n}:${e.fault ?? "ok"}`);
      assert.fail(`${where}: offload ${id} is not the original (${body.length} of ${original.length} chars stored; writes of its key: ${history.join(", ")})`);
    }
    const read = await readOffloaded(id, { store: inner, sessionId, limit: 1 });
    assert.equal(read.id, id);
  }
  // nothing lost
  const kept = new Set(messages);
  const inOutput = new Set(leaves(messages));
  let out, saved; // the slow path, built when a text is not found whole

  const edited = new Set([...report.pruned, ...report.evicted].map((e) => e.toolCallId).filter(Boolean));
  const compacted = report.compaction?.outcome === "compacted";
  for (const m of input) {
    if (kept.has(m)) continue;
    const ids = callIds(m);
    for (const s of leaves(m)) {
      if (inOutput.has(s) || confirmed.leaves.has(s)) continue;
      out ??= JSON.stringify(messages);
      saved ??= [...confirmed.values()].join("\u0001");
      const e = escaped(s);
      if (out.includes(e) || out.includes(escaped(e))) continue;
      if (saved.includes(s) || saved.includes(e) || saved.includes(escaped(e))) continue;
      if (ids.some((id) => edited.has(id))) continue;
      if (compacted && s.startsWith(COMPACTION_TAG)) continue;
      assert.fail(`${where}: lost ${JSON.stringify(s.slice(0, 80))} (${s.length} chars)`);
    }
  }
}

test(`${PREPARES} prepares of faulty sessions in every dialect: valid, in budget or a reason, nothing lost`, () => campaign(PREPARES, SEED));

// Seed 5 found this at prepare 82: a confirmed offload record was saved again under its
// content-derived key by a prepare whose session state lacked it (the state's load missed or its
// save failed); that save wrote half and failed, and a later prepare whose state knew the id
// pointed at the torn record. The driver now keeps an intact record of the same content instead
// of writing it again (performSaves).
test("seed 5: a torn re-save does not destroy a confirmed offload", () => campaign(200, 5));

async function campaign(PREPARES, SEED) {
  const r = rng(SEED);
  const tally = { prepares: 0, sessions: 0, rejected: 0, summaries: 0, decisions: {}, offloaded: 0, failures: 0, restarts: 0, prepareMs: 0, checkMs: 0 };
  const started = performance.now();
  while (tally.prepares < PREPARES) {
    tally.sessions++;
    const dialect = r.pick(["openai", "anthropic", "aisdk", "ui"]);
    const sessionId = r.pick(["s", "../../x", "__proto__", "é"]) + tally.sessions;
    const inner = new MemoryStore();
    const confirmed = new Map();
    const store = new FaultyStore(confirming(inner, confirmed), faults(r));
    const options = {
      contextWindow: r.pick([2_000, 3_000, 6_000, 12_000, 40_000]), model: r.chance(0.2) ? "gpt-4o" : undefined, store,
      summarize: r.chance(0.9) ? summarizer(r, tally) : undefined, flush: r.chance(0.5) ? flusher(r) : undefined,
      timeoutMs: 5, storeTimeoutMs: 5,
    };
    if (options.model === undefined) delete options.model;
    let keeper = new ContextKeeper(options);
    const chain = r.chance(0.5);
    let history = head(r, dialect);
    let last = null;
    const turns = 2 + r.int(10);
    for (let k = 1; k <= turns && tally.prepares < PREPARES; k++) {
      const added = step(r, dialect, k);
      append(history, dialect, added);
      let input;
      if (chain && last) {
        input = [...last];
        append(input, dialect, added);
      } else {
        input = [...history];
      }
      const frozen = JSON.stringify(input);
      if (r.chance(0.1)) {
        keeper.free();
        keeper = new ContextKeeper(options);
        tally.restarts++;
      }
      tally.prepares++;
      let prepared;
      try {
        const t0 = performance.now();
        prepared = await keeper.prepare(input, { sessionId, now: NOW });
        tally.prepareMs += performance.now() - t0;
      } catch (err) {
        assert.ok(err instanceof ContextKeeperError, `a rejection that is not a ContextKeeperError: ${err?.stack ?? err}`);
        assert.equal(err.kind, "store", `${err.kind}: ${err.message}`);
        tally.rejected++;
        continue;
      }
      const { messages, report } = prepared;
      tally.decisions[report.decision] = (tally.decisions[report.decision] ?? 0) + 1;
      tally.offloaded += report.offloaded.length;
      tally.failures += report.failures.length;
      const t1 = performance.now();
      if (process.env.KEEPER_FAULT_DUMP) (await import("node:fs")).writeFileSync(process.env.KEEPER_FAULT_DUMP, JSON.stringify({ input, messages, report, options: { ...options, store: undefined, summarize: undefined, flush: undefined } }, null, 1));
      try {
        await checkPrepared({ input, frozen, messages, report, dialect, confirmed, inner, store, sessionId, budget: keeper.budget });
      } catch (err) {
        err.message = `prepare ${tally.prepares} (session ${tally.sessions}, seed ${SEED}): ${err.message}`;
        throw err;
      }
      tally.checkMs += performance.now() - t1;
      last = messages;
    }
    keeper.free();
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`keeper-faults: ${JSON.stringify({ ...tally, seed: SEED, seconds })}`);
  assert.ok(tally.decisions.compacted > 0 && tally.offloaded > 0 && tally.failures > 0, "the campaign reached compaction, offloads and failures");
}
