// The context layer's tiers through the built package in Node: offload (with every store
// failure FaultyStore can inject), prune, evict, the recovery functions and tools, the one
// error class, and the AI SDK's own tool loop running our recovery tools.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ContextKeeperError,
  pruneMessages,
  evictToolInputs,
  offloadToolResult,
  offloadMessages,
  readOffloaded,
  listOffloaded,
  grepOffloaded,
  recoveryTools,
  runRecoveryTool,
  validateMessages,
  countTokens,
} from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";

const lines = (n, width = 60) => Array.from({ length: n }, (_, i) => `line ${i + 1}: ${"abcdefghij ".repeat(width / 10)}`).join("\n") + "\n";

/** An OpenAI agent run: one bash call per turn, each result `size` lines. */
function agent(turns, size) {
  const messages = [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "fix the bug" }];
  for (let t = 0; t < turns; t++) {
    const id = `call_${t}`;
    messages.push({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat file${t}.py` }) } }] });
    messages.push({ role: "tool", tool_call_id: id, content: lines(size) });
  }
  messages.push({ role: "user", content: "go on" });
  return messages;
}

const frozen = (value) => JSON.stringify(value);

test("pruneMessages trims old results, keeps the caller's objects and is idempotent", () => {
  const history = agent(14, 150);
  const before = frozen(history);
  const { messages, report } = pruneMessages(history);
  assert.equal(frozen(history), before, "the input is not mutated");
  assert.equal(messages.length, history.length);
  const edited = new Set(report.edits.map((e) => e.messageIndex));
  for (let i = 0; i < history.length; i++) {
    if (!edited.has(i)) assert.equal(messages[i], history[i], `message ${i} is the caller's own object`);
    else assert.notEqual(messages[i], history[i]);
  }
  const actions = report.edits.map((e) => e.action);
  assert.equal(actions.filter((a) => a === "hardClear").length, 4);
  assert.equal(actions.filter((a) => a === "softTrim").length, 7);
  const trimmed = report.edits.find((e) => e.action === "softTrim");
  assert.equal(trimmed.toolName, "bash");
  assert.match(trimmed.toolCallId, /^call_\d+$/);
  assert.ok(trimmed.tokensAfter < trimmed.tokensBefore);
  assert.deepEqual(trimmed.original, { kind: "history" });
  assert.equal(trimmed.estimated, true, "no model named: estimated");
  assert.equal(pruneMessages(history, { model: "gpt-4o" }).report.edits[0].estimated, false);
  assert.deepEqual(validateMessages(messages), []);
  const again = pruneMessages(messages);
  assert.equal(again.report.edits.length, 0);
  assert.equal(again.messages, messages, "nothing to do: the same array back");
  assert.ok(report.tokensSaved > 10_000);
});

test("pruneMessages holds back below clearAtLeastTokens and honours deny lists", () => {
  const history = agent(6, 150);
  const held = pruneMessages(history, { clearAtLeastTokens: 10_000_000 });
  assert.equal(held.messages, history);
  assert.ok(held.report.held.wouldSave > 0);
  assert.equal(pruneMessages(history, { tools: { deny: ["ba*"] } }).report.edits.length, 0);
});

