// What prepare returns type-checks as the request params of the SDKs users call: OpenAI's
// chat.completions.create and Anthropic's messages.create (the `openai` and
// `@anthropic-ai/sdk` packages' own types), and AI SDK 7's ModelMessage[] and UIMessage[].
import type OpenAI from "openai";
import type Anthropic from "@anthropic-ai/sdk";
import type { ModelMessage, UIMessage } from "ai7";
import { ContextKeeper } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";

const keeper = new ContextKeeper({ model: "gpt-4o", store: new MemoryStore() });

export async function openai(client: OpenAI, history: OpenAI.ChatCompletionMessageParam[]) {
  const { messages, report } = await keeper.prepare(history, { sessionId: "s" });
  const params: OpenAI.ChatCompletionCreateParamsNonStreaming = { model: "gpt-4o", messages };
  const tokens: number = report.tokensAfter;
  void tokens;
  return client.chat.completions.create(params);
}

export async function anthropic(client: Anthropic, request: Anthropic.MessageCreateParamsNonStreaming) {
  const { messages: prepared } = await keeper.prepare(request, { sessionId: "s" });
  const params: Anthropic.MessageCreateParamsNonStreaming = prepared;
  // @ts-expect-error an Anthropic request is not OpenAI's messages
  const wrong: OpenAI.ChatCompletionMessageParam[] = prepared;
  void wrong;
  return client.messages.create(params);
}

export async function aiSdk(history: ModelMessage[], chat: UIMessage[]) {
  const step: ModelMessage[] = (await keeper.prepare(history, { sessionId: "s" })).messages;
  const ui: UIMessage[] = (await keeper.prepare(chat, { sessionId: "t" })).messages;
  return [step, ui];
}
