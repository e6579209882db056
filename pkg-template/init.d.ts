// Types of the `context-keeper/init` entry: the API plus the initialisers of the web build.
export * from "./web/context_keeper.js";
export { default } from "./web/context_keeper.js";
export * from "./context/index.js";
export * from "./errors.js";
