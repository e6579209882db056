// Runs a Worker in npm's workerd directly (`workerd serve`, no wrangler dev, no miniflare): the
// one way to hand V8 its flags (workerd.capnp's `v8Flags`), here `--max-heap-size`, which caps
// the isolate's JS heap as Cloudflare's 128 MB limit would; a request that needs more heap
// kills the process (V8's fatal out-of-memory), and the request fails. The Worker is bundled
// by wrangler's own bundler (`wrangler deploy --dry-run`, offline), its Durable Objects kept in
// SQLite files under `disk` (workerd's `localDisk` storage, 2 MB values like Cloudflare's).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, wranglerEnv as env } from "./wrangler.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, "..", "..", "node_modules", ".bin");
const COMPATIBILITY_DATE = "2026-04-01";

/**
 * Bundles the Worker `main` (its imports resolved from `main`'s directory up) into a new
 * directory `dir` and returns it with its modules. `objects`: `{ BINDING: "ClassName" }`, the
 * SQLite-backed Durable Objects it exports.
 * @returns {{ dir: string, modules: { name: string, kind: "esModule" | "wasm" }[], remove: () => void }}
 */
export function bundleWorker(main, objects = {}) {
  const dir = mkdtempSync(join(dirname(main), ".workerd-"));
  const bindings = Object.entries(objects).map(([name, cls]) => `[[durable_objects.bindings]]\nname = "${name}"\nclass_name = "${cls}"\n`).join("");
  const classes = Object.values(objects).map((c) => JSON.stringify(c)).join(", ");
  writeFileSync(join(dir, "wrangler.toml"), `name = "ck-workerd"\nmain = ${JSON.stringify(main)}\ncompatibility_date = "${COMPATIBILITY_DATE}"\n${bindings}${classes ? `[[migrations]]\ntag = "v1"\nnew_sqlite_classes = [${classes}]\n` : ""}`);
  execFileSync(join(bin, "wrangler"), ["deploy", "--dry-run", "--config", join(dir, "wrangler.toml"), "--outdir", join(dir, "out")],
    { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env });
  const modules = readdirSync(join(dir, "out"))
    .filter((f) => f.endsWith(".js") || f.endsWith(".wasm"))
    .map((name) => ({ name, kind: name.endsWith(".wasm") ? "wasm" : "esModule" }))
    // the entry module first: workerd takes the first module as the Worker's main
    .sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === "esModule" ? -1 : 1));
  return { dir, modules, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Serves a bundle in a new workerd; resolves once it answers `GET /`. `heapMiB`: V8's
 * `--max-heap-size` for the isolate (none: V8's default). `disk`: the directory of the Durable
 * Objects' SQLite files (kept across workerd processes, as Cloudflare keeps an object's storage
 * across isolates).
 * @returns {Promise<{ base: string, pid: number, output: () => string, exited: () => boolean, stop: () => Promise<void> }>}
 */
export async function startWorkerd(bundle, { objects = {}, disk, heapMiB } = {}) {
  const port = await freePort();
  const flags = heapMiB === undefined ? "" : `"--max-heap-size=${heapMiB}"`;
  const namespaces = Object.values(objects).map((c) => `(className = "${c}", uniqueKey = "ck-workerd-${c}", enableSql = true)`).join(", ");
  const bindings = Object.entries(objects).map(([name, c]) => `(name = "${name}", durableObjectNamespace = "${c}")`).join(", ");
  const modules = bundle.modules.map((m) => `(name = "${m.name}", ${m.kind} = embed "out/${m.name}")`).join(", ");
  const config = join(bundle.dir, `config-${port}.capnp`);
  writeFileSync(config, `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker)${disk ? `, (name = "disk", disk = (path = ${JSON.stringify(disk)}, writable = true))` : ""} ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
  v8Flags = [ ${flags} ],
);
const worker :Workerd.Worker = (
  modules = [ ${modules} ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  durableObjectNamespaces = [ ${namespaces} ],
  durableObjectStorage = ${disk ? '(localDisk = "disk")' : "(inMemory = void)"},
  bindings = [ ${bindings} ],
);
`);
  const child = spawn(join(bin, "workerd"), ["serve", config, "--experimental"], { stdio: ["ignore", "pipe", "pipe"], env });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const base = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`workerd exited (${child.exitCode ?? child.signalCode}):\n${output}`);
    try {
      if ((await fetch(base)).ok) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`workerd did not serve within 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, pid: child.pid, output: () => output, exited: () => child.exitCode !== null || child.signalCode !== null, stop };
}
