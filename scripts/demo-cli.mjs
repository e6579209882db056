#!/usr/bin/env node
// The command-line half of the demo (scripts/demo runs it before scripts/demo.mjs serves the
// page): the package's `context-keeper` bin on the bundled 300-turn agent session
// (tests/data/sessions/agent-300.openai.json.gz, unzipped here into a temporary directory), or
// on the conversation file given: `report`, then `prepare` into a temporary store and what the
// store holds afterwards (`list`, `grep`), then `prepare` under a small window, which compacts.
//
//   node scripts/demo-cli.mjs [conversation.json] [--port N] [--no-serve]   (the flags are demo.mjs's)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "pkg", "cli", "context-keeper.js");
const args = process.argv.slice(2);
const own = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--port");

const tmp = mkdtempSync(join(tmpdir(), "context-keeper-demo-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let file = own;
if (file === undefined) {
  file = join(tmp, "agent-300.openai.json");
  writeFileSync(file, gunzipSync(readFileSync(join(root, "tests", "data", "sessions", "agent-300.openai.json.gz"))));
}
const store = join(tmp, "store");
const shown = (a) => a.map((x) => (x === file ? basename(file) : x.startsWith(tmp) ? x.replace(tmp, "$TMP") : /[\s'"\\|*()]/.test(x) ? `'${x}'` : x)).join(" ");

/** Runs the bin with the terminal's own stdout and stderr (colours when it is a TTY). */
function ck(...a) {
  console.log(`\n$ context-keeper ${shown(a)}`);
  const r = spawnSync(process.execPath, [bin, ...a], { stdio: "inherit" });
  if (r.status === 2 || r.status === 3 || r.error) process.exit(r.status ?? 3);
  return r.status;
}

const model = own === undefined ? "gpt-4o" : (process.env.DEMO_MODEL ?? "gpt-4o");
ck("report", file, "--model", model);
ck("prepare", file, "--model", model, "--store", store, "--out", join(tmp, "prepared.json"));
ck("list", "--store", store);
if (own === undefined) {
  ck("grep", "def convert_empty_strings", "--store", store);
  // A small window: the older turns give way to a compaction marker (the heuristic summary; pass
  // --summarizer 'your-llm-cli' for a real one), the originals archived in the store.
  ck("prepare", file, "--model", model, "--window", "32000", "--store", store, "--session", "small", "--out", join(tmp, "small.json"));
  ck("list", "--store", store, "--session", "small");
}
console.log("");
