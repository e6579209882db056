// Starts `wrangler dev` on 127.0.0.1 for tests/workerd/wrangler.toml (a real workerd with
// miniflare's local bindings) and stops it by its own process group.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const wrangler = join(here, "..", "..", "node_modules", ".bin", "wrangler");

/** The environment of wrangler and workerd: offline, no metrics, no colour. */
export const wranglerEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", CI: "true", NO_COLOR: "1" };

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once("error", reject).listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Serves the test Worker; resolves once it answers. `persistTo`: where the bindings keep their
 * data (wrangler's default is .wrangler/state under tests/workerd). `config`: a wrangler config
 * of a test's own, in place of tests/workerd/wrangler.toml.
 * `pid` is wrangler's, the leader of the process group that holds the workerd it started.
 * @returns {Promise<{ base: string, pid: number, output: () => string, stop: () => Promise<void> }>}
 */
export async function startWrangler({ persistTo, config = join(here, "wrangler.toml") } = {}) {
  const [port, inspector] = [await freePort(), await freePort()];
  const args = ["dev", "--config", config, "--ip", "127.0.0.1",
    "--port", String(port), "--inspector-port", String(inspector), "--log-level", "info"];
  if (persistTo) args.push("--persist-to", persistTo);
  const child = spawn(wrangler, args, {
    cwd: here,
    detached: true, // its own process group, so the workerd it starts is stopped with it
    stdio: ["ignore", "pipe", "pipe"],
    env: wranglerEnv,
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-child.pid, "SIGTERM");
    const timer = setTimeout(() => { try { process.kill(-child.pid, "SIGKILL"); } catch {} }, 5_000);
    await exited;
    clearTimeout(timer);
  };
  const base = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`${base}?text=ready`);
      if (res.ok) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`wrangler did not serve within 90 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { base, pid: child.pid, output: () => output, stop };
}
