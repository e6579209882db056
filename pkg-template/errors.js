// The package's one error class. Every export of every entry (the full ones, ./o200k,
// ./cl100k, ./lite, ./estimate, ./init) throws it, the context layer's driver included; each entry module
// registers it with its wasm instance as soon as the instance is ready, so errors made in Rust
// are instances of it too. One module for all entries, so an error of one entry is
// `instanceof` the class another entry exports. (scripts/build.mjs writes errors.cjs from it for
// Node's `require`, which Node's `import` entries go through as well.)

import { recallAll } from "./memo.js";

/**
 * What went wrong (`kind`) and where (`path`). It extends `Error`, not `TypeError` or
 * `RangeError`: one class cannot extend both, and `kind` tells the cases apart.
 */
export class ContextKeeperError extends Error {
  constructor(message, { kind = "internal", path = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ContextKeeperError";
    this.kind = kind;
    this.path = path;
  }
}

/**
 * Registers the package's JS helpers with one wasm instance, as soon as it is ready: the error
 * class (its exports' errors are instances of {@link ContextKeeperError}) and, in an entry that
 * counts messages, the snapshot check of the count memo (memo.js).
 */
export function registerInstance(core) {
  core.__ckRegisterErrorClass(ContextKeeperError);
  if (typeof core.__ckRegisterRecall === "function") core.__ckRegisterRecall(recallAll);
}
