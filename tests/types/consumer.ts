// Type-checks the package as a consumer sees it (`tsc -p tests/types`): the types that ship must
// accept correct calls and reject wrong ones.
import { countTokens, estimateTokens, type CountOptions, type EncodingName } from "context-keeper";
import init, { initSync, countTokens as countAfterInit } from "context-keeper/init";

const encoding: EncodingName = "cl100k_base";
const options: CountOptions = { encoding, model: "gpt-4" };
const exact: number = countTokens("hello", options);
const byDefault: number = countTokens("hello");
const estimate: number = estimateTokens("hello");

// @ts-expect-error: only the known encodings are accepted
countTokens("hello", { encoding: "p50k_base" });
// @ts-expect-error: text must be a string
countTokens(42);
// @ts-expect-error: options are an object
countTokens("hello", "o200k_base");

async function slim(wasm: ArrayBuffer): Promise<number> {
  await init({ module_or_path: wasm });
  return countAfterInit("hello");
}
void initSync;
void [exact, byDefault, estimate, slim];
