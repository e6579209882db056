// The ContextKeeper with the SDKs users already have, against the real packages, no network:
// - the Vercel AI SDK, its current major (`ai` 7, installed as `ai7`; the workspace's `ai` is 5,
//   whose schemas the message tests use): `prepareStep` of `generateText` over a multi-step tool
//   loop with `ai/test`'s mock model, and a `useChat` UIMessage history checked by the SDK's own
//   `validateUIMessages`;
// - the OpenAI and Anthropic SDK request shapes are checked by tsc (tests/types/sdks.ts); here
//   their output passes our validator and the SDKs' clients accept it (a fetch that records the
//   request instead of sending it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateText, jsonSchema, modelMessageSchema, stepCountIs, tool, validateUIMessages } from "ai7";
import { MockLanguageModelV4 } from "ai7/test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { ContextKeeper, countMessages, validateMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";

const USAGE = { inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 10, text: 10, reasoning: 0 } };

/** A file listing of `lines` lines: what the mock's `bash` tool returns. */
const listing = (step, lines) => Array.from({ length: lines }, (_, i) => `src/module_${step}/file_${i}.ts: export const value${i} = compute(${i}); // ${"x".repeat(24)}`).join("\n");

test("AI SDK 7: prepareStep keeps a multi-step tool loop inside the window, and what it returns is valid ModelMessage[]", async () => {
  const STEPS = 14;
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 12_000, store });
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const step = model.doGenerateCalls.length - 1;
      void prompt;
      if (step >= STEPS) return { content: [{ type: "text", text: "All files read." }], finishReason: { unified: "stop", raw: "stop" }, usage: USAGE, warnings: [] };
      return {
        content: [{ type: "tool-call", toolCallId: `call_${step}`, toolName: "bash", input: JSON.stringify({ command: `ls -R src/module_${step}` }) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage: USAGE,
        warnings: [],
      };
    },
  });
  const reports = [];
  const returned = [];
  const result = await generateText({
    model,
    system: "You are a coding agent.",
    messages: [{ role: "user", content: "List every module." }],
    tools: {
      bash: tool({
        description: "Run a shell command",
        inputSchema: jsonSchema({ type: "object", properties: { command: { type: "string" } }, required: ["command"] }),
        // every third listing is long (over the keeper's offload limit for a 12k window)
        execute: async (_input, { toolCallId }) => listing(toolCallId, Number(toolCallId.slice(5)) % 3 === 2 ? 400 : 40),
      }),
    },
    stopWhen: stepCountIs(STEPS + 1),
    prepareStep: async ({ messages }) => {
      const { messages: out, report } = await keeper.prepare(messages, { sessionId: "ai7" });
      reports.push(report);
      returned.push(out);
      return { messages: out };
    },
  });
  assert.equal(result.text, "All files read.");
  assert.equal(model.doGenerateCalls.length, STEPS + 1);
  for (const [i, out] of returned.entries()) {
    // the SDK's own schema and our validator accept every returned list
    for (const [j, message] of out.entries()) {
      const parsed = modelMessageSchema.safeParse(message);
      assert.ok(parsed.success, `step ${i} message ${j}: ${parsed.error?.message}`);
    }
    assert.deepEqual(validateMessages(out), [], `step ${i}`);
    assert.equal(reports[i].fits, true, `step ${i}: ${reports[i].overBudget}`);
    assert.equal(countMessages(out, { model: "gpt-4o" }).total, reports[i].tokensAfter);
  }
  assert.ok(reports.some((r) => r.offloaded.length > 0), "the long listings were offloaded");
  assert.ok(reports.some((r) => r.decision === "pruned" || r.decision === "cleared" || r.decision === "compacted"), JSON.stringify(reports.map((r) => r.decision)));
  // what the model was sent at the last step carries the pointers, not the long listings
  const lastPrompt = JSON.stringify(model.doGenerateCalls.at(-1).prompt);
  assert.match(lastPrompt, /\[offloaded tool output id=/);
  assert.ok(lastPrompt.length < 12_000 * 6, `${lastPrompt.length} characters sent`);
  // the usage the SDK reports goes into the session's figures
  const usage = await keeper.recordUsage("ai7", result.totalUsage);
  assert.equal(usage.inputTokens, result.totalUsage.inputTokens);
  assert.equal(usage.calls, 1);
  keeper.free();
});

test("AI SDK 7: a useChat UIMessage[] history comes back valid by the SDK's validateUIMessages", async () => {
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 8_000, store: new MemoryStore() });
  const messages = [{ id: "u1", role: "user", parts: [{ type: "text", text: "Read the modules." }] }];
  const parts = [];
  for (let step = 0; step < 10; step++) {
    parts.push({ type: "step-start" });
    parts.push({ type: "tool-bash", toolCallId: `call_${step}`, state: "output-available", input: { command: `ls src/module_${step}` }, output: listing(step, step % 3 === 2 ? 300 : 40) });
  }
  parts.push({ type: "step-start" }, { type: "text", text: "Done.", state: "done" });
  messages.push({ id: "a1", role: "assistant", parts });
  messages.push({ id: "u2", role: "user", parts: [{ type: "text", text: "Thanks. Now the tests." }] });
  const { messages: out, report } = await keeper.prepare(messages, { sessionId: "ui" });
  assert.equal(report.fits, true, report.overBudget);
  assert.ok(report.tokensAfter < report.tokensBefore);
  assert.deepEqual(validateMessages(out), []);
  const checked = await validateUIMessages({ messages: out });
  assert.equal(checked.length, out.length);
  assert.equal(out.at(-1), messages.at(-1), "the new request is the caller's own object");
  keeper.free();
});

