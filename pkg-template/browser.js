// The browser entry: the web build, initialised once with top-level await. Bundlers (Vite,
// webpack 5, esbuild) follow the `new URL(..., import.meta.url)` inside init() to the .wasm.
// scripts/build.mjs copies this file into each subpath entry's directory (lite/, o200k/, ...),
// pointing the context imports at the one shared driver and leaving them out of entries built
// without the context layer.
import init, * as core from "./web/context_keeper.js";
import { bindContext } from "./context/index.js"; // context

await init();

export * from "./web/context_keeper.js";
export { ContextKeeperError } from "./context/index.js"; // context
export const { pruneMessages, evictToolInputs, offloadToolResult, offloadMessages, readOffloaded, listOffloaded, grepOffloaded, recoveryTools, runRecoveryTool, compact, readArchive, activeMessages } = bindContext(core); // context
