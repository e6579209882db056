// Type-checks the context layer's functions as a consumer sees them: option and report types
// come from the Rust types (tsify), the signatures from pkg-template/context/index.d.ts.
import {
  pruneMessages, evictToolInputs, offloadToolResult, offloadMessages, readOffloaded, listOffloaded,
  grepOffloaded, recoveryTools, runRecoveryTool, ContextKeeperError,
  type ErrorKind, type PruneOptions, type Report, type Edit, type Original, type Offloaded,
} from "context-keeper";
import { MemoryStore } from "context-keeper/stores";

type OpenAIMessage = { role: "user" | "assistant" | "tool"; content: string | null; tool_call_id?: string };

async function use(history: OpenAIMessage[]) {
  const options: PruneOptions = { keepLastAssistantTurns: 3, tools: { deny: ["read_*"] }, model: "gpt-4o" };
  const pruned = pruneMessages(history, options);
  const same: OpenAIMessage[] = pruned.messages; // the input's own type comes back
  const report: Report = pruned.report;
  const edit: Edit | undefined = report.edits[0];
  const where: Original | undefined = edit?.original;
  if (where?.kind === "file") where.path.toUpperCase();
  if (where?.kind === "store") where.id.toUpperCase();
  const tokens: number = report.tokensSaved + (edit?.tokensBefore ?? 0);
  evictToolInputs({ messages: history }, { tools: ["write_file"], inputFields: ["content"] });

  const store = new MemoryStore();
  const result = await offloadToolResult("output", { store, sessionId: "s", toolName: "bash", toolCallId: "c", timeoutMs: 5_000 });
  const offloaded: Offloaded | null = result.offloaded;
  const failure: string | undefined = result.failure;
  await offloadMessages(history, { store, sessionId: "s", limitTokens: 10_000, format: "openai" });
  const read = await readOffloaded(offloaded?.id ?? "", { store, sessionId: "s", offset: 1, limit: 200 });
  const next: number | null = read.nextOffset;
  const text: string = read.rendered;
  const listed = await listOffloaded({ store, sessionId: "s" });
  listed.offloads[0]?.toolName?.toUpperCase();
  const grep = await grepOffloaded("error", { store, sessionId: "s", ignoreCase: true });
  grep.matches[0]?.line.toFixed();
  const openai = recoveryTools("openai");
  openai[0]?.function.name satisfies "read_offloaded" | "list_offloaded" | "grep_offloaded";
  const anthropic = recoveryTools("anthropic");
  anthropic[0]?.input_schema;
  const ai = recoveryTools("aisdk", { store, sessionId: "s" });
  await ai.read_offloaded.execute?.({ id: "x" });
  const out: string = await runRecoveryTool("grep_offloaded", { pattern: "x" }, { store, sessionId: "s" });
  try {
    pruneMessages(history);
  } catch (error) {
    if (error instanceof ContextKeeperError) {
      const kind: ErrorKind = error.kind;
      // @ts-expect-error: the kinds are a closed union
      const other = error.kind === "range";
      const path: string | null = error.path;
      void kind, path, other;
    }
  }
  // @ts-expect-error: an unknown option is a type error too
  pruneMessages(history, { keepLastTurns: 3 });
  // @ts-expect-error: the store is required
  await offloadToolResult("x", { sessionId: "s" });
  void same, tokens, failure, next, text, out;
}
void use;

// Compaction: the summarizer and flush callbacks, the report and the marker.
import { compact, readArchive, activeMessages, ContextKeeper, type CompactReport, type MarkerInfo, type SummaryRequest } from "context-keeper";

