// vitest for automerge-repo's adapter suite (tests/automerge/stores.test.mjs).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["*.test.mjs"],
    // Every case, but the insertion-order one for stores that return key order (see the test file).
    testNamePattern: /^(?!.*key order.*should return all the data that matches the key)/,
    testTimeout: 60_000,
  },
});
