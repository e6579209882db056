// The publishable package: what `npm pack` puts in the tarball, that every export target exists,
// and that the installed tarball works from a fresh project through ESM and CommonJS.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = join(root, "pkg");
const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
const npm = (args, cwd) => execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** Every file path an exports map points at. */
function targets(node) {
  if (typeof node === "string") return [node];
  return Object.values(node).flatMap(targets);
}

test("the manifest: name, Cargo's version, conditions in the order resolvers need", () => {
  const cargo = readFileSync(join(root, "Cargo.toml"), "utf8");
  assert.equal(manifest.name, "context-keeper");
  assert.equal(manifest.version, cargo.match(/^version = "(.+)"/m)[1]);
  // `types` must come first and `default` last, or TypeScript and bundlers pick the wrong one.
  for (const entry of [".", "./o200k", "./cl100k", "./lite", "./estimate"]) {
    assert.deepEqual(Object.keys(manifest.exports[entry]), ["types", "workerd", "browser", "node", "default"], entry);
    assert.deepEqual(Object.keys(manifest.exports[entry].node), ["import", "default"], entry);
  }
});

test("the tarball holds every export target and nothing else of note", () => {
  const [packed] = JSON.parse(npm(["pack", "--dry-run", "--json", pkg], root));
  const files = new Set(packed.files.map((f) => f.path));
  for (const target of targets(manifest.exports)) {
    const path = target.replace(/^\.\//, "");
    assert.ok(files.has(path), `${path} is exported but not packed`);
    assert.ok(existsSync(join(pkg, path)), `${path} is exported but not built`);
  }
  // Each entry's build is named apart (`lite/web/context_keeper_lite_bg.wasm`), so that two
  // entries' .wasm copied next to one bundle cannot overwrite each other.
  const wasmNames = new Set();
  for (const dir of ["", "o200k/", "cl100k/", "lite/", "estimate/"]) {
    const name = `context_keeper${dir ? `_${dir.slice(0, -1)}` : ""}`;
    for (const file of [`node/${name}.js`, `web/${name}_bg.wasm`, "index.d.ts", "node.js", "browser.js", "workerd.js"]) {
      assert.ok(files.has(dir + file), `${dir + file} missing from the tarball`);
    }
    for (const module of ["browser.js", "workerd.js", "node.cjs"]) {
      const text = readFileSync(join(pkg, dir, module), "utf8");
      assert.ok(text.includes(`/${name}`), `${dir}${module} does not load ${name}`);
    }
    wasmNames.add(`${name}_bg.wasm`);
    if (dir === "") continue;
    // The nodejs build reads the web build's .wasm (the same bytes): each .wasm ships once.
    assert.ok(!files.has(`${dir}node/${name}_bg.wasm`), `${dir}node/${name}_bg.wasm ships twice`);
  }
  const shipped = [...files].filter((f) => f.endsWith(".wasm")).map((f) => f.split("/").pop());
  assert.deepEqual(new Set(shipped), wasmNames, "every entry's .wasm has a name of its own");
  // The main entry's Node build is its own (`node-features` in wasm-pack.toml): a .wasm
  // without tables, and the tables it reads on first use.
  for (const file of ["node/context_keeper_bg.wasm", "node/o200k.tables", "node/cl100k.tables"]) {
    assert.ok(files.has(file), `${file} missing from the tarball`);
  }
  const size = (path) => packed.files.find((f) => f.path === path).size;
  const nodeWasm = size("node/context_keeper_bg.wasm");
  // The web build holds the tables the Node build reads from files: what it has more is them,
  // o200k_base's whole and cl100k_base's as a delta from them (about half their size).
  const tables = size("node/o200k.tables") + 0.45 * size("node/cl100k.tables");
  assert.ok(size("web/context_keeper_bg.wasm") - nodeWasm > 0.9 * tables, `node/context_keeper_bg.wasm (${nodeWasm} bytes) holds tables`);
  assert.ok(files.has("README.md"), "README.md missing from the tarball");
  for (const bin of Object.values(manifest.bin)) assert.ok(files.has(bin.replace(/^\.\//, "")), `the bin ${bin} is not packed`);
  for (const path of files) assert.doesNotMatch(path, /\.gitignore$|^src\/|\.rs$/, `${path} should not ship`);
});

test("the packed tarball installs into a fresh project and works from ESM and CommonJS", () => {
  const dir = mkdtempSync(join(tmpdir(), "ck-pack-"));
  try {
    const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", dir, pkg], root));
    writeFileSync(join(dir, "package.json"), '{ "name": "consumer", "private": true }\n');
    npm(["install", "--no-audit", "--no-fund", "--offline", join(dir, packed.filename)], dir);
    writeFileSync(join(dir, "esm.mjs"), 'import { countTokens } from "context-keeper";\nconsole.log(countTokens("hello world", { model: "gpt-4o" }));\n');
    writeFileSync(join(dir, "cjs.cjs"), 'const { countTokens } = require("context-keeper");\nconsole.log(countTokens("hello world", { encoding: "cl100k_base" }));\n');
    assert.equal(execFileSync(process.execPath, ["esm.mjs"], { cwd: dir, encoding: "utf8" }).trim(), "2");
    assert.equal(execFileSync(process.execPath, ["cjs.cjs"], { cwd: dir, encoding: "utf8" }).trim(), "2");
    // Each subpath entry, from ESM and CommonJS: what it exports and a call to it.
    const call = {
      o200k: 'typeof countTokens + " " + countTokens("hello world", { model: "gpt-4o" })',
      cl100k: 'typeof countTokens + " " + countTokens("hello world", { model: "gpt-4" })',
      lite: 'typeof ck.ContextKeeper + " " + ck.countMessages([{ role: "user", content: "hello world" }]).exact + " " + estimateTokens("")',
      estimate: 'typeof countTokens + " " + estimateTokens("")',
    };
    const expected = { o200k: "function 2", cl100k: "function 2", lite: "function false 0", estimate: "undefined 0" };
    // The bin npm linked: `context-keeper report` on a conversation piped in.
    const report = execFileSync(join(dir, "node_modules", ".bin", "context-keeper"), ["report", "-", "--json"], {
      cwd: dir, encoding: "utf8", input: JSON.stringify([{ role: "user", content: "hello world" }]),
    });
    assert.equal(JSON.parse(report).tokens.total, 9);
    for (const [entry, expression] of Object.entries(call)) {
      writeFileSync(join(dir, `${entry}.mjs`), `import * as ck from "context-keeper/${entry}";\nconst { countTokens, estimateTokens } = ck;\nconsole.log(${expression});\n`);
      writeFileSync(join(dir, `${entry}.cjs`), `const ck = require("context-keeper/${entry}");\nconst { countTokens, estimateTokens } = ck;\nconsole.log(${expression});\n`);
      for (const file of [`${entry}.mjs`, `${entry}.cjs`]) {
        assert.equal(execFileSync(process.execPath, [file], { cwd: dir, encoding: "utf8" }).trim(), expected[entry], file);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
