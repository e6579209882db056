// The `context-keeper` command line, run as a child process from the built package (the bin its
// package.json names): report on the fixtures of every format, on JSON Lines, on stdin and on the
// 300-turn session, its --json figures checked against the library's own; broken input (exit
// code 2, one line naming the message index and field, no stack); prepare into a store directory
// and list/read/grep finding what it offloaded; a summarizer command whose output becomes the
// marker's summary, one that fails (the conversation stays whole, exit code 1); colours only on
// a TTY and never with NO_COLOR, and no escape code from a conversation reaching the terminal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ContextKeeper, countMessages, detectFormat, listModels, validateMessages } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { fixtures, loadSession } from "./fixtures.mjs";

const require = createRequire(import.meta.url);
const pkgJson = require.resolve("context-keeper/package.json");
const manifest = JSON.parse(readFileSync(pkgJson, "utf8"));
const bin = join(dirname(pkgJson), manifest.bin?.["context-keeper"] ?? "missing-bin");
const sessionGz = new URL("../data/sessions/agent-300.openai.json.gz", import.meta.url).pathname;
const fixturePath = (name) => new URL(`../data/messages/${name}.input.json`, import.meta.url).pathname;

const tmp = mkdtempSync(join(tmpdir(), "ck-cli-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/** The environment without the colour switches the caller may have set. */
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !["NO_COLOR", "FORCE_COLOR", "CONTEXT_KEEPER_DEBUG"].includes(k)));

/** Runs the bin; `{ status, stdout, stderr }`. */
function run(args, { input, env = {} } = {}) {
  const r = spawnSync(process.execPath, [bin, ...args], { input, env: { ...baseEnv, ...env }, encoding: "utf8", maxBuffer: 512 << 20, cwd: tmp });
  if (r.error) throw r.error;
  return r;
}
const json = (r) => JSON.parse(r.stdout);
// eslint-disable-next-line no-control-regex
const ESC = /\x1b/;

