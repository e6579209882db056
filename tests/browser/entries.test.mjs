// The subpath entries' browser modules in headless Chromium: each initialises its own .wasm with
// top-level await and counts, as the main entry does: /lite with the estimator (its keeper
// offloading into IndexedDB), /estimate the estimator alone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDemo } from "./chromium.mjs";
import { makeOutput, readAll } from "../js/tool-output.mjs";

let demo, page, pageErrors;

before(async () => {
  demo = await openDemo();
  ({ page, pageErrors } = demo);
});

after(async () => {
  await demo?.close();
});

/** The helpers' source, for page.evaluate. */
const helpers = `({ makeOutput: ${makeOutput.toString()}, readAll: ${readAll.toString()} })`;

test("context-keeper/o200k, /cl100k, /lite and /estimate load in a page and count", async () => {
  const result = await page.evaluate(async (source) => {
    const { makeOutput, readAll } = (0, eval)(source);
    const attempt = (fn) => { try { return fn(); } catch (err) { return `${err.name} (${err.kind}): ${err.message.split(";")[0]}`; } };
    const [o200k, cl100k, lite, estimate] = await Promise.all(["o200k", "cl100k", "lite", "estimate"].map((dir) => import(`/pkg/${dir}/browser.js`)));
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const store = new IndexedDBStore({ name: "ck-lite-entry" });
    const log = makeOutput(4_000);
    const keeper = new lite.ContextKeeper({ model: "gpt-4o", store });
    const { messages, report } = await keeper.prepare([
      { role: "user", content: "Read the log." },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "cat", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: log },
    ], { sessionId: "page" });
    const id = report.offloaded[0]?.original.id;
    const back = id && await readAll(lite, id, { store, sessionId: "page" });
    return {
      o200k: [o200k.countTokens("hello world"), attempt(() => o200k.countTokens("hi", { model: "gpt-4" }))],
      // with no encoding and no model, /cl100k counts with the one it has
      cl100k: [cl100k.countTokens("hello world", { model: "gpt-4" }), cl100k.countTokens("hi"), attempt(() => cl100k.countTokens("hi", { model: "gpt-4o" }))],
      lite: [lite.countMessages([{ role: "user", content: "hello world" }]).exact, lite.estimateTokens(""), attempt(() => lite.countTokens("hi"))],
      liteKeeper: [report.estimated, report.offloaded.length, messages[2].content !== log, back && back.text === log],
      estimate: [typeof estimate.countTokens, estimate.estimateTokens("")],
      // One class for every entry, the lite ones included.
      // the context driver's own functions stay inside the package
      internal: [o200k, cl100k, lite, estimate].flatMap((entry) => Object.keys(entry).filter((key) => key.startsWith("__"))),
      sameClass: [o200k, cl100k, lite, estimate].every((entry) => {
        try { entry.estimateTokens(null); } catch (err) { return err instanceof o200k.ContextKeeperError && entry.ContextKeeperError === o200k.ContextKeeperError; }
        return false;
      }),
    };
  }, helpers);
  assert.deepEqual(result, {
    o200k: [2, "ContextKeeperError (encoding): cl100k_base is not in this build of context-keeper"],
    cl100k: [2, 1, "ContextKeeperError (encoding): o200k_base is not in this build of context-keeper"],
    lite: [false, 0, "ContextKeeperError (encoding): o200k_base is not in this build of context-keeper"],
    liteKeeper: [true, 1, true, true],
    estimate: ["undefined", 0],
    internal: [],
    sameClass: true,
  });
  assert.deepEqual(pageErrors, []);
});
