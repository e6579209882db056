// The rolling window through the built package in Node: a 40-iteration scripted agent loop in
// every format with the summarizer called exactly at each interval, every way a summary can
// fail (kept raw, retried at the next interval), budgets that hold, the state carried by the
// store alone (a stateless Worker), and the heuristic summary offline.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ContextKeeperError,
  rollingWindow,
  readArchive,
  activeMessages,
  validateMessages,
  countMessages,
} from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";

const GOAL = "The CSV export in src/export/csv.rs drops negative amounts. Fix it and run `cargo test --locked`.";
const body = (i) => `line ${i}\n${"fn export_row(amount: i64) -> String { todo!() }\n".repeat(20)}`;

/** An agent loop of `n` iterations in one of the formats (a UIMessage holds them as steps). */
function agent(kind, n) {
  const out = [];
  if (kind === "openai") {
    out.push({ role: "system", content: "You are a coding agent." }, { role: "user", content: GOAL });
    for (let i = 0; i < n; i++) {
      out.push({ role: "assistant", content: `Step ${i}: reading src/export/csv.rs`, tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `sed -n ${i},+40p src/export/csv.rs` }) } }] });
      out.push({ role: "tool", tool_call_id: `call_${i}`, content: body(i) });
    }
  } else if (kind === "anthropic") {
    out.push({ role: "user", content: GOAL });
    for (let i = 0; i < n; i++) {
      out.push({ role: "assistant", content: [{ type: "thinking", thinking: `think ${i}`, signature: `sig${i}` }, { type: "tool_use", id: `toolu_${i}`, name: "bash", input: { command: `sed -n ${i},+40p src/export/csv.rs` } }] });
      out.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: body(i) }] });
    }
  } else if (kind === "modelmessage") {
    out.push({ role: "system", content: "You are a coding agent." }, { role: "user", content: [{ type: "text", text: GOAL }] });
    for (let i = 0; i < n; i++) {
      out.push({ role: "assistant", content: [{ type: "text", text: `Step ${i}` }, { type: "tool-call", toolCallId: `c${i}`, toolName: "bash", input: { command: `sed -n ${i},+40p src/export/csv.rs` } }] });
      out.push({ role: "tool", content: [{ type: "tool-result", toolCallId: `c${i}`, toolName: "bash", output: { type: "text", value: body(i) } }] });
    }
  } else {
    out.push({ id: "s", role: "system", parts: [{ type: "text", text: "You are a coding agent." }] }, { id: "u", role: "user", parts: [{ type: "text", text: GOAL }] });
    if (n > 0) {
      const parts = [];
      for (let i = 0; i < n; i++) {
        parts.push({ type: "step-start" }, { type: "text", text: `Step ${i}` }, { type: "tool-bash", toolCallId: `c${i}`, state: "output-available", input: { command: `sed -n ${i},+40p src/export/csv.rs` }, output: body(i) });
      }
      out.push({ id: "a", role: "assistant", parts });
    }
  }
  return out;
}

const KINDS = ["openai", "anthropic", "modelmessage", "uimessage"];
const NOW = "2026-11-25T12:00:00.000Z";
const SUMMARY = "Intent: fix negative amounts in the CSV export. Progress: read the export code. Next: patch export_row.";
const base = (store, extra = {}) => ({ store, sessionId: "s1", model: "gpt-4o", now: NOW, ...extra });

