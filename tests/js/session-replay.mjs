// The 300-turn agent session (tests/data/sessions) replayed turn by turn through compaction, as
// a host's agent loop would: shared by tests/js/session-compact.test.mjs, which checks every
// invariant at every compaction, and bench/session.mjs, which prints the token curve.
//
// A turn is an assistant reply and its tool results (with the user messages before it). In an
// AI SDK UIMessage conversation the whole of an agent's work on one request is one assistant
// message, a `step-start` part before each step: there a turn is a step, and the replay hands
// the host the conversation with that message cut after the step (as `useChat` holds it while
// the agent runs), so every prefix ends after a complete tool exchange. Compaction may cut
// that message at a step: a host that keeps what `compact` returned then holds the rest of
// it, and appends each new step's parts to that.

/** Per format: the counting model, and the compaction options that differ. */
export const FORMATS = {
  openai: { model: "gpt-4o", keepRecentTurns: 4 },
  anthropic: { model: "claude-sonnet-4", keepRecentTurns: 4 },
  aisdk: { model: "claude-sonnet-4", keepRecentTurns: 4 },
  // NOTE: an assistant UIMessage holds every step of a request; each step is a turn, and
  // compaction cuts at a step when the turns kept start inside the message.
  ui: { model: "claude-sonnet-4", keepRecentTurns: 4 },
};

/** The model's window for the replay, and the count of what it sees that triggers compaction. */
export const WINDOW = 64_000;
export const THRESHOLD = 48_000;
export const NOW = "2026-11-25T12:00:00.000Z";

/** The messages array of a conversation (an Anthropic request holds it in `messages`). */
export const listOf = (conversation) => (Array.isArray(conversation) ? conversation : conversation.messages);

/** `conversation` with `messages` as its list. */
export const withList = (conversation, messages) => (Array.isArray(conversation) ? messages : { ...conversation, messages });

/**
 * The session's turns, in order: each is what the host's history looks like once the turn is
 * in, given as an edit of the list before it: `{ drop, add }` (drop that many messages off the
 * end, then append `add`). For the model-message formats `drop` is 0: the turn's user
 * messages, the assistant message and its tool results are appended. For UIMessages the
 * growing assistant message is replaced by the same message cut after one more step; `step`
 * holds that step's parts (what a host holding the rest of a cut message appends).
 */
export function turnsOf(format, session) {
  const messages = listOf(session);
  const turns = [];
  if (format === "ui") {
    let pending = [];
    for (const message of messages) {
      if (message.role !== "assistant") {
        pending.push(message);
        continue;
      }
      const starts = message.parts.flatMap((p, i) => (p.type === "step-start" ? [i] : []));
      starts.forEach((at, k) => {
        const end = starts[k + 1] ?? message.parts.length;
        const cut = { ...message, parts: message.parts.slice(0, end) };
        turns.push(k === 0 ? { drop: 0, add: [...pending, cut] } : { drop: 1, add: [cut], step: message.parts.slice(at, end) });
      });
      pending = [];
    }
    return turns;
  }
  // the leading system messages and the first request come with the first turn
  let pending = [];
  let i = 0;
  while (i < messages.length) {
    const message = messages[i];
    if (message.role !== "assistant") {
      pending.push(message);
      i++;
      continue;
    }
    const add = [...pending, message];
    i++;
    // its results: OpenAI `tool` messages, AI SDK `tool` messages, Anthropic's next user message
    while (i < messages.length && (messages[i].role === "tool" || (format === "anthropic" && messages[i].role === "user" && add[add.length - 1].role === "assistant"))) {
      add.push(messages[i]);
      i++;
    }
    turns.push({ drop: 0, add });
    pending = [];
  }
  return turns;
}

/**
 * The history after `turn`, from the history before it. When the last message is the rest of
 * the growing UIMessage that a compaction cut at a step (same id, fewer parts than the source
 * held before this step), the step's parts are appended to it instead.
 */
