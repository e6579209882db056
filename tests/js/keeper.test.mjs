// The ContextKeeper through the built package in Node: a scripted agent session in each format
// through prepare under a small window (every call valid, in budget, recent turns verbatim,
// the prefix moving in steps), the fast path's output equal to a fresh keeper's, the stateless
// case (a new keeper per call, state in the store), offloads, failures, re-entrancy, the dry
// run, usage and stats, the tools and the prompt segment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ContextKeeper, ContextKeeperError, validateMessages, countMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";
import { FORMATS, SUMMARY, head, session, turn } from "./agent-session.mjs";

const NOW = "2026-11-25T12:00:00.000Z";

/** How many leading messages of `b` are those of `a`, word for word. */
function sameLead(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && JSON.stringify(a[n]) === JSON.stringify(b[n])) n++;
  return n;
}

for (const format of FORMATS) {
  test(`a ${format} session of 120 turns stays in budget and valid, recent turns verbatim, prefix moving in steps`, async () => {
    const store = new MemoryStore();
    const summaries = [];
    const keeper = new ContextKeeper({
      model: "gpt-4o", contextWindow: 12_000, store,
      summarize: ({ transcript }) => {
        summaries.push(transcript.length);
        return SUMMARY;
      },
    });
    const { history } = session(format, 120);
    let previous = null;
    let moves = 0;
    let compactions = 0;
    let sent = 0;
    let previousTokens = 0;
    for (let n = 1; n <= 120; n++) {
      const input = history(n);
      const frozen = JSON.stringify(input);
      const { messages, report } = await keeper.prepare(input, { sessionId: "s", now: NOW });
      assert.equal(JSON.stringify(input), frozen, "the history is never mutated");
      assert.ok(report.managed);
      assert.ok(report.fits, `turn ${n}: ${report.overBudget}`);
      assert.ok(report.tokensAfter <= keeper.budget.compactAt);
      assert.deepEqual(validateMessages(messages, { format: format === "aisdk" ? "aisdk" : format }), [], `turn ${n}`);
      // the latest exchange is the caller's own objects
      assert.equal(messages[messages.length - 1], input[input.length - 1]);
      assert.equal(messages[messages.length - 2], input[input.length - 2]);
      if (previous !== null && report.unchangedPrefix !== previous.length) moves++;
      // the leading messages sent as they were last time, whichever call (the fast path's or
      // a full prepare after it) answers
      assert.equal(report.unchangedPrefix, previous === null ? null : sameLead(previous, messages), `turn ${n}`);
      compactions += report.decision === "compacted" ? 1 : 0;
      previous = messages;
      sent += report.tokensAfter;
      previousTokens = report.tokensAfter;
    }
    assert.ok(compactions >= 1, "the session outgrows pruning");
    assert.equal(summaries.length, compactions);
    assert.ok(moves * 4 <= 120, `${moves} prefix moves in 120 turns`);
    const stats = await keeper.stats("s");
    assert.equal(stats.events.compactions, compactions);
    assert.ok(stats.saved.prune + stats.saved.compact > 0);
    // every prepare counted, those answered without the core too
    assert.equal(stats.prepared, 120);
    assert.equal(stats.tokensSent, sent);
    assert.equal(stats.lastTokens, previousTokens);
    keeper.free();
  });
}

test("the fast path gives what a fresh keeper with the stored state gives, byte for byte, and says so with the same figures", async () => {
  const store = new MemoryStore();
  const options = { model: "gpt-4o", contextWindow: 12_000, store, summarize: () => SUMMARY };
  const warm = new ContextKeeper(options);
  const { history } = session("openai", 80);
  const figures = ({ tokensBefore, tokensAfter, fits, decision, holdsFor, messages }) => ({ tokensBefore, tokensAfter, fits, decision, holdsFor, messages });
  let compared = 0;
  for (let n = 1; n <= 80; n++) {
    const input = history(n);
    const hot = await warm.prepare(input, { sessionId: "s", now: NOW });
    // a stateless Worker: a new keeper, the same store (its state written by the warm one)
    const cold = new ContextKeeper({ ...options, summarize: () => assert.fail("the summary is stored") });
    const fresh = await cold.plan(input, { sessionId: "s", now: NOW });
    cold.free();
    assert.equal(JSON.stringify(fresh.messages), JSON.stringify(hot.messages), `turn ${n}`);
    // NOTE: where nothing new was decided (most of these the fast path's answers), the
    // figures are the core's too
    if (hot.report.decision === "under" || hot.report.decision === "held") {
      assert.deepEqual(figures(hot.report), figures(fresh.report), `turn ${n}`);
      compared++;
    }
  }
  assert.ok(compared > 40, `${compared} turns compared`);
});

