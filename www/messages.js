// What the page shows of a message, in any of the formats the package reads (OpenAI Chat
// Completions, Anthropic Messages, AI SDK ModelMessage and UIMessage): its kind for the
// timeline's colour, its parts as labelled plain text, and compaction markers with their
// header. Pure: no DOM here, and nothing is ever interpreted as HTML.

/** The timeline's kinds, in legend order, with their labels. */
export const KINDS = [
  ["system", "system"],
  ["user", "user"],
  ["assistant", "assistant"],
  ["tool-call", "tool call"],
  ["tool-result", "tool result"],
  ["image", "image"],
  ["marker", "compaction marker"],
  ["overhead", "framing, system prompt, tools"],
];

const MARKER = "<context-keeper-compaction ";

/** A long string that is inline data (base64, a data: URL): shown by its size, not its bytes. */
function isData(text) {
  return text.length > 200 && (text.startsWith("data:") || /^[A-Za-z0-9+/=\s]+$/.test(text.slice(0, 400)));
}

/** JSON for the reader: inline data collapsed to a note, the rest pretty-printed. */
export function readableJson(value) {
  try {
    return JSON.stringify(value, (_, v) => (typeof v === "string" && isData(v) ? `[data, ${v.length.toLocaleString("en")} characters]` : v), 2) ?? String(value);
  } catch {
    return String(value);
  }
}

const textOf = (value) => (typeof value === "string" ? value : readableJson(value));

/** An OpenAI or AI SDK tool call's arguments, pretty when they are JSON text. */
function argsText(args) {
  if (typeof args !== "string") return readableJson(args);
  try {
    return readableJson(JSON.parse(args));
  } catch {
    return args;
  }
}

/** A tool result's content: a string, text blocks, or an AI SDK output object. */
function resultText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((b) => (typeof b?.text === "string" ? b.text : b?.type === "image" || b?.type === "image_url" ? "[image]" : readableJson(b))).join("\n");
  }
  if (content && typeof content === "object" && "type" in content && "value" in content) return textOf(content.value);
  return textOf(content);
}

/**
 * One part as `{ label, text, kind }`: `kind` is what it adds to the message's kind (a tool
 * call, a tool result, an image), or undefined for text.
 */
function partOf(part) {
  if (typeof part === "string") return { label: "text", text: part };
  if (part === null || typeof part !== "object") return { label: "part", text: String(part) };
  const type = String(part.type ?? "");
  switch (type) {
    case "text":
      return { label: "text", text: String(part.text ?? "") };
    case "thinking":
      return { label: "thinking", text: String(part.thinking ?? "") };
    case "redacted_thinking":
      return { label: "thinking (redacted)", text: "[redacted]" };
    case "reasoning":
      return { label: "reasoning", text: String(part.text ?? "") };
    case "refusal":
      return { label: "refusal", text: String(part.refusal ?? "") };
    case "image_url":
    case "image":
    case "input_image":
      return { label: "image", text: imageNote(part), kind: "image" };
    case "file":
      return String(part.mediaType ?? part.mimeType ?? "").startsWith("image/")
        ? { label: "image", text: imageNote(part), kind: "image" }
        : { label: "file", text: `[file ${part.mediaType ?? part.filename ?? ""}]` };
    case "document":
      return { label: "document", text: readableJson(part.source ?? part) };
    case "tool_use":
      return { label: `tool call ${part.name}`, text: readableJson(part.input), kind: "tool-call", tool: part.name };
    case "tool-call":
      return { label: `tool call ${part.toolName}`, text: readableJson(part.input ?? part.args), kind: "tool-call", tool: part.toolName };
    case "tool_result":
      return { label: `tool result${part.is_error ? " (error)" : ""}`, text: resultText(part.content), kind: "tool-result" };
    case "tool-result":
      return { label: `tool result ${part.toolName ?? ""}`.trim(), text: resultText(part.output ?? part.result), kind: "tool-result", tool: part.toolName };
    case "compaction":
      return { label: "provider compaction", text: String(part.content ?? "[encrypted]"), kind: "marker" };
    case "step-start":
      return null;
    default:
      if (type.startsWith("tool-") || type === "dynamic-tool") {
        const tool = type === "dynamic-tool" ? part.toolName : type.slice(5);
        const output = part.errorText !== undefined ? `[error] ${part.errorText}` : part.output === undefined ? "[no output yet]" : resultText(part.output);
        return { label: `tool ${tool}`, text: `input: ${readableJson(part.input)}\n\noutput: ${output}`, kind: "tool-call", tool };
      }
      if (typeof part.text === "string") return { label: type || "text", text: part.text };
      return { label: type || "part", text: readableJson(part) };
  }
}

