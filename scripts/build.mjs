#!/usr/bin/env node
// Builds the npm package into pkg/ from the matrix in wasm-pack.toml: for each entry (a feature
// set), one `cargo build` for wasm32, one `wasm-bindgen` per target, one wasm-opt pass with npm's
// binaryen (in the background, while cargo builds the next entry); then pkg-template/ with the
// version of Cargo.toml, and each entry's modules. An entry with `node-features` gets a second
// build for its nodejs target, which reads its tables from the `<enc>.tables` files placed
// next to its glue.
//
//   node scripts/build.mjs          release build into pkg/
//   node scripts/build.mjs --dev    debug build (faster to compile, large and slow .wasm)
//
// NOTE: wasm-pack would run cargo once per target; this script runs it once per feature set
// and calls wasm-bindgen itself (the version Cargo.toml pins, as scripts/setup installs it).
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync, brotliCompressSync, constants as zlib } from "node:zlib";
import { parse as parseToml } from "smol-toml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dev = process.argv.includes("--dev");
const crateName = "context_keeper";
/**
 * The file names of an entry's build: `context_keeper` for the main entry, and
 * `context_keeper_<dir>` for a subpath entry (`lite/web/context_keeper_lite_bg.wasm`), so that
 * bundlers, CDNs and people copying `.wasm` files next to a bundle cannot mix two entries up.
 */
const outName = (entry) => (entry.dir ? `${crateName}_${entry.dir}` : crateName);
const staging = join(root, ".build");
const out = join(root, "pkg");
const started = performance.now();

const matrix = parseToml(readFileSync(join(root, "wasm-pack.toml"), "utf8"));
const cargoToml = readFileSync(join(root, "Cargo.toml"), "utf8");
const cargo = parseToml(cargoToml);

/** The modules of pkg-template/ that every entry gets a copy of, next to its targets' dirs. */
const ENTRY_MODULES = ["browser.js", "workerd.js", "index.d.ts"];

/**
 * Whether an export of the wasm-bindgen glue is the driver's own (`__ckPrune`, `__CkKeeper`):
 * the context driver reaches those through the glue's module object, and no entry exports them.
 */
const internal = (name) => name.startsWith("__");

/** The context layer's functions, as every entry with the layer exports them. */
const CONTEXT_EXPORTS = [
  "pruneMessages", "evictToolInputs", "offloadToolResult", "offloadMessages",
  "readOffloaded", "listOffloaded", "grepOffloaded", "recoveryTools", "runRecoveryTool", "compact", "rollingWindow", "readArchive", "activeMessages", "ContextKeeper",
];

function run(cmd, args, options = {}) {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  return execFileSync(cmd, args, { stdio: "inherit", cwd: root, ...options });
}

/** Runs `cmd` without blocking this script; resolves when it exits 0. */
function runInBackground(cmd, args) {
  console.log(`$ ${cmd} ${args.join(" ")} &`);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: "inherit", cwd: root });
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${signal ?? code}`)));
  });
}

const entries = matrix.entry ?? [];
const targets = Object.entries(matrix.targets ?? {});
if (entries.length === 0) throw new Error("wasm-pack.toml lists no [[entry]]");
if (targets.length === 0) throw new Error("wasm-pack.toml lists no [targets]");

// wasm-bindgen's CLI must be the exact version of the crate (the `=` pin in Cargo.toml).
const pinned = cargoToml.match(/^wasm-bindgen = \{ version = "=([^"]+)"/m)?.[1];
const cli = execFileSync("wasm-bindgen", ["--version"], { encoding: "utf8" }).trim().split(" ")[1];
if (pinned && cli !== pinned) {
  throw new Error(`wasm-bindgen ${cli} is installed but Cargo.toml pins ${pinned}; run scripts/setup`);
}

const targetDir = JSON.parse(execFileSync("cargo", ["metadata", "--format-version", "1", "--no-deps"],
  { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 })).target_directory;
/** Where cargo writes the .wasm of a build with `profile` (wasm-pack.toml's `profile`, else release). */
const cargoWasm = (profile) =>
  join(targetDir, "wasm32-unknown-unknown", dev ? "debug" : profile ?? "release", `${crateName}.wasm`);

const wasmOpt = join(root, "node_modules", ".bin", "wasm-opt");
const optimize = !dev && matrix["wasm-opt"]?.enabled && existsSync(wasmOpt);
if (!dev && !optimize) console.warn("build: wasm-opt skipped (npm's binaryen is not installed; run scripts/setup)");

/** Where an entry's files are staged, and where they go in pkg/. */
const stagedDir = (entry) => join(staging, entry.dir || "_default");
const packageDir = (entry) => join(out, entry.dir);

/** The workspace's counting engine (engine/), whose build script writes the tables. */
const ENGINE = "context-keeper-engine";

/**
 * `cargo build` of the crate for wasm32 with `features` (and `env`) in Cargo profile `profile`
 * (release when absent); returns the engine's OUT_DIR, where engine/build.rs wrote the tables.
 */
function cargoBuild(features, profile, env = {}) {
  const args = ["build", "--lib", "--target", "wasm32-unknown-unknown", "--no-default-features",
    "--message-format=json-render-diagnostics"];
  if (!dev) args.push("--profile", profile ?? "release");
  if (features.length > 0) args.push("--features", features.join(","));
  const json = run("cargo", args, { stdio: ["inherit", "pipe", "inherit"], encoding: "utf8",
    maxBuffer: 64 << 20, env: { ...process.env, ...env } });
  const outDir = json.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line))
    .find((m) => m.reason === "build-script-executed" && m.package_id.includes(ENGINE))?.out_dir;
  if (!outDir) throw new Error(`cargo build: no OUT_DIR reported for ${ENGINE}'s build script`);
  return outDir;
}