export function advance(conversation, turn) {
  const list = listOf(conversation);
  const last = list[list.length - 1];
  const [grown] = turn.add;
  if (turn.step && last?.id === grown.id && last.parts.length + turn.step.length < grown.parts.length) {
    return withList(conversation, list.slice(0, -1).concat([{ ...last, parts: [...last.parts, ...turn.step] }]));
  }
  return withList(conversation, list.slice(0, list.length - turn.drop).concat(turn.add));
}

const PATH = /(?:\.{0,2}\/)?(?:[\w.-]+\/)+[\w.-]*\w/g;

/**
 * A scripted summarizer: deterministic, no LLM. Like a hurried model it keeps the opening lines
 * of the transcript and only some of the file paths it names (every other one), so the exact
 * details it loses are there for fact pinning to find. `calls` collects its requests.
 */
export function scriptedSummarizer({ calls = [], failAt } = {}) {
  const summarize = (request) => {
    calls.push(request);
    if (calls.length === failAt) throw new Error(`the summarizer is down (call ${calls.length})`);
    const lines = request.transcript
      .split("\n")
      .filter((line) => line.trim() !== "")
      .slice(0, 12)
      .map((line) => line.slice(0, 160));
    const paths = [...new Set(request.transcript.match(PATH) ?? [])].filter((_, k) => k % 2 === 0).slice(0, 12);
    const previous = request.previousSummary ? [`Before that: ${request.previousSummary.split("\n")[0]}`] : [];
    return [`Summary ${calls.length}: the agent worked through ${request.messages.length} messages.`, ...previous, ...lines, `Files seen: ${paths.join(", ")}.`].join("\n");
  };
  return { summarize, calls };
}

/** The window the keeper replay runs under (issue #21's "200 turns under a 32k window"). */
export const KEEPER_WINDOW = 32_000;

/**
 * The first `turns` turns of `session` through one ContextKeeper, as a host that keeps the
 * full history runs it (AI SDK 5/6 `prepareStep`, a stateless Worker): after each turn the
 * whole history goes to `prepare`, and the stored decisions and compactions are re-applied.
 * Returns one record per turn: the history given, the turn's own messages, what prepare
 * returned and its wall time (the summarizer's included; it is scripted, so about nothing).
 */
export async function keeperReplay({ ContextKeeper, MemoryStore }, format, session, { turns = 200, window = KEEPER_WINDOW, summarize, store = new MemoryStore() } = {}) {
  const keeper = new ContextKeeper({ model: FORMATS[format].model, contextWindow: window, store, summarize });
  const records = [];
  let history = withList(session, []);
  try {
    for (const turn of turnsOf(format, session).slice(0, turns)) {
      history = advance(history, turn);
      const start = performance.now();
      const { messages, report } = await keeper.prepare(history, { sessionId: `replay-${format}`, now: NOW });
      records.push({ history, added: turn.add, messages, report, ms: performance.now() - start });
    }
  } finally {
    keeper.free();
  }
  return { records, store };
}

/**
 * The figures of a replay: how often the unchanged prefix moved (a turn whose output differs
 * from the previous output before its end), decisions, compactions, peak tokens, time.
 */
export function replayFigures(records) {
  let moved = 0;
  const decisions = {};
  const movedOn = {};
  for (let t = 0; t < records.length; t++) {
    const { report } = records[t];
    decisions[report.decision] = (decisions[report.decision] ?? 0) + 1;
    if (t > 0 && report.unchangedPrefix < listOf(records[t - 1].messages).length) {
      moved++;
      movedOn[report.decision] = (movedOn[report.decision] ?? 0) + 1;
    }
  }
  const times = records.map((r) => r.ms).sort((a, b) => a - b);
  const at = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  return {
    turns: records.length,
    moved,
    movedShare: records.length > 1 ? moved / (records.length - 1) : 0,
    movedOn,
    decisions,
    compactions: records.filter((r) => r.report.compaction?.outcome === "compacted").length,
    offloaded: records.reduce((n, r) => n + r.report.offloaded.length, 0),
    peakTokensAfter: Math.max(...records.map((r) => r.report.tokensAfter)),
    peakTokensBefore: Math.max(...records.map((r) => r.report.tokensBefore)),
    medianMs: at(0.5),
    p99Ms: at(0.99),
  };
}
