// The estimator on recorded coding-agent runs (bench/agent/): error per message and per
// conversation, by message kind, against exact o200k_base and cl100k_base counts (npm tiktoken),
// next to tokenx and the plain chars/4 rule.
//
//   node bench/agent.mjs                       # held-out runs, both encodings
//   node bench/agent.mjs --split=fit           # the runs the estimator was fitted on (or =all)
//   node bench/agent.mjs --pkg=DIR             # the estimator of another build of the package
//   node bench/agent.mjs --dump=DIR            # also write DIR/agent-{fit,held-out}.json for
//                                              # examples/estimate_fit.rs
//   node bench/agent.mjs --worst=20            # the messages the estimator misses most
//   node bench/agent.mjs --convs               # each conversation's error (on stderr)
//
// A message is counted as the strings a request carries for it: its text, and for each tool
// call its name and its arguments (JSON), each string counted on its own and summed; role and
// framing tokens are left out (they are the same for every estimator). A conversation's count is
// the sum of its messages'. --dump writes every string of the loaded runs, so use it with
// --split=all.
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { mean, median, percentile } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, "").split("=");
    return [k, v ?? true];
  }),
);
const split = args.split ?? "held-out";
const encodings = (args.encodings ?? "o200k_base,cl100k_base").split(",");

/** Short tool output: under this many bytes of UTF-8. */
const SHORT = 500;

/** The kind of each message of a conversation, by harness conventions. */
function kindOf(msg, index, firstUser) {
  if (msg.role === "system") return "system prompt";
  if (msg.role === "assistant") return msg.tool_calls?.length ? "assistant + tool call" : "assistant text";
  // mini-swe-agent returns tool output as user messages; SWE-agent marks them as observations.
  const output = msg.role === "tool" || (msg.role === "user" && (index !== firstUser || msg.observation));
  if (output) {
    const bytes = Buffer.byteLength(msg.content ?? "");
    return bytes < SHORT ? "tool output < 500 B" : "tool output >= 500 B";
  }
  return "user (task)";
}
const KINDS = ["system prompt", "user (task)", "assistant text", "assistant + tool call", "tool output < 500 B", "tool output >= 500 B"];

function load() {
  const dir = join(here, "agent");
  const out = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".json.gz")).sort()) {
    const data = JSON.parse(gunzipSync(readFileSync(join(dir, file))).toString("utf8"));
    for (const conv of data.conversations) {
      if (split !== "all" && conv.split !== split) continue;
      const firstUser = conv.messages.findIndex((m) => m.role === "user");
      const messages = conv.messages.map((m, i) => ({
        kind: kindOf(m, i, firstUser),
        pieces: [m.content ?? "", ...(m.tool_calls ?? []).flatMap((c) => [c.name, c.arguments])].filter((s) => s.length > 0),
      }));
      out.push({ harness: data.harness, run: conv.run, split: conv.split, messages: messages.filter((m) => m.pieces.length) });
    }
  }
  return out;
}

async function estimators() {
  const pkg = args.pkg ? pathToFileURL(resolve(args.pkg, "node", "context_keeper.js")).href : "context-keeper";
  const ck = await import(pkg);
  const { estimateTokenCount } = await import("tokenx");
  return {
    "context-keeper": (s) => ck.estimateTokens(s),
    tokenx: (s) => estimateTokenCount(s),
    "chars/4": (s) => Math.max(1, Math.round(s.length / 4)),
  };
}

const pct = (x) => (x == null ? "–" : `${(100 * x).toFixed(1)}%`);
const signed = (x) => (x == null ? "–" : `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)}%`);

