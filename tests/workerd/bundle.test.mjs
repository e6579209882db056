// What a Worker uploads when it imports one entry: wrangler's own bundling (`wrangler deploy
// --dry-run`, offline) of a one-line Worker per entry must hold exactly that entry's .wasm, so
// a Worker that counts only o200k_base ships only those tables, and one that keeps its context
// with the estimator (/lite) or only estimates (/estimate) ships none.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { wranglerEnv } from "./wrangler.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const wrangler = join(root, "node_modules", ".bin", "wrangler");
// NOTE: inside tests/workerd, so that wrangler resolves "context-keeper" from node_modules.
const dir = mkdtempSync(join(here, ".bundle-"));
after(() => rmSync(dir, { recursive: true, force: true }));
// A config of its own: tests/workerd/wrangler.toml binds Durable Objects these Workers do not export.
const config = join(dir, "wrangler.toml");
writeFileSync(config, 'name = "ck-bundle"\ncompatibility_date = "2026-04-01"\n');

/** The files wrangler would upload for a Worker that imports `specifier` and calls `call`. */
function bundle(name, specifier, call) {
  writeFileSync(join(dir, `${name}.js`), `import * as ck from "${specifier}";\nexport default { fetch: async (req) => Response.json(${call}) };\n`);
  const outdir = join(dir, `${name}-out`);
  execFileSync(wrangler, ["deploy", "--dry-run", "--config", config, "--outdir", outdir, "--name", `ck-${name}`,
    "--compatibility-date", "2026-04-01", join(dir, `${name}.js`)], {
    cwd: dir, stdio: ["ignore", "pipe", "pipe"],
    env: wranglerEnv,
  });
  return Object.fromEntries(readdirSync(outdir).map((file) => [file, readFileSync(join(outdir, file))]));
}

for (const [name, entry, call] of [
  ["main", "", "ck.countTokens(await req.text())"],
  ["o200k", "o200k/", "ck.countTokens(await req.text())"],
  ["cl100k", "cl100k/", 'ck.countTokens(await req.text(), { model: "gpt-4" })'],
  ["lite", "lite/", '{ total: ck.countMessages([{ role: "user", content: await req.text() }]).total, keeper: typeof ck.ContextKeeper }'],
  ["estimate", "estimate/", "ck.estimateTokens(await req.text())"],
]) {
  test(`a Worker importing context-keeper${entry ? `/${entry.slice(0, -1)}` : ""} uploads that entry's .wasm alone`, (t) => {
    const files = bundle(name, `context-keeper${entry ? `/${entry.slice(0, -1)}` : ""}`, call);
    const wasm = Object.entries(files).filter(([file]) => file.endsWith(".wasm"));
    assert.equal(wasm.length, 1, `wasm modules: ${wasm.map(([file]) => file).join(", ")}`);
    const file = `context_keeper${entry ? `_${name}` : ""}_bg.wasm`;
    const expected = readFileSync(join(root, "pkg", entry, "web", file));
    assert.ok(wasm[0][1].equals(expected), `${wasm[0][0]} is not pkg/${entry}web/${file}`);
    const gzip = Object.entries(files).filter(([file]) => !file.endsWith(".map") && !file.endsWith(".md"))
      .reduce((sum, [, bytes]) => sum + gzipSync(bytes, { level: 9 }).length, 0);
    // The free plan's limit is 3 MB compressed. The estimator alone must stay under 60 KiB, the
    // keeper without tables under 420 KiB (it is about 390: bench/README.md, "Entry sizes").
    const limit = { estimate: 60 * 1024, lite: 420 * 1024 }[name] ?? 3 * 1000 * 1000;
    assert.ok(gzip < limit, `${name}: ${gzip} bytes gzip`);
    t.diagnostic(`upload: ${(gzip / 1024).toFixed(1)} KiB gzip`);
  });
}
