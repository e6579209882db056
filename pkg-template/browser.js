// The browser entry: the web build, initialised once with top-level await. Bundlers (Vite,
// webpack 5, esbuild) follow the `new URL(..., import.meta.url)` inside init() to the .wasm.
// scripts/build.mjs copies this file into each subpath entry's directory (lite/, o200k/, ...).
import init from "./web/context_keeper.js";

await init();

export * from "./web/context_keeper.js";
