// `context-keeper list|read|grep`: a store directory as the model's recovery tools see it. The
// text printed is the tools' own (`rendered` of listOffloaded, readOffloaded, grepOffloaded);
// compaction archives are read with readArchive. Without --session, every session in the store.
import { accessSync, constants, existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { UsageError } from "./input.js";
// the package's one definition of the key layout (stores/keys.js), not a copy
import { NAMESPACE } from "../stores/keys.js";

/** The store at `dir`, which must exist (a read never creates one). */
export function openStore(dir, stores) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new UsageError(`${dir}: no store there (prepare --store ${dir} writes one)`);
  }
  return new stores.FileSystemStore({ dir });
}

/**
 * Makes sure `dir` is a directory this process can write, creating it (and its missing parents)
 * first, so a bad --store is one clear error before any work rather than a failure per save.
 */
export function ensureStoreDir(dir) {
  const missing = [];
  let at = resolve(dir);
  // NOTE: one level at a time: Node's recursive mkdir never returns under some pseudo file
  // systems (`/proc/x/y`), where a plain mkdir fails at once.
  while (!existsSync(at)) {
    missing.unshift(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  try {
    for (const path of missing) mkdirSync(path);
    if (!statSync(resolve(dir)).isDirectory()) throw new UsageError(`--store ${dir}: not a directory`);
    accessSync(resolve(dir), constants.W_OK);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--store ${dir}: cannot write a store there (${err.code ?? err.message})`);
  }
}

/** The sessions with anything stored, sorted. */
export async function sessionsIn(store) {
  const entries = await store.loadRange([NAMESPACE]);
  return [...new Set(entries.filter((e) => e.key.length === 4).map((e) => e.key[1]))].sort();
}

/**
 * The archives of a session: `{ name, key, rolling }`, compactions (`0001-<hash>`) then rolling
 * window folds (`rolling-0001-<hash>`), each oldest first by number: compared as numbers, since
 * names sort "10000-" before "9999-".
 */
async function archivesOf(store, sessionId) {
  const entries = await store.loadRange([NAMESPACE, sessionId, "archive"]);
  // the kind (compactions first) and the number, for names of either form; anything else last
  const order = ({ name, rolling }) => [/^(?:rolling-)?\d+-/.test(name) ? Number(rolling) : 2, parseInt(name.replace(/^rolling-/, ""), 10) || Infinity];
  return entries
    .filter((e) => e.key.length === 4 && !e.key[3].endsWith(".md"))
    .map((e) => ({ name: e.key[3], key: e.key, rolling: e.key[3].startsWith("rolling-") }))
    .sort((a, b) => {
      const [x, y] = [order(a), order(b)];
      return x[0] - y[0] || x[1] - y[1] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    });
}

/** The sessions to look in: the one named, or every one in the store. */
async function sessionsFor(store, sessionId) {
  if (sessionId !== undefined) return [sessionId];
  return sessionsIn(store);
}

/** `list`: per session, its offloaded outputs (as list_offloaded renders them) and archives. */
export async function list({ ck, store, sessionId }) {
  const sessions = [];
  for (const session of await sessionsFor(store, sessionId)) {
    const listed = await ck.listOffloaded({ store, sessionId: session });
    const archives = [];
    for (const { name, key, rolling } of await archivesOf(store, session)) {
      const archive = await ck.readArchive(key, { store });
      archives.push({ name, key, kind: rolling ? "rolling" : "compaction", number: archive.number, format: archive.format, messages: archive.messages.length });
    }
    sessions.push({ session, offloads: listed.offloads, damaged: listed.damaged, archives, rendered: listed.rendered });
  }
  return { sessions };
}

export function renderList(result, c, storeArg) {
  const out = [];
  const where = storeArg === undefined ? "" : ` --store ${storeArg}`;
  if (result.sessions.length === 0) out.push("nothing stored");
  for (const s of result.sessions) {
    out.push(c.bold(`session ${s.session}`));
    out.push(s.rendered.trimEnd().replace(/^/gm, "  "));
    for (const a of s.archives) {
      out.push(`  archive ${a.name}: ${a.kind === "rolling" ? "rolling window fold" : "compaction"} ${a.number}, ${a.messages} original message${a.messages === 1 ? "" : "s"} (${a.format}); read it with: context-keeper read ${a.name}${where}${result.sessions.length > 1 ? ` --session ${s.session}` : ""}`);
    }
  }
  return out.join("\n");
}

/** Where `id` is: an offloaded output or an archive, in the named session or the one that has it. */
async function locate(store, stores, id, sessionId) {
  const found = [];
  for (const session of await sessionsFor(store, sessionId)) {
    if ((await store.load(stores.storeKey({ sessionId: session, kind: "offload", name: id }))) !== undefined) found.push({ session, kind: "offload" });
    else if ((await store.load(stores.storeKey({ sessionId: session, kind: "archive", name: id }))) !== undefined) found.push({ session, kind: "archive" });
  }
  if (found.length === 0) {
    throw new UsageError(`no offloaded output or archive has id ${JSON.stringify(id)}${sessionId === undefined ? "" : ` in session ${JSON.stringify(sessionId)}`}; \`context-keeper list\` shows them`);
  }
  if (found.length > 1) {
    throw new UsageError(`id ${JSON.stringify(id)} is in sessions ${found.map((f) => JSON.stringify(f.session)).join(", ")}: pick one with --session`);
  }
  return found[0];
}

/** `read`: an offloaded output by lines (as read_offloaded returns it), or an archive's messages. */
export async function read({ ck, stores, store, sessionId, id, offset, limit }) {
  const where = await locate(store, stores, id, sessionId);
  if (where.kind === "offload") {
    const result = await ck.readOffloaded(id, { store, sessionId: where.session, offset, limit });
    return { kind: "offload", session: where.session, ...result };
  }
  const key = stores.storeKey({ sessionId: where.session, kind: "archive", name: id });
  const archive = await ck.readArchive(key, { store });
  const markdown = await stores.loadText(store, [...key.slice(0, 3), `${id}.md`]);
  return { kind: "archive", session: where.session, id, ...archive, transcript: markdown ?? null };
}

export function renderRead(result) {
  if (result.kind === "offload") return result.rendered;
  if (result.transcript !== null) return result.transcript;
  return result.messages.map((m) => JSON.stringify(m)).join("\n");
}

/** `grep`: the pattern over the offloaded outputs (as grep_offloaded finds it), per session. */
export async function grep({ ck, store, sessionId, pattern, id, ignoreCase }) {
  const sessions = [];
  for (const session of await sessionsFor(store, sessionId)) {
    if (id !== undefined && (await store.load([NAMESPACE, session, "offload", id])) === undefined) continue;
    const found = await ck.grepOffloaded(pattern, { store, sessionId: session, ignoreCase, ...(id === undefined ? {} : { id }) });
    sessions.push({ session, ...found });
  }
  if (id !== undefined && sessions.length === 0) {
    throw new UsageError(`no offloaded output has id ${JSON.stringify(id)}${sessionId === undefined ? "" : ` in session ${JSON.stringify(sessionId)}`}; \`context-keeper list\` shows them`);
  }
  return { sessions, matches: sessions.reduce((n, s) => n + s.matches.length, 0) };
}

export function renderGrep(result, c) {
  const many = result.sessions.length > 1;
  return result.sessions
    .filter((s) => !many || s.matches.length > 0)
    .map((s) => (many ? `${c.bold(`session ${s.session}`)}\n${s.rendered.trimEnd().replace(/^/gm, "  ")}` : s.rendered.trimEnd()))
    .join("\n");
}
