// The demo page: a conversation (a bundled sample, or one pasted or dropped), its count against
// the chosen model's window, what prepare would do, the tiers applied step by step (or prepare in
// one call) with every message before and after, the offloads kept in IndexedDB, and compaction
// markers opened back into the messages they archived. Every number shown is the package's.
import {
  ContextKeeper, compact, countMessages, detectFormat, evictToolInputs, listOffloaded, modelInfo,
  listModels, offloadMessages, pruneMessages, readArchive, readOffloaded, repairMessages, validateMessages,
} from "context-keeper";
import { IndexedDBStore } from "context-keeper/stores";
import { fill, fmt, h, pct } from "./dom.js";
import { KINDS, describe, listOf, parseConversation } from "./messages.js";

const $ = (id) => document.getElementById(id);

/** The bundled samples, served from tests/data/ at /samples/. */
const SAMPLES = {
  "agent-openai": { file: "sessions/agent-300.openai.json.gz", label: "the 300-turn agent session (OpenAI)" },
  "agent-anthropic": { file: "sessions/agent-300.anthropic.json.gz", label: "the 300-turn agent session (Anthropic)" },
  "agent-aisdk": { file: "sessions/agent-300.aisdk.json.gz", label: "the 300-turn agent session (AI SDK ModelMessage)" },
  "agent-ui": { file: "sessions/agent-300.ui.json.gz", label: "the 300-turn agent session (AI SDK UIMessage)" },
  chat: { file: "sample-conversation.json", label: "the short chat (OpenAI)" },
};

/** The models offered, by provider; each is shown with the registry's window. */
const PROVIDERS = { openai: "OpenAI", anthropic: "Anthropic", google: "Google", meta: "Meta", alibaba: "Alibaba", mistral: "Mistral", deepseek: "DeepSeek" };

const DB_NAME = "context-keeper-demo";
const STEPS = ["offload", "prune", "compact"];
/** A row's text is shown up to this many characters until "Show all". */
const SHOWN_CHARS = 4_000;

const store = new IndexedDBStore({ name: DB_NAME });

const state = {
  /** `{ id, label, sessionId, conversation, format, note }` of the loaded conversation. */
  source: null,
  /** The snapshot of the loaded conversation. */
  original: null,
  /** The snapshot shown: the original, a step's output or prepare's. */
  view: null,
  /** What produced the view: "original", a step's name, or "prepare". */
  stage: "original",
  /** Whether a task is running (buttons are disabled). */
  busy: false,
};

// ---------------------------------------------------------------- settings

function settings() {
  const override = Number($("window").value);
  return {
    model: $("model").value,
    contextWindow: Number.isInteger(override) && override >= 1000 ? override : undefined,
    summarizer: document.querySelector("input[name=summarizer]:checked").value,
  };
}

/** A keeper for the current settings (a fresh one every time: each owns its counter and memo). */
function makeKeeper(extra = {}) {
  const { model, contextWindow } = settings();
  return new ContextKeeper({ model, contextWindow, store, summarize: summarizer(), ...extra });
}

/** The keeper's figures for the current settings: window, thresholds. */
function currentBudget() {
  const keeper = makeKeeper({ summarize: undefined });
  try {
    return keeper.budget;
  } finally {
    keeper.free();
  }
}

/**
 * The summarizer: undefined for the built-in heuristic, or a call to the OpenAI-compatible
 * endpoint typed into the page. The key is read from its input when a summary is asked for and
 * goes nowhere but that request's header.
 */