test("a message edited in place between prepares is read as it is now, never from what the keeper parsed before", async () => {
  const store = new MemoryStore();
  const options = { model: "gpt-4o", contextWindow: 12_000, store, summarize: () => SUMMARY };
  const warm = new ContextKeeper(options);
  const { all, history } = session("openai", 80);
  const same = async (n) => {
    const input = history(n);
    const hot = await warm.prepare(input, { sessionId: "s", now: NOW });
    const cold = new ContextKeeper({ ...options, summarize: () => assert.fail("the summary is stored") });
    const fresh = await cold.plan(input, { sessionId: "s", now: NOW });
    cold.free();
    assert.equal(JSON.stringify(hot.messages), JSON.stringify(fresh.messages), `turn ${n}`);
  };
  for (let n = 1; n <= 40; n++) await same(n);
  // An old result (pruned by now), an old call's arguments, a new key, a streamed last result.
  all[7].content = all[7].content.replace(/export_row/g, "export_line");
  all[4].tool_calls[0].function.arguments = JSON.stringify({ command: "cat src/export/mod.rs" });
  all[9].name = "bash";
  for (let n = 41; n <= 80; n++) {
    const last = all[history(n).length - 1];
    last.content += "\n(more output)";
    await same(n);
  }
  warm.free();
});

test("a standing cut reaches the model as the same object at each later decision, and one the host edited is made again", async () => {
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 12_000, store: new MemoryStore(), summarize: () => SUMMARY });
  const { history } = session("openai", 120);
  let previous = null;
  let decisions = 0;
  let reused = 0;
  let edited = null;
  let checked = 0;
  for (let n = 1; n <= 120; n++) {
    const input = history(n);
    const { messages, report } = await keeper.prepare(input, { sessionId: "s", now: NOW });
    const decided = report.decision === "pruned" || report.decision === "cleared";
    // a compaction folds the cut messages away: nothing left to compare
    if (report.decision === "compacted") edited = null;
    if (decided && previous !== null) {
      decisions++;
      const ours = new Set(input);
      for (let i = 0; i < Math.min(messages.length, previous.length); i++) {
        if (messages[i] === previous[i] && !ours.has(messages[i])) reused++;
      }
      if (edited !== null) {
        // the object the host changed is not given again: the cut is written afresh
        assert.ok(!messages.includes(edited.object), `turn ${n}: the edited object came back`);
        assert.ok(!JSON.stringify(messages).includes("edited by the host"), `turn ${n}`);
        assert.ok(messages.some((m) => m.content === edited.content), `turn ${n}: the cut is made again`);
        edited = null;
        checked++;
      }
    }
    if (decided && edited === null) {
      const at = messages.findIndex((m, i) => m !== input[i] && m.role === "tool" && i < messages.length - 8);
      if (at >= 0) {
        edited = { object: messages[at], content: messages[at].content };
        messages[at].content = "edited by the host";
      }
    }
    previous = messages;
  }
  assert.ok(decisions >= 2, `${decisions} decisions`);
  assert.ok(reused > 0, "a standing cut was made into a new object at a later decision");
  assert.ok(checked > 0, "no decision followed an edit");
  keeper.free();
});

test("a stateless keeper per call (full history each time) re-applies decisions without a second summary", async () => {
  const store = new MemoryStore();
  let summaries = 0;
  const { history } = session("anthropic", 90);
  let last;
  for (let n = 1; n <= 90; n++) {
    const keeper = new ContextKeeper({ model: "claude-sonnet-4-5", contextWindow: 12_000, store, summarize: () => (summaries++, SUMMARY) });
    last = await keeper.prepare(history(n), { sessionId: "w", now: NOW });
    assert.ok(last.report.fits, `turn ${n}`);
    keeper.free();
  }
  const stats = await new ContextKeeper({ model: "claude-sonnet-4-5", contextWindow: 12_000, store }).stats("w");
  assert.equal(summaries, stats.events.compactions);
  assert.ok(summaries >= 1);
});

