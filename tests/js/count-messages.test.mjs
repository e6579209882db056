// countMessages / isWithinLimit / modelInfo / calibrate through the built package, against npm
// tiktoken where the count is exact, on the shared fixtures of all three formats.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import {
  ContextKeeperError,
  calibrate,
  clearCalibration,
  clearCountCache,
  countMessages,
  countTokens,
  isWithinLimit,
  modelInfo,
  listModels,
} from "context-keeper";
import { asSchema, convertToModelMessages, jsonSchema, tool } from "ai";
import { z } from "zod";
import * as zod3 from "zod/v3";
import { referenceCount, sampleConversation } from "./reference.mjs";

const dataDir = new URL("../data/messages/", import.meta.url);
const fixtures = Object.fromEntries(
  readdirSync(dataDir)
    .filter((name) => name.endsWith(".input.json"))
    .map((name) => [name.replace(".input.json", ""), JSON.parse(readFileSync(new URL(name, dataDir), "utf8"))]),
);
const sum = (list) => list.reduce((a, b) => a + b, 0);
const kindsTotal = (byKind) => sum(Object.values(byKind));

// The example of OpenAI's cookbook "How to count tokens with tiktoken".
const cookbook = [
  { role: "system", content: "You are a helpful, pattern-following assistant that translates corporate jargon into plain English." },
  { role: "system", name: "example_user", content: "New synergies will help drive top-line growth." },
  { role: "system", name: "example_assistant", content: "Things working well together will increase revenue." },
  { role: "system", name: "example_user", content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage." },
  { role: "system", name: "example_assistant", content: "Let's talk later when we're less busy about how to do better." },
  { role: "user", content: "This late pivot means we don't have time to boil the ocean for the client deliverable." },
];

/** The cookbook's num_tokens_from_messages, on npm tiktoken. */
function cookbookCount(messages, encoding) {
  let total = 3;
  for (const message of messages) {
    total += 3;
    for (const [key, value] of Object.entries(message)) {
      total += referenceCount(value, encoding) + (key === "name" ? 1 : 0);
    }
  }
  return total;
}

test("OpenAI framing equals the cookbook's count (124 for gpt-4o, 129 for gpt-4)", () => {
  for (const [model, encoding, printed] of [["gpt-4o", "o200k_base", 124], ["gpt-4", "cl100k_base", 129]]) {
    const count = countMessages(cookbook, { model });
    assert.equal(count.total, cookbookCount(cookbook, encoding), model);
    assert.equal(count.total, printed, model);
    assert.equal(count.exact, true);
    assert.equal(count.encoding, encoding);
    assert.equal(count.format, "openai");
    assert.equal(count.model.name, model);
    assert.deepEqual(count.byRole, { system: count.total - 3 - count.perMessage[5], user: count.perMessage[5] });
    assert.equal(kindsTotal(count.byKind), count.total);
    assert.equal(count.byKind.text, sum(cookbook.map((m) => referenceCount(m.content, encoding))));
  }
  // Without a model: OpenAI's accounting with o200k_base; no model in the result.
  const plain = countMessages(cookbook);
  assert.equal(plain.total, 124);
  assert.equal(plain.model, null);
});

test("the sample conversation: every kind equals npm tiktoken plus the documented framing", () => {
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    const count = countMessages(sampleConversation, { encoding });
    const expected = { text: 0, toolCalls: 0, toolResults: 0, images: 0, files: 0, reasoning: 0, overhead: 3 };
    for (const m of sampleConversation) {
      expected.overhead += 3 + referenceCount(m.role, encoding);
      const content = typeof m.content === "string" ? referenceCount(m.content, encoding) : 0;
      if (m.role === "tool") expected.toolResults += content;
      else expected.text += content;
      for (const call of m.tool_calls ?? []) {
        expected.toolCalls += referenceCount(call.function.name, encoding) + referenceCount(call.function.arguments, encoding);
        expected.overhead += 3;
      }
    }
    assert.deepEqual(count.byKind, expected, encoding);
    assert.equal(count.total, kindsTotal(expected));
    assert.equal(count.perMessage.length, sampleConversation.length);
    assert.equal(sum(count.perMessage) + 3, count.total);
    // Tool calls follow no published rule: not exact.
    assert.equal(count.exact, sampleConversation.some((m) => m.tool_calls) ? false : true);
  }
});

// Fixtures that are no conversation of any format, each with the reason and the place its
// error must name. Every other fixture must count: an error there fails the test.
const EXPECTED_INVALID = {};

test("every fixture of every format counts, and the kinds add up", () => {
  const formats = new Set();
  assert.ok(Object.keys(fixtures).length >= 13, "fixtures are read");
  for (const [name, input] of Object.entries(fixtures)) {
    const invalid = EXPECTED_INVALID[name];
    if (invalid) {
      assert.throws(() => countMessages(input), (err) => err instanceof ContextKeeperError && err.path === invalid.path, `${name}: ${invalid.reason}`);
      continue;
    }
    const count = countMessages(input);
    formats.add(count.format);
    const list = Array.isArray(input) ? input : input.messages;
    assert.equal(count.perMessage.length, list.length, name);
    assert.equal(kindsTotal(count.byKind), count.total, name);
    assert.equal(sum(count.perMessage) + count.system + count.tools + 3, count.total, name);
    assert.equal(sum(Object.values(count.byRole)), count.total - count.tools - 3, name);
    // The same conversation with its format named counts the same.
    assert.deepEqual(countMessages(input, { format: count.format }), count, name);
  }
  assert.deepEqual([...formats].sort(), ["aisdk", "anthropic", "openai"]);
});

