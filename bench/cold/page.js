// One sample of bench/cold.mjs in a Chromium page (a fresh browser context per sample): loaded
// by the page before the clock starts, with cases.js and the stores module; then `run` times
// `import()` of the entry's browser module (which fetches its .wasm and instantiates it with
// top-level await) and the first call, with the page's performance.now() (5 µs resolution: the
// bench's server makes the page cross-origin isolated). It also records how the .wasm was
// compiled: WebAssembly.instantiateStreaming (compiling while the bytes arrive), or from bytes.
import { firstAndWarm } from "./cases.js";

const compiledWith = [];
for (const name of ["instantiateStreaming", "compileStreaming", "instantiate", "compile"]) {
  const original = WebAssembly[name];
  WebAssembly[name] = function (...args) {
    compiledWith.push(name);
    return original.apply(this, args);
  };
}

export async function run({ url, storesUrl, kind, compactMessages, warm }) {
  const { MemoryStore } = await import(storesUrl);
  const now = () => performance.now();
  const t0 = now();
  const ck = await import(url);
  const t1 = now();
  const sample = await firstAndWarm(ck, MemoryStore, kind, compactMessages, now, warm);
  return { importMs: t1 - t0, ...sample, compiledWith, isolated: globalThis.crossOriginIsolated === true };
}
