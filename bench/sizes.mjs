// What each package costs to ship: the whole installed package (raw bytes of its files), and
// the files that carry the tokenizer for one encoding (the .wasm, or the rank file) raw, gzip -9
// and brotli -11. Compressed sizes are cached by (path, size, mtime) in bench/.cache/, since
// brotli -11 of a 6 MB file takes seconds.
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

import { cacheDir } from "./corpus.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const nodeModules = join(root, "node_modules");
const cacheFile = join(cacheDir, "sizes.json");

/** The files that make up each peer's counter, relative to its package directory. */
const KEY_FILES = {
  // (each entry's .wasm ships once, in web/, and its Node build reads it from there; but the
  // main entry's Node build has a .wasm of its own, without tables, and reads the tables files)
  "context-keeper": ["web/context_keeper_bg.wasm", "node/context_keeper.js",
    "node/context_keeper_bg.wasm", "node/o200k.tables", "node/cl100k.tables",
    // The subpath entries: context-keeper/o200k, /cl100k (one encoding each), /lite (the keeper,
    // no tables), /estimate (the estimator alone).
    "o200k/web/context_keeper_o200k_bg.wasm", "cl100k/web/context_keeper_cl100k_bg.wasm",
    "lite/web/context_keeper_lite_bg.wasm", "estimate/web/context_keeper_estimate_bg.wasm"],
  tiktoken: ["tiktoken_bg.wasm", "tiktoken_bg.cjs"],
  "js-tiktoken": ["dist/ranks/o200k_base.js", "dist/ranks/cl100k_base.js"],
  "gpt-tokenizer": ["esm/bpeRanks/o200k_base.js", "esm/bpeRanks/cl100k_base.js"],
  tokenx: ["dist/index.mjs"],
};

/** Sum of the sizes of all files under `dir`. */
function treeBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

function compressed(path, cache) {
  const { size, mtimeMs } = statSync(path);
  const key = `${path}:${size}:${mtimeMs}`;
  if (!cache[key]) {
    const bytes = readFileSync(path);
    cache[key] = {
      gzip: gzipSync(bytes, { level: 9 }).length,
      brotli: brotliCompressSync(bytes, {
        params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
      }).length,
    };
  }
  return { raw: size, ...cache[key] };
}

/** Sizes of every peer package: `{ [package]: { version, packageBytes, files: { [file]: {raw, gzip, brotli} } } }`. */
export function packageSizes(packages = Object.keys(KEY_FILES)) {
  const cache = existsSync(cacheFile) ? JSON.parse(readFileSync(cacheFile, "utf8")) : {};
  const out = {};
  for (const name of packages) {
    const dir = realpathSync(join(nodeModules, name));
    const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const files = {};
    for (const file of KEY_FILES[name] ?? []) {
      const path = join(dir, file);
      if (existsSync(path)) files[relative(dir, path)] = compressed(path, cache);
    }
    out[name] = { version, packageBytes: treeBytes(dir), files };
  }
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(cacheFile, JSON.stringify(cache, null, 1));
  return out;
}

// ---- entry sizes: what a bundler ships for each entry of context-keeper ------------------------

/** The package's entries, as an app imports them. */
export const ENTRIES = {
  "context-keeper": { wasm: "web/context_keeper_bg.wasm", goal: 1.7e6 },
  "context-keeper/o200k": { wasm: "o200k/web/context_keeper_o200k_bg.wasm", goal: 1.2e6 },
  "context-keeper/cl100k": { wasm: "cl100k/web/context_keeper_cl100k_bg.wasm" },
  // issue #43's goal (the earlier 80 KiB was not reachable with the keeper inside)
  "context-keeper/lite": { wasm: "lite/web/context_keeper_lite_bg.wasm", goal: 200 * 1024 },
  "context-keeper/estimate": { wasm: "estimate/web/context_keeper_estimate_bg.wasm" },
};

/**
 * Each entry's browser build as shipped: its JavaScript bundled and minified by esbuild (the
 * entry module, the wasm-bindgen glue, the error class and, where the entry has it, the
 * context driver: everything `import * from entry` pulls in), and its .wasm (which bundlers
 * copy as an asset from the glue's `new URL(..., import.meta.url)`); raw, gzip -9, brotli 11,
 * and the sum. Also whether each entry exports the keeper (`ContextKeeper`).
 */
export async function entrySizes(entries = Object.keys(ENTRIES)) {
  const { build } = await import("esbuild");
  const cache = existsSync(cacheFile) ? JSON.parse(readFileSync(cacheFile, "utf8")) : {};
  const dir = realpathSync(join(nodeModules, "context-keeper"));
  mkdirSync(cacheDir, { recursive: true });
  const out = {};
  for (const entry of entries) {
    const outfile = join(cacheDir, `entry-${entry.replaceAll("/", "_")}.js`);
    const result = await build({
      stdin: { contents: `export * from "${entry}";`, resolveDir: root, loader: "js" },
      bundle: true, minify: true, format: "esm", platform: "browser", target: "es2022",
      outfile, write: true, logLevel: "silent", metafile: true,
    });
    const js = compressed(outfile, cache);
    const wasm = compressed(join(dir, ENTRIES[entry].wasm), cache);
    const total = { raw: js.raw + wasm.raw, gzip: js.gzip + wasm.gzip, brotli: js.brotli + wasm.brotli };
    const exports = result.metafile.outputs[relative(root, outfile)]?.exports ?? [];
    out[entry] = { js, wasm, total, keeper: exports.includes("ContextKeeper"), goal: ENTRIES[entry].goal ?? null };
  }
  writeFileSync(cacheFile, JSON.stringify(cache, null, 1));
  return out;
}

// `node bench/sizes.mjs`: the entry table as Markdown.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  const size = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} MB` : kib(n));
  const sizes = await entrySizes();
  console.log(`context-keeper ${JSON.parse(readFileSync(join(nodeModules, "context-keeper", "package.json"), "utf8")).version}: each entry's browser build, JS bundled and minified (esbuild) + its .wasm\n`);
  console.log("| entry | keeper inside | JS raw | JS gzip | .wasm raw | .wasm gzip | .wasm brotli | total raw | total gzip | total brotli | goal (gzip) |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const [entry, s] of Object.entries(sizes)) {
    const goal = s.goal == null ? "–" : `≤ ${size(s.goal)}: ${s.total.gzip <= s.goal && s.keeper ? "yes" : `**no**${s.keeper ? "" : " (no keeper)"}`}`;
    console.log(`| \`${entry}\` | ${s.keeper ? "yes" : "**no**"} | ${kib(s.js.raw)} | ${kib(s.js.gzip)} | ${size(s.wasm.raw)} | ${size(s.wasm.gzip)} | ${size(s.wasm.brotli)} | ${size(s.total.raw)} | ${size(s.total.gzip)} | ${size(s.total.brotli)} | ${goal} |`);
  }
}
