// Which message objects of a list the wasm core has read before and that still read the same:
// the check the counting exports and the keeper make on every message of a history, every call,
// done here in one call per list rather than by the core one property at a time across the
// wasm boundary (src/bindings/memo.rs). Each entry module registers `recallAll` with its wasm
// instance (errors.js, `registerInstance`); without it the core checks in Rust, with the same
// result.
//
// A snapshot (src/bindings/walk.rs, `Snapshot`) is an array: the memo id the core keeps for the
// message, then the message's JSON reading in walk order. A leaf (string, number, boolean, null)
// is itself; an object is its mark, then each key followed by its value; an array is its mark,
// then its items. A mark is the only kind of object a snapshot holds: `{ a, n }`, an array (`a`
// true) or object of `n` entries. Keys are compared one by one as strings: `Object.keys` of an
// unchanged object gives the same string objects, so each compare is a pointer compare.

/** The most nested a message may be and still be checked (the core's walk allows as many). */
const MAX_DEPTH = 128;

/**
 * For each item of `list`, the memo id `seen` (the core's `WeakMap` of message objects to
 * snapshots) keeps for it when the item still reads as its snapshot says, else 0.
 */
export function recallAll(list, seen) {
  const ids = new Float64Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const message = list[i];
    if (typeof message !== "object" || message === null) continue;
    const snapshot = seen.get(message);
    if (snapshot !== undefined && matches(message, snapshot)) ids[i] = snapshot[0];
  }
  return ids;
}

/** Whether `value` reads as the JSON `snapshot` holds. False when unsure (a getter throws). */
function matches(value, snapshot) {
  let at = 1;
  const same = (value, depth) => {
    const first = snapshot[at++];
    if (Object.is(value, first)) return true;
    if (typeof value !== "object" || value === null || depth >= MAX_DEPTH) return false;
    if (typeof first !== "object" || first === null) return false;
    if (typeof value.toJSON === "function") return false;
    if (Array.isArray(value)) {
      if (first.a !== true || first.n !== value.length) return false;
      for (let i = 0; i < value.length; i++) if (!same(value[i], depth + 1)) return false;
      return true;
    }
    const keys = Object.keys(value);
    if (first.a !== false || first.n !== keys.length) return false;
    for (const key of keys) {
      if (key !== snapshot[at++]) return false;
      if (!same(value[key], depth + 1)) return false;
    }
    return true;
  };
  try {
    return same(value, 0) && at === snapshot.length;
  } catch {
    return false;
  }
}

/**
 * The list the core writes back: item k is `list[from[k]]` where `from[k]` is 0 or more (a
 * message the caller gave, untouched), else `made[-from[k] - 1]` (one the core made). One call
 * for a whole conversation, rather than two boundary crossings per message
 * (src/bindings/messages.rs, `write_back_reusing`).
 */
export function assemble(list, from, made) {
  const out = [];
  for (let k = 0; k < from.length; k++) {
    const i = from[k];
    out.push(i >= 0 ? list[i] : made[-i - 1]);
  }
  return out;
}
