// The Worker of bench/cold.mjs's workerd samples. bench/cold.mjs writes one small entry module
// per package entry (and one without the package, the baseline) that imports the stores and
// this module, then ./clock.js (which reads the clock), then the package's entry, then reads the
// clock again, so the span is the entry's module evaluation: instantiating its .wasm (compiled
// by workerd when it loaded the Worker, before any JavaScript ran) and its JavaScript. Routes:
//   GET  /ready                     answers at once, without touching the package; gives the two
//                                   clock readings of the module evaluation
//   GET  /clock                     whether Date.now() advances during synchronous work here
//   POST /first?kind=K              the first call of case K (bench/cold/cases.js) alone, so the
//                                   request's round trip holds nothing else
//   POST /warm?kind=K&warm=JSON     then the same call again (the second call) and the warm figure
//   (the body of both: the compaction case's messages)
// The clock is Date.now() (whole milliseconds: performance.now() gives the same in workerd).
import { caller, timeOnce, warm } from "./cases.js";

const now = () => Date.now();

/** Spins until Date.now() changes (or gives up): whether the clock runs during synchronous work. */
function clockAdvances() {
  const start = Date.now();
  for (let i = 0; i < 200_000_000; i++) if (Date.now() !== start) return true;
  return false;
}

export function handler(ck, MemoryStore, evaluation) {
  return {
    async fetch(request) {
      const url = new URL(request.url);
      if (url.pathname === "/ready") return Response.json({ evaluation });
      if (url.pathname === "/clock") return Response.json({ advances: clockAdvances() });
      if (url.pathname !== "/first" && url.pathname !== "/warm") return new Response("not found", { status: 404 });
      const kind = url.searchParams.get("kind");
      const body = await request.text();
      const messages = body ? JSON.parse(body) : null;
      // the baseline Worker, without the package: the same request, reading the same body, does nothing
      if (ck === null) return Response.json({ ms: 0, result: messages?.length ?? null });
      try {
        const call = caller(ck, MemoryStore, kind, messages);
        if (url.pathname === "/first") return Response.json(await timeOnce(call, now));
        const second = await timeOnce(call, now);
        const warmMs = await warm(call, now, JSON.parse(url.searchParams.get("warm")));
        return Response.json({ secondMs: second.ms, warmMs });
      } catch (error) {
        return Response.json({ error: String(error?.stack ?? error) }, { status: 500 });
      }
    },
  };
}