function summarizer() {
  if (settings().summarizer !== "endpoint") return undefined;
  return async ({ prompt, transcript }) => {
    const base = $("ep-url").value.trim().replace(/\/+$/, "");
    if (base === "") throw new Error("the endpoint's base URL is empty");
    const url = base.endsWith("/chat/completions") ? base : `${base}/chat/completions`;
    const key = $("ep-key").value.trim();
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify({
        model: $("ep-model").value.trim() || undefined,
        messages: [{ role: "system", content: prompt }, { role: "user", content: transcript }],
      }),
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`);
    const text = (await response.json())?.choices?.[0]?.message?.content;
    if (typeof text !== "string") throw new Error(`${url}: the reply has no choices[0].message.content`);
    return text;
  };
}

function fillModels() {
  const groups = new Map();
  // NOTE: the registry's own list, so the picker is never behind the package it runs.
  for (const info of listModels()) {
    const label = PROVIDERS[info.provider] ?? info.provider;
    if (!groups.has(label)) groups.set(label, h("optgroup", { label }));
    groups.get(label).append(h("option", { value: info.name }, `${info.name} · ${fmt(info.contextWindow)}`));
  }
  fill($("model"), [...groups.values()]);
  $("model").value = "gpt-4o";
}

/** The steps' descriptions, with the keeper's figures for the current settings. */
function describeSteps(budget) {
  document.querySelector("[data-step=offload] .what").textContent =
    `Tool results over ${fmt(budget.offloadAt)} tokens (the keeper's limit: 20,000 or an eighth of the window, whichever is less) go to IndexedDB; a pointer, their size and a preview stay.`;
}

function describeModel() {
  const { model, contextWindow } = settings();
  const info = modelInfo(model);
  const counted = info.exact ? `counted exactly with ${info.encoding}` : `counted with ${info.encoding}, an approximation for this model`;
  const window = contextWindow ? `window ${fmt(contextWindow)} (yours; the registry says ${fmt(info.contextWindow)})` : `window ${fmt(info.contextWindow)}`;
  fill($("model-note"), `${window}, ${counted}. `, info.source ? h("span", {}, `Source: ${new URL(info.source).hostname}, read ${info.checked}.`) : null);
}

// ---------------------------------------------------------------- loading

async function fetchSample(id) {
  const sample = SAMPLES[id];
  const response = await fetch(`/samples/${sample.file}`);
  if (!response.ok) throw new Error(`/samples/${sample.file}: HTTP ${response.status}`);
  return parseConversation(await textOf(response.body, sample.file.endsWith(".gz")));
}

/** A byte stream as text, gunzipped in the page when `gzipped`. */
async function textOf(stream, gzipped) {
  const body = gzipped ? stream.pipeThrough(new DecompressionStream("gzip")) : stream;
  return new Response(body).text();
}

async function sessionIdFor(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return `pasted-${[...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const FORMAT_NAMES = { openai: "OpenAI Chat Completions", anthropic: "Anthropic Messages", aisdk: "AI SDK" };

/**
 * Takes a conversation in: detects its format, validates it (repairing tool pairing when it is
 * broken, and saying so), counts it and plans. Its session's recorded decisions are forgotten,
 * so the plan and the steps start fresh; what it offloaded before stays in IndexedDB.
 */
async function load(conversation, { id, label, sessionId }) {
  const format = detectFormat(conversation);
  let note = "";
  const problems = validateMessages(conversation);
  if (problems.length > 0) {
    const repaired = repairMessages(conversation);
    conversation = repaired.messages;
    note = ` ${problems.length} problem(s) (${problems[0].kind} at message ${problems[0].messageIndex}${problems.length > 1 ? ", …" : ""}) repaired with ${repaired.report.length} edit(s).`;
  }
  state.source = { id, label, sessionId, conversation, format, note };
  for (const button of document.querySelectorAll("[data-sample]")) button.setAttribute("aria-pressed", String(button.dataset.sample === id));
  await forgetDecisions();
  await restart();
}

/** Removes the session's stored state (decisions, compactions), keeping its offloads and archives. */
async function forgetDecisions() {
  await store.removeRange(["context-keeper", state.source.sessionId, "state"]);
}

/** Shows the loaded conversation as it is, under the current settings, and plans. */
async function restart() {
  const { source } = state;
  state.original = snapshot(source.conversation, null);
  state.view = state.original;
  state.stage = "original";
  for (const li of document.querySelectorAll("#steps li")) {
    li.classList.remove("done");
    li.querySelector(".result").textContent = "";
  }
  const list = listOf(source.conversation);
  status($("source-status"), `Loaded ${source.label}: ${FORMAT_NAMES[source.format] ?? "format not detected (read as OpenAI)"}, ${fmt(list.length)} message${list.length === 1 ? "" : "s"}.${source.note}`);
  $("apply-status").textContent = "";
  renderAll();
  await plan();
}

async function run(task, statusEl) {
  if (state.busy) return;
  state.busy = true;
  updateButtons();
  try {
    await task();
  } catch (err) {
    console.error(err);
    status(statusEl, `${err.name === "Error" ? "" : `${err.name}: `}${err.message}`, true);
  } finally {
    state.busy = false;
    updateButtons();
  }
}

function status(el, text, error = false) {
  el.textContent = text;
  el.classList.toggle("error", error);
}

// ---------------------------------------------------------------- snapshots

/**
 * A conversation as the page shows it: its count and, per message, its kind and tokens. With
 * `before` (the snapshot a step was applied to), each row knows what it was: the same object
 * (the package returns untouched messages as the caller's own), edited in place, or the
 * compaction marker that replaced a span.
 */
function snapshot(conversation, before, edits = []) {
  const { model } = settings();
  const list = listOf(conversation);
  const count = countMessages(conversation, { model });
  const rows = list.map((message, index) => ({ index, message, tokens: count.perMessage[index], info: describe(message), status: "same" }));
  const overhead = count.total - count.perMessage.reduce((a, b) => a + b, 0);
  const snap = { conversation, list, count, rows, overhead, before };
  if (before) align(snap, before);
  for (const edit of edits) {
    const row = rows[edit.messageIndex];
    if (row) (row.actions ??= []).push(edit.action);
  }
  return snap;
}

function align(snap, before) {
  const indexOf = new Map(before.list.map((m, i) => [m, i]));
  const markerAt = snap.rows.findIndex((r) => !indexOf.has(r.message) && r.info.kind === "marker");
  const shift = before.rows.length - snap.rows.length;
  for (const row of snap.rows) {
    if (indexOf.has(row.message)) {
      row.origin = indexOf.get(row.message);
      continue;
    }
    if (row.index === markerAt) {
      // the span it replaced: from its place to the first message kept after it
      const span = before.rows.slice(markerAt, markerAt + shift + 1);
      row.status = "marker";
      row.replaced = span.length;
      row.beforeTokens = span.reduce((n, r) => n + r.tokens, 0);
      continue;
    }
    const origin = markerAt >= 0 && row.index > markerAt ? row.index + shift : row.index;
    const was = before.rows[origin];
    if (was) {
      row.status = "edited";
      row.origin = origin;
      row.was = was;
      row.beforeTokens = was.tokens;
    } else {
      row.status = "new";
    }
  }
}

// ---------------------------------------------------------------- rendering

function renderAll() {
  describeModel();
  renderGauge();
  renderMessages();
  $("messages").scrollTop = 0;
  updateButtons();
}

function renderGauge() {
  const view = state.view;
  const budget = currentBudget();
  describeSteps(budget);
  const tokens = view.count.total;
  const before = view.before?.count.total;
  const scale = Math.max(budget.window, tokens, before ?? 0);
  $("gauge-tokens").textContent = fmt(tokens);
  $("gauge-window").textContent = fmt(budget.window);
  const gauge = $("gauge");
  gauge.setAttribute("aria-valuemax", String(budget.window));
  gauge.setAttribute("aria-valuenow", String(Math.min(tokens, budget.window)));
  gauge.setAttribute("aria-valuetext", `${fmt(tokens)} tokens, ${pct(tokens, budget.window)} of a ${fmt(budget.window)}-token window`);

  let verdict, level;
  if (tokens > budget.window) [verdict, level] = [`${pct(tokens, budget.window)}: over the window, a provider would refuse it`, "over"];
  else if (tokens > budget.compactAt) [verdict, level] = [`${pct(tokens, budget.window)}: over the compaction threshold`, "high"];
  else if (tokens > budget.pruneAt) [verdict, level] = [`${pct(tokens, budget.window)}: over the prune threshold`, "mid"];
  else [verdict, level] = [`${pct(tokens, budget.window)}: fits, under every threshold`, "ok"];
  const v = $("gauge-verdict");
  v.textContent = verdict;
  v.dataset.level = level;

  fill($("gauge-now"), segments(view, scale));
  $("gauge-before-wrap").hidden = !view.before;
  if (view.before) fill($("gauge-before"), segments(view.before, scale));
  fill($("gauge-ticks"), [
    ["prune", budget.pruneAt, "prune at"],
    ["compact", budget.compactAt, "compact at"],
    ["window", budget.window, "window"],
  ].map(([kind, at, label]) => h("span", { class: `tick ${kind}`, style: { left: `${(100 * at) / scale}%` }, title: `${label} ${fmt(at)}` })));

  const stageText = { original: "as loaded", offload: "after offload", prune: "after prune and evict", compact: "after compaction", prepare: "after prepare" }[state.stage];
  $("stage").textContent = stageText;
  fill($("gauge-note"),
    h("span", { class: "key prune" }), ` prune and evict over ${fmt(budget.pruneAt)} · `,
    h("span", { class: "key compact" }), ` compact over ${fmt(budget.compactAt)} · `,
    h("span", { class: "key window" }), ` window ${fmt(budget.window)}. `,
    view.before ? `The grey bar is before the last step: ${fmt(before)} tokens. ` : "",
    view.count.exact ? "Exact count."
      : modelInfo(settings().model).exact ? "Approximate count: images and files are priced by the provider's rule, not tokenized."
      : `Approximate count: this model's tokenizer is not public, so ${modelInfo(settings().model).encoding} stands in.`,
  );
}

/** The gauge's bar: one segment per message, its width its share of `scale`, coloured by kind. */
function segments(snap, scale) {
  const out = [];
  if (snap.overhead > 0) out.push(h("span", { class: "seg k-overhead", style: { width: `${(100 * snap.overhead) / scale}%` }, title: `framing, system prompt, tools: ${fmt(snap.overhead)} tokens` }));
  for (const row of snap.rows) {
    out.push(h("span", { class: `seg k-${row.info.kind}`, style: { width: `${(100 * row.tokens) / scale}%` }, title: `#${row.index} ${row.info.kind}: ${fmt(row.tokens)} tokens` }));
  }
  return out;
}

function renderLegend() {
  fill($("legend"), KINDS.map(([kind, label]) => h("li", {}, h("span", { class: `swatch k-${kind}` }), label)));
}

function renderMessages() {
  const view = state.view;
  const onlyChanged = $("only-changed")?.checked;
  const max = Math.max(1, ...view.rows.map((r) => Math.max(r.tokens, r.beforeTokens ?? 0)));
  const changed = view.rows.filter((r) => r.status !== "same").length;
  const removed = view.before ? view.before.rows.length - view.rows.length : 0;
  fill($("message-count"), `${fmt(view.rows.length)}${view.before ? `: ${fmt(changed)} changed${removed > 0 ? `, ${fmt(removed)} fewer` : ""}` : ""}`);
  const rows = onlyChanged && view.before ? view.rows.filter((r) => r.status !== "same") : view.rows;
  fill($("messages"), rows.map((row) => messageRow(row, max, `m${row.index}`)));
}

const ACTION_NAMES = { offload: "offloaded", softTrim: "trimmed", hardClear: "cleared", evictInput: "input evicted", evictResult: "result shortened" };

/** ["hardClear", "hardClear", "offload"] as "cleared ×2, offloaded". */
function actionsText(actions) {
  const counts = new Map();
  for (const a of actions) counts.set(a, (counts.get(a) ?? 0) + 1);
  return [...counts].map(([a, n]) => `${ACTION_NAMES[a] ?? a}${n > 1 ? ` ×${n}` : ""}`).join(", ");
}

/** One message: a button with its kind, a snippet and its bar, opening to its text. */
function messageRow(row, max, id, { archived = false } = {}) {
  const { info } = row;
  const name = info.kind === "marker" ? "marker" : KINDS.find(([k]) => k === info.kind)[1];
  const label = info.tools.length && (info.kind === "tool-call" || info.kind === "tool-result") ? `${name} · ${info.tools.join(", ")}` : name;
  const changed = row.status === "edited" || row.status === "marker";
  const tokens = changed ? `${fmt(row.beforeTokens)} → ${fmt(row.tokens)}` : fmt(row.tokens);
  const note = row.status === "marker" ? `replaces ${fmt(row.replaced)} messages` : row.actions ? actionsText(row.actions) : row.status === "edited" ? "changed" : null;
  const body = h("div", { class: "msg-body", id: `${id}-body`, hidden: true });
  const button = h("button", { type: "button", class: "msg-head", "aria-expanded": "false", "aria-controls": `${id}-body` },
    h("span", { class: "idx" }, archived ? "" : `#${row.index}`),
    h("span", { class: `chip k-${info.kind}` }, label),
    note ? h("span", { class: "note" }, note) : null,
    h("span", { class: "tok" }, tokens, h("span", { class: "unit" }, " tok")),
    h("span", { class: "snippet" }, info.snippet || "(empty)"),
    h("span", { class: "bar", "aria-hidden": "true" },
      changed ? h("span", { class: "bar-before", style: { width: `${(100 * row.beforeTokens) / max}%` } }) : null,
      h("span", { class: `bar-now k-${info.kind}`, style: { width: `${(100 * row.tokens) / max}%` } })),
  );
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    body.hidden = !open;
    if (open && !body.hasChildNodes()) fill(body, messageBody(row));
  });
  return h("li", { class: `msg s-${row.status}`, dataset: { kind: info.kind, index: String(row.index) } }, button, body);
}

