// The context layer in real headless Chromium, through the package's browser entry: a 2 MB tool
// result offloaded into IndexedDBStore and read back whole by paging readOffloaded, listed and
// grepped; offloadMessages handing back the caller's untouched objects; a FaultyStore over
// IndexedDB whose save rejects leaving the result as it was; the record readable after a reload.
// Also prints (does not assert) the median time of a 2 MB offload into IndexedDB.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDemo } from "./chromium.mjs";
import { makeOutput, readAll } from "../js/tool-output.mjs";

let demo, page, pageErrors;

before(async () => {
  demo = await openDemo();
  ({ page, pageErrors } = demo);
});

after(async () => {
  await demo?.close();
});

/** The helpers' source, for page.evaluate. */
const helpers = `({ makeOutput: ${makeOutput.toString()}, readAll: ${readAll.toString()} })`;

const SESSION = "browser-session";
const NAME = "ck-context";

test("a 2 MB result offloaded into IndexedDB reads back whole, and is listed and grepped", async () => {
  const result = await page.evaluate(async ({ source, SESSION, NAME }) => {
    const { makeOutput, readAll } = (0, eval)(source);
    const ck = await import("/pkg/browser.js");
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const output = makeOutput();
    const store = new IndexedDBStore({ name: NAME });
    try {
      const { content, offloaded, failure } = await ck.offloadToolResult(output, { store, sessionId: SESSION, toolName: "bash", toolCallId: "call_big" });
      // Page through it all, as a model would, with a line cap no line reaches.
      const { text: back, reads, totalLines } = await readAll(ck, offloaded.id, { store, sessionId: SESSION });
      const listed = await ck.listOffloaded({ store, sessionId: SESSION });
      const grep = await ck.grepOffloaded("^L1999[0-9]:", { store, sessionId: SESSION });
      const grepUnicode = await ck.grepOffloaded("データ", { store, sessionId: SESSION, id: offloaded.id });
      const expectedUnicode = output.split("\n").filter((l) => l.includes("データ")).length;
      const recovered = await ck.runRecoveryTool("read_offloaded", JSON.stringify({ id: offloaded.id, offset: 20_000, limit: 5 }), { store, sessionId: SESSION });
      return {
        failure: failure ?? null,
        outputLength: output.length,
        outputBytes: new TextEncoder().encode(output).length,
        contentIsPointer: typeof content === "string" && content.startsWith(`[offloaded tool output id="${offloaded.id}"`),
        contentLength: content.length,
        offloaded,
        same: back === output,
        firstDifference: back === output ? -1 : [...back].findIndex((c, i) => c !== output[i]),
        backLength: back.length,
        reads,
        totalLines,
        listed: listed.offloads.map((h) => ({ id: h.id, toolName: h.toolName, toolCallId: h.toolCallId, lines: h.lines, bytes: h.bytes })),
        damaged: listed.damaged,
        listedRendered: listed.rendered.includes(offloaded.id),
        grepLines: grep.matches.map((m) => m.line),
        grepTexts: grep.matches.map((m) => m.text),
        expectedGrepTexts: output.split("\n").slice(19_989, 19_999),
        grepUnicode: grepUnicode.matches.length,
        grepUnicodeTruncated: grepUnicode.truncated,
        expectedUnicode,
        recovered,
        ids: (await store.loadRange(["context-keeper", SESSION])).map((e) => e.key),
      };
    } finally {
      await store.close();
    }
  }, { source: helpers, SESSION, NAME });

  assert.equal(result.failure, null);
  assert.ok(result.outputLength > 1_900_000 && result.outputLength < 2_600_000, `${result.outputLength} characters`);
  assert.equal(result.same, true, `read back ${result.backLength} of ${result.outputLength} characters, first difference at ${result.firstDifference}`);
  assert.equal(result.totalLines, 20_000);
  assert.equal(result.reads, 10, "2,000 lines a read");
  assert.ok(result.contentIsPointer);
  assert.ok(result.contentLength < 8_000, `pointer of ${result.contentLength} characters`);
  assert.equal(result.offloaded.lines, 20_000);
  assert.equal(result.offloaded.bytes, result.outputBytes);
  assert.deepEqual(result.offloaded.key.slice(0, 3), ["context-keeper", SESSION, "offload"]);
  assert.deepEqual(result.listed, [{ id: result.offloaded.id, toolName: "bash", toolCallId: "call_big", lines: 20_000, bytes: result.outputBytes }]);
  assert.deepEqual(result.damaged, []);
  assert.ok(result.listedRendered);
  assert.deepEqual(result.grepLines, [19990, 19991, 19992, 19993, 19994, 19995, 19996, 19997, 19998, 19999]);
  assert.deepEqual(result.grepTexts, result.expectedGrepTexts);
  assert.ok(result.expectedUnicode > 100);
  // grep caps its matches; whatever it returned must be real matches, all of them if not truncated.
  if (result.grepUnicodeTruncated) assert.ok(result.grepUnicode > 0 && result.grepUnicode <= result.expectedUnicode);
  else assert.equal(result.grepUnicode, result.expectedUnicode);
  assert.match(result.recovered, /20000\tL20000:/);
  assert.deepEqual(result.ids, [result.offloaded.key]);
  assert.deepEqual(pageErrors, []);
});