async function main() {
  const convs = load();
  const est = await estimators();
  const names = Object.keys(est);
  const { get_encoding } = await import("tiktoken");
  const nMessages = convs.reduce((n, c) => n + c.messages.length, 0);
  const bytes = convs.reduce((n, c) => n + c.messages.reduce((m, x) => m + x.pieces.reduce((k, p) => k + Buffer.byteLength(p), 0), 0), 0);
  console.log(`## Agent transcripts, ${split} runs: ${convs.length} conversations, ${nMessages} messages, ${(bytes / 1024).toFixed(0)} KiB`);
  console.log(`\nHarnesses: ${[...new Set(convs.map((c) => c.harness))].map((h) => `${h} (${convs.filter((c) => c.harness === h).length} runs)`).join(", ")}.`);
  console.log("Error = (estimate - exact) / exact; mean and p90 of its absolute value, signed median (+ = over-counts).");
  // Per-piece estimates do not depend on the encoding.
  const estimates = convs.map((c) => c.messages.map((m) => Object.fromEntries(names.map((n) => [n, m.pieces.reduce((s, p) => s + est[n](p), 0)]))));
  for (const encoding of encodings) {
    const enc = get_encoding(encoding);
    const exact = convs.map((c) => c.messages.map((m) => m.pieces.reduce((s, p) => s + enc.encode(p, [], []).length, 0)));
    enc.free();
    const rows = new Map(KINDS.map((k) => [k, []]).concat([["all messages", []]]));
    const conv = [];
    const worst = [];
    convs.forEach((c, ci) => {
      const totals = Object.fromEntries(names.map((n) => [n, 0]));
      let total = 0;
      c.messages.forEach((m, mi) => {
        const x = exact[ci][mi];
        total += x;
        const errs = Object.fromEntries(names.map((n) => [n, (estimates[ci][mi][n] - x) / x]));
        for (const n of names) totals[n] += estimates[ci][mi][n];
        rows.get(m.kind).push(errs);
        rows.get("all messages").push(errs);
        worst.push({ err: errs["context-keeper"], x, e: estimates[ci][mi]["context-keeper"], kind: m.kind, text: m.pieces.join(" | ") });
      });
      conv.push(Object.fromEntries(names.map((n) => [n, (totals[n] - total) / total])));
      if (args.convs) console.error(`${encoding} ${c.harness} ${c.run}: ${total} tokens, ${names.map((n) => `${n} ${signed((totals[n] - total) / total)}`).join(", ")}`);
    });
    console.log(`\n### ${encoding}, per message, by kind\n`);
    const head = names.map((n) => `${n} mean | p90 | signed median`).join(" | ");
    console.log(`| kind | messages | ${head} |`);
    console.log(`| --- | ---: | ${names.map(() => "---: | ---: | ---:").join(" | ")} |`);
    for (const [kind, errs] of rows) {
      if (!errs.length) continue;
      const cells = names.map((n) => {
        const e = errs.map((r) => r[n]);
        const abs = e.map(Math.abs);
        return `${pct(mean(abs))} | ${pct(percentile(abs, 90))} | ${signed(median(e))}`;
      });
      console.log(`| ${kind} | ${errs.length} | ${cells.join(" | ")} |`);
    }
    console.log(`\n### ${encoding}, per conversation (${conv.length})\n`);
    console.log("| estimator | mean abs error | max abs error | signed mean |");
    console.log("| --- | ---: | ---: | ---: |");
    for (const n of names) {
      const e = conv.map((r) => r[n]);
      console.log(`| ${n} | ${pct(mean(e.map(Math.abs)))} | ${pct(Math.max(...e.map(Math.abs)))} | ${signed(mean(e))} |`);
    }
    if (args.worst) {
      worst.sort((a, b) => Math.abs(b.err) - Math.abs(a.err) || b.x - a.x);
      console.log(`\n### ${encoding}: worst messages of context-keeper\n`);
      for (const w of worst.slice(0, Number(args.worst))) {
        console.log(`- ${signed(w.err)} (${w.e} vs ${w.x}, ${w.kind}): ${JSON.stringify(w.text.slice(0, 160))}`);
      }
    }
  }
  if (args.dump) {
    // Every piece (the unit the estimator sees), one file per split, for examples/estimate_fit.rs.
    mkdirSync(args.dump, { recursive: true });
    for (const s of ["fit", "held-out"]) {
      const runs = convs.filter((c) => c.split === s);
      const messages = runs.flatMap((c) => c.messages.flatMap((m) => m.pieces));
      // How many of those pieces each run has, in order: the fit sums them per conversation.
      const pieces = runs.map((c) => c.messages.reduce((n, m) => n + m.pieces.length, 0));
      if (messages.length) writeFileSync(join(args.dump, `agent-${s}.json`), JSON.stringify({ messages, runs: pieces }));
    }
  }
}

await main();
