// `context-keeper report`: what a conversation costs and what prepare would do with it. Every
// figure is the package's own: countMessages for the tokens, validateMessages and repairMessages
// for tool pairing, ContextKeeper.plan (a dry run: nothing written, no callback) for the plan.
import { describeMessage, isMarker, messagesOf, toolNamesById } from "./describe.js";
import { bar, clip, num, pct, safeLine, table } from "./term.js";

/** The order and names of the plan's actions. */
const ACTIONS = ["offload", "softTrim", "hardClear", "evictInput", "evictResult", "compact"];
const ACTION_LABELS = { offload: "offload", softTrim: "soft trim", hardClear: "hard clear", evictInput: "evict input", evictResult: "evict result", compact: "compact" };

/** The planned edits of a keeper report, grouped by action and tool, most saved first within an action. */
export function groupEdits(report) {
  const rows = new Map();
  for (const edit of [...report.offloaded, ...report.pruned, ...report.evicted]) {
    const key = JSON.stringify([edit.action, edit.toolName ?? null]);
    const row = rows.get(key) ?? { action: edit.action, tool: edit.toolName ?? null, edits: 0, tokensBefore: 0, tokensAfter: 0, saved: 0 };
    row.edits++;
    row.tokensBefore += edit.tokensBefore;
    row.tokensAfter += edit.tokensAfter;
    row.saved = row.tokensBefore - row.tokensAfter;
    rows.set(key, row);
  }
  const out = [...rows.values()].sort((a, b) => ACTIONS.indexOf(a.action) - ACTIONS.indexOf(b.action) || b.saved - a.saved);
  const c = report.compaction;
  if (c !== undefined && (c.outcome === "compacted" || c.outcome === "reapplied")) {
    out.push({
      action: "compact",
      tool: null,
      edits: c.span ? c.span.to - c.span.from : 0,
      span: c.span ?? null,
      tokensBefore: c.replacedTokens,
      tokensAfter: c.summaryTokens,
      saved: c.replacedTokens - c.summaryTokens,
      heuristic: c.heuristic,
    });
  }
  return out;
}

/**
 * The report's figures, as `--json` prints them. `input` is what parseConversation read;
 * `options`: `{ ck, model, window, store, sessionId, top, name }`.
 */
export async function analyze(input, options) {
  const { ck, model, store, sessionId, top } = options;
  const conversation = input.value;
  const format = ck.detectFormat(conversation);
  const count = ck.countMessages(conversation, { model });
  const info = ck.modelInfo(model);
  const window = options.window ?? info.contextWindow;
  const list = messagesOf(conversation);
  const names = toolNamesById(list);
  const line = (index) => (input.lines ? { line: input.lines[index] } : {});

  const largest = count.perMessage
    .map((tokens, index) => ({ index, tokens }))
    .sort((a, b) => b.tokens - a.tokens || a.index - b.index)
    .slice(0, top)
    .map(({ index, tokens }) => {
      const { kind, preview } = describeMessage(list[index], names);
      return { index, ...line(index), role: list[index].role, kind, tokens, preview: clip(safeLine(preview), 240) };
    });
  const markerIndexes = list.flatMap((m, i) => (isMarker(m) ? [i] : []));

  const problems = ck.validateMessages(conversation).map((p) => ({ ...p, ...line(p.messageIndex) }));
  const repaired = problems.length > 0 ? ck.repairMessages(conversation) : null;

  // NOTE: a keeper refuses a model whose window nobody gave; the report still describes the
  // conversation, and says why nothing is managed.
  const unmanaged = !info.known && options.window === undefined;
  const keeper = new ck.ContextKeeper({ model, ...(options.window === undefined ? {} : { contextWindow: options.window }), ...(unmanaged ? { enabled: false } : {}), store });
  let planned;
  try {
    planned = (await keeper.plan(conversation, { sessionId })).report;
  } finally {
    keeper.free();
  }
  if (unmanaged) planned = { ...planned, reason: `the context window of ${JSON.stringify(model)} is not known; pass --window` };
  return {
    file: options.name,
    format: format ?? null,
    jsonl: input.jsonl,
    messages: list.length,
    model: { name: model, known: info.known, encoding: count.encoding, exact: count.exact, ownTokenizer: info.exact, window, windowFrom: options.window === undefined ? "registry" : "option" },
    tokens: {
      total: count.total,
      system: count.system,
      tools: count.tools,
      byRole: count.byRole,
      byKind: count.byKind,
      markers: { messages: markerIndexes.length, tokens: markerIndexes.reduce((n, i) => n + count.perMessage[i], 0) },
    },
    window: { tokens: count.total, window, share: window ? count.total / window : null, over: window ? count.total > window : false },
    largest,
    problems,
    repairs: repaired ? repaired.report : [],
    unrepaired: repaired ? repaired.unrepaired : [],
    plan: {
      managed: planned.managed,
      ...(planned.reason === undefined ? {} : { reason: planned.reason }),
      decision: planned.decision,
      tokensBefore: planned.tokensBefore,
      tokensAfter: planned.tokensAfter,
      fits: planned.fits,
      ...(planned.overBudget === undefined ? {} : { overBudget: planned.overBudget }),
      budget: planned.budget ?? null,
      saved: planned.saved,
      estimated: planned.estimated,
      edits: groupEdits(planned),
      compaction: planned.compaction ?? null,
    },
  };
}