test("offloadMessages keeps the caller's untouched objects and the input unchanged", async () => {
  const result = await page.evaluate(async ({ source, NAME }) => {
    const { readAll } = (0, eval)(source);
    const ck = await import("/pkg/browser.js");
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const big = (t) => Array.from({ length: 3_000 }, (_, i) => `turn ${t} line ${i}: ${"lorem ipsum ".repeat(5)}`).join("\n");
    const history = [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "fix the bug" }];
    for (let t = 0; t < 4; t++) {
      history.push({ role: "assistant", content: null, tool_calls: [{ id: `call_${t}`, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat f${t}` }) } }] });
      history.push({ role: "tool", tool_call_id: `call_${t}`, content: t === 2 ? "short" : big(t) });
    }
    history.push({ role: "user", content: "go on" });
    const before = JSON.stringify(history);
    const store = new IndexedDBStore({ name: NAME });
    try {
      const { messages, report } = await ck.offloadMessages(history, { store, sessionId: "msgs", limitTokens: 5_000 });
      const same = messages.map((m, i) => m === history[i]);
      const edited = report.edits.map((e) => e.messageIndex);
      // Every pointer reads back to the exact original.
      const roundTrips = [];
      for (const edit of report.edits) {
        const read = await readAll(ck, edit.original.id, { store, sessionId: "msgs" });
        roundTrips.push(read.text === history[edit.messageIndex].content + "\n");
      }
      return {
        unchanged: JSON.stringify(history) === before,
        same,
        edited,
        actions: report.edits.map((e) => e.action),
        failures: report.failures,
        roundTrips,
        pointers: edited.map((i) => messages[i].content.startsWith("[offloaded tool output id=")),
        valid: ck.validateMessages(messages),
        length: messages.length === history.length,
      };
    } finally {
      await store.close();
    }
  }, { source: helpers, NAME });
  assert.equal(result.unchanged, true, "the input is not mutated");
  assert.deepEqual(result.edited, [3, 5, 9]);
  assert.deepEqual(result.actions, ["offload", "offload", "offload"]);
  assert.deepEqual(result.failures, []);
  assert.deepEqual(result.same, result.same.map((_, i) => ![3, 5, 9].includes(i)));
  assert.deepEqual(result.roundTrips, [true, true, true]);
  assert.deepEqual(result.pointers, [true, true, true]);
  assert.deepEqual(result.valid, []);
  assert.equal(result.length, true);
  assert.deepEqual(pageErrors, []);
});

test("a FaultyStore over IndexedDB whose save rejects leaves the result and reports it; the next call stores it", async () => {
  const result = await page.evaluate(async ({ source, NAME }) => {
    const { makeOutput, readAll } = (0, eval)(source);
    const ck = await import("/pkg/browser.js");
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const { FaultyStore } = await import("/pkg/testing/index.js");
    const inner = new IndexedDBStore({ name: NAME });
    try {
      const store = new FaultyStore(inner, [{ op: "save", fault: "reject", times: 1 }]);
      const output = makeOutput(5_000);
      const blocks = [{ type: "text", text: output }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }];
      const first = await ck.offloadToolResult(blocks, { store, sessionId: "faulty", toolName: "bash", toolCallId: "c1" });
      const afterFailure = await inner.loadRange(["context-keeper", "faulty"]);
      const second = await ck.offloadToolResult(blocks, { store, sessionId: "faulty", toolName: "bash", toolCallId: "c1" });
      const read = second.offloaded && await readAll(ck, second.offloaded.id, { store: inner, sessionId: "faulty" });
      return {
        firstIsCallers: first.content === blocks,
        firstOffloaded: first.offloaded,
        firstFailure: first.failure,
        storedAfterFailure: afterFailure.length,
        secondFailure: second.failure ?? null,
        secondImage: Array.isArray(second.content) && second.content[1]?.type === "image",
        secondPointer: Array.isArray(second.content) && second.content[0]?.text.startsWith("[offloaded tool output id="),
        readBack: read && read.text === output,
        log: store.log.map((l) => [l.op, l.fault ?? null]),
      };
    } finally {
      await inner.close();
    }
  }, { source: helpers, NAME });
  assert.equal(result.firstIsCallers, true, "the caller's own value, untouched");
  assert.equal(result.firstOffloaded, null);
  assert.equal(typeof result.firstFailure, "string");
  assert.match(result.firstFailure, /injected/);
  assert.equal(result.storedAfterFailure, 0);
  assert.equal(result.secondFailure, null);
  assert.equal(result.secondImage, true, "the image stays beside the pointer");
  assert.equal(result.secondPointer, true);
  assert.equal(result.readBack, true);
  // each save of an offload record first looks for an intact copy under its key (none here)
  assert.deepEqual(result.log, [["load", null], ["save", "reject"], ["load", null], ["save", null]]);
  assert.deepEqual(pageErrors, []);
});

test("the offloaded record is still readable after a reload of the page", async () => {
  await page.reload();
  const result = await page.evaluate(async ({ source, SESSION, NAME }) => {
    const { makeOutput, readAll } = (0, eval)(source);
    const ck = await import("/pkg/browser.js");
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const store = new IndexedDBStore({ name: NAME });
    try {
      const listed = await ck.listOffloaded({ store, sessionId: SESSION });
      const id = listed.offloads[0]?.id;
      const read = await readAll(ck, id, { store, sessionId: SESSION });
      const tool = await ck.runRecoveryTool("read_offloaded", { id, offset: 1, limit: 1 }, { store, sessionId: SESSION });
      return { count: listed.offloads.length, same: read.text === makeOutput(), reads: read.reads, tool };
    } finally {
      await store.close();
    }
  }, { source: helpers, SESSION, NAME });
  assert.equal(result.count, 1);
  assert.equal(result.same, true);
  assert.equal(result.reads, 10);
  assert.match(result.tool, /1\tL1:/);
  assert.deepEqual(pageErrors, []);
});

test("diagnostic: time to offload a 2 MB result into IndexedDB (median of 5, not asserted)", async () => {
  const times = await page.evaluate(async ({ source }) => {
    const { makeOutput, readAll } = (0, eval)(source);
    const ck = await import("/pkg/browser.js");
    const { IndexedDBStore } = await import("/pkg/stores/index.js");
    const store = new IndexedDBStore({ name: "ck-context-timing" });
    const ms = [];
    try {
      for (let r = 0; r < 6; r++) {
        // Each run a different text (another key), so no save is skipped or overwritten.
        const output = `run ${r}\n` + makeOutput();
        const started = performance.now();
        const { offloaded, failure } = await ck.offloadToolResult(output, { store, sessionId: "timing", toolName: "bash", toolCallId: `t${r}` });
        const elapsed = performance.now() - started;
        if (!offloaded) throw new Error(`not offloaded: ${failure}`);
        if (r > 0) ms.push(elapsed); // the first run warms up
      }
    } finally {
      await store.close();
    }
    return ms;
  }, { source: helpers });
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`# offloadToolResult, 2 MB into IndexedDBStore (Chromium): median ${sorted[sorted.length >> 1].toFixed(1)} ms of ${times.length} (${sorted.map((t) => t.toFixed(1)).join(", ")})`);
  assert.equal(times.length, 5);
});
