// validateMessages and detectFormat read long texts only in part (src/messages/skim.rs): they
// must answer for long texts exactly as for the whole ones, and name the place of bad input
// inside them as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ContextKeeperError, detectFormat, validateMessages, repairMessages } from "context-keeper";
import { fixtures, optionsOf, withoutProse } from "./fixtures.mjs";

/** `value` with every string made long: blank ones stay blank, the others stay not blank. */
function lengthen(value, front) {
  if (typeof value === "string") {
    const pad = value.trim() === "" ? " \n\t".repeat(100) : "x é 🦀 ".repeat(60);
    return front ? pad + value : value + pad;
  }
  if (Array.isArray(value)) return value.map((v) => lengthen(v, front));
  if (value && typeof value === "object") {
    // NOTE: ids, names, roles and types are what the checks compare: they stay as they are.
    const keep = new Set(["role", "type", "id", "tool_call_id", "tool_use_id", "toolCallId", "name", "toolName"]);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, keep.has(k) ? v : lengthen(v, front)]));
  }
  return value;
}

for (const { name, input, expected } of fixtures) {
  test(`fixture ${name} with long texts: the same problems and format`, () => {
    for (const front of [false, true]) {
      const long = lengthen(input, front);
      const options = optionsOf(expected);
      assert.equal(detectFormat(long), expected.detected);
      assert.deepEqual(withoutProse(validateMessages(long, options)), withoutProse(expected.problems));
      // repairMessages reads the whole texts and finds the same problems to fix.
      assert.equal(repairMessages(long, options).report.length, expected.report.length);
    }
  });
}

test("a long text that starts blank is read whole", () => {
  const blank = " ".repeat(500);
  const late = " ".repeat(300) + "x";
  const problems = (text) =>
    validateMessages([{ role: "user", content: [{ type: "text", text }] }], { format: "anthropic" }).map((p) => p.kind);
  assert.deepEqual(problems(blank), ["emptyContent"]);
  assert.deepEqual(problems(late), []);
});

test("bad input inside long texts is named as before", () => {
  const long = "y".repeat(1000);
  assert.throws(
    () => validateMessages([{ role: "user", content: long, extra: { n: 1n } }]),
    { name: "ContextKeeperError", message: "messages[0].extra.n: cannot be read as JSON: a BigInt has no JSON form" },
  );
  assert.throws(
    () => validateMessages([{ role: "user", content: { toJSON() { throw new Error("boom"); } } }]),
    { name: "ContextKeeperError", message: "messages[0].content: cannot be read as JSON: boom" },
  );
  assert.throws(
    () => validateMessages([{ role: "tool", tool_call_id: 7, content: long }]),
    { name: "ContextKeeperError", message: "messages[0].tool_call_id: expected a string, found a number" },
  );
  // A long role is quoted whole.
  const role = "r".repeat(300);
  assert.throws(() => validateMessages([{ role, content: long }]), (err) => err instanceof ContextKeeperError && err.message.includes(role));
});

test("long ids are compared whole", () => {
  const id = (tail) => "call_" + "0".repeat(400) + tail;
  const messages = [
    { role: "user", content: "go" },
    { role: "assistant", content: null, tool_calls: [{ id: id("a"), type: "function", function: { name: "f", arguments: "{}" } }] },
    { role: "tool", tool_call_id: id("b"), content: "z".repeat(400) },
  ];
  const kinds = validateMessages(messages).map((p) => [p.kind, p.id]);
  assert.deepEqual(kinds, [["missingResult", id("a")], ["orphanResult", id("b")]]);
});

// repairMessages reads skimmed too, then reads again whole the messages it edits: what it writes
// back must be the whole texts, never their skimmed starts.
const longText = (tag) => `${tag}: ` + "long text é 🦀 ".repeat(400);

