#!/usr/bin/env node
// Writes tests/data/texts.expected.json: the npm `tiktoken` counts of every text in
// tests/data/texts.json, in both encodings. The Rust (host and wasm) tests read this file; the
// Node tests check that it still equals npm tiktoken, so it cannot go stale unnoticed.
import { writeFileSync } from "node:fs";
import { referenceCount, texts } from "../tests/js/reference.mjs";

const expected = {};
for (const [name, text] of Object.entries(texts)) {
  expected[name] = { o200k_base: referenceCount(text, "o200k_base"), cl100k_base: referenceCount(text, "cl100k_base") };
}
writeFileSync(new URL("../tests/data/texts.expected.json", import.meta.url), JSON.stringify(expected, null, 2) + "\n");
