#!/usr/bin/env node
// The `context-keeper` command (Node 20+): report, prepare, and list/read/grep over a store
// directory. A thin layer over the package's own exports: it parses arguments, reads files,
// prints, and maps errors to exit codes; every count, check and decision is the package's.
//
// Exit codes: 0 ok; 1 over budget after prepare (grep: nothing matched); 2 bad input or a
// usage error (one line naming the place); 3 a store or system failure.
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import * as ck from "../node.js";
import * as stores from "../stores/node.js";
import { LONG_INPUT_BYTES, UsageError, parseConversation, readBytes, sizeOf } from "./input.js";
import { commandSummarizer, renderPrepare, serialize } from "./prepare.js";
import { ensureStoreDir, grep, list, openStore, read, renderGrep, renderList, renderRead } from "./recover.js";
import { analyze, renderReport } from "./report.js";
import { Progress, num, paletteFor, safeLine, safeText, table } from "./term.js";

const EXIT = { ok: 0, overBudget: 1, noMatch: 1, badInput: 2, failure: 3 };
const DEFAULT_MODEL = "gpt-4o";
const DEFAULT_STORE = ".context-keeper";
const DEFAULT_SESSION = "default";

const USAGE = {
  main: `context-keeper: keep an LLM conversation inside its model's context window

Usage:
  context-keeper report FILE|-   [--model M] [--window N] [--top N] [--json]
  context-keeper prepare FILE|-  --model M [--window N] [--store DIR] [--session ID]
                                 [--summarizer heuristic|CMD] [--out FILE] [--repair] [--json]
  context-keeper list            [--store DIR] [--session ID] [--json]
  context-keeper read ID         [--store DIR] [--session ID] [--offset N] [--limit N] [--json]
  context-keeper grep PATTERN    [--store DIR] [--session ID] [--id ID] [-i] [--json]
  context-keeper models          [--provider P] [--json]

A conversation is OpenAI Chat Completions, Anthropic Messages or AI SDK (ModelMessage or
UIMessage) messages: an array, a request object with \`messages\` (and \`system\`), or JSON Lines
with one message a line; gzipped or not; "-" reads stdin.

Exit codes: 0 ok, 1 over budget after prepare (grep: no match), 2 bad input or usage,
3 a store or system failure. \`context-keeper COMMAND --help\` for a command's options.`,

  report: `context-keeper report FILE|- [options]

What a conversation costs and what prepare would do with it: the window use as a bar, tokens
per role and per kind, the largest messages, tool pairing problems (and what repair would
change), and the plan (a dry run of the ContextKeeper: nothing is written).

Options:
  --model M       the model to count for and manage to (default: the request object's
                  \`model\`, else ${DEFAULT_MODEL})
  --window N      its context window in tokens (default: the model registry's)
  --top N         how many of the largest messages to list (default 10)
  --store DIR     plan against a session's stored state in DIR (with --session)
  --session ID    the session whose stored state to plan against
  --json          the report as one JSON object on stdout
  --no-progress   no progress line on stderr (it shows only on a TTY, for long input)
  -h, --help      this help`,

  prepare: `context-keeper prepare FILE|- --model M [options]

Runs the ContextKeeper on the conversation and writes the managed conversation as JSON (in the
input's shape, one message a line) to stdout or --out; what it did goes to stderr. Offloaded
tool results and compaction archives go to the store directory, from where \`list\`, \`read\` and
\`grep\` (and the model's recovery tools) read them back.

Options:
  --model M                the model (default: the request object's \`model\`; else required)
  --window N               its context window in tokens (default: the model registry's)
  --store DIR              the store directory (default ${DEFAULT_STORE}; created when needed)
  --session ID             the session id the store keys use (default "${DEFAULT_SESSION}")
  --summarizer S           "heuristic" (default: the package's built-in summary, no LLM) or a
                           shell command: it gets the summary request on stdin and prints the
                           summary on stdout; a non-zero exit keeps the conversation whole
  --summarizer-input F     what the command's stdin holds: "text" (default): the prompt, a
                           "## Previous summary" section when there is one, then
                           "## Conversation to summarize" and the transcript; or "json":
                           {prompt, transcript, targetTokens, previousSummary, messages}.
                           The environment also carries CONTEXT_KEEPER_PROMPT and
                           CONTEXT_KEEPER_TARGET_TOKENS.
  --summarizer-timeout S   seconds to wait for the command (default 120)
  --out FILE               write the conversation there instead of stdout
  --repair                 repair tool pairing first (repairMessages); without it a
                           conversation a provider would reject is refused (exit 2)
  --now TIME               the time written in a compaction marker (default: now)
  --json                   stdout gets {report, messages} (or {report, out} with --out)
  --no-progress            no progress line on stderr (it shows only on a TTY, for long input)
  -h, --help               this help

Exit code 1 when the result is still over the budget (the report says why).

Example, with any LLM command line as the summarizer:
  context-keeper prepare chat.json --model gpt-4o --summarizer 'llm -m gpt-4.1-mini' --out sent.json`,

  list: `context-keeper list [options]

The offloaded tool results (as the model's list_offloaded tool shows them) and the compaction
archives of each session in a store directory.

Options:
  --store DIR     the store directory (default ${DEFAULT_STORE})
  --session ID    only this session (default: every session in the store)
  --json          as JSON
  -h, --help      this help`,

  read: `context-keeper read ID [options]

An offloaded tool result by lines, as the model's read_offloaded tool returns it; or, for an
archive's id (from \`list\`), the compaction archive's transcript (--json: its messages).

Options:
  --store DIR     the store directory (default ${DEFAULT_STORE})
  --session ID    the session (default: the one that holds ID)
  --offset N      the first line, from 1 (default 1)
  --limit N       how many lines (default 200)
  --json          as JSON
  -h, --help      this help`,

  models: `context-keeper models [options]

The models the package knows (its registry), with the context window and output limit it
manages to, the encoding it counts with (exact: the model's own tokenizer) and the provider's
page the figures were read from. --model takes these names, a dated release of one
(gpt-4o-2024-08-06), or a host's spelling (openai/gpt-4o, us.anthropic.claude-…).

Options:
  --provider P    only this provider's (openai, anthropic, google, ...)
  --json          as JSON: modelInfo of each
  -h, --help      this help`,

  grep: `context-keeper grep PATTERN [options]

Searches the offloaded tool results with a regular expression (Rust regex syntax, linear time),
as the model's grep_offloaded tool does. Exit code 1 when nothing matched.

Options:
  --store DIR         the store directory (default ${DEFAULT_STORE})
  --session ID        only this session (default: every session in the store)
  --id ID             only this offloaded result
  -i, --ignore-case   match case-insensitively
  --json              as JSON
  -h, --help          this help`,
};

