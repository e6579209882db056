// The subpath entries of the built package (pkg/, through node_modules/context-keeper):
// `context-keeper/o200k` and `context-keeper/cl100k` (one encoding's tables each, the same
// API), `context-keeper/lite` (the same API without tables, the estimator counting: its
// behaviour in tests/js/lite.test.mjs) and `context-keeper/estimate` (estimateTokens alone),
// through `import` and `require` alike.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as main from "context-keeper";
import * as o200k from "context-keeper/o200k";
import * as cl100k from "context-keeper/cl100k";
import * as lite from "context-keeper/lite";
import * as estimate from "context-keeper/estimate";
import { MemoryStore } from "context-keeper/stores";
import { referenceCount, texts, sampleTexts } from "./reference.mjs";

const require = createRequire(import.meta.url);
const allTexts = [...Object.values(texts), sampleTexts.join("\n")];
/** The .wasm of an entry ("" for the default, else "lite/" and so on), as installed: each
 * entry's file is named apart (`lite/web/context_keeper_lite_bg.wasm`). */
const wasmOf = (dir) => readFileSync(require.resolve(`context-keeper/package.json`).replace(/package\.json$/, `${dir}web/context_keeper${dir ? `_${dir.slice(0, -1)}` : ""}_bg.wasm`));

test("no entry exports the context driver's own functions (__ck..., __Ck...)", async () => {
  for (const name of ["context-keeper", "context-keeper/o200k", "context-keeper/cl100k", "context-keeper/lite", "context-keeper/estimate"]) {
    for (const api of [await import(name), require(name)]) {
      assert.deepEqual(Object.keys(api).filter((key) => key.startsWith("__") && key !== "__esModule"), [], name);
    }
  }
  // and the driver still reaches them: the keeper works through each entry that has it
  for (const entry of [main, lite]) {
    const keeper = new entry.ContextKeeper({ model: "gpt-4o", store: new MemoryStore() });
    assert.equal((await keeper.prepare([{ role: "user", content: "hi" }], { sessionId: "s" })).report.decision, "under");
    keeper.free();
  }
});

test("import and require of an entry share one instance and one API", () => {
  for (const [name, esm] of [["context-keeper", main], ["context-keeper/o200k", o200k], ["context-keeper/cl100k", cl100k], ["context-keeper/lite", lite], ["context-keeper/estimate", estimate]]) {
    const cjs = require(name);
    assert.deepEqual(Object.keys(esm).sort(), Object.keys(cjs).filter((k) => k !== "__esModule").sort(), name);
    for (const key of Object.keys(esm)) assert.equal(esm[key], cjs[key], `${name}: ${key}`);
  }
});

test("the one-encoding entries and lite have the main entry's API", () => {
  assert.deepEqual(Object.keys(o200k).sort(), Object.keys(main).sort());
  assert.deepEqual(Object.keys(cl100k).sort(), Object.keys(main).sort());
  assert.deepEqual(Object.keys(lite).sort(), Object.keys(main).sort());
});

test("context-keeper/o200k counts o200k_base exactly, as the main entry does", () => {
  for (const text of allTexts) {
    const expected = referenceCount(text, "o200k_base");
    assert.equal(o200k.countTokens(text), expected);
    assert.equal(o200k.countTokens(text, { model: "gpt-4o" }), expected);
    assert.equal(o200k.countTokens(text), main.countTokens(text));
  }
  const history = [{ role: "user", content: sampleTexts[0] }];
  assert.deepEqual(o200k.countMessages(history, { model: "gpt-4o" }), main.countMessages(history, { model: "gpt-4o" }));
});

test("context-keeper/cl100k counts cl100k_base exactly, as the main entry does", () => {
  for (const text of allTexts) {
    const expected = referenceCount(text, "cl100k_base");
    assert.equal(cl100k.countTokens(text, { encoding: "cl100k_base" }), expected);
    assert.equal(cl100k.countTokens(text, { model: "gpt-4" }), expected);
    assert.equal(cl100k.countTokens(text, { encoding: "cl100k_base" }), main.countTokens(text, { encoding: "cl100k_base" }));
  }
});

