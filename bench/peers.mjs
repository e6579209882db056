// The counters under test. Each peer's `load(encoding)` does its own dynamic `import()`, so a
// child process that times "first call after import" pays for exactly that peer's modules.
// A loaded counter is `{ count(text) -> number, reset?(), free?() }`: `reset` empties any cache
// of merged pieces (so a repetition starts as cold as a fresh instance), `free` releases wasm.

/** Exact BPE tokenizers; `tiktoken` (OpenAI's Rust core in wasm) is the reference for counts. */
export const EXACT = ["context-keeper", "tiktoken", "js-tiktoken", "gpt-tokenizer"];
/** Table-free estimators of o200k_base counts. */
export const ESTIMATORS = ["context-keeper~estimate", "tokenx"];
export const REFERENCE = "tiktoken";
/**
 * The package's subpath entries, timed only for the first call after import (their engine is the
 * main entry's), each with the encodings it has.
 */
export const ENTRY_PEERS = {
  "context-keeper/o200k": ["o200k_base"],
  "context-keeper/cl100k": ["cl100k_base"],
  "context-keeper/estimate~estimate": ["o200k_base"],
};
export const ENCODINGS = ["o200k_base", "cl100k_base"];

/** npm package name of each peer (for versions and sizes). */
export const PACKAGE = {
  "context-keeper": "context-keeper",
  "context-keeper~estimate": "context-keeper",
  "context-keeper/o200k": "context-keeper",
  "context-keeper/cl100k": "context-keeper",
  "context-keeper/estimate~estimate": "context-keeper",
  tiktoken: "tiktoken",
  "js-tiktoken": "js-tiktoken",
  "gpt-tokenizer": "gpt-tokenizer",
  tokenx: "tokenx",
};

const loaders = {
  /** countTokens from the package's Node entry (CommonJS build, loads its .wasm at import). */
  async "context-keeper"(encoding) {
    const ck = await import("context-keeper");
    const options = { encoding };
    return { count: (text) => ck.countTokens(text, options), module: ck };
  },

  async "context-keeper~estimate"() {
    const ck = await import("context-keeper");
    return { count: (text) => ck.estimateTokens(text), module: ck };
  },

  /** The one-encoding entries: the same API with one encoding's tables, so a smaller .wasm. */
  async "context-keeper/o200k"(encoding) {
    const ck = await import("context-keeper/o200k");
    const options = { encoding };
    return { count: (text) => ck.countTokens(text, options), module: ck };
  },

  async "context-keeper/cl100k"(encoding) {
    const ck = await import("context-keeper/cl100k");
    const options = { encoding };
    return { count: (text) => ck.countTokens(text, options), module: ck };
  },

  /** The estimator alone, with no tables. */
  async "context-keeper/estimate~estimate"() {
    const ck = await import("context-keeper/estimate");
    return { count: (text) => ck.estimateTokens(text), module: ck };
  },

  /** npm `tiktoken`: encode with no special tokens allowed or disallowed, so they count as text. */
  async tiktoken(encoding) {
    const { get_encoding } = await import("tiktoken");
    const enc = get_encoding(encoding);
    return { count: (text) => enc.encode(text, [], []).length, free: () => enc.free() };
  },

  /** js-tiktoken's lite entry with one rank file; it keeps no cache of merges. */
  async "js-tiktoken"(encoding) {
    const [{ Tiktoken }, ranks] = await Promise.all([
      import("js-tiktoken/lite"),
      import(`js-tiktoken/ranks/${encoding}`),
    ]);
    const enc = new Tiktoken(ranks.default);
    return { count: (text) => enc.encode(text, [], []).length };
  },

  /**
   * gpt-tokenizer's per-encoding entry and its countTokens. An empty disallowedSpecial set
   * makes special-token text count as text (the default throws on it). It keeps an LRU cache
   * of merged pieces per instance: reset() clears it.
   */
  async "gpt-tokenizer"(encoding) {
    const api = await import(`gpt-tokenizer/encoding/${encoding}`);
    const options = { disallowedSpecial: new Set() };
    return { count: (text) => api.countTokens(text, options), reset: () => api.clearMergeCache() };
  },

  async tokenx() {
    const { estimateTokenCount } = await import("tokenx");
    return { count: (text) => estimateTokenCount(text) };
  },
};

/** Loads `peer` for `encoding` (estimators ignore it). */
export function loadPeer(peer, encoding) {
  const load = loaders[peer];
  if (!load) throw new RangeError(`unknown peer "${peer}"; known: ${Object.keys(loaders).join(", ")}`);
  return load(encoding);
}

export const isEstimator = (peer) => ESTIMATORS.includes(peer);
