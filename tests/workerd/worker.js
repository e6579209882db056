// Counts the POSTed text (or ?text=) with context-keeper inside workerd: `/` with the main
// entry, `/o200k`, `/cl100k`, `/lite` and `/estimate` with the subpath entries.
import { countTokens, estimateTokens } from "context-keeper";
import * as o200k from "context-keeper/o200k";
import * as cl100k from "context-keeper/cl100k";
import * as lite from "context-keeper/lite";
import * as estimate from "context-keeper/estimate";
import { MemoryStore } from "context-keeper/stores";
import { readAll } from "../js/tool-output.mjs";
import { handleStores } from "./stores.js";

export { SqliteSuite, KvBackedSuite } from "./stores.js";

const entries = { o200k, cl100k, lite, estimate };

/**
 * What one subpath entry makes of `text`: its exports, a count in each encoding (or the error),
 * and (/lite, the keeper without tables) a count of it as a user message and what a keeper prepares of it as a
 * tool's result under gpt-4o's window.
 */
async function countWith(entry, text) {
  const attempt = (fn) => {
    try {
      return fn();
    } catch (err) {
      return { error: { name: err.name, kind: err.kind, message: err.message, isError: err instanceof Error } };
    }
  };
  return {
    // NOTE: `export *` from the web build also passes on its initSync, a no-op once initialised.
    exports: Object.keys(entry).filter((name) => name !== "initSync").sort(),
    o200k_base: attempt(() => entry.countTokens(text, { encoding: "o200k_base" })),
    // with neither an encoding nor a model: the entry's own encoding
    default: attempt(() => entry.countTokens(text)),
    cl100k_base: attempt(() => entry.countTokens(text, { encoding: "cl100k_base" })),
    estimate: entry.estimateTokens(text),
    ...(entry === lite && await prepared(entry, text)),
  };
}

async function prepared(entry, text) {
  const { total, exact } = entry.countMessages([{ role: "user", content: text }], { model: "gpt-4o" });
  const store = new MemoryStore();
  const keeper = new entry.ContextKeeper({ model: "gpt-4o", store });
  const history = [
    { role: "user", content: "Read the log." },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "cat", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: text },
  ];
  const { messages, report } = await keeper.prepare(history, { sessionId: "w" });
  const offloaded = report.offloaded.map(({ original }) => original.id);
  const read = offloaded.length ? (await readAll(entry, offloaded[0], { store, sessionId: "w" })).text : null;
  keeper.free();
  return { messages: { total, exact }, keeper: { estimated: report.estimated, fits: report.fits, offloaded: offloaded.length, same: messages[2].content === text, readBack: read === null ? null : read === text } };
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/stores/")) return handleStores(request, env);
    const text = request.method === "POST" ? await request.text() : url.searchParams.get("text") ?? "";
    const entry = entries[url.pathname.slice(1)];
    if (entry) return Response.json(await countWith(entry, text));
    try {
      const body = {
        o200k_base: countTokens(text),
        cl100k_base: countTokens(text, { encoding: "cl100k_base" }),
        gpt4: countTokens(text, { model: "gpt-4" }),
        estimate: estimateTokens(text),
      };
      if (url.searchParams.has("encoding")) body.custom = countTokens(text, { encoding: url.searchParams.get("encoding") });
      return Response.json(body);
    } catch (err) {
      return Response.json({ error: { name: err.name, kind: err.kind, path: err.path, message: err.message, isError: err instanceof Error } }, { status: 400 });
    }
  },
};
