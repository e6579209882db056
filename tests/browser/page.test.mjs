// The demo page in headless Chromium, checked against the package's own numbers computed here in
// Node: the bundled agent session loads (gunzipped in the page) and its gauge is countMessages';
// the plan is keeper.plan's; the steps give what offloadMessages, pruneMessages and
// evictToolInputs give; prepare in one call gives keeper.prepare's count, offloads (listed from
// IndexedDB) and compaction marker, which opens into the archived messages; the offloads are
// still there after a reload; a gzipped file opens; a summary can come from an OpenAI-compatible
// endpoint (intercepted here) whose key is never stored; a conversation full of markup renders
// as text; a dropped JSON Lines file opens; the model picker is the registry's; and the page
// works from the keyboard alone. Screenshots at 1280 and 360 px go to $PAGE_SHOTS (default /tmp/context-keeper-page).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ContextKeeper, countMessages, evictToolInputs, listModels, listOffloaded, modelInfo, offloadMessages,
  pruneMessages, readArchive, readOffloaded,
} from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
import { openDemo } from "./chromium.mjs";
import { loadSession } from "../js/fixtures.mjs";

const SHOTS = process.env.PAGE_SHOTS ?? "/tmp/context-keeper-page";
const MODEL = "gpt-4o";
const SESSION = "demo-agent-openai"; // the page's session id for the OpenAI sample
const fmt = (n) => n.toLocaleString("en");
const num = (text) => Number(text.replace(/[^\d]/g, ""));

let demo, page, pageErrors;
const dialogs = [];
const openai = loadSession("openai");

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  demo = await openDemo();
  ({ page, pageErrors } = demo);
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    dialog.dismiss().catch(() => {});
  });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
});

after(async () => {
  await demo?.close();
});

/** Waits until the page has finished what it was doing (its buttons are enabled again). */
async function idle() {
  await page.waitForFunction(() => document.body.dataset.ready === "true" && !document.querySelector("#run-prepare").disabled, null, { timeout: 120_000 });
}

async function setWindow(value) {
  await page.fill("#window", value === undefined ? "" : String(value));
  const shown = fmt(value ?? modelInfo(MODEL).contextWindow);
  await page.waitForFunction((shown) => document.querySelector("[data-testid=gauge-window]").textContent === shown, shown, { timeout: 30_000 });
  await page.waitForTimeout(300); // the settings are applied after a short pause in typing
  await idle();
}

async function loadSample(id) {
  await page.click(`[data-sample=${id}]`);
  await page.waitForFunction((id) => document.querySelector(`[data-sample=${id}]`).getAttribute("aria-pressed") === "true", id);
  await idle();
}

const gauge = async () => num(await page.textContent("[data-testid=gauge-tokens]"));

/**
 * What the page's own IndexedDB holds for a session: its offloads as `listOffloaded` gives them,
 * and `readOffloaded` of the first with the given options (read in the page).
 */
async function pageOffloads(sessionId, read = {}) {
  return page.evaluate(
    async ({ sessionId, read }) => {
      const { listOffloaded, readOffloaded } = await import("context-keeper");
      const { IndexedDBStore } = await import("context-keeper/stores");
      const store = new IndexedDBStore({ name: "context-keeper-demo" });
      try {
        const { offloads } = await listOffloaded({ store, sessionId });
        const first = offloads.length ? await readOffloaded(offloads[0].id, { store, sessionId, ...read }) : null;
        return { offloads, first };
      } finally {
        await store.close();
      }
    },
    { sessionId, read },
  );
}

/** The marker's header and summary in a message list (Node side). */
function markerIn(messages) {
  for (const message of messages) {
    const text = typeof message.content === "string" ? message.content : JSON.stringify(message);
    const match = /<context-keeper-compaction (\{.*?\})>\n?([\s\S]*)/.exec(text);
    if (match) return { header: JSON.parse(match[1]), summary: match[2].trim() };
  }
  return null;
}

