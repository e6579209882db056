// An app's page as an adopter writes it: the main entry and /lite imported together (two
// .wasm files in one bundle), each counting and running a keeper's prepare.
import * as main from "context-keeper";
import { countTokens, countMessages, ContextKeeper } from "context-keeper";
import * as lite from "context-keeper/lite";
import { MemoryStore } from "context-keeper/stores";

const history = [
  { role: "system", content: "You are a careful assistant." },
  { role: "user", content: "What does the log say?" },
  { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_log", arguments: "{}" } }] },
  { role: "tool", tool_call_id: "c1", content: Array.from({ length: 3000 }, (_, i) => `${i} GET /api/items/${i * 7} 200 ${i % 13}ms`).join("\n") },
];

async function run(entry) {
  const store = new MemoryStore();
  const keeper = new entry.ContextKeeper({ model: "gpt-4o", contextWindow: 16_000, store });
  const { messages, report } = await keeper.prepare(history, { sessionId: "page" });
  return { decision: report.decision, before: report.tokensBefore, after: report.tokensAfter, fits: report.fits, messages: messages.length, stored: report.offloaded.length };
}

try {
  globalThis.result = {
    tokens: countTokens("hello world", { model: "gpt-4o" }),
    // the main entry counts exactly; /lite estimates
    exact: [countMessages, lite.countMessages].map((count) => count([{ role: "user", content: "hello world" }], { model: "gpt-4o" }).exact),
    // what the entries export for callers: not the context driver's own functions
    internal: [main, lite].flatMap((entry) => Object.keys(entry).filter((key) => key.startsWith("__"))),
    main: await run({ ContextKeeper }),
    lite: await run(lite),
  };
} catch (err) {
  globalThis.result = { error: String(err?.stack ?? err) };
}