test("the newest result stays whole while it fits, and is offloaded when it alone cannot, readable through the keeper's tools, and not saved twice", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: "gpt-4o", store });
  const history = [...head("openai"), ...turn("openai", 0)];
  const huge = Array.from({ length: 6000 }, (_, i) => `row ${i}: ${i * 7} ${i * 13} ok`).join("\n");
  history.push({ role: "assistant", content: null, tool_calls: [{ id: "call_big", type: "function", function: { name: "bash", arguments: "{\"command\":\"cat data.csv\"}" } }] });
  history.push({ role: "tool", tool_call_id: "call_big", content: huge });
  // about 60,000 tokens: within gpt-4o's 128k budget, the model reads it whole
  const whole = await keeper.prepare(history, { sessionId: "w" });
  assert.equal(whole.report.offloaded.length, 0);
  assert.equal(whole.messages[5], history[5]);
  let saves = 0;
  const counting = new Proxy(store, { get: (s, k) => (k === "save" ? (key, v) => (saves++, s.save(key, v)) : s[k].bind(s)) });
  // a 64k window's budget (48,000) cannot hold it
  const k2 = new ContextKeeper({ model: "gpt-4o", contextWindow: 64_000, store: counting });
  const { messages, report } = await k2.prepare(history, { sessionId: "s" });
  assert.equal(report.offloaded.length, 1);
  assert.equal(report.decision, "offloaded", "a prepare that offloaded says so, not \"under\"");
  assert.match(messages[5].content, /read_offloaded/);
  assert.equal(messages[0], history[0]);
  const id = report.offloaded[0].original.id;
  const { handle } = k2.tools({ sessionId: "s" });
  assert.match(await handle("read_offloaded", { id, offset: 100, limit: 2 }), /row 99: 693/);
  const before = saves;
  const k3 = new ContextKeeper({ model: "gpt-4o", contextWindow: 64_000, store: counting });
  const again = await k3.prepare(history, { sessionId: "s" });
  assert.equal(saves - before, 1, "only the state is written again, not the result");
  assert.equal(again.report.decision, "under", "the standing offload re-applied is nothing new");
  keeper.free();
});

test("a store that fails keeps every result and reports it", async () => {
  const store = new FaultyStore(new MemoryStore(), (op, key) => (op === "save" && key.includes("offload") ? "quota" : undefined));
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 32_000, store, storeTimeoutMs: 200 });
  const history = [...head("openai")];
  history.push({ role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: "{}" } }] });
  history.push({ role: "tool", tool_call_id: "c1", content: "x ".repeat(60_000) });
  const { messages, report } = await keeper.prepare(history, { sessionId: "s" });
  assert.equal(messages[3], history[3]);
  assert.equal(report.failures.length, 1);
});