function imageNote(part) {
  const url = part.image_url?.url ?? part.url ?? part.source?.data ?? part.image ?? part.data ?? "";
  const media = part.source?.media_type ?? part.mediaType ?? part.mimeType ?? (typeof url === "string" ? /^data:([^;,]+)/.exec(url)?.[1] : undefined);
  const size = typeof url === "string" ? `, ${url.length.toLocaleString("en")} characters` : "";
  return `[image${media ? ` ${media}` : ""}${size}]`;
}

/** The parts of a message, in order, each `{ label, text, kind?, tool? }`. */
export function partsOf(message) {
  if (message === null || typeof message !== "object") return [{ label: "message", text: String(message) }];
  const parts = [];
  const content = message.parts ?? message.content;
  if (typeof content === "string") parts.push({ label: "text", text: content });
  else if (Array.isArray(content)) for (const p of content) {
    const part = partOf(p);
    if (part) parts.push(part);
  }
  else if (content && typeof content === "object") parts.push(partOf(content) ?? { label: "content", text: readableJson(content) });
  if (message.role === "tool" || message.role === "function") {
    // OpenAI's tool message: its content is the result.
    for (const p of parts) p.kind ??= "tool-result";
    if (parts.length === 0) parts.push({ label: "tool result", text: "", kind: "tool-result" });
    for (const p of parts) if (p.label === "text") p.label = "tool result";
  }
  if (typeof message.refusal === "string") parts.push({ label: "refusal", text: message.refusal });
  for (const call of message.tool_calls ?? []) {
    const name = call?.function?.name ?? call?.name ?? "?";
    parts.push({ label: `tool call ${name}`, text: argsText(call?.function?.arguments ?? call?.arguments), kind: "tool-call", tool: name });
  }
  if (message.function_call) {
    parts.push({ label: `tool call ${message.function_call.name}`, text: argsText(message.function_call.arguments), kind: "tool-call", tool: message.function_call.name });
  }
  return parts;
}

/**
 * The header of a compaction marker in a message (ours: `<context-keeper-compaction {...}>`),
 * or null. The header names the archive's `key`, `number`, `archivedMessages` and the tokens.
 */
export function markerOf(message) {
  for (const part of partsOf(message)) {
    const at = part.text.indexOf(MARKER);
    if (at < 0) continue;
    const from = at + MARKER.length;
    // The header is one JSON object followed by ">": try each "}>" until one parses.
    for (let end = part.text.indexOf("}>", from); end >= 0; end = part.text.indexOf("}>", end + 1)) {
      try {
        const header = JSON.parse(part.text.slice(from, end + 1));
        if (header && Array.isArray(header.key)) return { ...header, summary: part.text.slice(end + 2).trim() };
      } catch {}
    }
  }
  return null;
}

/** What the timeline shows of a message: `{ role, kind, parts, tools, snippet, marker }`. */
export function describe(message) {
  const parts = partsOf(message);
  const role = String(message?.role ?? "?");
  const marker = markerOf(message);
  const kinds = new Set(parts.map((p) => p.kind).filter(Boolean));
  let kind;
  if (marker || kinds.has("marker")) kind = "marker";
  else if (role === "system" || role === "developer") kind = "system";
  else if (kinds.has("tool-result") && !parts.some((p) => !p.kind && p.text.trim() !== "")) kind = "tool-result";
  else if (kinds.has("tool-call")) kind = "tool-call";
  else if (kinds.has("image")) kind = "image";
  else kind = role === "assistant" ? "assistant" : "user";
  const tools = [...new Set(parts.map((p) => p.tool).filter(Boolean))];
  const first = parts.find((p) => p.text.trim() !== "" && p.kind !== "tool-call") ?? parts[0];
  const text = marker ? `Summary: ${marker.summary}` : first?.text ?? "";
  const snippet = text.replace(/\s+/g, " ").trim().slice(0, 160);
  return { role, kind, parts, tools, snippet, marker };
}

/** The message list of a conversation: the array, or a request object's `messages`. */
export function listOf(conversation) {
  if (Array.isArray(conversation)) return conversation;
  if (conversation && typeof conversation === "object" && Array.isArray(conversation.messages)) return conversation.messages;
  return null;
}

/**
 * Reads pasted or dropped text as a conversation: JSON (an array of messages or a request
 * object), or JSON Lines of messages. Throws an Error saying what it is not.
 */
export function parseConversation(text) {
  const trimmed = text.trim();
  if (trimmed === "") throw new Error("nothing to read: paste or drop a conversation");
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch (jsonError) {
    const lines = trimmed.split(/\r?\n/).filter((l) => l.trim() !== "");
    try {
      value = lines.map((line) => JSON.parse(line));
    } catch {
      throw new Error(`not JSON, nor JSON Lines: ${jsonError.message}`);
    }
  }
  if (listOf(value) === null) throw new Error("expected an array of messages, or an object with a `messages` array");
  return value;
}