test("Anthropic: thinking, tools, images in results, system prompt and tool definitions", () => {
  const input = fixtures["anthropic-thinking-tools"];
  const count = countMessages(input);
  assert.equal(count.model.name, "claude-sonnet-4"); // from the request's own `model`
  assert.equal(count.exact, false);
  const thinking = input.messages[1].content[0].thinking;
  const redacted = input.messages[3].content[0].data;
  assert.equal(count.byKind.reasoning, referenceCount(thinking) + Math.ceil(redacted.length / 4));
  assert.equal(count.byKind.images, 1); // a 1x1 PNG: ceil(1 * 1 / 750)
  const systemText = input.system.map((b) => b.text);
  assert.equal(count.system, 3 + referenceCount("system") + sum(systemText.map((t) => referenceCount(t))));
  // The definitions, and the 346-token system prompt Anthropic adds for Claude 4 with tools.
  assert.equal(count.tools, referenceCount(JSON.stringify(input.tools)) + 346);
  // Tools passed in the options win over the request's.
  assert.equal(countMessages(input, { tools: [] }).tools, 0);
});

test("AI SDK: tool calls as JSON, json outputs, media in results", () => {
  const input = fixtures["aisdk-v5-tools"];
  const count = countMessages(input, { model: "gpt-4o" });
  assert.equal(count.format, "aisdk");
  const calls = input[2].content.filter((p) => p.type === "tool-call");
  assert.equal(
    count.byKind.toolCalls,
    sum(calls.map((c) => referenceCount(c.toolName) + referenceCount(JSON.stringify(c.input)))),
  );
  assert.equal(count.byKind.reasoning, referenceCount(input[2].content[0].text));
  // An image by URL and a media PNG in a tool result whose data is too short to show its size:
  // 765 each (1024x1024 at high detail, the documented default); a PDF, 1,500.
  assert.equal(count.byKind.images, 765 + 765);
  assert.equal(count.byKind.files, 1500);
});

test("images: the provider's rule, known sizes, and base64 never counted as text", () => {
  const big = "A".repeat(1_000_000);
  const openai = [{ role: "user", content: [
    { type: "text", text: "look" },
    { type: "image_url", image_url: { url: `data:image/png;base64,${big}`, detail: "high" } },
    { type: "image_url", image_url: { url: "https://example.com/a.png", detail: "low" } },
    { type: "image_url", image_url: { url: "https://example.com/b.png", width: 2048, height: 4096 } },
  ] }];
  const count = countMessages(openai, { model: "gpt-4o" });
  assert.equal(count.byKind.text, referenceCount("look"));
  assert.equal(count.byKind.images, 765 + 85 + 1105);
  assert.equal(count.exact, false); // the first image's size is unknown
  const anthropic = { messages: [{ role: "user", content: [
    { type: "image", source: { type: "base64", media_type: "image/png", data: big } },
    { type: "image", source: { type: "url", url: "https://example.com/c.jpg" }, width: 1000, height: 1000 },
  ] }] };
  const claude = countMessages(anthropic, { model: "claude-opus-4-1" });
  // Unknown size: the whole patch budget; 1000 x 1000: 36 x 36 patches of 28 pixels.
  assert.equal(claude.byKind.images, 1568 + 1296);
  assert.equal(claude.byKind.text, 0);
});

test("isWithinLimit: the count when it fits, false when it does not", () => {
  const { total } = countMessages(sampleConversation, { model: "gpt-4o" });
  assert.equal(isWithinLimit(sampleConversation, total, { model: "gpt-4o" }), total);
  assert.equal(isWithinLimit(sampleConversation, total - 1, { model: "gpt-4o" }), false);
  assert.equal(isWithinLimit(sampleConversation, 0), false);
  assert.equal(isWithinLimit(sampleConversation, Infinity), countMessages(sampleConversation).total);
  assert.throws(() => isWithinLimit(sampleConversation, -1), { name: "ContextKeeperError", kind: "options", path: "limit" });
  assert.throws(() => isWithinLimit(sampleConversation, "1000"), { name: "ContextKeeperError", message: "limit: expected a number, found a string" });
});

test("re-counting after an append equals a fresh count", () => {
  const history = [];
  for (let i = 0; i < 1000; i++) {
    history.push({ role: i % 2 ? "assistant" : "user", content: `turn ${i}: ${"lorem ipsum ".repeat(i % 13)}` });
  }
  const first = countMessages(history, { model: "claude-sonnet-4" });
  history.push({ role: "user", content: "and one more" });
  const again = countMessages(history, { model: "claude-sonnet-4" });
  clearCountCache();
  const fresh = countMessages(history, { model: "claude-sonnet-4" });
  assert.deepEqual(again, fresh);
  assert.deepEqual(again.perMessage.slice(0, 1000), first.perMessage);
  // The cost of the re-count (about the new message) is measured by bench/incremental.mjs.
});

