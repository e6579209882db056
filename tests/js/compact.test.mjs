// Compaction through the built package in Node: the summarizer as a JS callback (sync, async,
// re-entering the package), every way it can fail, the archive written before anything is
// replaced, markers read back, overlays re-applied from the stored state, the memory flush
// once per cycle, and the phases reported.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ContextKeeperError,
  compact,
  readArchive,
  activeMessages,
  validateMessages,
  countMessages,
} from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";

/** An OpenAI agent run: one bash call per turn, with file paths the summary must keep. */
function agent(turns) {
  const messages = [
    { role: "system", content: "You are a coding agent." },
    { role: "user", content: "The CSV export in src/export/csv.rs drops negative amounts. Fix it and run `cargo test --locked`." },
  ];
  for (let t = 0; t < turns; t++) {
    const id = `call_${t}`;
    messages.push({ role: "assistant", content: `Step ${t}: reading src/export/csv.rs`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `sed -n ${t * 40},+40p src/export/csv.rs` }) } }] });
    messages.push({ role: "tool", tool_call_id: id, content: `fn export_row(amount: i64) -> String {\n${"    // body line\n".repeat(60)}}` });
  }
  return messages;
}

const NOW = "2026-11-25T12:00:00.000Z";
const SUMMARY = "Intent: fix negative amounts in the CSV export. Progress: read the export code. Next: patch export_row.";
const base = (store, extra = {}) => ({ store, sessionId: "s1", keepRecentTurns: 3, model: "gpt-4o", now: NOW, ...extra });