/**
 * Runs wasm-bindgen for each `[dirName, target]` of `targetList` on the wasm cargo just built
 * in `profile`.
 */
function bindgen(dir, targetList, profile, name) {
  mkdirSync(dir, { recursive: true });
  // NOTE: copied aside, since cargo writes every feature set's .wasm to the same path.
  const input = join(dir, `${crateName}.wasm`);
  cpSync(cargoWasm(profile), input);
  const outputs = [];
  for (const [targetDirName, target] of targetList) {
    const args = [input, "--out-dir", join(dir, targetDirName), "--out-name", name, "--target", target];
    if (dev) args.push("--debug");
    run("wasm-bindgen", args);
    outputs.push(join(dir, targetDirName, `${name}_bg.wasm`));
  }
  rmSync(input);
  if (!optimize) return;
  // wasm-bindgen writes the same .wasm for every target; optimise it once and copy the result.
  const [first, ...rest] = outputs;
  const same = rest.filter((path) => readFileSync(path).equals(readFileSync(first)));
  const separate = rest.filter((path) => !same.includes(path));
  for (const path of [first, ...separate]) {
    const done = runInBackground(wasmOpt, [...matrix["wasm-opt"].args, path, "-o", path]);
    optimizing.push(path === first ? done.then(() => same.forEach((copy) => cpSync(first, copy))) : done);
  }
}

/** The staged Node build of an entry with `node-features`, and the tables files it reads. */
const hostStagedDir = (entry) => join(stagedDir(entry), "_host");
/** The Cargo features that add an encoding; engine/build.rs writes each one's `<feature>.tables`. */
const ENCODING_FEATURES = ["o200k", "cl100k"];

rmSync(staging, { recursive: true, force: true });
const optimizing = [];
for (const entry of entries) {
  const features = entry.features ?? [];
  const nodeFeatures = entry["node-features"] ?? [];
  cargoBuild(features, entry.profile);
  // An entry with a Node build of its own has its nodejs target made from that build.
  const own = nodeFeatures.length > 0;
  bindgen(stagedDir(entry), own ? targets.filter(([, target]) => target !== "nodejs") : targets, entry.profile, outName(entry));
  if (!own) continue;
  const outDir = cargoBuild([...features, ...nodeFeatures], entry.profile, { CONTEXT_KEEPER_TABLES_DIR: "." });
  const host = hostStagedDir(entry);
  bindgen(host, targets.filter(([, target]) => target === "nodejs"), entry.profile, outName(entry));
  for (const feature of features.filter((f) => ENCODING_FEATURES.includes(f))) {
    cpSync(join(outDir, `${feature}.tables`), join(host, `${feature}.tables`));
  }
}
await Promise.all(optimizing);

// NOTE: wasm-bindgen writes the same .wasm for every target. The package ships it once, in the
// web target's directory (where browsers, bundlers and workerd look for it), and the nodejs
// target's glue reads it from there.
const shared = targets.find(([, target]) => target === "web")?.[0];

