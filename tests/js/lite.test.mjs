// `context-keeper/lite`, the package without tables: the main entry's API with the estimator as
// its counter. Its counts have the model's framing around estimated text and say `exact:
// false`; its keeper keeps a session in budget by its own counts, offloads and reads back byte
// for byte, and takes a provider's usage as a calibration for every model (none is counted
// exactly here). `countTokens` refuses, as for an encoding an exact entry lacks. (The keeper's
// fault campaign also runs through it: KEEPER_FAULT_ENTRY in tests/js/keeper-faults.test.mjs.)
// And `context-keeper/estimate`, the estimator alone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import * as main from "context-keeper";
import * as lite from "context-keeper/lite";
import * as estimate from "context-keeper/estimate";
import { MemoryStore } from "context-keeper/stores";
import { sampleTexts, texts } from "./reference.mjs";
import { FORMATS, SUMMARY, session } from "./agent-session.mjs";
import { makeOutput, readAll } from "./tool-output.mjs";

const require = createRequire(import.meta.url);
const NOW = "2026-11-27T12:00:00.000Z";

/** The head of the scripted session and its first `turns` turns. */
const history = (format, turns) => session(format, turns).all;

test("context-keeper/lite has the main entry's API, through import and require alike", () => {
  assert.deepEqual(Object.keys(lite).sort(), Object.keys(main).sort());
  const cjs = require("context-keeper/lite");
  for (const key of Object.keys(lite)) assert.equal(lite[key], cjs[key], key);
  assert.equal(lite.ContextKeeperError, main.ContextKeeperError);
  for (const text of [...Object.values(texts), ...sampleTexts]) assert.equal(lite.estimateTokens(text), main.estimateTokens(text));
});

test("its counts are the estimator's text in the model's framing, never exact", () => {
  for (const model of ["gpt-4o", "gpt-4", "claude-sonnet-4-5", undefined]) {
    for (const format of FORMATS) {
      const messages = history(format, 3);
      const options = { model, format };
      const [estimated, exact] = [lite.countMessages(messages, options), main.countMessages(messages, options)];
      assert.equal(estimated.exact, false, `${model} ${format}`);
      assert.equal(estimated.perMessage.length, messages.length);
      // The framing (per message, per tool call, the reply's priming) is the model's, by the
      // same rules; only the tokens of each text are estimated.
      assert.equal(estimated.byKind.overhead, exact.byKind.overhead, `${model} ${format}`);
      // The estimate is near the exact count (the estimator's error on code: a few percent).
      assert.ok(Math.abs(estimated.total / exact.total - 1) < 0.15, `${model} ${format}: ${estimated.total} vs ${exact.total}`);
    }
  }
  const text = sampleTexts[0];
  const one = lite.countMessages([{ role: "user", content: text }], { model: "gpt-4o" });
  assert.equal(one.byKind.text, lite.estimateTokens(text));
  assert.equal(one.total, lite.estimateTokens(text) + 4 + 3, "3 a message, 1 for the role, 3 to prime the reply");
  assert.equal(lite.isWithinLimit([{ role: "user", content: text }], one.total, { model: "gpt-4o" }), one.total);
  assert.equal(lite.isWithinLimit([{ role: "user", content: text }], one.total - 1, { model: "gpt-4o" }), false);
});

test("countTokens refuses, naming the entries that count exactly; the instance goes on", () => {
  for (const [options, encoding] of [[{}, "o200k_base"], [{ model: "gpt-4" }, "cl100k_base"], [{ encoding: "cl100k_base" }, "cl100k_base"]]) {
    assert.throws(() => lite.countTokens("hello", options), (err) => {
      assert.ok(err instanceof main.ContextKeeperError);
      assert.equal(err.kind, "encoding");
      assert.match(err.message, new RegExp(`^${encoding} is not in this build of context-keeper; count it with an entry that has it: "context-keeper" \\(every encoding\\)`));
      return true;
    });
  }
  assert.equal(lite.countMessages([{ role: "user", content: "hello world" }]).exact, false);
});

