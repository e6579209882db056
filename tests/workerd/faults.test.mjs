// The keeper's fault campaign inside a real workerd (wrangler dev), in tests/workerd/faults.js:
// sessions generated here with tests/js/fault-campaign.mjs, one Durable Object each, whose
// keeper prepares every turn over a FaultyStore wrapping DurableObjectStore on the object's
// storage (half the sessions chunked at 16 KiB), and checks the prepare there. Between
// requests the object is often restarted (`ctx.abort()`: the next request gets a new
// instance, its keeper made again over the same storage), and once, halfway, wrangler itself
// is (the storage persisted to a directory). Half the sessions send the previous output plus
// the new turn (AI SDK 7), half the full history (AI SDK 5 and 6).
// KEEPER_FAULT_WORKERD_SESSIONS sets the number of sessions (default 50, about 300 requests;
// 1,000 sessions took 87 s and 10,000 sessions, 68,269 requests, 18 minutes at nice 19 on two
// cores), KEEPER_FAULT_SEED the seed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startWrangler } from "./wrangler.mjs";
import { append, head, nextInput, rng, sessionOptions, step } from "../js/fault-campaign.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const SESSIONS = Number(process.env.KEEPER_FAULT_WORKERD_SESSIONS ?? 50);
const SEED = Number(process.env.KEEPER_FAULT_SEED ?? 23);

const dir = mkdtempSync(join(tmpdir(), "ck-wrangler-faults-config-"));
const config = join(dir, "wrangler.toml");
writeFileSync(config, `name = "ck-faults-test"
main = ${JSON.stringify(join(here, "faults.js"))}
compatibility_date = "2026-04-01"
send_metrics = false

[[durable_objects.bindings]]
name = "KEEPER_FAULTS"
class_name = "KeeperFaults"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["KeeperFaults"]
`);
const persistTo = mkdtempSync(join(tmpdir(), "ck-wrangler-faults-"));

let wrangler;

before(async () => {
  wrangler = await startWrangler({ config, persistTo });
});

after(async () => {
  await wrangler?.stop();
  rmSync(persistTo, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

async function post(path, body) {
  const res = await fetch(`${wrangler.base}${path}`, { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${text.slice(0, 2000)}\n${wrangler.output().slice(-3000)}`);
  return JSON.parse(text);
}

test(`${SESSIONS} faulty sessions in Durable Objects restarted between requests: valid, in budget or a reason, nothing lost, the task kept`, async () => {
  const r = rng(SEED);
  const big = rng(SEED * 7919 + 1);
  const tally = { sessions: 0, requests: 0, prepares: 0, rejected: 0, afterRejection: 0, restarts: 0, wranglerRestarts: 0, decisions: {}, offloaded: 0, failures: 0, pointersRead: 0, archivesRead: 0, firstRequestSummarized: 0 };
  const started = performance.now();
  for (let n = 1; n <= SESSIONS; n++) {
    tally.sessions++;
    if (n === Math.ceil(SESSIONS / 2) + 1) {
      // once: the whole runtime, every object with it
      await wrangler.stop();
      wrangler = await startWrangler({ config, persistTo });
      tally.wranglerRestarts++;
    }
    const dialect = r.pick(["openai", "anthropic", "aisdk", "ui"]);
    const sessionId = r.pick(["s", "../../x", "__proto__", "é"]) + n;
    const session = sessionOptions(r);
    const options = { ...session, chunked: r.chance(0.5) };
    const chain = r.chance(0.5);
    const history = head(r, dialect, session.contextWindow, big);
    let last = null;
    let instance = null;
    let rejected = false;
    const turns = 2 + r.int(8);
    for (let k = 1; k <= turns; k++) {
      const added = step(r, dialect, k);
      append(history, dialect, added);
      const input = nextInput(history, last, chain, dialect, added);
      const restart = k > 1 && r.chance(0.3);
      if (restart) {
        const restarted = await post(`faults/restart?session=${encodeURIComponent(sessionId)}`, {});
        tally.requests++;
        assert.equal(restarted.restarted, true, JSON.stringify(restarted));
        tally.restarts++;
      }
      const res = await post(`faults/turn?session=${encodeURIComponent(sessionId)}`, { sessionId, dialect, input, seed: r.int(2 ** 31), options });
      tally.requests++;
      tally.prepares++;
      const where = `session ${n} (${dialect}, seed ${SEED}), turn ${k}`;
      assert.equal(res.error, undefined, `${where}: ${res.error}`);
      assert.equal(res.checkFailed, undefined, `${where}: ${res.checkFailed}\n${JSON.stringify(res.report)?.slice(0, 2000)}`);
      // a restart gives a new instance and a new keeper; without one, the object kept its keeper
      if (k === 1 || restart) assert.equal(res.fresh, true, `${where}: a keeper made before the restart answered`);
      else assert.equal(res.fresh, false, `${where}: the object lost its keeper with no restart`);
      if (restart) assert.notEqual(res.instance, instance, `${where}: the same instance after a restart`);
      instance = res.instance;
      if (res.rejected !== undefined) {
        tally.rejected++;
        rejected = true;
        continue;
      }
      if (rejected) tally.afterRejection++;
      rejected = false;
      tally.decisions[res.report.decision] = (tally.decisions[res.report.decision] ?? 0) + 1;
      tally.offloaded += res.report.offloaded;
      tally.failures += res.report.failures;
      tally.pointersRead += res.read.pointers;
      tally.archivesRead += res.read.archives;
      if (res.report.firstRequestSummarized) tally.firstRequestSummarized++;
      last = res.messages;
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`keeper-faults (workerd): ${JSON.stringify({ ...tally, seed: SEED, seconds })}`);
  assert.ok(tally.restarts > 0 && tally.wranglerRestarts === 1);
  assert.ok(tally.rejected === 0 || tally.afterRejection > 0, "a keeper whose prepare rejected went on");
  assert.ok(tally.decisions.compacted > 0 && tally.offloaded > 0 && tally.failures > 0, "the campaign reached compaction, offloads and failures");
  assert.ok(tally.pointersRead > 0 && tally.archivesRead > 0, "offloads and archives were read back");
});