test("a session state the store cannot read: the prepare is made without it, says so, and leaves the state as it was; it throws only when nothing valid fits", async () => {
  const inner = new MemoryStore();
  let down = false;
  const store = new FaultyStore(inner, (op, key) => (down && op === "load" && key[2] === "state" ? "reject" : undefined));
  const options = { model: "gpt-4o", contextWindow: 12_000, store, summarize: () => SUMMARY, storeTimeoutMs: 200 };
  const keeper = new ContextKeeper(options);
  const { history } = session("openai", 60);
  const STATE_KEY = ["context-keeper", "s", "state", "session"];
  let stored;
  for (let n = 1; n <= 40; n++) await keeper.prepare(history(n), { sessionId: "s", now: NOW });
  stored = await inner.load(STATE_KEY);
  assert.ok(stored instanceof Uint8Array);
  down = true;
  for (let n = 41; n <= 60; n++) {
    const { messages, report } = await keeper.prepare(history(n), { sessionId: "s", now: NOW });
    assert.ok(report.fits, `turn ${n}`);
    assert.match(report.stateFailure, /^load .*state.*made without the session's state/, `turn ${n}`);
    assert.deepEqual(validateMessages(messages, { format: "openai" }), [], `turn ${n}`);
    assert.deepEqual(await inner.load(STATE_KEY), stored, `turn ${n}: the state was written over`);
  }
  // a stateless keeper too, on its first prepare
  const fresh = new ContextKeeper(options);
  assert.match((await fresh.prepare(history(60), { sessionId: "s", now: NOW })).report.stateFailure, /made without/);
  // one message over the window, its copy not storable either: nothing valid fits, the store's error is thrown
  const broken = new FaultyStore(new MemoryStore(), (op, key) => (op === "load" && key[2] === "state" ? "reject" : op === "save" ? "quota" : undefined));
  const k2 = new ContextKeeper({ model: "gpt-4o", contextWindow: 12_000, store: broken, storeTimeoutMs: 200 });
  const huge = [...head("openai"), { role: "user", content: "word ".repeat(20_000) }];
  await assert.rejects(k2.prepare(huge, { sessionId: "t" }), (error) => error instanceof ContextKeeperError && error.kind === "store" && /load/.test(error.message));
  down = false;
  const back = await keeper.prepare(history(60), { sessionId: "s", now: NOW });
  assert.equal(back.report.stateFailure, undefined);
  keeper.free();
  fresh.free();
  k2.free();
});

test("the budget is made as the README says: shares up to 1 (1 is the whole window), tokens above", () => {
  const at = (options) => new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), ...options }).budget;
  // gpt-4o's 128k: compact at window - 20,000 (under 95%), prune 5% of the window below it
  assert.deepEqual([at({}).compactAt, at({}).pruneAt], [108_000, 101_600]);
  // a 40k window: the reserve is a quarter of it
  assert.deepEqual([at({ contextWindow: 40_000 }).compactAt, at({ contextWindow: 40_000 }).pruneAt], [30_000, 28_000]);
  // 1 is the whole window (then held 5% under compactAt), never one token
  assert.equal(at({ thresholds: { prune: 1 } }).pruneAt, 101_600);
  assert.equal(at({ thresholds: { prune: 0.5 } }).pruneAt, 64_000);
  assert.equal(at({ thresholds: { prune: 50_000 } }).pruneAt, 50_000);
  assert.equal(at({ reserveTokens: 1, contextWindow: 40_000 }).compactAt, 30_000, "a reserve of the whole window is held to a quarter");
});

test("management is off with no model and no window, or enabled: false, and says so", async () => {
  const store = new MemoryStore();
  const history = session("openai", 3).all;
  for (const options of [{}, { model: "my-own-model", enabled: false }, { model: "gpt-4o", enabled: false }]) {
    const keeper = new ContextKeeper({ ...options, store });
    assert.equal(keeper.budget, null);
    const { messages, report } = await keeper.prepare(history, { sessionId: "s" });
    assert.equal(messages, history);
    assert.equal(report.managed, false);
    assert.match(report.reason, /contextWindow|enabled/);
  }
});

test("prepares of one session run one after another; onBusy: error throws a busy error", async () => {
  const store = new MemoryStore();
  let inside = 0;
  let most = 0;
  const slow = { ...store, load: async (k) => { inside++; most = Math.max(most, inside); await new Promise((r) => setTimeout(r, 5)); inside--; return store.load(k); }, save: (k, v) => store.save(k, v), loadRange: (p) => store.loadRange(p) };
  const keeper = new ContextKeeper({ model: "gpt-4o", store: slow });
  const { history } = session("openai", 5);
  await Promise.all([1, 2, 3, 4, 5].map((n) => keeper.prepare(history(n), { sessionId: "s" })));
  assert.equal(most, 1);
  const strict = new ContextKeeper({ model: "gpt-4o", store: slow, onBusy: "error" });
  const first = strict.prepare(history(2), { sessionId: "t" });
  await assert.rejects(strict.prepare(history(3), { sessionId: "t" }), (e) => e instanceof ContextKeeperError && e.kind === "busy");
  await first;
});

