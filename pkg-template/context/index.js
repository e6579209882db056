// The context layer's driver: the one place that awaits anything. The Rust core decides and
// rewrites synchronously (offload plans, pruning, eviction, reading records back); this file
// performs the store calls those plans ask for, each bounded by a timeout, and hands the
// outcomes back. It holds no decisions of its own. Every entry of the package binds it to its
// own wasm instance (`bindContext(core)`), so no Rust lock or borrow is held while a store or a
// callback runs, and a callback that calls back into the package is safe.

import { ContextKeeperError } from "../errors.js";

/** How long a store call may take before it counts as failed. */
export const DEFAULT_TIMEOUT_MS = 10_000;

const RECOVERY_TOOLS = ["read_offloaded", "list_offloaded", "grep_offloaded"];

const typeOf = (v) => (v === null ? "null" : v === undefined ? "undefined" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);

function optionsError(path, reason) {
  return new ContextKeeperError(`${path}: ${reason}`, { kind: "options", path });
}

function checkObject(value, path) {
  if (value !== undefined && value !== null && (typeof value !== "object" || Array.isArray(value))) {
    throw optionsError(path, `expected an object, found ${typeOf(value)}`);
  }
  return value ?? {};
}

function checkStore(store, path = "options.store") {
  if (store === null || typeof store !== "object" || typeof store.save !== "function" || typeof store.load !== "function" || typeof store.loadRange !== "function") {
    throw optionsError(path, `expected a store (load, save, loadRange, ...), found ${typeOf(store)}`);
  }
  return store;
}

function checkTimeout(ms, path = "options.timeoutMs") {
  if (ms === undefined || ms === null) return DEFAULT_TIMEOUT_MS;
  if (typeof ms !== "number" || !(ms > 0)) throw optionsError(path, `expected a positive number, found ${typeof ms === "number" ? ms : typeOf(ms)}`);
  return ms;
}

function checkSession(sessionId, path = "options.sessionId") {
  if (typeof sessionId !== "string" || sessionId === "") throw optionsError(path, `expected a non-empty string, found ${typeOf(sessionId)}`);
  return sessionId;
}

function checkCount(value, path, fallback) {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw optionsError(path, `expected a positive integer, found ${typeof value === "number" ? value : typeOf(value)}`);
  }
  return value;
}

/** The options without the driver's own fields (the core rejects unknown options). */
function coreOptions(options, own) {
  const out = {};
  for (const key of Object.keys(options)) if (!own.includes(key)) out[key] = options[key];
  return out;
}

/**
 * Runs one store call with a timeout. Resolves `{ ok: true, value }` or `{ ok: false, reason,
 * error }`: a store that throws synchronously, rejects, or never settles is a failure with its
 * reason, never an exception here.
 */
async function attempt(call, timeoutMs) {
  let timer;
  try {
    const settled = new Promise((resolve, reject) => {
      try {
        Promise.resolve(call()).then(resolve, reject);
      } catch (error) {
        reject(error);
      }
    });
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new ContextKeeperError(`timed out after ${timeoutMs} ms`, { kind: "timeout" })), timeoutMs);
    });
    return { ok: true, value: await Promise.race([settled, timeout]) };
  } catch (error) {
    return { ok: false, reason: reasonOf(error), error };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Makes the edits of a keeper's report from what the core packed (`pack_edits` in
 * src/bindings/keeper.rs): the objects serde would have written, in its key order, into the
 * report's `offloaded`, `pruned` and `evicted` lists.
 * @param {{ offloaded: object[], pruned: object[], evicted: object[] }} report
 * @param {Float64Array} n
 * @param {string} texts
 */
function unpackEdits(report, n, texts) {
  const lists = [report.offloaded, report.pruned, report.evicted];
  let i = 0;
  let at = 0;
  const text = () => texts.slice(at, (at += n[i++]));
  while (i < n.length) {
    const list = n[i];
    const messageIndex = n[i + 1];
    const partIndex = n[i + 2];
    const tokensBefore = n[i + 3];
    const tokensAfter = n[i + 4];
    const estimated = n[i + 5] === 1;
    const kind = n[i + 6];
    const fields = n[i + 7];
    const keyLength = n[i + 8];
    i += 9;
    /** @type {Record<string, unknown>} */
    const edit = { action: text(), messageIndex, partIndex };
    if (fields & 1) edit.toolName = text();
    if (fields & 2) edit.toolCallId = text();
    if (fields & 4) edit.field = text();
    edit.tokensBefore = tokensBefore;
    edit.tokensAfter = tokensAfter;
    edit.estimated = estimated;
    if (kind === 0) {
      const key = [];
      for (let k = 0; k < keyLength; k++) key.push(text());
      edit.original = keyLength > 0 ? { kind: "store", key, id: text() } : { kind: "store", id: text() };
    } else {
      edit.original = kind === 1 ? { kind: "file", path: text() } : { kind: "history" };
    }
    lists[list].push(edit);
  }
}

function reasonOf(error) {
  try {
    if (error instanceof Error) return error.name === "Error" || error.name === "ContextKeeperError" ? error.message : `${error.name}: ${error.message}`;
    return String(error);
  } catch {
    // NOTE: a thrown object whose toString (or message getter) throws: the failure is still
    // reported, never replaced by the describing's own exception.
    return `${typeOf(error)} was thrown, which cannot be made a string`;
  }
}

/**
 * The value a store's `load` gave: a Uint8Array, or undefined for none (`null` too). Anything
 * else is a store-kind error: read as "no value", a session state the store mangled would be
 * dropped without a word and its compactions summarized again.
 */
