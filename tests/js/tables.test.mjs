// The main entry's Node build reads each encoding's tables from `node/<enc>.tables` on the
// first use of that encoding (Cargo feature `host-tables`, engine/src/bpe/host.rs). Each case runs in
// a fresh process, on a copy of the package where it needs to break a file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const pkg = dirname(require.resolve("context-keeper/package.json"));

/** Runs `script` (CommonJS) in a fresh Node process with `glue` as the path of the Node glue. */
function run(glue, script) {
  const source = `const glue = ${JSON.stringify(glue)};\n${script}`;
  return JSON.parse(execFileSync(process.execPath, ["-e", source], { encoding: "utf8" }));
}

/** A copy of the installed package's Node build in a temporary directory, for `body`. */
function withCopy(body) {
  const dir = mkdtempSync(join(tmpdir(), "ck-tables-"));
  try {
    cpSync(join(pkg, "node"), join(dir, "node"), { recursive: true });
    return body(join(dir, "node"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("an encoding's tables are read on its first use, once, and an unused one never", () => {
  const opened = run(join(pkg, "node", "context_keeper.js"), `
    const fs = require("fs");
    const opened = [];
    const open = fs.openSync;
    fs.openSync = (path, ...rest) => {
      const name = require("path").basename(String(path));
      if (name.endsWith(".tables")) opened.push(name);
      return open(path, ...rest);
    };
    const ck = require(glue);
    const before = opened.length;
    ck.estimateTokens("no tables needed");
    ck.modelInfo("gpt-4o");
    const afterEstimate = opened.length;
    const counts = [ck.countTokens("hello world", { encoding: "o200k_base" }),
      ck.countTokens("hello again", { model: "gpt-4o" }),
      ck.countMessages([{ role: "user", content: "hi" }], { model: "gpt-4o" }).total];
    console.log(JSON.stringify({ before, afterEstimate, opened, counts }));
  `);
  assert.equal(opened.before, 0);
  assert.equal(opened.afterEstimate, 0, "estimating or looking up a model reads no tables");
  assert.deepEqual(opened.opened, ["o200k.tables"], "o200k read once; cl100k never");
  assert.deepEqual(opened.counts.slice(0, 2), [2, 2]);
});

test("a missing tables file fails that encoding with an Error naming the file; the other still counts", () => {
  withCopy((node) => {
    rmSync(join(node, "cl100k.tables"));
    const out = run(join(node, "context_keeper.js"), `
      const ck = require(glue);
      const errors = [];
      for (let i = 0; i < 2; i++) {
        try { ck.countTokens("hello", { encoding: "cl100k_base" }); } catch (e) { errors.push({ isError: e instanceof Error, message: e.message }); }
      }
      console.log(JSON.stringify({ errors, o200k: ck.countTokens("hello world", { encoding: "o200k_base" }) }));
    `);
    assert.equal(out.errors.length, 2, "every call fails, not only the first");
    for (const error of out.errors) {
      assert.ok(error.isError);
      assert.match(error.message, /cl100k_base tables failed to load: cannot read .*cl100k\.tables/);
      assert.match(error.message, /ENOENT/);
    }
    assert.equal(out.o200k, 2);
  });
});

test("a tables file cut short, or from another build, is refused rather than misread", () => {
  withCopy((node) => {
    const path = join(node, "o200k.tables");
    const whole = readFileSync(path);
    truncateSync(path, whole.length - 1000);
    const short = run(join(node, "context_keeper.js"), `
      try { require(glue).countTokens("hello", { encoding: "o200k_base" }); console.log("null"); }
      catch (e) { console.log(JSON.stringify(e.message)); }
    `);
    assert.match(short, /o200k_base tables failed to load: .*o200k\.tables ended after \d+ of the \d+ bytes/);

    const other = Buffer.from(whole);
    other[8] ^= 0xff; // the id: as a file written by another build
    writeFileSync(path, other);
    const foreign = run(join(node, "context_keeper.js"), `
      try { require(glue).countTokens("hello", { encoding: "o200k_base" }); console.log("null"); }
      catch (e) { console.log(JSON.stringify(e.message)); }
    `);
    assert.match(foreign, /o200k_base tables failed to load: the file is from another build/);
  });
});
