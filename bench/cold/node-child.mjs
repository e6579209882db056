// One sample of bench/cold.mjs in Node, in a fresh process: imports an entry of the package (or a
// peer), makes its first call, the same call again, then the warm figure; prints one JSON line.
//
//   node bench/cold/node-child.mjs '<task JSON>'
//   task: { entry, url?, kind, storesUrl, input?, warm }
//     entry  "context-keeper", "context-keeper/o200k", ... (url: the entry's Node module, from
//            the package's "exports") or a peer of bench/peers.mjs ("gpt-tokenizer", "js-tiktoken")
//     kind   a case of bench/cold/cases.js: countTokens, estimateTokens, small, compact
//     input  a JSON file holding the compaction case's messages
//     idleMs with a number: wait that long between the import and the first call (a timer: at
//            least one turn of the event loop), as a server that imports the package when it
//            starts and serves its first request later; the wait is not in either figure
//
// Before the clock starts: this module, cases.js, the stores module (MemoryStore) and the
// conversation, read and parsed. Timed: `import()` of the entry (for a peer, its loader in
// bench/peers.mjs: the import and building its encoder, as bench/run.mjs's "first count"), then
// the first call. The clock is performance.now().
import { readFileSync } from "node:fs";
import { firstAndWarm } from "./cases.js";

const task = JSON.parse(process.argv[2]);
const { MemoryStore } = await import(task.storesUrl);
const compactMessages = task.input ? JSON.parse(readFileSync(task.input, "utf8")) : null;
const peer = task.url ? null : (await import("../peers.mjs")).loadPeer;
const now = () => performance.now();

const t0 = now();
const ck = peer
  ? await peer(task.entry, "o200k_base").then((counter) => ({ countTokens: (text) => counter.count(text) }))
  : await import(task.url);
const t1 = now();
if (task.idleMs !== undefined) await new Promise((resolve) => setTimeout(resolve, task.idleMs));
const sample = await firstAndWarm(ck, MemoryStore, task.kind, compactMessages, now, task.warm);
console.log(JSON.stringify({ importMs: t1 - t0, ...sample }));