test("a repair writes back whole texts in the messages it edits (anthropic)", () => {
  const text = longText("kept");
  const result = longText("moved");
  const history = {
    system: longText("system"),
    messages: [
      { role: "user", content: longText("first") },
      { role: "assistant", content: [{ type: "text", text: longText("call") }, { type: "tool_use", id: "t1", name: "f", input: { path: longText("input") } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "nobody", content: longText("stray") }, { type: "text", text }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "g", input: {} }] },
      { role: "user", content: [{ type: "text", text: longText("between") }] },
      { role: "assistant", content: "ok" },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: result }, { type: "text", text: "late" }] },
    ],
  };
  const { messages, report } = repairMessages(history);
  assert.deepEqual(report.map((r) => r.action), ["dropResult", "moveResult", "addStubResult", "reorderToolResults"].filter((a) => report.some((r) => r.action === a)));
  assert.ok(report.some((r) => r.action === "dropResult") && report.some((r) => r.action === "moveResult"));
  assert.equal(messages.system, history.system);
  assert.equal(messages.messages[0], history.messages[0], "untouched: the caller's object");
  assert.equal(messages.messages[1], history.messages[1], "untouched: the caller's object");
  const edited = messages.messages[2];
  assert.notEqual(edited, history.messages[2]);
  assert.equal(edited.content.length, 2, "the stub result added first, the text kept");
  assert.equal(edited.content.at(-1).text, text);
  const moved = messages.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((b) => b.tool_use_id === "t2");
  assert.equal(moved.content, result);
  assert.ok(JSON.stringify(messages).includes(longText("between")));
  assert.deepEqual(validateMessages(messages), []);
  assert.deepEqual(JSON.parse(JSON.stringify(messages)), JSON.parse(JSON.stringify(repairMessages(JSON.parse(JSON.stringify(history))).messages)));
});

test("a repair writes back whole texts in the messages it edits (aisdk)", () => {
  const output = longText("output");
  const text = longText("text");
  const history = [
    { role: "user", content: [{ type: "text", text: longText("ask") }] },
    { role: "assistant", content: [{ type: "text", text }, { type: "tool-call", toolCallId: "c1", toolName: "f", input: { q: longText("q") } }] },
    { role: "tool", content: [
      { type: "tool-result", toolCallId: "c1", toolName: "f", output: { type: "text", value: output } },
      { type: "tool-result", toolCallId: "nobody", toolName: "f", output: { type: "text", value: longText("stray") } },
    ] },
    { role: "user", content: [{ type: "text", text: longText("more") }, { type: "tool-call", toolCallId: "c9", toolName: "f", input: { q: "x" } }] },
  ];
  const { messages, report } = repairMessages(history, { format: "aisdk" });
  assert.deepEqual(report.map((r) => r.action).sort(), ["dropMisplacedCall", "dropResult"]);
  assert.equal(messages[0], history[0]);
  assert.equal(messages[1], history[1]);
  assert.notEqual(messages[2], history[2]);
  assert.deepEqual(messages[2].content, [history[2].content[0]]);
  assert.equal(messages[2].content[0].output.value, output);
  assert.deepEqual(messages[3], { role: "user", content: [{ type: "text", text: longText("more") }] });
});

test("a repair writes back whole texts in the messages it edits (openai)", () => {
  const args = JSON.stringify({ content: longText("args") });
  const call = (id) => ({ id, type: "function", function: { name: "f", arguments: args } });
  const history = [
    { role: "user", content: longText("ask") },
    { role: "assistant", content: longText("first"), tool_calls: [call("c0")] },
    { role: "tool", tool_call_id: "c0", content: longText("zero") },
    { role: "assistant", content: [], tool_calls: [call("c1"), call("c1")], extra: { note: longText("extra") } },
    { role: "tool", tool_call_id: "c1", content: longText("one") },
    { role: "tool", tool_call_id: "nobody", content: longText("stray") },
  ];
  const { messages, report } = repairMessages(history, { format: "openai" });
  assert.deepEqual(report.map((r) => r.action).sort(), ["addStubResult", "dropResult", "nullEmptyContent", "renameCallId"]);
  assert.equal(messages.length, 6);
  for (const i of [0, 1, 2, 4]) assert.equal(messages[i], history[i], `messages[${i}] is the caller's object`);
  assert.deepEqual(messages[3], { ...history[3], content: null, tool_calls: [call("c1"), call("c1-2")] });
  assert.equal(messages[3].tool_calls[1].function.arguments, args);
  assert.equal(messages[3].extra.note, longText("extra"));
  assert.deepEqual(messages[5], { role: "tool", tool_call_id: "c1-2", content: "[no result recorded]" });
  assert.deepEqual(validateMessages(messages, { format: "openai" }), []);
});