rmSync(out, { recursive: true, force: true });
cpSync(join(root, "pkg-template"), out, { recursive: true });
for (const entry of entries) {
  const from = stagedDir(entry);
  const to = packageDir(entry);
  mkdirSync(to, { recursive: true });
  // NOTE: the error class (pkg-template/errors.js) and the context layer's driver
  // (pkg-template/context/) are shared by every entry, so the class is one class; an entry built
  // without the layer (estimate) leaves out the driver's lines.
  const context = hasContextLayer(entry);
  const name = outName(entry);
  const glueNames = webGlueExports(entry);
  for (const file of [...ENTRY_MODULES, ...(entry.dir ? [] : ["init.js"])]) {
    writeFileSync(join(to, file), entryModule(readFileSync(join(root, "pkg-template", file), "utf8"), entry, context, glueNames));
  }
  for (const [targetDirName, target] of targets) {
    mkdirSync(join(to, targetDirName), { recursive: true });
    const own = target === "nodejs" && (entry["node-features"] ?? []).length > 0;
    const readsShared = target === "nodejs" && shared && !own;
    if (own) {
      const host = hostStagedDir(entry);
      for (const file of readdirSync(host).filter((f) => f.endsWith(".tables"))) {
        cpSync(join(host, file), join(to, targetDirName, file));
      }
    }
    const staged = own ? join(hostStagedDir(entry), targetDirName) : join(from, targetDirName);
    for (const file of readdirSync(staged)) {
      if (file.endsWith(".js") || file.endsWith(".d.ts") || (file.endsWith(".wasm") && !readsShared)) {
        cpSync(join(staged, file), join(to, targetDirName, file));
      }
    }
    if (target !== "nodejs") continue;
    // NOTE: the package is "type": "module"; the nodejs target's output is CommonJS.
    writeFileSync(join(to, targetDirName, "package.json"), '{ "type": "commonjs" }\n');
    if (readsShared) {
      const glue = join(to, targetDirName, `${name}.js`);
      const line = `const wasmPath = \`\${__dirname}/${name}_bg.wasm\`;`;
      const text = readFileSync(glue, "utf8");
      if (!text.includes(line)) throw new Error(`${glue}: no \`${line}\` to point at ../${shared}/`);
      writeFileSync(glue, text.replace(line, line.replace("${__dirname}/", `\${__dirname}/../${shared}/`)));
    }
    const glue = join(to, targetDirName, `${name}.js`);
    writeFileSync(join(to, "node.cjs"), nodeRequire(targetDirName, entry, context));
    writeFileSync(join(to, "node.js"), nodeModule(glue, context));
  }
}

/**
 * Node's `import` entry: an ES module that `require`s the CommonJS build and re-exports its
 * names. One instance serves `import` and `require` alike, and Node skips the ESM-to-CommonJS
 * translation of an `import` of the CommonJS file itself (its source scan, its wrapper), which
 * measured about 3 ms of the import.
 */
function nodeModule(cjsPath, context) {
  const names = [...readFileSync(cjsPath, "utf8").matchAll(/^exports\.(\w+) = /gm)].map((m) => m[1]).filter((name) => !internal(name));
  if (names.length === 0) throw new Error(`${cjsPath}: no exports found`);
  names.push("ContextKeeperError", ...(context ? CONTEXT_EXPORTS : []));
  return [
    "// Node's `import` entry (generated by scripts/build.mjs): the CommonJS build through",
    "// `require`, so `import` and `require` share one instance and Node does not translate it.",
    'import { createRequire } from "node:module";',
    "",
    'const api = createRequire(import.meta.url)("./node.cjs");',
    `export const {\n  ${names.join(",\n  ")},\n} = api;`,
    "",
  ].join("\n");
}

/**
 * Node's `require` entry (generated): the CommonJS build with the error class registered and
 * (in an entry with the context layer) the context driver bound to it, so `require` and
 * `import` get the same functions and the same error class.
 */
function nodeRequire(targetDirName, entry, context) {
  const up = entry.dir ? ".." : ".";
  return [
    "// Node's `require` entry (generated by scripts/build.mjs): the CommonJS build, its errors",
    context ? "// made with the package's class, and the context layer's driver bound to it." : "// made with the package's class.",
    '"use strict";',
    `const api = require("./${targetDirName}/${outName(entry)}.js");`,
    `const { ContextKeeperError, registerInstance } = require("${up}/errors.cjs");`,
    ...(context ? [`const { bindContext } = require("${up}/context/index.cjs");`] : []),
    "",
    "registerInstance(api);",
    "// (the driver's own exports of the build, `__ck...`, stay with the driver)",
    `const exported = Object.fromEntries(Object.entries(api).filter(([name]) => !name.startsWith("__")));`,
    `module.exports = { ...exported, ContextKeeperError${context ? ", ...bindContext(api)" : ""} };`,
    "",
  ].join("\n");
}

/**
 * A module of pkg-template as CommonJS, for Node's `require`: the same source with its `export`
 * keywords taken off and the names assigned to `module.exports`, and its imports of other
 * modules of the package (`import { a } from "../errors.js"`) made `require`s of their copies.
 */
function commonJS(source, from) {
  const names = [];
  const out = source
    .replace(/^export (class|function|const) (\w+)/gm, (_, keyword, name) => {
      names.push(name);
      return `${keyword} ${name}`;
    })
    .replace(/^import \{ ([\w, ]+) \} from "(\.\.?\/[\w/-]+)\.js";$/gm, (_, bindings, path) => `const { ${bindings} } = require("${path}.cjs");`);
  if (/^export /m.test(out) || /^import /m.test(out)) throw new Error(`${from}: an export or import the CommonJS copy cannot take`);
  const file = from.split("/").pop();
  return `"use strict";\n// Generated from ${file} by scripts/build.mjs: the same module, as CommonJS.\n${out}\nmodule.exports = { ${names.join(", ")} };\n`;
}

