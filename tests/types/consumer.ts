// Type-checks the package as a consumer sees it (`tsc -p tests/types`): the types that ship must
// accept correct calls and reject wrong ones.
import {
  countTokens, estimateTokens, detectFormat, validateMessages, repairMessages,
  type CountOptions, type EncodingName, type MessageFormat, type Problem, type Repaired,
} from "context-keeper";
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

type Chat = { role: "user" | "assistant"; content: string }[];
const chat: Chat = [{ role: "user", content: "hi" }];
const format: MessageFormat | null = detectFormat(chat);
const problems: Problem[] = validateMessages(chat, { format: "openai", allowPendingCalls: true });
const repaired: Repaired<Chat> = repairMessages(chat);
const again: Chat = repaired.messages; // the caller's own type comes back
const anthropic = repairMessages({ system: "Be brief.", messages: chat });
const system: string = anthropic.messages.system;
// @ts-expect-error: not a known format
validateMessages(chat, { format: "gemini" });
// @ts-expect-error: a string is not a conversation
repairMessages("hello");

async function slim(wasm: ArrayBuffer): Promise<number> {
  await init({ module_or_path: wasm });
  return countAfterInit("hello");
}
void initSync;
void [exact, byDefault, estimate, slim, format, problems, again, system];

// Counting conversations: countMessages, isWithinLimit, modelInfo, calibrate.
import {
  calibrate,
  clearCalibration,
  clearCountCache,
  countMessages,
  isWithinLimit,
  listModels,
  modelInfo,
  type Calibration,
  type CountMessagesOptions,
  type MessagesCount,
  type ModelEntries,
  type ModelInfo,
} from "context-keeper";

const history = [{ role: "user", content: "hello" }];
const models: ModelEntries = { "my-llm": { contextWindow: 32_000, encoding: "cl100k_base", framing: { perMessage: 4 } } };
const countOptions: CountMessagesOptions = { model: "my-llm", models, tools: [], format: "ai-sdk" };
const forced: CountMessagesOptions = { tools: { weather: { description: "d" } }, toolChoice: { type: "tool", toolName: "weather" } };
countMessages(history, { ...forced, toolChoice: "required" });
const counted: MessagesCount = countMessages(history, countOptions);
const images: number = counted.byKind.images;
const userTokens: number | undefined = counted.byRole.user;
const fits: number | false = isWithinLimit({ messages: history }, 1_000);
const info: ModelInfo = modelInfo("gpt-4o", { models });
const contextWindow: number = info.contextWindow;
const listed: ModelInfo[] = listModels({ models });
const listedWindows: number[] = listModels().map((m) => m.contextWindow);
const source: string | null = info.source;
const checked: string | null = info.checked;
const calibration: Calibration = calibrate({ model: "claude-sonnet-4-5", inputTokens: 120, messages: history });
clearCountCache();
clearCalibration();

// @ts-expect-error: the limit is a number of tokens
isWithinLimit(history, "1000");
// @ts-expect-error: only the known encodings are accepted in a model entry
modelInfo("x", { models: { x: { encoding: "p50k_base" } } });
// @ts-expect-error: a tool choice is one of the known names or an object with a type
countMessages(history, { toolChoice: "sometimes" });
// @ts-expect-error: calibrate needs the reported input tokens
calibrate({ model: "claude-sonnet-4-5" });
// @ts-expect-error: an unknown model has no source, so it may be null
const sourceUrl: string = info.source;
void [counted, images, userTokens, fits, contextWindow, source, checked, sourceUrl, calibration];