const COMMON = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
};
const STORE = { store: { type: "string" }, session: { type: "string" } };
const OPTIONS = {
  report: { ...COMMON, ...STORE, model: { type: "string" }, window: { type: "string" }, top: { type: "string" }, "no-progress": { type: "boolean" } },
  prepare: {
    ...COMMON,
    ...STORE,
    model: { type: "string" },
    window: { type: "string" },
    summarizer: { type: "string" },
    "summarizer-input": { type: "string" },
    "summarizer-timeout": { type: "string" },
    out: { type: "string" },
    repair: { type: "boolean" },
    now: { type: "string" },
    "no-progress": { type: "boolean" },
  },
  list: { ...COMMON, ...STORE },
  read: { ...COMMON, ...STORE, offset: { type: "string" }, limit: { type: "string" } },
  grep: { ...COMMON, ...STORE, id: { type: "string" }, "ignore-case": { type: "boolean", short: "i" } },
  models: { ...COMMON, provider: { type: "string" } },
};
const POSITIONALS = { report: ["FILE"], prepare: ["FILE"], list: [], read: ["ID"], grep: ["PATTERN"], models: [] };

/** A whole number option from `min` up, or undefined when absent. */
function integer(values, name, min = 1) {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw.replaceAll("_", "").replaceAll(",", "")) || Number(raw.replaceAll("_", "").replaceAll(",", "")) < min) {
    throw new UsageError(`--${name}: expected a whole number from ${min} up, found ${JSON.stringify(raw)}`);
  }
  return Number(raw.replaceAll("_", "").replaceAll(",", ""));
}

