// The entry for callers who bring the .wasm themselves (a CDN, a custom loader, a service
// worker cache): nothing is loaded until `await init(source)` or `initSync({ module })`.
export { default, initSync } from "./web/context_keeper.js";
export * from "./web/context_keeper.js";
