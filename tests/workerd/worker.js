// Counts the POSTed text (or ?text=) with context-keeper inside workerd: `/` with the main
// entry, `/o200k`, `/cl100k` and `/lite` with the subpath entries.
import { countTokens, estimateTokens } from "context-keeper";
import * as o200k from "context-keeper/o200k";
import * as cl100k from "context-keeper/cl100k";
import * as lite from "context-keeper/lite";
import { handleStores } from "./stores.js";

export { SqliteSuite, KvBackedSuite } from "./stores.js";

const entries = { o200k, cl100k, lite };

/** What one subpath entry makes of `text`: its exports, a count in each encoding (or the error). */
function countWith(entry, text) {
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
    o200k_base: attempt(() => entry.countTokens(text)),
    cl100k_base: attempt(() => entry.countTokens(text, { encoding: "cl100k_base" })),
    estimate: entry.estimateTokens(text),
  };
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/stores/")) return handleStores(request, env);
    const text = request.method === "POST" ? await request.text() : url.searchParams.get("text") ?? "";
    const entry = entries[url.pathname.slice(1)];
    if (entry) return Response.json(countWith(entry, text));
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
