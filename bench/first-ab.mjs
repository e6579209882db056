// The first count after import of two builds of the package, side by side: in fresh Node
// processes, from before `import()` of an entry's Node module to the end of its first count of
// a short string (as bench/run.mjs's "first count"), for the main entry with each encoding and
// the one-encoding entries, and the main entry's browser build (the .wasm with both encodings
// built in, cl100k_base as a delta from o200k_base: engine/src/bpe/derive.rs; instantiated
// with initSync from the bytes already read); the builds' processes take turns, round by round.
// Prints the median and the fastest of each (ms).
//
//   node bench/first-ab.mjs BEFORE_PKG AFTER_PKG [ROUNDS=15]
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [before, after] = process.argv.slice(2, 4).map((dir) => resolve(dir));
const rounds = Number(process.argv[4] ?? 15);
const CASES = [
  ["context-keeper, o200k_base", "node.js", "o200k_base"],
  ["context-keeper, cl100k_base", "node.js", "cl100k_base"],
  ["context-keeper/o200k", "o200k/node.js", "o200k_base"],
  ["context-keeper/cl100k", "cl100k/node.js", "cl100k_base"],
  ["context-keeper browser build, o200k_base", "web/context_keeper.js", "o200k_base"],
  ["context-keeper browser build, cl100k_base", "web/context_keeper.js", "cl100k_base"],
];
const child = (url, encoding) => `
${url.endsWith("/web/context_keeper.js") ? `const bytes = (await import("node:fs")).readFileSync(new URL("context_keeper_bg.wasm", ${JSON.stringify(url)}));` : ""}
const t0 = performance.now();
const ck = await import(${JSON.stringify(url)});
${url.endsWith("/web/context_keeper.js") ? "ck.initSync({ module: bytes });" : ""}
const t1 = performance.now();
const n = ck.countTokens("The quick brown fox jumps over the lazy dog.", { encoding: ${JSON.stringify(encoding)} });
const t2 = performance.now();
console.log(JSON.stringify({ total: t2 - t0, load: t1 - t0, count: t2 - t1, n }));`;
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const f = (x) => x.toFixed(2);
console.log(`| entry | before: median (import + count) | after: median (import + count) | before fastest | after fastest |\n| --- | ---: | ---: | ---: | ---: |`);
for (const [name, file, encoding] of CASES) {
  const runs = { [before]: [], [after]: [] };
  for (let r = 0; r < rounds; r++) {
    for (const dir of r % 2 ? [after, before] : [before, after]) {
      const out = execFileSync(process.execPath, ["--input-type=module", "-e", child(pathToFileURL(resolve(dir, file)).href, encoding)], { encoding: "utf8" });
      runs[dir].push(JSON.parse(out));
    }
  }
  const cell = (rs) => `${f(med(rs.map((x) => x.total)))} (${f(med(rs.map((x) => x.load)))} + ${f(med(rs.map((x) => x.count)))})`;
  const fastest = (rs) => f(Math.min(...rs.map((x) => x.total)));
  console.log(`| ${name} | ${cell(runs[before])} | ${cell(runs[after])} | ${fastest(runs[before])} | ${fastest(runs[after])} |`);
}
