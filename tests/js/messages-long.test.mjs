// validateMessages and detectFormat read long texts only in part (src/messages/skim.rs): they
// must answer for long texts exactly as for the whole ones, and name the place of bad input
// inside them as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { detectFormat, validateMessages, repairMessages } from "context-keeper";

const dir = new URL("../data/messages/", import.meta.url);
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith(".input.json"))
  .sort()
  .map((f) => {
    const name = f.replace(/\.input\.json$/, "");
    const read = (suffix) => JSON.parse(readFileSync(new URL(`${name}.${suffix}.json`, dir), "utf8"));
    return { name, input: read("input"), expected: read("expected") };
  });

const optionsOf = ({ options }) => ({ format: options.format ?? undefined, allowPendingCalls: options.allowPendingCalls });
const withoutProse = (items) => items.map(({ message, ...rest }) => rest);

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
    { name: "TypeError", message: "messages[0].extra.n: cannot be read as JSON: a BigInt has no JSON form" },
  );
  assert.throws(
    () => validateMessages([{ role: "user", content: { toJSON() { throw new Error("boom"); } } }]),
    { name: "TypeError", message: "messages[0].content: cannot be read as JSON: boom" },
  );
  assert.throws(
    () => validateMessages([{ role: "tool", tool_call_id: 7, content: long }]),
    { name: "TypeError", message: "messages[0].tool_call_id: expected a string, found a number" },
  );
  // A long role is quoted whole.
  const role = "r".repeat(300);
  assert.throws(() => validateMessages([{ role, content: long }]), (err) => err instanceof TypeError && err.message.includes(role));
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