function loadedValue(loaded, key) {
  const value = loaded.value;
  if (value === undefined || value === null || value instanceof Uint8Array) return value ?? undefined;
  throw new ContextKeeperError(`load ${JSON.stringify(key)}: the store returned ${typeOf(value)}, not a Uint8Array`, { kind: "store" });
}

function storeError(op, result, key) {
  const kind = result.error instanceof ContextKeeperError && result.error.kind === "timeout" ? "timeout" : "store";
  return new ContextKeeperError(`${op} ${JSON.stringify(key)}: ${result.reason}`, { kind, cause: result.error });
}

/** The AI SDK's schema marker (`jsonSchema()` of `ai`), so its tools take our JSON Schemas. */
function aiSchema(schema) {
  return { [Symbol.for("vercel.ai.schema")]: true, [Symbol.for("vercel.ai.validator")]: true, _type: undefined, jsonSchema: schema, validate: undefined };
}

/**
 * Binds the driver to one wasm instance's core exports. Returns null for a build without the
 * context layer (the estimate entry). The entry module registers the error class with the
 * instance (errors.js); the functions reach the instance only when called, so the ./init
 * entry can bind them before its wasm is instantiated.
 */
/**
 * What a machine of the core needs next (`src/context/machine.rs`, `Need`): saves to store,
 * the memory flush to run, a fold's archive saves (how many; `archiveSave(i)` makes each) and
 * its summary, or nothing more.
 * @typedef {{ kind: "saves", saves: Save[] } | { kind: "flush", request: object }
 *   | { kind: "archive", saves: number } | { kind: "summarize", request: object }
 *   | { kind: "done" }} Need
 * @typedef {{ key: string[], bytes: Uint8Array }} Save
 * @typedef {string | null} SaveOutcome `null` when the store confirmed the save, else why not
 * @typedef {{ text: string } | { failed: string } | { heuristic: true }} SummaryOutcome
 * @typedef {{ reply: string | null } | { failed: string }} FlushOutcome
 */

/**
 * A machine of the core (`__CkMachine`), stepped by `drive`.
 * @typedef {object} Machine
 * @property {() => Need} next
 * @property {(i: number) => Save} archiveSave
 * @property {(outcomes: SaveOutcome[]) => void} saved
 * @property {(outcome: FlushOutcome) => void} flushed
 * @property {(outcomes: SaveOutcome[]) => void} archived
 * @property {(summary: SummaryOutcome) => void} summarized
 * @property {() => any} finish
 * @property {() => void} free
 */

/**
 * What `drive` performs a machine's needs with: the store and its timeout, the callbacks and
 * theirs, the messages a flush is given, progress, and whether this is a dry run.
 * @typedef {object} DriveIo
 * @property {any} [store]
 * @property {number} [storeTimeoutMs]
 * @property {number} [timeoutMs]
 * @property {(request: object) => unknown} [summarize]
 * @property {(request: object) => unknown} [flush]
 * @property {unknown} [messages]
 * @property {(phase: string) => void} [progress]
 * @property {boolean} [dry]
 */