/** Asserts that `fn` throws the error of an encoding this entry was built without. */
function assertNotBuilt(fn, encoding, entry) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof main.ContextKeeperError, "the package's error class");
    assert.equal(err.kind, "encoding");
    assert.equal(err.message, `${encoding} is not in this build of context-keeper; count it with an entry that has it: "context-keeper" (every encoding) or "context-keeper/${entry}" (Cargo feature "${entry}")`);
    return true;
  });
}

test("every entry throws the one ContextKeeperError class, also through require", () => {
  for (const [name, entry] of Object.entries({ main, o200k, cl100k, lite, estimate })) {
    assert.equal(entry.ContextKeeperError, main.ContextKeeperError, name);
    assert.throws(() => entry.estimateTokens(null), (err) => err instanceof main.ContextKeeperError && err.kind === "options" && err.path === "text", name);
  }
  for (const name of ["context-keeper", "context-keeper/o200k", "context-keeper/cl100k", "context-keeper/lite", "context-keeper/estimate"]) {
    const required = require(name);
    assert.equal(required.ContextKeeperError, main.ContextKeeperError, name);
    assert.throws(() => required.estimateTokens(1), main.ContextKeeperError, name);
  }
});

test("an entry rejects the encoding it was built without, naming the entry that has it", () => {
  assertNotBuilt(() => o200k.countTokens("hello", { encoding: "cl100k_base" }), "cl100k_base", "cl100k");
  assertNotBuilt(() => o200k.countTokens("hello", { model: "gpt-4" }), "cl100k_base", "cl100k");
  assertNotBuilt(() => o200k.countTokens("", { encoding: "cl100k_base" }), "cl100k_base", "cl100k");
  assertNotBuilt(() => cl100k.countTokens("hello", { model: "gpt-4o" }), "o200k_base", "o200k");
  assertNotBuilt(() => cl100k.countMessages([{ role: "user", content: "hi" }], { model: "gpt-4o" }), "o200k_base", "o200k");
  // Still usable afterwards, and an unknown encoding is still an error of kind "encoding".
  assert.equal(o200k.countTokens("hello world"), 2);
  assert.throws(() => cl100k.countTokens("hi", { encoding: "p50k_base" }), (err) => err instanceof main.ContextKeeperError && err.kind === "encoding");
});

test("with no encoding and no model, an entry counts with the encoding it has: o200k_base, or cl100k_base in /cl100k", () => {
  for (const text of ["hello", "Grüße, 世界", ...allTexts.slice(0, 3)]) {
    assert.equal(cl100k.countTokens(text), referenceCount(text, "cl100k_base"));
    assert.equal(o200k.countTokens(text), referenceCount(text, "o200k_base"));
    assert.equal(main.countTokens(text), referenceCount(text, "o200k_base"));
  }
  const messages = [{ role: "user", content: "hi there" }];
  assert.equal(cl100k.countMessages(messages).total, main.countMessages(messages, { encoding: "cl100k_base" }).total);
});

test("a keeper for a model whose encoding the entry lacks is refused when made, naming the entries that have it", async () => {
  const store = new (await import("context-keeper/stores")).MemoryStore();
  assert.throws(
    () => new cl100k.ContextKeeper({ model: "gpt-4o", store }),
    (err) => err instanceof main.ContextKeeperError && err.kind === "options" && err.path === "options.model" && err.message === 'options.model: "gpt-4o" counts with o200k_base, which this entry of context-keeper does not have; use "context-keeper" (every encoding) or "context-keeper/o200k"',
  );
  assert.throws(() => new o200k.ContextKeeper({ model: "gpt-4", store }), (err) => err.path === "options.model" && /cl100k_base/.test(err.message));
  // the encoding it has, and the estimator-only entry (which estimates every model), prepare
  const history = [{ role: "system", content: "s" }, { role: "user", content: "hello" }];
  for (const [entry, model] of [[cl100k, "gpt-4"], [lite, "gpt-4o"], [main, "gpt-4o"]]) {
    const keeper = new entry.ContextKeeper({ model, store });
    const { report } = await keeper.prepare(history, { sessionId: `entry-${model}` });
    keeper.free();
    assert.equal(report.managed, true, model);
  }
});

