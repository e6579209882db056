#!/usr/bin/env node
// Import cycles between the Rust files of src/, and between its top folders (issue #41: none
// of either). Reads every file of src/ (tests left out: `tests.rs`, `*_tests.rs`, and a file's
// trailing `#[cfg(test)] mod tests { ... }`), and takes an edge A -> B for each item A names
// that B defines: through `use` (`crate::`, `super::`, `self::` and child-module paths, brace
// groups and `self` in them), through inline paths (`crate::x::y(...)`), and through a module
// imported whole (`use super::fold;` then `fold::ask(...)`). A name a module re-exports
// (`pub use`) is followed to the file that defines it, so a `mod.rs` that only re-exports is
// not a hub every file depends on. Declaring a module (`mod x;`) is not an edge; re-exporting
// from it is.
//
//   node scripts/cycles.mjs [--verbose]     # prints the cycles; exits 1 if there is one
//
// A cycle is printed as its strongly connected component (every file in it reaches every
// other), with one edge of each file and the line that makes it.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SRC = join(ROOT, "src");
const verbose = process.argv.includes("--verbose");

const isTest = (path) => /(^|\/)tests\.rs$|_tests\.rs$|\/tests\//.test(path);
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith(".rs") && !isTest(relative(SRC, path))) files.push(path);
  }
})(SRC);

// The module path of each file: src/lib.rs is the crate, src/x.rs and src/x/mod.rs are `x`.
const modOf = (path) => {
  const rel = relative(SRC, path).replace(/\.rs$/, "").split("/");
  if (rel.at(-1) === "mod" || rel.at(-1) === "lib") rel.pop();
  return rel;
};
const key = (segments) => segments.join("::");

/** The text with comments, strings and char literals blanked (lines kept), and a trailing test module cut. */
function code(text) {
  let out = "";
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      let depth = 0;
      do {
        if (text[i] === "/" && text[i + 1] === "*") (depth++, (i += 2));
        else if (text[i] === "*" && text[i + 1] === "/") (depth--, (i += 2));
        else out += text[i++] === "\n" ? "\n" : "";
      } while (depth > 0 && i < text.length);
    } else if (c === "r" && /^r#*"/.test(text.slice(i, i + 8)) && !/\w/.test(text[i - 1] ?? "")) {
      const hashes = text.slice(i + 1).match(/^#*/)[0];
      const end = text.indexOf(`"${hashes}`, i + 2 + hashes.length);
      const body = text.slice(i, end < 0 ? text.length : end + 1 + hashes.length);
      out += '""' + "\n".repeat((body.match(/\n/g) ?? []).length);
      i += body.length;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += '""' + "\n".repeat((text.slice(i, j).match(/\n/g) ?? []).length);
      i = j + 1;
    } else if (c === "'" && /^'(\\.|[^\\'])'/.test(text.slice(i, i + 4)) && !/\w/.test(text[i - 1] ?? "")) {
      const m = text.slice(i).match(/^'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'/);
      out += "' '";
      i += m ? m[0].length : 1;
    } else {
      out += c;
      i++;
    }
  }
  const test = out.search(/#\[cfg\(test\)\]\s*mod\s+\w+\s*\{/);
  return test < 0 ? out : out.slice(0, test);
}

/** The paths a `use` tree names: `a::{b, c::{d, self}}` -> [a::b, a::c::d, a::c]. */
function expand(tree) {
  tree = tree.replace(/\s+/g, "");
  const brace = tree.indexOf("{");
  if (brace < 0) return [tree.replace(/\bas\w+$/, "").replace(/::self$/, "")];
  const prefix = tree.slice(0, brace);
  const inner = tree.slice(brace + 1, tree.lastIndexOf("}"));
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= inner.length; i++) {
    if (i === inner.length || (inner[i] === "," && depth === 0)) {
      if (inner.slice(start, i)) parts.push(inner.slice(start, i));
      start = i + 1;
    } else if (inner[i] === "{") depth++;
    else if (inner[i] === "}") depth--;
  }
  return parts.flatMap((part) => (part === "self" ? [prefix.replace(/::$/, "")] : expand(prefix + part)));
}

// Every module: its file, its child modules, the items it defines, what it re-exports, and
// the lines of its uses.
const modules = new Map();
for (const path of files) {
  const text = code(readFileSync(path, "utf8"));
  const mod = modOf(path);
  const children = new Set([...text.matchAll(/\bmod\s+([a-z_]\w*)\s*;/g)].map((m) => m[1]));
  const defined = new Set(
    [...text.matchAll(/\b(?:fn|struct|enum|union|trait|type|const|static|macro_rules!)\s+([A-Za-z_]\w*)/g)].map((m) => m[1]),
  );
  const uses = [...text.matchAll(/(^|[;{}\n])\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);/g)].map((m) => ({
    pub: Boolean(m[2]),
    paths: expand(m[3]),
    line: text.slice(0, m.index + m[0].search(/\b(pub|use)\b/)).split("\n").length,
  }));
  modules.set(key(mod), { path, mod, text, children, defined, uses, reexports: new Map() });
}

/** Absolute segments of `path` as written in module `mod` (null for another crate's). */
function absolute(mod, path) {
  const segs = path.split("::").filter(Boolean);
  let base;
  if (segs[0] === "crate") base = [];
  else if (segs[0] === "self") base = [...mod];
  else if (segs[0] === "super") {
    base = [...mod];
    while (segs[0] === "super") (base.pop(), segs.shift());
    return [...base, ...segs];
  } else if (modules.get(key(mod))?.children.has(segs[0])) return [...mod, ...segs];
  else return null;
  return [...base, ...segs.slice(1)];
}

