// What the command line writes to a terminal: colours (only on a TTY, never with NO_COLOR),
// text from a conversation made safe to print, numbers, bars, tables and the progress line.
// Nothing here knows of conversations.

/**
 * Colours for `stream`: on a TTY unless NO_COLOR is set (to anything but ""), or TERM is
 * "dumb"; FORCE_COLOR (not "0") turns them on off a TTY, but NO_COLOR still wins.
 */
export function paletteFor(stream, env = process.env) {
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== "";
  const force = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" && env.FORCE_COLOR !== "0";
  const on = !noColor && (force || (Boolean(stream.isTTY) && env.TERM !== "dumb"));
  const wrap = (open, close) => (text) => (on && text !== "" ? `\x1b[${open}m${text}\x1b[${close}m` : String(text));
  return {
    on,
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    blue: wrap(34, 39),
    magenta: wrap(35, 39),
    cyan: wrap(36, 39),
  };
}

// NOTE: a conversation is untrusted text. An escape sequence in a tool result must not move the
// cursor or recolour the terminal, and a bidi override must not reorder what follows, so every
// control character (C0, DEL, C1) and the bidi controls become visible stand-ins.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line of untrusted text: whitespace runs become one space, controls visible. */
export function safeLine(text) {
  return String(text)
    .replace(/[\t\n\r\f\v ]+/g, " ")
    .replace(UNSAFE, (c) => {
      const code = c.charCodeAt(0);
      return code < 0x20 ? String.fromCharCode(0x2400 + code) : code === 0x7f ? "\u2421" : "\ufffd";
    })
    .trim();
}

/** Untrusted text kept on its lines (what a recovery tool returns): controls visible, tabs and newlines kept. */
export function safeText(text) {
  // eslint-disable-next-line no-control-regex
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 ? String.fromCharCode(0x2400 + code) : code === 0x7f ? "\u2421" : "\ufffd";
  });
}

/** `text` cut to `width` characters (code points), with an ellipsis when cut. */
export function clip(text, width) {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  return width <= 1 ? chars.slice(0, width).join("") : chars.slice(0, width - 1).join("") + "…";
}

/** 208537 -> "208,537". */
export const num = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : String(n));

/** A share as a percentage: 0.634 -> "63.4%", 1.63 -> "163%". */
export function pct(part, whole) {
  if (!whole) return "-";
  const p = (100 * part) / whole;
  return p >= 100 ? `${Math.round(p)}%` : `${p.toFixed(1)}%`;
}

// eslint-disable-next-line no-control-regex
const ESCAPES = /\x1b\[[0-9;]*m/g;
/** Visible width of a string we built (our own colour codes taken out). */
export const visible = (text) => Array.from(String(text).replace(ESCAPES, "")).length;

/** Pads to `width` visible characters, on the left for `align: "right"`. */
export function pad(text, width, align = "left") {
  const fill = " ".repeat(Math.max(0, width - visible(text)));
  return align === "right" ? fill + text : text + fill;
}

/** A horizontal bar of `width` cells for `fraction` (0..1), in eighths. */
export function bar(fraction, width) {
  const f = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const eighths = Math.round(f * width * 8);
  const full = Math.floor(eighths / 8);
  const part = eighths % 8;
  const partial = part === 0 ? "" : " ▏▎▍▌▋▊▉"[part];
  return "█".repeat(full) + partial;
}

/**
 * Rows as aligned columns: `columns` is `[{ label, align }]`, each row an array of cells (our
 * own strings, possibly coloured). The last column is clipped to `maxWidth` when given.
 */
export function table(columns, rows, { indent = "  ", maxWidth, paint = (s) => s } = {}) {
  const widths = columns.map((c, i) => Math.max(visible(c.label), ...rows.map((r) => visible(r[i] ?? ""))));
  const last = columns.length - 1;
  if (maxWidth !== undefined) {
    const before = widths.slice(0, last).reduce((a, w) => a + w + 2, indent.length);
    widths[last] = Math.max(10, Math.min(widths[last], maxWidth - before));
  }
  const line = (cells) =>
    indent +
    cells
      .map((cell, i) => {
        let text = String(cell ?? "");
        if (i === last && visible(text) > widths[i]) text = clip(text.replace(ESCAPES, ""), widths[i]);
        return i === last && columns[i].align !== "right" ? text : pad(text, widths[i], columns[i].align);
      })
      .join("  ")
      .trimEnd();
  return [paint(line(columns.map((c) => c.label))), ...rows.map((r) => line(r))].join("\n");
}

/**
 * A progress line on stderr, rewritten in place with "\r" (no escape codes): only when enabled
 * (stderr is a TTY) and once the input is known to be long (`long = true`).
 * `update(label, fraction)`; `clear()` at the end.
 */
export class Progress {
  #stream;
  #enabled;
  long = false;
  #last = "";
  #lastAt = 0;
  #lastLabel = "";

  constructor(stream, enabled) {
    this.#stream = stream;
    this.#enabled = enabled;
  }

  get enabled() {
    return this.#enabled;
  }

  update(label, fraction) {
    if (!this.#enabled || !this.long) return;
    const now = Date.now();
    const width = Math.max(20, Math.min(100, (this.#stream.columns || 80) - 1));
    const barWidth = 24;
    const cells = bar(fraction, barWidth);
    const text = clip(`[${cells}${" ".repeat(barWidth - visible(cells))}] ${Math.round(100 * Math.min(1, fraction))}% ${label}`, width);
    if (text === this.#last || (now - this.#lastAt < 50 && fraction < 1 && label === this.#lastLabel)) return;
    this.#lastLabel = label;
    this.#lastAt = now;
    this.#stream.write(`\r${pad(text, visible(this.#last))}`);
    this.#last = text;
  }

  clear() {
    if (!this.#enabled || this.#last === "") return;
    this.#stream.write(`\r${" ".repeat(visible(this.#last))}\r`);
    this.#last = "";
  }
}
