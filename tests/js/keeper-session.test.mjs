// Issue #21's proof: the 300-turn agent session (tests/data/sessions), its first 200 turns, in
// the OpenAI, Anthropic and AI SDK formats, through one ContextKeeper under a 32k window, the
// full history handed to prepare before every model call. At every call: the messages
// validate, fit the budget (by the keeper's report and by an independent count), and the
// turn just taken comes back as the caller's own objects (unless a result of it was offloaded,
// which the report names). Over the run: edits happen in steps, so the prefix the provider
// cached moves on at most one turn in four; the keeper compacts, so it is tested there too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ContextKeeper, countMessages, listOffloaded, validateMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { loadSession } from "./fixtures.mjs";
import { FORMATS, KEEPER_WINDOW, keeperReplay, listOf, replayFigures, scriptedSummarizer } from "./session-replay.mjs";

const TURNS = 200;

/** Each tool result's text by its call id (the texts of this session are plain strings). */
function resultTexts(format, list) {
  const out = new Map();
  for (const m of list) {
    if (format === "openai" && m.role === "tool") out.set(m.tool_call_id, m.content);
    for (const p of Array.isArray(m.content) ? m.content : []) {
      if (p.type === "tool_result") out.set(p.tool_use_id, typeof p.content === "string" ? p.content : p.content.map((b) => b.text ?? "").join(""));
      if (p.type === "tool-result") out.set(p.toolCallId, p.output.value);
    }
  }
  return out;
}

for (const format of ["openai", "anthropic", "aisdk"]) {
  test(`${format}: ${TURNS} turns under a ${KEEPER_WINDOW}-token window`, async (t) => {
    const session = loadSession(format);
    const { summarize, calls } = scriptedSummarizer();
    const { records, store } = await keeperReplay({ ContextKeeper, MemoryStore }, format, session, { turns: TURNS, summarize });
    assert.equal(records.length, TURNS);
    const model = FORMATS[format].model;
    for (const [t, { history, messages, report, added }] of records.entries()) {
      const where = `${format} turn ${t}`;
      assert.deepEqual(validateMessages(messages), [], where);
      assert.equal(report.fits, true, `${where}: ${report.overBudget}`);
      const counted = countMessages(messages, { model }).total;
      assert.equal(counted, report.tokensAfter, `${where}: the report's count is the output's`);
      assert.ok(counted <= report.budget.compactAt, `${where}: ${counted} > ${report.budget.compactAt}`);
      // the turn just taken is the caller's own objects, at the end, unless offloaded (the
      // report names offloads by their index in the history given)
      const out = listOf(messages);
      const given = listOf(history).length;
      const offloaded = new Set(report.offloaded.map((e) => e.messageIndex));
      added.forEach((message, k) => {
        if (offloaded.has(given - added.length + k)) return;
        assert.equal(out[out.length - added.length + k], message, `${where}: message ${k} of the turn is not the caller's object`);
      });
    }
    // what was offloaded reads back whole
    const pointers = records.flatMap((r) => r.report.offloaded.filter((e) => e.action === "offload"));
    assert.ok(pointers.length > 0, "the session's long results are offloaded under a 32k window");
    const figures = replayFigures(records);
    t.diagnostic(JSON.stringify({ format, ...figures, medianMs: +figures.medianMs.toFixed(2), p99Ms: +figures.p99Ms.toFixed(2), summaries: calls.length }));
    assert.ok(figures.compactions >= 1, "200 turns of this session overflow 32k even pruned: the keeper compacts");
    assert.ok(figures.movedShare <= 0.25, `the prefix moved on ${figures.moved} of ${TURNS - 1} turns`);
    // and only when a decision was made: a turn under the threshold or holding the standing
    // decision leaves every earlier message as the previous call sent it
    assert.deepEqual(Object.keys(figures.movedOn).filter((d) => d === "under" || d === "held"), [], JSON.stringify(figures.movedOn));
    assert.ok(figures.peakTokensBefore > 2 * KEEPER_WINDOW, "the history grows far past the window");
    // every result offloaded is in the store: its size and hash those of the caller's text
    const { offloads, damaged } = await listOffloaded({ store, sessionId: `replay-${format}` });
    assert.deepEqual(damaged, []);
    const stored = new Map(offloads.map((h) => [h.toolCallId, h]));
    const texts = resultTexts(format, listOf(records.at(-1).history));
    for (const id of new Set(pointers.map((e) => e.toolCallId))) {
      const header = stored.get(id);
      assert.ok(header !== undefined, `the result of ${id} is stored`);
      const text = texts.get(id);
      assert.equal(header.bytes, Buffer.byteLength(text), `${id}: bytes`);
      assert.equal(header.sha256, createHash("sha256").update(text).digest("hex"), `${id}: sha256`);
    }
  });
}
