// Every JavaScript block of README.md and of the npm README (pkg-template/README.md), pasted into
// a fresh project that installed the packed tarball and the SDKs the blocks call (`openai`,
// `@anthropic-ai/sdk`, `ai` 7 at the versions package.json pins), compiles with `tsc --strict`
// (issue #42: "a new user can paste any README snippet into a strict TypeScript project").
//
// What a block leaves to the reader's app (the `history` they keep, their `sessionId`, an SDK
// client) is declared ahead of it with the type that app would have, and only where the block
// does not make it itself. A block whose sections each start with a comment after a blank line
// (one recipe per SDK) is checked section by section, as a reader pastes one of them; a section
// of options (`summarize: ...`) is checked inside the keeper's options it belongs in. The blocks
// that are run rather than type-checked are named in RUN_ELSEWHERE with the test that runs them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Blocks that are run as printed instead (a marker they hold, and the test that runs them). */
const RUN_ELSEWHERE = [
  ["class MapStore", "tests/js/stores.test.mjs, \"the README's ten-line custom adapter\""],
  ['from "cloudflare:workers"', "tests/workerd/readme.test.mjs"],
  ["tokens: countTokens(await request.text()", "tests/workerd/readme.test.mjs"],
];

/** What a block may leave to the reader's app, by the kind of recipe it is in. */
const OPENAI = "__OpenAI.Chat";
/** A message list in each SDK's own type (a history, or the AI SDK's step messages). */
const MESSAGES = { openai: `${OPENAI}.ChatCompletionMessageParam[]`, anthropic: "__Anthropic.MessageParam[]", aisdk: "__ai.ModelMessage[]" };
const STORE = { any: "__stores.MemoryStore" };
const APP = {
  history: MESSAGES,
  messages: MESSAGES,
  tools: { openai: `${OPENAI}.ChatCompletionTool[]`, anthropic: "__Anthropic.Tool[]", aisdk: "__ai.ToolSet" },
  myTools: { openai: `${OPENAI}.ChatCompletionTool[]` },
  model: { openai: "string", anthropic: "string", aisdk: "__ai.LanguageModel" },
  max_tokens: { any: "number" },
  system: { any: "string" },
  sessionId: { any: "string" },
  store: STORE,
  persistentStore: STORE,
  persistent: STORE,
  // Anthropic's usage, read apart for calibration, and the messages it was for
  usage: { any: "__Anthropic.Usage" },
  request: { any: "__Anthropic.MessageParam[]" },
  output: { any: "string" },
  call: { any: `${OPENAI}.ChatCompletionMessageFunctionToolCall` },
  keeper: { any: "__ck.ContextKeeper" },
  openai: { openai: "__OpenAI", anthropic: "__OpenAI", aisdk: "(modelId: string) => __ai.LanguageModel" },
  anthropic: { any: "__Anthropic" },
  callYourModel: { any: "(prompt: string, transcript: string) => Promise<string>" },
  callYourCheapModel: { any: "(prompt: string, transcript: string) => Promise<string>" },
  env: { any: "{ MY_KV: ConstructorParameters<typeof __stores.KVStore>[0] }" },
  ctx: { any: "{ storage: ConstructorParameters<typeof __stores.DurableObjectStore>[0] }" },
};
/** Functions of the AI SDK a recipe calls without importing them. */
const AI_FUNCTIONS = ["generateText", "stepCountIs", "jsonSchema"];

/** The fenced js blocks of a README, dedented (a block inside a list item is indented). */
function blocks(file) {
  const text = readFileSync(join(root, file), "utf8");
  const out = [];
  for (const match of text.matchAll(/^( *)```(js|ts)\n([\s\S]*?)\n *```/gm)) {
    const indent = match[1].length;
    const code = match[3].split("\n").map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length))).join("\n");
    out.push({ file, line: text.slice(0, match.index).split("\n").length, code });
  }
  return out;
}

/** A block's sections: one when it does not start with a comment, else one per commented recipe. */
function sections(code) {
  if (!code.startsWith("//")) return [code];
  return code.split(/\n\s*\n(?=\/\/)/);
}

/** The names a section defines (imports, declarations, destructuring). */
function defined(code) {
  const names = new Set();
  for (const m of code.matchAll(/^import\s+(?:type\s+)?([\s\S]*?)\s+from\s/gm)) {
    for (const part of m[1].replace(/[{}]/g, ",").split(",")) {
      const name = part.trim().split(/\s+as\s+|\*\s+as\s+/).pop()?.trim();
      if (name) names.add(name.replace(/^\*\s*as\s*/, ""));
    }
  }
  for (const m of code.matchAll(/\b(?:const|let|var|class|function)\s+(\w+)/g)) names.add(m[1]);
  for (const m of code.matchAll(/\b(?:const|let|var)\s*\{([^}]*)\}/g)) {
    for (const part of m[1].split(",")) {
      const name = part.split(":").pop()?.split("=")[0].trim();
      if (name) names.add(name);
    }
  }
  return names;
}

