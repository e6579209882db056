// The 300-turn agent session (tests/data/sessions) replayed turn by turn through compaction, as
// a host's agent loop would: shared by tests/js/session-compact.test.mjs, which checks every
// invariant at every compaction, and bench/session.mjs, which prints the token curve.
//
// A turn is an assistant reply and its tool results (with the user messages before it). In an
// AI SDK UIMessage conversation the whole of an agent's work on one request is one assistant
// message, a `step-start` part before each step: there a turn is a step, and the replay hands
// the host the conversation with that message cut after the step (as `useChat` holds it while
// the agent runs), so every prefix ends after a complete tool exchange.

/** Per format: the counting model, and the compaction options that differ. */
export const FORMATS = {
  openai: { model: "gpt-4o", keepRecentTurns: 4 },
  anthropic: { model: "claude-sonnet-4", keepRecentTurns: 4 },
  aisdk: { model: "claude-sonnet-4", keepRecentTurns: 4 },
  // NOTE: an assistant UIMessage holds every step of a request, and compaction cuts between
  // messages: keeping one (the request in progress) is keeping the current task.
  ui: { model: "claude-sonnet-4", keepRecentTurns: 1 },
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
 * growing assistant message is replaced by the same message cut after one more step.
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
        turns.push(k === 0 ? { drop: 0, add: [...pending, cut] } : { drop: 1, add: [cut] });
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

/** The history after `turn`, from the history before it. */
export function advance(conversation, turn) {
  const list = listOf(conversation);
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
