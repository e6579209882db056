// Type-checks the subpath entries as a consumer sees them: the one-encoding entries and lite have
// the main entry's API (lite's keeper included), the estimate entry only the estimator.
import { countTokens, countMessages, type EncodingName, type MessagesCount } from "context-keeper/o200k";
import * as cl100k from "context-keeper/cl100k";
import * as lite from "context-keeper/lite";
import * as estimator from "context-keeper/estimate";
import { MemoryStore } from "context-keeper/stores";

const encoding: EncodingName = "o200k_base";
const exact: number = countTokens("hello", { encoding });
const gpt4: number = cl100k.countTokens("hello", { model: "gpt-4" });
const counted: MessagesCount = countMessages([{ role: "user", content: "hi" }], { model: "gpt-4o" });
const estimate: number = estimator.estimateTokens("hello");
const estimated: MessagesCount = lite.countMessages([{ role: "user", content: "hi" }], { model: "gpt-4o" });
const keeper: lite.ContextKeeper = new lite.ContextKeeper({ model: "gpt-4o", store: new MemoryStore() });

// @ts-expect-error: only the known encodings are accepted
cl100k.countTokens("hello", { encoding: "p50k_base" });
// @ts-expect-error: the estimate entry has no exact counting
estimator.countTokens("hello");
// @ts-expect-error: nor any conversation function
estimator.countMessages([]);
// @ts-expect-error: text must be a string
estimator.estimateTokens(42);
// @ts-expect-error: nor in lite
lite.estimateTokens(42);
// Every entry exports the one error class, its kinds typed.
try {
  estimator.estimateTokens("hello");
} catch (err) {
  if (err instanceof estimator.ContextKeeperError && err.kind === "options") {
    const path: string | null = err.path;
    void path;
  }
  // @ts-expect-error: not a kind
  if (err instanceof cl100k.ContextKeeperError && err.kind === "range") void err;
}
const kind: estimator.ErrorKind = "encoding";

void [exact, gpt4, counted, estimate, estimated, keeper, kind];