function messageBody(row) {
  if (row.status === "marker" || (row.info.marker && row.status === "same")) return markerBody(row);
  if (row.status === "edited") return compareView(row);
  return partsView(row.info);
}

/** An edited message: the parts that changed, before beside after; the others only counted. */
function compareView(row) {
  const was = row.was.info.parts;
  const now = row.info.parts;
  const pairs = was.length === now.length
    ? was.map((part, i) => [part, now[i]]).filter(([a, b]) => a.text !== b.text || a.label !== b.label)
    : [[{ label: "message", text: was.map((p) => `${p.label}: ${p.text}`).join("\n\n") }, { label: "message", text: now.map((p) => `${p.label}: ${p.text}`).join("\n\n") }]];
  const same = was.length === now.length ? was.length - pairs.length : 0;
  return [
    h("div", { class: "compare" },
      h("h4", {}, `Before: ${fmt(row.beforeTokens)} tokens`),
      h("h4", {}, `After: ${fmt(row.tokens)} tokens`),
      pairs.map(([a, b]) => [partView(a, "before"), partView(b, "after")])),
    same ? h("p", { class: "hint" }, `${fmt(same)} unchanged part(s) of this message not shown.`) : null,
  ];
}

function partsView(info) {
  if (info.parts.length === 0) return h("p", { class: "hint" }, "(no content)");
  return info.parts.map((part) => partView(part));
}