/** The one line an error prints, and its exit code. */
function describeError(err, context) {
  if (err instanceof UsageError) return { line: err.message, code: EXIT.badInput, kind: "usage" };
  if (err?.code?.startsWith?.("ERR_PARSE_ARGS")) {
    return { line: `${err.message.split(". To specify")[0]}; see context-keeper ${context.command ?? ""} --help`.replace("  ", " "), code: EXIT.badInput, kind: "usage" };
  }
  if (err instanceof ck.ContextKeeperError) {
    const user = ["messages", "options", "model", "encoding", "notFound", "pattern"].includes(err.kind);
    let line = err.path && !err.message.includes(err.path) ? `${err.path}: ${err.message}` : err.message;
    // JSON Lines: name the line a message index came from.
    const index = /^messages\[(\d+)\]/.exec(err.path ?? "")?.[1];
    if (index !== undefined && context.input?.lines) line += ` (line ${context.input.lines[Number(index)]})`;
    if (err.kind === "messages" && context.source) line = `${context.source}: ${line}`;
    return { line: safeLine(line), code: user ? EXIT.badInput : EXIT.failure, kind: err.kind, path: err.path ?? null };
  }
  if (err instanceof stores.StoreError) return { line: safeLine(err.message), code: EXIT.failure, kind: "store" };
  if (err?.code && typeof err.message === "string" && /^E[A-Z]+$/.test(err.code)) return { line: safeLine(err.message), code: EXIT.failure, kind: "system" };
  return { line: `internal error: ${safeLine(err?.message ?? String(err))}${process.env.CONTEXT_KEEPER_DEBUG ? `\n${err?.stack}` : " (CONTEXT_KEEPER_DEBUG=1 shows the stack)"}`, code: EXIT.failure, kind: "internal" };
}

/** The conversation of FILE, with a progress line for long input on a TTY. */
async function load(file, values, context) {
  const size = sizeOf(file);
  const progress = new Progress(process.stderr, Boolean(process.stderr.isTTY) && !values["no-progress"]);
  progress.long = size !== null && size >= LONG_INPUT_BYTES;
  context.progress = progress;
  const { bytes } = await readBytes(file, { onProgress: (f) => progress.update(`reading ${basename(file)}`, 0.4 * f) });
  const input = parseConversation(bytes, context.source);
  progress.long ||= input.bytes >= LONG_INPUT_BYTES;
  progress.update("parsed", 0.45);
  context.input = input;
  return { input, progress };
}

/** The model: the option, the request object's, or the default (`null`: none and none required). */
function modelOf(values, conversation, fallback) {
  if (values.model !== undefined) return values.model;
  if (conversation && !Array.isArray(conversation) && typeof conversation.model === "string") return conversation.model;
  if (conversation && !Array.isArray(conversation) && typeof conversation.model?.modelId === "string") return conversation.model.modelId;
  return fallback;
}

