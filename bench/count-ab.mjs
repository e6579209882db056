// Exact counting of two builds of the package, side by side: countTokens MB/s of each on the
// bench corpora (bench/.cache, built by bench/run.mjs) with o200k_base and cl100k_base, and
// countMessages on the conversation (count cache cleared before every pass), in one process,
// the two builds taking turns over 15 passes after 3 untimed ones (and a first untimed pass
// over everything, so V8 has tiered both builds' code up before any timing): medians, and the
// fastest pass of each (which a loaded machine disturbs least). A shared
// machine's slow spells fall on both alike, which separate runs of bench/run.mjs do not
// guarantee. Each build's counts must agree.
//
//   node bench/count-ab.mjs BEFORE_PKG AFTER_PKG     # e.g. a copy of pkg/ and pkg/
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
const require = createRequire(import.meta.url);
const A = require(resolve(process.argv[2], "node", "context_keeper.js"));
const B = require(resolve(process.argv[3], "node", "context_keeper.js"));
const classes = ["english", "code", "json", "multilingual", "conversation"];
const texts = {};
let conversation = [];
for (const c of classes) {
  const j = JSON.parse(readFileSync(`bench/.cache/${c}.v6.json`, "utf8"));
  texts[c] = (j.messages ?? []).map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
  if (c === "conversation") conversation = j.chat;
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const PASSES = 15;
/** Times `run(ck)` for both builds, taking turns; returns [median ms A, median ms B]. */
function ab(run) {
  const ra = run(A), rb = run(B);
  if (ra !== rb) throw new Error(`the builds disagree: ${ra} vs ${rb}`);
  for (let i = 0; i < 2; i++) { run(A); run(B); }
  const time = (ck) => { const t = process.hrtime.bigint(); run(ck); return Number(process.hrtime.bigint() - t) / 1e6; };
  const a = [], b = [];
  for (let i = 0; i < PASSES; i++) {
    if (i % 2) { a.push(time(A)); b.push(time(B)); } else { b.push(time(B)); a.push(time(A)); }
  }
  return [med(a), med(b), Math.min(...a), Math.min(...b)];
}
for (const ck of [A, B]) {
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    for (const ts of Object.values(texts)) for (const x of ts) ck.countTokens(x, { encoding });
  }
}
console.log("| what | size | before MB/s | after MB/s | change | change (fastest passes) |\n| --- | ---: | ---: | ---: | ---: | ---: |");
const row = (what, bytes, [ma, mb, fa, fb]) => {
  const ra = bytes / 1e3 / ma, rb = bytes / 1e3 / mb;
  const pct = (x) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;
  console.log(`| ${what} | ${(bytes / 1024).toFixed(0)} KiB | ${ra.toFixed(1)} | ${rb.toFixed(1)} | ${pct(rb / ra - 1)} | ${pct(fa / fb - 1)} |`);
};
for (const encoding of ["o200k_base", "cl100k_base"]) {
  for (const [c, ts] of Object.entries(texts)) {
    const bytes = ts.reduce((n, t) => n + Buffer.byteLength(t), 0);
    row(`countTokens ${encoding} ${c}`, bytes, ab((ck) => { let s = 0; for (const x of ts) s += ck.countTokens(x, { encoding }); return s; }));
  }
}
const convBytes = Buffer.byteLength(JSON.stringify(conversation));
row("countMessages gpt-4o conversation", convBytes, ab((ck) => { ck.clearCountCache(); return ck.countMessages(conversation, { model: "gpt-4o" }).total; }));
