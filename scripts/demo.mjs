#!/usr/bin/env node
// The main job's second half (scripts/demo runs the command line on the 300-turn session first):
// token counts of a bundled sample conversation, then the demo page (www/) served on 127.0.0.1
// until Ctrl-C.
//
//   node scripts/demo.mjs [conversation.json] [--port N] [--no-serve]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { countMessages, countTokens, detectFormat, estimateTokens, modelInfo, validateMessages } from "context-keeper";
import { serve } from "./serve.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const flag = (name) => args.indexOf(name);
const port = flag("--port") >= 0 ? Number(args[flag("--port") + 1]) : 8787;
const file = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--port")
  ?? join(root, "tests", "data", "sample-conversation.json");

/** The text of an OpenAI Chat Completions message that a model reads, part by part. */
function textsOf(message) {
  const parts = [];
  if (typeof message.content === "string") parts.push(message.content);
  else if (Array.isArray(message.content)) {
    for (const part of message.content) if (typeof part?.text === "string") parts.push(part.text);
  }
  for (const call of message.tool_calls ?? []) {
    parts.push(call.function?.name ?? "", call.function?.arguments ?? "");
  }
  return parts;
}

const conversation = JSON.parse(readFileSync(file, "utf8"));
const list = Array.isArray(conversation) ? conversation : conversation.messages;
const gpt4o = countMessages(conversation, { model: "gpt-4o" });
const gpt4 = countMessages(conversation, { model: "gpt-4" });
const claude = countMessages(conversation, { model: "claude-sonnet-4-5" });
const rows = list.map((message, i) => ({
  role: message.role,
  kind: message.tool_calls ? `${message.tool_calls.length} tool call(s)` : message.role === "tool" ? "tool result" : "text",
  "gpt-4o (o200k)": gpt4o.perMessage[i],
  "gpt-4 (cl100k)": gpt4.perMessage[i],
  "estimate (text)": textsOf(message).reduce((n, t) => n + estimateTokens(t), 0),
}));

const name = file.startsWith(root) ? file.slice(root.length + 1) : file;
const problems = validateMessages(conversation);
console.log(`\ncontext-keeper: ${name}, ${list.length} messages, format ${detectFormat(conversation) ?? "plain (read as openai)"}, ${problems.length} problem(s)\n`);
console.table(rows);
for (const [label, count] of [["gpt-4o", gpt4o], ["gpt-4", gpt4], ["claude-sonnet-4-5", claude]]) {
  const window = modelInfo(label).contextWindow;
  const kinds = Object.entries(count.byKind).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(", ");
  console.log(`${label.padEnd(18)} ${String(count.total).padStart(5)} tokens${count.exact ? " (exact)" : " (approximate)"} = ${kinds}; ${((100 * count.total) / window).toFixed(2)}% of its ${window.toLocaleString("en")}-token window`);
}
console.log(`countTokens("hello world", { model: "gpt-4o" }) = ${countTokens("hello world", { model: "gpt-4o" })}\n`);

if (flag("--no-serve") < 0) {
  const { url } = await serve({ port });
  console.log(`demo page: ${url}  (Ctrl-C to stop)`);
}
