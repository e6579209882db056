// The golden message fixtures shared with the Rust tests (tests/data/messages), for the Node
// tests: each `<name>.input.json` with its `<name>.expected.json`; and the agent session of
// tests/data/sessions.
import { readdirSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

const dir = new URL("../data/messages/", import.meta.url);

/** Every fixture, by name: `{ name, input, expected }`. */
export const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith(".input.json"))
  .sort()
  .map((f) => {
    const name = f.replace(/\.input\.json$/, "");
    const read = (suffix) => JSON.parse(readFileSync(new URL(`${name}.${suffix}.json`, dir), "utf8"));
    return { name, input: read("input"), expected: read("expected") };
  });

/** The options a fixture was recorded with, as the JS API takes them. */
export const optionsOf = ({ options }) => ({ format: options.format ?? undefined, allowPendingCalls: options.allowPendingCalls });

/** Reports without their prose, which is for humans and free to change. */
export const withoutProse = (items) => items.map(({ message, ...rest }) => rest);

/** The 300-turn agent session of tests/data/sessions in one format (`openai`, `anthropic`,
 * `aisdk`, `ui`), unzipped and parsed afresh on every call. */
export const loadSession = (format) =>
  JSON.parse(gunzipSync(readFileSync(new URL(`../data/sessions/agent-300.${format}.json.gz`, import.meta.url))).toString("utf8"));