/** Asserts a bad-input failure: exit 2, one line on stderr naming `where`, no stack trace. */
function assertOneLineError(r, where) {
  assert.equal(r.status, 2, `exit code; stderr: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one line, got:\n${r.stderr}`);
  assert.match(lines[0], /^context-keeper( \w+)?: error: /);
  for (const w of [where].flat()) assert.ok(lines[0].includes(w), `"${lines[0]}" names ${w}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
  return lines[0];
}

test("the package names the bin, and it is an executable file", () => {
  assert.equal(manifest.bin["context-keeper"], "./cli/context-keeper.js");
  assert.ok(manifest.files.includes("cli/"), "cli/ is packed");
  accessSync(bin, constants.X_OK);
  assert.match(readFileSync(bin, "utf8"), /^#!\/usr\/bin\/env node\n/);
});

test("--help for the command and each subcommand; no command is a usage error", () => {
  const main = run(["--help"]);
  assert.equal(main.status, 0);
  for (const cmd of ["report", "prepare", "list", "read", "grep", "models"]) assert.ok(main.stdout.includes(`context-keeper ${cmd}`), cmd);
  for (const cmd of ["report", "prepare", "list", "read", "grep", "models"]) {
    const r = run([cmd, "--help"]);
    assert.equal(r.status, 0, cmd);
    assert.ok(r.stdout.startsWith(`context-keeper ${cmd}`), r.stdout.slice(0, 60));
    assert.match(r.stdout, /--json/);
  }
  assert.match(run(["prepare", "--help"]).stdout, /--summarizer-input/);
  assert.equal(run([]).status, 2);
  assertOneLineError(run(["frobnicate"]), '"frobnicate"');
  assertOneLineError(run(["report", fixturePath("openai-parallel-tools"), "--frob"]), "--frob");
  assertOneLineError(run(["report"]), "FILE");
  assertOneLineError(run(["report", fixturePath("openai-parallel-tools"), "--window", "lots"]), "--window");
});

test("models lists the registry the package manages to; --model's unknown name points to it", () => {
  const all = listModels();
  const r = run(["models", "--json"]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(json(r), all);
  const human = run(["models"]);
  assert.equal(human.status, 0);
  assert.doesNotMatch(human.stdout, ESC, "no colour off a TTY");
  for (const m of all) {
    const row = human.stdout.split("\n").find((line) => line.trimStart().startsWith(`${m.name} `));
    assert.ok(row, `a row for ${m.name}`);
    assert.ok(row.includes(m.contextWindow.toLocaleString("en-US")) && row.includes(m.encoding), row);
  }
  assert.match(human.stdout, new RegExp(`${all.length} models`));
  const anthropic = json(run(["models", "--provider", "Anthropic", "--json"]));
  assert.ok(anthropic.length > 0 && anthropic.every((m) => m.provider === "anthropic"));
  assertOneLineError(run(["models", "--provider", "acme"]), ["--provider", "anthropic"]);
  assertOneLineError(run(["prepare", fixturePath("openai-parallel-tools"), "--model", "my-llm"]), ["my-llm", "--window", "context-keeper models"]);
});

// The fixtures of every format: OpenAI, Anthropic, AI SDK ModelMessage and UIMessage.
for (const { name, input } of fixtures) {
  test(`report --json on ${name} gives the library's own figures`, () => {
    const r = run(["report", fixturePath(name), "--json", "--model", "gpt-4o"]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, "");
    const got = json(r);
    const count = countMessages(input, { model: "gpt-4o" });
    const list = Array.isArray(input) ? input : input.messages;
    assert.equal(got.format, detectFormat(input));
    assert.equal(got.messages, list.length);
    assert.equal(got.tokens.total, count.total);
    assert.deepEqual(got.tokens.byRole, count.byRole);
    assert.deepEqual(got.tokens.byKind, count.byKind);
    assert.equal(got.tokens.system, count.system);
    assert.equal(got.window.window, 128_000);
    assert.equal(got.largest[0].tokens, Math.max(...count.perMessage));
    assert.equal(got.largest[0].index, count.perMessage.indexOf(Math.max(...count.perMessage)));
    const problems = validateMessages(input);
    assert.deepEqual(got.problems.map((p) => [p.kind, p.messageIndex]), problems.map((p) => [p.kind, p.messageIndex]));
    assert.equal(got.plan.decision, "under");
    assert.equal(got.plan.tokensAfter, got.plan.tokensBefore);
    // The human report shows the same total and names the format.
    const human = run(["report", fixturePath(name), "--model", "gpt-4o"]);
    assert.equal(human.status, 0);
    assert.ok(human.stdout.includes(count.total.toLocaleString("en-US")), "the total");
    assert.ok(human.stdout.includes(`format ${got.format ?? "plain"}`));
    assert.ok(human.stdout.includes(problems.length === 0 ? "valid" : `${problems.length} problem`));
  });
}

test("report names the kinds a message holds, in every format", () => {
  const ui = json(run(["report", fixturePath("aisdk-ui-messages"), "--json"]));
  assert.ok(ui.largest.some((m) => /tool call \(getWeather\)/.test(m.kind)), JSON.stringify(ui.largest));
  assert.ok(ui.largest.some((m) => /image/.test(m.kind)));
  const anthropic = json(run(["report", fixturePath("anthropic-thinking-tools"), "--json"]));
  assert.equal(anthropic.model.name, "claude-sonnet-4-5", "the request object's model");
  assert.ok(anthropic.largest.some((m) => m.kind.startsWith("thinking")));
  assert.ok(anthropic.largest.some((m) => m.kind.startsWith("tool result (read_file)")), JSON.stringify(anthropic.largest));
  const broken = run(["report", fixturePath("openai-broken-pairing")]);
  assert.match(broken.stdout, /4 problems a provider would reject/);
  assert.match(broken.stdout, /orphanResult/);
  assert.match(broken.stdout, /dropResult at messages\[0\]/);
});

