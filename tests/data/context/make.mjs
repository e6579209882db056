#!/usr/bin/env node
// Writes the inputs of the context layer's golden fixtures (`*.input.json`) from the bundled
// 300-turn agent session (tests/data/sessions), the same turns in each format: each case a
// run of whole turns (an assistant message with the results that answer it), after the system
// prompt and the first request, and the window that makes the keeper use the tier the case is
// named for (checked with the built package: the case is not written when it does not). The
// expected outputs (`*.expected.json`) are what the Rust core makes of each input:
// `UPDATE_FIXTURES=1 cargo test --test context_fixtures` writes them; tests/context_fixtures.rs
// and tests/js/context-fixtures.test.mjs check the core and the package against them.
//
//   node tests/data/context/make.mjs        # needs the package built (npm run build)
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadSession } from "../../js/fixtures.mjs";

const require = createRequire(import.meta.url);
const ck = require("context-keeper");
const { MemoryStore } = await import("context-keeper/stores");

const SESSION_ID = "fixture";
const NOW = "2026-11-25T10:00:00Z";
const SUMMARY =
  "Intent: make collation propagate to foreign keys in Django's MySQL schema editor.\nProgress: read django/db/backends/base/schema.py and the MySQL backend; wrote a reproduction script.\nNext: run the migrations tests.";

/** The head (everything before the first assistant message) and the turns, of one format. */
function units(format) {
  const session = loadSession(format);
  const messages = Array.isArray(session) ? session : session.messages;
  const envelope = Array.isArray(session) ? null : session;
  const out = [[]];
  for (const m of messages) {
    if (m.role === "assistant") out.push([]);
    out.at(-1).push(m);
  }
  return { envelope, head: out[0], turns: out.slice(1) };
}

/** The conversation of the head and `turns` (indices into the session's turns). */
function conversation(format, turns) {
  const { envelope, head, turns: all } = units(format);
  const messages = [...head, ...turns.flatMap((t) => all[t])];
  return envelope ? { ...envelope, messages } : messages;
}

/** `value` as JSON with one message a line (`messages`, or a request object's). */
function lines(value) {
  const list = (messages) => `[\n${messages.map((m) => JSON.stringify(m)).join(",\n")}\n]`;
  const { messages, ...rest } = value;
  const body = Array.isArray(messages)
    ? list(messages)
    : `{${Object.entries(messages).map(([k, v]) => `${JSON.stringify(k)}: ${k === "messages" ? list(v) : JSON.stringify(v)}`).join(",\n")}}`;
  return `{${Object.entries(rest).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(",\n")},\n"messages": ${body}}\n`;
}

const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

const CASES = [
  {
    name: "prune",
    about: "the first 16 turns over the prune threshold: old results trimmed and cleared behind pointers to their stored copies",
    turns: range(0, 16),
    windows: [8_000, 10_000, 12_000, 14_000],
    summary: SUMMARY,
    uses: (r) => r.pruned.length > 0 && !r.compaction && r.fits,
  },
  {
    name: "evict",
    about: "turns 20 to 45, with file writes: the writes' contents evicted, results pruned",
    turns: range(20, 46),
    windows: [12_000, 14_000, 16_000, 18_000, 20_000, 24_000],
    summary: SUMMARY,
    uses: (r) => r.evicted.length > 0 && !r.compaction && r.fits,
  },
  {
    name: "offload",
    about: "turns 147 and 148, the newest result a 64,372-character test run that alone cannot fit the window: offloaded with its pointer, size and preview",
    turns: range(147, 149),
    windows: [16_000, 12_000, 8_000],
    summary: SUMMARY,
    uses: (r) => r.offloaded.length > 0 && !r.compaction && r.fits,
  },
  {
    name: "compaction",
    about: "the first 14 turns in a window cuts alone cannot bring under: compacted, the summary's marker in place of the older turns, the archive and its transcript stored",
    turns: range(0, 14),
    windows: [8_000, 7_000, 6_000, 5_000],
    summary: SUMMARY,
    uses: (r) => r.compaction?.outcome === "compacted" && r.fits,
  },
];
const FORMATS = [
  ["openai", "openai", "gpt-4o"],
  ["anthropic", "anthropic", "claude-sonnet-4"],
  ["aisdk", "aisdk", "gpt-4o"],
];

for (const c of CASES) {
  for (const [format, file, model] of FORMATS) {
    const messages = conversation(file, c.turns);
    let written = false;
    for (const window of c.windows) {
      const options = { model, contextWindow: window };
      const keeper = new ck.ContextKeeper({ ...options, store: new MemoryStore(), summarize: () => c.summary });
      const { report } = await keeper.prepare(messages, { sessionId: SESSION_ID, now: NOW });
      keeper.free();
      if (!c.uses(report)) continue;
      const input = { about: c.about, source: `tests/data/sessions/agent-300.${file}.json.gz, turns ${c.turns[0]} to ${c.turns.at(-1)} after the head`, options, sessionId: SESSION_ID, now: NOW, summary: c.summary, messages };
      writeFileSync(new URL(`${c.name}-${format}.input.json`, import.meta.url), lines(input));
      console.log(`${c.name}-${format}: window ${window}: ${report.decision}, ${report.tokensBefore} -> ${report.tokensAfter}`);
      written = true;
      break;
    }
    if (!written) throw new Error(`${c.name}-${format}: no window of ${c.windows} uses the tier`);
  }
}