function partView(part, side) {
  return h("div", { class: "part" }, h("div", { class: "part-label" }, side ? h("span", { class: "side" }, `${side} · `) : null, part.label), longText(part.text));
}

/** Text in a <pre>, cut at SHOWN_CHARS with a button for the rest. */
function longText(text) {
  const pre = h("pre", { class: "text" }, text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text);
  if (text.length <= SHOWN_CHARS) return pre;
  const more = h("button", { type: "button", class: "small" }, `Show all ${fmt(text.length)} characters`);
  more.addEventListener("click", () => {
    pre.textContent = text;
    more.remove();
  });
  return [pre, more];
}

/** A compaction marker: its header, its summary, and a button that reads its archive back. */
function markerBody(row) {
  const marker = row.info.marker;
  if (!marker) return partsView(row.info);
  const archived = h("div", { class: "archived" });
  const open = h("button", { type: "button", class: "primary small", dataset: { testid: "open-archive" } }, `Read the ${fmt(marker.archivedMessages)} archived messages`);
  open.addEventListener("click", () => run(async () => {
    await showArchive(marker.key, archived, `a${row.index}`);
    open.remove();
  }, archived));
  return [
    h("dl", { class: "facts" },
      h("dt", {}, "compaction"), h("dd", {}, `#${marker.number}${marker.time ? `, ${marker.time}` : ""}`),
      h("dt", {}, "archived"), h("dd", {}, `${fmt(marker.archivedMessages)} messages`),
      h("dt", {}, "tokens"), h("dd", {}, `${fmt(marker.tokensBefore)} → ${fmt(marker.tokensAfter)}`),
      h("dt", {}, "archive key"), h("dd", {}, h("code", {}, JSON.stringify(marker.key)))),
    h("div", { class: "part" }, h("div", { class: "part-label" }, "summary"), longText(marker.summary)),
    open,
    archived,
  ];
}

