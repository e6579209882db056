// The entry for callers who bring the .wasm themselves (a CDN, a custom loader, a service
// worker cache): nothing is loaded until `await init(source)` or `initSync({ module })`. The
// context functions bind to the instance lazily, so they work once it is initialised.
import * as core from "./web/context_keeper.js";
import { bindContext } from "./context/index.js";

export { default, initSync } from "./web/context_keeper.js";
export * from "./web/context_keeper.js";
export { ContextKeeperError } from "./context/index.js";
export const { pruneMessages, evictToolInputs, offloadToolResult, offloadMessages, readOffloaded, listOffloaded, grepOffloaded, recoveryTools, runRecoveryTool, compact, readArchive, activeMessages } = bindContext(core);
