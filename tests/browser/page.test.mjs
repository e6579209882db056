// The demo page in headless Chromium: the browser entry loads, and what is typed is counted
// live, exactly (checked against npm tiktoken in Node).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDemo } from "./chromium.mjs";
import { referenceCount, texts } from "../js/reference.mjs";

let demo, page, pageErrors;

before(async () => {
  demo = await openDemo();
  ({ page, pageErrors } = demo);
  await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
});

after(async () => {
  await demo?.close();
});

test("the page loads the wasm and shows zero for an empty text", async () => {
  assert.equal(await page.textContent("[data-testid=o200k]"), "0");
  assert.equal(await page.textContent("[data-testid=cl100k]"), "0");
  assert.deepEqual(pageErrors, []);
});

test("typing updates every count live, exactly", async () => {
  for (const name of ["english", "code", "japanese", "emoji"]) {
    const text = texts[name];
    await page.fill("#text", "");
    await page.locator("#text").pressSequentially(text.slice(0, 20));
    await page.fill("#text", text); // the rest at once: `input` fires either way
    assert.equal(Number(await page.textContent("[data-testid=o200k]")), referenceCount(text, "o200k_base"), name);
    assert.equal(Number(await page.textContent("[data-testid=cl100k]")), referenceCount(text, "cl100k_base"), name);
    assert.match(await page.textContent("[data-testid=estimate]"), /^≈ \d+$/);
    assert.equal(Number(await page.textContent("[data-testid=chars]")), text.length);
  }
});

test("a model picks the encoding, and an unknown one shows its error", async () => {
  const text = texts.code;
  await page.fill("#text", text);
  await page.fill("#model", "gpt-4");
  assert.equal(Number(await page.textContent("[data-testid=by-model]")), referenceCount(text, "cl100k_base"));
  await page.fill("#model", "no-such-model");
  assert.match(await page.textContent("[data-testid=status]"), /ContextKeeperError: unknown model "no-such-model"/);
  await page.fill("#model", "");
});

test("the package imports in a page as an ES module with top-level await", async () => {
  const result = await page.evaluate(async () => {
    const mod = await import("context-keeper");
    return [mod.countTokens("hello world"), mod.countTokens("hello world", { model: "gpt-4" })];
  });
  assert.deepEqual(result, [2, 2]);
  assert.deepEqual(pageErrors, []);
});