export function bindContext(core) {
  if (typeof core.__ckPrune !== "function") return null;

  function pruneMessages(messages, options) {
    return core.__ckPrune(messages, checkObject(options, "options"));
  }

  function evictToolInputs(messages, options) {
    return core.__ckEvict(messages, checkObject(options, "options"));
  }

  /**
   * Saves each distinct key once; returns per save `null` (confirmed) or the reason. Offload
   * and archive keys are read before they are written: a copy already stored intact under the
   * key (an offload record's key is its content's; an archive's, its number's and its span's)
   * counts as confirmed and is not written again, since a write that fails halfway (a store may
   * tear one) would destroy the copy a pointer, a marker or a stored session state already
   * names. (A session state that lost the offload or the compaction, by a failed load or save,
   * is what makes the core ask again.) If that read fails, the key is not written either: the
   * save fails, and the content stays in the conversation.
   */
  async function performSaves(store, saves, timeoutMs) {
    const byKey = new Map();
    for (const save of saves) {
      const id = JSON.stringify(save.key);
      if (!byKey.has(id)) byKey.set(id, saveOnce(store, save, timeoutMs));
    }
    const outcomes = [];
    for (const save of saves) {
      const result = await byKey.get(JSON.stringify(save.key));
      outcomes.push(result.ok ? null : result.reason);
    }
    return outcomes;
  }

  /**
   * A compaction's (or fold's) archive saves, each made by `make(i)` and stored before the next
   * is made, so that the archive's JSON and its transcript (7 MB each for a 10 MB history) are
   * never in memory together. One outcome per save, as `performSaves` gives them.
   */
  async function performArchiveSaves(store, count, make, timeoutMs) {
    const outcomes = [];
    for (let i = 0; i < count; i++) outcomes.push(...(await performSaves(store, [make(i)], timeoutMs)));
    return outcomes;
  }

  async function saveOnce(store, save, timeoutMs) {
    const held = await storedCopy(store, save.key, save.bytes, timeoutMs);
    if (held.failed !== undefined) return { ok: false, reason: held.failed };
    if (held.intact) return { ok: true };
    return attempt(() => store.save(save.key, save.bytes), timeoutMs);
  }

  /**
   * The one driver loop: runs a machine of the core (an offload, one result's offload, a
   * compaction, a rolling window, a prepare) to its end. The machine says what it needs, in its
   * own order; this performs it, each effect bounded by its timeout, and hands back what came
   * of it. A dry run performs nothing: every save counts as confirmed, the flush as silent, the
   * summary as the heuristic one.
   * @param {Machine} machine
   * @param {DriveIo} io
   * @returns {Promise<any>} the machine's output (`finish()`)
   */
  async function drive(machine, io) {
    const { store, storeTimeoutMs, timeoutMs, summarize, flush, messages, dry = false } = io;
    const progress = io.progress ?? (() => {});
    try {
      for (;;) {
        const need = machine.next();
        if (need.kind === "done") return machine.finish();
        if (need.kind === "saves") {
          progress("offloading");
          machine.saved(dry ? need.saves.map(() => null) : await performSaves(store, need.saves, storeTimeoutMs));
        } else if (need.kind === "flush") {
          if (dry) {
            machine.flushed({ reply: null });
            continue;
          }
          progress("flushing");
          const result = await attempt(() => flush({ messages, ...need.request }), timeoutMs);
          machine.flushed(result.ok ? { reply: typeof result.value === "string" ? result.value : null } : { failed: result.reason });
        } else if (need.kind === "archive") {
          if (dry) {
            machine.archived(Array.from({ length: need.saves }, () => null));
            continue;
          }
          progress("archiving");
          machine.archived(await performArchiveSaves(store, need.saves, (i) => machine.archiveSave(i), storeTimeoutMs));
        } else if (need.kind === "summarize") {
          /** @type {SummaryOutcome} */
          let summary = { heuristic: true };
          if (!dry) {
            if (summarize !== undefined) {
              progress("summarizing");
              summary = textOutcome(await attempt(() => summarize(need.request), timeoutMs), "the summarizer");
            }
            progress("applying");
          }
          machine.summarized(summary);
        } else {
          const unknown = /** @type {{ kind: unknown }} */ (need);
          throw new ContextKeeperError(`the core asked for ${JSON.stringify(unknown.kind)}, which this driver does not know`);
        }
      }
    } finally {
      machine.free();
    }
  }

  /** What `key` holds before `bytes` are written there: `{ intact: true }` when it holds them
   * already (an offload record of the same content, its header naming the same SHA-256 and its
   * text matching it; an archive of the same bytes), `{ intact: false }` when it holds nothing
   * or something else (a torn copy: writing repairs it), `{ failed: reason }` when it cannot be
   * read. Other keys are not read. */
  async function storedCopy(store, key, bytes, timeoutMs) {
    // NOTE: which keys are read first, and what counts as the copy, is the core's (it knows
    // the record format).
    if (!core.__ckReadsBeforeWrite(key, bytes)) return { intact: false };
    const loaded = await attempt(() => store.load(key), timeoutMs);
    if (!loaded.ok) {
      return { failed: `could not read ${JSON.stringify(key)} before writing it (a copy stored there must not be overwritten by a write that may fail halfway): ${loaded.reason}` };
    }
    const value = loaded.value;
    if (!(value instanceof Uint8Array)) return { intact: false };
    return { intact: core.__ckHoldsCopy(key, bytes, value) };
  }

  /** The driver's own offload options, checked, and the rest for the core. */
  function offloadOptions(options) {
    options = checkObject(options, "options");
    const store = checkStore(options.store);
    const timeoutMs = checkTimeout(options.timeoutMs);
    return { store, timeoutMs, rest: coreOptions(options, ["store", "timeoutMs"]) };
  }

  async function offloadMessages(messages, options) {
    const { store, timeoutMs, rest } = offloadOptions(options);
    return drive(core.__ckPlanOffload(messages, rest), { store, storeTimeoutMs: timeoutMs });
  }

  async function offloadToolResult(result, options) {
    const { store, timeoutMs, rest } = offloadOptions(options);
    return drive(core.__ckPlanResult(result, rest), { store, storeTimeoutMs: timeoutMs });
  }

  async function loadRecord(store, sessionId, id, timeoutMs) {
    const key = Array.from(core.__ckOffloadKey(sessionId, id));
    const loaded = await attempt(() => store.load(key), timeoutMs);
    if (!loaded.ok) throw storeError("load", loaded, key);
    if (loaded.value === undefined) {
      throw new ContextKeeperError(`no offloaded output has id ${JSON.stringify(id)}; list_offloaded shows the ids of this session`, { kind: "notFound", path: "id" });
    }
    if (!(loaded.value instanceof Uint8Array)) {
      throw new ContextKeeperError(`load ${JSON.stringify(key)}: the store returned ${typeOf(loaded.value)}, not a Uint8Array`, { kind: "store" });
    }
    return loaded.value;
  }

  async function loadSession(store, sessionId, timeoutMs) {
    const prefix = Array.from(core.__ckOffloadKey(sessionId, undefined));
    const loaded = await attempt(() => store.loadRange(prefix), timeoutMs);
    if (!loaded.ok) throw storeError("loadRange", loaded, prefix);
    if (!Array.isArray(loaded.value)) {
      throw new ContextKeeperError(`loadRange ${JSON.stringify(prefix)}: the store returned ${typeOf(loaded.value)}, not an array`, { kind: "store" });
    }
    const entries = loaded.value.filter((entry) => entry && Array.isArray(entry.key) && entry.key.length === prefix.length + 1);
    const bad = entries.findIndex((entry) => !(entry.data instanceof Uint8Array));
    if (bad >= 0) {
      // NOTE: an error, not a skip: a record the store cannot give back must not vanish from the list.
      throw new ContextKeeperError(`loadRange ${JSON.stringify(prefix)}: the data of ${JSON.stringify(entries[bad].key)} is ${typeOf(entries[bad].data)}, not a Uint8Array`, { kind: "store" });
    }
    return entries;
  }

  async function readOffloaded(id, options) {
    options = checkObject(options, "options");
    if (typeof id !== "string" || id === "") throw new ContextKeeperError(`id: expected a non-empty string, found ${typeOf(id)}`, { kind: "options", path: "id" });
    const store = checkStore(options.store);
    const sessionId = checkSession(options.sessionId);
    const timeoutMs = checkTimeout(options.timeoutMs);
    const offset = checkCount(options.offset, "options.offset", 1);
    const limit = checkCount(options.limit, "options.limit", 200);
    const lineChars = checkCount(options.lineChars, "options.lineChars", 300);
    const bytes = await loadRecord(store, sessionId, id, timeoutMs);
    return core.__ckRead(id, bytes, offset, limit, lineChars);
  }

  async function listOffloaded(options) {
    options = checkObject(options, "options");
    const store = checkStore(options.store);
    const sessionId = checkSession(options.sessionId);
    const entries = await loadSession(store, sessionId, checkTimeout(options.timeoutMs));
    const listed = core.__ckList(entries);
    return { offloads: listed.headers, damaged: listed.damaged, rendered: listed.rendered };
  }

  async function grepOffloaded(pattern, options) {
    options = checkObject(options, "options");
    if (typeof pattern !== "string") throw new ContextKeeperError(`pattern: expected a string, found ${typeOf(pattern)}`, { kind: "options", path: "pattern" });
    const store = checkStore(options.store);
    const sessionId = checkSession(options.sessionId);
    const timeoutMs = checkTimeout(options.timeoutMs);
    let entries;
    if (options.id !== undefined && options.id !== null) {
      if (typeof options.id !== "string") throw optionsError("options.id", `expected a string, found ${typeOf(options.id)}`);
      const key = Array.from(core.__ckOffloadKey(sessionId, options.id));
      entries = [{ key, data: await loadRecord(store, sessionId, options.id, timeoutMs) }];
    } else {
      entries = await loadSession(store, sessionId, timeoutMs);
    }
    return core.__ckGrep(pattern, entries, coreOptions(options, ["store", "sessionId", "timeoutMs", "id"]));
  }

  /** Arguments as the model sent them: an object, or OpenAI's JSON text. */
  function toolArgs(args) {
    if (typeof args === "string") {
      try {
        args = args.trim() === "" ? {} : JSON.parse(args);
      } catch {
        return { error: "the arguments are not JSON" };
      }
    }
    if (args === undefined || args === null) return {};
    if (typeof args !== "object" || Array.isArray(args)) return { error: "the arguments must be an object" };
    return args;
  }

  const MODEL_ERRORS = new Set(["notFound", "corrupt", "pattern", "options"]);
  /** A line number or count the model gave, if it is one. */
  const positive = (n) => (typeof n === "number" && Number.isInteger(n) && n >= 1 ? n : undefined);

  async function runRecoveryTool(name, args, options) {
    options = checkObject(options, "options");
    checkStore(options.store);
    checkSession(options.sessionId);
    if (!RECOVERY_TOOLS.includes(name)) {
      const found = typeof name === "string" ? JSON.stringify(name) : typeOf(name);
      throw optionsError("name", `not a recovery tool: ${found}; the recovery tools are ${RECOVERY_TOOLS.join(", ")}`);
    }
    const parsed = toolArgs(args);
    if (parsed.error) return `Error: ${parsed.error}.`;
    const own = { store: options.store, sessionId: options.sessionId, timeoutMs: options.timeoutMs };
    try {
      if (name === "list_offloaded") return (await listOffloaded(own)).rendered;
      if (name === "read_offloaded") {
        if (typeof parsed.id !== "string" || parsed.id === "") return 'Error: "id" is required: the id from the pointer.';
        const read = await readOffloaded(parsed.id, { ...own, offset: positive(parsed.offset), limit: positive(parsed.limit) });
        return read.rendered;
      }
      if (typeof parsed.pattern !== "string") return 'Error: "pattern" is required: a regular expression.';
      const id = typeof parsed.id === "string" && parsed.id !== "" ? parsed.id : undefined;
      const found = await grepOffloaded(parsed.pattern, { ...own, id, ignoreCase: parsed.ignore_case === true });
      return found.rendered;
    } catch (error) {
      // NOTE: what the model got wrong (an unknown id, a bad pattern) goes back to it as the
      // tool's result, so it can correct itself; a store that fails is the host's to handle.
      if (error instanceof ContextKeeperError && MODEL_ERRORS.has(error.kind)) return `Error: ${error.message}`;
      throw error;
    }
  }

  function recoveryTools(format = "openai", options) {
    // NOTE: checked here, as the core takes a `&str`: wasm-bindgen's glue reads any other value
    // as a string's pointer and length, and a number there was a wasm memory fault.
    if (typeof format !== "string") throw optionsError("format", `expected "openai", "anthropic" or "aisdk", found ${typeOf(format)}`);
    const definitions = core.__ckToolDefinitions(format === "ai-sdk" ? "aisdk" : format);
    if (format === "openai" || format === "anthropic") return definitions;
    options = options === undefined ? {} : checkObject(options, "options");
    // NOTE: the AI SDK's own `jsonSchema`, when given, makes the schemas (and types them);
    // without it, an object the SDK reads as one of its schemas.
    const schemaOf = checkFunction(options.jsonSchema, "options.jsonSchema") ?? aiSchema;
    const { jsonSchema: _schema, ...rest } = options;
    let context;
    if (rest.store !== undefined || rest.sessionId !== undefined) {
      checkStore(rest.store);
      checkSession(rest.sessionId);
      context = rest;
    }
    const tools = {};
    for (const def of definitions) {
      tools[def.name] = {
        description: def.description,
        inputSchema: schemaOf(def.inputSchema),
        ...(context === undefined ? {} : { execute: (args) => runRecoveryTool(def.name, args, context) }),
      };
    }
    return tools;
  }

  /** How long a summarizer or flush callback may take by default: an LLM call. */
  const CALLBACK_TIMEOUT_MS = 120_000;

  function checkFunction(value, path) {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "function") throw optionsError(path, `expected a function, found ${typeOf(value)}`);
    return value;
  }

  /** The marker's time: a string as given, a Date or epoch milliseconds as ISO 8601. */
  function timeOf(now) {
    if (now === undefined || now === null) return new Date().toISOString();
    if (typeof now === "string") return now;
    const date = now instanceof Date ? now : typeof now === "number" ? new Date(now) : null;
    if (date === null || Number.isNaN(date.getTime())) throw optionsError("options.now", `expected a string, a Date or epoch milliseconds, found ${typeOf(now)}`);
    return date.toISOString();
  }

  /**
   * A callback's return value as the core takes it: text, or why it is not text.
   * @returns {SummaryOutcome}
   */
  function textOutcome(result, what) {
    if (!result.ok) return { failed: `${what} failed: ${result.reason}` };
    if (typeof result.value === "string") return { text: result.value };
    return { failed: `${what} returned ${typeOf(result.value)}, not a string` };
  }

  /** The options of each fold that are the driver's (the rest go to the core). */
  const FOLD_OWN = {
    compact: ["store", "timeoutMs", "storeTimeoutMs", "summarize", "flush", "onProgress", "now"],
    rolling: ["store", "timeoutMs", "storeTimeoutMs", "summarize", "now"],
  };

  /**
   * A fold of `messages` (a compaction, or a rolling window's): its state loaded, its machine
   * driven (the memory flush, the archive saves, the summary, as the core asks for them), its
   * state stored. The marker is in the returned messages whether the state could be stored or
   * not; without it, a host that sends its full history again pays for a second summary.
   */
  async function fold(kind, messages, options) {
    const own = FOLD_OWN[kind];
    options = checkObject(options, "options");
    const store = checkStore(options.store);
    const sessionId = checkSession(options.sessionId);
    const timeoutMs = checkTimeout(options.timeoutMs ?? CALLBACK_TIMEOUT_MS);
    const storeTimeoutMs = checkTimeout(options.storeTimeoutMs, "options.storeTimeoutMs");
    const summarize = checkFunction(options.summarize, "options.summarize");
    const flushes = own.includes("flush");
    const flush = flushes ? checkFunction(options.flush, "options.flush") : undefined;
    const onProgress = flushes ? checkFunction(options.onProgress, "options.onProgress") : undefined;
    const rest = { ...coreOptions(options, own), now: timeOf(options.now), ...(flushes ? { flush: flush !== undefined } : {}) };
    const progress = (phase) => {
      // NOTE: a progress callback that throws must not stop the fold it reports on.
      try {
        onProgress?.({ phase, sessionId });
      } catch {}
    };
    const stateKey = Array.from(core.__ckKey(kind === "compact" ? "state" : "rolling", sessionId, undefined));
    const loaded = await attempt(() => store.load(stateKey), storeTimeoutMs);
    if (!loaded.ok) throw storeError("load", loaded, stateKey);
    const stateBytes = loadedValue(loaded, stateKey);
    const machine = kind === "compact" ? core.__ckPlanCompact(messages, rest, stateBytes) : core.__ckPlanRolling(messages, rest, stateBytes);
    const done = await drive(machine, { store, storeTimeoutMs, timeoutMs, summarize, flush, messages, progress });
    if (done.state !== undefined) {
      const saved = await attempt(() => store.save(stateKey, done.state), storeTimeoutMs);
      if (!saved.ok) done.report.stateFailure = saved.reason;
    }
    return { messages: done.messages, marker: done.marker, report: done.report };
  }

  /**
   * Archives the older messages, asks the summarizer for a summary, and replaces them by a
   * marker; the recent turns stay.
   */
  const compact = (messages, options) => fold("compact", messages, options);

  /**
   * The rolling window for agent loops: the last iterations raw, older ones folded into one
   * bounded summary every `resummarizeEvery` iterations, each section of the prompt within its
   * budget.
   */
  const rollingWindow = (messages, options) => fold("rolling", messages, options);

  /** The compaction archives of a marker, oldest first: the original messages it replaced. */
  async function readArchive(marker, options) {
    options = checkObject(options, "options");
    const store = checkStore(options.store);
    const timeoutMs = checkTimeout(options.timeoutMs);
    let key = Array.isArray(marker) ? marker : marker?.key;
    if (!Array.isArray(key) || key.length === 0 || !key.every((k) => typeof k === "string")) {
      throw optionsError("marker", `expected a marker (with its archive \`key\`) or a key, found ${typeOf(marker)}`);
    }
    const records = [];
    const seen = new Set();
    while (key) {
      const id = JSON.stringify(key);
      if (seen.has(id)) throw new ContextKeeperError(`the archive ${id} lists itself among its predecessors`, { kind: "corrupt" });
      seen.add(id);
      const loaded = await attempt(() => store.load(key), timeoutMs);
      if (!loaded.ok) throw storeError("load", loaded, key);
      const bytes = loadedValue(loaded, key);
      if (bytes === undefined) {
        throw new ContextKeeperError(`no archive is stored under ${id}`, { kind: "notFound", path: "marker.key" });
      }
      const record = core.__ckReadArchive(id, bytes);
      records.push(record);
      key = record.previous ?? undefined;
    }
    records.reverse();
    const last = records[records.length - 1];
    // NOTE: an AI SDK UIMessage cut at a step by two compactions is archived in pieces: a
    // record that `continues` starts with the next parts of the previous record's last message.
    const messages = [];
    for (const record of records) {
      const [first, ...rest] = record.messages;
      const prev = messages[messages.length - 1];
      if (record.continues && first && prev && Array.isArray(prev.parts) && Array.isArray(first.parts)) {
        messages[messages.length - 1] = { ...prev, parts: [...prev.parts, ...first.parts] };
        messages.push(...rest);
      } else {
        messages.push(...record.messages);
      }
    }
    return { messages, format: last.format, number: last.number, archives: records.length };
  }

  function activeMessages(messages, options) {
    return core.__ckActive(messages, checkObject(options, "options"));
  }

  const ContextKeeper = bindKeeper(core, { drive, checkFunction, timeOf, offloadToolResult, recoveryTools, runRecoveryTool, CALLBACK_TIMEOUT_MS });

  return {
    ContextKeeper,
    compact,
    rollingWindow,
    readArchive,
    activeMessages,
    pruneMessages,
    evictToolInputs,
    offloadToolResult,
    offloadMessages,
    readOffloaded,
    listOffloaded,
    grepOffloaded,
    recoveryTools,
    runRecoveryTool,
  };
}