/** Reads an archive back with readArchive (following earlier compactions) into `container`. */
async function showArchive(key, container, idPrefix) {
  status(container, "reading the archive…");
  const { messages, archives, format } = await readArchive(key, { store });
  let tokens = [];
  try {
    tokens = countMessages(messages, { model: settings().model, format }).perMessage;
  } catch {
    // a span of messages need not be a conversation that counts on its own; rows show 0
  }
  const rows = messages.map((message, index) => ({ index, message, tokens: tokens[index] ?? 0, info: describe(message), status: "same" }));
  const max = Math.max(1, ...rows.map((r) => r.tokens));
  fill(container,
    h("p", { class: "hint" }, `${fmt(messages.length)} messages from ${archives} archive(s), read back with readArchive from the IndexedDB key ${JSON.stringify(key)}:`),
    h("ol", { class: "messages nested", dataset: { testid: "archived-messages" } }, rows.map((r) => messageRow(r, max, `${idPrefix}-${r.index}`, { archived: true }))));
}

// ---------------------------------------------------------------- the plan

const DECISIONS = {
  under: "Nothing new to do: the conversation is under the prune threshold.",
  held: "Hold: a prune decision was made a few turns ago and the budget still holds, so the cached prefix stays.",
  pruned: "Offload what is huge, then prune old tool results and evict file contents.",
  cleared: "Offload what is huge, then clear every tool result older than the kept turns.",
  compacted: "Offload what is huge, then compact the older turns into a summary and prune what is kept.",
  off: "Management is off",
};

async function plan() {
  const out = $("plan");
  const keeper = makeKeeper({ summarize: undefined });
  let report;
  try {
    ({ report } = await keeper.plan(state.source.conversation, { sessionId: state.source.sessionId }));
  } catch (err) {
    status(out, `${err.name}: ${err.message}`, true);
    return;
  } finally {
    keeper.free();
  }
  const c = report.compaction;
  const tiers = [
    ["Offload", report.offloaded.length ? `${report.offloaded.length} result(s)` : "–", report.saved.offload],
    ["Prune", report.pruned.length ? `${report.pruned.length} result(s)` : "–", report.saved.prune],
    ["Evict", report.evicted.length ? `${report.evicted.length} file write(s)` : "–", report.saved.evict],
    ["Compact", c?.span ? `messages ${c.span.from}–${c.span.to - 1} → one summary` : c ? c.outcome : "–", report.saved.compact],
  ];
  const edits = [...report.offloaded, ...report.pruned, ...report.evicted];
  const details = h("details", {}, h("summary", {}, `All ${fmt(edits.length)} planned edits`));
  details.addEventListener("toggle", () => {
    if (!details.open || details.querySelector("table")) return;
    details.append(h("div", { class: "scroll" }, h("table", { class: "edits" },
      h("thead", {}, h("tr", {}, ["message", "edit", "tool", "tokens before", "after"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, edits.sort((a, b) => a.messageIndex - b.messageIndex).map((e) => h("tr", {},
        h("td", {}, `#${e.messageIndex}`), h("td", {}, ACTION_NAMES[e.action] ?? e.action), h("td", {}, e.toolName ?? ""),
        h("td", { class: "num" }, fmt(e.tokensBefore)), h("td", { class: "num" }, fmt(e.tokensAfter))))))));
  });
  const budget = report.budget;
  fill(out,
    h("p", { class: "decision", dataset: { decision: report.decision } }, h("strong", {}, report.decision), " · ", report.decision === "off" ? `${DECISIONS.off}: ${report.reason}` : DECISIONS[report.decision]),
    h("div", { class: "scroll" }, h("table", { class: "tiers" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "tier"), h("th", { scope: "col" }, "what"), h("th", { scope: "col", class: "num" }, "tokens saved"))),
      h("tbody", {}, tiers.map(([tier, what, saved]) => h("tr", {}, h("th", { scope: "row" }, tier), h("td", {}, what), h("td", { class: "num" }, saved ? fmt(saved) : "–")))),
      h("tfoot", {}, h("tr", {}, h("th", { scope: "row" }, "Total"), h("td", { dataset: { testid: "plan-total" } }, `${fmt(report.tokensBefore)} → ${fmt(report.tokensAfter)} tokens`),
        h("td", { class: "num" }, fmt(report.tokensBefore - report.tokensAfter)))))),
    h("p", { class: report.fits ? "hint" : "hint warn" }, report.fits
      ? budget ? `Fits: ${fmt(report.tokensAfter)} is within the budget of ${fmt(budget.compactAt)}.` : ""
      : `Does not fit: ${report.overBudget ?? "over the budget"}`),
    h("p", { class: "hint" }, "Why this total differs from the steps above: prepare compacts first and then prunes only what the compaction kept, and stops at the first tier that brings the count under its threshold; the steps apply each tier in full, in order."),
    edits.length ? details : null,
  );
}