test("a 40-iteration agent loop folds exactly at each interval, in every format", async () => {
  for (const kind of KINDS) {
    const store = new MemoryStore();
    const calledAt = [];
    let prefix = null;
    for (let t = 1; t <= 40; t++) {
      const history = agent(kind, t);
      const frozen = JSON.stringify(history);
      const { messages, marker, report } = await rollingWindow(history, base(store, {
        summarize: async (request) => {
          calledAt.push(t);
          assert.ok(request.messages.length > 0 && request.transcript.length > 0);
          if (t > 10) assert.match(request.previousSummary, /^Intent/);
          return `${SUMMARY} (to iteration ${t})`;
        },
      }));
      assert.equal(JSON.stringify(history), frozen, "the input is not mutated");
      const folded = Math.max(0, Math.floor(t / 10) * 10 - 5);
      assert.equal(report.folded, folded, `${kind} ${t}`);
      assert.equal(report.iterations, t);
      assert.equal(report.rawIterations, t - folded);
      assert.deepEqual(validateMessages(messages), [], `${kind} ${t}`);
      assert.deepEqual(activeMessages(messages), messages, "the model sees all of it");
      if (folded === 0) {
        assert.equal(messages, history, `${kind} ${t}: the caller's array, nothing to fold`);
        continue;
      }
      assert.equal(marker.iterations, folded);
      assert.ok(marker.summary.startsWith(SUMMARY));
      // the raw iterations are the caller's own objects (but for the one UIMessage, cut at a step)
      const last = messages[messages.length - 1];
      if (kind === "uimessage") {
        assert.deepEqual(last.parts, history[2].parts.slice(folded * 3));
        assert.equal(last.id, "a");
      } else {
        const raw = 2 * (t - folded);
        messages.slice(-raw).forEach((m, i) => assert.equal(m, history[history.length - raw + i], `${kind} ${t}: raw iteration is the caller's`));
      }
      // between intervals the prefix, up to and with the summary, does not change
      const markerAt = messages.findIndex((m) => JSON.stringify(m).includes("<context-keeper-compaction"));
      const now = JSON.stringify(messages.slice(0, markerAt + 1));
      if (t % 10 !== 0) assert.equal(now, prefix, `${kind} ${t}: stable prefix`);
      prefix = now;
    }
    assert.deepEqual(calledAt, [10, 20, 30, 40], kind);
    // every folded message is in the archives, in order
    const last = await rollingWindow(agent(kind, 40), base(store, { summarize: () => assert.fail("not due") }));
    const archived = await readArchive(last.marker, { store });
    assert.equal(archived.archives, 4, kind);
    if (kind === "openai") assert.deepEqual(archived.messages, agent(kind, 35).slice(2));
  }
});