for (const m of modules.values()) {
  for (const use of m.uses.filter((u) => u.pub)) {
    for (const p of use.paths) {
      const abs = absolute(m.mod, p.replace(/::\*$/, ""));
      const name = p.split("::").at(-1).replace(/^.*\bas/, "");
      if (abs && name !== "*") m.reexports.set(p.match(/\bas(\w+)$/)?.[1] ?? name, abs);
    }
  }
}

/** The module key of the file that defines the item `segs` names (or the module it names). */
function resolve(segs, seen = new Set()) {
  let mod = [];
  for (let i = 0; i < segs.length; i++) {
    const here = modules.get(key(mod));
    const name = segs[i];
    if (!here) return null;
    if (modules.has(key([...mod, name]))) {
      mod = [...mod, name];
      continue;
    }
    if (here.defined.has(name)) return key(mod);
    const again = here.reexports.get(name);
    if (again && !seen.has(key(again))) {
      seen.add(key(again));
      return resolve([...again, ...segs.slice(i + 1)], seen);
    }
    return key(mod);
  }
  return key(mod);
}

// The edges, each with the first line that makes it.
const edges = new Map();
const addEdge = (from, to, line, name) => {
  if (!to || from === to) return;
  const out = edges.get(from) ?? new Map();
  if (!out.has(to)) out.set(to, `${line} (${name})`);
  edges.set(from, out);
};
for (const m of modules.values()) {
  const from = key(m.mod);
  const wholes = new Map();
  for (const use of m.uses) {
    for (const p of use.paths) {
      const abs = absolute(m.mod, p.replace(/::\*$/, ""));
      if (!abs) continue;
      const target = resolve(abs);
      addEdge(from, target, use.line, p);
      if (modules.has(key(abs))) wholes.set(p.match(/\bas(\w+)$/)?.[1] ?? abs.at(-1), abs);
    }
  }
  const lines = m.text.split("\n");
  lines.forEach((text, i) => {
    if (/^\s*(pub(\([^)]*\))?\s+)?use\s/.test(text)) return;
    for (const [, path] of text.matchAll(/\b((?:crate|super|self)(?:::[A-Za-z_]\w*)+)/g)) {
      const abs = absolute(m.mod, path);
      if (abs) addEdge(from, resolve(abs), i + 1, path);
    }
    for (const [alias, abs] of wholes) {
      for (const [, name] of text.matchAll(new RegExp(`(?<![\\w:])${alias}::([A-Za-z_]\\w*)`, "g"))) {
        addEdge(from, resolve([...abs, name]), i + 1, `${alias}::${name}`);
      }
    }
  });
}

/** Strongly connected components of more than one node (Tarjan). */
function components(nodes, next) {
  let index = 0;
  const at = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    at.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next(v)) {
      if (!at.has(w)) (visit(w), low.set(v, Math.min(low.get(v), low.get(w))));
      else if (on.has(w)) low.set(v, Math.min(low.get(v), at.get(w)));
    }
    if (low.get(v) === at.get(v)) {
      const scc = [];
      let w;
      do (w = stack.pop()), on.delete(w), scc.push(w);
      while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of nodes) if (!at.has(v)) visit(v);
  return out;
}

const fileOf = (mod) => relative(ROOT, modules.get(mod)?.path ?? mod);
const nodes = [...modules.keys()];
const fileCycles = components(nodes, (v) => [...(edges.get(v)?.keys() ?? [])].filter((w) => modules.has(w)));
// The top folders: src/x/ is `x`; a file of src/ itself is its own unit; the crate root is left
// out (it declares the modules and re-exports the public API, so every unit reaches it).
const top = (mod) => mod.split("::")[0];
const topEdges = new Map();
for (const [from, out] of edges) {
  for (const [to, line] of out) {
    if (!from || !to || top(from) === top(to)) continue;
    const set = topEdges.get(top(from)) ?? new Map();
    if (!set.has(top(to))) set.set(top(to), `${fileOf(from)}:${line} -> ${fileOf(to)}`);
    topEdges.set(top(from), set);
  }
}
const folderCycles = components([...new Set(nodes.filter(Boolean).map(top))], (v) => [...(topEdges.get(v)?.keys() ?? [])]);

const edgeCount = [...edges.values()].reduce((n, out) => n + out.size, 0);
console.log(`${modules.size} files of src/ (tests left out), ${edgeCount} edges between them`);
for (const scc of fileCycles) {
  console.log(`cycle between ${scc.length} files:`);
  for (const v of scc) {
    const within = [...edges.get(v)].filter(([w]) => scc.includes(w));
    for (const [w, line] of verbose ? within : within.slice(0, 1)) console.log(`  ${fileOf(v)}:${line} -> ${fileOf(w)}`);
  }
}
for (const scc of folderCycles) {
  console.log(`cycle between the top folders ${scc.join(", ")}:`);
  for (const v of scc) {
    const [, why] = [...topEdges.get(v)].find(([w]) => scc.includes(w));
    console.log(`  ${why}`);
  }
}
if (!fileCycles.length && !folderCycles.length) console.log("no import cycle between files, and none between top folders");
process.exitCode = fileCycles.length || folderCycles.length ? 1 : 0;