// ---------------------------------------------------------------- applying

/** Whether prepare would run a step at the view's count, as a sentence. */
function dueText(step) {
  const budget = currentBudget();
  const tokens = state.view.count.total;
  if (step === "offload") return "prepare always runs this.";
  const [at, name] = step === "prune" ? [budget.pruneAt, "prune"] : [budget.compactAt, "compaction"];
  return tokens > at
    ? `due: ${fmt(tokens)} is over the ${name} threshold (${fmt(at)}).`
    : `not due: ${fmt(tokens)} is under the ${name} threshold (${fmt(at)}), so prepare would stop before it; run it anyway to see it.`;
}

function nextStep() {
  if (state.stage === "prepare") return null;
  const at = state.stage === "original" ? 0 : STEPS.indexOf(state.stage) + 1;
  return STEPS[at] ?? null;
}

function updateButtons() {
  const next = nextStep();
  for (const li of document.querySelectorAll("#steps li")) {
    const step = li.dataset.step;
    const button = li.querySelector("button");
    button.disabled = state.busy || !state.view || step !== next;
    li.classList.toggle("next", step === next);
    if (step === next && state.view) li.querySelector(".result").textContent = `Next: ${dueText(step)}`;
  }
  for (const id of ["run-prepare", "read-paste", "reset", "clear-store"]) $(id).disabled = state.busy || (id === "reset" && state.stage === "original") || (id === "run-prepare" && !state.view);
  for (const b of document.querySelectorAll("[data-sample]")) b.disabled = state.busy;
}

async function step(name) {
  const { sessionId } = state.source;
  const { model } = settings();
  const before = state.view;
  const li = document.querySelector(`#steps li[data-step=${name}]`);
  const result = li.querySelector(".result");
  status(result, "running…");
  let conversation, edits, text;
  if (name === "offload") {
    if (state.stage === "original") await forgetDecisions();
    // The keeper's limit for this window, so the step offloads what prepare would.
    const done = await offloadMessages(before.conversation, { store, sessionId, model, limitTokens: currentBudget().offloadAt });
    ({ messages: conversation } = done);
    edits = done.report.edits;
    text = `${edits.length} result(s) offloaded to IndexedDB, ${fmt(done.report.tokensSaved)} tokens saved.${failuresText(done.report.failures)}`;
  } else if (name === "prune") {
    const pruned = pruneMessages(before.conversation, { model });
    const evicted = evictToolInputs(pruned.messages, { model });
    conversation = evicted.messages;
    edits = [...pruned.report.edits, ...evicted.report.edits];
    const trims = pruned.report.edits.filter((e) => e.action === "softTrim").length;
    const clears = pruned.report.edits.length - trims;
    text = `${clears} old result(s) cleared to a one-line note and ${trims} cut to their head and tail (${fmt(pruned.report.tokensSaved)} tokens saved); ${evicted.report.edits.length} file write(s) evicted to a pointer (${fmt(evicted.report.tokensSaved)} tokens).`;
  } else {
    const budget = currentBudget();
    // NOTE: under the threshold the keeper's figure would keep everything; compact's own
    // default (the last 5 assistant turns) shows what a compaction does.
    const due = before.count.total > budget.compactAt;
    const done = await compact(before.conversation, {
      store, sessionId, model, contextWindow: budget.window,
      ...(due ? { keepRecentTokens: keepRecentTokens(before, budget) } : {}),
      summarize: summarizer(),
      onProgress: ({ phase }) => status(result, `${phase}…`),
    });
    conversation = done.messages;
    edits = [];
    const r = done.report;
    text = r.outcome === "compacted"
      ? `${fmt(r.span.to - r.span.from)} messages (${fmt(r.replacedTokens)} tokens) archived and replaced by a ${r.heuristic ? "heuristic " : ""}summary of ${fmt(r.summaryTokens)} tokens; ${r.pinned.length} exact details pinned; ${due ? "the recent turns that fit the keeper's compaction target" : "the last 5 assistant turns"} kept as they were.`
      : `${r.outcome}: ${r.reason ?? ""}${r.phase ? ` (${r.phase})` : ""}`;
    if (r.outcome === "failed") throw new Error(`compaction failed in its ${r.phase} phase: ${r.reason}`);
  }
  state.view = snapshot(conversation, before, edits);
  state.stage = name;
  li.classList.add("done");
  status(result, `Done: ${text}`);
  status($("apply-status"), `After ${{ offload: "offload", prune: "prune and evict", compact: "compaction" }[name]}: ${fmt(before.count.total)} → ${fmt(state.view.count.total)} tokens.`);
  renderAll();
  if (name === "offload" || name === "compact") await refreshStored();
}