test("a summary that fails in any way keeps the iterations raw and is retried at the next interval", async () => {
  const cases = [
    ["throws", () => { throw new Error("boom"); }, "summarize", /boom/],
    ["rejects", async () => { throw new TypeError("fetch failed"); }, "summarize", /TypeError: fetch failed/],
    ["times out", () => new Promise(() => {}), "summarize", /timed out after 50 ms/],
    ["returns a number", () => 42, "summarize", /returned a number/],
    ["returns empty text", () => "", "check", /empty/],
    ["returns an API error", () => '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "check", /API error/],
    ["returns an exception text", () => "Error: 429 Too Many Requests", "check", /error message/],
    ["returns more than the input", () => "word ".repeat(50_000), "check", /not shorter/],
  ];
  for (const [name, failing, phase, reason] of cases) {
    const store = new MemoryStore();
    const calledAt = [];
    for (let t = 1; t <= 20; t++) {
      const history = agent("openai", t);
      const summarize = (request) => (calledAt.push(t), t === 10 ? failing(request) : SUMMARY);
      const { messages, report } = await rollingWindow(history, base(store, { summarize, timeoutMs: 50 }));
      if (t === 10) {
        assert.equal(report.outcome, "failed", name);
        assert.equal(report.phase, phase, name);
        assert.match(report.reason, reason, name);
        assert.equal(report.nextFoldAt, 20, name);
      }
      if (t < 20) assert.equal(messages, history, `${name} ${t}: raw, the caller's array`);
      else assert.equal(report.outcome, "folded", `${name}: the next interval succeeds`);
    }
    assert.deepEqual(calledAt, [10, 20], name);
  }
});

test("an archive that cannot be stored keeps the iterations raw before the summarizer is called", async () => {
  const history = agent("modelmessage", 10);
  for (const fault of ["reject", "throw", "quota", "hang"]) {
    const store = new FaultyStore(new MemoryStore(), [{ op: "save", fault, times: 1 }]);
    let called = false;
    const { messages, report } = await rollingWindow(history, base(store, { storeTimeoutMs: 50, summarize: () => ((called = true), SUMMARY) }));
    assert.equal(messages, history, fault);
    assert.equal(report.outcome, "failed", fault);
    assert.equal(report.phase, "archive", fault);
    assert.equal(called, false, fault);
  }
});

test("budgets hold: a total shared by the sections, and each section by its own rule", async () => {
  for (const kind of KINDS) {
    const store = new MemoryStore();
    for (let t = 1; t <= 30; t++) {
      const { messages, report } = await rollingWindow(agent(kind, t), base(store, { budget: 3_000, summarize: () => SUMMARY }));
      const total = countMessages(messages, { model: "gpt-4o" }).total;
      assert.ok(total <= 3_000, `${kind} ${t}: ${total}`);
      assert.equal(report.withinBudget, true, `${kind} ${t}: ${report.overBudget}`);
      assert.ok(Math.abs(report.tokensAfter - total) <= 2);
      assert.ok(report.rawIterations >= 1);
    }
  }
  // per section: the goal cut in the middle with a note, the instructions never below their minimum
  const history = agent("openai", 3);
  history[0] = { role: "system", content: "Rule. ".repeat(3_000) };
  history[1] = { role: "user", content: `${GOAL}\n${"A detail of the task.\n".repeat(500)}` };
  const { messages, report } = await rollingWindow(history, base(new MemoryStore(), {
    budget: { goal: 200, instructions: 100, recent: 5_000 },
    minInstructionsTokens: 400,
    instructions: "Always run the tests.",
  }));
  assert.equal(messages[0].content, "Always run the tests.");
  assert.ok(report.sections.goal.truncated && report.sections.goal.tokens <= 200);
  assert.ok(report.sections.instructions.truncated && report.sections.instructions.tokens <= 400);
  assert.equal(report.sections.instructions.budget, 400);
  assert.match(messages[2].content, /^The CSV export[^]*the middle of the first request was cut by context-keeper/);
  assert.equal(messages[3], history[2], "the iterations are the caller's");
});

test("the state lives in the store: a fresh call with only the store carries on (stateless Worker)", async () => {
  const store = new MemoryStore();
  const worker = (messages, summarize) => rollingWindow(messages, base(store, { summarize }));
  const first = await worker(agent("anthropic", 10), () => SUMMARY);
  assert.equal(first.report.outcome, "folded");
  const state = await store.load(["context-keeper", "s1", "state", "rolling"]);
  assert.ok(state instanceof Uint8Array);
  // the full history again: the stored summary, in the same place, no summarizer call
  const again = await worker(agent("anthropic", 11), () => assert.fail("not due"));
  assert.equal(again.report.folded, 5);
  assert.equal(JSON.stringify(again.messages.slice(0, 1)), JSON.stringify(first.messages.slice(0, 1)));
  // or what it sent, with the next iteration appended: the same output
  const sent = [...first.messages, ...agent("anthropic", 11).slice(-2)];
  const back = await worker(sent, () => assert.fail("not due"));
  assert.equal(JSON.stringify(back.messages), JSON.stringify(again.messages));
  // another store knows nothing: it folds only at the interval it sees
  const fresh = await rollingWindow(agent("anthropic", 11), base(new MemoryStore(), { summarize: () => SUMMARY }));
  assert.equal(fresh.report.outcome, "folded");
});

test("without a summarizer the heuristic summary works offline, marked as such", async () => {
  const store = new MemoryStore();
  const { messages, marker, report } = await rollingWindow(agent("uimessage", 10), base(store));
  assert.equal(report.outcome, "folded");
  assert.equal(report.heuristic, true);
  assert.match(marker.summary, /^\[heuristic summary/);
  assert.match(marker.summary, /src\/export\/csv\.rs/);
  assert.equal(messages[2].id, "context-keeper-compaction-1");
});

test("bad options are ContextKeeperErrors naming the option", async () => {
  const store = new MemoryStore();
  const cases = [
    [{ sessionId: "s" }, "options.store"],
    [{ store }, "options.sessionId"],
    [{ store, sessionId: "s", keepIterations: 0 }, "options.keepIterations"],
    [{ store, sessionId: "s", resummarizeEvery: 0 }, "options.resummarizeEvery"],
    [{ store, sessionId: "s", budget: "lots" }, "options.budget"],
    [{ store, sessionId: "s", budget: { recnet: 5 } }, "options.budget.recnet"],
    [{ store, sessionId: "s", summarize: "no" }, "options.summarize"],
    [{ store, sessionId: "s", keepIterationz: 2 }, "options.keepIterationz"],
  ];
  for (const [options, path] of cases) {
    await assert.rejects(rollingWindow(agent("openai", 3), options), (e) => e instanceof ContextKeeperError && e.kind === "options" && e.path === path, JSON.stringify(options));
  }
  await assert.rejects(rollingWindow(agent("anthropic", 3), { store, sessionId: "s", instructions: "x" }), (e) => e instanceof ContextKeeperError && e.path === "options.instructions");
  await assert.rejects(rollingWindow([{ role: "user", content: 5 }], { store, sessionId: "s" }), (e) => e instanceof ContextKeeperError && e.kind === "messages");
});