const KIND_ROWS = [
  ["text", "text"],
  ["toolCalls", "tool calls"],
  ["toolResults", "tool results"],
  ["images", "images"],
  ["files", "files"],
  ["reasoning", "thinking"],
  ["overhead", "framing, tools"],
];

/** The window bar: use against the window, with the keeper's thresholds marked. */
function windowBar(r, c, width) {
  const { tokens, window } = r.window;
  const cells = Math.max(20, Math.min(60, width - 40));
  const share = window ? tokens / window : 0;
  const filled = bar(share, cells);
  const rest = "░".repeat(Math.max(0, cells - Array.from(filled).length));
  const paint = share > 1 ? c.red : share >= 0.85 ? c.yellow : c.green;
  const over = share > 1 ? c.red(`, over by ${num(tokens - window)}`) : "";
  return `  [${paint(filled)}${c.dim(rest)}] ${c.bold(num(tokens))} of ${num(window)} tokens, ${pct(tokens, window)}${over}`;
}

/** The report for people. `c` is the palette, `width` the terminal's. */
export function renderReport(r, c, width) {
  const out = [];
  const section = (title) => out.push("", c.bold(title));
  const modelNote = r.model.known ? "" : c.yellow(" (not in the registry: its default window; pass --window)");
  out.push(`${c.bold("context-keeper report")} ${safeLine(r.file)}`);
  out.push(
    `  ${num(r.messages)} messages${r.jsonl ? " (JSON Lines)" : ""}, format ${r.format ?? "plain (reads as any)"}, model ${safeLine(r.model.name)}${modelNote}, ` +
      `${r.model.encoding}, ${r.model.exact ? "exact" : r.model.ownTokenizer ? "approximate (its own tokenizer; tool calls, images and files are priced by published rules)" : "approximate (the model's tokenizer is not public)"}`,
  );

  section(`Window: ${num(r.model.window)} tokens${r.model.windowFrom === "option" ? " (--window)" : ""}`);
  out.push(windowBar(r, c, width));
  if (r.plan.budget) {
    const b = r.plan.budget;
    out.push(c.dim(`  prepare prunes above ${num(b.pruneAt)} (${pct(b.pruneAt, b.window)}) and compacts above ${num(b.compactAt)} (${pct(b.compactAt, b.window)})`));
  }

  const total = r.tokens.total;
  const shareBar = (n) => c.cyan(bar(total ? n / total : 0, 20));
  section("Tokens by role");
  const roles = Object.entries(r.tokens.byRole).sort((a, b) => b[1] - a[1]);
  out.push(table([{ label: "role" }, { label: "tokens", align: "right" }, { label: "share", align: "right" }, { label: "" }],
    roles.map(([role, n]) => [role, num(n), pct(n, total), shareBar(n)]), { paint: c.dim }));
  if (r.tokens.tools > 0) out.push(c.dim(`  (tool definitions: ${num(r.tokens.tools)} tokens, counted under framing)`));

  section("Tokens by kind");
  const kindRows = KIND_ROWS.map(([key, label]) => [label, num(r.tokens.byKind[key] ?? 0), pct(r.tokens.byKind[key] ?? 0, total), shareBar(r.tokens.byKind[key] ?? 0)]);
  kindRows.push([`markers (${r.tokens.markers.messages})`, num(r.tokens.markers.tokens), pct(r.tokens.markers.tokens, total), c.dim("compaction summaries, framing included; within text")]);
  out.push(table([{ label: "kind" }, { label: "tokens", align: "right" }, { label: "share", align: "right" }, { label: "" }], kindRows, { paint: c.dim }));

  section(`Largest messages (${r.largest.length} of ${num(r.messages)})`);
  out.push(table(
    [{ label: "#", align: "right" }, { label: "role" }, { label: "holds" }, { label: "tokens", align: "right" }, { label: "share", align: "right" }, { label: "starts with" }],
    r.largest.map((m) => [String(m.index) + (m.line ? c.dim(`:${m.line}`) : ""), m.role, safeLine(m.kind), num(m.tokens), pct(m.tokens, total), c.dim(m.preview)]),
    { maxWidth: width, paint: c.dim },
  ));

  section("Tool pairing");
  if (r.problems.length === 0) {
    out.push(`  ${c.green("valid")}: every tool call has its result, every result its call`);
  } else {
    out.push(`  ${c.red(`${r.problems.length} problem${r.problems.length === 1 ? "" : "s"}`)} a provider would reject:`);
    out.push(table([{ label: "message", align: "right" }, { label: "problem" }, { label: "" }],
      r.problems.slice(0, 20).map((p) => [`${p.messageIndex}${p.line ? c.dim(`:${p.line}`) : ""}`, p.kind, safeLine(p.message)]), { maxWidth: width, paint: c.dim }));
    if (r.problems.length > 20) out.push(c.dim(`  ... and ${r.problems.length - 20} more (--json lists them all)`));
    if (r.repairs.length > 0) {
      out.push(`  repairMessages (prepare --repair) would make ${r.repairs.length} edit${r.repairs.length === 1 ? "" : "s"}:`);
      for (const a of r.repairs.slice(0, 10)) out.push(`    ${a.action} at messages[${a.messageIndex}]: ${safeLine(a.message)}`);
      if (r.repairs.length > 10) out.push(c.dim(`    ... and ${r.repairs.length - 10} more`));
    }
    if (r.unrepaired.length > 0) out.push(`  ${c.yellow(`${r.unrepaired.length} left for you`)} (fixing them would mean inventing or deleting content)`);
  }

  section("What prepare would do (a dry run: nothing written)");
  const p = r.plan;
  if (!p.managed) {
    out.push(`  ${c.yellow("not managed")}: ${safeLine(p.reason ?? "")}`);
    return out.join("\n");
  }
  if (p.edits.length === 0) {
    out.push(`  nothing: ${num(p.tokensBefore)} tokens is under the first threshold (${num(p.budget.pruneAt)})`);
  } else {
    const rows = p.edits.map((e) => [
      ACTION_LABELS[e.action] ?? e.action,
      e.action === "compact" ? `messages ${e.span.from}-${e.span.to - 1}` : safeLine(e.tool ?? "-"),
      num(e.edits),
      num(e.tokensBefore),
      num(e.tokensAfter),
      c.green(num(e.saved)),
      e.action === "compact" ? c.dim(e.heuristic ? "heuristic summary" : "summary") : "",
    ]);
    out.push(table([{ label: "action" }, { label: "tool" }, { label: "edits", align: "right" }, { label: "before", align: "right" }, { label: "after", align: "right" }, { label: "saved", align: "right" }, { label: "" }], rows, { paint: c.dim }));
  }
  const fits = p.fits ? c.green(`fits under ${num(p.budget.compactAt)}`) : c.red(`over the budget of ${num(p.budget.compactAt)}`);
  out.push(`  ${c.bold(p.decision)}: ${num(p.tokensBefore)} -> ${c.bold(num(p.tokensAfter))} tokens (${pct(p.tokensAfter, p.budget.window)} of the window), ${fits}${p.estimated ? c.dim(", estimated") : ""}`);
  if (p.overBudget) out.push(`  ${c.red("why")}: ${safeLine(p.overBudget)}`);
  if (p.compaction?.outcome === "failed") out.push(`  ${c.yellow("compaction")}: ${safeLine(p.compaction.reason ?? "failed")}`);
  return out.join("\n");
}
