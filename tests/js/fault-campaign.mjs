// The keeper's fault campaign (issue #23), the part shared by Node (tests/js/keeper-faults.test.mjs)
// and workerd (tests/workerd/faults.js): generated agent conversations in the four dialects
// (OpenAI, Anthropic, AI SDK ModelMessage and UIMessage), fault schedules for a FaultyStore over
// a real adapter, a summarizer and a flush that misbehave, and the checks every prepare passes.
// Plain JS with no Node import, so the same code runs inside a Durable Object; the package's
// exports come in as `ck` (each runtime's own entry).
//
// The checks (`checkPrepared`), on each prepare that resolved:
// - the input is untouched, and the output is valid (the package's validator);
// - within the budget, or the report says why not, its figure the output's own count;
// - every offload pointer in the output reads back through `readOffloaded` from the real store,
//   equal to the original result, and every compaction marker's archives through `readArchive`;
// - nothing is lost: every text of the input that is not in the output is in what those reads
//   gave back (or in a part the report names as pruned or evicted: the host's history and the
//   written file keep those);
// - the first user request (the task) is in the output byte for byte, unless it alone is over a
//   quarter of the window (DESIGN.md, Compact: then it is summarized, and its text is in the
//   archive like the rest of the span).

import { storeKey } from "context-keeper/stores";

