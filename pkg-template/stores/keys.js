// Keys: the one function that builds them (`storeKey`) and the one codec that turns a key's
// components into names a string-keyed backend or a file system can hold. Components are never
// trusted: `../../x`, `__proto__`, "", NUL, `/`, `\`, 10,000 characters or lone surrogates each
// become a name of safe characters that stays inside its namespace and decodes back exactly.

/** The namespace every key of the context layer starts with. */
export const NAMESPACE = "context-keeper";

/**
 * The key of one stored value of the context layer: `[namespace, sessionId, kind, name]`.
 * Every caller (offload, archives, session state) builds its keys here.
 * @param {{ namespace?: string, sessionId: string, kind: string, name: string }} parts
 */
export function storeKey({ namespace = NAMESPACE, sessionId, kind, name } = {}) {
  const key = [namespace, sessionId, kind, name];
  const fields = ["namespace", "sessionId", "kind", "name"];
  key.forEach((part, i) => {
    if (typeof part !== "string") {
      throw new TypeError(`storeKey: ${fields[i]}: expected a string, found ${part === null ? "null" : typeof part}`);
    }
  });
  return key;
}

/** True when `prefix` is a prefix of `key`, component by component (["a"] is not a prefix of ["ab"]). */
export function hasPrefix(key, prefix) {
  if (prefix.length > key.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/** Orders keys component by component, by UTF-16 code units (as IndexedDB orders strings). */
export function compareKeys(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

// The codec. Kept as they are: a-z, 0-9, "_", "-", and "." anywhere but first (so no name is
// "." or "..", and none starts with the "." of the file system store's temporary files). An
// upper-case letter becomes "^" and the letter (case-insensitive file systems keep "A" and "a"
// apart). Anything else is "%" and two lower-case hex digits per UTF-8 byte, a lone surrogate
// "%u" and four. The empty component is a lone "%". A name longer than the backend allows
// becomes its head, "~" and a hash of the whole; "~" appears in no other name, and the store
// keeps the original key next to the value.

const HEX = "0123456789abcdef";

/** Encodes one key component into a name of [a-z0-9_.^%~-]. */
export function encodeComponent(component) {
  if (component === "") return "%";
  let out = "";
  for (let i = 0; i < component.length; i++) {
    const c = component.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d || (c === 0x2e && i > 0)) {
      out += component[i];
    } else if (c >= 0x41 && c <= 0x5a) {
      out += "^" + String.fromCharCode(c + 0x20);
    } else if (c < 0x80) {
      out += byte(c);
    } else if (c < 0x800) {
      out += byte(0xc0 | (c >> 6)) + byte(0x80 | (c & 0x3f));
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < component.length && isLow(component.charCodeAt(i + 1))) {
      const cp = 0x10000 + ((c - 0xd800) << 10) + (component.charCodeAt(i + 1) - 0xdc00);
      out += byte(0xf0 | (cp >> 18)) + byte(0x80 | ((cp >> 12) & 0x3f)) + byte(0x80 | ((cp >> 6) & 0x3f)) + byte(0x80 | (cp & 0x3f));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += "%u" + HEX[c >> 12] + HEX[(c >> 8) & 15] + HEX[(c >> 4) & 15] + HEX[c & 15];
    } else {
      out += byte(0xe0 | (c >> 12)) + byte(0x80 | ((c >> 6) & 0x3f)) + byte(0x80 | (c & 0x3f));
    }
  }
  return out;
}

const isLow = (c) => c >= 0xdc00 && c <= 0xdfff;
const byte = (b) => "%" + HEX[b >> 4] + HEX[b & 15];
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes a name `encodeComponent` made (not a hashed one); throws a TypeError on anything else. */
export function decodeComponent(name) {
  if (name === "%") return "";
  let out = "";
  let bytes = [];
  const flush = () => {
    if (bytes.length > 0) {
      out += utf8.decode(new Uint8Array(bytes));
      bytes = [];
    }
  };
  for (let i = 0; i < name.length; i++) {
    const ch = name[i];
    if (ch === "%" && name[i + 1] === "u") {
      flush();
      out += String.fromCharCode(parseHex(name, i + 2, 4));
      i += 5;
    } else if (ch === "%") {
      bytes.push(parseHex(name, i + 1, 2));
      i += 2;
    } else if (ch === "^") {
      flush();
      const letter = name[i + 1] ?? "";
      if (!/^[a-z]$/.test(letter)) throw new TypeError(`not an encoded key component: ${JSON.stringify(name)}`);
      out += letter.toUpperCase();
      i += 1;
    } else if (/^[a-z0-9_.-]$/.test(ch)) {
      flush();
      out += ch;
    } else {
      throw new TypeError(`not an encoded key component: ${JSON.stringify(name)}`);
    }
  }
  flush();
  return out;
}

function parseHex(text, at, digits) {
  const part = text.slice(at, at + digits);
  if (part.length !== digits || !/^[0-9a-f]+$/.test(part)) {
    throw new TypeError(`not an encoded key component: ${JSON.stringify(text)}`);
  }
  return parseInt(part, 16);
}

/** True for a name made by `encodeName` from a component too long to keep whole. */
export const isHashedName = (name) => name.includes("~");

/**
 * The name of a component within `maxLength` characters: its encoding, or, when that is
 * longer, the encoding's head, "~" and 32 hex digits of the SHA-256 of the whole encoding
 * (ASCII, so unlike the component's UTF-8 no two components share it: lone surrogates differ).
 * Deterministic, so a prefix query hashes the same way as the save did.
 */
export async function encodeName(component, maxLength) {
  const encoded = encodeComponent(component);
  if (encoded.length <= maxLength) return encoded;
  const hash = await sha256Hex(encoded);
  const head = encoded.slice(0, Math.max(0, maxLength - 33)).replace(/%[0-9a-fu]{0,4}$|\^$/, "");
  return `${head}~${hash.slice(0, 32)}`;
}

/** Encodes every component; `hashed` says whether any was too long and is hashed. */
export async function encodeKey(key, maxLength) {
  const names = await Promise.all(key.map((c) => encodeName(c, maxLength)));
  return { names, hashed: names.some(isHashedName) };
}

/** Lower-case hex SHA-256 of a string's UTF-8, with WebCrypto (in browsers, Node 20+ and workerd). */
export async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => HEX[b >> 4] + HEX[b & 15]).join("");
}
