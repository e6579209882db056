// The context layer's functions. Their option and report types are generated from the Rust
// types (tsify) into the wasm glue's declarations; these signatures only say which go where.
import type {
  Messages,
  MessageFormat,
  PruneOptions,
  EvictOptions,
  OffloadOptions,
  Report,
  Offloaded,
  RecordHeader,
  ReadResult,
  GrepResult,
  GrepOptions,
  CompactCoreOptions,
  CompactReport,
  MarkerInfo,
  SummaryRequest,
  FlushRequest,
  KeeperOptions,
  Budget,
  PrepareReport,
  KeeperStats,
  ProviderUsage,
  RollingCoreOptions,
  RollingReport,
} from "../node/context_keeper.js";
import type { Store } from "../stores/index.js";

/** The store calls of the async functions: where, and how long each may take. */
export interface StoreOptions {
  store: Store;
  /** A store call that has not settled after this long counts as failed. Default 10,000. */
  timeoutMs?: number;
}

/** A conversation after a tier, in the input's shape. */
export interface Tiered<M> {
  /** Untouched messages are the caller's own objects; the input is never mutated. */
  messages: M;
  report: Report;
}

/** Reading a conversation: its format, detected when absent. */
export interface FormatOption {
  format?: MessageFormat | "ai-sdk";
}

/**
 * Soft-trims tool results older than the last `keepLastAssistantTurns` assistant turns (head
 * and tail kept) and clears very old ones; pure and synchronous. Idempotent.
 *
 * ```js
 * const { messages, report } = pruneMessages(history, { keepLastAssistantTurns: 3 });
 * ```
 */
export function pruneMessages<M extends Messages>(messages: M, options?: PruneOptions & FormatOption | null): Tiered<M>;

/**
 * Replaces the content argument of file write/edit calls by a pointer to the path written;
 * long results of those calls become a short note. Pure and synchronous.
 *
 * ```js
 * evictToolInputs(history, { tools: ["write_file", "str_replace_editor"] });
 * ```
 */
export function evictToolInputs<M extends Messages>(messages: M, options?: EvictOptions & FormatOption | null): Tiered<M>;

/** What {@link offloadToolResult} gives back. */
export interface OffloadedToolResult<R> {
  /** The pointer and preview in the result's own shape (images kept), or the result itself. */
  content: R | string;
  /** The offload, or null when the result stayed. */
  offloaded: Offloaded | null;
  /** Why a result over the limit stayed: the store failed or timed out. */
  failure?: string;
}

/**
 * At the moment a tool returns: a result over `limitTokens` (default 20,000) is saved to the
 * store and replaced by a pointer, its size and a preview. Content is replaced only after the
 * store confirmed the write; on any failure the result comes back as it was, with `failure`.
 *
 * ```js
 * const { content } = await offloadToolResult(output, { store, sessionId, toolName: "bash", toolCallId: call.id });
 * ```
 */
export function offloadToolResult<R>(result: R, options: OffloadOptions & StoreOptions): Promise<OffloadedToolResult<R>>;

/** {@link offloadToolResult} over a whole conversation, for results that slipped through. */
export function offloadMessages<M extends Messages>(messages: M, options: OffloadOptions & StoreOptions & FormatOption): Promise<Tiered<M>>;

/** Where offloaded content of a session is. */
export interface SessionStore extends StoreOptions {
  sessionId: string;
}

/** A read, with the text the recovery tool shows the model (numbered lines). */
export interface ReadOffloaded extends ReadResult {
  rendered: string;
}

/**
 * Reads an offloaded output by lines: `offset` from 1 (default 1), `limit` lines (default 200,
 * at most 2,000 a read; `nextOffset` says where to go on, `null` at the end), each line cut to
 * `lineChars` (default 300).
 */
export function readOffloaded(id: string, options: SessionStore & { offset?: number; limit?: number; lineChars?: number }): Promise<ReadOffloaded>;

/** The outputs offloaded in a session. */
export function listOffloaded(options: SessionStore): Promise<{ offloads: RecordHeader[]; damaged: string[]; rendered: string }>;

/** Searches a session's offloaded outputs line by line, in linear time whatever the pattern. */
export function grepOffloaded(pattern: string, options: SessionStore & GrepOptions & { id?: string }): Promise<GrepResult & { rendered: string }>;