export const NOW = "2026-11-26T12:00:00.000Z";
const PNG = "iVBORw0KGgo=";
export const COMPACTION_TAG = "<context-keeper-compaction";
const POINTER = /\[offloaded tool output id="([^"]+)"|stored as id="([^"]+)"/g;

/** A failed check. */
function fail(message) {
  throw new Error(message);
}

function ok(condition, message) {
  if (!condition) fail(message);
}

/** A seeded xorshift generator (the same sequence in Node and workerd). */
export function rng(seed) {
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

export function text(r, n = 1 + r.int(4)) {
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
export function step(r, dialect, k) {
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

/**
 * The system prompt and the task. One task in ten is large: from half the window to one and a
 * half windows of tokens (over the quarter past which the design lets compaction summarize it).
 * Whether, and how large, is drawn from `big` (a generator of its own, so adding large tasks
 * left the sequence of everything else, and the seeds found before, as they were).
 */
export function head(r, dialect, window, big) {
  let task = text(r, 3);
  if (big.chance(0.1)) {
    const w = text(big, 1);
    task = Array.from({ length: Math.ceil((window * (0.5 + big.next())) / 5) }, (_, i) => `${w} ${i}`).join(" ");
  }
  if (dialect === "ui") return [{ id: "s", role: "system", parts: [{ type: "text", text: "You are an agent." }] }, { id: "u0", role: "user", parts: [{ type: "text", text: task }] }];
  if (dialect === "anthropic") return [{ role: "user", content: task }];
  return [{ role: "system", content: "You are an agent." }, { role: "user", content: task }];
}

/** Anthropic: no two messages of one role in a row. */
export function append(list, dialect, messages) {
  for (const m of messages) {
    const last = list[list.length - 1];
    if (dialect === "anthropic" && last && last.role === m.role) list.push({ role: m.role === "user" ? "assistant" : "user", content: "(go on)" });
    list.push(m);
  }
}

/**
 * The input of the next prepare: the whole history, or (a host that keeps what prepare
 * returned, as AI SDK 7's loop does) the previous output with the turn's messages appended.
 */
export function nextInput(history, last, chain, dialect, added) {
  if (!chain || !last) return [...history];
  const input = [...last];
  append(input, dialect, added);
  return input;
}

/** String leaves of a value worth following (3+ characters), skipping ids and types. */
export function leaves(value, out = []) {
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

/** The tool results of a message in any dialect: `{ id, value }` (the result's content or output). */
function results(m) {
  if (m.role === "tool" && typeof m.tool_call_id === "string") return [{ id: m.tool_call_id, value: m.content }];
  const out = [];
  for (const p of Array.isArray(m.content) ? m.content : m.parts ?? []) {
    if (p?.type === "tool_result") out.push({ id: p.tool_use_id, value: p.content });
    else if (p?.type === "tool-result") out.push({ id: p.toolCallId, value: p.output });
    else if (typeof p?.toolCallId === "string" && p.state === "output-available") out.push({ id: p.toolCallId, value: p.output });
  }
  return out;
}

/** The text of a result as generated (the text beside an image), or undefined. */
function resultText(value) {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.find((b) => b?.type === "text")?.text;
  if (value && typeof value === "object") return value.type === "text" ? value.value : resultText(value.value);
  return undefined;
}

/**
 * A store over `inner` that records the writes it saw confirmed (`confirmed`: key to text): put
 * it outside the FaultyStore, so a save that wrote half and failed, or never settled, is not one.
 */
export function confirming(inner, confirmed) {
  return {
    load: (k) => inner.load(k),
    save: async (k, v) => {
      await inner.save(k, v);
      confirmed.set(JSON.stringify(k), new TextDecoder().decode(v));
    },
    remove: (k) => inner.remove(k),
    loadRange: (p) => inner.loadRange(p),
    removeRange: (p) => inner.removeRange(p),
  };
}

/** A FaultyStore schedule: a fifth of the saves and a twentieth of the rest fail. */
export function faults(r) {
  return (op) => {
    if (!r.chance(op === "save" ? 0.2 : 0.05)) return undefined;
    if (op === "save") return r.pick(["throw", "reject", "quota", "half", "hang"]);
    if (op === "load" || op === "loadRange") return r.pick(["missing", "garbage", "throw", "reject"]);
    return r.pick(["throw", "reject"]);
  };
}

export function summarizer(r, stats) {
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

export function flusher(r) {
  return () => {
    const roll = r.next();
    if (roll < 0.2) throw new Error("flush failed");
    if (roll < 0.3) return undefined;
    if (roll < 0.4) return { not: "text" };
    if (roll < 0.5) return new Promise(() => {});
    return "SILENT";
  };
}

/** The keeper's options for a session (`store` and the callbacks added by the caller). */
export function sessionOptions(r) {
  return { contextWindow: r.pick([2_000, 3_000, 6_000, 12_000, 40_000]), model: r.chance(0.2) ? "gpt-4o" : undefined, summarize: r.chance(0.9), flush: r.chance(0.5) };
}

/** The messages of a conversation argument. */
const listOf = (c) => (Array.isArray(c) ? c : c.messages);

/** A message's first text: its string content, or its first part's text. */
function firstText(m) {
  if (typeof m?.content === "string") return m.content;
  const parts = Array.isArray(m?.content) ? m.content : m?.parts;
  const first = Array.isArray(parts) ? parts[0] : undefined;
  return first?.type === "text" && typeof first.text === "string" ? first.text : undefined;
}

/** Index of the first message that is not a system message. */
const afterSystems = (list) => {
  let i = 0;
  while (i < list.length && list[i].role === "system") i++;
  return i;
};

/** Reads a whole offloaded output back through readOffloaded (2,000 lines a read, no line cut). */
async function readBack(ck, id, store, sessionId) {
  const pages = [];
  for (let offset = 1; offset !== null;) {
    const read = await ck.readOffloaded(id, { store, sessionId, offset, limit: 2_000, lineChars: 1_000_000_000 });
    ok(read.cappedLines === 0, `offload ${id}: ${read.cappedLines} lines cut`);
    if (read.lines > 0) pages.push(read.text);
    offset = read.nextOffset;
  }
  return pages.join("\n");
}

/** The archive key a marker text names, or undefined. */
export function markerKey(s) {
  if (!s.startsWith(COMPACTION_TAG)) return undefined;
  const line = s.slice(COMPACTION_TAG.length).split("\n", 1)[0].trim();
  if (!line.endsWith(">")) return undefined;
  try {
    const key = JSON.parse(line.slice(0, -1)).key;
    return Array.isArray(key) && key.length > 0 ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every check on one prepare that resolved. `ctx`: `{ ck, input, frozen, messages, report,
 * dialect, real, sessionId, budget, window, model, confirmed?, cache? }`; `real` is the adapter
 * under the FaultyStore (what is read back is what a later reader would find there),
 * `confirmed` the session's confirmed writes where the caller tracks them, `cache` what the
 * session's earlier checks read (`{ offloads: new Map(), archives: new Map() }`). Returns how
 * many offloads and archives it read back.
 */
export async function checkPrepared(ctx) {
  const { ck, input, frozen, messages, report, dialect, real, sessionId, budget, window, model, confirmed } = ctx;
  const where = `${dialect} ${report.decision}`;
  const format = dialect === "ui" ? "aisdk" : dialect;
  ok(JSON.stringify(input) === frozen, `${where}: the input was mutated`);
  const problems = ck.validateMessages(messages, { format });
  ok(problems.length === 0, `${where}: invalid output: ${JSON.stringify(problems).slice(0, 500)}`);
  if (report.managed) {
    ok(report.fits === report.tokensAfter <= budget.compactAt, `${where}: fits is ${report.fits} with ${report.tokensAfter} tokens for ${budget.compactAt}`);
    if (!report.fits) ok(typeof report.overBudget === "string" && report.overBudget.length > 0, `${where}: over the budget with no reason`);
    // the figure is the output's own count (no calibration is recorded in the campaign)
    const counted = ck.countMessages(messages, { model, format }).total;
    ok(counted === report.tokensAfter, `${where}: tokensAfter is ${report.tokensAfter}, the output counts ${counted}`);
  }
  const inList = listOf(input);
  const outList = listOf(messages);

  // the originals of the input's tool results, by call id
  const originals = new Map();
  for (const m of inList) for (const { id, value } of results(m)) originals.set(id, resultText(value));

  // this call's offloads: under a key whose write was confirmed, holding the original
  for (const edit of report.offloaded) {
    const { key, id } = edit.original;
    if (confirmed) ok(confirmed.has(JSON.stringify(key)), `${where}: offload ${id} under a key never confirmed`);
    const bytes = await real.load(key);
    ok(bytes instanceof Uint8Array, `${where}: offload ${id}: nothing under its key`);
    const stored = new TextDecoder().decode(bytes);
    const body = stored.slice(stored.indexOf("\n") + 1);
    const original = originals.get(edit.toolCallId);
    if (original !== undefined && body !== original) fail(`${where}: offload ${id} is not the original (${body.length} of ${original.length} chars stored)`);
  }

  // every pointer and marker in the output reads back through the recovery API, and so does
  // every pointer in the archives read (a result offloaded before it was compacted)
  const recovered = [];
  const read = new Map(); // offload id to its text
  // NOTE: what a session read before is read again through the recovery API only when the bytes
  // under its key changed since (`cache`), which keeps the campaign's cost down.
  const cache = ctx.cache ?? { offloads: new Map(), archives: new Map() };
  const readOffload = async (id, what) => {
    if (read.has(id)) return read.get(id);
    // the record itself, byte for byte (readOffloaded gives lines: a CR before a LF is the line end's)
    const bytes = await real.load(storeKey({ sessionId, kind: "offload", name: id }));
    const stored = bytes instanceof Uint8Array ? new TextDecoder().decode(bytes) : undefined;
    const body = stored?.slice(stored.indexOf("\n") + 1);
    if (stored === undefined || cache.offloads.get(id) !== stored) {
      let back;
      try {
        back = await readBack(ck, id, real, sessionId);
      } catch (err) {
        fail(`${where}: ${what} points at offload ${id}, which does not read back: ${err.message}`);
      }
      ok(stored !== undefined, `${where}: offload ${id} reads back, but its record is not under its key`);
      ok(back === body.replace(/\r\n/g, "\n").replace(/\n$/, ""), `${where}: offload ${id}: readOffloaded gives ${back.length} chars, its record holds ${body.length}`);
      cache.offloads.set(id, stored);
    }
    read.set(id, body);
    recovered.push(body);
    return body;
  };
  // every cut (offload, trim, clear, eviction) names a copy stored under a confirmed key
  for (const edit of [...report.offloaded, ...report.pruned, ...report.evicted]) {
    ok(edit.original?.kind === "store", `${where}: the ${edit.action} of ${edit.toolCallId} names no stored copy`);
    const { key, id } = edit.original;
    if (confirmed) ok(confirmed.has(JSON.stringify(key)), `${where}: the ${edit.action} of ${edit.toolCallId} names ${id}, a key never confirmed`);
    await readOffload(id, `the ${edit.action} of ${edit.toolCallId}`);
  }
  for (const m of outList) {
    for (const { id: callId, value } of results(m)) {
      for (const s of leaves(value)) {
        for (const match of s.matchAll(POINTER)) {
          const id = match[1] ?? match[2];
          const back = await readOffload(id, `the output's result of ${callId}`);
          const original = originals.get(callId);
          // (a result the input holds cut already, naming its copy, is checked where it was cut)
          if (original !== undefined && original.match(POINTER) === null) {
            ok(back === original, `${where}: offload ${id} (call ${callId}) holds ${back.length} chars, not the original's ${original.length}`);
          }
        }
      }
    }
  }
  let archives = 0;
  const pending = leaves(outList);
  while (pending.length > 0) {
    const s = pending.pop();
    for (const match of s.matchAll(POINTER)) await readOffload(match[1] ?? match[2], "a text");
    const key = markerKey(s);
    if (key === undefined) continue;
    const bytes = await real.load(key);
    const raw = bytes instanceof Uint8Array ? new TextDecoder().decode(bytes) : undefined;
    const seen = cache.archives.get(JSON.stringify(key));
    // (a cached archive's predecessors are not loaded again: only the one the marker names)
    let texts = raw !== undefined && seen?.raw === raw ? seen.texts : undefined;
    if (texts === undefined) {
      let archive;
      try {
        archive = await ck.readArchive(key, { store: real });
      } catch (err) {
        fail(`${where}: a marker names archive ${JSON.stringify(key)}, which does not read back: ${err.message}`);
      }
      texts = leaves(archive.messages);
      cache.archives.set(JSON.stringify(key), { raw, texts });
    }
    archives++;
    recovered.push(...texts);
    pending.push(...texts.filter((t) => t.includes('id="') || t.startsWith(COMPACTION_TAG)));
  }
  const pointers = read.size;

  // the first request: byte for byte, unless it alone is over a quarter of the window
  const at = afterSystems(inList);
  const first = inList[at];
  const task = first?.role === "user" ? firstText(first) : undefined;
  if (task !== undefined && !task.startsWith(COMPACTION_TAG) && results(first).length === 0) {
    const out = outList[afterSystems(outList)];
    const verbatim = out?.role === "user" && firstText(out) === task;
    if (!verbatim || report.compaction?.firstRequestSummarized) {
      const tokens = ck.countMessages(input, { model, format }).perMessage[at];
      ok(tokens * 4 > window, `${where}: the first request (${tokens} tokens, not over a quarter of the ${window}-token window) is ${verbatim ? "reported summarized" : "not kept verbatim"}`);
    }
  }

  // nothing lost
  const kept = new Set(outList);
  const inOutput = new Set(leaves(outList));
  const inRecovered = new Set(recovered);
  let out, back; // the slow path, built when a text is not found whole
  const compacted = report.compaction?.outcome === "compacted";
  for (const m of inList) {
    if (kept.has(m)) continue;
    for (const s of leaves(m)) {
      if (inOutput.has(s) || inRecovered.has(s)) continue;
      out ??= JSON.stringify(outList);
      back ??= recovered.join("\u0001");
      const e = escaped(s);
      if (out.includes(e) || out.includes(escaped(e))) continue;
      if (back.includes(s)) continue;
      // a text an earlier prepare cut (a returned history) names the copy of its original
      const named = [...s.matchAll(POINTER)].map((match) => match[1] ?? match[2]);
      if (named.length > 0) {
        for (const id of named) await readOffload(id, "a cut text of the input");
        continue;
      }
      // a previous marker folded into this compaction's summary: its archive is the new one's predecessor
      if (compacted && s.startsWith(COMPACTION_TAG)) continue;
      fail(`${where}: lost ${JSON.stringify(s.slice(0, 80))} (${s.length} chars): in neither the output, an offload or archive read back, nor a reported edit`);
    }
  }
  return { pointers, archives };
}