test("a message changed in place after it was counted is counted as it is now", () => {
  const history = [
    { role: "user", content: "What is in this folder?" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "a.txt" },
  ];
  const fresh = () => {
    const copy = structuredClone(history);
    clearCountCache();
    const count = countMessages(copy);
    clearCountCache();
    return count;
  };
  assert.deepEqual(countMessages(history), fresh());
  // Streaming into the last message, a nested edit, a new key, a removed key, a changed type.
  history[2].content += " b.txt c.txt";
  assert.deepEqual(countMessages(history), fresh());
  history[1].tool_calls[0].function.arguments = '{"path":"/home/user/projects"}';
  assert.deepEqual(countMessages(history), fresh());
  history[0].name = "alice";
  assert.deepEqual(countMessages(history), fresh());
  delete history[0].name;
  assert.deepEqual(countMessages(history), fresh());
  // A key renamed in place: as many keys as before, one of them another.
  history[0].name = "alice";
  assert.deepEqual(countMessages(history), fresh());
  delete history[0].name;
  history[0].nom = "alice";
  assert.deepEqual(countMessages(history), fresh());
  delete history[0].nom;
  history[0].content = [{ type: "text", text: "What is in this folder?" }];
  assert.deepEqual(countMessages(history), fresh());
  history[0].content[0].text = "And this one?";
  assert.deepEqual(countMessages(history), fresh());
  // A Date, whose reading is its toJSON().
  history[0].sent = new Date(0);
  assert.deepEqual(countMessages(history), fresh());
  history[0].sent.setTime(Date.UTC(2026, 10, 22));
  assert.deepEqual(countMessages(history), fresh());
});

test("the same message objects counted in another format are read in that format", () => {
  const plain = [{ role: "user", content: "hi there" }, { role: "assistant", content: "hello" }];
  const openai = countMessages(plain);
  const anthropic = countMessages(plain, { format: "anthropic", model: "claude-sonnet-4-5" });
  assert.equal(openai.format, "openai");
  assert.equal(anthropic.format, "anthropic");
  assert.deepEqual(countMessages(plain), openai);
});

test("an object that reads differently each time is counted as it reads now", () => {
  let turn = 0;
  const message = { role: "user", get content() { return "x ".repeat(++turn); } };
  const first = countMessages([message]).total;
  const second = countMessages([message]).total;
  assert.ok(second > first, "not the count of an earlier reading");
});

test("modelInfo: exact, prefix, unknown, and the caller's entries", () => {
  const mini = modelInfo("gpt-4o-mini-2024-07-18");
  assert.deepEqual(
    { name: mini.name, provider: mini.provider, contextWindow: mini.contextWindow, encoding: mini.encoding, exact: mini.exact, known: mini.known },
    { name: "gpt-4o-mini", provider: "openai", contextWindow: 128000, encoding: "o200k_base", exact: true, known: true },
  );
  assert.deepEqual(mini.framing, { perMessage: 3, perName: 1, replyPriming: 3 });
  assert.deepEqual(mini.images, { rule: "tiles", base: 2833, perTile: 5667 });
  assert.deepEqual(modelInfo("gpt-4o").images, { rule: "tiles", base: 85, perTile: 170 });
  assert.deepEqual(modelInfo("gpt-4.1-mini").images, { rule: "patches", size: 32, maxPatches: 1536, multiplier: 1.62 });
  assert.deepEqual(modelInfo("claude-sonnet-4-5").images, { rule: "patches", size: 28, maxPatches: 1568, maxSide: 1568, multiplier: 1 });
  const unknown = modelInfo("my-finetune");
  assert.equal(unknown.known, false);
  assert.equal(unknown.exact, false);
  const models = { "my-finetune": { contextWindow: 32000, encoding: "cl100k_base", framing: { perMessage: 4 } } };
  const mine = modelInfo("my-finetune-v2", { models });
  assert.equal(mine.known, true);
  assert.equal(mine.contextWindow, 32000);
  assert.equal(mine.framing.perMessage, 4);
  assert.equal(modelInfo("gpt-4o", { models: { "gpt-4o": { contextWindow: 1000 } } }).contextWindow, 1000);
  const count = countMessages([{ role: "user", content: "hi" }], { model: "my-finetune", models });
  assert.equal(count.perMessage[0], 4 + referenceCount("user", "cl100k_base") + referenceCount("hi", "cl100k_base"));
  assert.equal(count.model.contextWindow, 32000);
  assert.throws(() => modelInfo(42), { name: "ContextKeeperError", message: "model: expected a string, found a number" });
  assert.throws(() => modelInfo("x", { models: { x: { encoding: "p50k_base" } } }), { kind: "encoding", path: 'options.models["x"].encoding' });
  assert.throws(() => modelInfo("x", { models: { x: { contextWindow: "big" } } }), {
    name: "ContextKeeperError",
    message: 'options.models["x"].contextWindow: expected a whole number of tokens, found a string',
  });
});

