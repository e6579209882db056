// detectFormat / validateMessages / repairMessages through the built package, on the golden
// fixtures shared with the Rust tests (tests/data/messages), plus bad input and the AI SDK's own
// validator on AI SDK output.
import { test } from "node:test";
import assert from "node:assert/strict";
import { modelMessageSchema } from "ai";
import { ContextKeeperError, detectFormat, validateMessages, repairMessages, countTokens, countMessages } from "context-keeper";
import { fixtures, optionsOf, withoutProse } from "./fixtures.mjs";

test("there are fixtures in every format", () => {
  const formats = new Set(fixtures.map((f) => f.expected.format));
  assert.deepEqual([...formats].sort(), ["aisdk", "anthropic", "openai"]);
  assert.ok(fixtures.length >= 9);
});

for (const { name, input, expected } of fixtures) {
  test(`fixture ${name}: detection, problems and repair match the golden file`, () => {
    assert.equal(detectFormat(input), expected.detected);
    const options = optionsOf(expected);
    assert.deepEqual(withoutProse(validateMessages(input, options)), withoutProse(expected.problems));
    const before = structuredClone(input);
    const repaired = repairMessages(input, options);
    assert.deepEqual(repaired.messages, expected.repaired);
    assert.equal(repaired.format, expected.format);
    assert.deepEqual(withoutProse(repaired.report), withoutProse(expected.report));
    assert.deepEqual(withoutProse(repaired.unrepaired), withoutProse(expected.unrepaired));
    assert.deepEqual(input, before, "the input must never be mutated");
    for (const problem of repaired.unrepaired) assert.equal(typeof problem.message, "string");
    // Repair output validates, apart from what repair says it left alone.
    assert.deepEqual(
      withoutProse(validateMessages(repaired.messages, options)),
      withoutProse(repaired.unrepaired),
    );
    // A valid conversation comes back as the caller's own array, and unchanged in JSON.
    if (expected.report.length === 0) {
      assert.equal(repaired.messages, input);
      assert.equal(JSON.stringify(repaired.messages), JSON.stringify(before));
    }
  });
}

test("repair says the format it read: its output validates in it though detection names another", () => {
  // proptest's shrunk case (tests/messages_props.rs): the tool messages that made it OpenAI are
  // dropped as orphans; what is left looks like Anthropic, where the bare part has no id
  const input = [
    { role: "assistant", content: [{ type: "tool_use" }] },
    { role: "user", content: "hi" },
    { role: "tool", tool_call_id: "id_0", content: "a" },
  ];
  assert.equal(detectFormat(input), "openai");
  const { messages, format, report } = repairMessages(input);
  assert.equal(format, "openai");
  assert.deepEqual(report.map((r) => r.action), ["dropResult"]);
  assert.equal(detectFormat(messages), "anthropic");
  assert.deepEqual(validateMessages(messages, { format }), []);
  // read by detection, as Anthropic, the bare part is an error
  assert.throws(() => validateMessages(messages), { name: "ContextKeeperError", message: /^messages\[0\]\.content\[0\]\.id: / });
  // nothing to repair: the input itself, and the format it was read in
  const valid = [{ role: "user", content: [{ type: "text", text: "hi" }] }];
  assert.deepEqual(repairMessages(valid, { format: "aisdk" }).format, "aisdk");
  assert.equal(repairMessages(valid).messages, valid);
});

test("AI SDK output passes the ai package's own modelMessageSchema", () => {
  const aisdk = fixtures.filter((f) => f.expected.format === "aisdk");
  assert.ok(aisdk.length >= 2);
  for (const { name, input, expected } of aisdk) {
    const { messages } = repairMessages(input, optionsOf(expected));
    const list = Array.isArray(messages) ? messages : messages.messages;
    for (const [i, message] of list.entries()) {
      // The v4 names (args/result) are older than the schema; only v5+ shapes must pass it.
      const v4 = Array.isArray(message.content) && message.content.some((p) => "args" in p || "result" in p);
      if (v4) continue;
      // A UIMessage (`parts`, no `content`) is what useChat holds, not a ModelMessage.
      if (message.content == null && Array.isArray(message.parts)) continue;
      const parsed = modelMessageSchema.safeParse(message);
      assert.ok(parsed.success, `${name} message ${i}: ${JSON.stringify(parsed.error?.issues?.[0])}`);
    }
  }
});

