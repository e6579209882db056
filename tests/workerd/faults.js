// The keeper's fault campaign inside workerd, for tests/workerd/faults.test.mjs: one Durable
// Object per session keeps a ContextKeeper in memory across requests over a FaultyStore that
// wraps DurableObjectStore on the object's own storage, and prepares the conversation each
// request brings (the test generates them with tests/js/fault-campaign.mjs and sends the output
// back, or the full history). Every prepare passes the campaign's checks here, against the
// storage itself: valid, within the budget or a reason, every pointer and marker read back,
// nothing lost, the first request kept. A "restart" request aborts the object (`ctx.abort()`):
// the next request gets a new instance, with nothing in memory but the storage. Routes (POST,
// a JSON body): /faults/turn?session=S and /faults/restart?session=S. GET / answers "ready".
import { DurableObject } from "cloudflare:workers";
import * as ck from "context-keeper";
import { ContextKeeper, ContextKeeperError } from "context-keeper";
import { DurableObjectStore } from "context-keeper/stores";
import { FaultyStore } from "context-keeper/testing";
import { NOW, checkPrepared, faults, flusher, rng, summarizer } from "../js/fault-campaign.mjs";

const json = (value) => Response.json(value);

export class KeeperFaults extends DurableObject {
  /** A new one after every abort. */
  instance = crypto.randomUUID();
  /** The session's keeper, made on the first request this instance gets. */
  session = null;

  async fetch(request) {
    const action = new URL(request.url).pathname.split("/").pop();
    if (action === "restart") {
      // NOTE: abort throws, here and in the caller's stub; the object's next request gets a new instance.
      this.ctx.abort("restarted by the fault campaign");
    }
    const { sessionId, dialect, input, seed, options } = await request.json();
    const fresh = this.session === null;
    if (fresh) {
      const real = new DurableObjectStore(this.ctx.storage, options.chunked ? { maxValueBytes: 16 * 1024 } : {});
      const session = { real, r: rng(1), stats: { summaries: 0 }, cache: { offloads: new Map(), archives: new Map() } };
      // the schedule and the callbacks draw from `session.r`, seeded again by each request
      const draw = { next: () => session.r.next(), int: (n) => session.r.int(n), pick: (l) => session.r.pick(l), chance: (p) => session.r.chance(p) };
      session.keeper = new ContextKeeper({
        contextWindow: options.contextWindow,
        ...(options.model === undefined ? {} : { model: options.model }),
        ...(dialect === "anthropic" ? { format: "anthropic" } : {}),
        store: new FaultyStore(real, faults(draw)),
        summarize: options.summarize ? summarizer(draw, session.stats) : undefined,
        flush: options.flush ? flusher(draw) : undefined,
        timeoutMs: 20,
        storeTimeoutMs: 50,
      });
      this.session = session;
    }
    const { keeper, real, cache } = this.session;
    this.session.r = rng(seed);
    const frozen = JSON.stringify(input);
    const base = { instance: this.instance, fresh };
    let prepared;
    try {
      prepared = await keeper.prepare(input, { sessionId, now: NOW });
    } catch (err) {
      if (err instanceof ContextKeeperError && (err.kind === "store" || err.kind === "timeout")) return json({ ...base, rejected: err.kind });
      return json({ ...base, error: `a rejection that is not a store's ContextKeeperError: ${err?.stack ?? err}` });
    }
    const { messages, report } = prepared;
    let read;
    try {
      read = await checkPrepared({ ck, input, frozen, messages, report, dialect, real, sessionId, budget: keeper.budget, window: options.contextWindow, model: options.model, cache });
    } catch (err) {
      return json({ ...base, checkFailed: err.message, report });
    }
    return json({
      ...base,
      messages,
      read,
      report: {
        decision: report.decision,
        offloaded: report.offloaded.length,
        failures: report.failures.length,
        compaction: report.compaction?.outcome ?? null,
        firstRequestSummarized: report.compaction?.firstRequestSummarized ?? false,
      },
    });
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, first, action] = url.pathname.split("/");
    if (first !== "faults") return new Response("ready");
    const session = url.searchParams.get("session");
    const stub = env.KEEPER_FAULTS.get(env.KEEPER_FAULTS.idFromName(session));
    try {
      const res = await stub.fetch(`https://faults/${action}`, { method: "POST", body: await request.text() });
      return new Response(res.body, res);
    } catch (err) {
      if (action === "restart") return json({ restarted: true, reason: err.message });
      return new Response(`${err.name}: ${err.message}\n${err.stack}`, { status: 500 });
    }
  },
};
