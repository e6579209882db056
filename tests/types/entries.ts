// Type-checks the subpath entries as a consumer sees them: the one-encoding entries have the
// main entry's API, the lite entry only the estimator.
import { countTokens, countMessages, type EncodingName, type MessagesCount } from "context-keeper/o200k";
import * as cl100k from "context-keeper/cl100k";
import * as lite from "context-keeper/lite";

const encoding: EncodingName = "o200k_base";
const exact: number = countTokens("hello", { encoding });
const gpt4: number = cl100k.countTokens("hello", { model: "gpt-4" });
const counted: MessagesCount = countMessages([{ role: "user", content: "hi" }], { model: "gpt-4o" });
const estimate: number = lite.estimateTokens("hello");

// @ts-expect-error: only the known encodings are accepted
cl100k.countTokens("hello", { encoding: "p50k_base" });
// @ts-expect-error: the lite entry has no exact counting
lite.countTokens("hello");
// @ts-expect-error: nor any conversation function
lite.countMessages([]);
// @ts-expect-error: text must be a string
lite.estimateTokens(42);
// Every entry exports the one error class, its kinds typed.
try {
  lite.estimateTokens("hello");
} catch (err) {
  if (err instanceof lite.ContextKeeperError && err.kind === "options") {
    const path: string | null = err.path;
    void path;
  }
  // @ts-expect-error: not a kind
  if (err instanceof cl100k.ContextKeeperError && err.kind === "range") void err;
}
const kind: lite.ErrorKind = "encoding";

void [exact, gpt4, counted, estimate, kind];
