// `context-keeper prepare`: the ContextKeeper on a conversation file, with the file-system store
// for offloads and archives, and a summarizer that is either the package's heuristic (no
// callback) or a shell command fed the summary request on stdin.
import { spawn } from "node:child_process";
import { messagesOf } from "./describe.js";
import { num, pct, safeLine } from "./term.js";

/** What a summarizer command's stdin holds: the prompt, any previous summary, then the transcript. */
export function summaryText(request) {
  const parts = [request.prompt.trimEnd(), ""];
  if (typeof request.previousSummary === "string" && request.previousSummary !== "") {
    parts.push("## Previous summary", "", request.previousSummary.trimEnd(), "");
  }
  parts.push("## Conversation to summarize", "", request.transcript.trimEnd(), "");
  return parts.join("\n");
}

/** The last non-blank line of a command's stderr, for the reason of a failure. */
const lastLine = (text) => text.split("\n").map((l) => l.trim()).filter(Boolean).pop() ?? "";

/**
 * A summarize callback that runs `command` in a shell, writes the request to its stdin (`input`:
 * "text", see summaryText, or "json": `{ prompt, transcript, targetTokens, previousSummary,
 * messages }`) and resolves with its stdout. A non-zero exit, a signal or `timeoutMs` rejects,
 * so the keeper keeps the conversation whole and reports why.
 */
export function commandSummarizer(command, { input = "text", timeoutMs = 120_000, env = process.env } = {}) {
  return (request) =>
    new Promise((resolve, reject) => {
      const payload =
        input === "json"
          ? JSON.stringify({ prompt: request.prompt, transcript: request.transcript, targetTokens: request.targetTokens, previousSummary: request.previousSummary ?? null, messages: request.messages })
          : summaryText(request);
      const posix = process.platform !== "win32";
      const child = spawn(command, {
        shell: true,
        stdio: ["pipe", "pipe", "pipe"],
        // NOTE: its own process group, so a timeout ends the shell and whatever it started.
        detached: posix,
        env: { ...env, CONTEXT_KEEPER_PROMPT: request.prompt, CONTEXT_KEEPER_TARGET_TOKENS: String(request.targetTokens) },
      });
      const out = [];
      let err = "";
      let settled = false;
      const finish = (fn, value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn(value);
      };
      const timer = setTimeout(() => {
        try {
          if (posix) process.kill(-child.pid, "SIGKILL");
          else child.kill("SIGKILL");
        } catch {}
        finish(reject, new Error(`the summarizer command did not answer within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      child.stdout.on("data", (chunk) => out.push(chunk));
      child.stderr.on("data", (chunk) => {
        if (err.length < 65_536) err += chunk.toString("utf8");
      });
      child.stdin.on("error", () => {}); // a command that does not read its stdin
      child.on("error", (e) => finish(reject, new Error(`the summarizer command could not start: ${e.message}`)));
      child.on("close", (code, signal) => {
        if (code === 0) finish(resolve, Buffer.concat(out).toString("utf8").trim());
        else {
          const why = lastLine(err);
          finish(reject, new Error(`the summarizer command exited with ${signal ?? code}${why ? `: ${why}` : ""}`));
        }
      });
      child.stdin.end(payload);
    });
}

/**
 * The managed conversation as text: JSON with one message a line (valid JSON, readable with
 * `less`, diffable), in the input's shape (an array or the request object around it).
 */
export function serialize(conversation) {
  const list = messagesOf(conversation);
  const body = list.length === 0 ? "[]" : `[\n${list.map((m) => JSON.stringify(m)).join(",\n")}\n]`;
  if (Array.isArray(conversation)) return `${body}\n`;
  const { messages: _messages, ...rest } = conversation;
  const head = JSON.stringify(rest);
  return `${head === "{}" ? "{" : `${head.slice(0, -1)},`}"messages":${body}}\n`;
}

/** What prepare did, for people (to stderr). */
export function renderPrepare(result, c) {
  const { report: r, model, store, sessionId, summarizer, out } = result;
  const lines = [];
  if (!r.managed) {
    lines.push(`${c.yellow("not managed")}: ${safeLine(r.reason ?? "")}`);
    return lines.join("\n");
  }
  const b = r.budget;
  const fits = r.fits ? c.green("fits") : c.red("over budget");
  lines.push(`${c.bold("prepare")}: ${num(r.tokensBefore)} -> ${c.bold(num(r.tokensAfter))} tokens (${pct(r.tokensAfter, b.window)} of ${safeLine(model)}'s ${num(b.window)}; budget ${num(b.compactAt)}): ${fits}, ${r.decision}`);
  const saved = r.saved ?? {};
  const did = [];
  if (r.offloaded.length) did.push(`offloaded ${r.offloaded.length} result${r.offloaded.length === 1 ? "" : "s"} (${num(saved.offload ?? 0)} tokens)`);
  if (r.pruned.length) did.push(`pruned ${r.pruned.length} (${num(saved.prune ?? 0)})`);
  if (r.evicted.length) did.push(`evicted ${r.evicted.length} file content${r.evicted.length === 1 ? "" : "s"} (${num(saved.evict ?? 0)})`);
  if (did.length) lines.push(`  ${did.join(", ")}`);
  const comp = r.compaction;
  if (comp?.outcome === "compacted" || comp?.outcome === "reapplied") {
    const span = comp.span ? `messages ${comp.span.from}-${comp.span.to - 1}` : "older messages";
    lines.push(`  ${comp.outcome} ${span}: ${num(comp.replacedTokens)} -> ${num(comp.summaryTokens)} tokens, ${comp.heuristic ? "heuristic summary" : `summary by ${safeLine(summarizer)}`}${comp.pinned?.length ? `, ${comp.pinned.length} exact details pinned` : ""}`);
  } else if (comp?.outcome === "failed") {
    lines.push(`  ${c.yellow("compaction failed")} (${comp.phase}): ${safeLine(comp.reason ?? "")}; the messages stay as they were`);
  }
  if (r.failures.length) lines.push(`  ${c.yellow(`${r.failures.length} offload${r.failures.length === 1 ? "" : "s"} not stored`)}: ${safeLine(r.failures[0].reason ?? "")}`);
  if (r.stateFailure) lines.push(`  ${c.yellow("session state not saved")}: ${safeLine(r.stateFailure)}`);
  const said = comp?.outcome === "failed" && typeof comp.reason === "string" && r.overBudget?.includes(comp.reason);
  if (r.overBudget && !said) lines.push(`  ${c.red("why")}: ${safeLine(r.overBudget)}`);
  if (r.offloaded.length || (comp && comp.outcome !== "failed" && comp.outcome !== "unchanged")) {
    lines.push(c.dim(`  stored in ${store} (session ${safeLine(sessionId)}); read back: context-keeper list --store ${store} --session ${safeLine(sessionId)}`));
  }
  if (out) lines.push(c.dim(`  wrote ${safeLine(out)} (${num(r.messages)} messages)`));
  return lines.join("\n");
}