test("repair adds a stub for a dangling call and drops an orphan result, nothing else", () => {
  const history = [
    { role: "user", content: "list files", custom: { keep: ["me"] } },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "ls", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "call_404", content: "stray" },
    { role: "user", content: "thanks" },
  ];
  const { messages, report } = repairMessages(history);
  assert.ok(report.some((r) => r.action === "dropResult" && r.id === "call_404"));
  assert.ok(report.some((r) => r.action === "addStubResult" && r.id === "call_1"));
  assert.equal(report.length, 2);
  assert.deepEqual(messages[0], history[0], "untouched messages keep unknown fields");
  assert.deepEqual(messages[2], { role: "tool", tool_call_id: "call_1", content: "[no result recorded]" });
  assert.deepEqual(messages[3], history[3]);
  assert.equal(messages.length, 4);
  assert.deepEqual(validateMessages(messages), []);
});

test("pending calls at the very end are allowed only when asked", () => {
  const history = [
    { role: "user", content: "weather?" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: "{}" } }] },
  ];
  assert.deepEqual(validateMessages(history, { allowPendingCalls: true }), []);
  assert.deepEqual(validateMessages(history).map((p) => p.kind), ["missingResult"]);
});

test("the format option wins over detection, and an unknown one is an error naming options.format", () => {
  const plain = [{ role: "user", content: "hi" }];
  assert.strictEqual(detectFormat(plain), null);
  assert.deepEqual(validateMessages(plain, { format: "anthropic" }), []);
  assert.deepEqual(validateMessages(plain, { format: "ai-sdk" }), []);
  assert.throws(() => validateMessages(plain, { format: "gemini" }), (err) => {
    assert.ok(err instanceof ContextKeeperError);
    assert.equal(err.kind, "options");
    assert.equal(err.path, "options.format");
    assert.equal(err.message, 'options.format: unknown format "gemini"; known formats: openai, anthropic, aisdk');
    return true;
  });
});

test("an Anthropic request object keeps its system prompt and other fields", () => {
  const request = {
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "ls", input: {} }] },
    ],
  };
  assert.equal(detectFormat(request), "anthropic");
  const { messages, report } = repairMessages(request);
  assert.deepEqual(report.map((r) => r.action), ["addStubResult"]);
  assert.equal(messages.model, "claude-sonnet-4-5");
  assert.deepEqual(messages.system, request.system);
  assert.deepEqual(messages.messages[2], { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "[no result recorded]" }] });
});

test("bad input is an error of kind \"messages\" naming the message index and field", () => {
  const cases = [
    [42, /^messages: expected an array/],
    [[{ role: "user", content: "ok" }, 7], /^messages\[1\]: expected an object, found a number$/],
    [[{ role: "wizard", content: "x" }], /^messages\[0\]\.role: unknown role "wizard"/],
    [[{ role: "user", content: [{ type: "tool_result", tool_use_id: 5, content: "x" }] }], /^messages\[0\]\.content\[0\]\.tool_use_id: expected a string, found a number$/],
    [[{ role: "assistant", tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }] }], /^messages\[0\]\.tool_calls\[0\]\.id: expected a string, found nothing$/],
  ];
  for (const [input, pattern] of cases) {
    assert.throws(() => validateMessages(input, { format: Array.isArray(input) && input[0]?.content?.[0]?.tool_use_id ? "anthropic" : undefined }), (err) => {
      assert.ok(err instanceof ContextKeeperError, `${err}`);
      assert.equal(err.kind, "messages");
      assert.ok(err.message.startsWith(`${err.path}: `), err.message);
      assert.match(err.message, pattern);
      return true;
    });
  }
  assert.throws(() => repairMessages(undefined), { name: "ContextKeeperError", message: /^messages: expected an array of messages or a request object with a `messages` array, found undefined$/ });
  assert.throws(() => validateMessages([], "openai"), { name: "ContextKeeperError", message: "options: expected an object, found a string" });
  assert.throws(() => validateMessages([], { allowPendingCalls: "yes" }), { name: "ContextKeeperError", message: "options.allowPendingCalls: expected a boolean, found a string" });
});

test("unknown part types pass through untouched", () => {
  const history = [{ role: "user", content: [{ type: "text", text: "see" }, { type: "hologram", data: { x: 1 } }] }];
  assert.deepEqual(validateMessages(history), []);
  assert.equal(repairMessages(history).messages, history);
});

