// The methods the keeper is measured beside: plain truncation (system prompt, task, newest whole
// exchanges), observation masking (old tool outputs replaced by a placeholder, the newest M
// turns kept; JetBrains Research, "The Complexity Trap", 2025) and the AI SDK's
// `pruneMessages`. Each fits its output to a token budget by dropping the oldest whole
// exchanges after the task, as truncation does, when it is over.

/** Whether a message carries tool results and nothing a person wrote. */
function isResults(message) {
  if (message.role === "tool") return true;
  if (message.role !== "user" || !Array.isArray(message.content)) return false;
  return message.content.length > 0 && message.content.every((b) => b?.type === "tool_result" || b?.type === "tool-result");
}

/** How many leading messages every method keeps: the system messages and the first user
 * message (the task). */
export function headLength(messages) {
  let i = 0;
  while (i < messages.length && (messages[i].role === "system" || messages[i].role === "developer")) i++;
  if (i < messages.length && messages[i].role === "user") i++;
  return i;
}

/** Where each exchange after the head starts: at an assistant message or a user message that
 * is not only tool results (those belong to the exchange of their calls). */
export function exchangeStarts(messages, head) {
  const starts = [];
  for (let i = head; i < messages.length; i++) {
    if (i === head || !isResults(messages[i])) starts.push(i);
  }
  return starts;
}

/**
 * The head and the newest whole exchanges of `messages` whose tokens fit `budget`.
 * `count(list)` gives `{ total, perMessage }` for a message list (the caller wraps the envelope).
 */
export function truncate(messages, budget, count) {
  const head = headLength(messages);
  const counted = count(messages);
  if (counted.total <= budget) return messages;
  const per = counted.perMessage;
  const framing = counted.total - per.reduce((a, b) => a + b, 0);
  let used = framing;
  for (let i = 0; i < head; i++) used += per[i];
  const starts = exchangeStarts(messages, head);
  let keepFrom = messages.length;
  for (let k = starts.length - 1; k >= 0; k--) {
    const end = k + 1 < starts.length ? starts[k + 1] : messages.length;
    let unit = 0;
    for (let i = starts[k]; i < end; i++) unit += per[i];
    if (used + unit > budget) break;
    used += unit;
    keepFrom = starts[k];
  }
  let out = messages.slice(0, head).concat(messages.slice(keepFrom));
  // NOTE: framing may differ with fewer messages; drop one more exchange while over.
  while (count(out).total > budget && out.length > head) {
    const rest = out.slice(head);
    const next = exchangeStarts(rest, 0)[1];
    out = out.slice(0, head).concat(next === undefined ? [] : rest.slice(next));
  }
  return out;
}

export const MASK_PLACEHOLDER = "[Old tool output omitted for brevity.]";

/** Observation masking: tool outputs of exchanges older than the newest `keepTurns` assistant
 * turns are replaced by a placeholder (the messages keep their calls and ids). */
export function mask(messages, keepTurns) {
  let turns = 0;
  let cut = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "assistant" && ++turns > keepTurns) {
      cut = i + 1;
      break;
    }
  }
  if (turns <= keepTurns) return messages;
  return messages.map((m, i) => (i < cut ? masked(m) : m));
}

function masked(message) {
  if (message.role === "tool") {
    if (Array.isArray(message.content)) {
      return { ...message, content: message.content.map((p) => (p?.type === "tool-result" ? { ...p, output: { type: "text", value: MASK_PLACEHOLDER } } : p)) };
    }
    return { ...message, content: MASK_PLACEHOLDER };
  }
  if (message.role === "user" && Array.isArray(message.content) && message.content.some((b) => b?.type === "tool_result")) {
    return { ...message, content: message.content.map((b) => (b?.type === "tool_result" ? { ...b, content: MASK_PLACEHOLDER } : b)) };
  }
  return message;
}

/**
 * The conversation as AI SDK `ModelMessage`s (what `pruneMessages` takes), and for each input
 * message the index of its first output message. Anthropic's user messages that carry tool
 * results become a `tool` message (and a `user` message for any text beside them).
 */
export function toModelMessages(messages, system) {
  const out = [];
  const first = [];
  if (typeof system === "string" && system !== "") out.push({ role: "system", content: system });
  const names = new Map();
  for (const m of messages) {
    first.push(out.length);
    if (m.role === "system" || m.role === "developer") {
      out.push({ role: "system", content: typeof m.content === "string" ? m.content : m.content.map((p) => p.text ?? "").join("\n") });
    } else if (m.role === "tool") {
      out.push({ role: "tool", content: [{ type: "tool-result", toolCallId: m.tool_call_id, toolName: names.get(m.tool_call_id) ?? "tool", output: { type: "text", value: typeof m.content === "string" ? m.content : JSON.stringify(m.content) } }] });
    } else if (m.role === "assistant") {
      const parts = [];
      if (typeof m.content === "string" && m.content !== "") parts.push({ type: "text", text: m.content });
      else if (Array.isArray(m.content)) {
        for (const b of m.content) {
          if (b.type === "text") parts.push({ type: "text", text: b.text });
          else if (b.type === "thinking") parts.push({ type: "reasoning", text: b.thinking, providerOptions: { anthropic: { signature: b.signature } } });
          else if (b.type === "redacted_thinking") parts.push({ type: "reasoning", text: "", providerOptions: { anthropic: { redactedData: b.data } } });
          else if (b.type === "tool_use") {
            names.set(b.id, b.name);
            parts.push({ type: "tool-call", toolCallId: b.id, toolName: b.name, input: b.input });
          }
        }
      }
      for (const c of m.tool_calls ?? []) {
        names.set(c.id, c.function.name);
        let input;
        try {
          input = JSON.parse(c.function.arguments);
        } catch {
          input = c.function.arguments;
        }
        parts.push({ type: "tool-call", toolCallId: c.id, toolName: c.function.name, input });
      }
      out.push({ role: "assistant", content: parts });
    } else if (m.role === "user") {
      if (typeof m.content === "string") {
        out.push({ role: "user", content: m.content });
        continue;
      }
      const results = m.content.filter((b) => b?.type === "tool_result");
      const rest = m.content.filter((b) => b?.type !== "tool_result");
      if (results.length > 0) {
        out.push({
          role: "tool",
          content: results.map((b) => ({
            type: "tool-result",
            toolCallId: b.tool_use_id,
            toolName: names.get(b.tool_use_id) ?? "tool",
            output: { type: "text", value: typeof b.content === "string" ? b.content : (b.content ?? []).map((x) => x.text ?? "").join("\n") },
          })),
        });
      }
      const text = rest.filter((b) => b?.type === "text").map((b) => ({ type: "text", text: b.text }));
      if (text.length > 0) out.push({ role: "user", content: text });
    }
  }
  return { messages: out, first };
}