test("pruneMessages never trims a tool result's images (Anthropic) nor thinking", () => {
  const history = [{ role: "user", content: "look" }];
  for (let t = 0; t < 5; t++) {
    history.push({ role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "c2ln" }, { type: "tool_use", id: `t${t}`, name: "screenshot", input: {} }] });
    history.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${t}`, content: [{ type: "text", text: lines(200) }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }] });
  }
  const { messages, report } = pruneMessages(history, { format: "anthropic" });
  assert.equal(report.edits.length, 2);
  const result = messages[2].content[0].content;
  assert.equal(result[1].type, "image");
  assert.match(result[0].text, /\[\.\.\. trimmed /);
  for (let i = 1; i < messages.length; i += 2) assert.equal(messages[i], history[i]);
});

test("evictToolInputs points file writes at their path", () => {
  const content = lines(300);
  const history = [{ role: "user", content: "write them" }];
  for (let t = 0; t < 3; t++) {
    history.push({ role: "assistant", content: [{ type: "tool-call", toolCallId: `w${t}`, toolName: "write_file", input: { path: `src/f${t}.ts`, content } }] });
    history.push({ role: "tool", content: [{ type: "tool-result", toolCallId: `w${t}`, toolName: "write_file", output: { type: "text", value: "ok" } }] });
  }
  const { messages, report } = evictToolInputs(history);
  assert.equal(report.edits.length, 2);
  assert.deepEqual(report.edits[0].original, { kind: "file", path: "src/f0.ts" });
  assert.equal(report.edits[0].field, "content");
  assert.match(messages[1].content[0].input.content, /^\[context-keeper evicted content: .* written to src\/f0\.ts/);
  assert.equal(messages[1].content[0].input.path, "src/f0.ts");
  assert.equal(messages[5], history[5], "the latest turn stays");
  assert.equal(evictToolInputs(messages).report.edits.length, 0);
});

test("offloadToolResult round-trips a 2 MB result through the recovery handler", async () => {
  const store = new MemoryStore();
  const sessionId = "s-2mb";
  const output = lines(30_000, 60); // about 2 MB
  assert.ok(output.length > 2_000_000);
  const { content, offloaded, failure } = await offloadToolResult(output, { store, sessionId, toolName: "bash", toolCallId: "call_big" });
  assert.equal(failure, undefined);
  assert.equal(offloaded.lines, 30_000);
  assert.equal(offloaded.bytes, output.length);
  assert.deepEqual(offloaded.key.slice(0, 3), ["context-keeper", sessionId, "offload"]);
  assert.ok(countTokens(content) < 2_000, "the pointer is small");
  assert.match(content, /^\[offloaded tool output id="call_big-[0-9a-f]{16}"/);
  assert.ok(content.includes("line 1: ") && content.includes("line 30000: "));
  // Page through it all with the handler, as a model would.
  let offset = 1;
  const back = [];
  for (;;) {
    const text = await runRecoveryTool("read_offloaded", JSON.stringify({ id: offloaded.id, offset, limit: 2000 }), { store, sessionId });
    const body = text.split("\n").filter((l) => /^\s*\d+\t/.test(l)).map((l) => l.replace(/^\s*\d+\t/, ""));
    back.push(...body);
    const next = text.match(/continue with offset (\d+)/);
    if (!next) break;
    offset = Number(next[1]);
  }
  assert.equal(back.length, 30_000);
  assert.equal(back.join("\n") + "\n", output, "every line, whole (none reaches the 300-character cap)");
  const read = await readOffloaded(offloaded.id, { store, sessionId, offset: 29_999 });
  assert.equal(read.lines, 2);
  assert.equal(read.nextOffset, null);
  const listed = await listOffloaded({ store, sessionId });
  assert.equal(listed.offloads.length, 1);
  assert.equal(listed.offloads[0].toolName, "bash");
  const grep = await grepOffloaded("^line 2999[0-9]:", { store, sessionId });
  assert.deepEqual(grep.matches.map((m) => m.line), [29990, 29991, 29992, 29993, 29994, 29995, 29996, 29997, 29998, 29999]);
  // The same result offloads to the same key (content-derived).
  const again = await offloadToolResult(output, { store, sessionId, toolName: "bash", toolCallId: "call_big" });
  assert.equal(again.offloaded.id, offloaded.id);
});

test("a result under the limit, or of an excluded tool, comes back as the caller's value", async () => {
  const store = new MemoryStore();
  const small = [{ type: "text", text: "ok" }];
  const kept = await offloadToolResult(small, { store, sessionId: "s", toolName: "bash" });
  assert.equal(kept.content, small);
  assert.equal(kept.offloaded, null);
  const big = lines(5_000);
  const excluded = await offloadToolResult(big, { store, sessionId: "s", toolName: "read_offloaded" });
  assert.equal(excluded.content, big);
  assert.equal((await store.loadRange(["context-keeper"])).length, 0);
});

for (const fault of ["throw", "reject", "hang", "quota", "half"]) {
  test(`a save that fails with "${fault}" leaves the result and reports it; a later call stores it`, async () => {
    const inner = new MemoryStore();
    const store = new FaultyStore(inner, [{ op: "save", fault, times: 1 }]);
    const output = lines(5_000);
    const blocks = [{ type: "text", text: output }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }];
    const first = await offloadToolResult(blocks, { store, sessionId: "s", toolName: "bash", toolCallId: "c1", timeoutMs: 100 });
    assert.equal(first.content, blocks, "the caller's own value, untouched");
    assert.equal(first.offloaded, null);
    assert.equal(typeof first.failure, "string");
    if (fault === "hang") assert.match(first.failure, /timed out after 100 ms/);
    const second = await offloadToolResult(blocks, { store, sessionId: "s", toolName: "bash", toolCallId: "c1", timeoutMs: 100 });
    assert.equal(second.failure, undefined);
    assert.equal(second.content[1].type, "image", "the image stays beside the pointer");
    const read = await readOffloaded(second.offloaded.id, { store: inner, sessionId: "s", limit: 2000 });
    assert.equal(read.totalLines, 5_000);
  });
}

test("offloadMessages replaces only confirmed saves and keeps the caller's objects", async () => {
  const history = agent(4, 3_000);
  const before = frozen(history);
  const store = new FaultyStore(new MemoryStore(), [{ op: "save", fault: "reject", nth: 2 }]);
  const { messages, report } = await offloadMessages(history, { store, sessionId: "s", limitTokens: 5_000 });
  assert.equal(frozen(history), before);
  assert.equal(report.edits.length, 3);
  assert.equal(report.failures.length, 1);
  assert.equal(report.failures[0].toolCallId, "call_1");
  assert.match(report.failures[0].reason, /injected/);
  assert.equal(messages[5], history[5], "the failed one is the caller's object");
  assert.equal(messages[0], history[0]);
  assert.match(messages[3].content, /^\[offloaded tool output id="call_0-/);
  assert.deepEqual(validateMessages(messages), []);
  // The next call stores what failed.
  const retry = await offloadMessages(messages, { store, sessionId: "s", limitTokens: 5_000 });
  assert.equal(retry.report.edits.length, 1);
  assert.equal(retry.report.edits[0].messageIndex, 5);
});

test("errors are ContextKeeperErrors with kind and path", async () => {
  const expectError = (fn, kind, path) => {
    try {
      fn();
    } catch (error) {
      assert.ok(error instanceof ContextKeeperError, `${error}`);
      assert.ok(error instanceof Error);
      assert.equal(error.kind, kind, error.message);
      if (path !== undefined) assert.equal(error.path, path, error.message);
      return error;
    }
    assert.fail("no error");
  };
  expectError(() => pruneMessages(agent(1, 1), { keepLastTurns: 3 }), "options", "options.keepLastTurns");
  const nan = expectError(() => pruneMessages(agent(1, 1), { softTrimChars: NaN }), "options", "options.softTrimChars");
  assert.match(nan.message, /options\.softTrimChars/);
  expectError(() => pruneMessages(agent(1, 1), { softTrimChars: -1 }), "options", "options.softTrimChars");
  expectError(() => pruneMessages(agent(1, 1), { tools: { allow: [1] } }), "options", "options.tools.allow[0]");
  expectError(() => pruneMessages(agent(1, 1), { format: "gemini" }), "options", "options.format");
  expectError(() => pruneMessages([{ role: "user", content: 5 }]), "messages", "messages[0].content");
  expectError(() => pruneMessages(42), "messages", "messages");
  expectError(() => evictToolInputs(agent(1, 1), "yes"), "options", "options");
  await assert.rejects(offloadToolResult("x", { sessionId: "s" }), (e) => e instanceof ContextKeeperError && e.path === "options.store");
  await assert.rejects(offloadToolResult("x", { store: new MemoryStore() }), (e) => e.kind === "options" && e.path === "options.sessionId");
  await assert.rejects(offloadToolResult("x", { store: new MemoryStore(), sessionId: "s", timeoutMs: -5 }), (e) => e.path === "options.timeoutMs");
  await assert.rejects(readOffloaded("nope", { store: new MemoryStore(), sessionId: "s" }), (e) => e.kind === "notFound");
  await assert.rejects(grepOffloaded("(", { store: new MemoryStore(), sessionId: "s" }), (e) => e.kind === "pattern");
  // The instance keeps working after errors.
  assert.equal(pruneMessages(agent(1, 1)).report.edits.length, 0);
  // __proto__ in options changes no prototype.
  expectError(() => pruneMessages(agent(1, 1), JSON.parse('{"__proto__": {"polluted": true}}')), "options");
  assert.equal({}.polluted, undefined);
});

test("a damaged record is reported as corrupt, never shown as the output", async () => {
  const inner = new MemoryStore();
  const { offloaded } = await offloadToolResult(lines(5_000), { store: inner, sessionId: "s", toolCallId: "c" });
  const garbling = new FaultyStore(inner, [{ op: "load", fault: "garbage" }]);
  await assert.rejects(readOffloaded(offloaded.id, { store: garbling, sessionId: "s" }), (e) => e.kind === "corrupt");
  const text = await runRecoveryTool("read_offloaded", { id: offloaded.id }, { store: garbling, sessionId: "s" });
  assert.match(text, /^Error: .*damaged/);
  const failing = new FaultyStore(inner, [{ op: "load", fault: "reject" }]);
  await assert.rejects(runRecoveryTool("read_offloaded", { id: offloaded.id }, { store: failing, sessionId: "s" }), (e) => e.kind === "store");
});

test("a model-written pattern that backtracks exponentially elsewhere returns at once", async () => {
  const store = new MemoryStore();
  await offloadToolResult("a".repeat(200_000) + "!\n" + lines(2_000), { store, sessionId: "s", toolCallId: "c" });
  const started = performance.now();
  const found = await grepOffloaded("(a+)+$", { store, sessionId: "s" });
  assert.equal(found.matches.length, 0);
  assert.ok(performance.now() - started < 2_000);
  assert.match(await runRecoveryTool("grep_offloaded", { pattern: "[" }, { store, sessionId: "s" }), /^Error: invalid pattern/);
  assert.match(await runRecoveryTool("grep_offloaded", "{not json", { store, sessionId: "s" }), /^Error: the arguments are not JSON/);
  await assert.rejects(runRecoveryTool("rm_rf", {}, { store, sessionId: "s" }), (e) => e.kind === "options" && e.path === "name");
});

test("a store that calls back into the package while a save runs", async () => {
  const inner = new MemoryStore();
  const reentrant = {
    load: (k) => inner.load(k),
    loadRange: (p) => inner.loadRange(p),
    remove: (k) => inner.remove(k),
    removeRange: (p) => inner.removeRange(p),
    async save(key, data) {
      // A callback that re-enters the package mid-offload must not trip a borrow or a lock.
      pruneMessages(agent(5, 100));
      await offloadToolResult(lines(4_000), { store: inner, sessionId: "other", toolCallId: "nested" });
      return inner.save(key, data);
    },
  };
  const { report } = await offloadMessages(agent(2, 3_000), { store: reentrant, sessionId: "s", limitTokens: 5_000 });
  assert.equal(report.edits.length, 2);
  assert.equal((await listOffloaded({ store: inner, sessionId: "other" })).offloads.length, 1);
});

test("recovery tool definitions in every shape, and the AI SDK runs them in its own loop", async () => {
  const openai = recoveryTools("openai");
  assert.deepEqual(openai.map((t) => t.function.name), ["read_offloaded", "list_offloaded", "grep_offloaded"]);
  assert.equal(openai[0].function.parameters.required[0], "id");
  const anthropic = recoveryTools("anthropic");
  assert.equal(anthropic[2].input_schema.properties.pattern.type, "string");
  const store = new MemoryStore();
  const sessionId = "s-ai";
  const { offloaded } = await offloadToolResult(lines(5_000), { store, sessionId, toolCallId: "c9" });
  const { generateText, stepCountIs } = await import("ai");
  const { MockLanguageModelV2 } = await import("ai/test");
  let step = 0;
  const model = new MockLanguageModelV2({
    doGenerate: async () => {
      step++;
      if (step === 1) {
        return {
          content: [{ type: "tool-call", toolCallId: "r1", toolName: "read_offloaded", input: JSON.stringify({ id: offloaded.id, offset: 4999 }) }],
          finishReason: "tool-calls",
          usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
          warnings: [],
        };
      }
      return { content: [{ type: "text", text: "done" }], finishReason: "stop", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, warnings: [] };
    },
  });
  const result = await generateText({ model, prompt: "read it", tools: recoveryTools("aisdk", { store, sessionId }), stopWhen: stepCountIs(3) });
  const toolResult = result.steps[0].toolResults[0];
  assert.equal(toolResult.toolName, "read_offloaded");
  assert.match(toolResult.output, /  4999\tline 4999: /);
  assert.match(toolResult.output, /end of output/);
});
