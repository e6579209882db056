// What the agent used next: the references of a message, and where a reference occurs.
//
// A message's *references* are the strings it took from earlier context (DESIGN.md, "What to
// keep"): file paths (with a slash or a file extension), identifiers of 6+ characters with an
// `_`, a dot or an inner capital, numbers of 3+ digits, and quoted strings of 8-80 characters,
// taken from its text and its tool-call arguments. A reference occurs in a text where it stands
// as a whole token: the characters around it are not letters, digits or `_` (where its own
// first or last character is one).

/** The strings a message shows the model, by format (OpenAI, Anthropic, AI SDK ModelMessage):
 * text, tool-call names and arguments (their string leaves), tool results, compaction
 * summaries. Thinking, signatures and ids are left out: the agent takes its references from
 * what it read, and a provider may drop earlier thinking. */
export function textsOf(message, out = []) {
  if (message === null || typeof message !== "object") return out;
  const content = message.content;
  if (typeof content === "string") out.push(content);
  else if (Array.isArray(content)) for (const part of content) partTexts(part, out);
  for (const call of message.tool_calls ?? []) {
    if (typeof call?.function?.name === "string") out.push(call.function.name);
    argumentTexts(call?.function?.arguments, out);
  }
  return out;
}

function partTexts(part, out) {
  if (part === null || typeof part !== "object") {
    if (typeof part === "string") out.push(part);
    return;
  }
  switch (part.type) {
    case "thinking":
    case "redacted_thinking":
    case "reasoning":
    case "image":
    case "file":
      return;
    case "tool_use":
      if (typeof part.name === "string") out.push(part.name);
      leaves(part.input, out);
      return;
    case "tool-call":
      if (typeof part.toolName === "string") out.push(part.toolName);
      leaves(part.input, out);
      return;
    case "tool_result":
      if (typeof part.content === "string") out.push(part.content);
      else if (Array.isArray(part.content)) for (const block of part.content) partTexts(block, out);
      return;
    case "tool-result":
      leaves(part.output?.value ?? part.output, out);
      return;
    case "compaction":
      if (typeof part.content === "string") out.push(part.content);
      return;
    default:
      if (typeof part.text === "string") out.push(part.text);
  }
}

/** OpenAI's arguments are JSON text: their string leaves (the text itself when not JSON). */
function argumentTexts(args, out) {
  if (typeof args !== "string") return leaves(args, out);
  try {
    leaves(JSON.parse(args), out);
  } catch {
    out.push(args);
  }
}

function leaves(value, out) {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) leaves(v, out);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) leaves(v, out);
  return out;
}

/** The strings of a message the agent *wrote*: its text and its tool-call arguments. */
export function writtenTexts(message) {
  const out = [];
  const content = message?.content;
  if (typeof content === "string") out.push(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (part?.type === "text" && typeof part.text === "string") out.push(part.text);
      else if (part?.type === "tool_use") leaves(part.input, out);
      else if (part?.type === "tool-call") leaves(part.input, out);
    }
  }
  for (const call of message?.tool_calls ?? []) argumentTexts(call?.function?.arguments, out);
  return out;
}

const PATH = /(?<![\w./-])(?:[\w.-]*\/[\w./-]*\w|[\w-]*\w\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])/g;
const IDENT = /(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?!\w)/g;
const NUMBER = /(?<![\w.])\d{3,}(?!\w)/g;
const QUOTED = /"([^"\n]{8,80})"|'([^'\n]{8,80})'|`([^`\n]{8,80})`/g;
const INNER_CAPITAL = /[a-z0-9][A-Z]/;

/** The references in `texts`, each once, in order of first appearance. */
export function referencesOf(texts) {
  const seen = new Set();
  const add = (s) => {
    if (s !== undefined && s.trim().length > 0) seen.add(s);
  };
  for (const text of texts) {
    for (const m of text.matchAll(PATH)) if (m[0].length >= 4 && !/^\d+(\.\d+)*$/.test(m[0])) add(m[0]);
    for (const m of text.matchAll(IDENT)) {
      const s = m[0];
      if (s.length >= 6 && (s.includes("_") || s.includes(".") || INNER_CAPITAL.test(s))) add(s);
    }
    for (const m of text.matchAll(NUMBER)) add(m[0]);
    for (const m of text.matchAll(QUOTED)) add(m[1] ?? m[2] ?? m[3]);
  }
  return [...seen];
}

const WORD = /[A-Za-z0-9_]/;

/** Whether `ref` occurs in `text` as a whole token. */
export function occursIn(text, ref) {
  const before = WORD.test(ref[0]);
  const after = WORD.test(ref[ref.length - 1]);
  let at = text.indexOf(ref);
  while (at >= 0) {
    const end = at + ref.length;
    const okBefore = !before || at === 0 || !WORD.test(text[at - 1]);
    const okAfter = !after || end === text.length || !WORD.test(text[end]);
    if (okBefore && okAfter) return true;
    at = text.indexOf(ref, at + 1);
  }
  return false;
}

/** One text of a message's strings, joined by a character no reference holds. */
export function joined(texts) {
  return texts.join("\u0000");
}
