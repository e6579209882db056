// The package's one error class. Every export of every entry (the full ones, ./o200k,
// ./cl100k, ./lite, ./estimate, ./init) throws it, the context layer's driver included; each entry module
// registers it with its wasm instance as soon as the instance is ready, so errors made in Rust
// are instances of it too. One module for all entries, so an error of one entry is
// `instanceof` the class another entry exports. (scripts/build.mjs writes errors.cjs from it for
// Node's `require`, which Node's `import` entries go through as well.)

import { assemble, recallAll } from "./memo.js";

/**
 * What went wrong (`kind`) and where (`path`). It extends `Error`, not `TypeError` or
 * `RangeError`: one class cannot extend both, and `kind` tells the cases apart.
 */
export class ContextKeeperError extends Error {
  constructor(message, { kind = "internal", path = null, cause } = {}) {
    super(kind === "options" ? plainWords(String(message)) : message, cause === undefined ? undefined : { cause });
    this.name = "ContextKeeperError";
    this.kind = kind;
    this.path = path;
  }
}

/**
 * Registers the package's JS helpers with one wasm instance, as soon as it is ready: the error
 * class (its exports' errors are instances of {@link ContextKeeperError}) and, in an entry that
 * counts messages, the snapshot check of the count memo and the write-back of a list (memo.js).
 */
export function registerInstance(core) {
  core.__ckRegisterErrorClass(ContextKeeperError);
  if (typeof core.__ckRegisterRecall === "function") core.__ckRegisterRecall(recallAll, assemble);
}

// The words of serde (the core's options reader) for what a JS caller wrote: the type names of
// Rust (`f64`, `u64`, `struct Thresholds`) and its backquotes, said as a JS caller would say
// them. Done here rather than in the core, where the same text handling cost 2.6 KB of .wasm.
const EXPECTED = [
  [/^f(32|64)$/, "a number"],
  [/^u(8|16|32|64|128|size)$/, "a whole number, 0 or more"],
  [/^i(8|16|32|64|128|size)$/, "a whole number"],
  [/^a boolean$/, "true or false"],
  [/^a sequence$/, "an array"],
  [/^(a map|map|struct \w+)$/, "an object"],
];

function expectedWords(expected) {
  for (const [pattern, words] of EXPECTED) if (pattern.test(expected)) return words;
  return expected.replaceAll("`", '"');
}

function foundWords(found) {
  if (found.startsWith("string ")) return `the ${found}`;
  const leaf = /^(?:integer|floating point|boolean) `(.*)`$/.exec(found);
  if (leaf !== null) return leaf[1];
  return { map: "an object", sequence: "an array", "unit value": "null" }[found] ?? found;
}

/** `invalid type: string "high", expected f64` -> `expected a number, found the string "high"`. */
function plainWords(message) {
  return message
    .replace(/invalid (?:type|value): (.+), expected (.+)$/, (_, found, expected) => `expected ${expectedWords(expected)}, found ${foundWords(found)}`)
    .replace(/unknown field `([^`]*)`, (?:expected one of |expected )?(.*)$/, (_, name, known) => `unknown option "${name}"${/there are no fields/.test(known) ? "" : `; known: ${known.replaceAll("`", "")}`}`)
    .replace(/unknown variant `([^`]*)`, expected (?:one of )?(.*)$/, (_, name, known) => `unknown value "${name}"; expected one of ${known.replaceAll("`", '"')}`)
    .replace(/missing field `([^`]*)`/, (_, name) => `"${name}" is missing`);
}
