// Types of the default entry. Every runtime's entry exposes the same API, ready to call: the
// browser and workerd entries initialise the wasm before they resolve.
export * from "./node/context_keeper.js";
