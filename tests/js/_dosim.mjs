import { ContextKeeper, listOffloaded } from "context-keeper";
import { MemoryStore } from "context-keeper/stores";
const store = new MemoryStore();
const sessionId = "do-1";
let history = [{ role: "system", content: "You are a coding agent." }, { role: "user", content: "Fix the failing test." }];
for (let t = 0; t < 30; t++) {
  const keeper = new ContextKeeper({ model: "gpt-4o", contextWindow: 16_000, store });
  const id = `call_${t}`;
  const lines = t % 5 === 4 ? 1_000 : 80;
  history.push({ role: "assistant", content: `Turn ${t}: reading file${t}.py`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat file${t}.py` }) } }] });
  history.push({ role: "tool", tool_call_id: id, content: Array.from({ length: lines }, (_, i) => `file${t}.py:${i + 1}: value_${i} = compute(${i}, "${"x".repeat(16)}")`).join("\n") });
  history = JSON.parse(JSON.stringify(history));
  const { messages, report } = await keeper.prepare(history, { sessionId, now: "2026-11-25T12:00:00Z" });
  console.log(t, report.decision, report.tokensBefore, report.tokensAfter, "off", report.offloaded.length, "pr", report.pruned.length, report.pruned.map(e=>e.action).join(","), "compaction", report.compaction?.outcome);
  if (t === 29) { console.log(JSON.stringify(await keeper.stats(sessionId))); }
  keeper.free();
}
const listed = await listOffloaded({ store, sessionId });
console.log(listed.offloads.map((o) => [o.id, o.lines]));
