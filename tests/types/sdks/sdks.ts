// What prepare returns type-checks as the request params of the SDKs users call: OpenAI's
// chat.completions.create and Anthropic's messages.create (the `openai` and
// `@anthropic-ai/sdk` packages' own types), and AI SDK 7's ModelMessage[] and UIMessage[].
import type OpenAI from "openai";
import type Anthropic from "@anthropic-ai/sdk";
import type { ModelMessage, UIMessage, ToolSet } from "ai7";
import { jsonSchema, generateText } from "ai7";
import { recoveryTools } from "context-keeper";
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

// Issue #42, as an adopter writes it under `strict`: the recovery tools spread into each SDK's
// tool list, the usage each SDK reports (optional in OpenAI's types, without an index
// signature in Anthropic's), a summarizer returning OpenAI's `string | null` content, and a
// tool call's name (a string) handed to the handler.
export async function toolsAndUsage(client: OpenAI, claude: Anthropic, history: OpenAI.ChatCompletionMessageParam[]) {
  const { definitions, handle } = keeper.tools({ sessionId: "s" });
  const openaiTools: OpenAI.ChatCompletionTool[] = [...definitions];
  const completion = await client.chat.completions.create({ model: "gpt-4o", messages: history, tools: openaiTools });
  await keeper.recordUsage("s", completion.usage);
  const call = completion.choices[0]?.message.tool_calls?.[0];
  if (call?.type === "function") {
    const text: string = await handle(call.function.name, call.function.arguments);
    void text;
  }

  const anthropicTools: Anthropic.ToolUnion[] = [...keeper.tools({ sessionId: "s", format: "anthropic" }).definitions];
  const reply = await claude.messages.create({ model: "claude-sonnet-4-5", max_tokens: 1024, messages: [], tools: anthropicTools });
  await keeper.recordUsage("s", reply.usage);

  const summarizing = new ContextKeeper({
    model: "gpt-4o",
    store: new MemoryStore(),
    summarize: async ({ prompt, transcript }) => {
      const done = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "system", content: prompt }, { role: "user", content: transcript }] });
      return done.choices[0]?.message.content ?? null;
    },
  });
  summarizing.free();
}

// The AI SDK: with the SDK's own jsonSchema, the recovery tools are a ToolSet, spread beside the
// app's own tools into generateText (issue #42, item 2).
export async function aiSdkTools(model: Parameters<typeof generateText>[0]["model"], mine: ToolSet, messages: ModelMessage[]) {
  const { definitions } = keeper.tools({ sessionId: "s", format: "aisdk", jsonSchema });
  const tools: ToolSet = { ...mine, ...definitions };
  const standalone: ToolSet = recoveryTools("aisdk", { store: new MemoryStore(), sessionId: "s", jsonSchema });
  const described: ToolSet = recoveryTools("aisdk", { jsonSchema });
  const text: string = await definitions.read_offloaded.execute({ id: "x" });
  void [standalone, described, text];
  return generateText({ model, tools, messages });
}
