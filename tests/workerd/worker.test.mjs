// The package inside a real workerd: `wrangler dev` on 127.0.0.1 serves tests/workerd/worker.js,
// which imports context-keeper through its `workerd` condition; we ask it over HTTP and compare
// with npm tiktoken, then stop wrangler by its own process group.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { referenceCount, texts, sampleTexts } from "../js/reference.mjs";
import { makeOutput } from "../js/tool-output.mjs";
import { startWrangler } from "./wrangler.mjs";

let wrangler, base;

before(async () => {
  wrangler = await startWrangler();
  base = wrangler.base;
});

after(async () => {
  await wrangler?.stop();
});

async function ask(text, query = "") {
  const res = await fetch(`${base}${query}`, { method: "POST", body: text });
  return { status: res.status, body: await res.json() };
}

const notBuilt = (encoding, entry) =>
  `${encoding} is not in this build of context-keeper; count it with an entry that has it: "context-keeper" (every encoding) or "context-keeper/${entry}" (Cargo feature "${entry}")`;

test("exact counts inside workerd equal npm tiktoken", async () => {
  for (const [name, text] of [...Object.entries(texts), ["sample", sampleTexts.join("\n")]]) {
    const { status, body } = await ask(text);
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.o200k_base, referenceCount(text, "o200k_base"), `o200k ${name}`);
    assert.equal(body.cl100k_base, referenceCount(text, "cl100k_base"), `cl100k ${name}`);
    assert.equal(body.gpt4, referenceCount(text, "cl100k_base"), `gpt-4 ${name}`);
    assert.equal(typeof body.estimate, "number");
  }
});

test("errors inside workerd are Error objects that name the input", async () => {
  const { status, body } = await ask("hi", "?encoding=r50k_base");
  assert.equal(status, 400);
  assert.equal(body.error.name, "ContextKeeperError");
  assert.equal(body.error.kind, "encoding");
  assert.equal(body.error.path, "options.encoding");
  assert.equal(body.error.isError, true);
  assert.match(body.error.message, /unknown encoding "r50k_base"; known encodings: o200k_base, cl100k_base/);
});

test("the subpath entries inside workerd: one encoding each, the keeper without tables, or the estimator alone", async () => {
  const { body: main } = await ask("");
  const api = Object.keys(await import("context-keeper")).sort();
  for (const [name, text] of [...Object.entries(texts), ["sample", sampleTexts.join("\n")]]) {
    const { body: o200k } = await ask(text, "o200k");
    assert.deepEqual(o200k.exports, api);
    assert.equal(o200k.o200k_base, referenceCount(text, "o200k_base"), `o200k ${name}`);
    assert.deepEqual(o200k.cl100k_base.error, { name: "ContextKeeperError", kind: "encoding", message: notBuilt("cl100k_base", "cl100k"), isError: true });

    const { body: cl100k } = await ask(text, "cl100k");
    assert.deepEqual(cl100k.exports, api);
    assert.equal(cl100k.cl100k_base, referenceCount(text, "cl100k_base"), `cl100k ${name}`);
    assert.deepEqual(cl100k.o200k_base.error, { name: "ContextKeeperError", kind: "encoding", message: notBuilt("o200k_base", "o200k"), isError: true });
    assert.equal(cl100k.default, cl100k.cl100k_base, `cl100k counts cl100k_base by default: ${name}`);
    assert.equal(o200k.default, o200k.o200k_base, `o200k ${name}`);

    const { body: full } = await ask(text);
    const { body: lite } = await ask(text, "lite");
    assert.deepEqual(lite.exports, api);
    assert.deepEqual(lite.o200k_base.error, { name: "ContextKeeperError", kind: "encoding", message: notBuilt("o200k_base", "o200k"), isError: true });
    assert.equal(lite.estimate, full.estimate, `estimate ${name}`);
    // The estimator counts the text, in gpt-4o's framing (a message 4, the reply's priming 3).
    assert.deepEqual(lite.messages, { total: full.estimate + 7, exact: false }, `lite ${name}`);
    // Its keeper: nothing to do within 128k (the result kept as it is), every figure estimated.
    assert.deepEqual(lite.keeper, { estimated: true, fits: true, offloaded: 0, same: true, readBack: null }, `lite keeper ${name}`);

    const { body: estimate } = await ask(text, "estimate");
    assert.deepEqual(estimate.exports.filter((name) => !name.startsWith("__")), ["ContextKeeperError", "estimateTokens"]);
    assert.equal(estimate.o200k_base.error.name, "TypeError"); // countTokens is not a function
    assert.equal(estimate.estimate, full.estimate, `estimate ${name}`);
  }
  assert.equal(main.estimate, 0);
  // A result over the offload limit: /lite offloads it into the store and reads it back whole.
  const log = makeOutput(4_000);
  const { body: big } = await ask(log, "lite");
  assert.deepEqual(big.keeper, { estimated: true, fits: true, offloaded: 1, same: false, readBack: true });
});
