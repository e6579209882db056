// The 300-turn agent session fixtures (tests/data/sessions/, built by build.py there from recorded
// mini-swe-agent runs, gzipped) are what build.py writes, stay valid in all four formats and stay
// the same session: the same turns, tool calls, long results and images in each, and token
// totals of the expected size.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { countMessages, detectFormat, validateMessages } from "context-keeper";
import { loadSession } from "./fixtures.mjs";

const python = spawnSync("python3", ["--version"]).status === 0;

test("the fixtures are what build.py writes (python3 build.py --check)", { skip: !python && "python3 is not on PATH" }, () => {
  const script = fileURLToPath(new URL("../data/sessions/build.py", import.meta.url));
  const run = spawnSync("python3", [script, "--check"], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
});

// What build.py reports for the session (see tests/data/sessions/README.md).
const TURNS = 313;
const CALLS = 324;
const LONG_RESULTS = 4; // tool results of 20,000+ characters
const IMAGES = 4;

/** Per format: assistant turns, tool calls, tool result texts, images, reasoning parts. */
const shapes = {
  openai: (messages) => ({
    turns: messages.filter((m) => m.role === "assistant").length,
    calls: messages.flatMap((m) => m.tool_calls ?? []),
    results: messages.filter((m) => m.role === "tool").map((m) => m.content),
    images: messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((p) => p.type === "image_url"),
    reasoning: [],
  }),
  anthropic: ({ messages }) => {
    const blocks = messages.flatMap((m) => m.content);
    return {
      turns: messages.filter((m) => m.role === "assistant").length,
      calls: blocks.filter((b) => b.type === "tool_use"),
      results: blocks.filter((b) => b.type === "tool_result").map((b) => b.content),
      images: blocks.filter((b) => b.type === "image"),
      reasoning: blocks.filter((b) => b.type === "thinking"),
    };
  },
  aisdk: (messages) => {
    const parts = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
    return {
      turns: messages.filter((m) => m.role === "assistant").length,
      calls: parts.filter((p) => p.type === "tool-call"),
      results: parts.filter((p) => p.type === "tool-result").map((p) => p.output.value),
      images: parts.filter((p) => p.type === "image"),
      reasoning: parts.filter((p) => p.type === "reasoning"),
    };
  },
  // One assistant UIMessage per request, a step-start part before each turn.
  ui: (messages) => {
    const parts = messages.flatMap((m) => m.parts);
    const tools = parts.filter((p) => p.type.startsWith("tool-"));
    return {
      turns: parts.filter((p) => p.type === "step-start").length,
      calls: tools,
      results: tools.map((p) => (p.state === "output-available" ? p.output : p.errorText)),
      images: parts.filter((p) => p.type === "file" && p.mediaType === "image/png"),
      reasoning: parts.filter((p) => p.type === "reasoning"),
    };
  },
};

const sessions = Object.fromEntries(Object.keys(shapes).map((format) => [format, loadSession(format)]));

for (const [format, messages] of Object.entries(sessions)) {
  test(`agent-300.${format}.json.gz is valid and has the session's shape`, () => {
    assert.equal(detectFormat(messages), format === "ui" ? "aisdk" : format);
    assert.deepEqual(validateMessages(messages), []);
    const shape = shapes[format](messages);
    assert.equal(shape.turns, TURNS);
    assert.equal(shape.calls.length, CALLS);
    assert.equal(shape.results.length, CALLS);
    assert.equal(shape.results.filter((text) => text.length >= 20_000).length, LONG_RESULTS);
    assert.equal(shape.images.length, IMAGES);
    if (format !== "openai") {
      assert.ok(shape.reasoning.length > 50, `${shape.reasoning.length} reasoning parts`);
    }
  });

  test(`agent-300.${format}.json.gz counts to a few hundred thousand tokens`, () => {
    for (const model of ["gpt-4o", "claude-sonnet-4"]) {
      const { total } = countMessages(messages, { model });
      // Built from build.py's output of this commit: about 208,000 (OpenAI, whose messages carry
      // no reasoning) and 256,000 (the others). A change of the fixture or of counting moves it.
      const [low, high] = format === "openai" ? [190_000, 230_000] : [235_000, 280_000];
      assert.ok(total >= low && total <= high, `${model}: ${total} tokens`);
    }
  });
}

test("the four files are the same session: same tools, inputs and results in the same order", () => {
  const calls = Object.fromEntries(
    Object.entries(sessions).map(([format, messages]) => [
      format,
      shapes[format](messages).calls.map((c) =>
        format === "openai"
          ? [c.function.name, JSON.parse(c.function.arguments)]
          : format === "anthropic"
            ? [c.name, c.input]
            : format === "aisdk"
              ? [c.toolName, c.input]
              : [c.type.slice("tool-".length), c.input],
      ),
    ]),
  );
  const results = Object.fromEntries(Object.entries(sessions).map(([f, m]) => [f, shapes[f](m).results]));
  for (const format of ["anthropic", "aisdk", "ui"]) {
    assert.deepEqual(calls[format], calls.openai, format);
    assert.deepEqual(results[format], results.openai, format);
  }
  const names = new Set(calls.openai.map(([name]) => name));
  assert.deepEqual([...names].sort(), ["bash", "edit_file", "read_file", "write_file"]);
});