test("the page opens on the 300-turn agent session, its gauge the package's count", async () => {
  const count = countMessages(openai, { model: MODEL });
  assert.match(await page.textContent("[data-testid=source-status]"), /OpenAI Chat Completions, 644 messages/);
  assert.equal(await gauge(), count.total);
  assert.equal(num(await page.textContent("[data-testid=gauge-window]")), modelInfo(MODEL).contextWindow);
  assert.equal(await page.locator("#messages > li").count(), openai.length);
  // every row shows its own count, and the rows with the kinds a timeline needs are there
  const rows = await page.$$eval("#messages > li", (lis) => lis.map((li) => [li.dataset.kind, li.querySelector(".tok").textContent]));
  assert.deepEqual(rows.map(([, t]) => Number(t.replace(/[^\d]/g, ""))), count.perMessage);
  const kinds = new Set(rows.map(([k]) => k));
  for (const kind of ["system", "user", "tool-call", "tool-result", "image"]) assert.ok(kinds.has(kind), kind);
  assert.equal(await page.locator("#gauge-now .seg").count(), openai.length + 1, "a segment per message, and one for the framing");
  assert.match(await page.textContent("[data-testid=gauge-verdict]"), /^163%: over the window/);
  assert.deepEqual(pageErrors, []);
});

test("the model picker lists the package's registry, grouped by provider", async () => {
  const options = await page.$$eval("#model option", (list) => list.map((o) => [o.parentElement.label, o.value, o.textContent]));
  const models = listModels();
  assert.deepEqual(options.map(([, value]) => value).sort(), models.map((m) => m.name).sort());
  for (const [, value, label] of options) assert.equal(label, `${value} · ${fmt(modelInfo(value).contextWindow)}`);
  assert.equal(await page.inputValue("#model"), MODEL);
});

test("the plan is keeper.plan's", async () => {
  const keeper = new ContextKeeper({ model: MODEL, store: new MemoryStore() });
  const { report } = await keeper.plan(openai, { sessionId: SESSION });
  keeper.free();
  assert.equal(await page.textContent("[data-testid=plan-total]"), `${fmt(report.tokensBefore)} → ${fmt(report.tokensAfter)} tokens`);
  assert.equal(await page.getAttribute(".decision", "data-decision"), report.decision);
  const text = await page.textContent("[data-testid=plan]");
  assert.match(text, new RegExp(`${report.pruned.length} result\\(s\\)${fmt(report.saved.prune)}`));
  assert.match(text, new RegExp(`All ${report.offloaded.length + report.pruned.length + report.evicted.length} planned edits`));
});