test("listModels: every registry model, each as modelInfo gives it, and the caller's entries", () => {
  const all = listModels();
  assert.ok(all.length >= 20, `${all.length} models`);
  const names = all.map((m) => m.name);
  assert.equal(new Set(names).size, names.length, "each model once");
  // every name a user writes resolves to a listed entry (a family's entry covers its releases)
  for (const name of ["gpt-4o", "gpt-4o-mini-2024-07-18", "gpt-5", "gpt-4", "claude-sonnet-4-5", "gemini-2.5-pro", "llama3.1", "deepseek-reasoner"]) {
    assert.ok(names.includes(modelInfo(name).name), `${name} is listed as ${modelInfo(name).name}`);
  }
  for (const m of all) {
    assert.deepEqual(m, modelInfo(m.name), m.name);
    assert.equal(m.known, true, m.name);
    assert.match(m.source, /^https:\/\//, m.name);
  }
  // by provider: each provider's models are listed together
  const providers = all.map((m) => m.provider).filter((p, i, list) => p !== list[i - 1]);
  assert.equal(new Set(providers).size, providers.length, providers.join(","));
  // the caller's entries: a changed model in place, a new one appended under its name
  const models = { "gpt-4o": { contextWindow: 1_000 }, "my-llm": { contextWindow: 32_000, encoding: "cl100k_base" }, "gpt-4o-2024-08-06": { maxOutput: 100 } };
  const mine = listModels({ models });
  assert.equal(mine.length, all.length + 2);
  assert.equal(mine.find((m) => m.name === "gpt-4o").contextWindow, 1_000);
  assert.equal(mine.find((m) => m.name === "gpt-4o").source, null);
  assert.deepEqual(mine.find((m) => m.name === "my-llm"), modelInfo("my-llm", { models }));
  const dated = mine.find((m) => m.name === "gpt-4o-2024-08-06");
  assert.deepEqual({ ...dated, name: "gpt-4o" }, modelInfo("gpt-4o-2024-08-06", { models }));
  assert.equal(dated.maxOutput, 100);
  assert.throws(() => listModels({ models: { x: { contextWindow: -1 } } }), { name: "ContextKeeperError", kind: "options" });
  assert.throws(() => listModels(3), { name: "ContextKeeperError", message: /^options: expected an object/ });
});

test("modelInfo: each known model names its provider's page and the day it was read", () => {
  const gpt = modelInfo("gpt-4-0613");
  assert.equal(gpt.source, "https://developers.openai.com/api/docs/models/gpt-4");
  assert.match(gpt.checked, /^\d{4}-\d{2}-\d{2}$/);
  const hosts = {
    "gpt-4o": "developers.openai.com",
    "claude-opus-4-6": "platform.claude.com",
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0": "platform.claude.com",
    "gemini-2.5-pro": "ai.google.dev",
    "llama3.1": "www.llama.com",
    "mistral-large-latest": "docs.mistral.ai",
  };
  for (const [name, host] of Object.entries(hosts)) {
    const { source, checked } = modelInfo(name);
    assert.equal(new URL(source).protocol, "https:", name);
    assert.equal(new URL(source).host, host, name);
    // a day from the registry's first reading to its last review (src/model.rs), not the clock
    assert.match(checked, /^\d{4}-\d{2}-\d{2}$/, name);
    assert.ok(checked >= "2026-11-01" && checked <= "2026-11-28", `${name}: ${checked}`);
  }
  // Unknown: null, not the conservative default's made-up provenance.
  const unknown = modelInfo("my-finetune");
  assert.equal(unknown.source, null);
  assert.equal(unknown.checked, null);
  // The caller's window or output limit is not the page's: the provenance goes with it.
  const mine = modelInfo("gpt-4o", { models: { "gpt-4o": { contextWindow: 1000 } } });
  assert.deepEqual([mine.source, mine.checked], [null, null]);
  const framed = modelInfo("gpt-4o", { models: { "gpt-4o": { framing: { perMessage: 4 } } } });
  assert.equal(framed.source, modelInfo("gpt-4o").source);
  assert.equal(countMessages([{ role: "user", content: "hi" }], { model: "gpt-4o" }).model.source, modelInfo("gpt-4o").source);
});

test("errors: a ContextKeeperError naming the message and field, of kind \"encoding\" for unknown encodings", () => {
  assert.throws(() => countMessages([{ role: "user", content: "ok" }, { role: "user", content: 5 }]), {
    name: "ContextKeeperError",
    message: "messages[1].content: expected a string or an array, found a number",
  });
  assert.throws(() => countMessages([{ role: "wizard", content: "x" }]), (err) => err instanceof ContextKeeperError && err.kind === "messages" && err.path === "messages[0].role" && /messages\[0\]\.role/.test(err.message));
  assert.throws(() => countMessages(cookbook, { encoding: "p50k_base" }), (err) => err instanceof ContextKeeperError && err.kind === "encoding" && err.path === "options.encoding" && /p50k_base/.test(err.message));
  assert.throws(() => countMessages(cookbook, { format: "gemini" }), { name: "ContextKeeperError", kind: "options", path: "options.format" });
  assert.throws(() => countMessages(cookbook, "gpt-4o"), { name: "ContextKeeperError", message: "options: expected an object, found a string" });
  assert.throws(() => countMessages(undefined), { name: "ContextKeeperError", kind: "messages", path: "messages" });
  const cyclic = [];
  cyclic.push(cyclic);
  assert.throws(() => countMessages(cyclic), { name: "ContextKeeperError", kind: "messages" });
  // An unknown model is not an error: conservative defaults, flagged.
  const count = countMessages(cookbook, { model: "llama-99" });
  assert.equal(count.model.known, false);
  assert.equal(count.exact, false);
  assert.equal(countMessages([{ role: "user", content: "hello world" }]).total, 9);
});

test("calibrate: scales approximate models only, latest call wins", () => {
  clearCalibration();
  const messages = [{ role: "user", content: "How many tokens is this, really?" }];
  const raw = countMessages(messages, { model: "claude-haiku-4-5" });
  const cal = calibrate({ model: "claude-haiku-4-5", inputTokens: Math.round(raw.total * 1.25), messages });
  assert.equal(cal.applied, true);
  assert.equal(cal.model, "claude-haiku-4");
  const scaled = countMessages(messages, { model: "claude-haiku-4-5" });
  assert.equal(scaled.calibrated, true);
  assert.equal(scaled.uncalibrated, raw.total);
  assert.equal(scaled.total, Math.round(raw.total * cal.ratio));
  assert.equal(calibrate({ model: "gpt-4o", inputTokens: 100, estimated: 50 }).applied, false);
  assert.equal(countMessages(messages, { model: "gpt-4o" }).calibrated, false);
  assert.throws(() => calibrate({ model: "claude-haiku-4-5" }), { name: "ContextKeeperError", kind: "options" });
  clearCalibration();
  assert.equal(countMessages(messages, { model: "claude-haiku-4-5" }).calibrated, false);
});

test("a message with toJSON is read as JSON.stringify reads it: called with its index", () => {
  // As JSON.stringify(messages) does, toJSON gets the message's index in the list, as a string.
  const byIndex = { toJSON: (key) => ({ role: "user", content: `message number ${key} ${"word ".repeat(Number(key) * 5)}` }) };
  const messages = [{ role: "system", content: "Be brief." }, byIndex, { role: "assistant", content: "ok" }, byIndex];
  const plain = JSON.parse(JSON.stringify(messages));
  assert.notDeepEqual(plain[1], plain[3]);
  for (let i = 0; i < 2; i++) {
    // Twice: the second count must not reuse a reading made under another key.
    assert.deepEqual(countMessages(messages), countMessages(plain));
  }
});

test("images are priced by the model's own rule, and a caller's rule crosses the boundary", () => {
  const image = [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x/a.png", width: 1024, height: 1024 } }] }];
  const images = (model, options = {}) => countMessages(image, { model, ...options }).byKind.images;
  assert.equal(images("gpt-4o"), 765);
  assert.equal(images("gpt-4o-mini"), 2833 + 4 * 5667);
  assert.equal(images("gpt-5"), 70 + 4 * 140);
  assert.equal(images("o3"), 75 + 4 * 150);
  assert.equal(images("gpt-4.1-nano"), Math.ceil(1024 * 2.46));
  const claude = [{ role: "user", content: [{ type: "image", source: { type: "url", url: "https://x/a.jpg" }, width: 1000, height: 1000 }] }];
  assert.equal(countMessages(claude, { model: "claude-sonnet-4-5" }).byKind.images, 36 * 36);
  const models = { "my-vlm": { images: { rule: "patches", size: 14, maxPatches: 6000, multiplier: 0.5 } } };
  assert.deepEqual(modelInfo("my-vlm", { models }).images, { rule: "patches", size: 14, maxPatches: 6000, multiplier: 0.5 });
  assert.equal(images("my-vlm", { models }), Math.ceil(74 * 74 * 0.5));
  assert.throws(
    () => modelInfo("x", { models: { x: { images: { rule: "patches", size: 14, maxPatches: 10, multiplier: -1 } } } }),
    (e) => e instanceof ContextKeeperError && /options\.models\["x"\]\.images/.test(e.message),
  );
  // Each error names the field of the rule at fault and what it must hold.
  const ruleError = (images) => {
    try {
      modelInfo("x", { models: { x: { images } } });
    } catch (e) {
      assert.ok(e instanceof ContextKeeperError, String(e));
      return e.message;
    }
    assert.fail(`accepted ${JSON.stringify(images)}`);
  };
  assert.equal(
    ruleError({ rule: "patches", size: 14, maxPatches: 10, multiplier: -1 }),
    'options.models["x"].images.multiplier: expected a multiplier between 0 and 10000 tokens per patch, found -1',
  );
  assert.equal(ruleError({ rule: "tiles", base: 85 }), 'options.models["x"].images.perTile: expected a whole number of tokens, found nothing');
  assert.equal(ruleError({ rule: "tiles", base: 85, perTile: "170" }), 'options.models["x"].images.perTile: expected a whole number of tokens, found a string');
  assert.equal(ruleError({ rule: "tilez" }), 'options.models["x"].images.rule: expected "tiles", "patches", "crops", "area" or "flat", found "tilez"');
  assert.match(ruleError(7), /^options\.models\["x"\]\.images: expected \{ rule: "tiles", base, perTile \} \| .*, found a number$/);
});

test("model names resolve as hosts and routers write them", () => {
  const cases = {
    "@cf/meta/llama-3.1-8b-instruct": ["llama-3.1", 131072],
    "us.anthropic.claude-3-7-sonnet-20250219-v1:0": ["claude-3-7-sonnet", 200000],
    "anthropic/claude-3.7-sonnet": ["claude-3-7-sonnet", 200000],
    "ft:gpt-4o-mini-2024-07-18:acme::abc": ["gpt-4o-mini", 128000],
    "llama3.1": ["llama-3.1", 131072],
    "gpt-5.1-chat-latest": ["gpt-5.1-chat", 128000],
    "gemini-pro": ["gemini-pro", 32768],
  };
  for (const [name, [entry, window]] of Object.entries(cases)) {
    const info = modelInfo(name);
    assert.deepEqual([info.name, info.contextWindow, info.known], [entry, window, true], name);
  }
  assert.equal(countTokens("hi", { model: "llama3.1" }), referenceCount("hi", "cl100k_base"));
});

test("calibrate refuses a reported 0, whatever it estimated", () => {
  assert.throws(
    () => calibrate({ model: "claude-sonnet-4-5", inputTokens: 0, estimated: 100 }),
    (e) => e instanceof ContextKeeperError && e.message === "usage.inputTokens: expected a positive number of tokens, found 0",
  );
});

test("AI SDK UIMessages (useChat) count what convertToModelMessages sends, never 0", async () => {
  const hello = [{ id: "1", role: "user", parts: [{ type: "text", text: "hello world" }] }];
  const count = countMessages(hello);
  assert.equal(count.format, "aisdk");
  assert.equal(count.byKind.text, referenceCount("hello world"));
  assert.equal(count.total, 9);
  // Named as another format, it is an error naming the field, not an empty message.
  for (const format of ["openai", "anthropic"]) {
    assert.throws(() => countMessages(hello, { format }), {
      name: "ContextKeeperError",
      message: /^messages\[0\]\.content: expected a string.*found none but `parts` \(an AI SDK UIMessage\).*convertToModelMessages/,
    });
  }
  const ui = fixtures["aisdk-ui-messages"];
  // What the ai package itself makes of them, without the v6 approval part it does not know.
  const v5 = ui.slice(0, 4);
  const converted = await convertToModelMessages(v5);
  for (const options of [{ model: "gpt-4o" }, { model: "claude-sonnet-4-5" }, {}]) {
    const counted = countMessages(v5, options);
    const reference = countMessages(converted, options);
    assert.equal(counted.format, "aisdk");
    assert.deepEqual(counted.byKind, reference.byKind, JSON.stringify(options));
    assert.equal(counted.total, reference.total);
    assert.equal(counted.perMessage.length, v5.length);
  }
  const counted = countMessages(ui, { model: "gpt-4o" });
  assert.equal(
    counted.byKind.toolResults,
    referenceCount(JSON.stringify(ui[2].parts[2].output)) + referenceCount(ui[2].parts[3].errorText),
  );
  assert.equal(counted.byKind.reasoning, referenceCount(ui[2].parts[1].text));
  // A part appended while streaming is counted as it is now.
  const streaming = structuredClone(hello);
  countMessages(streaming);
  streaming[0].parts.push({ type: "text", text: " and more" });
  assert.equal(countMessages(streaming).byKind.text, referenceCount("hello world") + referenceCount(" and more"));
});

test("an assistant's refusal and AI SDK v4 experimental_content are counted", () => {
  const refusal = "I'm sorry, I can't help with that.";
  const count = countMessages([{ role: "user", content: "hi" }, { role: "assistant", content: null, refusal }], { model: "gpt-4o" });
  assert.equal(count.byKind.text, referenceCount("hi") + referenceCount(refusal));
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
  const v4 = [
    { role: "user", content: "Take a screenshot." },
    { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "screenshot", args: {} }] },
    {
      role: "tool",
      content: [{
        type: "tool-result", toolCallId: "c1", toolName: "screenshot", result: { data: png },
        experimental_content: [{ type: "text", text: "A login form." }, { type: "image", data: png, mimeType: "image/png" }],
      }],
    },
  ];
  const counted = countMessages(v4, { model: "gpt-4o" });
  assert.equal(counted.byKind.toolResults, referenceCount("A login form."));
  assert.equal(counted.byKind.images, 255); // the 1x1 PNG: one tile
});

