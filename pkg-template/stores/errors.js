// Typed store errors. A store throws (rejects with) these for failures a caller can act on; the
// context layer's driver turns them into report entries and keeps the original content.

/** A store operation that failed; `kind` says how, `key` which value. */
export class StoreError extends Error {
  /**
   * @param {string} message
   * @param {{ kind?: string, key?: string[], cause?: unknown }} [details]
   */
  constructor(message, { kind = "backend", key, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "StoreError";
    /** "backend" | "quota" | "inconsistent" | "corrupt" | "keyTooLong" | "closed" */
    this.kind = kind;
    /** The key the operation was about, when there is one. */
    this.key = key;
  }
}

/** The backend is out of space (IndexedDB's `QuotaExceededError`, a full disk, ...). */
export class StoreQuotaError extends StoreError {
  constructor(message, { key, cause } = {}) {
    super(message, { kind: "quota", key, cause });
    this.name = "StoreQuotaError";
  }
}

/** Names the key for a message: the JSON of its components, shortened if huge. */
export function describeKey(key) {
  const text = JSON.stringify(key);
  return text.length > 200 ? `${text.slice(0, 120)}…(${text.length} characters)` : text;
}

// Wrong arguments are caller bugs: they throw TypeErrors, not StoreErrors.

/** Checks a key (a non-empty array of strings, or any array for a prefix); throws a TypeError naming it. */
export function checkKey(key, what = "key", { prefix = false } = {}) {
  if (!Array.isArray(key)) {
    throw new TypeError(`${what}: expected an array of strings, found ${typeName(key)}`);
  }
  if (!prefix && key.length === 0) {
    throw new TypeError(`${what}: expected at least one component, found an empty array`);
  }
  for (let i = 0; i < key.length; i++) {
    if (typeof key[i] !== "string") {
      throw new TypeError(`${what}[${i}]: expected a string, found ${typeName(key[i])}`);
    }
  }
}

/** Checks a value to save; throws naming the key. */
export function checkValue(key, data) {
  if (!(data instanceof Uint8Array)) {
    throw new TypeError(`save ${describeKey(key)}: data: expected a Uint8Array, found ${typeName(data)}`);
  }
}

export function typeName(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return value.constructor?.name ? `a ${value.constructor.name}` : "an object";
  return `a ${typeof value}`;
}
