// Compaction on recorded agent runs (bench/agent/, mini-swe-agent: real SWE-bench sessions
// of up to 192 messages): a host loop appends the run's messages one at a time, keeps what
// `compact` returns (AI SDK 7 style), and compacts whenever the count passes 85% of a window
// small enough for these runs to need it. The summarizer is the built-in heuristic one (no
// LLM here), so the figures show the mechanics: how often compaction runs, the token curve,
// what each compaction replaced, and what fact pinning added to the summaries.
//
//   node bench/compact.mjs                # held-out runs, a 16,000-token window
//   node bench/compact.mjs --window=32000 --split=all --curve
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compact, countMessages, validateMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { median } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => { const [k, v] = a.replace(/^--/, "").split("="); return [k, v ?? true]; }));
const window = Number(args.window ?? 16_000);
const split = args.split ?? "held-out";
const model = "gpt-4o";

const runs = JSON.parse(gunzipSync(readFileSync(join(here, "agent", "mini-swe-agent.json.gz"))).toString("utf8"))
  .conversations.filter((c) => split === "all" || c.split === split);

const rows = [];
const pinnedKinds = {};
let invalid = 0;
for (const run of runs) {
  const store = new MemoryStore();
  let sent = [];
  const curve = [];
  let compactions = 0;
  const replaced = [];
  const pinned = [];
  const times = [];
  let peak = 0;
  for (const message of run.messages) {
    sent = sent.concat([message]);
    const tokens = countMessages(sent, { model }).total;
    peak = Math.max(peak, tokens);
    if (tokens > 0.85 * window && message.role === "user") {
      const started = performance.now();
      const { messages, report } = await compact(sent, { store, sessionId: run.run, model, keepRecentTurns: 3, now: "2026-11-25T00:00:00Z" });
      times.push(performance.now() - started);
      if (report.outcome === "compacted") {
        compactions++;
        replaced.push(report.replacedTokens - report.summaryTokens);
        pinned.push(report.pinned.length);
        for (const f of report.pinned) pinnedKinds[f.kind] = (pinnedKinds[f.kind] ?? 0) + 1;
        sent = messages;
        if (validateMessages(sent).length) invalid++;
      }
    }
    curve.push(countMessages(sent, { model }).total);
  }
  const full = countMessages(run.messages, { model }).total;
  rows.push({ run: run.run, messages: run.messages.length, full, final: curve[curve.length - 1], max: Math.max(...curve), compactions, saved: median(replaced) ?? 0, pinned: pinned.reduce((a, b) => a + b, 0), ms: median(times) ?? 0 });
  if (args.curve) console.error(`${run.run}: ${curve.join(" ")}`);
}

console.log(`## compact on ${rows.length} ${split} mini-swe-agent runs, window ${window.toLocaleString("en")} tokens (compact at 85%, keep 3 turns, heuristic summary, ${model})\n`);
console.log("| run | messages | tokens uncompacted | tokens at the end | highest | compactions | median tokens freed each | facts pinned | median ms per compact |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.run} | ${r.messages} | ${r.full.toLocaleString("en")} | ${r.final.toLocaleString("en")} | ${r.max.toLocaleString("en")} | ${r.compactions} | ${Math.round(r.saved).toLocaleString("en")} | ${r.pinned} | ${r.ms.toFixed(1)} |`);
}
console.log(`\nfacts pinned by kind: ${JSON.stringify(pinnedKinds)}; outputs failing validateMessages: ${invalid}`);
