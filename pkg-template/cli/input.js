// Reading a conversation for the command line: a file or stdin ("-"), gzipped or not, as one JSON
// document (an array of messages or a request object) or as JSON Lines (one message a line).
// What is not JSON is a UsageError naming the line and column; what is JSON but not a
// conversation is for the package's own parsers to say (they name the message and field).
import { createReadStream, statSync } from "node:fs";
import { gunzipSync } from "node:zlib";

/** A mistake of the caller's (bad input, a bad argument): one line, exit code 2. */
export class UsageError extends Error {
  constructor(message) {
    super(message);
    this.name = "UsageError";
  }
}

/** Input from this size up (unzipped) gets a progress line on a TTY: about half a second of work. */
export const LONG_INPUT_BYTES = 512 << 10;

/**
 * Reads `file` ("-" for stdin) whole. `onProgress(fraction)` is called as bytes arrive when
 * the size is known.
 */
export async function readBytes(file, { stdin = process.stdin, onProgress } = {}) {
  let stream;
  let size;
  if (file === "-") {
    stream = stdin;
    if (stdin.isTTY) process.stderr.write("reading the conversation from stdin (end it with Ctrl-D)\n");
  } else {
    let stat;
    try {
      stat = statSync(file);
    } catch (err) {
      throw new UsageError(`${file}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
    }
    if (stat.isDirectory()) throw new UsageError(`${file}: is a directory, not a conversation file`);
    size = stat.size;
    stream = createReadStream(file);
  }
  const chunks = [];
  let read = 0;
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      read += chunk.length;
      if (size) onProgress?.(read / size);
    }
  } catch (err) {
    throw new UsageError(`${file === "-" ? "stdin" : file}: ${err.message}`);
  }
  return { bytes: Buffer.concat(chunks), size: size ?? read };
}

/** Where offset `at` of `text` is, as "line L, column C" (from 1). */
function position(text, at) {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < at; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return `line ${line}, column ${at - start + 1}`;
}

/** Where V8's "Unexpected token 'x', ..."context"... is not valid JSON" points, if it can be found. */
function tokenOffset(message, text) {
  const m = /^Unexpected token '(.)', (\.\.\.)?"(.*?)"(\.\.\.)? is not valid JSON$/s.exec(message);
  if (m === null) return undefined;
  const [, token, lead, context] = m;
  const start = text.indexOf(context);
  if (start === -1) return undefined;
  // NOTE: V8 shows up to 10 characters of context either side of the token.
  const at = text.indexOf(token, start + (lead ? 10 : 0));
  return at === -1 ? undefined : at;
}

/** JSON.parse's complaint without the engine's quote of the input, and where it happened. */
function jsonError(err, text) {
  const reason = err.message
    .replace(/, (\.\.\.)?".*"(\.\.\.)? is not valid JSON$/s, "")
    .replace(/ in JSON at position \d+.*$/s, "")
    .replace(/ \(line \d+ column \d+\)$/, "")
    .replace(/^(Unexpected|Expected)/, (w) => w.toLowerCase());
  const at = /at position (\d+)/.exec(err.message)?.[1] ?? tokenOffset(err.message, text);
  return at === undefined ? reason : `${position(text, Number(at))}: ${reason}`;
}

/**
 * The conversation in `bytes`: `{ value, jsonl, lines }`, where `lines[i]` is the line of
 * message i for JSON Lines (so an error at `messages[i]` can name its line).
 */
export function parseConversation(bytes, name) {
  let data = bytes;
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b) {
    try {
      data = gunzipSync(data);
    } catch (err) {
      throw new UsageError(`${name}: not a readable gzip file: ${err.message}`);
    }
  }
  let text = data.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === "") throw new UsageError(`${name}: empty; expected a conversation as JSON or JSON Lines`);
  try {
    return { value: JSON.parse(text), jsonl: false, lines: null, bytes: data.length };
  } catch (whole) {
    // JSON Lines: every non-blank line one JSON value (a message).
    const rows = text.split("\n");
    const nonBlank = rows.findIndex((r) => r.trim() !== "");
    const multi = rows.filter((r) => r.trim() !== "").length > 1;
    let firstParses = false;
    try {
      JSON.parse(rows[nonBlank]);
      firstParses = true;
    } catch {}
    if (!multi || !firstParses) throw new UsageError(`${name}: not JSON (${jsonError(whole, text)})`);
    const value = [];
    const lines = [];
    rows.forEach((row, i) => {
      if (row.trim() === "") return;
      try {
        value.push(JSON.parse(row));
      } catch (err) {
        throw new UsageError(`${name}: line ${i + 1}: not JSON (${jsonError(err, row).replace(/^line 1, /, "")}); read as JSON Lines, one message a line`);
      }
      lines.push(i + 1);
    });
    return { value, jsonl: true, lines, bytes: data.length };
  }
}

/** The size of a file, or null for stdin and files that cannot be read. */
export function sizeOf(file) {
  if (file === "-") return null;
  try {
    return statSync(file).size;
  } catch {
    return null;
  }
}
