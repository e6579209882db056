// The subpath entries' browser modules in headless Chromium: each initialises its own .wasm with
// top-level await and counts (or, for lite, estimates), as the main entry does.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDemo } from "./chromium.mjs";

let demo, page, pageErrors;

before(async () => {
  demo = await openDemo();
  ({ page, pageErrors } = demo);
});

after(async () => {
  await demo?.close();
});

test("context-keeper/o200k, /cl100k and /lite load in a page and count", async () => {
  const result = await page.evaluate(async () => {
    const attempt = (fn) => { try { return fn(); } catch (err) { return `${err.name} (${err.kind}): ${err.message.split(";")[0]}`; } };
    const [o200k, cl100k, lite] = await Promise.all(["o200k", "cl100k", "lite"].map((dir) => import(`/pkg/${dir}/browser.js`)));
    return {
      o200k: [o200k.countTokens("hello world"), attempt(() => o200k.countTokens("hi", { model: "gpt-4" }))],
      cl100k: [cl100k.countTokens("hello world", { model: "gpt-4" }), attempt(() => cl100k.countTokens("hi"))],
      lite: [typeof lite.countTokens, lite.estimateTokens("")],
      // One class for every entry, the lite one included.
      sameClass: [o200k, cl100k, lite].every((entry) => {
        try { entry.estimateTokens(null); } catch (err) { return err instanceof o200k.ContextKeeperError && entry.ContextKeeperError === o200k.ContextKeeperError; }
        return false;
      }),
    };
  });
  assert.deepEqual(result, {
    o200k: [2, "ContextKeeperError (encoding): cl100k_base is not in this build of context-keeper"],
    cl100k: [2, "ContextKeeperError (encoding): o200k_base is not in this build of context-keeper"],
    lite: ["undefined", 0],
    sameClass: true,
  });
  assert.deepEqual(pageErrors, []);
});