/** The keeper's options that are the driver's (the rest go to the core). */
const KEEPER_OWN = ["store", "summarize", "flush", "onProgress", "timeoutMs", "storeTimeoutMs", "onBusy", "memoryKey"];

/** Where `loadMemory` reads the long-term memory file by default: the routing store's `memories` prefix. */
const MEMORY_KEY = ["memories", "AGENTS.md"];

/** `options.memoryKey`: a store key (strings), or the default. */
function checkMemoryKey(key) {
  if (key === undefined) return MEMORY_KEY;
  if (!Array.isArray(key) || key.length === 0 || !key.every((part) => typeof part === "string" && part !== "")) {
    throw optionsError("options.memoryKey", `expected a store key (an array of non-empty strings), found ${typeOf(key)}`);
  }
  return key.slice();
}
/** The message list of a conversation argument and the request object around it (or null). */
function listOf(conversation) {
  if (Array.isArray(conversation)) return { list: conversation, envelope: null };
  if (conversation !== null && typeof conversation === "object" && Array.isArray(conversation.messages)) {
    return { list: conversation.messages, envelope: conversation };
  }
  return null;
}

/** Whether `history` is `previous` with messages appended: the same objects, the same envelope fields. */
function extendsPrevious(history, previous) {
  const now = listOf(history);
  if (now === null || (now.envelope === null) !== (previous.envelope === null)) return false;
  if (now.envelope !== null) {
    const keys = Object.keys(now.envelope);
    if (keys.length !== previous.keys.length) return false;
    for (const key of keys) if (key !== "messages" && now.envelope[key] !== previous.envelope[key]) return false;
  }
  if (now.list.length < previous.list.length) return false;
  for (let i = 0; i < previous.list.length; i++) if (now.list[i] !== previous.list[i]) return false;
  return true;
}

