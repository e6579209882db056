// Types of an entry (scripts/build.mjs copies this file into each subpath entry's directory).
// Every runtime's entry exposes the same API, ready to call: the browser and workerd entries
// initialise the wasm before they resolve.
export * from "./node/context_keeper.js";
export * from "./errors.js";
export * from "./context/index.js"; // context
