// A small static file server for the demo page and the browser tests: it serves www/ at /, the
// built package at /pkg/ and the bundled sample conversations (tests/data/) at /samples/, on
// loopback only. A `.gz` file is sent as it is (application/gzip): the page decompresses it.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".ts": "text/plain; charset=utf-8",
  ".gz": "application/gzip",
};

/** URL prefixes served from folders other than www/. */
const folders = [
  [`${sep}pkg${sep}`, join(root, "pkg")],
  [`${sep}samples${sep}`, join(root, "tests", "data")],
];

/** Maps a URL path to a file under www/, pkg/ or tests/data/, or null if it points anywhere else. */
function resolve(urlPath) {
  const path = normalize(decodeURIComponent(urlPath.split("?")[0]));
  const folder = folders.find(([prefix]) => path.startsWith(prefix));
  const [base, rest] = folder
    ? [folder[1], path.slice(folder[0].length)]
    : [join(root, "www"), path === sep ? "index.html" : path];
  const file = join(base, rest);
  return file.startsWith(base + sep) ? file : null;
}

/**
 * Starts the server; resolves to `{ url, close() }` once it listens.
 * @param {{ port?: number, host?: string }} [options] port 0 picks a free one.
 */
export function serve({ port = 0, host = "127.0.0.1" } = {}) {
  const server = createServer(async (req, res) => {
    const file = resolve(req.url ?? "/");
    try {
      if (!file) throw Object.assign(new Error("outside the served folders"), { code: "ENOENT" });
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
      res.end(body);
    } catch (err) {
      res.writeHead(err.code === "ENOENT" || err.code === "EISDIR" ? 404 : 500, { "content-type": "text/plain" });
      res.end(String(err.message));
    }
  });
  return new Promise((done, fail) => {
    server.once("error", fail);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      done({ url: `http://${host}:${actual}/`, close: () => new Promise((ok) => server.close(ok)) });
    });
  });
}