test("two keepers never share counts: each keeper's memo gives its own model's count", async () => {
  // windows large enough that nothing is pruned: every output is the input
  const a = new ContextKeeper({ model: "gpt-4o", contextWindow: 1_000_000, store: new MemoryStore() });
  const b = new ContextKeeper({ model: "gpt-4", contextWindow: 1_000_000, store: new MemoryStore() });
  const { history } = session("openai", 12);
  // the same message objects through both keepers, turn by turn: the second call on each takes
  // the fast path through its own memo; a memo id read in the other keeper's map would give a
  // count of some other message
  for (let n = 1; n <= 12; n++) {
    const input = history(n);
    const ra = await a.prepare(input, { sessionId: "s" });
    const rb = await b.prepare(input, { sessionId: "s" });
    assert.equal(ra.report.tokensAfter, countMessages(input, { model: "gpt-4o" }).total, `turn ${n}`);
    assert.equal(rb.report.tokensAfter, countMessages(input, { model: "gpt-4" }).total, `turn ${n}`);
  }
});

test("plan is a dry run: nothing stored, no callback called", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 3_000, store, summarize: () => assert.fail("dry run"), flush: () => assert.fail("dry run") });
  const { report } = await keeper.plan(session("openai", 40).all, { sessionId: "s" });
  assert.equal(report.dryRun, true);
  assert.equal(report.decision, "compacted");
  assert.deepEqual(await store.loadRange(["context-keeper"]), []);
});

test("Anthropic cache breakpoints: the system prompt and the end of the stable prefix, moved only with it", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: "claude-sonnet-4-5", contextWindow: 12_000, store, cacheBreakpoints: true, summarize: () => SUMMARY });
  const { all } = session("anthropic", 60);
  const request = (n) => ({ model: "claude-sonnet-4-5", max_tokens: 1024, system: [{ type: "text", text: "You are a coding agent." }], messages: all.slice(0, 1 + 2 * n) });
  let marks = null;
  for (let n = 1; n <= 60; n++) {
    const input = request(n);
    const { messages: out, report } = await keeper.prepare(input, { sessionId: "s" });
    assert.equal(input.system[0].cache_control, undefined, "the input is not mutated");
    const count = JSON.stringify(out).split('"cache_control"').length - 1;
    assert.ok(count <= 4);
    if (report.breakpoints.length > 0) {
      assert.deepEqual(out.system[0].cache_control, { type: "ephemeral" });
      if (marks !== null && marks.length === 2 && report.unchangedPrefix !== null && report.unchangedPrefix > marks[1]) {
        assert.deepEqual(report.breakpoints, marks, `turn ${n}: the breakpoints stay while the prefix does`);
      }
      marks = report.breakpoints;
    }
  }
  assert.ok(marks !== null && marks.length === 2);
});