test("report on the 300-turn session: the window, the largest messages and the plan are the library's", async () => {
  const r = run(["report", sessionGz, "--json", "--top", "5"]);
  assert.equal(r.status, 0, r.stderr);
  const got = json(r);
  const session = loadSession("openai");
  const count = countMessages(session, { model: "gpt-4o" });
  assert.equal(got.tokens.total, count.total);
  assert.equal(got.window.over, true);
  assert.equal(got.window.share, count.total / 128_000);
  assert.equal(got.largest.length, 5);
  assert.deepEqual(got.largest.map((m) => m.tokens), [...count.perMessage].sort((a, b) => b - a).slice(0, 5));
  assert.equal(got.largest[0].kind, "tool result (bash)");
  const keeper = new ContextKeeper({ model: "gpt-4o", store: new MemoryStore() });
  const { report } = await keeper.plan(session, { sessionId: "default" });
  keeper.free();
  assert.equal(got.plan.decision, report.decision);
  assert.equal(got.plan.tokensAfter, report.tokensAfter);
  assert.deepEqual(got.plan.saved, report.saved);
  const savedBy = (actions) => got.plan.edits.filter((e) => actions.includes(e.action)).reduce((n, e) => n + e.saved, 0);
  assert.equal(savedBy(["offload"]), report.saved.offload);
  assert.equal(savedBy(["softTrim", "hardClear"]), report.saved.prune);
  assert.equal(savedBy(["evictInput", "evictResult"]), report.saved.evict);
  // As people read it: the bar says how far over, the table the saved tokens.
  const human = run(["report", sessionGz]).stdout;
  assert.match(human, new RegExp(`${count.total.toLocaleString("en-US")} of 128,000 tokens, 163%, over by ${(count.total - 128_000).toLocaleString("en-US")}`));
  assert.ok(human.includes(report.saved.offload.toLocaleString("en-US")), "the offload's saving");
  assert.match(human, /█/);
  // why a count is approximate: gpt-4o's own tokenizer, but tool calls and screenshots are priced by rule
  assert.equal(got.model.exact, false);
  assert.equal(got.model.ownTokenizer, true);
  assert.match(human, /o200k_base, approximate \(its own tokenizer; tool calls, images and files are priced by published rules\)/);
  const chat = join(tmp, "chat.json");
  writeFileSync(chat, JSON.stringify([{ role: "system", content: "Be brief." }, { role: "user", content: "Hi there" }]));
  assert.match(run(["report", chat, "--model", "claude-sonnet-4-5"]).stdout, /approximate \(the model's tokenizer is not public\)/);
  assert.match(run(["report", chat, "--model", "gpt-4o"]).stdout, /o200k_base, exact\n/);
});

test("report with --window and an unknown model", () => {
  const small = json(run(["report", fixturePath("openai-parallel-tools"), "--json", "--window", "100"]));
  assert.equal(small.model.window, 100);
  assert.equal(small.model.windowFrom, "option");
  assert.equal(small.window.over, small.tokens.total > 100);
  const unknown = run(["report", fixturePath("openai-parallel-tools"), "--model", "my-llm"]);
  assert.equal(unknown.status, 0);
  assert.match(unknown.stdout, /not in the registry/);
  assert.match(unknown.stdout, /not managed/);
});

test("JSON Lines and stdin read the same conversation as the JSON file", () => {
  const session = loadSession("openai");
  const jsonl = join(tmp, "session.jsonl");
  writeFileSync(jsonl, session.map((m) => JSON.stringify(m)).join("\n") + "\n");
  const fromFile = json(run(["report", sessionGz, "--json"]));
  const fromJsonl = json(run(["report", jsonl, "--json"]));
  assert.equal(fromJsonl.jsonl, true);
  assert.equal(fromJsonl.messages, session.length);
  assert.equal(fromJsonl.tokens.total, fromFile.tokens.total);
  assert.deepEqual(fromJsonl.plan, fromFile.plan);
  const fromStdin = run(["report", "-", "--json"], { input: readFileSync(jsonl) });
  assert.equal(fromStdin.status, 0, fromStdin.stderr);
  assert.equal(json(fromStdin).tokens.total, fromFile.tokens.total);
  assert.equal(json(fromStdin).file, "stdin");
  const request = JSON.parse(readFileSync(fixturePath("anthropic-documents-unicode"), "utf8"));
  const piped = run(["report", "-", "--json"], { input: JSON.stringify(request) });
  assert.equal(json(piped).tokens.total, countMessages(request, { model: json(piped).model.name }).total);
});

test("broken input: exit code 2 and one line naming the message index and field", () => {
  const bad = join(tmp, "bad.json");
  writeFileSync(bad, JSON.stringify([{ role: "user", content: "hi" }, { role: "user", content: [{ type: "text", text: 3 }] }]));
  const line = assertOneLineError(run(["report", bad]), ["bad.json", "messages[1].content[0].text", "expected a string, found a number"]);
  assert.doesNotMatch(line, /internal/);
  assertOneLineError(run(["prepare", bad, "--model", "gpt-4o", "--store", join(tmp, "never")]), "messages[1].content[0].text");

  const role = join(tmp, "role.json");
  writeFileSync(role, JSON.stringify([{ role: "wizard", content: "x" }]));
  assertOneLineError(run(["report", role]), ["messages[0].role", "wizard"]);

  // JSON Lines: the index and the line it came from (a blank line in between).
  const lines = join(tmp, "bad.jsonl");
  writeFileSync(lines, '{"role":"user","content":"hi"}\n\n{"role":"assistant","content":5}\n');
  assertOneLineError(run(["report", lines]), ["messages[1].content", "(line 3)"]);
  const notJson = join(tmp, "notjson.jsonl");
  writeFileSync(notJson, '{"role":"user","content":"hi"}\n{"role": "user", content: "x"}\n');
  assertOneLineError(run(["report", notJson]), ["line 2", "not JSON"]);
  const truncated = join(tmp, "truncated.json");
  writeFileSync(truncated, '[\n  {"role": "user", "content": "hi"},\n  {"role": "assistant", "content": "hel');
  assertOneLineError(run(["report", truncated]), ["not JSON", "line 3"]);

  assertOneLineError(run(["report", "-"], { input: '{"messages": 3}' }), ["stdin", "messages"]);
  assertOneLineError(run(["report", "-"], { input: "" }), "empty");
  assertOneLineError(run(["report", join(tmp, "missing.json")]), "no such file");
  assertOneLineError(run(["prepare", fixturePath("openai-parallel-tools")]), "--model");
  assertOneLineError(run(["prepare", fixturePath("openai-parallel-tools"), "--model", "my-llm"]), "--window");

  // --json: the error as JSON on stdout too.
  const r = run(["report", bad, "--json"]);
  assert.equal(r.status, 2);
  assert.deepEqual(json(r).error, { kind: "messages", path: "messages[1].content[0].text", message: `${bad}: messages[1].content[0].text: expected a string, found a number`, exitCode: 2 });
});

test("prepare into a store directory, then list, read and grep find what it offloaded", () => {
  const store = join(tmp, "store-a");
  const out = join(tmp, "managed.json");
  const r = run(["prepare", sessionGz, "--model", "gpt-4o", "--store", store, "--session", "s1", "--out", out, "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const { report } = json(r);
  assert.equal(report.fits, true);
  // every cut names its stored copy; the largest is read back below
  const cuts = [...report.offloaded, ...report.pruned, ...report.evicted];
  assert.ok(cuts.length > 0 && cuts.every((c) => c.original.kind === "store"));
  const managed = JSON.parse(readFileSync(out, "utf8"));
  assert.equal(countMessages(managed, { model: "gpt-4o" }).total, report.tokensAfter);
  assert.deepEqual(validateMessages(managed), []);
  const offload = cuts.reduce((a, b) => (b.tokensBefore > a.tokensBefore ? b : a));
  const id = offload.original.id;
  assert.ok(JSON.stringify(managed[offload.messageIndex]).includes(id), "the pointer names the id");
  const original = loadSession("openai")[offload.messageIndex].content;

  const listed = run(["list", "--store", store, "--json"]);
  assert.equal(listed.status, 0, listed.stderr);
  const sessions = json(listed).sessions;
  assert.deepEqual(sessions.map((s) => s.session), ["s1"]);
  assert.deepEqual(sessions[0].offloads.map((o) => o.id).sort(), [...new Set(cuts.map((c) => c.original.id))].sort());
  assert.equal(sessions[0].offloads.find((o) => o.id === id).tokens, offload.tokensBefore);
  assert.match(run(["list", "--store", store]).stdout, new RegExp(`${id}: bash, ${offload.tokensBefore.toLocaleString("en-US")} tokens`));

  const read = json(run(["read", id, "--store", store, "--limit", "3", "--json"]));
  assert.equal(read.text, original.split("\n").slice(0, 3).join("\n"));
  assert.equal(read.totalLines, original.replace(/\n$/, "").split("\n").length);
  const readText = run(["read", id, "--store", store, "--offset", "2", "--limit", "1"]);
  assert.equal(readText.status, 0);
  assert.ok(readText.stdout.includes(original.split("\n")[1]), readText.stdout);

  const grep = run(["grep", "schema\\.py\\.orig", "--store", store, "--json"]);
  assert.equal(grep.status, 0, grep.stderr);
  const found = json(grep);
  const expected = original.split("\n").filter((l) => l.includes("schema.py.orig")).length;
  assert.equal(found.sessions[0].matches.filter((m) => m.id === id).length, expected);
  assert.ok(expected > 0);
  assert.ok(found.sessions[0].matches.every((m) => m.text.includes("schema.py.orig")));
  assert.match(run(["grep", "SCHEMA\\.PY\\.ORIG", "-i", "--store", store]).stdout, /schema\.py\.orig/);
  assert.equal(run(["grep", "no such line anywhere", "--store", store]).status, 1, "grep: no match");
  assertOneLineError(run(["grep", "(", "--store", store]), "pattern");
  assertOneLineError(run(["read", "no-such-id", "--store", store]), '"no-such-id"');
  assertOneLineError(run(["list", "--store", join(tmp, "no-store")]), "no store");
  // A store that cannot be written is an error before any work, not a failure per save.
  const file = join(tmp, "a-file");
  writeFileSync(file, "");
  assertOneLineError(run(["prepare", sessionGz, "--model", "gpt-4o", "--store", file]), ["--store", "not a directory"]);
  assertOneLineError(run(["prepare", sessionGz, "--model", "gpt-4o", "--store", join(file, "sub")]), ["--store", "cannot write"]);

  // Without --out the conversation is on stdout, what was done on stderr.
  const piped = run(["prepare", "-", "--model", "gpt-4o", "--store", store, "--session", "s2"], { input: readFileSync(out) });
  assert.equal(piped.status, 0, piped.stderr);
  assert.deepEqual(JSON.parse(piped.stdout).length, managed.length);
  assert.match(piped.stderr, /^prepare: /);
});

test("--summarizer CMD: its stdout becomes the marker's summary; the archive reads back", () => {
  const script = join(tmp, "summarize.mjs");
  writeFileSync(script, `let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const first = s.split("\\n")[0].slice(0, 30);
  const conversation = s.includes("## Conversation to summarize") ? "with-transcript" : "no-transcript";
  process.stdout.write("SUMMARY-FROM-CMD " + first + " | " + conversation + " | target " + process.env.CONTEXT_KEEPER_TARGET_TOKENS + "\\n");
});\n`);
  const store = join(tmp, "store-b");
  const r = run(["prepare", sessionGz, "--model", "gpt-4o", "--window", "32000", "--store", store, "--summarizer", `"${process.execPath}" ${script}`, "--now", "2026-11-25T12:00:00.000Z", "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const { report, messages } = json(r);
  assert.equal(report.compaction.outcome, "compacted");
  assert.equal(report.compaction.heuristic, false);
  assert.equal(report.fits, true);
  const marker = messages.find((m) => typeof m.content === "string" && m.content.startsWith("<context-keeper-compaction"));
  assert.ok(marker, "a marker");
  assert.match(marker.content, /SUMMARY-FROM-CMD You are summarizing the earlie \| with-transcript \| target 2000/);
  assert.match(marker.content, /"time":"2026-11-25T12:00:00.000Z"/);
  assert.equal(countMessages(messages, { model: "gpt-4o" }).total, report.tokensAfter);

  // The archive: listed, and read back as the messages the marker replaced.
  const listed = json(run(["list", "--store", store, "--json"])).sessions[0];
  assert.equal(listed.archives.length, 1);
  const archived = report.compaction.span.to - report.compaction.span.from;
  assert.equal(listed.archives[0].messages, archived);
  const back = json(run(["read", listed.archives[0].name, "--store", store, "--json"]));
  assert.equal(back.kind, "archive");
  // NOTE: archived as they were when compacted: the large result already behind its pointer.
  const originals = loadSession("openai").slice(report.compaction.span.from, report.compaction.span.to);
  assert.equal(back.messages.length, archived);
  assert.deepEqual(back.messages.map((m) => [m.role, m.tool_call_id, m.tool_calls?.map((c) => c.id)]), originals.map((m) => [m.role, m.tool_call_id, m.tool_calls?.map((c) => c.id)]));
  assert.deepEqual(back.messages.filter((m) => m.role !== "tool"), originals.filter((m) => m.role !== "tool"), "assistant and user messages verbatim");
  assert.match(run(["read", listed.archives[0].name, "--store", store]).stdout, /assistant/);

  // JSON on stdin instead.
  const jsonScript = join(tmp, "summarize-json.mjs");
  writeFileSync(jsonScript, `let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const r = JSON.parse(s);
  process.stdout.write("JSON-SUMMARY of " + r.messages.length + " messages, target " + r.targetTokens);
});\n`);
  const j = run(["prepare", sessionGz, "--model", "gpt-4o", "--window", "32000", "--store", join(tmp, "store-c"), "--summarizer", `"${process.execPath}" ${jsonScript}`, "--summarizer-input", "json", "--json"]);
  assert.equal(j.status, 0, j.stderr);
  const jm = json(j).messages.find((m) => typeof m.content === "string" && m.content.startsWith("<context-keeper-compaction"));
  assert.match(jm.content, new RegExp(`JSON-SUMMARY of ${archived} messages, target 2000`));
});

test("a summarizer that fails keeps the conversation whole: exit code 1, the reason reported", () => {
  const store = join(tmp, "store-d");
  const r = run(["prepare", sessionGz, "--model", "gpt-4o", "--window", "32000", "--store", store, "--summarizer", "echo 'quota exceeded' >&2; exit 3", "--json"]);
  assert.equal(r.status, 1, r.stderr);
  const { report, messages } = json(r);
  assert.equal(report.compaction.outcome, "failed");
  assert.match(report.compaction.reason, /exited with 3: quota exceeded/);
  assert.equal(report.fits, false);
  assert.ok(report.overBudget);
  const session = loadSession("openai");
  assert.equal(messages.length, session.length, "no message archived away");
  assert.ok(!messages.some((m) => typeof m.content === "string" && m.content.startsWith("<context-keeper-compaction")));
  const ids = (list) => list.flatMap((m) => [...(m.tool_calls ?? []).map((c) => c.id), ...(m.tool_call_id ? [m.tool_call_id] : [])]);
  assert.deepEqual(ids(messages), ids(session));
  // A command that does not answer in time is ended, and counts as a failure.
  const started = Date.now();
  const slow = run(["prepare", sessionGz, "--model", "gpt-4o", "--window", "32000", "--store", store, "--session", "slow", "--summarizer", "sleep 30", "--summarizer-timeout", "1", "--json"]);
  assert.equal(slow.status, 1);
  assert.ok(Date.now() - started < 20_000, "ended well before the command would have");
  assert.match(json(slow).report.compaction.reason, /did not answer within 1 s/);
  // The human summary says why, on stderr.
  const human = run(["prepare", sessionGz, "--model", "gpt-4o", "--window", "32000", "--store", store, "--summarizer", "exit 4", "--out", join(tmp, "x.json")]);
  assert.equal(human.status, 1);
  assert.match(human.stderr, /compaction failed \(summarize\): .*exited with 4/);
  assert.equal(human.stdout, "");
});

test("--repair repairs tool pairing before prepare; without it prepare refuses (exit 2) and writes nothing", () => {
  const store = join(tmp, "store-e");
  const out = join(tmp, "refused.json");
  const plain = run(["prepare", fixturePath("openai-broken-pairing"), "--model", "gpt-4o", "--store", store, "--out", out]);
  assert.equal(plain.status, 2);
  assert.match(plain.stderr, /^context-keeper prepare: error: 4 tool pairing problems a provider would reject, e\.g\. messages\[\d+\]: .*nothing written: --repair repairs them/);
  assert.equal(plain.stderr.trim().split("\n").length, 1, "one line");
  assert.equal(plain.stdout, "");
  assert.equal(existsSync(out), false, "no request written");
  const asJson = json(run(["prepare", fixturePath("openai-broken-pairing"), "--model", "gpt-4o", "--store", store, "--json"]));
  assert.equal(asJson.error.exitCode, 2);
  const repaired = run(["prepare", fixturePath("openai-broken-pairing"), "--model", "gpt-4o", "--store", store, "--repair", "--json"]);
  const { report, messages } = json(repaired);
  assert.equal(report.repairs.length, 3);
  assert.deepEqual(report.problems, validateMessages(messages));
  assert.ok(validateMessages(messages).length < 4);
});

test("colours: none off a TTY or with NO_COLOR; FORCE_COLOR shows the check can see them", () => {
  const args = ["report", fixturePath("openai-broken-pairing")];
  const plain = run(args);
  assert.doesNotMatch(plain.stdout + plain.stderr, ESC);
  const forced = run(args, { env: { FORCE_COLOR: "1" } });
  assert.match(forced.stdout, ESC);
  const both = run(args, { env: { FORCE_COLOR: "1", NO_COLOR: "1" } });
  assert.doesNotMatch(both.stdout + both.stderr, ESC);
  const failing = run(["report", join(tmp, "missing.json")], { env: { NO_COLOR: "1" } });
  assert.doesNotMatch(failing.stderr, ESC);
  const prepared = run(["prepare", fixturePath("openai-parallel-tools"), "--model", "gpt-4o", "--store", join(tmp, "store-f")]);
  assert.doesNotMatch(prepared.stdout + prepared.stderr, ESC);
});

test("colours on a real TTY, and none there with NO_COLOR", { skip: !hasScript() && "no `script` to make a TTY" }, () => {
  const command = `"${process.execPath}" "${bin}" report "${sessionGz}" --top 3`;
  const tty = spawnSync("script", ["-qec", command, "/dev/null"], { env: baseEnv, encoding: "utf8" });
  assert.equal(tty.status, 0, tty.stderr);
  assert.match(tty.stdout, ESC);
  assert.match(tty.stdout, /\r\[█/, "a progress line for a long file on a TTY");
  const noColor = spawnSync("script", ["-qec", command, "/dev/null"], { env: { ...baseEnv, NO_COLOR: "1" }, encoding: "utf8" });
  assert.equal(noColor.status, 0);
  assert.doesNotMatch(noColor.stdout, ESC);
  assert.match(noColor.stdout, /208,537 of 128,000 tokens/);
});

test("text from the conversation cannot send escape codes to the terminal", () => {
  const evil = join(tmp, "evil.json");
  writeFileSync(evil, JSON.stringify([{ role: "user", content: "\x1b[2J\x1b[31mEVIL\u202e reversed\x07" }]));
  for (const env of [{}, { FORCE_COLOR: "1" }]) {
    const r = run(["report", evil], { env });
    assert.equal(r.status, 0);
    assert.ok(!r.stdout.includes("\x1b[2J") && !r.stdout.includes("\x1b[31mEVIL") && !r.stdout.includes("\u202e") && !r.stdout.includes("\x07"));
    assert.match(r.stdout, /␛\[2J␛\[31mEVIL\ufffd reversed␇/);
  }
  const bad = join(tmp, "evil-bad.json");
  writeFileSync(bad, JSON.stringify([{ role: "\x1b[31mred", content: "x" }]));
  const r = run(["report", bad]);
  assert.equal(r.status, 2);
  assert.doesNotMatch(r.stderr, ESC);
});

function hasScript() {
  return spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;
}

test("scripts/demo's command-line half runs report, prepare, list and grep on the bundled session", () => {
  const script = new URL("../../scripts/demo-cli.mjs", import.meta.url).pathname;
  const r = spawnSync(process.execPath, [script, "--no-serve"], { env: baseEnv, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  for (const step of ["report agent-300.openai.json --model gpt-4o", "prepare agent-300.openai.json --model gpt-4o --store $TMP/store", "list --store $TMP/store", "grep 'def convert_empty_strings'", "--window 32000"]) {
    assert.ok(r.stdout.includes(`$ context-keeper ${step}`) || r.stdout.includes(step), step);
  }
  assert.match(r.stdout, /208,537 of 128,000 tokens/);
  assert.match(r.stderr, /prepare: 208,537 -> [\d,]+ tokens .*: fits, cleared/);
  assert.match(r.stderr, /compacted messages \d+-\d+/);
  assert.match(r.stdout, /archive 0001-/);
});

test("list: a session's archives oldest first by number, compactions then rolling folds (not by name)", async () => {
  const { compact, rollingWindow } = await import("context-keeper");
  const { FileSystemStore } = await import("context-keeper/stores");
  const dir = join(tmp, "archives-order");
  const store = new FileSystemStore({ dir });
  const history = [{ role: "system", content: "Be brief." }, { role: "user", content: "Walk the repository." }];
  for (let t = 0; t < 12; t++) {
    history.push({ role: "assistant", content: `Step ${t}: reading file_${t}.py, which defines handler_${t}. `.repeat(20) });
    history.push({ role: "user", content: `Go on with step ${t + 1}.` });
  }
  const summarize = () => "Read the first files.";
  const compacted = await compact(history, { store, sessionId: "s", model: "gpt-4o", keepRecentTurns: 2, summarize });
  assert.equal(compacted.report.outcome, "compacted");
  const rolled = await rollingWindow(history, { store, sessionId: "s", model: "gpt-4o", budget: 1_500, summarize });
  assert.equal(rolled.report.outcome, "folded");
  // the same archive again under later numbers: by name "10000-" sorts before "9999-"
  const first = compacted.marker.key;
  const bytes = await store.load(first);
  for (const name of ["9999-aaaaaaaaaaaaaaaa", "10000-aaaaaaaaaaaaaaaa", "0002-aaaaaaaaaaaaaaaa"]) {
    await store.save([...first.slice(0, 3), name], bytes);
  }
  const listed = json(run(["list", "--store", dir, "--session", "s", "--json"])).sessions[0].archives.map((a) => a.name.replace(/-[0-9a-f]{16}$/, ""));
  assert.deepEqual(listed, ["0001", "0002", "9999", "10000", "rolling-0001"]);
  const text = run(["list", "--store", dir, "--session", "s"]).stdout;
  assert.match(text, /archive rolling-0001-[0-9a-f]{16}: rolling window fold 1,/);
  assert.match(text, /archive 0001-[0-9a-f]{16}: compaction 1,/);
});