test("step by step: offload, then prune and evict, give what the tier functions give", async () => {
  await setWindow(32_000);
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: MODEL, contextWindow: 32_000, store });
  const budget = keeper.budget;
  keeper.free();
  // the step offloads at the keeper's limit for this window, as prepare would
  assert.equal(budget.offloadAt, 4_000);
  assert.match(await page.textContent("[data-step=offload] .what"), /^Tool results over 4,000 tokens \(the keeper's limit/);
  const offloaded = await offloadMessages(openai, { store, sessionId: SESSION, model: MODEL, limitTokens: budget.offloadAt });
  assert.ok(offloaded.report.edits.length > 1, "more than the one result over the 20,000 default");
  const pruned = pruneMessages(offloaded.messages, { model: MODEL });
  const evicted = evictToolInputs(pruned.messages, { model: MODEL });

  await page.click("[data-run=offload]");
  await idle();
  assert.equal(await gauge(), countMessages(offloaded.messages, { model: MODEL }).total);
  assert.match(await page.textContent("[data-step=offload] .result"), new RegExp(`Done: ${offloaded.report.edits.length} result\\(s\\) offloaded to IndexedDB, ${fmt(offloaded.report.tokensSaved)} tokens saved`));
  // the offloaded message shows before and after
  const [edit] = offloaded.report.edits;
  const row = page.locator(`#messages > li[data-index="${edit.messageIndex}"]`);
  assert.equal(await row.getAttribute("class"), "msg s-edited");
  assert.equal(await row.locator(".tok").textContent(), `${fmt(countMessages(openai, { model: MODEL }).perMessage[edit.messageIndex])} → ${fmt(countMessages(offloaded.messages, { model: MODEL }).perMessage[edit.messageIndex])} tok`);
  await row.locator(".msg-head").click();
  assert.match(await row.locator(".compare").textContent(), /Before: [\d,]+ tokens.*After: [\d,]+ tokens.*\[offloaded tool output id=/s);

  await page.click("[data-run=prune]");
  await idle();
  assert.equal(await gauge(), countMessages(evicted.messages, { model: MODEL }).total);
  assert.equal(await page.locator("#messages > li.s-edited").count(), new Set([...pruned.report.edits, ...evicted.report.edits].map((e) => e.messageIndex)).size);
  const pruneText = await page.textContent("[data-step=prune] .result");
  const trims = pruned.report.edits.filter((e) => e.action === "softTrim").length;
  assert.match(pruneText, new RegExp(`^Done: ${pruned.report.edits.length - trims} old result\\(s\\) cleared to a one-line note and ${trims} cut to their head and tail \\(${fmt(pruned.report.tokensSaved)} tokens saved\\); ${evicted.report.edits.length} file write\\(s\\) evicted`));
  const afterPrune = countMessages(evicted.messages, { model: MODEL }).total;
  assert.ok(afterPrune > budget.compactAt, `${afterPrune} tokens after pruning: the sample still needs a compaction`);
  assert.match(await page.textContent("[data-step=compact] .result"), new RegExp(`^Next: due: ${fmt(afterPrune)} is over the compaction threshold \\(${fmt(budget.compactAt)}\\)`));

  await page.click("[data-run=compact]");
  await idle();
  assert.match(await page.textContent("[data-step=compact] .result"), /^Done: [\d,]+ messages \([\d,]+ tokens\) archived and replaced by a heuristic summary/);
  assert.equal(await page.locator("#messages > li.s-marker").count(), 1);
  const after = await gauge();
  assert.ok(after <= 24_000, `${after} tokens after compaction`);
  assert.equal(after, num((await page.textContent("[data-testid=apply-status]")).split("→")[1]));

  // screenshots of the result, at the top of the page
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, "desktop.png"), fullPage: true });
  await page.setViewportSize({ width: 360, height: 780 });
  await page.evaluate(() => window.scrollTo(0, 0));
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  await page.screenshot({ path: join(SHOTS, "phone.png"), fullPage: true });
  await page.screenshot({ path: join(SHOTS, "phone-top.png") });
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.ok(overflow <= 360, `the page is ${overflow} px wide at 360`);
});

test("prepare in one call: the gauge, the offloads listed from IndexedDB and the marker are keeper.prepare's", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: MODEL, contextWindow: 32_000, store });
  const { messages, report } = await keeper.prepare(openai, { sessionId: SESSION });
  keeper.free();
  assert.equal(report.decision, "compacted");

  await page.click("#run-prepare");
  await idle();
  assert.equal(await gauge(), report.tokensAfter);
  assert.match(await page.textContent("[data-testid=apply-status]"), new RegExp(`^prepare \\(compacted\\): ${fmt(report.tokensBefore)} → ${fmt(report.tokensAfter)} tokens`));
  assert.equal(await page.locator("#messages > li").count(), messages.length);

  // the page lists what its IndexedDB holds for the session: this prepare's offloads (stored
  // under the same ids as keeper.prepare's into a MemoryStore) beside the step-by-step run's
  const { offloads, first } = await pageOffloads(SESSION, { limit: 10, lineChars: 200 });
  const listed = await page.$$eval(`[data-session="${SESSION}"] [data-testid=offload]`, (items) => items.map((li) => [li.dataset.id, li.querySelector(".sizes").textContent]));
  assert.deepEqual(listed, offloads.map((o) => [o.id, `${fmt(o.tokens)} tokens · ${fmt(o.lines)} lines · ${fmt(o.bytes)} bytes`]));
  assert.ok(offloads.length > 0, "the step-by-step run's offloads are listed");
  const ids = new Set(offloads.map((o) => o.id));
  for (const { id } of (await listOffloaded({ store, sessionId: SESSION })).offloads) assert.ok(ids.has(id), `${id}, stored by keeper.prepare, is listed`);
  const preview = await page.textContent(`[data-id="${offloads[0].id}"] pre.preview`);
  assert.equal(preview, first.text);

  // the marker opens into the messages it archived, read back from IndexedDB
  const marker = markerIn(messages);
  const archived = await readArchive(marker.header.key, { store });
  const row = page.locator("#messages > li[data-kind=marker]");
  await row.locator(".msg-head").focus();
  await page.keyboard.press("Enter");
  assert.equal(await row.locator(".msg-head").getAttribute("aria-expanded"), "true");
  assert.equal(await row.locator(".part pre").first().textContent(), marker.summary.length > 4000 ? `${marker.summary.slice(0, 4000)}…` : marker.summary);
  await row.locator("[data-testid=open-archive]").click();
  await idle();
  const rows = row.locator("[data-testid=archived-messages] > li");
  assert.equal(await rows.count(), archived.messages.length);
  assert.equal(archived.messages.length, marker.header.archivedMessages);
  await rows.nth(0).locator(".msg-head").click();
  assert.equal(await rows.nth(0).locator("pre").first().textContent(), archived.messages[0].content.slice(0, 4000) + (archived.messages[0].content.length > 4000 ? "…" : ""));
  assert.deepEqual(pageErrors, []);
});

