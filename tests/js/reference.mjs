// Reference counts from the npm `tiktoken` package (OpenAI's tokenizer compiled to wasm), used
// only by the tests. Special tokens are counted as ordinary text, as context-keeper does.
import { readFileSync } from "node:fs";
import { get_encoding } from "tiktoken";

const encoders = new Map();

/** The exact count of `text` in `encoding` according to npm tiktoken. */
export function referenceCount(text, encoding = "o200k_base") {
  let encoder = encoders.get(encoding);
  if (!encoder) encoders.set(encoding, (encoder = get_encoding(encoding)));
  return encoder.encode(text, [], []).length;
}

/** The shared text fixtures: `{ name: text }`. */
export const texts = JSON.parse(readFileSync(new URL("../data/texts.json", import.meta.url), "utf8"));

/** The bundled sample conversation (OpenAI Chat Completions format). */
export const sampleConversation = JSON.parse(
  readFileSync(new URL("../data/sample-conversation.json", import.meta.url), "utf8"),
);

/** Every string a model reads in the sample conversation. */
export const sampleTexts = sampleConversation.flatMap((m) => [
  ...(typeof m.content === "string" ? [m.content] : []),
  ...(m.tool_calls ?? []).flatMap((c) => [c.function.name, c.function.arguments]),
]);
