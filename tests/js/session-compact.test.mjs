// The 300-turn agent session (tests/data/sessions), replayed turn by turn through compaction in
// each format, the way hosts run it (tests/js/session-replay.mjs):
//
// - pass 1, an AI SDK 7 host: it keeps the messages `compact` returned and appends the next
//   turn; whenever what the model would see passes THRESHOLD, it compacts (a scripted
//   summarizer; the second one it is asked for throws, and the call after must succeed);
// - pass 2, an AI SDK 5/6 `prepareStep` host: it hands the full history every turn, with the
//   session state as pass 1 left it after that turn; the stored compactions must be re-applied
//   without a summary, and give what pass 1 gave, byte for byte.
//
// At every compaction: the output validates; in what the model sees every tool call has its
// result and every result its call; the system messages and the first request come first; the
// recent turns are the caller's own objects, byte for byte the source's; readArchive gives back
// exactly the messages replaced, through every earlier compaction; activeMessages is what the
// model sees; the count went down; the marker is recognised when the output comes back; the
// pinned facts are what the summary lost.
import { test } from "node:test";
import assert from "node:assert/strict";
import { activeMessages, compact, countMessages, readArchive, validateMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { loadSession } from "./fixtures.mjs";
import { FORMATS, NOW, THRESHOLD, WINDOW, advance, listOf, scriptedSummarizer, turnsOf, withList } from "./session-replay.mjs";

const STATE = (sessionId) => ["context-keeper", sessionId, "state", "session"];
const MARKER = /^<context-keeper-compaction /;

/** Every tool call and result of what the model sees, in order: `[kind, id]`. */
function toolEvents(format, conversation) {
  const events = [];
  for (const m of listOf(conversation)) {
    const parts = format === "ui" ? m.parts : Array.isArray(m.content) ? m.content : [];
    if (format === "openai") {
      for (const call of m.tool_calls ?? []) events.push(["call", call.id]);
      if (m.role === "tool") events.push(["result", m.tool_call_id]);
    }
    for (const p of parts) {
      if (format === "anthropic" && p.type === "tool_use") events.push(["call", p.id]);
      if (format === "anthropic" && p.type === "tool_result") events.push(["result", p.tool_use_id]);
      if (format === "aisdk" && p.type === "tool-call") events.push(["call", p.toolCallId]);
      if (format === "aisdk" && p.type === "tool-result") events.push(["result", p.toolCallId]);
      // a UIMessage tool part is the call and, once its state says so, the result
      if (format === "ui" && p.type.startsWith("tool-")) {
        events.push(["call", p.toolCallId]);
        if (p.state === "output-available" || p.state === "output-error") events.push(["result", p.toolCallId]);
      }
    }
  }
  return events;
}

function assertPaired(format, conversation, where) {
  const open = new Set();
  const done = new Set();
  for (const [kind, id] of toolEvents(format, conversation)) {
    if (kind === "call") {
      assert.ok(!open.has(id) && !done.has(id), `${where}: call ${id} twice`);
      open.add(id);
    } else {
      assert.ok(open.has(id), `${where}: result ${id} without its call before it`);
      open.delete(id);
      done.add(id);
    }
  }
  assert.deepEqual([...open], [], `${where}: calls without their results`);
}

/** The messages kept ahead of the marker in the source: the system messages and the first request. */
const headOf = (format, session) => (format === "anthropic" ? 1 : listOf(session).findIndex((m) => m.role === "user") + 1);

async function replay(format) {
  const { model, keepRecentTurns } = FORMATS[format];
  const sessionId = `agent-300-${format}`;
  const session = loadSession(format);
  const pristine = loadSession(format);
  const turns = turnsOf(format, session);
  const twins = turnsOf(format, pristine);
  // each message the replay hands over -> its pristine twin's JSON
  const twin = new Map();
  turns.forEach((turn, k) => turn.add.forEach((m, j) => twin.set(m, JSON.stringify(twins[k].add[j]))));
  const source = listOf(session);
  const head = headOf(format, session);
  const options = { sessionId, model, contextWindow: WINDOW, keepRecentTurns, now: NOW };
  const never = () => {
    throw new Error("the summarizer must not be called");
  };

  // ---- pass 1: the host keeps what compact returns (AI SDK 7)
  const store = new MemoryStore();
  const { summarize, calls } = scriptedSummarizer({ failAt: 2 });
  let sent = withList(session, []);
  let history = withList(session, []); // the whole history so far, never compacted
  const seen = []; // per turn: the JSON of what the model sees
  const states = []; // per turn: the session state stored after it
  const compactedAt = new Set();
  const markers = [];
  let failures = 0;
  let highest = 0;
  for (const [k, turn] of turns.entries()) {
    sent = advance(sent, turn);
    history = advance(history, turn);
    const before = countMessages(activeMessages(sent), { model }).total;
    if (before > THRESHOLD) {
      const input = sent;
      const stateBefore = await store.load(STATE(sessionId));
      let { messages, marker, report } = await compact(input, { ...options, store, summarize });
      if (report.outcome === "failed") {
        // the summarizer threw: nothing changed, nothing was recorded, and the next call works
        failures++;
        assert.equal(calls.length, 2, `turn ${k}: only the second summary fails`);
        assert.equal(report.phase, "summarize");
        assert.match(report.reason, /the summarizer is down/);
        assert.equal(messages, input, "the caller's own messages, unchanged");
        assert.deepEqual(marker, markers.at(-1)?.marker ?? null, "the marker the input holds");
        assert.deepEqual(await store.load(STATE(sessionId)), stateBefore, "no state recorded");
        ({ messages, marker, report } = await compact(input, { ...options, store, summarize }));
        assert.equal(report.outcome, "compacted", `turn ${k}: the call after a failure succeeds`);
      }
      // every format can be cut: a UIMessage at a step when the kept turns start inside it
      assert.equal(report.outcome, "compacted", `turn ${k}: ${report.outcome} ${report.reason}`);
      await checkCompaction({ k, input, messages, marker, report });
      markers.push({ k, marker, report });
      compactedAt.add(k);
      sent = messages;
    }
    const tokens = countMessages(sent, { model }).total;
    highest = Math.max(highest, tokens);
    seen.push(JSON.stringify(sent));
    const state = await store.load(STATE(sessionId));
    states.push(state?.slice());
  }

  async function checkCompaction({ k, input, messages, marker, report }) {
    const where = `${format} turn ${k}, compaction ${marker.number}`;
    const list = listOf(messages);
    const inList = listOf(input);
    // valid, and paired in what the model sees
    assert.deepEqual(validateMessages(messages), [], where);
    const active = activeMessages(messages);
    assert.deepEqual(active, messages, `${where}: the model sees all of it`);
    assertPaired(format, active, where);
    // the count went down
    const after = countMessages(messages, { model }).total;
    assert.ok(after < countMessages(input, { model }).total, `${where}: ${after} tokens after`);
    assert.ok(report.tokensAfter < report.tokensBefore, where);
    assert.ok(Math.abs(report.tokensAfter - after) <= 2, `${where}: the report's ${report.tokensAfter}, counted ${after}`);
    // the head: the system messages and the first request, first
    const at = list.findIndex((m) => (format === "ui" ? m.parts : Array.isArray(m.content) ? m.content : [{ text: m.content }]).some((p) => MARKER.test(p.text ?? "")));
    assert.ok(at >= 0, `${where}: the marker`);
    if (format === "anthropic") {
      assert.equal(messages.system, session.system);
      assert.equal(messages.model, session.model);
      const first = list[0];
      if (first === source[0]) assert.equal(at, 1, where);
      else {
        // the marker block follows the first request's own blocks in one user message
        assert.equal(at, 0, where);
        assert.deepEqual(first.content.slice(0, -1), source[0].content, where);
        assert.match(first.content.at(-1).text, MARKER);
      }
    } else {
      assert.equal(at, head, where);
      list.slice(0, head).forEach((m, i) => assert.equal(m, source[i], `${where}: head message ${i}`));
    }
    // the recent turns: the caller's own objects, in order, byte for byte the source's; when
    // the cut fell at a step of a UIMessage, the first is the rest of that message
    let recent = list.slice(at + 1);
    assert.ok(recent.length > 0, where);
    const cut = report.span.toPart;
    let tail = null;
    if (cut !== undefined) {
      assert.equal(format, "ui", `${where}: only a UIMessage is cut at a step`);
      [tail, ...recent] = recent;
      const whole = inList[report.span.to];
      assert.equal(whole.parts[cut].type, "step-start", `${where}: the cut is at a step`);
      assert.equal(JSON.stringify(tail), JSON.stringify({ ...whole, parts: whole.parts.slice(cut) }), `${where}: the rest of the message, byte for byte`);
      assert.equal(inList.length - recent.length - 1, report.span.to, where);
    }
    assert.deepEqual(recent, inList.slice(inList.length - recent.length), where);
    recent.forEach((m, i) => {
      assert.equal(m, inList[inList.length - recent.length + i], `${where}: recent message ${i} is the caller's object`);
      assert.equal(JSON.stringify(m), sourceJson(m), `${where}: recent message ${i} is the source's, byte for byte`);
    });
    if (tail) assert.equal(JSON.stringify(tail), sourceJson(tail), `${where}: the rest is the source's, byte for byte`);
    const kept = [tail, ...recent].filter((m) => m?.role === "assistant");
    const turnsKept = format === "ui" ? kept.flatMap((m) => m.parts).filter((p) => p.type === "step-start").length : kept.length;
    assert.ok(turnsKept >= keepRecentTurns, `${where}: ${turnsKept} turns kept`);
    // the archives: exactly the source messages between the head and the recent turns (and
    // the first parts of the message cut at a step)
    const archived = await readArchive(marker, { store });
    const firstRecent = source.indexOf((tail ?? recent[0]));
    const replaced = firstRecent >= 0 ? firstRecent : source.findIndex((m) => m.id === (tail ?? recent[0]).id);
    assert.ok(replaced > head || tail, where);
    assert.equal(archived.archives, marker.number, `${where}: the chain back to the first`);
    assert.equal(archived.messages.length, marker.archivedMessages, where);
    const originals = listOf(pristine).slice(head, replaced);
    if (tail) {
      const now = listOf(history).find((m) => m.id === tail.id);
      const original = JSON.parse(twin.get(now));
      originals.push({ ...original, parts: original.parts.slice(0, now.parts.length - tail.parts.length) });
    }
    assert.equal(archived.messages.length, originals.length, where);
    assert.equal(JSON.stringify(archived.messages), JSON.stringify(originals), `${where}: the archive is the originals`);
    // the summary: the previous one folded in; the pinned facts are what it lost
    const request = calls.at(-1);
    assert.equal(request.previousSummary, markers.at(-1)?.marker.summary ?? null, where);
    const text = summaryOf(request);
    assert.ok(marker.summary.startsWith(text), where);
    for (const fact of report.pinned) {
      assert.ok(!text.includes(fact.text), `${where}: pinned ${fact.text} was in the summary`);
      assert.ok(marker.summary.slice(text.length).includes(fact.text), `${where}: ${fact.text} pinned`);
    }
    // the marker is recognised when the output comes back: nothing to do, no summary
    const back = await compact(messages, { ...options, store, summarize: never });
    assert.equal(back.report.outcome, "unchanged", `${where}: ${back.report.reason}`);
    assert.equal(back.messages, messages, where);
    assert.deepEqual(back.marker, marker, where);
  }

  /**
   * The source's JSON of a message the host holds: its pristine twin, or for the rest of a
   * UIMessage cut at a step (a new object, grown by the steps after the cut), the same message
   * of the whole history with only its last parts.
   */
  function sourceJson(m) {
    if (twin.has(m)) return twin.get(m);
    const now = listOf(history).find((w) => w.id === m.id);
    const original = JSON.parse(twin.get(now));
    return JSON.stringify({ ...original, parts: original.parts.slice(now.parts.length - m.parts.length) });
  }

  /** What the scripted summarizer returned for `request` (it is deterministic). */
  function summaryOf(request) {
    const again = scriptedSummarizer({ calls: calls.slice(0, calls.indexOf(request)) });
    return again.summarize(request);
  }

  // the input was never written to
  assert.equal(JSON.stringify(session), JSON.stringify(pristine), `${format}: the source is untouched`);

  // ---- pass 2: the full history every turn (AI SDK 5/6 prepareStep), the state as pass 1 left it
  let reapplied = 0;
  const store2 = new MemoryStore();
  let full = withList(session, []);
  for (const [k, turn] of turns.entries()) {
    full = advance(full, turn);
    if (states[k] === undefined) await store2.remove(STATE(sessionId));
    else await store2.save(STATE(sessionId), states[k]);
    // what the stored compactions make of it (a turn count no history reaches keeps the rest)
    const view = await compact(full, { ...options, keepRecentTurns: 1_000_000, store: store2, summarize: never });
    assert.equal(view.report.outcome, states[k] === undefined ? "unchanged" : "reapplied", `${format} turn ${k}`);
    assert.equal(JSON.stringify(view.messages), seen[k], `${format} turn ${k}: byte for byte what pass 1 sent`);
    const [got, given] = [listOf(view.messages), listOf(full)];
    const kept = got.length - got.findLastIndex((m) => !given.includes(m)) - 1;
    got.slice(got.length - kept).forEach((m, i) => assert.equal(m, given[given.length - kept + i], `${format} turn ${k}: the caller's objects`));
    // (the rest of a UIMessage cut at a step is not the caller's object: it may be all that follows)
    if (states[k] !== undefined) assert.ok(kept < got.length && kept >= (format === "ui" ? 0 : 1), `${format} turn ${k}: ${kept} messages after the marker`);
    if (compactedAt.has(k)) {
      // and compact as pass 1 called it: the stored compaction, nothing more to summarize
      const again = await compact(full, { ...options, store: store2, summarize: never });
      assert.equal(again.report.outcome, "reapplied", `${format} turn ${k}: ${again.report.reason}`);
      assert.equal(JSON.stringify(again.messages), seen[k], `${format} turn ${k}`);
      reapplied++;
    }
  }
  assert.equal(reapplied, markers.length);

  // the end: what the model last saw is what activeMessages makes of the last output
  assert.equal(JSON.stringify(activeMessages(sent)), seen.at(-1));
  return { turns: turns.length, markers, failures, highest };
}

for (const format of Object.keys(FORMATS)) {
  test(`agent-300 ${format}: compacts at least three times in a ${WINDOW.toLocaleString("en")}-token window, every invariant holding`, async () => {
    const { markers, failures, highest } = await replay(format);
    assert.ok(markers.length >= 3 && markers.length <= 8, `${markers.length} compactions`);
    assert.deepEqual(markers.map((m) => m.marker.number), markers.map((_, i) => i + 1));
    assert.equal(failures, 1, "the failing summary came at the second compaction");
    assert.ok(markers.some((m) => m.report.pinned.length > 0), "fact pinning added details");
    assert.ok(highest <= WINDOW, `${format}: the model saw ${highest} tokens`);
  });
}
