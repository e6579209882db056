// The generated agent history of bench/scale.mjs, shared by its Worker (bench/scale/worker.js)
// and its Node probe (bench/scale.mjs --node): deterministic, OpenAI messages.

/** A deterministic pseudo-random generator (xorshift32). */
export function random(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const WORDS = "the of and to in is that for it as with was on be by this are from at or an have not which but can all if will there their one has when more so about what out up into than them some would other its only then these two may could first any like over such also new most after used should where through how each between well very because does here just same both under those while last must being since part found few without down use against never another might until few system value result error return file line test".split(" ");
const CODE = ["def ", "class ", "return ", "import ", "self.", "if ", "else:", "for ", " in range(", "print(", "assert ", "== ", "None", "True", "False", "(", ")", "[", "]", ":", ",", " = ", "+ 1", "_id", "_name", "__init__"];

/** A tool result of about `bytes` bytes: numbered lines of code-like text and prose. */
function output(next, bytes, t) {
  const lines = [];
  let size = 0;
  for (let n = 1; size < bytes; n++) {
    const parts = [];
    const words = 4 + Math.floor(next() * 12);
    for (let w = 0; w < words; w++) parts.push(next() < 0.6 ? WORDS[Math.floor(next() * WORDS.length)] : CODE[Math.floor(next() * CODE.length)] + Math.floor(next() * 1000));
    const line = `file_${t % 97}.py:${n}: ${parts.join(" ")}`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

/** One agent turn: an assistant bash call and its result (every 100th one over the offload limit). */
export function turn(next, t, average) {
  const id = `call_${t}`;
  const big = t % 100 === 99;
  return [
    { role: "assistant", content: `Turn ${t}: looking at file_${t % 97}.py`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat -n src/file_${t % 97}.py` }) } }] },
    { role: "tool", tool_call_id: id, content: output(next, big ? 120_000 : Math.floor(average * (0.25 + 1.5 * next())), t) },
  ];
}

/** A system prompt, the task, then bash turns: `messages` messages of about `bytes` bytes. */
export function history(messages, bytes) {
  const next = random(23);
  const out = [{ role: "system", content: "You are a coding agent. Use the bash tool to read and change files." }, { role: "user", content: "The test suite fails in src/file_3.py; find out why and fix it." }];
  const turns = (messages - out.length) / 2;
  // every 100th result is 120 KB; the others share the rest
  const average = (bytes - Math.floor(turns / 100) * 120_000) / (turns - Math.floor(turns / 100)) - 160;
  for (let t = 0; t < turns; t++) out.push(...turn(next, t, average));
  return out;
}