test("compact archives the span, writes a marker and keeps the head and recent turns as the caller's objects", async () => {
  const history = agent(12);
  const before = JSON.stringify(history);
  const store = new MemoryStore();
  const calls = [];
  const { messages, marker, report } = await compact(history, base(store, { summarize: (request) => (calls.push(request), SUMMARY) }));
  assert.equal(JSON.stringify(history), before, "the input is not mutated");
  assert.equal(report.outcome, "compacted");
  assert.equal(calls.length, 1);
  const [request] = calls;
  assert.deepEqual(Object.keys(request), ["messages", "previousSummary", "prompt", "targetTokens", "transcript"]);
  assert.equal(request.targetTokens, 2_000);
  assert.equal(request.previousSummary, null);
  assert.match(request.prompt, /Exact details/);
  assert.match(request.transcript, /### 2\. assistant/);
  assert.deepEqual(request.messages[0], history[2]);
  // head, marker, recent
  assert.equal(messages[0], history[0]);
  assert.equal(messages[1], history[1]);
  assert.match(messages[2].content, /^<context-keeper-compaction /);
  const recent = messages.slice(3);
  assert.deepEqual(recent, history.slice(report.span.to));
  recent.forEach((m, i) => assert.equal(m, history[report.span.to + i], "recent turns are the caller's own objects"));
  assert.equal(messages.filter((m) => m.role === "assistant").length, 3);
  assert.deepEqual(validateMessages(messages), []);
  // the marker
  assert.equal(marker.number, 1);
  assert.equal(marker.time, NOW);
  assert.ok(marker.summary.startsWith(SUMMARY));
  assert.equal(marker.archivedMessages, report.span.to - report.span.from);
  assert.equal(marker.tokensBefore, countMessages(history, { model: "gpt-4o" }).total);
  assert.ok(Math.abs(marker.tokensAfter - countMessages(messages, { model: "gpt-4o" }).total) <= 2);
  // the archive: JSON and Markdown, read back whole
  const keys = (await store.loadRange(["context-keeper", "s1", "archive"])).map((e) => e.key[3]).sort();
  assert.equal(keys.length, 2);
  assert.ok(keys[1].endsWith(".md"));
  const archived = await readArchive(marker, { store });
  assert.deepEqual(archived.messages, history.slice(report.span.from, report.span.to));
  assert.equal(archived.format, "openai");
  // the summary lost a path the recent turns still name: pinned
  assert.ok(report.pinned.some((f) => f.text === "src/export/csv.rs"), JSON.stringify(report.pinned));
  assert.match(marker.summary, /Exact details[^]*src\/export\/csv\.rs/);
});

test("a summary that fails in any way leaves the messages as they were, and the next call tries again", async () => {
  const history = agent(10);
  const cases = [
    ["throws", () => { throw new Error("boom"); }, "summarize", /boom/],
    ["rejects", async () => { throw new TypeError("fetch failed"); }, "summarize", /TypeError: fetch failed/],
    ["throws a non-Error", () => { throw "nope"; }, "summarize", /nope/],
    ["times out", () => new Promise(() => {}), "summarize", /timed out after 50 ms/],
    ["returns nothing", () => undefined, "summarize", /returned undefined, not a string/],
    ["returns a number", () => 42, "summarize", /returned a number/],
    ["returns empty text", () => "  \n", "check", /empty/],
    ["returns more than the input", () => "word ".repeat(50_000), "check", /not shorter/],
    ["returns an API error", () => '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "check", /API error/],
    ["returns an exception text", () => "Error: 429 Too Many Requests", "check", /error message/],
  ];
  for (const [name, summarize, phase, reason] of cases) {
    const store = new MemoryStore();
    const { messages, marker, report } = await compact(history, base(store, { summarize, timeoutMs: 50 }));
    assert.equal(messages, history, `${name}: the caller's array`);
    assert.equal(marker, null, name);
    assert.equal(report.outcome, "failed", name);
    assert.equal(report.phase, phase, name);
    assert.match(report.reason, reason, name);
    assert.equal(await store.load(["context-keeper", "s1", "state", "session"]), undefined, `${name}: no state recorded`);
    // the archive was written before the summarizer ran (and is harmless: same key next time)
    assert.equal((await store.loadRange(["context-keeper", "s1", "archive"])).length, 2, name);
    const retry = await compact(history, base(store, { summarize: () => SUMMARY }));
    assert.equal(retry.report.outcome, "compacted", `${name}: the next call succeeds`);
  }
});

test("an archive that cannot be stored stops the compaction before the summarizer is called", async () => {
  const history = agent(10);
  for (const fault of ["reject", "throw", "quota", "half", "hang"]) {
    const store = new FaultyStore(new MemoryStore(), [{ op: "save", fault, times: 1 }]);
    let called = false;
    const { messages, report } = await compact(history, base(store, { storeTimeoutMs: 50, summarize: () => ((called = true), SUMMARY) }));
    assert.equal(messages, history, fault);
    assert.equal(report.outcome, "failed", fault);
    assert.equal(report.phase, "archive", fault);
    assert.equal(report.failures.length, 1, fault);
    assert.equal(called, false, `${fault}: no summary without an archive`);
  }
});

test("the full history again gets the stored compaction back without calling the summarizer", async () => {
  const history = agent(12);
  const store = new MemoryStore();
  const first = await compact(history, base(store, { summarize: () => SUMMARY }));
  let calls = 0;
  const again = await compact(history, base(store, { summarize: () => (calls++, "other") }));
  assert.equal(calls, 0);
  assert.equal(again.report.outcome, "reapplied");
  assert.equal(JSON.stringify(again.messages), JSON.stringify(first.messages), "byte for byte");
  assert.equal(again.marker.summary, first.marker.summary);
  // and the returned history, sent back, is recognised: nothing to do
  const back = await compact(first.messages, base(store, { summarize: () => (calls++, "other") }));
  assert.equal(calls, 0);
  assert.equal(back.report.outcome, "unchanged");
  assert.equal(back.messages, first.messages);
  assert.equal(back.marker.number, 1);
});

test("compactions stack: the previous summary is folded in and readArchive returns every original message", async () => {
  const store = new MemoryStore();
  const history = agent(30);
  const requests = [];
  const summarize = (request) => (requests.push(request), `Summary ${requests.length}: working on src/export/csv.rs.`);
  // the host keeps what compact returns and appends new turns (AI SDK 7's loop)
  let sent = history.slice(0, 20);
  let next = 20;
  const markers = [];
  for (;;) {
    const { messages, marker, report } = await compact(sent, base(store, { summarize }));
    assert.notEqual(report.outcome, "failed", report.reason);
    assert.deepEqual(validateMessages(messages), []);
    if (report.outcome === "compacted") markers.push(marker);
    sent = messages;
    if (next >= history.length) break;
    sent = sent.concat(history.slice(next, next + 10));
    next += 10;
  }
  assert.ok(markers.length >= 3, `${markers.length} compactions`);
  assert.deepEqual(markers.map((m) => m.number), markers.map((_, i) => i + 1));
  assert.equal(requests[1].previousSummary.split("\n")[0], "Summary 1: working on src/export/csv.rs.");
  const last = markers[markers.length - 1];
  const archived = await readArchive(last, { store });
  assert.equal(archived.archives, markers.length);
  assert.equal(archived.messages.length, last.archivedMessages);
  assert.deepEqual(archived.messages, history.slice(2, 2 + last.archivedMessages));
  // what the model sees is what it was last given
  assert.deepEqual(activeMessages(sent), sent);
});

test("a summarizer that calls back into the package works", async () => {
  const history = agent(10);
  const store = new MemoryStore();
  const { report } = await compact(history, base(store, {
    summarize: async (request) => {
      const inner = countMessages(request.messages, { model: "gpt-4o" });
      const nested = await compact(agent(8), { ...base(new MemoryStore()), summarize: () => "nested summary" });
      return `${SUMMARY} (${inner.total} tokens; nested ${nested.report.outcome})`;
    },
  }));
  assert.equal(report.outcome, "compacted");
});

test("without a summarizer the heuristic summary works offline and says so", async () => {
  const history = agent(10);
  const { marker, report } = await compact(history, base(new MemoryStore()));
  assert.equal(report.outcome, "compacted");
  assert.equal(report.heuristic, true);
  assert.match(marker.summary, /heuristic/i);
  assert.match(marker.summary, /bash/);
});

test("the flush runs once per cycle before the summary; silent replies are dropped, others reported", async () => {
  const store = new MemoryStore();
  const history = agent(12);
  const flushes = [];
  const phases = [];
  const options = base(store, {
    flush: (request) => (flushes.push(request), "SILENT"),
    summarize: () => { throw new Error("down"); },
    onProgress: ({ phase }) => phases.push(phase),
  });
  const failed = await compact(history, options);
  assert.equal(failed.report.outcome, "failed");
  assert.equal(flushes.length, 1);
  assert.equal(flushes[0].messages, history);
  assert.match(flushes[0].prompt, /reply with exactly SILENT/);
  assert.equal(failed.report.flush.silent, true);
  assert.deepEqual(phases, ["flushing", "archiving", "summarizing", "applying"]);
  // the retry in the same cycle does not flush again
  const done = await compact(history, { ...options, summarize: () => SUMMARY });
  assert.equal(done.report.outcome, "compacted");
  assert.equal(flushes.length, 1);
  assert.equal(done.report.flush, undefined);
  // the next cycle flushes again; a reply that is not silent goes to the report, not the messages
  const grown = done.messages.concat(agent(20).slice(26));
  const next = await compact(grown, { ...options, flush: () => "Saved: the user prefers small commits.", summarize: () => "Second summary." });
  assert.equal(next.report.outcome, "compacted");
  assert.equal(next.report.flush.reply, "Saved: the user prefers small commits.");
  assert.ok(!JSON.stringify(next.messages).includes("prefers small commits"));
});

test("markers are written in each format and activeMessages starts from the latest", async () => {
  const anthropic = {
    model: "claude-sonnet-4-5",
    system: "You are a coding agent.",
    messages: [{ role: "user", content: "Fix src/a.rs" }],
  };
  for (let t = 0; t < 8; t++) {
    anthropic.messages.push({ role: "assistant", content: [
      { type: "thinking", thinking: `thinking ${t}`, signature: "c2lnbmF0dXJl" },
      { type: "tool_use", id: `toolu_${t}`, name: "bash", input: { command: `cat src/a.rs # ${t}` } },
    ] });
    anthropic.messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${t}`, content: "x\n".repeat(200) }] });
  }
  const { messages, report } = await compact(anthropic, base(new MemoryStore(), { model: "claude-sonnet-4-5", summarize: () => "s" }));
  assert.equal(report.outcome, "compacted");
  assert.equal(messages.system, anthropic.system);
  assert.deepEqual(validateMessages(messages), [], "roles still alternate");
  // the first request is kept verbatim ahead of the marker, in one user message
  const first = messages.messages[0];
  assert.equal(first.content[0].text, "Fix src/a.rs");
  assert.match(first.content[1].text, /^<context-keeper-compaction /);
  assert.deepEqual(messages.messages.slice(1), anthropic.messages.slice(report.span.to));
  // provider-native compaction: the model sees from it on
  const native = [{ role: "user", content: "a" }, { role: "assistant", content: [{ type: "compaction", content: "provider summary" }] }, { role: "user", content: "b" }];
  assert.deepEqual(activeMessages(native, { format: "anthropic" }), native.slice(1));
  // OpenAI's compacted window keeps the user messages ahead of its item: the model sees them
  const compacted = [{ role: "user", content: "a" }, { type: "compaction", id: "cmp_1", encrypted_content: "gAAAA" }, { role: "user", content: "b" }];
  assert.deepEqual(activeMessages(compacted), compacted);
  const ui = [
    { id: "u1", role: "user", parts: [{ type: "text", text: "task" }] },
    ...Array.from({ length: 6 }, (_, i) => [
      // (long enough that the marker is smaller than what it replaces: a marker that is not
      // is refused)
      { id: `a${i}`, role: "assistant", parts: [{ type: "step-start" }, { type: "text", text: `answer ${i}: ${"the export code reads each row. ".repeat(10)}` }] },
      { id: `u${i + 2}`, role: "user", parts: [{ type: "text", text: `more ${i}` }] },
    ]).flat(),
  ];
  const uiOut = await compact(ui, base(new MemoryStore(), { keepRecentTurns: 2, summarize: () => "s" }));
  assert.equal(uiOut.report.outcome, "compacted");
  const markerMessage = uiOut.messages.find((m) => m.id === "context-keeper-compaction-1");
  assert.ok(markerMessage, "a UIMessage with an id");
  assert.equal(markerMessage.parts[0].type, "text");
});

/** A `useChat` history: the request, then one assistant UIMessage holding `steps` steps. */
function uiAgent(steps) {
  const parts = [];
  for (let t = 0; t < steps; t++) {
    parts.push({ type: "step-start" });
    parts.push({ type: "reasoning", text: `Thinking about step ${t}.`, providerMetadata: { anthropic: { signature: "c2ln" } } });
    parts.push({ type: "tool-bash", toolCallId: `call_${t}`, state: "output-available", input: { command: `sed -n ${t * 40},+40p src/export/csv.rs` }, output: `fn export_row(amount: i64) -> String {\n${"    // body line\n".repeat(60)}}` });
  }
  return [
    { id: "u1", role: "user", parts: [{ type: "text", text: "The CSV export in src/export/csv.rs drops negative amounts. Fix it." }] },
    { id: "a1", role: "assistant", metadata: { model: "m" }, parts },
  ];
}

test("a UIMessage is cut at a step: the rest stays byte for byte, the steps before are archived and joined back", async () => {
  const store = new MemoryStore();
  const input = uiAgent(12);
  const pristine = JSON.stringify(input);
  const first = await compact(input, base(store, { summarize: () => SUMMARY }));
  assert.equal(first.report.outcome, "compacted", first.report.reason);
  const { to, toPart } = first.report.span;
  assert.equal(to, 1);
  assert.equal(input[1].parts[toPart].type, "step-start");
  assert.equal(toPart, 27, "the last three steps stay");
  assert.equal(first.messages.length, 3);
  assert.equal(first.messages[0], input[0], "the head is the caller's object");
  assert.match(first.messages[1].parts[0].text, /^<context-keeper-compaction /);
  assert.equal(JSON.stringify(first.messages[2]), JSON.stringify({ ...input[1], parts: input[1].parts.slice(toPart) }));
  assert.equal(JSON.stringify(input), pristine, "the input is untouched");
  assert.deepEqual(validateMessages(first.messages), []);
  assert.ok(countMessages(first.messages, { model: "gpt-4o" }).total < countMessages(input, { model: "gpt-4o" }).total);
  let archived = await readArchive(first.marker, { store });
  assert.equal(JSON.stringify(archived.messages), JSON.stringify([{ ...input[1], parts: input[1].parts.slice(0, toPart) }]));
  // the host keeps the output and its agent takes six more steps: a second cut in the same message
  const more = uiAgent(18)[1].parts.slice(36);
  const kept = [...first.messages.slice(0, 2), { ...first.messages[2], parts: [...first.messages[2].parts, ...more] }];
  const second = await compact(kept, base(store, { summarize: (req) => `${SUMMARY} (${req.messages.length})` }));
  assert.equal(second.report.outcome, "compacted", second.report.reason);
  assert.equal(second.marker.number, 2);
  assert.equal(second.marker.archivedMessages, 1, "one message, archived in two pieces");
  const whole = uiAgent(18)[1];
  const at = whole.parts.length - second.messages[2].parts.length;
  assert.equal(JSON.stringify(second.messages[2]), JSON.stringify({ ...whole, parts: whole.parts.slice(at) }));
  archived = await readArchive(second.marker, { store });
  assert.equal(archived.archives, 2);
  assert.equal(JSON.stringify(archived.messages), JSON.stringify([{ ...whole, parts: whole.parts.slice(0, at) }]), "the pieces joined back");
  // the full history again: both compactions re-applied without a summary, byte for byte
  const never = () => { throw new Error("not called"); };
  const again = await compact(uiAgent(18), base(store, { keepRecentTurns: 1000, summarize: never }));
  assert.equal(again.report.outcome, "reapplied");
  assert.equal(JSON.stringify(again.messages), JSON.stringify(second.messages));
});

test("bad options are ContextKeeperErrors naming the option", async () => {
  const store = new MemoryStore();
  const cases = [
    [{ sessionId: "s" }, "options.store"],
    [{ store }, "options.sessionId"],
    [{ store, sessionId: "s", summarize: "yes" }, "options.summarize"],
    [{ store, sessionId: "s", keepRecentTurns: -1 }, "options.keepRecentTurns"],
    [{ store, sessionId: "s", keepRecentTurns: 0 }, "options.keepRecentTurns"],
    [{ store, sessionId: "s", nope: 1 }, "options.nope"],
    [{ store, sessionId: "s", now: {} }, "options.now"],
    [{ store, sessionId: "s", timeoutMs: 0 }, "options.timeoutMs"],
  ];
  for (const [options, path] of cases) {
    await assert.rejects(compact(agent(6), options), (e) => e instanceof ContextKeeperError && e.kind === "options" && e.path === path, JSON.stringify(options));
  }
  await assert.rejects(compact([{ role: "user", content: 5 }], { store, sessionId: "s" }), (e) => e instanceof ContextKeeperError && e.kind === "messages" && /messages\[0\]\.content/.test(e.message));
  // a request object's bad field is an error of the messages, naming the field
  await assert.rejects(
    compact({ tools: [1], messages: agent(6) }, { store, sessionId: "s" }),
    (e) => e instanceof ContextKeeperError && e.kind === "messages" && e.path === "tools[0]" && /tools\[0\]: expected a tool definition object/.test(e.message),
  );
  await assert.rejects(readArchive({ key: ["context-keeper", "s", "archive", "0009-x"] }, { store }), (e) => e.kind === "notFound");
});

test("the archive's JSON is stored before its transcript is asked for, one store call after another", async () => {
  // a store that logs its calls and holds each save open a moment: were the two saves handed
  // over together, the transcript's load would come before the JSON's save had settled
  const inner = new MemoryStore();
  const calls = [];
  const store = {
    load: async (key) => (calls.push(`load ${key[2]} ${key[3]}`), inner.load(key)),
    loadRange: (prefix) => inner.loadRange(prefix),
    delete: (key) => inner.delete(key),
    save: async (key, bytes) => {
      calls.push(`save ${key[2]} ${key[3]}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      calls.push(`saved ${key[2]} ${key[3]}`);
      return inner.save(key, bytes);
    },
  };
  const { report } = await compact(agent(12), base(store, { summarize: () => SUMMARY }));
  assert.equal(report.outcome, "compacted");
  const archive = calls.filter((c) => c.includes(" archive "));
  const [json, md] = [archive[0].split(" ")[2], `${archive[0].split(" ")[2]}.md`];
  assert.deepEqual(archive, [`load archive ${json}`, `save archive ${json}`, `saved archive ${json}`, `load archive ${md}`, `save archive ${md}`, `saved archive ${md}`]);
});

test("a marker no smaller than what it would replace is refused: the messages stay as they were", async () => {
  const tiny = [{ role: "user", content: "task" }];
  for (let i = 0; i < 6; i++) tiny.push({ role: "assistant", content: `a${i}` }, { role: "user", content: `b${i}` });
  const { messages, report } = await compact(tiny, base(new MemoryStore(), { keepRecentTurns: 1, summarize: () => "s" }));
  assert.equal(report.outcome, "failed");
  assert.equal(report.phase, "check");
  assert.match(report.reason, /the marker \(\d+ tokens\) would not be smaller than the \d+ tokens it replaces/);
  assert.equal(messages, tiny, "the caller's own array");
});
