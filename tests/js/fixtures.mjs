// The golden message fixtures shared with the Rust tests (tests/data/messages), for the Node
// tests: each `<name>.input.json` with its `<name>.expected.json`.
import { readdirSync, readFileSync } from "node:fs";

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