/** The figures of no prepare answered without the core. */
const NOTHING_UNRECORDED = Object.freeze({ prepared: 0, tokensSent: 0, lastTokens: 0, saved: Object.freeze({ offload: 0, prune: 0, evict: 0, compact: 0 }), since: 0, output: "" });

/**
 * The ContextKeeper: one object, configured once, called before every model call. The core
 * (`__CkKeeper`, and each prepare a `__CkMachine`) decides; this class loads and stores the
 * session state, runs the prepare's machine through `drive` (the saves, the flush and the
 * summary the core asks for, each bounded by a timeout), queues the
 * prepares of one session, and skips the core entirely when a history only grew by messages that
 * need nothing and the count stays under the first threshold (counted through the keeper's own
 * memo, so the old messages are not read again).
 */
function bindKeeper(core, h) {
  return class ContextKeeper {
    #core;
    #options;
    #store;
    #budget;
    #reason;
    #queues = new Map();
    #last = new Map();

    constructor(options) {
      options = checkObject(options, "options");
      this.#store = checkStore(options.store);
      this.#options = {
        summarize: h.checkFunction(options.summarize, "options.summarize"),
        flush: h.checkFunction(options.flush, "options.flush"),
        onProgress: h.checkFunction(options.onProgress, "options.onProgress"),
        timeoutMs: checkTimeout(options.timeoutMs ?? h.CALLBACK_TIMEOUT_MS),
        storeTimeoutMs: checkTimeout(options.storeTimeoutMs, "options.storeTimeoutMs"),
        onBusy: options.onBusy ?? "wait",
        memoryKey: checkMemoryKey(options.memoryKey),
        model: options.model,
        offload: options.offload,
      };
      if (this.#options.onBusy !== "wait" && this.#options.onBusy !== "error") {
        throw optionsError("options.onBusy", `expected "wait" or "error", found ${JSON.stringify(options.onBusy)}`);
      }
      this.#core = new core.__CkKeeper(coreOptions(options, KEEPER_OWN));
      const budget = this.#core.budget();
      this.#budget = budget.budget ?? null;
      this.#reason = budget.reason ?? null;
    }

    /** The token figures the keeper works to, or null when management is off. */
    get budget() {
      return this.#budget;
    }

    #alive() {
      if (this.#core === undefined) throw new ContextKeeperError("this ContextKeeper was freed", { kind: "options" });
      return this.#core;
    }

    /** Frees the keeper's wasm memory (its counter and cache). */
    free() {
      this.#core?.free();
      this.#core = undefined;
      this.#last.clear();
    }

    [Symbol.dispose]() {
      this.free();
    }

    async #loadState(sessionId) {
      const state = await this.#loadStateOrNot(sessionId);
      if (state.failed !== undefined) throw state.failed;
      return state;
    }

    /** The session's state, or (when the store cannot give it) none and why: a prepare is
     * made without it rather than failing while the store is down. */
    async #loadStateOrNot(sessionId) {
      const key = Array.from(core.__ckKey("state", sessionId, undefined));
      const loaded = await attempt(() => this.#store.load(key), this.#options.storeTimeoutMs);
      if (!loaded.ok) return { key, bytes: undefined, failed: storeError("load", loaded, key) };
      try {
        return { key, bytes: loadedValue(loaded, key) };
      } catch (error) {
        return { key, bytes: undefined, failed: error };
      }
    }

    /** Runs `task` after every earlier task of the session (writes never interleave). */
    async #serial(sessionId, task) {
      const previous = this.#queues.get(sessionId);
      if (previous !== undefined && this.#options.onBusy === "error") {
        throw new ContextKeeperError(`a prepare of session ${JSON.stringify(sessionId)} is running`, { kind: "busy", path: "options.sessionId" });
      }
      const run = (previous ?? Promise.resolve()).then(task, task);
      const settled = run.then(() => {}, () => {});
      this.#queues.set(sessionId, settled);
      try {
        return await run;
      } finally {
        if (this.#queues.get(sessionId) === settled) this.#queues.delete(sessionId);
      }
    }

    /**
     * The messages to send for `history`, in its format, and what was done. `history` is never
     * mutated; untouched messages are its own objects.
     */
    async prepare(history, options) {
      options = checkObject(options, "options");
      const sessionId = checkSession(options.sessionId);
      const keeper = this.#alive();
      return this.#serial(sessionId, () => this.#prepare(keeper, history, sessionId, options, false));
    }

    /** The decisions prepare would make now, as a dry run: no store write, no callback. */
    async plan(history, options) {
      options = checkObject(options, "options");
      const sessionId = checkSession(options.sessionId);
      const keeper = this.#alive();
      return this.#serial(sessionId, () => this.#prepare(keeper, history, sessionId, options, true));
    }

    #fast(keeper, history, sessionId) {
      const last = this.#last.get(sessionId);
      if (last === undefined || this.#budget === null || !extendsPrevious(history, last)) return null;
      const { list, envelope } = listOf(history);
      const fresh = list.slice(last.list.length);
      // the session's calibration (another session of this keeper may have set another)
      keeper.calibrate(last.calibration ?? 1);
      const outList = fresh.length === 0 ? last.outList : last.outList.concat(fresh);
      const output = envelope === null ? outList : { ...last.outEnvelope, messages: outList };
      // NOTE: the core decides (`keeper::fast`): whether the last answer stands with the new
      // messages appended, and with what figures; this only assembles the answer.
      const { tokensBefore, tokensAfter, holdsFor } = last.report;
      const answer = keeper.fast(fresh, output, tokensBefore, tokensAfter, holdsFor, this.#options.flush !== undefined);
      if (answer === undefined) return null;
      const { output: hashes, ...figures } = answer;
      // NOTE: what the previous call did this call does not (no flush, no compaction, no offload).
      const { flush: _flush, compaction: _compaction, ...standing } = last.report;
      const report = {
        ...standing,
        ...figures,
        fits: true,
        unchangedPrefix: last.outList.length,
        messages: outList.length,
        offloaded: [],
        failures: [],
        saved: { ...last.report.saved, offload: 0, compact: 0 },
      };
      // NOTE: what this call adds to the session's figures, handed to the core (and so to the
      // stored state) by the next prepare that reaches it; `stats` adds it meanwhile. The
      // hashes of the messages it appended let that prepare count its `unchangedPrefix`.
      const u = last.unrecorded;
      const unrecorded = {
        prepared: u.prepared + 1,
        tokensSent: u.tokensSent + figures.tokensAfter,
        lastTokens: figures.tokensAfter,
        saved: { ...u.saved, prune: u.saved.prune + report.saved.prune, evict: u.saved.evict + report.saved.evict },
        since: u.prepared === 0 ? last.outList.length : u.since,
        output: u.output + hashes,
      };
      this.#remember(sessionId, history, output, report, last.calibration, unrecorded);
      return { messages: output, report };
    }

    #remember(sessionId, history, output, report, calibration, unrecorded = NOTHING_UNRECORDED) {
      const input = listOf(history);
      const out = listOf(output);
      if (input === null || out === null || this.#budget === null) return;
      this.#last.set(sessionId, {
        list: input.list.slice(),
        envelope: input.envelope,
        keys: input.envelope === null ? [] : Object.keys(input.envelope),
        outList: out.list,
        outEnvelope: out.envelope,
        report,
        calibration,
        unrecorded,
      });
    }

    async #prepare(keeper, history, sessionId, options, dry) {
      if (!dry) {
        const fast = this.#fast(keeper, history, sessionId);
        if (fast !== null) return fast;
      }
      const { summarize, flush, onProgress, timeoutMs, storeTimeoutMs } = this.#options;
      const progress = (phase) => {
        try {
          onProgress?.({ phase, sessionId });
        } catch {}
      };
      const state = await this.#loadStateOrNot(sessionId);
      const now = h.timeOf(options.now);
      // NOTE: a dry run records nothing; a real one hands the fast calls' figures to the state.
      // Both hand over what the fast calls sent, which `unchangedPrefix` compares with.
      const fastCalls = this.#last.get(sessionId)?.unrecorded;
      const unrecorded = dry && fastCalls !== undefined ? { since: fastCalls.since, output: fastCalls.output } : fastCalls;
      const machine = keeper.prepare(history, sessionId, now, flush !== undefined, state.bytes, unrecorded);
      const io = { store: this.#store, storeTimeoutMs, timeoutMs, summarize, flush, messages: history, progress, dry };
      const done = await h.drive(machine, io);
      const report = done.report;
      unpackEdits(report, done.edits, done.editTexts);
      const last = this.#last.get(sessionId);
      if (state.failed !== undefined) {
        // NOTE: made without the session's state, which could not be read: never written over
        // it, and kept only if it is a valid request within the window.
        this.#last.delete(sessionId);
        if (!report.fits) throw state.failed;
        report.stateFailure = `${state.failed.message}; this prepare was made without the session's state, which was not written`;
        if (dry) report.dryRun = true;
        return { messages: done.messages, report };
      }
      if (dry) {
        report.dryRun = true;
        return { messages: done.messages, report };
      }
      if (done.state !== undefined) {
        const saved = await attempt(() => this.#store.save(state.key, done.state), storeTimeoutMs);
        if (!saved.ok) report.stateFailure = saved.reason;
      }
      const calibration = done.state === undefined ? last?.calibration : (done.calibration ?? undefined);
      if (report.managed) this.#remember(sessionId, history, done.messages, report, calibration);
      return { messages: done.messages, report };
    }

    /** Offloads one tool result as it arrives (before it enters the history). */
    async processToolResult(result, options) {
      options = checkObject(options, "options");
      const sessionId = checkSession(options.sessionId);
      return h.offloadToolResult(result, {
        ...(this.#options.offload ?? {}),
        // NOTE: the keeper's limit (an eighth of a small window), as prepare offloads at.
        ...(this.#budget === null ? {} : { limitTokens: this.#budget.offloadAt }),
        model: this.#options.offload?.model ?? this.#options.model,
        store: this.#store,
        sessionId,
        toolName: options.toolName,
        toolCallId: options.toolCallId,
        timeoutMs: this.#options.storeTimeoutMs,
      });
    }

    /** Adds the provider-reported usage of a call to the session's figures. */
    async recordUsage(sessionId, usage) {
      checkSession(sessionId, "sessionId");
      return this.#serial(sessionId, async () => {
        const state = await this.#loadState(sessionId);
        // NOTE: an SDK's usage is optional (OpenAI's `completion.usage`): none, nothing to add
        // and nothing to write.
        const none = usage === undefined || usage === null;
        const bytes = none ? state.bytes : core.__CkKeeper.recordUsage(state.bytes, usage);
        if (!none) {
          const saved = await attempt(() => this.#store.save(state.key, bytes), this.#options.storeTimeoutMs);
          if (!saved.ok) throw storeError("save", saved, state.key);
        }
        // NOTE: a model counted by proxy is calibrated by what the provider read of the last
        // prepared messages; this keeper's counts use it from now on, any keeper's from the
        // session's next prepare.
        const calibration = core.__CkKeeper.calibration(bytes) ?? null;
        const last = this.#last.get(sessionId);
        if (last !== undefined) last.calibration = calibration ?? undefined;
        return { ...core.__CkKeeper.stats(bytes).usage, calibration };
      });
    }

    /** The session's running figures: tokens saved per strategy, events, stored bytes, usage. */
    async stats(sessionId) {
      checkSession(sessionId, "sessionId");
      const state = await this.#loadState(sessionId);
      const stats = core.__CkKeeper.stats(state.bytes);
      // the prepares this keeper answered without the core, not yet in the stored state
      const u = this.#last.get(sessionId)?.unrecorded;
      if (u !== undefined && u.prepared > 0) {
        stats.prepared += u.prepared;
        stats.tokensSent += u.tokensSent;
        stats.lastTokens = u.lastTokens;
        for (const tier of Object.keys(u.saved)) stats.saved[tier] = (stats.saved[tier] ?? 0) + u.saved[tier];
      }
      return stats;
    }

    /** The recovery tools for the model: definitions in `format`, and a handler. */
    tools(options) {
      options = checkObject(options, "options");
      const sessionId = checkSession(options.sessionId);
      const format = options.format ?? "openai";
      const context = { store: this.#store, sessionId, timeoutMs: this.#options.storeTimeoutMs };
      const aisdk = format === "ai-sdk" || format === "aisdk";
      return {
        definitions: h.recoveryTools(format, aisdk ? { ...context, jsonSchema: options.jsonSchema } : undefined),
        handle: (name, args) => h.runRecoveryTool(name, args, context),
      };
    }

    /** Text for the system prompt: how context is managed, and how to read it back. */
    systemPromptSegment() {
      const lines = [
        "## Context management",
        "This conversation is kept inside the model's context window by context-keeper. Nothing is deleted:",
        "- Very large tool results are stored outside the conversation and replaced by a pointer with a preview and an id. Read them with `read_offloaded` (by id, a range of lines at a time), search them with `grep_offloaded` (a regular expression), and list them with `list_offloaded`.",
        "- Older tool results may be trimmed to their start and end, or cleared to a note; run the tool again or read the stored copy when a note gives an id.",
        "- The contents written by file write/edit calls may be replaced by a note naming the file: read the file for its current content.",
        "- Older turns may be replaced by a summary in a `<context-keeper-compaction ...>` message. It keeps the task, decisions, current state and exact details (paths, ids, commands); the original messages are archived.",
      ];
      // NOTE: the memory section only for a host that runs the memory flush, whose agent has
      // a memory tool of the host's: the package itself gives the model none.
      if (this.#options.flush !== undefined) {
        lines.push(
          "",
          "## Memory",
          "When you learn something durable (a preference, a decision and its reason, a path, a command that works), save it with your memory tool. Before older turns are summarized you will be asked once to save what must outlive them.",
        );
      }
      return lines.join("\n");
    }

    /** The long-term memory file (`memoryKey`: `AGENTS.md` under the store's `memories` prefix by default), or null. */
    async loadMemory() {
      const key = this.#options.memoryKey;
      const loaded = await attempt(() => this.#store.load(key), this.#options.storeTimeoutMs);
      if (!loaded.ok) throw storeError("load", loaded, key);
      const bytes = loadedValue(loaded, key);
      return bytes === undefined ? null : new TextDecoder().decode(bytes);
    }
  };
}