test("exact without a model: OpenAI messages only (AI SDK with a named encoding)", () => {
  const plain = [{ role: "user", content: "hello world" }];
  assert.equal(countMessages(plain).exact, true);
  assert.equal(countMessages(plain, { format: "anthropic" }).exact, false);
  const anthropic = { system: "Be brief.", messages: plain };
  assert.equal(countMessages(anthropic).format, "anthropic");
  assert.equal(countMessages(anthropic).exact, false);
  assert.equal(countMessages(anthropic, { encoding: "o200k_base" }).exact, false);
  const ui = [{ id: "1", role: "user", parts: [{ type: "text", text: "hello world" }] }];
  assert.equal(countMessages(ui).exact, false);
  assert.equal(countMessages(ui, { encoding: "o200k_base" }).exact, true);
  assert.equal(countMessages(ui, { model: "gpt-4o" }).exact, true);
});

test("shape errors say what they found; calibrate names NaN and its own fields", () => {
  const conversation = "an array of messages or a request object with a `messages` array";
  assert.throws(() => countMessages({ foo: 1 }), {
    name: "ContextKeeperError",
    message: `messages: expected ${conversation}, found an object without \`messages\``,
  });
  assert.throws(() => countMessages({ messages: "hi" }), {
    name: "ContextKeeperError",
    message: "messages.messages: expected an array, found a string",
  });
  assert.throws(() => countMessages(42), { name: "ContextKeeperError", message: `messages: expected ${conversation}, found a number` });
  const messages = [{ role: "user", content: "a" }, { role: "assistant", content: "b" }, { role: "user", content: 5 }];
  for (const [value, shown] of [[NaN, "NaN"], [Infinity, "Infinity"], [-Infinity, "-Infinity"]]) {
    assert.throws(() => calibrate({ model: "claude-haiku-4-5", inputTokens: value, messages }), {
      name: "ContextKeeperError",
      message: `usage.inputTokens: expected a whole number of tokens, found ${shown}`,
    });
    assert.throws(() => calibrate({ model: "claude-haiku-4-5", inputTokens: 10, estimated: value }), {
      name: "ContextKeeperError",
      message: `usage.estimated: expected a whole number of tokens, found ${shown}`,
    });
  }
  assert.throws(() => calibrate({ model: "claude-haiku-4-5", inputTokens: null, estimated: 5 }), {
    name: "ContextKeeperError",
    message: "usage.inputTokens: expected a whole number of tokens, found null",
  });
  assert.throws(() => calibrate({ model: "claude-haiku-4-5", inputTokens: 10, messages }), {
    name: "ContextKeeperError",
    message: "usage.messages[2].content: expected a string or an array, found a number",
  });
  assert.throws(() => calibrate({ model: "claude-haiku-4-5", inputTokens: 10, estimated: 5, encoding: "p50k_base" }), {
    name: "ContextKeeperError",
    message: /^usage\.encoding: unknown encoding "p50k_base"/,
  });
  clearCalibration();
});