/** The names an entry's web glue exports for callers: every export but the driver's own. */
function webGlueExports(entry) {
  const glue = readFileSync(join(stagedDir(entry), shared, `${outName(entry)}.js`), "utf8");
  const names = [...glue.matchAll(/^export (?:function|class|const) (\w+)/gm)].map((m) => m[1]);
  for (const m of glue.matchAll(/^export \{([^}]*)\};?$/gm)) {
    for (const part of m[1].split(",")) {
      const name = part.trim().split(/\s+as\s+/).pop();
      if (name && name !== "default") names.push(name);
    }
  }
  if (!names.includes("countMessages") && !names.includes("estimateTokens")) throw new Error(`${entry.dir || "main"}: no exports found in its web glue`);
  return names.filter((name) => !internal(name));
}

/** Whether an entry's build has the context layer: its glue exports the core's `__ckPrune`. */
function hasContextLayer(entry) {
  const glue = join(stagedDir(entry), shared, `${outName(entry)}.js`);
  return /export function __ckPrune\b/.test(readFileSync(glue, "utf8"));
}

/**
 * An entry module of pkg-template for an entry's directory: the shared error class and context
 * driver are one directory up from a subpath entry, its build's files have the entry's names
 * (`./web/context_keeper_lite.js`), and an entry without the layer drops its lines (marked
 * `// context`).
 */
function entryModule(text, entry, context, glueNames) {
  let lines = text.split("\n");
  if (!context) lines = lines.filter((line) => !line.endsWith("// context"));
  let out = lines.join("\n");
  // `export *` of the glue would export the driver's own functions: the names are listed
  const own = new Set([
    ...[...out.matchAll(/^export (?:async )?(?:function|class|const) (\w+)/gm)].map((m) => m[1]),
    ...[...out.matchAll(/^export (?:const )?\{([^}]*)\}/gm)].flatMap((m) => m[1].split(",").map((n) => n.trim().split(/\s+as\s+/).pop())),
  ]);
  out = out.replace(/^export \* from ("\.\/web\/context_keeper\.js");$/gm, (_, from) =>
    `export { ${glueNames.filter((n) => !own.has(n)).join(", ")} } from ${from};`);
  if (!entry.dir) return out;
  const name = outName(entry);
  return out
    .replaceAll('"./context/', '"../context/')
    .replaceAll('"./errors.js"', '"../errors.js"')
    .replaceAll(/"\.\/(web|node)\/context_keeper(_bg\.wasm|\.js)"/g, (_, dir, rest) => `"./${dir}/${name}${rest}"`);
}

for (const module of ["errors.js", "memo.js", "context/index.js"]) {
  const cjs = module.replace(/\.js$/, ".cjs");
  writeFileSync(join(out, cjs), commonJS(readFileSync(join(root, "pkg-template", module), "utf8"), `pkg-template/${module}`));
}

const manifest = JSON.parse(readFileSync(join(out, "package.json"), "utf8"));
manifest.version = cargo.package.version;
writeFileSync(join(out, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
// The command line (pkg-template/cli/, copied with the template): executable, as npm links it.
for (const [name, path] of Object.entries(manifest.bin ?? {})) {
  if (!existsSync(join(out, path))) throw new Error(`package.json names the bin ${name} at ${path}, which pkg-template lacks`);
  chmodSync(join(out, path), 0o755);
}

const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
for (const entry of entries) {
  const path = join(packageDir(entry), shared ?? targets[0][0], `${outName(entry)}_bg.wasm`);
  const wasm = readFileSync(path);
  const gzip = gzipSync(wasm, { level: 9 }).length;
  const brotli = brotliCompressSync(wasm, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }).length;
  console.log(`${relative(root, path)}: ${kb(wasm.length)} raw, ${kb(gzip)} gzip, ${kb(brotli)} brotli`);
}
for (const entry of entries.filter((e) => (e["node-features"] ?? []).length > 0)) {
  const dir = join(packageDir(entry), targets.find(([, target]) => target === "nodejs")[0]);
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".wasm") || f.endsWith(".tables"))) {
    const bytes = readFileSync(join(dir, file));
    console.log(`${relative(root, join(dir, file))}: ${kb(bytes.length)} raw, ${kb(gzipSync(bytes, { level: 9 }).length)} gzip (Node only)`);
  }
}
const seconds = ((performance.now() - started) / 1000).toFixed(0);
console.log(`build: wrote ${relative(process.cwd(), out) || "."}/ (context-keeper ${manifest.version}${dev ? ", dev" : ""}) in ${seconds} s`);
