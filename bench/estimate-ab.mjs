// estimateTokens of two builds of the package, side by side: MB/s of each on the bench corpora
// (bench/.cache, built by bench/run.mjs) and the held-out agent strings (bench/.cache, written
// by `node bench/agent.mjs --split=all --dump=bench/.cache`), in one process, the two builds
// taking turns over 21 passes after 5 untimed ones (medians). A shared machine's slow spells
// fall on both alike, which separate runs of bench/run.mjs do not guarantee.
//
//   node bench/estimate-ab.mjs BEFORE_PKG AFTER_PKG     # e.g. a copy of pkg/ and pkg/
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
const require = createRequire(import.meta.url);
const A = require(resolve(process.argv[2], "node", "context_keeper.js"));
const B = require(resolve(process.argv[3], "node", "context_keeper.js"));
const classes = ["english", "code", "json", "multilingual", "conversation"];
const texts = {};
for (const c of classes) {
  const j = JSON.parse(readFileSync(`bench/.cache/${c}.v6.json`, "utf8"));
  texts[c] = (j.messages ?? []).map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
}
if (existsSync("bench/.cache/agent-held-out.json")) {
  texts.agent = JSON.parse(readFileSync("bench/.cache/agent-held-out.json", "utf8")).messages;
}
const time = (ck, ts) => { const t = process.hrtime.bigint(); let s = 0; for (const x of ts) s += ck.estimateTokens(x); return [Number(process.hrtime.bigint() - t) / 1e6, s]; };
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
console.log("| class | size | before MB/s | after MB/s | change |\n| --- | ---: | ---: | ---: | ---: |");
for (const [c, ts] of Object.entries(texts)) {
  const bytes = ts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  for (let i = 0; i < 5; i++) { time(A, ts); time(B, ts); }
  const a = [], b = [];
  for (let i = 0; i < 21; i++) { if (i % 2) { a.push(time(A, ts)[0]); b.push(time(B, ts)[0]); } else { b.push(time(B, ts)[0]); a.push(time(A, ts)[0]); } }
  const ma = bytes / 1e3 / med(a), mb = bytes / 1e3 / med(b);
  console.log(`| ${c} | ${(bytes / 1024).toFixed(0)} KiB | ${ma.toFixed(0)} | ${mb.toFixed(0)} | ${((mb / ma - 1) * 100).toFixed(1)}% |`);
}
