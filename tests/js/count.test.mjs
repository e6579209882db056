// countTokens / estimateTokens through the built package, in Node, against npm tiktoken.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { ContextKeeperError, countTokens, estimateTokens } from "context-keeper";
import { referenceCount, texts, sampleTexts } from "./reference.mjs";

const encodings = ["o200k_base", "cl100k_base"];

test("exact counts equal npm tiktoken on every text fixture, in both encodings", () => {
  for (const encoding of encodings) {
    for (const [name, text] of Object.entries(texts)) {
      assert.equal(countTokens(text, { encoding }), referenceCount(text, encoding), `${encoding} ${name}`);
    }
  }
});

test("exact counts equal npm tiktoken on the sample conversation", () => {
  for (const encoding of encodings) {
    for (const text of sampleTexts) {
      assert.equal(countTokens(text, { encoding }), referenceCount(text, encoding), text.slice(0, 40));
    }
  }
});

test("generated text: long runs, every plane, mixed newlines", () => {
  const pieces = ["a", " ", "\n", "\r\n", "9", "é", "日", "😀", "<|endoftext|>", "'s", "\t", "ß", "ℌ", "\u{10FFFD}"];
  let seed = 42;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  for (let i = 0; i < 200; i++) {
    let text = "";
    for (let j = rand(60); j > 0; j--) text += pieces[rand(pieces.length)].repeat(1 + rand(4));
    for (const encoding of encodings) {
      assert.equal(countTokens(text, { encoding }), referenceCount(text, encoding), JSON.stringify(text));
    }
  }
});

test("the default encoding is o200k_base; a model picks its encoding", () => {
  const text = texts.code;
  assert.equal(countTokens(text), referenceCount(text, "o200k_base"));
  assert.equal(countTokens(text, { model: "gpt-4o" }), referenceCount(text, "o200k_base"));
  assert.equal(countTokens(text, { model: "gpt-4.1-mini-2025-04-14" }), referenceCount(text, "o200k_base"));
  assert.equal(countTokens(text, { model: "gpt-4" }), referenceCount(text, "cl100k_base"));
  assert.equal(countTokens(text, { model: "gpt-3.5-turbo" }), referenceCount(text, "cl100k_base"));
  // An explicit encoding wins over the model's.
  assert.equal(countTokens(text, { model: "gpt-4", encoding: "o200k_base" }), referenceCount(text, "o200k_base"));
  assert.equal(countTokens(text, {}), referenceCount(text, "o200k_base"));
  assert.equal(countTokens(text, null), referenceCount(text, "o200k_base"));
});

test("special-token text counts as ordinary text", () => {
  assert.equal(countTokens("<|endoftext|>", { encoding: "cl100k_base" }), 7);
  assert.ok(countTokens("<|endoftext|>") > 1);
});

test("lone surrogates count as U+FFFD, as a provider reads them", () => {
  assert.equal(countTokens("a\ud800b"), countTokens("a\ufffdb"));
  assert.equal(countTokens("\udc00\ud83d"), countTokens("\ufffd\ufffd"));
  assert.equal(estimateTokens("a\ud800b"), estimateTokens("a\ufffdb"));
});

test("an unknown encoding or model is an error of that kind that names it and lists the known ones", () => {
  assert.throws(() => countTokens("hi", { encoding: "p50k_base" }), (err) => {
    assert.ok(err instanceof ContextKeeperError);
    assert.equal(err.kind, "encoding");
    assert.equal(err.path, "options.encoding");
    assert.match(err.message, /unknown encoding "p50k_base"/);
    assert.match(err.message, /o200k_base, cl100k_base/);
    return true;
  });
  assert.throws(() => countTokens("hi", { model: "llama-99" }), (err) => {
    assert.ok(err instanceof ContextKeeperError);
    assert.equal(err.kind, "model");
    assert.equal(err.path, "options.model");
    assert.match(err.message, /unknown model "llama-99"/);
    assert.match(err.message, /gpt-4o/);
    return true;
  });
});

test("arguments of the wrong type are errors of kind \"options\" naming the field", () => {
  assert.throws(() => countTokens(42), { name: "ContextKeeperError", kind: "options", path: "text", message: "text: expected a string, found a number" });
  assert.throws(() => countTokens(undefined), { name: "ContextKeeperError", message: "text: expected a string, found undefined" });
  assert.throws(() => countTokens("x", { encoding: 7 }), { name: "ContextKeeperError", kind: "options", path: "options.encoding", message: "options.encoding: expected a string, found a number" });
  assert.throws(() => countTokens("x", { model: ["gpt-4"] }), { name: "ContextKeeperError", message: "options.model: expected a string, found an array" });
  assert.throws(() => countTokens("x", "o200k_base"), { name: "ContextKeeperError", message: "options: expected an object, found a string" });
  const throwing = { get encoding() { throw new Error("boom"); } };
  assert.throws(() => countTokens("x", throwing), { name: "ContextKeeperError", message: "options.encoding: could not be read" });
  assert.throws(() => estimateTokens(null), { name: "ContextKeeperError", message: "text: expected a string, found null" });
  // The instance is not poisoned by the errors above.
  assert.equal(countTokens("hello world"), 2);
});

test("a large text counts exactly and the instance stays usable", () => {
  const big = sampleTexts.join("\n").repeat(200); // about 0.5 MB
  assert.equal(countTokens(big), referenceCount(big));
  assert.equal(countTokens("a".repeat(100_000), { encoding: "cl100k_base" }), referenceCount("a".repeat(100_000), "cl100k_base"));
});

test("estimateTokens: zero for nothing, close to exact on real text", () => {
  assert.equal(estimateTokens(""), 0);
  const all = sampleTexts.join("\n");
  const exact = countTokens(all);
  const estimate = estimateTokens(all);
  assert.ok(Math.abs(estimate - exact) / exact < 0.15, `estimate ${estimate} vs exact ${exact}`);
});

test("CommonJS require gets the same API", () => {
  const require = createRequire(import.meta.url);
  const cjs = require("context-keeper");
  assert.equal(cjs.countTokens("hello world", { model: "gpt-4" }), 2);
  assert.equal(typeof cjs.estimateTokens, "function");
});

test("the golden counts that the Rust tests read still equal npm tiktoken", async () => {
  const { readFileSync } = await import("node:fs");
  const golden = JSON.parse(readFileSync(new URL("../data/texts.expected.json", import.meta.url), "utf8"));
  assert.deepEqual(Object.keys(golden).sort(), Object.keys(texts).sort());
  for (const [name, counts] of Object.entries(golden)) {
    for (const [encoding, count] of Object.entries(counts)) {
      assert.equal(count, referenceCount(texts[name], encoding), `${name} ${encoding}: run scripts/golden-counts.mjs`);
    }
  }
});
