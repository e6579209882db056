// The README's Cloudflare Worker, as printed: its code block and its wrangler.jsonc are taken
// from README.md, written into a project of their own and served by wrangler dev (a real
// workerd, SQLite-backed Durable Objects), and a conversation grows past 2 MB through it, every
// turn's prepare within the window (issue #42, item 4: the example crashed on its first
// request), and on across a restart of workerd with the same persisted storage. NOTE: past
// 2 MB Cloudflare refuses one value of a SQLite-backed object (SQLITE_TOOBIG), which is why
// the example keeps its history with saveJSON through
// DurableObjectStore (chunked); the local workerd here took a 2.6 MB `storage.put` too, so this
// test shows the example works, not that `put` would fail.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startWrangler } from "./wrangler.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const readme = readFileSync(join(root, "README.md"), "utf8");

/** The body of the first fenced block of `lang` holding `marker`. */
function block(lang, marker) {
  // (a block inside a list item is indented: its fences too)
  for (const match of readme.matchAll(/^ *```(\w+)\n([\s\S]*?)\n *```/gm)) {
    if (match[1] === lang && match[2].includes(marker)) return match[2];
  }
  throw new Error(`README.md has no ${lang} block holding ${JSON.stringify(marker)}`);
}

const worker = block("js", "export class Session extends DurableObject");
// the smallest Worker the README shows (Runtimes, Cloudflare Workers), mounted at /count
const counter = block("js", "tokens: countTokens(await request.text()");
const config = block("jsonc", '"durable_objects"');

const dir = mkdtempSync(join(tmpdir(), "ck-readme-worker-"));
const persistTo = mkdtempSync(join(tmpdir(), "ck-readme-worker-state-"));
let wrangler;

before(async () => {
  mkdirSync(join(dir, "src"));
  // NOTE: the README's module as printed; the project's `main` (src/index.js) adds only the
  // readiness answer the test harness waits for (GET ?text=ready) in front of it.
  writeFileSync(join(dir, "src", "readme.js"), worker);
  writeFileSync(join(dir, "src", "counter.js"), counter.replace(/^ {2}/gm, ""));
  writeFileSync(join(dir, "src", "index.js"), [
    'import readme from "./readme.js";',
    'import counter from "./counter.js";',
    'export * from "./readme.js";',
    "export default {",
    "  fetch(request, env) {",
    "    const url = new URL(request.url);",
    '    if (url.searchParams.has("text")) return new Response("ready");',
    '    return url.pathname === "/count" ? counter.fetch(request) : readme.fetch(request, env);',
    "  },",
    "};",
    "",
  ].join("\n"));
  writeFileSync(join(dir, "wrangler.jsonc"), config);
  // the package as a project that installed it would resolve it
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  wrangler = await startWrangler({ config: join(dir, "wrangler.jsonc"), persistTo });
});

after(async () => {
  await wrangler?.stop();
  rmSync(persistTo, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

test("the README's Worker, as printed: a session past 2 MB of history is stored and every turn fits", async () => {
  // about 330 KB a turn (a pasted log): eight turns pass 2 MB
  const paste = (t) => Array.from({ length: 6_000 }, (_, i) => `turn ${t} line ${i}: status=ok latency_ms=${(i * 37) % 997}`).join("\n");
  let stored = 0;
  for (let t = 0; t < 8; t++) {
    const content = `Here is log ${t}; what failed?\n${paste(t)}`;
    stored += content.length;
    const res = await fetch(`${wrangler.base}chat/readme-session`, { method: "POST", body: JSON.stringify({ message: { role: "user", content } }) });
    const text = await res.text();
    assert.equal(res.status, 200, `turn ${t} (${stored} characters of history): ${text.slice(0, 500)}\n${wrangler.output().slice(-2000)}`);
    const { messages, decision, tokens } = JSON.parse(text);
    assert.ok(Array.isArray(messages) && messages.length >= 2, `turn ${t}`);
    assert.equal(messages.at(-1).content, content, `turn ${t}: the newest message reaches the model whole`);
    assert.ok(tokens <= 200_000, `turn ${t}: ${tokens} tokens`);
    assert.equal(typeof decision, "string");
  }
  assert.ok(stored > 2_000_000, `${stored} characters of history`);
  // a GET is not the route
  assert.equal((await fetch(`${wrangler.base}chat/readme-session`)).status, 400);
});

test("the README's smallest Worker, as printed, counts a request's text", async () => {
  const res = await fetch(`${wrangler.base}count`, { method: "POST", body: "hello world" });
  assert.equal(res.status, 200, await res.clone().text());
  assert.deepEqual(await res.json(), { tokens: 2 });
});

test("the README's Worker, restarted: the session's history and state are still there", async () => {
  // the same project and the same persisted storage, a new workerd
  await wrangler.stop();
  wrangler = await startWrangler({ config: join(dir, "wrangler.jsonc"), persistTo });
  const content = "After the restart: which log had the slowest line?";
  const res = await fetch(`${wrangler.base}chat/readme-session`, { method: "POST", body: JSON.stringify({ message: { role: "user", content } }) });
  const text = await res.text();
  assert.equal(res.status, 200, `${text.slice(0, 500)}\n${wrangler.output().slice(-2000)}`);
  const { messages, tokens } = JSON.parse(text);
  // a history lost in the restart would be the system prompt and this message (about 30 tokens)
  assert.ok(messages.length > 2, `${messages.length} messages after the restart`);
  assert.ok(tokens > 50_000 && tokens <= 200_000, `${tokens} tokens after the restart`);
  assert.equal(messages.at(-1).content, content);
  assert.ok(messages.some((m) => typeof m.content === "string" && m.content.includes("Here is log 7")), "the last turn before the restart is in what the model sees");
});
