// Compaction on the 300-turn agent session (tests/data/sessions: six chained mini-swe-agent runs
// with tool use, thinking and images) in each format: the replay of
// tests/js/session-compact.test.mjs without its checks. A host keeps what `compact` returns
// and appends the next turn (AI SDK 7), and compacts whenever what the model sees passes the
// threshold; the summarizer is the test's scripted one (the opening lines of the transcript and
// every other file path it names: no LLM), or with --heuristic the built-in heuristic summary.
// Prints, per format, the token curve (what the model sees, every 10 turns, and before and
// after each compaction) and what fact pinning added; writes every figure to
// bench/results/session-<time>.json.
//
//   node bench/session.mjs
//   node bench/session.mjs --threshold=40000 --heuristic --every=5
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compact, countMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { loadSession } from "../tests/js/fixtures.mjs";
import { FORMATS, NOW, THRESHOLD, WINDOW, advance, scriptedSummarizer, turnsOf, withList } from "../tests/js/session-replay.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => { const [k, v] = a.replace(/^--/, "").split("="); return [k, v ?? true]; }));
const threshold = Number(args.threshold ?? THRESHOLD);
const every = Number(args.every ?? 10);
const heuristic = args.heuristic === true;
const fmt = (n) => n.toLocaleString("en");

const results = {};
for (const [format, { model, keepRecentTurns }] of Object.entries(FORMATS)) {
  const session = loadSession(format);
  const turns = turnsOf(format, session);
  const store = new MemoryStore();
  const { summarize } = scriptedSummarizer();
  let sent = withList(session, []);
  let full = withList(session, []);
  const curve = [];
  const compactions = [];
  const stuck = [];
  const started = performance.now();
  for (const [k, turn] of turns.entries()) {
    sent = advance(sent, turn);
    full = advance(full, turn);
    const before = countMessages(sent, { model }).total;
    if (before > threshold) {
      const t0 = performance.now();
      const { messages, report } = await compact(sent, {
        store, sessionId: format, model, contextWindow: WINDOW, keepRecentTurns, now: NOW,
        ...(heuristic ? {} : { summarize }),
      });
      const ms = performance.now() - t0;
      if (report.outcome === "compacted") {
        sent = messages;
        compactions.push({
          turn: k, before, after: countMessages(sent, { model }).total, ms: Math.round(ms * 10) / 10,
          // a UIMessage cut at a step counts as archived, in part (`toPart` of its parts)
          archived: report.span.to - report.span.from + (report.span.toPart === undefined ? 0 : 1), toPart: report.span.toPart, replacedTokens: report.replacedTokens,
          summaryTokens: report.summaryTokens, pinned: report.pinned,
        });
      } else {
        stuck.push({ turn: k, tokens: before, outcome: report.outcome, reason: report.reason });
      }
    }
    curve.push(countMessages(sent, { model }).total);
  }
  results[format] = {
    model, keepRecentTurns, turns: turns.length,
    uncompacted: countMessages(full, { model }).total,
    highest: Math.max(...curve), final: curve.at(-1), curve, compactions, stuck,
    ms: Math.round(performance.now() - started),
  };
  console.error(`${format}: ${compactions.length} compactions in ${results[format].ms} ms`);
}

const formats = Object.keys(results);
console.log(`## compact on the 300-turn agent session: window ${fmt(WINDOW)}, compact above ${fmt(threshold)} tokens, ${heuristic ? "heuristic summary" : "scripted summarizer"}\n`);
console.log(`| | ${formats.join(" | ")} |`);
console.log(`|---|${formats.map(() => "---:").join("|")}|`);
const row = (label, f) => console.log(`| ${label} | ${formats.map((x) => f(results[x])).join(" | ")} |`);
row("counted with", (r) => r.model);
row("turns", (r) => r.turns);
row("tokens uncompacted", (r) => fmt(r.uncompacted));
row("highest the model saw", (r) => fmt(r.highest));
row("at the end", (r) => fmt(r.final));
row("compactions", (r) => r.compactions.length);
row("facts pinned (all compactions)", (r) => r.compactions.reduce((n, c) => n + c.pinned.length, 0));
row("over the threshold, nothing to cut", (r) => r.stuck.length);

console.log(`\n### Token curve: what the model sees after turn N (every ${every} turns; * a compaction in the ${every} turns before)\n`);
console.log(`| turn | ${formats.join(" | ")} |`);
console.log(`|---:|${formats.map(() => "---:").join("|")}|`);
const last = Math.max(...formats.map((f) => results[f].turns)) - 1;
for (let k = 0; k <= last; k += every) {
  const at = k === 0 ? 0 : Math.min(k, last);
  console.log(`| ${at + 1} | ${formats.map((f) => {
    const r = results[f];
    const mark = r.compactions.some((c) => c.turn > at - every && c.turn <= at) ? "*" : "";
    return `${fmt(r.curve[at])}${mark}`;
  }).join(" | ")} |`);
}

console.log("\n### Each compaction: turn, tokens before -> after, messages archived, summary tokens, facts pinned (examples)\n");
for (const f of formats) {
  console.log(`**${f}**\n`);
  for (const c of results[f].compactions) {
    const examples = c.pinned.slice(0, 5).map((p) => `\`${p.text.length > 50 ? `${p.text.slice(0, 47)}...` : p.text}\``).join(", ");
    const kinds = {};
    for (const p of c.pinned) kinds[p.kind] = (kinds[p.kind] ?? 0) + 1;
    const cut = c.toPart === undefined ? "" : ` (the last one cut at a step, before its part ${c.toPart})`;
    console.log(`- turn ${c.turn + 1}: ${fmt(c.before)} -> ${fmt(c.after)}, ${c.archived} messages${cut}, summary ${fmt(c.summaryTokens)} tokens, ${c.pinned.length} pinned ${JSON.stringify(kinds)}: ${examples}`);
  }
  for (const s of results[f].stuck.slice(0, 1)) {
    console.log(`- from turn ${s.turn + 1} (${fmt(s.tokens)} tokens), ${results[f].stuck.length} times: ${s.reason}`);
  }
  console.log("");
}

const dir = join(here, "results");
mkdirSync(dir, { recursive: true });
const file = join(dir, `session-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, `${JSON.stringify({ window: WINDOW, threshold, summarizer: heuristic ? "heuristic" : "scripted", node: process.version, results }, null, 1)}\n`);
console.error(`wrote ${file}`);