test("calibration applies to every model, gpt-4o included", () => {
  lite.clearCalibration();
  const messages = history("openai", 2);
  const before = lite.countMessages(messages, { model: "gpt-4o" });
  const calibration = lite.calibrate({ model: "gpt-4o", inputTokens: 150, estimated: 100 });
  assert.equal(calibration.applied, true);
  const after = lite.countMessages(messages, { model: "gpt-4o" });
  assert.equal(after.calibrated, true);
  assert.equal(after.total, Math.round(before.total * 1.5));
  lite.clearCalibration();
  assert.equal(lite.countMessages(messages, { model: "gpt-4o" }).total, before.total);
  // The exact entry leaves an exactly counted model alone.
  assert.equal(main.calibrate({ model: "gpt-4o", inputTokens: 150, estimated: 100 }).applied, false);
});

for (const format of FORMATS) {
  test(`the lite keeper keeps a ${format} session of 100 turns in budget, valid, the latest turn verbatim`, async () => {
    const keeper = new lite.ContextKeeper({ model: "gpt-4o", contextWindow: 12_000, store: new MemoryStore(), summarize: () => SUMMARY });
    let compactions = 0;
    const turns = session(format, 100);
    for (let n = 1; n <= 100; n++) {
      const input = turns.history(n);
      const { messages, report } = await keeper.prepare(input, { sessionId: "s", now: NOW });
      assert.ok(report.fits, `turn ${n}: ${report.overBudget}`);
      assert.equal(report.estimated, true, "every figure is an estimate");
      assert.ok(report.tokensAfter <= keeper.budget.compactAt, `turn ${n}`);
      assert.equal(lite.countMessages(messages, { model: "gpt-4o", format }).total, report.tokensAfter, `turn ${n}: the report's figure is the output's count`);
      assert.deepEqual(lite.validateMessages(messages, { format }), [], `turn ${n}`);
      assert.deepEqual(messages.slice(-2), input.slice(-2), `turn ${n}: the latest turn verbatim`);
      if (report.decision === "compacted") compactions++;
    }
    assert.ok(compactions >= 1, "a 100-turn session outgrows a 12,000-token window");
    keeper.free();
  });
}

test("the lite keeper offloads a result too large for the window and reads it back byte for byte; usage calibrates gpt-4o", async () => {
  const store = new MemoryStore();
  const keeper = new lite.ContextKeeper({ model: "gpt-4o", contextWindow: 32_000, store });
  const huge = makeOutput(6_000);
  const input = [...history("openai", 1),
    { role: "assistant", content: null, tool_calls: [{ id: "call_big", type: "function", function: { name: "bash", arguments: "{\"command\":\"cat data.csv\"}" } }] },
    { role: "tool", tool_call_id: "call_big", content: huge }];
  const first = await keeper.prepare(input, { sessionId: "big" });
  assert.equal(first.report.offloaded.length, 1);
  assert.match(first.messages.at(-1).content, /read_offloaded/);
  const id = first.report.offloaded[0].original.id;
  assert.equal((await readAll(lite, id, { store, sessionId: "big" })).text, huge);
  // The provider read 20% more than estimated: the next prepare of the session counts that way.
  const read = Math.round(first.report.tokensAfter * 1.2);
  const usage = await keeper.recordUsage("big", { prompt_tokens: read, completion_tokens: 10 });
  assert.ok(Math.abs(usage.calibration - 1.2) < 0.001, `calibration ${usage.calibration}`);
  const again = await keeper.prepare(input, { sessionId: "big" });
  assert.ok(Math.abs(again.report.tokensAfter - read) <= 1, `${again.report.tokensAfter} after calibration, the provider read ${read}`);
  keeper.free();
});

test("context-keeper/estimate is the estimator alone", () => {
  assert.deepEqual(Object.keys(estimate).filter((k) => !k.startsWith("__")), ["ContextKeeperError", "estimateTokens"]);
  assert.equal(require("context-keeper/estimate").estimateTokens, estimate.estimateTokens);
  for (const text of [...Object.values(texts), ...sampleTexts]) assert.equal(estimate.estimateTokens(text), main.estimateTokens(text));
  assert.throws(() => estimate.estimateTokens(42), (err) => err instanceof main.ContextKeeperError && err.kind === "options" && err.path === "text");
});
