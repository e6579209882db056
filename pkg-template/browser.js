// The browser entry: the web build, initialised once with top-level await. Vite and webpack 5
// follow the `new URL(..., import.meta.url)` inside init() to the .wasm (esbuild does not: README).
// scripts/build.mjs copies this file into each subpath entry's directory (lite/, o200k/, ...),
// pointing the imports at the one shared error class and context driver and leaving the
// driver out of entries built without the context layer.
import init, * as core from "./web/context_keeper.js";
import { registerInstance } from "./errors.js";
import { bindContext } from "./context/index.js"; // context

await init();
registerInstance(core);

export * from "./web/context_keeper.js";
export { ContextKeeperError } from "./errors.js";
export const { pruneMessages, evictToolInputs, offloadToolResult, offloadMessages, readOffloaded, listOffloaded, grepOffloaded, recoveryTools, runRecoveryTool, compact, rollingWindow, readArchive, activeMessages, ContextKeeper } = bindContext(core); // context