test("usage, stats, the prompt segment, the tools and the memory file", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: "gpt-4o", store });
  const usage = await keeper.recordUsage("s", { input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 1000 });
  assert.deepEqual(usage, { calls: 1, inputTokens: 1200, outputTokens: 80, cacheReadTokens: 1000, cacheWriteTokens: 0, calibration: null });
  await keeper.recordUsage("s", { prompt_tokens: 10, completion_tokens: 2 });
  assert.equal((await keeper.stats("s")).usage.inputTokens, 1210);
  // an SDK's absent usage (OpenAI's `completion.usage` is optional) records nothing
  for (const none of [undefined, null]) assert.equal((await keeper.recordUsage("s", none)).calls, 2);
  await assert.rejects(keeper.recordUsage("s", { input_tokens: "many" }), (e) => e.kind === "options" && e.path === "usage.input_tokens");
  // each SDK's way of saying what it read from the prompt cache
  const cached = async (report) => {
    const k = new ContextKeeper({ model: "gpt-4o", store: new MemoryStore() });
    return k.recordUsage("u", report);
  };
  assert.equal((await cached({ prompt_tokens: 900, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 768 } })).cacheReadTokens, 768, "OpenAI chat");
  assert.equal((await cached({ input_tokens: 900, output_tokens: 5, input_tokens_details: { cached_tokens: 512 } })).cacheReadTokens, 512, "OpenAI Responses");
  const six = await cached({ inputTokens: 900, outputTokens: 5, inputTokenDetails: { noCacheTokens: 100, cacheReadTokens: 700, cacheWriteTokens: 100 } });
  assert.deepEqual([six.inputTokens, six.cacheReadTokens, six.cacheWriteTokens], [900, 700, 100], "AI SDK 6 and 7");
  const v3 = await cached({ inputTokens: { total: 900, noCache: 200, cacheRead: 600, cacheWrite: 100 }, outputTokens: { total: 5, text: 5 } });
  assert.deepEqual([v3.inputTokens, v3.outputTokens, v3.cacheReadTokens, v3.cacheWriteTokens], [900, 5, 600, 100], "a provider's usage (LanguageModelV3)");
  await assert.rejects(cached({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: -1 } }), (e) => e.kind === "options" && e.path === "usage.prompt_tokens_details.cached_tokens");
  const segment = keeper.systemPromptSegment();
  for (const name of ["read_offloaded", "grep_offloaded", "list_offloaded", "context-keeper-compaction"]) assert.ok(segment.includes(name), name);
  assert.ok(!/memory/i.test(segment), "no memory tool is promised to a model whose host gave it none");
  const flushing = new ContextKeeper({ model: "gpt-4o", store, flush: () => "SILENT" });
  assert.match(flushing.systemPromptSegment(), /memory tool/, "a host with a flush gives its agent a memory tool");
  assert.equal(keeper.tools({ sessionId: "s", format: "anthropic" }).definitions.length, 3);
  assert.equal(await keeper.loadMemory(), null);
  await store.save(["memories", "AGENTS.md"], new TextEncoder().encode("- prefers cargo nextest"));
  assert.equal(await keeper.loadMemory(), "- prefers cargo nextest");
  // memoryKey: where another host keeps the file
  const elsewhere = new ContextKeeper({ model: "gpt-4o", store, memoryKey: ["team", "NOTES.md"] });
  assert.equal(await elsewhere.loadMemory(), null);
  await store.save(["team", "NOTES.md"], new TextEncoder().encode("- deploys on Fridays"));
  assert.equal(await elsewhere.loadMemory(), "- deploys on Fridays");
  assert.throws(() => new ContextKeeper({ model: "gpt-4o", store, memoryKey: "AGENTS.md" }), (e) => e.kind === "options" && e.path === "options.memoryKey");
});