/** What compaction keeps verbatim, at most: the compaction target less the head and the summary (the keeper also leaves room for three turns of the size the newest had). */
function keepRecentTokens(snap, budget) {
  const firstUser = snap.rows.findIndex((r) => r.info.role === "user" && r.info.kind !== "tool-result");
  const head = snap.overhead + snap.rows.slice(0, firstUser + 1).reduce((n, r) => n + r.tokens, 0);
  return Math.max(1, budget.compactTarget - head - 2_000);
}

function failuresText(failures) {
  return failures.length ? ` ${failures.length} could not be stored and stayed: ${failures[0].reason}.` : "";
}

async function prepareAll() {
  await forgetDecisions();
  state.view = state.original;
  state.stage = "original";
  renderAll();
  const statusEl = $("apply-status");
  const keeper = makeKeeper({ onProgress: ({ phase }) => status(statusEl, `prepare: ${phase}…`) });
  status(statusEl, "prepare: running…");
  let prepared;
  try {
    prepared = await keeper.prepare(state.source.conversation, { sessionId: state.source.sessionId });
  } finally {
    keeper.free();
  }
  const { messages, report } = prepared;
  const c = report.compaction;
  // NOTE: prune and evict edits index the output; offloads index the input, which a compaction renumbers.
  state.view = snapshot(messages, state.original, [...(c?.span ? [] : report.offloaded), ...report.pruned, ...report.evicted]);
  state.stage = "prepare";
  for (const li of document.querySelectorAll("#steps li")) li.querySelector(".result").textContent = "";
  const saved = Object.entries(report.saved).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${fmt(n)}`).join(", ");
  status(statusEl, `prepare (${report.decision}): ${fmt(report.tokensBefore)} → ${fmt(report.tokensAfter)} tokens${saved ? `; saved by ${saved}` : ""}.${c ? ` Compaction: ${c.outcome}${c.reason ? `, ${c.reason}` : ""}.` : ""}${report.fits ? " Fits the budget." : ` Does not fit: ${report.overBudget}`}${failuresText(report.failures)}`, !report.fits);
  renderAll();
  await refreshStored();
}

async function backToOriginal() {
  await forgetDecisions();
  await restart();
}

// ---------------------------------------------------------------- stored offloads

async function refreshStored() {
  const out = $("stored");
  const entries = await store.loadRange(["context-keeper"]);
  const sessions = new Map();
  for (const { key } of entries) {
    const [, sessionId, kind] = key;
    if (!sessions.has(sessionId)) sessions.set(sessionId, { offloads: 0, archives: [] });
    const s = sessions.get(sessionId);
    if (kind === "offload") s.offloads++;
    if (kind === "archive" && !key[3]?.endsWith(".md")) s.archives.push(key);
  }
  const blocks = [];
  for (const [sessionId, counts] of sessions) {
    const items = [];
    if (counts.offloads > 0) {
      const { offloads, damaged } = await listOffloaded({ store, sessionId });
      for (const header of offloads) items.push(await offloadItem(sessionId, header));
      if (damaged.length) items.push(h("li", { class: "warn" }, `${damaged.length} damaged record(s): ${damaged.join(", ")}`));
    }
    for (const key of counts.archives) items.push(archiveItem(key));
    blocks.push(h("section", { class: "session", dataset: { session: sessionId } },
      h("h3", {}, `Session ${sessionId}`, h("span", { class: "count" }, `${counts.offloads} offloaded, ${counts.archives.length} compaction archive(s)`)),
      items.length ? h("ul", { class: "offloads" }, items) : null));
  }
  if (blocks.length === 0) fill(out, h("p", { class: "hint", dataset: { testid: "stored-empty" } }, "Nothing stored yet: offload (step 1) or run prepare."));
  else fill(out, blocks);
}

/** A compaction archive (its JSON; a Markdown transcript lies beside it), opened with readArchive. */
function archiveItem(key) {
  const body = h("div", { class: "reader", hidden: true });
  const open = h("button", { type: "button", class: "small", "aria-expanded": "false" }, "Open");
  open.addEventListener("click", () => run(async () => {
    const opening = body.hidden;
    body.hidden = !opening;
    open.setAttribute("aria-expanded", String(opening));
    open.textContent = opening ? "Close" : "Open";
    if (opening && !body.hasChildNodes()) await showArchive(key, body, `s-${key[3]}`);
  }, body));
  return h("li", { class: "offload archive", dataset: { testid: "archive", key: key[3] } },
    h("div", { class: "offload-head" }, h("strong", {}, "compaction archive"), h("code", { class: "id" }, key[3]), open),
    h("p", { class: "sizes" }, "The messages a compaction replaced, as they were (a Markdown transcript is stored beside them)."),
    body);
}

/** One offloaded result: its size, its first lines, and a reader that pages through it. */
async function offloadItem(sessionId, header) {
  const preview = await readOffloaded(header.id, { store, sessionId, limit: 10, lineChars: 200 });
  const reader = h("div", { class: "reader", hidden: true });
  const open = h("button", { type: "button", class: "small", "aria-expanded": "false" }, "Open");
  let offset = 1;
  const page = async () => {
    const read = await readOffloaded(header.id, { store, sessionId, offset, limit: 200, lineChars: 2_000 });
    const nav = [];
    if (offset > 1) nav.push(h("button", { type: "button", class: "small", onclick: () => { offset = Math.max(1, offset - 200); run(page, reader); } }, "Previous 200 lines"));
    if (read.nextOffset !== null) nav.push(h("button", { type: "button", class: "small", onclick: () => { offset = read.nextOffset; run(page, reader); } }, "Next 200 lines"));
    fill(reader,
      h("p", { class: "hint" }, `Lines ${fmt(read.offset)}–${fmt(read.offset + read.lines - 1)} of ${fmt(read.totalLines)}, read with readOffloaded:`),
      h("pre", { class: "text", dataset: { testid: "offload-text" } }, read.text),
      h("div", { class: "row" }, nav));
  };
  const first = h("pre", { class: "text preview" }, preview.text);
  open.addEventListener("click", () => run(async () => {
    const opening = reader.hidden;
    reader.hidden = !opening;
    first.hidden = opening;
    open.setAttribute("aria-expanded", String(opening));
    open.textContent = opening ? "Close" : "Open";
    if (opening && !reader.hasChildNodes()) await page();
  }, reader));
  return h("li", { class: "offload", dataset: { testid: "offload", id: header.id } },
    h("div", { class: "offload-head" },
      h("strong", {}, header.toolName ?? "tool"),
      h("code", { class: "id" }, header.id),
      open),
    h("p", { class: "sizes" }, `${fmt(header.tokens)} tokens${header.estimated ? " (estimated)" : ""} · ${fmt(header.lines)} lines · ${fmt(header.bytes)} bytes`),
    first,
    reader);
}

// ---------------------------------------------------------------- wiring

async function loadSample(id) {
  const sample = SAMPLES[id];
  status($("source-status"), `loading ${sample.label}…`);
  await load(await fetchSample(id), { id, label: sample.label, sessionId: `demo-${id}` });
}

async function loadText(text, label) {
  status($("source-status"), `reading ${label}…`);
  const conversation = parseConversation(text);
  await load(conversation, { id: null, label, sessionId: await sessionIdFor(text) });
}

async function loadFile(file) {
  const gz = file.name.endsWith(".gz") || file.type === "application/gzip";
  await loadText(await textOf(file.stream(), gz), file.name);
}

function wire() {
  for (const button of document.querySelectorAll("[data-sample]")) {
    button.addEventListener("click", () => run(() => loadSample(button.dataset.sample), $("source-status")));
  }
  $("read-paste").addEventListener("click", () => run(() => loadText($("paste").value, "the pasted conversation"), $("source-status")));
  $("file").addEventListener("change", () => {
    const file = $("file").files[0];
    if (file) run(() => loadFile(file), $("source-status"));
    $("file").value = "";
  });
  const paste = $("paste");
  paste.addEventListener("dragover", (e) => {
    e.preventDefault();
    paste.classList.add("drop");
  });
  paste.addEventListener("dragleave", () => paste.classList.remove("drop"));
  paste.addEventListener("drop", (e) => {
    e.preventDefault();
    paste.classList.remove("drop");
    const file = e.dataTransfer.files[0];
    if (file) run(() => loadFile(file), $("source-status"));
    else {
      const text = e.dataTransfer.getData("text/plain");
      if (text) run(() => loadText(text, "the dropped text"), $("source-status"));
    }
  });

  let timer;
  const settingsChanged = () => {
    clearTimeout(timer);
    timer = setTimeout(() => run(async () => {
      if (state.source) await backToOriginal();
      else describeModel();
    }, $("source-status")), 250);
  };
  $("model").addEventListener("change", settingsChanged);
  $("window").addEventListener("input", settingsChanged);
  for (const radio of document.querySelectorAll("input[name=summarizer]")) {
    radio.addEventListener("change", () => {
      $("endpoint").hidden = settings().summarizer !== "endpoint";
    });
  }

  for (const button of document.querySelectorAll("[data-run]")) {
    button.addEventListener("click", () => run(() => step(button.dataset.run), $("apply-status")));
  }
  $("run-prepare").addEventListener("click", () => run(prepareAll, $("apply-status")));
  $("reset").addEventListener("click", () => run(backToOriginal, $("apply-status")));
  $("clear-store").addEventListener("click", () => run(async () => {
    await store.removeRange([]);
    await refreshStored();
    if (state.source) await backToOriginal();
  }, $("apply-status")));

  // a filter for the message list, once a step has changed something
  const filter = h("label", { class: "choice inline" }, h("input", { type: "checkbox", id: "only-changed" }), " Only the messages the last step changed");
  $("messages").before(filter);
  $("only-changed").addEventListener("change", () => renderMessages());
}

async function main() {
  fillModels();
  renderLegend();
  wire();
  describeModel();
  updateButtons();
  await run(async () => {
    await refreshStored();
    const wanted = new URLSearchParams(location.search).get("sample") ?? "agent-openai";
    if (wanted in SAMPLES) await loadSample(wanted);
    else status($("source-status"), "Pick a sample, or paste or drop a conversation.");
  }, $("source-status"));
  document.body.dataset.ready = "true";
}

main();