test("after a reload the offloads are still in IndexedDB, listed and readable", async () => {
  const store = new MemoryStore();
  const keeper = new ContextKeeper({ model: MODEL, contextWindow: 32_000, store });
  await keeper.prepare(openai, { sessionId: SESSION });
  keeper.free();
  const { offloads } = await pageOffloads(SESSION);
  assert.ok(offloads.length > 0);

  await page.reload();
  await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
  await idle();
  const stored = await page.evaluate(async (session) => {
    const { IndexedDBStore } = await import("context-keeper/stores");
    const db = new IndexedDBStore({ name: "context-keeper-demo" });
    try {
      return (await db.loadRange(["context-keeper", session, "offload"])).map((e) => e.key[3]);
    } finally {
      await db.close();
    }
  }, SESSION);
  assert.deepEqual(stored, offloads.map((o) => o.id));
  const listed = await page.$$eval(`[data-session="${SESSION}"] [data-testid=offload]`, (items) => items.map((li) => li.dataset.id));
  assert.deepEqual(listed, offloads.map((o) => o.id));

  const item = page.locator(`[data-id="${offloads[0].id}"]`);
  await item.locator("button").click();
  await idle();
  const read = (await pageOffloads(SESSION, { limit: 200, lineChars: 2000 })).first;
  assert.equal(await item.locator("[data-testid=offload-text]").textContent(), read.text);
  assert.match(await item.locator(".reader .hint").textContent(), new RegExp(`Lines 1–200 of ${fmt(read.totalLines)}`));
  await item.locator("button", { hasText: "Next 200 lines" }).click();
  await idle();
  const next = (await pageOffloads(SESSION, { offset: 201, limit: 200, lineChars: 2000 })).first;
  assert.equal(await item.locator("[data-testid=offload-text]").textContent(), next.text);

  // the compaction archive of prepare's run is listed too, and opens into its messages
  const [archive] = (await store.loadRange(["context-keeper", SESSION, "archive"])).map((e) => e.key).filter((k) => !k[3].endsWith(".md"));
  const listedArchive = page.locator(`[data-session="${SESSION}"] [data-testid=archive][data-key="${archive[3]}"]`);
  await listedArchive.locator("button").click();
  await idle();
  assert.equal(await listedArchive.locator("[data-testid=archived-messages] > li").count(), (await readArchive(archive, { store })).messages.length);
});

test("a gzipped file opens in the page, its format detected", async () => {
  const path = fileURLToPath(new URL("../data/sessions/agent-300.anthropic.json.gz", import.meta.url));
  await page.setInputFiles("#file", path);
  await page.waitForFunction(() => /Anthropic Messages/.test(document.querySelector("[data-testid=source-status]").textContent));
  await idle();
  const anthropic = loadSession("anthropic");
  assert.match(await page.textContent("[data-testid=source-status]"), /^Loaded agent-300\.anthropic\.json\.gz: Anthropic Messages, 627 messages\./);
  assert.equal(await gauge(), countMessages(anthropic, { model: MODEL }).total);
  assert.equal(await page.locator("#messages > li").count(), anthropic.messages.length);
});

