// The Worker of bench/scale.mjs: one Durable Object holds a 5,000-message, ~10 MB agent history
// in its storage (written through DurableObjectStore, so chunked under the SQLite-backed 2 MB
// value limit) and prepares it with a ContextKeeper whose offloads, archives and session state
// go into the same storage. Routes (all POST, on the object named by ?session=):
//   /setup?messages=5000&bytes=10000000   generate the history and store it
//   /load                                 read and parse the history only (the baseline)
//   /prepare?turns=N&keep=0|1             read the history, append N turns (stored), prepare
//                                         with a new keeper (keep=0, as a Worker that keeps
//                                         nothing) or the object's own (keep=1)
// Each answer gives the wasm linear memory of the package's instances (its high-water mark)
// and times taken inside the isolate (see `now`). GET / answers "ready".
import { wasmBytes } from "./memory.js";
import { DurableObject } from "cloudflare:workers";
import { ContextKeeper, validateMessages } from "context-keeper";
import { DurableObjectStore } from "context-keeper/stores";
import { history as generate, random, turn } from "./history.js";

const HISTORY = ["bench-scale", "history"];
const NOW = "2026-11-26T12:00:00Z";

// NOTE: inside workerd the clock advances only across I/O (a Spectre mitigation): reading it
// after a timer of 0 ms gives the time at which that timer fired, i.e. after all work before it.
const now = async () => {
  await new Promise((resolve) => setTimeout(resolve, 0));
  return Date.now();
};

/**
 * `store`, measured: the most bytes handed to its `save` and not yet settled at once, memory
 * the isolate holds outside its JS heap and the wasm memory (the saves' copies out of wasm).
 */
function measured(store) {
  const bytes = { now: 0, peak: 0 };
  const save = async (key, value) => {
    bytes.now += value.byteLength;
    bytes.peak = Math.max(bytes.peak, bytes.now);
    try {
      return await store.save(key, value);
    } finally {
      bytes.now -= value.byteLength;
    }
  };
  const proxy = new Proxy(store, {
    get(target, name) {
      if (name === "save") return save;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: proxy, bytes };
}

const summarize = ({ transcript }) => `Intent: fix the failing test. Progress: read ${transcript.length} characters of files. Next: write the fix.`;

export class ScaleSession extends DurableObject {
  keeper = null;

  async readHistory(store) {
    const bytes = await store.load(HISTORY);
    return bytes === undefined ? null : JSON.parse(new TextDecoder().decode(bytes));
  }

  async writeHistory(store, history) {
    await store.save(HISTORY, new TextEncoder().encode(JSON.stringify(history)));
  }

  async fetch(request) {
    const url = new URL(request.url);
    const action = url.pathname.split("/").pop();
    const sessionId = url.searchParams.get("session");
    const store = new DurableObjectStore(this.ctx.storage);
    const times = {};
    let mark = await now();
    const lap = async (name) => {
      const t = await now();
      times[name] = t - mark;
      mark = t;
    };

    if (action === "setup") {
      await this.ctx.storage.deleteAll();
      const messages = Number(url.searchParams.get("messages") ?? 5_000);
      const bytes = Number(url.searchParams.get("bytes") ?? 10_000_000);
      const history = generate(messages, bytes);
      await lap("generate");
      await this.writeHistory(store, history);
      await lap("store");
      return Response.json({ messages: history.length, bytes: new TextEncoder().encode(JSON.stringify(history)).length, times, wasmBytes: wasmBytes() });
    }

    const history = await this.readHistory(store);
    if (history === null) return new Response("no history: POST /setup first", { status: 409 });
    await lap("load");
    if (action === "load") return Response.json({ messages: history.length, times, wasmBytes: wasmBytes() });

    if (action === "prepare") {
      const turns = Number(url.searchParams.get("turns") ?? 0);
      if (turns > 0) {
        const next = random(history.length);
        const start = (history.length - 2) / 2;
        for (let t = start; t < start + turns; t++) history.push(...turn(next, t, 3_900));
        await this.writeHistory(store, history);
        await lap("append");
      }
      const keep = url.searchParams.get("keep") === "1";
      const saving = keep ? (this.saving ??= measured(store)) : measured(store);
      saving.bytes.peak = 0;
      const options = { model: "gpt-4o", store: saving.store, summarize };
      const keeper = keep ? (this.keeper ??= new ContextKeeper(options)) : new ContextKeeper(options);
      try {
        const { messages, report } = await keeper.prepare(history, { sessionId, now: NOW });
        await lap("prepare");
        const problems = validateMessages(messages);
        return Response.json({
          messages: history.length,
          out: messages.length,
          problems: problems.length,
          times,
          wasmBytes: wasmBytes(),
          savingBytes: saving.bytes.peak,
          report: {
            decision: report.decision, fits: report.fits, overBudget: report.overBudget, tokensBefore: report.tokensBefore,
            tokensAfter: report.tokensAfter, budget: report.budget?.compactAt, offloaded: report.offloaded.length,
            pruned: report.pruned.length, evicted: report.evicted.length, compaction: report.compaction?.outcome ?? null,
            failures: report.failures.length, unchangedPrefix: report.unchangedPrefix,
          },
        });
      } finally {
        if (!keep) keeper.free();
      }
    }
    return new Response("unknown action", { status: 404 });
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, first, action] = url.pathname.split("/");
    if (first !== "scale") return new Response("ready");
    const session = url.searchParams.get("session") ?? "scale";
    try {
      return await env.SCALE_SESSION.get(env.SCALE_SESSION.idFromName(session)).fetch(`https://scale/${action}${url.search}`, { method: "POST" });
    } catch (err) {
      return new Response(`${err.name}: ${err.message}\n${err.stack}`, { status: 500 });
    }
  },
};
