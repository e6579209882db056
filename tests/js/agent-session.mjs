// A scripted coding-agent session in each format (OpenAI, Anthropic, AI SDK): the keeper's tests
// of the main entry (keeper.test.mjs) and of /lite (lite.test.mjs) prepare the same turns.

export const SUMMARY = "Intent: fix negative amounts in src/export/csv.rs. Progress: read the export code turn by turn. Next: patch export_row and run cargo test --locked.";

/** One agent turn in `format`: an assistant call of bash and its result (`lines` lines). */
export function turn(format, t, lines = 30) {
  const id = `call_${t}`;
  const command = `sed -n ${t * 40},+40p src/export/csv.rs`;
  const output = Array.from({ length: lines }, (_, l) => `${t}:${l}    let cell = format!("{amount}"); // export_row`).join("\n");
  if (format === "openai") {
    return [
      { role: "assistant", content: `Step ${t}: reading the export.`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command }) } }] },
      { role: "tool", tool_call_id: id, content: output },
    ];
  }
  if (format === "anthropic") {
    return [
      { role: "assistant", content: [{ type: "text", text: `Step ${t}: reading the export.` }, { type: "tool_use", id, name: "bash", input: { command } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: output }] },
    ];
  }
  return [
    { role: "assistant", content: [{ type: "text", text: `Step ${t}: reading the export.` }, { type: "tool-call", toolCallId: id, toolName: "bash", input: { command } }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: id, toolName: "bash", output: { type: "text", value: output } }] },
  ];
}

export function head(format) {
  const task = "The CSV export in src/export/csv.rs drops negative amounts. Fix it and run `cargo test --locked`.";
  if (format === "anthropic") return [{ role: "user", content: task }];
  return [{ role: "system", content: "You are a coding agent." }, { role: "user", content: task }];
}

/** A session of `turns` turns; `history(n)` is the first n turns as a fresh array (same objects). */
export function session(format, turns) {
  const all = [...head(format)];
  const ends = [];
  for (let t = 0; t < turns; t++) {
    all.push(...turn(format, t));
    ends.push(all.length);
  }
  return { all, history: (n) => all.slice(0, ends[n - 1]) };
}

export const FORMATS = ["openai", "anthropic", "aisdk"];