async function compaction(history: OpenAIMessage[]) {
  const store = new MemoryStore();
  const done = await compact(history, {
    store,
    sessionId: "s",
    keepRecentTurns: 4,
    model: "gpt-4o",
    now: new Date(),
    reserveTokens: 0.1,
    summarize: async (request: SummaryRequest) => `${request.transcript.length} ${request.previousSummary ?? ""}`,
    flush: ({ messages, prompt, silentToken }) => (messages.length > 0 ? `${prompt} ${silentToken}` : null),
    onProgress: ({ phase }) => phase.toUpperCase(),
  });
  const same: OpenAIMessage[] = done.messages;
  const report: CompactReport = done.report;
  const outcome: "compacted" | "reapplied" | "unchanged" | "failed" = report.outcome;
  const pinned: string[] = report.pinned.map((f) => `${f.kind}: ${f.text}`);
  const marker: MarkerInfo | null = done.marker;
  if (marker) {
    const back = await readArchive(marker, { store });
    const n: number = back.messages.length + marker.archivedMessages + marker.tokensAfter;
  }
  const seen: OpenAIMessage[] = activeMessages(same);
  // @ts-expect-error the summarizer returns text
  await compact(history, { store, sessionId: "s", summarize: () => 42 });
  return [same, outcome, pinned, seen, done.report.stateFailure];
}

// The ContextKeeper: options from the Rust types plus the driver's, a typed report.
{
  const keeper = new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), thresholds: { prune: 0.8 }, cacheBreakpoints: true, summarize: ({ transcript }) => transcript.slice(0, 10) });
  const budget: number | undefined = keeper.budget?.compactAt;
  void budget;
  void (async () => {
    const { messages, report } = await keeper.prepare([{ role: "user" as const, content: "hi" }], { sessionId: "s" });
    const first: { role: "user"; content: string } | undefined = messages[0];
    const fits: boolean = report.fits;
    const prefix: number | undefined = report.unchangedPrefix;
    const stats = await keeper.stats("s");
    const saved: number | undefined = stats.saved?.prune;
    // recordUsage: the summed usage and the session's calibration (null until one is recorded)
    const usage = await keeper.recordUsage("s", { input_tokens: 10, output_tokens: 2 });
    const calibration: number | null = usage.calibration;
    const read: number | undefined = usage.cacheReadTokens;
    void [first, fits, prefix, saved, calibration, read];
  })();
  new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), memoryKey: ["team", "NOTES.md"] });
  // @ts-expect-error a memory key is a store key
  new ContextKeeper({ model: "gpt-4o", store: new MemoryStore(), memoryKey: "NOTES.md" });
  // @ts-expect-error the store is required
  new ContextKeeper({ model: "gpt-4o" });
  keeper.free();
}

// The rolling window: options with a total or per-section budget, the report's sections.
import { rollingWindow, type RollingReport, type SectionBudget } from "context-keeper";

async function rolling(history: OpenAIMessage[]) {
  const store = new MemoryStore();
  const sections: SectionBudget = { goal: 500, summary: 1_500, recent: 20_000, instructions: 2_000 };
  const done = await rollingWindow(history, {
    store,
    sessionId: "s",
    keepIterations: 5,
    maxSummaryTokens: 2_000,
    resummarizeEvery: 10,
    budget: sections,
    instructions: "Always run the tests.",
    minInstructionsTokens: 500,
    model: "gpt-4o",
    now: Date.now(),
    timeoutMs: 60_000,
    summarize: async ({ prompt, transcript, previousSummary }) => `${prompt} ${transcript} ${previousSummary ?? ""}`,
  });
  const same: OpenAIMessage[] = done.messages;
  const report: RollingReport = done.report;
  const outcome: "folded" | "unchanged" | "failed" = report.outcome;
  const recent: number = report.sections.recent.tokens + (report.sections.recent.budget ?? 0);
  const iterations: number | undefined = done.marker?.iterations;
  await rollingWindow(history, { store, sessionId: "s", budget: 60_000 });
  // @ts-expect-error the budget is tokens or sections
  await rollingWindow(history, { store, sessionId: "s", budget: "lots" });
  // @ts-expect-error the store is required
  await rollingWindow(history, { sessionId: "s" });
  return [same, outcome, recent, iterations, report.failures, done.report.stateFailure];
}
void rolling;