function print(text) {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

async function report(values, [file], context) {
  const { input, progress } = await load(file, values, context);
  const model = modelOf(values, input.value, DEFAULT_MODEL);
  const window = integer(values, "window");
  const top = integer(values, "top") ?? 10;
  if (values.session !== undefined && values.store === undefined) throw new UsageError("--session needs --store (the directory the session's state is in)");
  const store = values.store === undefined ? new stores.MemoryStore() : openStore(values.store, stores);
  progress.update("counting and planning", 0.6);
  const result = await analyze(input, { ck, model, window, store, sessionId: values.session ?? DEFAULT_SESSION, top, name: context.source });
  progress.clear();
  if (values.json) print(JSON.stringify(result, null, 2));
  else print(renderReport(result, paletteFor(process.stdout), process.stdout.isTTY ? process.stdout.columns || 100 : 100));
  return EXIT.ok;
}

async function prepare(values, [file], context) {
  const window = integer(values, "window");
  const timeout = integer(values, "summarizer-timeout") ?? 120;
  const summarizerInput = values["summarizer-input"] ?? "text";
  if (summarizerInput !== "text" && summarizerInput !== "json") throw new UsageError(`--summarizer-input: expected "text" or "json", found ${JSON.stringify(summarizerInput)}`);
  const command = values.summarizer ?? "heuristic";
  if (command.trim() === "") throw new UsageError('--summarizer: expected "heuristic" or a command, found ""');
  const { input, progress } = await load(file, values, context);
  let conversation = input.value;
  const model = modelOf(values, conversation, null);
  if (model === null) throw new UsageError("prepare needs --model (the model the conversation is sent to), e.g. --model gpt-4o");
  if (window === undefined && !ck.modelInfo(model).known) {
    throw new UsageError(`--model ${JSON.stringify(model)}: not in the model registry, so its window is unknown; give it with --window N (context-keeper models lists the known ones)`);
  }

  progress.update("checking", 0.5);
  const format = ck.detectFormat(conversation); // throws, naming the place, for bad input
  let repairs = [];
  const problems = ck.validateMessages(conversation);
  if (values.repair && problems.length > 0) {
    const repaired = ck.repairMessages(conversation);
    conversation = repaired.messages;
    repairs = repaired.report;
  } else if (problems.length > 0) {
    // NOTE: a request a provider would reject is never written: refuse, and say how to repair.
    const [first] = problems;
    throw new UsageError(`${problems.length} tool pairing problem${problems.length === 1 ? "" : "s"} a provider would reject, e.g. messages[${first.messageIndex}]: ${safeLine(first.message)}; nothing written: --repair repairs them (or fix the input)`);
  }
  const dir = values.store ?? DEFAULT_STORE;
  ensureStoreDir(dir);
  const store = new stores.FileSystemStore({ dir });
  const sessionId = values.session ?? DEFAULT_SESSION;
  const heuristic = command === "heuristic";
  const phases = { offloading: 0.6, flushing: 0.65, archiving: 0.7, summarizing: 0.75, applying: 0.9 };
  const keeper = new ck.ContextKeeper({
    model,
    ...(window === undefined ? {} : { contextWindow: window }),
    store,
    ...(heuristic ? {} : { summarize: commandSummarizer(command, { input: summarizerInput, timeoutMs: timeout * 1000 }) }),
    // NOTE: the command has its own timeout (which ends it); the keeper's is a backstop.
    timeoutMs: timeout * 1000 + 5_000,
    onProgress: ({ phase }) => progress.update(phase === "summarizing" && !heuristic ? `summarizing: ${command}` : phase, phases[phase] ?? 0.8),
  });
  let result;
  try {
    progress.update("preparing", 0.55);
    result = await keeper.prepare(conversation, { sessionId, ...(values.now === undefined ? {} : { now: values.now }) });
  } finally {
    keeper.free();
  }
  const { messages, report: keeperReport } = result;
  const remaining = values.repair ? ck.validateMessages(messages) : problems;
  progress.update("writing", 0.95);
  const text = serialize(messages);
  if (values.out !== undefined) writeFileSync(values.out, text);
  progress.clear();

  const report = { ...keeperReport, format: format ?? null, model, store: dir, sessionId, summarizer: heuristic ? "heuristic" : command, repairs, problems: remaining };
  if (values.json) {
    print(JSON.stringify(values.out === undefined ? { report, messages } : { report, out: values.out }));
  } else {
    if (values.out === undefined) process.stdout.write(text);
    const c = paletteFor(process.stderr);
    const lines = [renderPrepare({ report: keeperReport, model, store: dir, sessionId, summarizer: command, out: values.out }, c)];
    if (repairs.length > 0) lines.push(`  repaired tool pairing: ${repairs.length} edit${repairs.length === 1 ? "" : "s"} (${[...new Set(repairs.map((r) => r.action))].join(", ")})`);
    if (remaining.length > 0) {
      lines.push(`  ${c.yellow(`${remaining.length} tool pairing problem${remaining.length === 1 ? "" : "s"}`)} a provider would reject, e.g. messages[${remaining[0].messageIndex}]: ${safeLine(remaining[0].message)}${values.repair ? "" : " (--repair fixes what it can)"}`);
    }
    process.stderr.write(`${lines.join("\n")}\n`);
  }
  return keeperReport.managed && !keeperReport.fits ? EXIT.overBudget : EXIT.ok;
}

async function listCommand(values) {
  const store = openStore(values.store ?? DEFAULT_STORE, stores);
  const result = await list({ ck, store, sessionId: values.session });
  if (values.json) print(JSON.stringify({ store: values.store ?? DEFAULT_STORE, sessions: result.sessions.map(({ rendered: _r, ...s }) => s) }, null, 2));
  else print(safeText(renderList(result, paletteFor(process.stdout), values.store)));
  return EXIT.ok;
}

async function readCommand(values, [id]) {
  const store = openStore(values.store ?? DEFAULT_STORE, stores);
  const result = await read({ ck, stores, store, sessionId: values.session, id, offset: integer(values, "offset"), limit: integer(values, "limit") });
  if (values.json) {
    const { rendered: _r, ...rest } = result;
    print(JSON.stringify(rest, null, 2));
  } else print(safeText(renderRead(result)));
  return EXIT.ok;
}

async function grepCommand(values, [pattern]) {
  const store = openStore(values.store ?? DEFAULT_STORE, stores);
  const result = await grep({ ck, store, sessionId: values.session, pattern, id: values.id, ignoreCase: Boolean(values["ignore-case"]) });
  if (values.json) print(JSON.stringify({ matches: result.matches, sessions: result.sessions.map(({ rendered: _r, ...s }) => s) }, null, 2));
  else print(safeText(renderGrep(result, paletteFor(process.stdout))));
  return result.matches > 0 ? EXIT.ok : EXIT.noMatch;
}

function modelsCommand(values) {
  const all = ck.listModels();
  const provider = values.provider?.toLowerCase();
  const models = provider === undefined ? all : all.filter((m) => m.provider === provider);
  if (models.length === 0) {
    const known = [...new Set(all.map((m) => m.provider))].join(", ");
    throw new UsageError(`--provider: no model of ${JSON.stringify(values.provider)}; the providers are ${known}`);
  }
  if (values.json) {
    print(JSON.stringify(models, null, 2));
    return EXIT.ok;
  }
  const c = paletteFor(process.stdout);
  const columns = [
    { label: "model" }, { label: "provider" }, { label: "window", align: "right" }, { label: "max output", align: "right" },
    { label: "counted with" }, { label: "source (read on)" },
  ];
  const rows = models.map((m) => [m.name, m.provider, num(m.contextWindow), num(m.maxOutput), `${m.encoding}${m.exact ? "" : " (approx.)"}`, `${m.source} (${m.checked})`]);
  print(`${table(columns, rows, { paint: c.dim })}\n  ${models.length} models; "approx.": the model's tokenizer is not public, so counts are close, not exact`);
  return EXIT.ok;
}

const COMMANDS = { report, prepare, list: listCommand, read: readCommand, grep: grepCommand, models: modelsCommand };

async function main(argv) {
  const context = { command: null, source: null, input: null, progress: null, json: argv.includes("--json") };
  try {
    const [command, ...rest] = argv;
    if (command === undefined || command === "-h" || command === "--help" || command === "help") {
      print(USAGE.main);
      return command === undefined ? EXIT.badInput : EXIT.ok;
    }
    if (command === "--version" || command === "-v") {
      print(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version);
      return EXIT.ok;
    }
    if (!(command in COMMANDS)) throw new UsageError(`unknown command ${JSON.stringify(command)}; the commands are ${Object.keys(COMMANDS).join(", ")} (context-keeper --help)`);
    context.command = command;
    const { values, positionals } = parseArgs({ args: rest, options: OPTIONS[command], allowPositionals: true, strict: true });
    if (values.help) {
      print(USAGE[command]);
      return EXIT.ok;
    }
    const wanted = POSITIONALS[command];
    if (positionals.length < wanted.length) throw new UsageError(`missing ${wanted.slice(positionals.length).join(" ")}; see context-keeper ${command} --help`);
    if (positionals.length > wanted.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[wanted.length])}; see context-keeper ${command} --help`);
    if (wanted[0] === "FILE") context.source = positionals[0] === "-" ? "stdin" : positionals[0];
    return await COMMANDS[command](values, positionals, context);
  } catch (err) {
    context.progress?.clear();
    const { line, code, kind, path } = describeError(err, context);
    if (context.json) print(JSON.stringify({ error: { kind, path: path ?? null, message: line, exitCode: code } }));
    process.stderr.write(`context-keeper${context.command ? ` ${context.command}` : ""}: ${paletteFor(process.stderr).red("error")}: ${line}\n`);
    return code;
  }
}

// NOTE: output piped to a reader that stops early (`| head`) is not an error.
process.stdout.on("error", (err) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});
const code = await main(process.argv.slice(2));
// NOTE: exit once stdout and stderr are flushed, rather than when the event loop is empty: a
// store call that never settled (the keeper gave up on it after its timeout) must not keep
// the command running.
process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
