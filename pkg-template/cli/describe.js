// How the command line names what a message holds, for people: its kinds (text, tool call, tool
// result, image, file, thinking, marker), the tools involved and a preview. For display only:
// every token figure comes from the package's own count, and the package's parsers have read
// the conversation (and thrown for bad input) before anything here looks at it.

/** The marker text that begins a context-keeper compaction summary. */
const MARKER_PREFIX = "<context-keeper-compaction";

/** The message list of a conversation argument (an array or a request object's `messages`). */
export function messagesOf(conversation) {
  return Array.isArray(conversation) ? conversation : conversation.messages;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const text = (v) => (typeof v === "string" ? v : Array.isArray(v) ? v.map((p) => (typeof p === "string" ? p : typeof p?.text === "string" ? p.text : "")).join(" ") : v === undefined || v === null ? "" : JSON.stringify(v));

/** A tool result's output as text: a string, blocks, or an AI SDK output (`{ type, value }`). */
function outputText(output) {
  if (isObject(output) && "value" in output) return text(output.value);
  return text(output);
}

/** Provider-native compaction: Anthropic's block, OpenAI's item, the AI SDK's parts for them. */
function isNativeCompaction(part) {
  return part.type === "compaction" || part.kind === "openai.compaction" || part.providerOptions?.anthropic?.type === "compaction";
}

/**
 * What one message holds, in order: `{ kind, name?, id?, text }` with kind one of "text",
 * "toolCall", "toolResult", "image", "file", "thinking", "marker".
 */
export function partsOf(message) {
  const out = [];
  if (!isObject(message)) return out;
  if (message.type === "compaction") return [{ kind: "marker", text: "" }];
  const role = message.role;
  const content = message.content ?? message.parts;
  if ((role === "tool" || role === "function") && !Array.isArray(content)) {
    out.push({ kind: "toolResult", id: message.tool_call_id, name: message.name, text: text(content) });
  } else if (typeof content === "string") {
    out.push({ kind: content.startsWith(MARKER_PREFIX) ? "marker" : "text", text: content });
  }
  if (Array.isArray(content)) {
    for (const part of content) {
      if (!isObject(part)) continue;
      const type = typeof part.type === "string" ? part.type : "";
      if (isNativeCompaction(part)) out.push({ kind: "marker", text: text(part.content ?? "") });
      else if (type === "text" || type === "refusal" || type === "input_text" || type === "output_text") {
        const t = text(part.text ?? part.refusal);
        out.push({ kind: t.startsWith(MARKER_PREFIX) ? "marker" : "text", text: t });
      } else if (type === "image" || type === "image_url" || type === "input_image") out.push({ kind: "image", text: "" });
      else if (type === "file" && /^image\//.test(part.mediaType ?? part.mimeType ?? "")) out.push({ kind: "image", text: "" });
      else if (type === "file" || type === "document" || type === "input_audio" || type === "input_file") out.push({ kind: "file", text: "" });
      else if (type === "thinking" || type === "redacted_thinking" || type === "reasoning") out.push({ kind: "thinking", text: text(part.thinking ?? part.text ?? "") });
      else if (type === "tool_use" || type === "server_tool_use" || type === "tool-call") {
        out.push({ kind: "toolCall", id: part.id ?? part.toolCallId, name: part.name ?? part.toolName, text: text(part.input ?? part.args) });
      } else if (type === "tool_result" || type === "tool-result" || type.endsWith("_tool_result")) {
        out.push({ kind: "toolResult", id: part.tool_use_id ?? part.toolCallId, name: part.toolName, text: outputText(part.content ?? part.output ?? part.result) });
      } else if (type.startsWith("tool-") || type === "dynamic-tool") {
        // A UIMessage tool part: the call, and its output once there is one.
        const name = type === "dynamic-tool" ? part.toolName : type.slice("tool-".length);
        out.push({ kind: "toolCall", id: part.toolCallId, name, text: text(part.input) });
        if (part.output !== undefined || part.errorText !== undefined) {
          out.push({ kind: "toolResult", id: part.toolCallId, name, text: part.errorText ?? outputText(part.output) });
        }
      }
    }
  }
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    out.push({ kind: "toolCall", id: call?.id, name: call?.function?.name, text: text(call?.function?.arguments) });
  }
  if (isObject(message.function_call)) {
    out.push({ kind: "toolCall", name: message.function_call.name, text: text(message.function_call.arguments) });
  }
  return out;
}

/** Tool names by call id, across the conversation (results in OpenAI and Anthropic do not name their tool). */
export function toolNamesById(messages) {
  const names = new Map();
  for (const message of messages) {
    for (const part of partsOf(message)) {
      if (part.kind === "toolCall" && typeof part.id === "string" && typeof part.name === "string") names.set(part.id, part.name);
    }
  }
  return names;
}

const LABELS = { text: "text", toolCall: "tool call", toolResult: "tool result", image: "image", file: "file", thinking: "thinking", marker: "marker" };

/**
 * A short label of what a message holds, its main kind first ("tool result (bash)",
 * "text + tool call (write_file)", "marker"); and a preview of its first text.
 */
export function describeMessage(message, names) {
  const parts = partsOf(message);
  const kinds = [];
  for (const part of parts) {
    if (part.kind === "text" && part.text.trim() === "") continue; // `content: ""` beside tool calls
    const name = part.name ?? (part.id === undefined ? undefined : names.get(part.id));
    const label = LABELS[part.kind] + (name && (part.kind === "toolCall" || part.kind === "toolResult") ? ` (${name})` : "");
    if (!kinds.includes(label)) kinds.push(label);
  }
  const shown = kinds.length > 2 ? `${kinds.slice(0, 2).join(" + ")} + ${kinds.length - 2} more` : kinds.join(" + ");
  const preview = parts.map((p) => p.text).find((t) => typeof t === "string" && t.trim() !== "") ?? "";
  return { kind: shown || "empty", kinds: [...new Set(parts.map((p) => p.kind))], preview };
}

/** Whether a message is a compaction marker (ours or a provider's). */
export const isMarker = (message) => partsOf(message).some((p) => p.kind === "marker");
