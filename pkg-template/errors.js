// The package's one error class. Every export of every entry (the full ones, ./o200k,
// ./cl100k, ./lite, ./init) throws it, the context layer's driver included; each entry module
// registers it with its wasm instance as soon as the instance is ready, so errors made in Rust
// are instances of it too. One module for all entries, so an error of one entry is
// `instanceof` the class another entry exports. (scripts/build.mjs writes errors.cjs from it for
// Node's `require`, which Node's `import` entries go through as well.)

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

/** Makes the errors of one wasm instance's exports instances of {@link ContextKeeperError}. */
export function registerErrorClass(core) {
  core.__ckRegisterErrorClass(ContextKeeperError);
}
