// Large tool outputs for the context layer's tests, shared by the browser test (which passes
// these functions' source to the page, so each is self-contained) and the workerd Worker.

/**
 * A deterministic tool output of `lines` lines of uneven length (0 to `maxWords` words, some
 * non-ASCII, every 997th line empty), ending in a line feed.
 */
export function makeOutput(lines = 20_000, { seed = 7, maxWords = 24 } = {}) {
  const words = ["fn", "let", "const", "return", "ошибка", "データ", "naïve", "😀", "src/lib.rs:42", "\tindented", "{\"k\": 1}", "ok"];
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0);
  const out = [];
  for (let i = 1; i <= lines; i++) {
    let line = `L${i}:`;
    const n = next() % maxWords;
    for (let w = 0; w < n; w++) line += " " + words[next() % words.length];
    out.push(i % 997 === 0 ? "" : line);
  }
  return out.join("\n") + "\n";
}

/**
 * Reads an offloaded output whole through `ck.readOffloaded`, 2,000 lines (the most one read
 * returns) at a time, with a line cap no line reaches; throws if a page starts elsewhere than
 * asked or a line was cut.
 */
export async function readAll(ck, id, options) {
  const pages = [];
  let reads = 0;
  let totalLines;
  for (let offset = 1; offset !== null && offset !== undefined; reads++) {
    const read = await ck.readOffloaded(id, { ...options, offset, limit: 2_000, lineChars: 10_000 });
    if (read.offset !== offset) throw new Error(`asked offset ${offset}, got ${read.offset}`);
    if (read.cappedLines !== 0) throw new Error(`${read.cappedLines} lines capped`);
    pages.push(read.text);
    totalLines = read.totalLines;
    offset = read.nextOffset;
  }
  return { text: pages.join("\n") + "\n", reads, totalLines };
}
