// Text over a store: UTF-8 in, UTF-8 out, so no caller hand-rolls the encoding.
import { StoreError, describeKey } from "./errors.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Saves `text` as UTF-8 (a lone surrogate is written as U+FFFD, as every UTF-8 encoder does). */
export async function saveText(store, key, text) {
  if (typeof text !== "string") {
    throw new TypeError(`saveText ${describeKey(key)}: text: expected a string, found ${text === null ? "null" : typeof text}`);
  }
  await store.save(key, encoder.encode(text));
}

/** Loads a value as UTF-8 text, or `undefined`; bytes that are not UTF-8 are a `StoreError` of kind "corrupt". */
export async function loadText(store, key) {
  const data = await store.load(key);
  if (data === undefined) return undefined;
  try {
    return decoder.decode(data);
  } catch (cause) {
    throw new StoreError(`load ${describeKey(key)}: the value is not UTF-8 text`, { kind: "corrupt", key, cause });
  }
}

/** Saves a JSON-serializable value as UTF-8 JSON. */
export async function saveJSON(store, key, value) {
  await saveText(store, key, JSON.stringify(value));
}

/** Loads a value saved by `saveJSON`, or `undefined`; text that is not JSON is a `StoreError` of kind "corrupt". */
export async function loadJSON(store, key) {
  const text = await loadText(store, key);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new StoreError(`load ${describeKey(key)}: the value is not JSON`, { kind: "corrupt", key, cause });
  }
}