test("request objects: a field of the wrong type is an error naming it, never dropped", () => {
  const messages = [{ role: "user", content: "hi" }];
  const cases = [
    [{ model: 5, messages }, "model: expected a string (or an AI SDK model with a modelId), found a number"],
    [{ tools: "x", messages }, "tools: expected an array or an object, found a string"],
    [{ tools: [1, 2, null], messages }, "tools[0]: expected a tool definition object, found a number"],
    [{ tools: [{ name: "ls" }, null], messages }, "tools[1]: expected a tool definition object, found null"],
    [{ tools: { weather: "sunny" }, messages }, 'tools["weather"]: expected a tool definition object, found a string'],
    [{ tool_choice: 1, messages }, "tool_choice: expected a string or an object, found a number"],
    // Anthropic's system is a string or an array of blocks; an object is no format's.
    [{ system: { type: "text", text: "Be brief." }, messages }, "system: expected a string or an array, found an object"],
  ];
  for (const [input, message] of cases) {
    assert.throws(() => countMessages(input), { name: "ContextKeeperError", message });
    assert.throws(() => isWithinLimit(input, 1_000), { name: "ContextKeeperError", message });
  }
  assert.throws(() => countMessages(messages, { tools: [{ name: "ls" }, undefined] }), {
    name: "ContextKeeperError",
    message: "options.tools[1]: expected a tool definition object, found null",
  });
  assert.throws(() => countMessages(messages, { toolChoice: "sometimes" }), { name: "ContextKeeperError", kind: "options", path: "options.toolChoice" });
  // undefined and null are absent.
  assert.deepEqual(countMessages({ model: undefined, tools: null, system: undefined, messages }), countMessages(messages));
});

