#!/usr/bin/env node
// Builds the npm package into pkg/: one `wasm-pack build` per entry of wasm-pack.toml, an
// optional wasm-opt pass with npm's binaryen, then pkg-template/ with the version of Cargo.toml.
//
//   node scripts/build.mjs          release build into pkg/
//   node scripts/build.mjs --dev    debug build (faster to compile, large and slow .wasm)
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync, brotliCompressSync, constants as zlib } from "node:zlib";
import { parse as parseToml } from "smol-toml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dev = process.argv.includes("--dev");
const crateName = "context_keeper";
const staging = join(root, ".build");
const out = join(root, "pkg");

const matrix = parseToml(readFileSync(join(root, "wasm-pack.toml"), "utf8"));
const cargo = parseToml(readFileSync(join(root, "Cargo.toml"), "utf8"));

function run(cmd, args, options = {}) {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  execFileSync(cmd, args, { stdio: "inherit", cwd: root, ...options });
}

const builds = matrix.build ?? [];
if (builds.length === 0) throw new Error("wasm-pack.toml lists no [[build]]");

rmSync(staging, { recursive: true, force: true });
for (const { dir, target, features = [] } of builds) {
  const args = ["build", dev ? "--dev" : "--release", "--target", target, "--no-pack",
    "--out-dir", join(staging, dir), "--out-name", crateName];
  if (features.length > 0) args.push("--", "--features", features.join(","));
  run("wasm-pack", args);
}

const wasmOpt = join(root, "node_modules", ".bin", "wasm-opt");
const optimize = !dev && matrix["wasm-opt"]?.enabled && existsSync(wasmOpt);
if (optimize) {
  for (const { dir } of builds) {
    const wasm = join(staging, dir, `${crateName}_bg.wasm`);
    run(wasmOpt, [...matrix["wasm-opt"].args, wasm, "-o", wasm]);
  }
} else if (!dev) {
  console.warn("build: wasm-opt skipped (npm's binaryen is not installed; run scripts/setup)");
}

rmSync(out, { recursive: true, force: true });
cpSync(join(root, "pkg-template"), out, { recursive: true });
for (const { dir, target } of builds) {
  const from = join(staging, dir);
  mkdirSync(join(out, dir), { recursive: true });
  for (const file of readdirSync(from)) {
    if (file.endsWith(".js") || file.endsWith(".d.ts") || file.endsWith(".wasm")) {
      cpSync(join(from, file), join(out, dir, file));
    }
  }
  // NOTE: the package is "type": "module"; the nodejs target's output is CommonJS.
  if (target === "nodejs") writeFileSync(join(out, dir, "package.json"), '{ "type": "commonjs" }\n');
}

const manifest = JSON.parse(readFileSync(join(out, "package.json"), "utf8"));
manifest.version = cargo.package.version;
writeFileSync(join(out, "package.json"), JSON.stringify(manifest, null, 2) + "\n");

for (const { dir } of builds) {
  const wasm = readFileSync(join(out, dir, `${crateName}_bg.wasm`));
  const gzip = gzipSync(wasm, { level: 9 }).length;
  const brotli = brotliCompressSync(wasm, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }).length;
  const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
  console.log(`${relative(root, join(out, dir))}/${crateName}_bg.wasm: ${kb(wasm.length)} raw, ${kb(gzip)} gzip, ${kb(brotli)} brotli`);
}
console.log(`build: wrote ${relative(process.cwd(), out) || "."}/ (context-keeper ${manifest.version}${dev ? ", dev" : ""})`);
