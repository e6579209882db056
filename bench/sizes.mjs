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
    // The subpath entries: context-keeper/o200k, /cl100k (one encoding each), /lite (no tables).
    "o200k/web/context_keeper_bg.wasm", "cl100k/web/context_keeper_bg.wasm", "lite/web/context_keeper_bg.wasm"],
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