test("request objects: the system prompt counts as a string or text blocks, whatever the messages", () => {
  const text = "Answer in one short sentence.";
  const expected = 3 + referenceCount("system") + referenceCount(text);
  // A call and its result: OpenAI's shape outvotes the system's.
  const openaiTurns = [
    { role: "user", content: "list files" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "a.txt" },
  ];
  for (const system of [text, [{ type: "text", text, cache_control: { type: "ephemeral" } }]]) {
    for (const messages of [[{ role: "user", content: "hi" }], openaiTurns]) {
      const count = countMessages({ system, messages });
      assert.equal(count.system, expected, JSON.stringify(system));
      assert.equal(count.byRole.system, expected);
    }
  }
});

test("AI SDK tools count as the JSON Schema the provider receives, never Zod's internals", () => {
  const messages = [{ role: "user", content: "What is the weather in Paris?" }];
  const schema = z.object({ city: z.string().describe("The city, e.g. Paris"), unit: z.enum(["c", "f"]).optional() });
  const weather = tool({ description: "Get the weather", inputSchema: schema, execute: async () => "sunny" });
  // What the AI SDK sends for it.
  const sent = asSchema(schema).jsonSchema;
  const asJson = tool({ description: "Get the weather", inputSchema: jsonSchema(sent) });
  for (const model of ["claude-sonnet-4-5", "gpt-4o", "gemini-2.5-pro"]) {
    const viaZod = countMessages({ model, tools: { weather }, messages });
    assert.equal(viaZod.format, "aisdk");
    assert.equal(viaZod.exact, false);
    assert.equal(viaZod.tools, countMessages({ model, tools: { weather: asJson }, messages }).tools, model);
    assert.equal(countMessages(messages, { model, tools: { weather } }).tools, viaZod.tools, model);
    // The AI SDK 4 name, parameters, holds the same schema.
    const v4 = { description: "Get the weather", parameters: schema };
    assert.equal(countMessages(messages, { model, tools: { weather: v4 } }).tools, viaZod.tools, model);
  }
  // For Claude: the definition Anthropic receives, and its tool use system prompt.
  const claude = countMessages(messages, { model: "claude-sonnet-4-5", tools: { weather } });
  const definition = [{ name: "weather", description: "Get the weather", input_schema: sent }];
  assert.equal(claude.tools, referenceCount(JSON.stringify(definition)) + 346);
  // The description, which JSON.stringify of a Zod 4 schema does not show, is counted.
  const undescribed = tool({ description: "Get the weather", inputSchema: z.object({ city: z.string(), unit: z.enum(["c", "f"]).optional() }) });
  assert.ok(countMessages(messages, { model: "gpt-4o", tools: { weather: undescribed } }).tools < countMessages(messages, { model: "gpt-4o", tools: { weather } }).tools);
  // A Zod 3 object shows no properties: an estimate (50 tokens for them), not its internals.
  const v3 = { description: "Get the weather", parameters: zod3.z.object({ city: zod3.z.string() }) };
  const hidden = [{ name: "weather", description: "Get the weather", input_schema: { type: "object", $schema: "http://json-schema.org/draft-07/schema#" } }];
  assert.equal(countMessages(messages, { model: "claude-sonnet-4-5", tools: { weather: v3 } }).tools, referenceCount(JSON.stringify(hidden)) + 50 + 346);
});