/** The file a reader would have: what their app holds, declared, then the section. */
function pasted(section) {
  const kind = /\banthropic\./.test(section) ? "anthropic" : /\b(generateText|stepCountIs|prepareStep)\b/.test(section) ? "aisdk" : "openai";
  const options = /^(?:\/\/.*\n)*\s*\w+: /.test(section);
  const code = options
    ? `import { ContextKeeper } from "context-keeper";\nimport { MemoryStore } from "context-keeper/stores";\nnew ContextKeeper({ model: "gpt-4o", store: new MemoryStore(),\n${section}\n});`
    : section;
  const own = defined(code);
  // (a name after a single dot is a property; after a spread's three, a use)
  const bare = code.replace(/\/\/.*$/gm, "").replaceAll("...", " ");
  const uses = (name) => new RegExp(`(?<![\\w.$])${name}\\b`).test(bare);
  const lines = [
    'import type __OpenAI from "openai";',
    'import type __Anthropic from "@anthropic-ai/sdk";',
    'import type * as __ai from "ai";',
    'import type * as __ck from "context-keeper";',
    'import type * as __stores from "context-keeper/stores";',
  ];
  const fromAi = AI_FUNCTIONS.filter((name) => uses(name) && !own.has(name));
  if (fromAi.length > 0) lines.push(`import { ${fromAi.join(", ")} } from "ai";`);
  for (const [name, types] of Object.entries(APP)) {
    if (own.has(name) || !uses(name)) continue;
    const type = types[kind] ?? types.any;
    if (type === undefined) throw new Error(`no type for \`${name}\` in a ${kind} recipe`);
    lines.push(`declare const ${name}: ${type};`);
  }
  return `${lines.join("\n")}\n// ---- the README's code ----\n${code}\nexport {};\n`;
}

let work;
const files = [];

before(() => {
  work = mkdtempSync(join(tmpdir(), "ck-readme-types-"));
  const packed = JSON.parse(execFileSync("npm", ["pack", join(root, "pkg"), "--json", "--pack-destination", work], { encoding: "utf8" }))[0];
  const project = join(work, "app");
  mkdirSync(join(project, "node_modules", "@types"), { recursive: true });
  mkdirSync(join(project, "node_modules", "@anthropic-ai"), { recursive: true });
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  execFileSync("npm", ["install", join(work, packed.filename), "--offline", "--no-audit", "--no-fund", "--no-save"], { cwd: project, stdio: ["ignore", "pipe", "pipe"] });
  // the SDKs at the workspace's pinned versions (AI SDK 7 is installed there as `ai7`)
  for (const [name, from] of [["openai", "openai"], ["@anthropic-ai/sdk", "@anthropic-ai/sdk"], ["ai", "ai7"], ["@types/node", "@types/node"]]) {
    symlinkSync(join(root, "node_modules", from), join(project, "node_modules", name), "dir");
  }
  for (const file of ["README.md", "pkg-template/README.md"]) {
    for (const block of blocks(file)) {
      const elsewhere = RUN_ELSEWHERE.find(([marker]) => block.code.includes(marker));
      if (elsewhere) continue;
      sections(block.code).forEach((section, i) => {
        const name = `${file.replace(/\W+/g, "_")}_${block.line}_${i}.ts`;
        writeFileSync(join(project, name), pasted(section));
        files.push({ name, where: `${file}:${block.line}${i ? ` (section ${i + 1})` : ""}` });
      });
    }
  }
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, target: "es2022", module: "esnext", moduleResolution: "bundler",
      lib: ["es2022", "dom"], types: ["node"], skipLibCheck: true,
    },
    files: files.map((f) => f.name),
  }, null, 2));
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test("every README block not run elsewhere compiles in a strict TypeScript project", (t) => {
  assert.ok(files.length >= 25, `only ${files.length} blocks found`);
  t.diagnostic(`${files.length} files: ${files.map((f) => f.where).join(", ")}`);
  let out = "";
  try {
    execFileSync(join(root, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: join(work, "app"), encoding: "utf8" });
  } catch (err) {
    out = String(err.stdout);
  }
  // each error named by the README block it is in
  const errors = out.split("\n").filter((l) => /error TS/.test(l)).map((line) => {
    const file = files.find((f) => line.startsWith(f.name));
    return file ? `${file.where}: ${line.slice(file.name.length)}` : line;
  });
  assert.deepEqual(errors, []);
});

test("the blocks run elsewhere are still in the README", () => {
  const all = ["README.md", "pkg-template/README.md"].flatMap(blocks).map((b) => b.code).join("\n");
  for (const [marker, where] of RUN_ELSEWHERE) assert.ok(all.includes(marker), `${marker} (run by ${where}) is gone`);
});