test("a file dropped on the paste box opens: JSON Lines of AI SDK messages", async () => {
  const aisdk = loadSession("aisdk");
  const list = Array.isArray(aisdk) ? aisdk : aisdk.messages;
  const jsonl = list.map((m) => JSON.stringify(m)).join("\n");
  const dataTransfer = await page.evaluateHandle((text) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([text], "dropped.jsonl", { type: "application/jsonl" }));
    return transfer;
  }, jsonl);
  await page.dispatchEvent("#paste", "drop", { dataTransfer });
  await page.waitForFunction(() => /^Loaded dropped\.jsonl/.test(document.querySelector("[data-testid=source-status]").textContent));
  await idle();
  assert.match(await page.textContent("[data-testid=source-status]"), new RegExp(`^Loaded dropped\\.jsonl: AI SDK[^,]*, ${fmt(list.length)} messages\\.`));
  assert.equal(await gauge(), countMessages(list, { model: MODEL }).total);
  assert.equal(await page.locator("#messages > li").count(), list.length);
  assert.deepEqual(pageErrors, []);
});

test("a summary from an OpenAI-compatible endpoint; the key is sent with it and stored nowhere", async () => {
  const KEY = "sk-test-key-never-stored-5d1c";
  const SUMMARY = "SUMMARY FROM THE ENDPOINT: the agent fixed db_collation propagation.";
  const requests = [];
  await page.route("https://llm.example.test/**", async (route) => {
    const request = route.request();
    if (request.method() === "OPTIONS") {
      return route.fulfill({ status: 204, headers: { "access-control-allow-origin": "*", "access-control-allow-headers": "authorization, content-type", "access-control-allow-methods": "POST" } });
    }
    requests.push({ url: request.url(), authorization: (await request.allHeaders()).authorization, body: request.postDataJSON() });
    return route.fulfill({ status: 200, headers: { "access-control-allow-origin": "*" }, contentType: "application/json", body: JSON.stringify({ choices: [{ message: { role: "assistant", content: SUMMARY } }] }) });
  });
  try {
    await loadSample("agent-openai");
    await setWindow(32_000);
    await page.check("input[name=summarizer][value=endpoint]");
    await page.fill("#ep-url", "https://llm.example.test/v1/");
    await page.fill("#ep-model", "tiny-summarizer");
    await page.fill("#ep-key", KEY);
    await page.click("#run-prepare");
    await idle();
    assert.equal(requests.length, 1);
    assert.equal(requests[0].url, "https://llm.example.test/v1/chat/completions");
    assert.equal(requests[0].authorization, `Bearer ${KEY}`);
    assert.equal(requests[0].body.model, "tiny-summarizer");
    assert.deepEqual(requests[0].body.messages.map((m) => m.role), ["system", "user"]);
    const row = page.locator("#messages > li[data-kind=marker]");
    await row.locator(".msg-head").click();
    assert.match(await row.locator(".part pre").first().textContent(), new RegExp(`^${SUMMARY}`));

    const found = await page.evaluate(async (key) => {
      const { IndexedDBStore } = await import("context-keeper/stores");
      const db = new IndexedDBStore({ name: "context-keeper-demo" });
      const decoder = new TextDecoder();
      try {
        const values = (await db.loadRange([])).map((e) => decoder.decode(e.data));
        const storage = [localStorage, sessionStorage].flatMap((s) => Object.keys(s).map((k) => `${k}=${s.getItem(k)}`));
        return { indexedDB: values.some((v) => v.includes(key)), values: values.length, storage: storage.some((v) => v.includes(key)), cookie: document.cookie.includes(key) };
      } finally {
        await db.close();
      }
    }, KEY);
    assert.deepEqual(found, { indexedDB: false, values: found.values, storage: false, cookie: false });
    assert.ok(found.values > 3, "the store holds the offload, the archive and the state");
  } finally {
    await page.unroute("https://llm.example.test/**");
    await page.fill("#ep-key", "");
    await page.check("input[name=summarizer][value=heuristic]");
  }
});