test("Claude with tools: Anthropic's tool use system prompt, by model and tool choice", () => {
  const tools = [{ name: "read_file", description: "Read a file", input_schema: { type: "object", properties: { path: { type: "string" } } } }];
  const definitions = referenceCount(JSON.stringify(tools));
  const messages = [{ role: "user", content: "read a.txt" }];
  const cases = [
    ["claude-sonnet-4-5", undefined, 346],
    ["claude-opus-4-1", { type: "any" }, 313],
    ["claude-3-5-sonnet-20240620", undefined, 294],
    ["claude-3-opus-20240229", { type: "tool", name: "read_file" }, 281],
    ["claude-3-haiku-20240307", { type: "none" }, 264],
  ];
  for (const [model, tool_choice, prompt] of cases) {
    const count = countMessages({ model, tools, tool_choice, messages });
    assert.equal(count.tools, definitions + prompt, model);
    assert.equal(count.byKind.overhead, 3 + 3 + referenceCount("user") + count.tools);
  }
  // The option wins over the request's; GPT models get no such prompt.
  assert.equal(countMessages({ model: "claude-sonnet-4-5", tools, tool_choice: { type: "auto" }, messages }, { toolChoice: "required" }).tools, definitions + 313);
  assert.ok(countMessages({ model: "gpt-4o", tools, messages }).tools < definitions + 50);
  // generateText's own arguments: the model object (read by its modelId), toolChoice.
  const args = {
    model: { specificationVersion: "v2", provider: "anthropic.messages", modelId: "claude-sonnet-4-5", doGenerate() {} },
    system: "Be brief.",
    tools: { read_file: tool({ description: "Read a file", inputSchema: jsonSchema(tools[0].input_schema) }) },
    toolChoice: "required",
    messages,
  };
  const count = countMessages(args);
  assert.equal(count.model.name, "claude-sonnet-4");
  assert.equal(count.format, "aisdk");
  assert.equal(count.system, 3 + referenceCount("system") + referenceCount("Be brief."));
  assert.equal(count.tools, referenceCount(JSON.stringify([{ name: "read_file", description: "Read a file", input_schema: tools[0].input_schema }])) + 313);
});

test("Anthropic's compaction block: what precedes it in the request counts nothing", () => {
  const long = "the earlier work, read in full ".repeat(200);
  const block = { role: "assistant", content: [{ type: "text", text: long }, { type: "compaction", content: "Summary: the work so far." }, { type: "text", text: "Carrying on." }] };
  const request = { model: "claude-sonnet-4", system: "You are terse.", messages: [{ role: "user", content: long }, block, { role: "user", content: "next" }] };
  const counted = countMessages(request);
  assert.equal(counted.format, "anthropic");
  assert.equal(counted.perMessage[0], 0);
  const alone = countMessages({ ...request, messages: [{ role: "assistant", content: block.content.slice(1) }, request.messages[2]] });
  assert.deepEqual(counted.perMessage.slice(1), alone.perMessage);
  assert.equal(counted.total, alone.total);
  assert.deepEqual(counted.byKind, alone.byKind);
  assert.equal(kindsTotal(counted.byKind), counted.total);
  assert.ok(counted.system > 0, "the system prompt is not a message block: it stays");
  // a failed compaction (`content: null`) is a no-op for the API
  const failed = { ...request, messages: [request.messages[0], { role: "assistant", content: [{ type: "compaction", content: null }] }, request.messages[2]] };
  assert.ok(countMessages(failed).perMessage[0] > 1000);
  // isWithinLimit agrees
  assert.equal(isWithinLimit(request, counted.total), counted.total);
});

test("OpenAI's Responses compaction item is read, kept and counted as opaque state", () => {
  const item = { type: "compaction", id: "cmp_1", encrypted_content: "gAAAA".repeat(100) };
  const messages = [{ role: "user", content: "first request" }, item, { role: "user", content: "next" }];
  const counted = countMessages(messages, { model: "gpt-4o" });
  assert.equal(counted.format, "openai");
  assert.equal(counted.perMessage.length, 3);
  assert.equal(counted.byKind.reasoning, 125, "a quarter of its characters");
  assert.equal(counted.exact, false);
  assert.ok(counted.perMessage[0] > 0, "nothing before it is dropped");
  assert.throws(() => countMessages([{ type: "compaction" }]), (err) => err instanceof ContextKeeperError && /encrypted_content/.test(err.message));
});