test("hostile input: cycles, BigInt, deep nesting, huge strings, lone surrogates; the instance survives", () => {
  const cyclic = [{ role: "user", content: "x" }];
  cyclic[0].self = cyclic;
  assert.throws(() => validateMessages(cyclic), { name: "ContextKeeperError", message: /^messages\[0\]\.self\[0\]\.self.*: cannot be read as JSON: it is circular/ });
  assert.throws(() => validateMessages([{ role: "user", content: "x", n: 1n }]), { name: "ContextKeeperError", message: "messages[0].n: cannot be read as JSON: a BigInt has no JSON form" });
  const throwing = { role: "user", get content() { throw new Error("boom"); } };
  assert.throws(() => countMessages([{ role: "user", content: "x" }, throwing]), { name: "ContextKeeperError", message: "messages[1].content: cannot be read as JSON: boom" });
  const nested = (depth) => {
    let value = "x";
    for (let i = 0; i < depth; i++) value = [value];
    return [{ role: "user", content: "x", extra: value }];
  };
  // Deeper than serde_json's 128 levels: an error, never a stack overflow inside wasm.
  const tooDeep = /^messages\[0\]\.extra\[0\]\[0\].*: cannot be read as JSON: it nests deeper than 128 levels$/;
  assert.throws(() => validateMessages(nested(200)), { name: "ContextKeeperError", message: tooDeep });
  // Deeper than the JS engine itself can stringify: the same error.
  assert.throws(() => validateMessages(nested(100_000)), { name: "ContextKeeperError", message: tooDeep });
  const big = "a".repeat(32 * 1024 * 1024);
  assert.deepEqual(validateMessages([{ role: "user", content: big }]), []);
  const lone = [{ role: "user", content: "broken \ud800 text" }];
  assert.deepEqual(validateMessages(lone), []);
  assert.equal(repairMessages(lone).messages, lone);
  // Still healthy after all of the above.
  assert.equal(countTokens("hello world"), 2);
  assert.equal(detectFormat([{ role: "tool", tool_call_id: "c", content: "x" }]), "openai");
});

test("what crosses is what the provider would receive: JSON.stringify's reading of the input", () => {
  const sent = new Date(Date.UTC(2026, 10, 22));
  const history = [
    { role: "user", content: "hi", tool_calls: undefined, sent },
    { role: "tool", tool_call_id: "gone", content: "stray" },
  ];
  const { messages, report } = repairMessages(history);
  assert.deepEqual(report.map((r) => r.action), ["dropResult"]);
  // `tool_calls: undefined` did not read as a (null) field that would need repairing.
  assert.equal(messages.length, 1);
  assert.equal(messages[0], history[0], "an untouched message is the caller's own object");
  // A message the repair rewrites is new, made of the JSON reading: the Date is its ISO string.
  const request = { model: "claude-sonnet-4-5", system: "Be brief.", messages: [
    { role: "user", content: [{ type: "text", text: "a", sent }] },
    { role: "user", content: "b" },
  ] };
  const merged = repairMessages(request, { format: "anthropic" });
  assert.deepEqual(merged.report.map((r) => r.action), ["mergeMessages"]);
  assert.notEqual(merged.messages, request, "a new request object...");
  assert.equal(merged.messages.system, request.system, "...keeping its other fields");
  assert.deepEqual(merged.messages.messages, [{ role: "user", content: [
    { type: "text", text: "a", sent: "2026-11-22T00:00:00.000Z" },
    { type: "text", text: "b" },
  ] }]);
  assert.equal(request.messages.length, 2, "the input is not changed");
});

test("a repair gives back the caller's objects for every message it left alone", () => {
  const history = [];
  for (let i = 0; i < 40; i++) {
    history.push({ role: "user", content: `question ${i}` });
    history.push({ role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "f", arguments: "{}" } }] });
    if (i !== 7) history.push({ role: "tool", tool_call_id: `c${i}`, content: `answer ${i}` });
  }
  history.splice(30, 0, { role: "tool", tool_call_id: "nobody", content: "stray" });
  const { messages, report } = repairMessages(history);
  assert.deepEqual(report.map((r) => r.action).sort(), ["addStubResult", "dropResult"]);
  const kept = messages.filter((m) => history.includes(m));
  assert.equal(kept.length, history.length - 1, "all but the dropped message are the same objects");
  assert.equal(messages.length - kept.length, 1, "one new message: the stub result");
  assert.deepEqual(validateMessages(messages), []);
});

