// The entry for callers who bring the .wasm themselves (a CDN, a custom loader, a service
// worker cache): nothing is loaded until `await init(source)` or `initSync({ module })`, which
// also register the error class with the instance. The context functions bind to the instance
// lazily, so they work once it is initialised.
import initWasm, * as core from "./web/context_keeper.js";
import { registerInstance } from "./errors.js";
import { bindContext } from "./context/index.js";

export * from "./web/context_keeper.js";
export { ContextKeeperError } from "./errors.js";
export const { pruneMessages, evictToolInputs, offloadToolResult, offloadMessages, readOffloaded, listOffloaded, grepOffloaded, recoveryTools, runRecoveryTool, compact, rollingWindow, readArchive, activeMessages, ContextKeeper } = bindContext(core);

/** Instantiates the wasm (see the web build's `init`). */
export default async function init(source) {
  const exports = await initWasm(source);
  registerInstance(core);
  return exports;
}

/** Instantiates the wasm synchronously (see the web build's `initSync`). */
export function initSync(source) {
  const exports = core.initSync(source);
  registerInstance(core);
  return exports;
}