/** A fetch that records each request body and answers as the provider would, without a network. */
function recordingFetch(bodies, answer) {
  return async (url, init) => {
    bodies.push(JSON.parse(init.body));
    return new Response(JSON.stringify(answer), { status: 200, headers: { "content-type": "application/json" } });
  };
}

/** An agent history in OpenAI's shape: `turns` calls with results of `lines` lines each. */
function openaiHistory(turns, lines) {
  const history = [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "List every module." }];
  for (let t = 0; t < turns; t++) {
    history.push({ role: "assistant", content: null, tool_calls: [{ id: `call_${t}`, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `ls src/module_${t}` }) } }] });
    history.push({ role: "tool", tool_call_id: `call_${t}`, content: listing(t, lines) });
  }
  return history;
}

test("OpenAI SDK: the prepared messages go out through chat.completions.create as they are", async () => {
  const bodies = [];
  const client = new OpenAI({ apiKey: "test", fetch: recordingFetch(bodies, { id: "c1", object: "chat.completion", created: 0, model: "gpt-4o", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "ok", refusal: null } }], usage: { prompt_tokens: 9_000, completion_tokens: 2, total_tokens: 9_002 } }) });
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 10_000, store: new MemoryStore() });
  const history = openaiHistory(12, 60);
  const { messages, report } = await keeper.prepare(history, { sessionId: "openai" });
  assert.equal(report.fits, true);
  const completion = await client.chat.completions.create({ model: "gpt-4o", messages });
  assert.deepEqual(bodies[0].messages, JSON.parse(JSON.stringify(messages)), "sent as prepared");
  assert.deepEqual(validateMessages(bodies[0].messages), []);
  const usage = await keeper.recordUsage("openai", completion.usage);
  assert.equal(usage.inputTokens, 9_000);
  keeper.free();
});

test("Anthropic SDK: a prepared request with cache breakpoints goes out through messages.create as it is", async () => {
  const bodies = [];
  const client = new Anthropic({ apiKey: "test", fetch: recordingFetch(bodies, { id: "m1", type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 9_000, output_tokens: 2, cache_read_input_tokens: 8_000, cache_creation_input_tokens: 0 } }) });
  const keeper = new ContextKeeper({ model: "claude-sonnet-4-5", contextWindow: 12_000, store: new MemoryStore(), cacheBreakpoints: true });
  const messages = [{ role: "user", content: "List every module." }];
  for (let t = 0; t < 12; t++) {
    messages.push({ role: "assistant", content: [{ type: "tool_use", id: `toolu_${t}`, name: "bash", input: { command: `ls src/module_${t}` } }] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${t}`, content: listing(t, 60) }] });
  }
  const request = { model: "claude-sonnet-4-5", max_tokens: 1_024, system: "You are a coding agent.", messages };
  const { messages: prepared, report } = await keeper.prepare(request, { sessionId: "anthropic" });
  assert.equal(report.fits, true);
  assert.ok(report.breakpoints.length >= 1 && report.breakpoints.length <= 4, JSON.stringify(report.breakpoints));
  const reply = await client.messages.create(prepared);
  assert.equal(reply.content[0].text, "ok");
  assert.deepEqual(bodies[0], JSON.parse(JSON.stringify(prepared)), "sent as prepared");
  assert.ok(JSON.stringify(bodies[0]).includes('"cache_control":{"type":"ephemeral"}'));
  assert.deepEqual(validateMessages(bodies[0]), []);
  const usage = await keeper.recordUsage("anthropic", reply.usage);
  assert.equal(usage.cacheReadTokens, 8_000);
  keeper.free();
});

test("AI SDK 7: the recovery tools, made with the SDK's jsonSchema, read an offloaded result back inside generateText", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 8_000, store });
  const log = Array.from({ length: 3_000 }, (_, i) => `line ${i}: worker ${i % 7} status=ok`).join("\n");
  const { offloaded } = await keeper.processToolResult(log, { sessionId: "tools", toolName: "bash", toolCallId: "c0" });
  assert.ok(offloaded, "the log is over the offload limit of an 8k window");
  const { definitions } = keeper.tools({ sessionId: "tools", format: "aisdk", jsonSchema });
  // the SDK's own schema objects, as its jsonSchema makes them
  assert.deepEqual(Object.keys(definitions).sort(), ["grep_offloaded", "list_offloaded", "read_offloaded"]);
  assert.equal(definitions.read_offloaded.inputSchema.jsonSchema.type, "object");
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      if (model.doGenerateCalls.length === 1) {
        return {
          content: [{ type: "tool-call", toolCallId: "r1", toolName: "read_offloaded", input: JSON.stringify({ id: offloaded.id, offset: 2999 }) }],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage: USAGE,
          warnings: [],
        };
      }
      return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "stop" }, usage: USAGE, warnings: [] };
    },
  });
  const result = await generateText({ model, prompt: "What does the log end with?", tools: { ...definitions }, stopWhen: stepCountIs(3) });
  const [read] = result.steps[0].toolResults;
  assert.equal(read.toolName, "read_offloaded");
  // (lines are numbered from 1)
  assert.match(read.output, /3000\tline 2999: worker 3 status=ok\n\[lines 2999-3000 of 3,000 of c0-[0-9a-f]{16}; end of output\]/);
  assert.equal(result.text, "done");
  keeper.free();
});
