// The exact counts against npm tiktoken (OpenAI's own Rust core, in wasm) on random strings:
// every Unicode plane, lone surrogates, long runs of one character, whitespace and digit runs,
// mixed newlines, contractions, and text that looks like special tokens.
//
// CI runs 5,000 strings per encoding; the long run (about 10 minutes) is
//   FUZZ_CASES=1000000 node --test tests/js/fuzz.test.mjs
// FUZZ_SEED picks another sequence (the default is fixed, so a failure reproduces).
import { test } from "node:test";
import assert from "node:assert/strict";
import { countTokens } from "context-keeper";
import { referenceCount } from "./reference.mjs";

const cases = Number(process.env.FUZZ_CASES ?? 5_000);
const seed = Number(process.env.FUZZ_SEED ?? 2026);

/** xorshift32: a fixed sequence per seed. */
function generator(start) {
  let state = start >>> 0 || 1;
  return (n) => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state % n;
  };
}

const SPECIAL = ["<|endoftext|>", "<|fim_prefix|>", "<|im_start|>", "<|endofprompt|>", "<|", "|>", "<|endoftext"];
const WORDS = ["the", " the", "The", "don't", "I'm", "we'll", "they're", "it's", "'S", "'ll", "über", "naïve", "日本語", "العربية", "Ελληνικά", "😀👍🏽", "e\u0301", "\u200d", "x86_64"];
const SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\v\f"];

/** One random string of up to 40 pieces. */
function randomText(rand) {
  let text = "";
  for (let pieces = 1 + rand(40); pieces > 0; pieces--) {
    switch (rand(11)) {
      case 0: // any code point of any plane (surrogates included: lone ones read as U+FFFD)
        text += String.fromCodePoint(rand(0x110000));
        break;
      case 1: // the Basic Multilingual Plane, where most text lives
        text += String.fromCharCode(rand(0x10000));
        break;
      case 2: // ASCII
        text += String.fromCharCode(32 + rand(95));
        break;
      case 3: // a long run of one character
        text += String.fromCodePoint([97, 32, 48, 10, 0xe9, 0x65e5, 0x1f600, 33][rand(8)]).repeat(1 + rand(120));
        break;
      case 4:
        text += SPACES[rand(SPACES.length)].repeat(1 + rand(6));
        break;
      case 5: // digit runs, ASCII and not
        for (let i = 1 + rand(12); i > 0; i--) text += rand(8) ? String(rand(10)) : String.fromCharCode([0x660, 0x966, 0xff10][rand(3)] + rand(10));
        break;
      case 6:
        text += SPECIAL[rand(SPECIAL.length)];
        break;
      case 7:
      case 8:
        text += WORDS[rand(WORDS.length)];
        break;
      case 9: // punctuation clusters
        text += "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"[rand(32)].repeat(1 + rand(3));
        break;
      default: // letters
        text += String.fromCharCode(97 + rand(26)).repeat(1 + rand(2));
    }
  }
  return text;
}

for (const encoding of ["o200k_base", "cl100k_base"]) {
  test(`${cases} random strings count as npm tiktoken counts them (${encoding}, seed ${seed})`, () => {
    const rand = generator(seed);
    for (let i = 0; i < cases; i++) {
      const text = randomText(rand);
      const ours = countTokens(text, { encoding });
      const theirs = referenceCount(text, encoding);
      if (ours !== theirs) {
        assert.equal(ours, theirs, `case ${i}: ${JSON.stringify(text)}`);
      }
    }
  });
}
