// The context layer inside workerd, for tests/workerd/context.test.mjs (which writes the wrangler
// config this Worker runs under; tests/workerd/wrangler.toml is the stores' and counting's).
// A Durable Object offloads a large tool result into DurableObjectStore over its own
// `ctx.storage` and reads it back whole on a later request (after a restart of wrangler, in the
// test); the Worker itself prunes and evicts a conversation. Routes (all POST):
//   /context/{sqlite,kv-backed}/{offload,read,fault}   in the Durable Object
//   /context/prune                                     in the Worker
//   /context/keeper/{turn,stats}?session=S&turn=N      a ContextKeeper session object
// GET / answers "ready" (the launcher's readiness probe).
import { DurableObject } from "cloudflare:workers";
import {
  ContextKeeper,
  ContextKeeperError,
  pruneMessages,
  evictToolInputs,
  offloadToolResult,
  offloadMessages,
  readOffloaded,
  listOffloaded,
  grepOffloaded,
  runRecoveryTool,
  validateMessages,
} from "context-keeper";
import { DurableObjectStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";
import { makeOutput, readAll as readAllWith } from "../js/tool-output.mjs";

const SESSION = "workerd-session";

/** A ~2.6 MB output: over the SQLite-backed storage's 2 MB value limit, so stored chunked. */
const bigOutput = (lines = 24_000) => makeOutput(lines, { seed: 11, maxWords: 30 });
const readAll = (id, options) => readAllWith({ readOffloaded }, id, options);

/** An OpenAI agent run: one bash call per turn, each result `size` lines. */
function agent(turns, size) {
  const messages = [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "fix the bug" }];
  for (let t = 0; t < turns; t++) {
    const id = `call_${t}`;
    messages.push({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat file${t}.py` }) } }] });
    messages.push({ role: "tool", tool_call_id: id, content: Array.from({ length: size }, (_, i) => `line ${i + 1} of file${t}.py: ${"x = compute(y) ".repeat(4)}`).join("\n") });
  }
  messages.push({ role: "user", content: "go on" });
  return messages;
}

const json = (value) => Response.json(value);

class ContextObject extends DurableObject {
  options = {};

  async fetch(request) {
    const action = new URL(request.url).pathname.split("/").pop();
    const storage = this.ctx.storage;
    const store = new DurableObjectStore(storage, this.options);
    if (action === "offload") {
      await storage.deleteAll();
      const output = bigOutput();
      const { content, offloaded, failure } = await offloadToolResult(output, { store, sessionId: SESSION, toolName: "bash", toolCallId: "call_big" });
      // Also a conversation whose one large result slipped through.
      const history = agent(3, 50);
      history[5] = { ...history[5], content: bigOutput(3_000) };
      const swept = await offloadMessages(history, { store, sessionId: SESSION, limitTokens: 5_000 });
      return json({
        failure: failure ?? null,
        offloaded,
        bytes: new TextEncoder().encode(output).length,
        pointer: typeof content === "string" ? content.slice(0, 200) : null,
        pointerChars: typeof content === "string" ? content.length : null,
        storageEntries: (await storage.list()).size,
        swept: {
          edited: swept.report.edits.map((e) => [e.messageIndex, e.action]),
          failures: swept.report.failures,
          same: swept.messages.map((m, i) => m === history[i]),
          valid: validateMessages(swept.messages),
        },
      });
    }
    if (action === "read") {
      const listed = await listOffloaded({ store, sessionId: SESSION });
      const big = listed.offloads.find((h) => h.toolCallId === "call_big");
      if (!big) return json({ listed: listed.offloads.map((h) => h.id) });
      const whole = await readAll(big.id, { store, sessionId: SESSION });
      const output = bigOutput();
      const tool = await runRecoveryTool("read_offloaded", JSON.stringify({ id: big.id, offset: 23_999, limit: 50 }), { store, sessionId: SESSION });
      const expectedTool = output.split("\n").slice(23_998, 24_000);
      const grep = await grepOffloaded("^L2399[0-9]:", { store, sessionId: SESSION, id: big.id });
      const grepTool = await runRecoveryTool("grep_offloaded", { pattern: "^L12345:" }, { store, sessionId: SESSION });
      const missing = await runRecoveryTool("read_offloaded", { id: "nope" }, { store, sessionId: SESSION });
      const swept = listed.offloads.find((h) => h.toolCallId === "call_1");
      const sweptBack = swept && (await readAll(swept.id, { store, sessionId: SESSION })).text;
      return json({
        listed: listed.offloads.map((h) => ({ toolCallId: h.toolCallId, lines: h.lines })).sort((a, b) => a.toolCallId.localeCompare(b.toolCallId)),
        damaged: listed.damaged,
        id: big.id,
        same: whole.text === output,
        readLength: whole.text.length,
        outputLength: output.length,
        reads: whole.reads,
        totalLines: whole.totalLines,
        toolHasLastLines: expectedTool.every((line, i) => tool.includes(`${23_999 + i}\t${line}`)),
        toolEnds: /end of output/.test(tool),
        tool: tool.slice(0, 500),
        grep: grep.matches.map((m) => m.line),
        grepTexts: grep.matches.map((m) => m.text).join("\n") === output.split("\n").slice(23_989, 23_999).join("\n"),
        grepTool,
        missing,
        sweptSame: sweptBack === bigOutput(3_000),
      });
    }
    if (action === "fault") {
      // A store that never settles: the timer of the driver runs inside the Durable Object.
      await storage.deleteAll();
      const hanging = new FaultyStore(store, [{ op: "save", fault: "hang", times: 1 }]);
      const output = bigOutput(3_000);
      const first = await offloadToolResult(output, { store: hanging, sessionId: "fault", toolName: "bash", toolCallId: "c", timeoutMs: 100 });
      const second = await offloadToolResult(output, { store: hanging, sessionId: "fault", toolName: "bash", toolCallId: "c", timeoutMs: 5_000 });
      const back = second.offloaded && (await readAll(second.offloaded.id, { store, sessionId: "fault" })).text;
      let error;
      try {
        await readOffloaded("nope", { store, sessionId: "fault" });
      } catch (err) {
        error = { isContextKeeperError: err instanceof ContextKeeperError, kind: err.kind, path: err.path };
      }
      return json({
        firstSame: first.content === output,
        firstOffloaded: first.offloaded,
        firstFailure: first.failure ?? null,
        secondFailure: second.failure ?? null,
        secondSame: back === output,
        error,
      });
    }
    return new Response("unknown action", { status: 404 });
  }
}

export class ContextSqlite extends ContextObject {}
/** Values chunked at the production KV-backed limit (local workerd backs every class with SQLite). */
export class ContextKvBacked extends ContextObject {
  options = { maxValueBytes: 128 * 1024 - 1024 };
}

/** pruneMessages and evictToolInputs inside the Worker, on OpenAI and AI SDK histories. */
function prune() {
  const history = agent(14, 150);
  const before = JSON.stringify(history);
  const { messages, report } = pruneMessages(history);
  const edited = new Set(report.edits.map((e) => e.messageIndex));
  const aisdk = [{ role: "user", content: "write them" }];
  const content = Array.from({ length: 300 }, (_, i) => `export const v${i} = ${i};`).join("\n");
  for (let t = 0; t < 3; t++) {
    aisdk.push({ role: "assistant", content: [{ type: "tool-call", toolCallId: `w${t}`, toolName: "write_file", input: { path: `src/f${t}.ts`, content } }] });
    aisdk.push({ role: "tool", content: [{ type: "tool-result", toolCallId: `w${t}`, toolName: "write_file", output: { type: "text", value: "ok" } }] });
  }
  const evicted = evictToolInputs(aisdk);
  let error;
  try {
    pruneMessages(history, { keepLastTurns: 3 });
  } catch (err) {
    error = { isContextKeeperError: err instanceof ContextKeeperError, kind: err.kind, path: err.path };
  }
  return {
    unchanged: JSON.stringify(history) === before,
    untouchedAreCallers: history.every((m, i) => edited.has(i) ? messages[i] !== m : messages[i] === m),
    actions: report.edits.map((e) => e.action),
    tokensSaved: report.tokensSaved,
    valid: validateMessages(messages),
    lastResultWhole: messages[messages.length - 2].content === history[history.length - 2].content,
    trimmed: messages[history.length - 10].content.includes("[... trimmed "),
    idempotent: pruneMessages(messages).report.edits.length,
    evicted: evicted.report.edits.map((e) => [e.messageIndex, e.action, e.original.path]),
    evictedPath: evicted.messages[1].content[0].input.path,
    evictedPointer: evicted.messages[1].content[0].input.content.startsWith("[context-keeper evicted content: "),
    error,
  };
}

/**
 * One agent session per object, the way a Worker keeps a chat: the history in the object's
 * storage, offloads and the keeper's session state in DurableObjectStore over the same storage,
 * and a new ContextKeeper for every request (an isolate keeps nothing between them). A turn
 * appends one `bash` call and its result (every fifth one 40,000 characters, over the offload
 * limit) and prepares the history for a 16k window.
 */
export class KeeperSession extends DurableObject {
  async fetch(request) {
    const url = new URL(request.url);
    const sessionId = url.searchParams.get("session");
    const storage = this.ctx.storage;
    const store = new DurableObjectStore(storage);
    const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 16_000, store });
    try {
      if (url.pathname.endsWith("/stats")) {
        const stats = await keeper.stats(sessionId);
        const listed = await listOffloaded({ store, sessionId });
        const first = listed.offloads[0];
        const read = first === undefined ? null : await readAll(first.id, { store, sessionId });
        return json({ stats, offloads: listed.offloads.length, damaged: listed.damaged, firstLines: first?.lines ?? 0, readLines: read?.totalLines ?? 0, readComplete: read !== null && read.text.split("\n").length - 1 === read.totalLines });
      }
      const t = Number(url.searchParams.get("turn"));
      const history = (await storage.get("history")) ?? [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "Fix the failing test." }];
      const id = `call_${t}`;
      const lines = t % 5 === 4 ? 1_000 : 80;
      history.push({ role: "assistant", content: `Turn ${t}: reading file${t}.py`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat file${t}.py` }) } }] });
      history.push({ role: "tool", tool_call_id: id, content: Array.from({ length: lines }, (_, i) => `file${t}.py:${i + 1}: value_${i} = compute(${i}, "${"x".repeat(16)}")`).join("\n") });
      await storage.put("history", history);
      const { messages, report } = await keeper.prepare(history, { sessionId, now: "2026-11-25T12:00:00Z" });
      return json({
        messages: messages.length,
        valid: validateMessages(messages),
        report: { ...report, pruned: report.pruned.length, evicted: report.evicted.length, offloaded: report.offloaded.length },
        // the ids of the stored copies behind this output's offloads and cuts
        offloadedIds: report.offloaded.map((edit) => edit.original.id),
        cutIds: report.pruned.filter((edit) => edit.original.kind === "store").map((edit) => edit.original.id),
      });
    } finally {
      keeper.free();
    }
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, first, kind, action] = url.pathname.split("/");
    if (first !== "context") return new Response("ready");
    try {
      if (kind === "prune") return json(prune());
      if (kind === "keeper") {
        const session = url.searchParams.get("session");
        return env.KEEPER_SESSION.get(env.KEEPER_SESSION.idFromName(session)).fetch(`https://keeper/${action}${url.search}`, { method: "POST" });
      }
      if (kind === "sqlite" || kind === "kv-backed") {
        const namespace = kind === "sqlite" ? env.CONTEXT_SQLITE : env.CONTEXT_KV_BACKED;
        // The fault case in an object of its own: it clears its storage first.
        return namespace.get(namespace.idFromName(action === "fault" ? "fault" : "context")).fetch(`https://context/${action}`, { method: "POST" });
      }
    } catch (err) {
      return new Response(`${err.name}: ${err.message}\n${err.stack}`, { status: 500 });
    }
    return new Response("unknown route", { status: 404 });
  },
};