test("bad options are named", () => {
  assert.throws(() => new ContextKeeper({ model: "gpt-4o" }), (e) => e.kind === "options" && e.path === "options.store");
  assert.throws(() => new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), thresholds: { prune: "high" } }), (e) => e.kind === "options" && e.path === "options.thresholds.prune");
  assert.throws(() => new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), treshold: 1 }), (e) => e.kind === "options" && /treshold/.test(e.message));
  // in a JS caller's words, not Rust's (issue #42): no f64, u64, struct or backquotes
  const said = (options) => {
    try {
      new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), ...options }).free();
    } catch (e) {
      assert.equal(e.kind, "options");
      assert.doesNotMatch(e.message, /\b(f64|u64|usize|struct)\b|`/, e.message);
      return e.message;
    }
    assert.fail(`accepted ${JSON.stringify(options)}`);
  };
  assert.match(said({ thresholds: { prune: "high" } }), /^options\.thresholds\.prune: expected a number, found the string "high"$/);
  assert.match(said({ minTurnsBetween: -1 }), /^options\.minTurnsBetween: expected a whole number, 0 or more, found -1$/);
  assert.match(said({ minTurnsBetween: 1.5 }), /expected a whole number, 0 or more, found 1\.5$/);
  assert.match(said({ thresholds: "high" }), /^options\.thresholds: expected an object, found the string "high"$/);
  assert.match(said({ thresholds: { bogus: 1 } }), /^options\.thresholds\.bogus: unknown option "bogus"; known: prune, compact/);
  assert.match(said({ cacheBreakpoints: "yes" }), /expected true or false, found the string "yes"$/);
});

test("a mistyped or unknown model with no contextWindow is refused by name, with the registry's nearest names, not run unmanaged", async () => {
  const store = new MemoryStore();
  assert.throws(
    () => new ContextKeeper({ model: "gpt4o", store }),
    (e) => e instanceof ContextKeeperError && e.kind === "options" && e.path === "options.model" && /^options\.model: unknown model "gpt4o"/.test(e.message) && /Did you mean [^?]*"gpt-4o"/.test(e.message) && /contextWindow/.test(e.message),
  );
  assert.throws(() => new ContextKeeper({ model: "nope", store }), (e) => e.path === "options.model" && /unknown model "nope"/.test(e.message) && !/Did you mean/.test(e.message));
  // with its window given, an unknown model is managed (counted by the estimate)
  const mine = new ContextKeeper({ model: "nope", contextWindow: 2_000, store });
  const big = [{ role: "system", content: "s" }, { role: "user", content: "task" }, ...Array.from({ length: 12 }, (_, t) => turn("openai", t)).flat()];
  const { report } = await mine.prepare(big, { sessionId: "mine" });
  mine.free();
  assert.equal(report.managed, true);
  assert.notEqual(report.decision, "off");
  // and management turned off on purpose stays a choice
  const off = new ContextKeeper({ model: "nope", store, enabled: false });
  assert.equal((await off.prepare(big, { sessionId: "off" })).report.decision, "off");
  off.free();
});

test("recordUsage calibrates a model counted by proxy: by what the provider read of the last prepared messages, for this keeper and the session's next keeper", async () => {
  const store = new MemoryStore();
  const history = [...head("anthropic"), ...Array.from({ length: 6 }, (_, t) => turn("anthropic", t)).flat()];
  const request = { model: "claude-sonnet-4-5", max_tokens: 1_000, system: "You are a coding agent.", messages: history };
  const keeper = new ContextKeeper({ model: "claude-sonnet-4-5", contextWindow: 200_000, store });
  const first = await keeper.prepare(request, { sessionId: "cal" });
  assert.equal(first.report.estimated, true, "claude is counted by proxy");
  // the provider read 25% more than the estimate (Anthropic: input plus the cached tokens)
  const read = Math.round(first.report.tokensAfter * 1.25);
  const usage = await keeper.recordUsage("cal", { input_tokens: read - 1_000, cache_read_input_tokens: 1_000, output_tokens: 50 });
  assert.ok(Math.abs(usage.calibration - 1.25) < 0.001, `calibration ${usage.calibration}`);
  const again = await keeper.prepare(request, { sessionId: "cal" });
  assert.ok(Math.abs(again.report.tokensAfter - read) <= 1, `${again.report.tokensAfter} after calibration, the provider read ${read}`);
  // a new keeper (a stateless Worker's next request) loads it with the session state
  const next = new ContextKeeper({ model: "claude-sonnet-4-5", contextWindow: 200_000, store });
  const third = await next.prepare(request, { sessionId: "cal" });
  assert.equal(third.report.tokensAfter, again.report.tokensAfter);
  // another session of that keeper is not calibrated by this one's usage
  const other = await next.prepare(request, { sessionId: "other" });
  assert.equal(other.report.tokensAfter, first.report.tokensAfter);
  keeper.free();
  next.free();
  // an exact model is never calibrated
  const exact = new ContextKeeper({ model: "gpt-4o", contextWindow: 128_000, store });
  const openaiHistory = [...head("openai"), ...turn("openai", 0)];
  const counted = await exact.prepare(openaiHistory, { sessionId: "exact" });
  const none = await exact.recordUsage("exact", { prompt_tokens: counted.report.tokensAfter * 2, completion_tokens: 2 });
  assert.equal(none.calibration, null);
  assert.equal((await exact.prepare(openaiHistory, { sessionId: "exact" })).report.tokensAfter, counted.report.tokensAfter);
  exact.free();
});

test("unchangedPrefix counts the messages the fast path sent when a full prepare follows it, and in a dry run", async () => {
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 32_000, store: new MemoryStore() });
  const history = head("openai");
  let previous = null;
  for (let t = 0; t < 8; t++) {
    // turn 5's result is long enough (over half the offload limit) that the fast path leaves it
    // to a full prepare, which keeps it whole: nothing before it changes
    history.push(...turn("openai", t, t === 5 ? 150 : 10));
    const input = history.slice();
    const planned = await keeper.plan(input, { sessionId: "s", now: NOW });
    const { messages, report } = await keeper.prepare(input, { sessionId: "s", now: NOW });
    assert.equal(report.decision, "under");
    assert.equal(report.unchangedPrefix, previous === null ? null : previous.length, `turn ${t}`);
    assert.equal(planned.report.unchangedPrefix, report.unchangedPrefix, `turn ${t}, dry run`);
    previous = messages;
  }
  keeper.free();
});