test("markup in a conversation renders as text: no element, no script, no dialog", async () => {
  const img = `<img src=x onerror="window.__injected='img';alert('img')">`;
  const script = `<script>window.__injected='script';alert('script')</script>`;
  const svg = `<svg onload="window.__injected='svg'"></svg><iframe srcdoc="<script>parent.__injected='iframe'</script>"></iframe>`;
  const all = `${img} ${script} ${svg}`;
  const output = (lines) => Array.from({ length: lines }, (_, i) => `line ${i} ${all}`).join("\n");
  const conversation = [
    { role: "system", content: `System ${all}` },
    { role: "user", content: `Task: ${all}` },
  ];
  // Far more than the window: the keeper compacts, so the marker and its archive render too, and
  // the newest result, too big to fit alone, is offloaded, so an offload renders as well.
  for (let turn = 0; turn < 16; turn++) {
    conversation.push({ role: "assistant", content: `Thinking ${all} `.repeat(15), tool_calls: [{ id: `call_${turn}`, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `echo '${all}'` }) } }] });
    conversation.push({ role: "tool", tool_call_id: `call_${turn}`, content: output(120) });
  }
  conversation.push({ role: "user", content: [{ type: "text", text: `Next: ${all}` }] });
  conversation.push({ role: "assistant", content: `Done ${all}`, tool_calls: [{ id: "call_last", type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat '${all}'` }) } }] });
  conversation.push({ role: "tool", tool_call_id: "call_last", content: output(900) });

  await setWindow(16_000);
  await page.fill("#paste", JSON.stringify(conversation));
  await page.click("#read-paste");
  await page.waitForFunction(() => /pasted conversation/.test(document.querySelector("[data-testid=source-status]").textContent));
  await idle();
  await page.click("#run-prepare");
  await idle();
  assert.match(await page.textContent("[data-testid=apply-status]"), /Compaction: compacted/);

  // open every message, the marker's archive and every archived message, and the offload
  for (const head of await page.locator("#messages > li > .msg-head").all()) await head.click();
  await page.locator("[data-testid=open-archive]").click();
  await idle();
  for (const head of await page.locator("[data-testid=archived-messages] .msg-head").all()) await head.click();
  const session = await page.$eval("[data-session^=pasted-]", (s) => s.dataset.session);
  await page.locator(`[data-session="${session}"] [data-testid=offload] button`).first().click();
  await idle();
  await page.waitForTimeout(300);

  const dom = await page.evaluate(() => ({
    injected: window.__injected ?? null,
    elements: document.querySelectorAll("img, svg, iframe").length,
    scripts: [...document.scripts].map((s) => s.src || s.type),
    literal: document.body.textContent.includes(`<img src=x onerror="window.__injected='img';alert('img')">`),
    scriptText: document.body.textContent.includes("<script>window.__injected='script'"),
  }));
  assert.deepEqual(dialogs, []);
  assert.deepEqual(dom, { injected: null, elements: 0, scripts: ["importmap", new URL("main.js", page.url()).href], literal: true, scriptText: true });
  assert.deepEqual(pageErrors, []);
  await setWindow(undefined);
});

test("the package imports in a page as an ES module with top-level await", async () => {
  const result = await page.evaluate(async () => {
    const mod = await import("context-keeper");
    return [mod.countTokens("hello world"), mod.countTokens("hello world", { model: "gpt-4" })];
  });
  assert.deepEqual(result, [2, 2]);
  assert.deepEqual(pageErrors, []);
});

test("keyboard only: Tab reaches a sample, a step and prepare, and Enter or Space runs each", async () => {
  /** Presses Tab until `selector` has the focus (at most `limit` times); the focus is visible. */
  async function tabTo(selector, limit = 80) {
    for (let i = 0; i < limit; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate((s) => document.activeElement?.matches(s), selector)) {
        assert.ok(await page.evaluate(() => document.activeElement.matches(":focus-visible")), `${selector}: focus visible`);
        return;
      }
    }
    assert.fail(`${selector}: not reached with ${limit} presses of Tab`);
  }
  // a click on the title (not focusable) starts the Tab order at the top of the page
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.click("h1");
  await tabTo("[data-sample=chat]", 10);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.querySelector("[data-sample=chat]").getAttribute("aria-pressed") === "true");
  await idle();
  await tabTo("[data-run=offload]");
  await page.keyboard.press("Enter");
  await idle();
  assert.match(await page.textContent("[data-step=offload] .result"), /^Done: 0 result\(s\) offloaded/);
  await tabTo("#run-prepare");
  await page.keyboard.press("Space");
  await idle();
  assert.match(await page.textContent("[data-testid=apply-status]"), /^prepare \(under\): /);
  // the first message row opens from the keyboard too
  await tabTo("#messages > li:first-child .msg-head");
  await page.keyboard.press("Enter");
  assert.equal(await page.getAttribute("#messages > li:first-child .msg-head", "aria-expanded"), "true");
  assert.deepEqual(pageErrors, []);
});