/** The recovery tools' names. */
export type RecoveryToolName = "read_offloaded" | "list_offloaded" | "grep_offloaded";

/** An OpenAI Chat Completions tool definition. */
export interface OpenAIToolDefinition {
  type: "function";
  function: { name: RecoveryToolName; description: string; parameters: Record<string, unknown> };
}

/** A JSON Schema of a tool's input: an object, as Anthropic's `Tool.InputSchema` requires. */
export interface ToolInputSchema {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

/** An Anthropic Messages tool definition (an `Anthropic.Tool`). */
export interface AnthropicToolDefinition {
  name: RecoveryToolName;
  description: string;
  input_schema: ToolInputSchema;
}

/**
 * An AI SDK tool (what `tool()` returns), with `execute` when a store was given. Its
 * `inputSchema` is what the `jsonSchema` you pass made of the tool's JSON Schema: pass the AI
 * SDK's own (`import { jsonSchema } from "ai"`) and the tools are a `ToolSet` to TypeScript
 * too. Without it, the schema is a plain object the SDK reads at run time (typed `unknown`).
 */
export interface AISDKRecoveryTool<S = unknown> {
  description: string;
  inputSchema: S;
  execute?: (args: unknown) => Promise<string>;
}

/**
 * The AI SDK's `jsonSchema` (from `ai`), or any function that makes its schema objects from a
 * tool's JSON Schema (a {@link ToolInputSchema}). (Typed to take any such function, whatever
 * JSON Schema type it declares.)
 */
export type AISDKJsonSchema<S> = (schema: never) => S;

/**
 * The recovery tools' definitions: an array for OpenAI and Anthropic (route their calls to
 * {@link runRecoveryTool}), or an AI SDK tool set, ready for `generateText({ tools })`.
 */
export function recoveryTools(format?: "openai"): OpenAIToolDefinition[];
export function recoveryTools(format: "anthropic"): AnthropicToolDefinition[];
export function recoveryTools<S = unknown>(
  format: "aisdk" | "ai-sdk",
  options: SessionStore & { jsonSchema?: AISDKJsonSchema<S> },
): Record<RecoveryToolName, AISDKRecoveryTool<S> & { execute: (args: unknown) => Promise<string> }>;
export function recoveryTools<S = unknown>(format: "aisdk" | "ai-sdk", options?: { jsonSchema?: AISDKJsonSchema<S> }): Record<RecoveryToolName, AISDKRecoveryTool<S>>;

/**
 * Runs a recovery tool call and returns the text for its tool result. What the model got
 * wrong (an unknown id, a bad pattern) comes back as text starting with "Error:"; a store
 * that fails throws a ContextKeeperError.
 *
 * ```js
 * if (call.function.name.endsWith("_offloaded")) {
 *   content = await runRecoveryTool(call.function.name, call.function.arguments, { store, sessionId });
 * }
 * ```
 */
export function runRecoveryTool(name: RecoveryToolName | (string & {}), args: unknown, options: SessionStore): Promise<string>;

/**
 * What the summarizer is given: the span's messages and transcript, the previous summary. It
 * returns the summary; anything but a string (an SDK's `null` content) fails the compaction,
 * which keeps the history as it was and reports why.
 */
export type Summarize = (request: SummaryRequest) => string | null | undefined | Promise<string | null | undefined>;

/** Handles a recovery tool call by its name (as the SDK gives it, a string): the tool result's text. */
export type RecoveryHandler = (name: RecoveryToolName | (string & {}), args: unknown) => Promise<string>;

/**
 * The memory flush: the host's agent gets one silent turn to save durable facts. Its reply is
 * never added to the conversation: a reply carrying `silentToken` is dropped, any other is
 * in the report.
 */
export type Flush<M = unknown> = (request: FlushRequest & { messages: M }) => string | null | undefined | Promise<string | null | undefined>;

/** A compaction's phases, in order, as `onProgress` reports them. */
export type CompactPhase = "flushing" | "archiving" | "summarizing" | "applying";

export interface CompactOptions<M = unknown> extends Omit<CompactCoreOptions, "flush" | "now">, FormatOption {
  store: Store;
  /** The host's LLM call. Absent: the built-in heuristic summary (marked as such). */
  summarize?: Summarize;
  /** The memory flush, run once per compaction cycle before the summary. */
  flush?: Flush<M>;
  /** The marker's time (default: now). A fixed value makes the output reproducible. */
  now?: string | Date | number;
  /** How long the summarizer and the flush may take. Default 120,000 ms. */
  timeoutMs?: number;
  /** How long each store call may take. Default 10,000 ms. */
  storeTimeoutMs?: number;
  onProgress?: (event: { phase: CompactPhase; sessionId: string }) => void;
}

export interface Compacted<M> {
  /** The marker in place of the older messages; the head and the recent turns are the
   *  caller's own objects. As they were, on any failure. */
  messages: M;
  /** The marker the messages hold (new, re-applied or the input's own), or null. */
  marker: MarkerInfo | null;
  report: CompactReport & {
    /** The session state could not be stored: the next call with the full history will
     *  summarize again. */
    stateFailure?: string;
  };
}

/**
 * Archives older messages (JSON and a Markdown transcript) and replaces them with a summary
 * marker; the system messages, the first request and the recent turns stay as they are. The
 * summary is checked (not empty, not an error text, shorter than what it replaces) and the
 * exact details it lost that the recent turns still name are pinned to it. On any failure
 * the messages come back unchanged and `report.reason` says why.
 *
 * ```js
 * const { messages, report } = await compact(history, {
 *   store, sessionId,
 *   summarize: async ({ prompt, transcript }) =>
 *     (await generateText({ model: cheapModel, system: prompt, prompt: transcript })).text,
 * });
 * ```
 */
export function compact<M extends Messages>(messages: M, options: CompactOptions<M>): Promise<Compacted<M>>;

export interface RollingOptions extends Omit<RollingCoreOptions, "now">, FormatOption {
  store: Store;
  /** The host's LLM call, made only at a fold. Absent: the built-in heuristic summary
   *  (marked as such), so the window works offline. */
  summarize?: Summarize;
  /** The new marker's time (default: now). A fixed value makes the output reproducible. */
  now?: string | Date | number;
  /** How long the summarizer may take. Default 120,000 ms. */
  timeoutMs?: number;
  /** How long each store call may take. Default 10,000 ms. */
  storeTimeoutMs?: number;
}

export interface Rolled<M> {
  /** The instructions, the goal, the summary marker and the raw iterations; every message
   *  left whole is the caller's own object. */
  messages: M;
  /** The summary marker the messages hold, or null before the first fold. */
  marker: MarkerInfo | null;
  report: RollingReport & {
    /** The rolling state could not be stored: a host that sends its full history again gets
     *  the iterations raw until the next interval. */
    stateFailure?: string;
  };
}

/**
 * The rolling window for agent loops: the last `keepIterations` iterations (assistant turns
 * with their tool results, default 5) stay raw; older ones fold into one summary of at most
 * `maxSummaryTokens` (2,000) every `resummarizeEvery` iterations (10), so the prompt's prefix
 * is stable between folds. `budget` holds each section (instructions, goal, summary, recent)
 * to its own limit, or shares a total. A failed summary keeps the iterations raw and is
 * retried at the next interval. State is kept in the store, so a stateless Worker works.
 *
 * ```js
 * const { messages, report } = await rollingWindow(history, {
 *   store, sessionId, budget: 60_000,
 *   summarize: async ({ prompt, transcript }) =>
 *     (await generateText({ model: cheapModel, system: prompt, prompt: transcript })).text,
 * });
 * ```
 */
export function rollingWindow<M extends Messages>(messages: M, options: RollingOptions): Promise<Rolled<M>>;

/** The messages a marker replaced, read back from its archives (all compactions it folded). */
export function readArchive(marker: MarkerInfo | string[], options: StoreOptions): Promise<{ messages: unknown[]; format: MessageFormat; number: number; archives: number }>;

/**
 * What the model sees of a history: the system messages and the head a marker kept, then
 * everything from the latest compaction marker on (ours, or Anthropic's and OpenAI's own).
 * Synchronous; the messages are the caller's own objects.
 */
export function activeMessages<M extends Messages>(messages: M, options?: FormatOption | null): M;

/** A keeper's phases, as `onProgress` reports them. */
export type KeeperPhase = "offloading" | CompactPhase;

export interface ContextKeeperOptions<M = unknown> extends KeeperOptions, FormatOption {
  /** Where offloaded results, archives and session state live. */
  store: Store;
  /** The host's LLM call for compaction. Absent: the heuristic summary. */
  summarize?: Summarize;
  /** The pre-compaction memory flush, once per compaction cycle. */
  flush?: Flush<M>;
  /** How long the summarizer and the flush may take. Default 120,000 ms. */
  timeoutMs?: number;
  /** How long each store call may take. Default 10,000 ms. */
  storeTimeoutMs?: number;
  /** A second prepare of a session while one runs: wait for it (default) or throw (`kind: "busy"`). */
  onBusy?: "wait" | "error";
  onProgress?: (event: { phase: KeeperPhase; sessionId: string }) => void;
  /** Where `loadMemory` reads the long-term memory file. Default `["memories", "AGENTS.md"]`. */
  memoryKey?: string[];
}

/** What `recordUsage` returns: the session's provider-reported usage, summed, and its calibration. */
export interface RecordedUsage extends ProviderUsage {
  /**
   * Provider tokens per counted token for a model counted by proxy (Claude, Gemini), from the
   * last call recorded; `null` until one is (and for a model counted exactly).
   */
  calibration: number | null;
}

export interface Prepared<M> {
  /** Ready to send, in the input's format; untouched messages are the caller's own objects. */
  messages: M;
  report: PrepareReport & {
    /** The session state could not be stored, or could not be read: then the prepare was
     *  made without it (a valid request within the window, or else the store's error is
     *  thrown) and the stored state was left as it was. */
    stateFailure?: string;
    /** Set by `plan`: nothing was written and no callback ran. */
    dryRun?: boolean;
  };
}

/**
 * Keeps a conversation inside its window: call `prepare` before every model call. Offloads
 * huge tool results, prunes and evicts past the first threshold (85% of the window), flushes
 * and compacts past the second (95%, or window - reserve), cheapest first; decisions move in
 * steps so the provider's prompt cache holds. It owns its counter: two keepers never share
 * state.
 *
 * ```js
 * using keeper = new ContextKeeper({ model: "claude-sonnet-4-5", store, summarize });
 * const { messages, report } = await keeper.prepare(history, { sessionId });
 * ```
 */
export class ContextKeeper<M extends Messages = Messages> {
  constructor(options: ContextKeeperOptions<M>);
  /** The figures worked to, or null when management is off (`enabled: false`, unknown window). */
  readonly budget: Budget | null;
  prepare<H extends Messages>(history: H, options: { sessionId: string; now?: string | Date | number }): Promise<Prepared<H>>;
  /** The same decisions as a dry run: nothing stored, no callback called. */
  plan<H extends Messages>(history: H, options: { sessionId: string; now?: string | Date | number }): Promise<Prepared<H>>;
  processToolResult<R>(result: R, options: { sessionId: string; toolName?: string; toolCallId?: string }): Promise<OffloadedToolResult<R>>;
  /**
   * Adds a call's provider-reported usage (OpenAI's `completion.usage`, Anthropic's
   * `reply.usage`, the AI SDK's `usage`: any of their shapes). Absent usage (`undefined`,
   * `null`) records nothing.
   */
  recordUsage(sessionId: string, usage: object | null | undefined): Promise<RecordedUsage>;
  stats(sessionId: string): Promise<KeeperStats>;
  /** The recovery tools' definitions in `format` (OpenAI's by default) and their handler. */
  tools(options: { sessionId: string; format?: "openai" }): { definitions: OpenAIToolDefinition[]; handle: RecoveryHandler };
  tools(options: { sessionId: string; format: "anthropic" }): { definitions: AnthropicToolDefinition[]; handle: RecoveryHandler };
  /** AI SDK tools; pass the SDK's `jsonSchema` (from `ai`) and `definitions` is a `ToolSet`. */
  tools<S = unknown>(options: { sessionId: string; format: "aisdk" | "ai-sdk"; jsonSchema?: AISDKJsonSchema<S> }): {
    definitions: Record<RecoveryToolName, AISDKRecoveryTool<S> & { execute: (args: unknown) => Promise<string> }>;
    handle: RecoveryHandler;
  };
  systemPromptSegment(): string;
  /** The long-term memory file (`memoryKey`, default `AGENTS.md` under `memories`), or null. */
  loadMemory(): Promise<string | null>;
  /** Frees the keeper's wasm memory; also `[Symbol.dispose]`, so `using keeper = ...` works. */
  free(): void;
}
