#!/usr/bin/env node
// The main job for now: token counts of a bundled sample conversation, then the live-count page
// served on 127.0.0.1 until Ctrl-C.
//
//   node scripts/demo.mjs [conversation.json] [--port N] [--no-serve]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { countTokens, estimateTokens } from "context-keeper";
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
const rows = conversation.map((message) => {
  const texts = textsOf(message);
  const sum = (f) => texts.reduce((n, t) => n + f(t), 0);
  return {
    role: message.role,
    kind: message.tool_calls ? `${message.tool_calls.length} tool call(s)` : message.role === "tool" ? "tool result" : "text",
    o200k_base: sum((t) => countTokens(t)),
    cl100k_base: sum((t) => countTokens(t, { encoding: "cl100k_base" })),
    estimate: sum(estimateTokens),
  };
});
const total = (key) => rows.reduce((n, r) => n + r[key], 0);

console.log(`\ncontext-keeper: content tokens of ${file.slice(root.length + 1) || file} (${conversation.length} messages)\n`);
console.table(rows);
console.log(`total: o200k_base ${total("o200k_base")}, cl100k_base ${total("cl100k_base")}, estimate ${total("estimate")}`);
console.log(`gpt-4o counts with o200k_base: ${countTokens("hello world", { model: "gpt-4o" })} tokens for "hello world"\n`);

if (flag("--no-serve") < 0) {
  const { url } = await serve({ port });
  console.log(`live-count page: ${url}  (Ctrl-C to stop)`);
}