test("context-keeper/estimate is the estimator alone: no countTokens, no tables", () => {
  assert.deepEqual(Object.keys(estimate).filter((k) => !k.startsWith("__")), ["ContextKeeperError", "estimateTokens"]);
  assert.equal(estimate.countTokens, undefined);
  assert.equal(require("context-keeper/estimate").countTokens, undefined);
  for (const text of allTexts) assert.equal(estimate.estimateTokens(text), main.estimateTokens(text));
  assert.equal(estimate.estimateTokens(""), 0);
  assert.throws(() => estimate.estimateTokens(42), (err) => err instanceof main.ContextKeeperError && err.kind === "options" && err.path === "text" && /text: expected a string, found a number/.test(err.message));
  const wasm = wasmOf("estimate/");
  assert.ok(gzipSync(wasm, { level: 9 }).length <= 60 * 1024, `estimate .wasm is ${gzipSync(wasm, { level: 9 }).length} bytes gzip`);
  // No tables: cl100k_base's alone are over 600 KB.
  assert.ok(wasm.length < 200 * 1024, `estimate .wasm is ${wasm.length} bytes`);
});

test("context-keeper/lite has no tables: only the keeper's code", () => {
  assert.equal(lite.estimateTokens(""), 0);
  // The smallest tables, cl100k_base's, are 670 KB raw (pkg/node/cl100k.tables); /cl100k is the
  // same code at opt-level 3 with them.
  const [code, withTables] = [wasmOf("lite/"), wasmOf("cl100k/")];
  assert.ok(code.length < withTables.length - 670_000, `lite ${code.length} B vs /cl100k ${withTables.length} B`);
});

// (The main entry's browser .wasm holds cl100k_base as a delta from o200k_base's tables, 351 KB
// raw, and rebuilds its tables on first use: engine/src/bpe/derive.rs.)
test("each one-encoding entry is smaller than the main entry by the other's tables", () => {
  const [both, one, other] = [wasmOf(""), wasmOf("o200k/"), wasmOf("cl100k/")];
  assert.ok(one.length < both.length - 300_000, `o200k ${one.length} vs both ${both.length}`);
  assert.ok(other.length < both.length - 900_000, `cl100k ${other.length} vs both ${both.length}`);
});

// Issue #23's size goals, measured as bench/sizes.mjs measures an entry: its browser build's
// JavaScript bundled and minified by esbuild from `export * from "<entry>"`, plus its .wasm,
// both gzip -9. (/o200k carries its tables as coded pairs to fit: engine/src/bpe/pairs.rs.)
// /lite is held at 422 KB, about where it is (421 KB), so that it cannot grow unnoticed: issue
// #43's goal for it, 200 KiB, is not met. (Held at 420 KB from 401 KB; moved to 422 KB for the
// packed report edits that take a ninth off a decision turn; each move says why in its commit.)
test("the main entry, /o200k and /lite ship within 1.7 MB, 1.2 MB and 422 KB gzip, the keeper inside", async () => {
  const { build } = await import("esbuild");
  const root = fileURLToPath(new URL("../..", import.meta.url));
  for (const [entry, dir, goal] of [["context-keeper", "", 1.7e6], ["context-keeper/o200k", "o200k/", 1.2e6], ["context-keeper/lite", "lite/", 422e3]]) {
    const bundled = await build({
      stdin: { contents: `export * from "${entry}";`, resolveDir: root, loader: "js" },
      bundle: true, minify: true, format: "esm", platform: "browser", target: "es2022",
      write: false, outfile: "entry.js", metafile: true, logLevel: "silent",
    });
    const exports = Object.values(bundled.metafile.outputs).flatMap((output) => output.exports);
    assert.ok(exports.includes("ContextKeeper"), `${entry} exports the keeper`);
    const js = bundled.outputFiles.filter((file) => file.path.endsWith(".js")).reduce((n, file) => n + gzipSync(file.contents, { level: 9 }).length, 0);
    const wasm = gzipSync(wasmOf(dir), { level: 9 }).length;
    assert.ok(js + wasm <= goal, `${entry}: ${js} B of JavaScript + ${wasm} B of .wasm = ${js + wasm} B gzip, over ${goal}`);
  }
});
