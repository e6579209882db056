// The package as an adopter bundles it into a page: packed with `npm pack`, installed into a fresh
// project, bundled by Vite, webpack 5 and esbuild with the commands README.md gives ("Runtimes",
// browsers and bundlers), run as printed, and loaded in headless Chromium. The page
// (tests/browser/bundlers/) imports the main entry and /lite together, so it needs two .wasm
// files, and each entry counts and runs a keeper's prepare.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { launch } from "./chromium.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const fixture = join(root, "tests", "browser", "bundlers");

/**
 * The README's bundler commands, by tool: each `npx <tool>` line starts a tool's commands, and
 * the lines after it (esbuild's `cp`) are its own. Comments are dropped.
 */
function readmeCommands() {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => /npx esbuild/.test(b));
  assert.ok(block, "README.md has no sh block with the esbuild command");
  const commands = {};
  let tool;
  for (const raw of block.split("\n")) {
    const line = raw.replace(/\s+#.*$/, "").trim();
    if (line === "") continue;
    const npx = line.match(/^npx (\S+)/);
    if (npx) tool = npx[1];
    assert.ok(tool, `a README command before any npx line: ${line}`);
    (commands[tool] ??= []).push(line);
  }
  return commands;
}

const commands = readmeCommands();
let work, base, browser;

before(() => {
  work = mkdtempSync(join(tmpdir(), "ck-bundlers-"));
  // the packed tarball, installed into a fresh project once and copied for each bundler
  const packed = JSON.parse(execFileSync("npm", ["pack", join(root, "pkg"), "--json", "--pack-destination", work], { encoding: "utf8" }))[0];
  base = join(work, "base");
  cpSync(fixture, base, { recursive: true });
  writeFileSync(join(base, "package.json"), JSON.stringify({ name: "bundled-page", private: true, type: "module" }, null, 2));
  execFileSync("npm", ["install", join(work, packed.filename), "--offline", "--no-audit", "--no-fund"], { cwd: base, stdio: ["ignore", "pipe", "pipe"] });
});

after(async () => {
  await browser?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

/** Serves `dir` on loopback; resolves to `{ url, close() }`. */
function serveDir(dir) {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent((req.url ?? "/").split("?")[0]));
    const file = join(dir, path === sep ? "index.html" : path);
    try {
      if (!file.startsWith(dir + sep)) throw new Error("outside");
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((done) => server.listen(0, "127.0.0.1", () => {
    done({ url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((ok) => server.close(ok)) });
  }));
}

for (const tool of ["vite", "webpack", "esbuild"]) {
  test(`a page bundled by ${tool} as the README says loads both entries' .wasm, counts and prepares`, async (t) => {
    assert.ok(commands[tool], `README.md gives no ${tool} command`);
    const project = join(work, tool);
    cpSync(base, project, { recursive: true });
    // the README's commands, as printed; the bundlers are the workspace's (package.json pins them)
    const env = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}`, NO_COLOR: "1" };
    for (const command of commands[tool]) {
      t.diagnostic(command);
      execFileSync("bash", ["-c", command.replace(/^npx /, "")], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
    }
    const dist = join(project, "dist");
    // Vite writes the page; for the others the app's page loads the bundle
    if (!existsSync(join(dist, "index.html"))) {
      writeFileSync(join(dist, "index.html"), '<!doctype html><meta charset="utf-8"><script type="module" src="main.js"></script>\n');
    }
    const wasm = readdirSync(dist, { recursive: true }).filter((f) => String(f).endsWith(".wasm"));
    assert.equal(wasm.length, 2, `the .wasm files in dist/: ${wasm.join(", ")}`);

    const server = await serveDir(dist);
    browser ??= await launch();
    const page = await browser.context.newPage();
    const failed = [];
    const errors = [];
    page.on("response", (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));
    page.on("pageerror", (err) => errors.push(String(err)));
    try {
      await page.goto(server.url);
      await page.waitForFunction(() => globalThis.result !== undefined, null, { timeout: 30_000 });
      const result = await page.evaluate(() => globalThis.result);
      assert.deepEqual(failed, [], "requests that failed");
      assert.deepEqual(errors, [], "errors the page threw");
      assert.equal(result.error, undefined, result.error);
      assert.equal(result.tokens, 2, "countTokens('hello world') with o200k_base");
      assert.deepEqual(result.exact, [true, false], "countMessages is exact in the main entry, estimated in /lite");
      assert.deepEqual(result.internal, [], "the driver's own functions exported");
      for (const entry of ["main", "lite"]) {
        const r = result[entry];
        // the log (about 40,000 tokens) cannot fit a 16,000-token window: it is offloaded whole
        assert.equal(r.decision, "offloaded", `${entry}: ${JSON.stringify(r)}`);
        assert.ok(r.fits && r.after < 16_000 && r.before > 30_000, `${entry}: ${JSON.stringify(r)}`);
        assert.equal(r.stored, 1, `${entry}: the offloaded result`);
        assert.equal(r.messages, 4, entry);
      }
    } finally {
      await page.close();
      await server.close();
    }
  });
}
