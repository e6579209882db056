// The Cloudflare Workers (workerd) entry. Workers cannot compile wasm from bytes at run time,
// so the .wasm is imported as a module (wrangler bundles it as CompiledWasm) and instantiated
// synchronously. scripts/build.mjs copies this file into each subpath entry's directory.
import wasm from "./web/context_keeper_bg.wasm";
import * as core from "./web/context_keeper.js";
import { registerInstance } from "./errors.js";
import { bindContext } from "./context/index.js"; // context

core.initSync({ module: wasm });
registerInstance(core);

export * from "./web/context_keeper.js";
export { ContextKeeperError } from "./errors.js";
export const { pruneMessages, evictToolInputs, offloadToolResult, offloadMessages, readOffloaded, listOffloaded, grepOffloaded, recoveryTools, runRecoveryTool, compact, rollingWindow, readArchive, activeMessages, ContextKeeper } = bindContext(core); // context
