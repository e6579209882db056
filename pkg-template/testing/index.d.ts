// Types of context-keeper/testing.
import type { Store, StorageKey } from "../stores/index.js";

/** Key components every store must keep apart and round-trip exactly. */
export const HOSTILE_COMPONENTS: readonly string[];

export interface StoreTestContext {
  /** A fresh, empty store dedicated to one case. */
  store: Store;
  /** A new store over the same backend, for the persistence case (omit where nothing persists). */
  reopen?: () => Promise<Store>;
  teardown?: () => Promise<void>;
}

export interface StoreTestReport {
  passed: number;
  failed: number;
  skipped: number;
  cases: Array<{ name: string; ok: boolean; skipped?: boolean; ms: number; error?: string }>;
  /** The large round trip: its size and how long the save and the load took. */
  timings: { largeBytes?: number; largeSaveMs?: number; largeLoadMs?: number };
}

export interface StoreTestOptions {
  /** Registers each case with a test runner (node:test's `test`, vitest's `it`, ...). */
  test?: (name: string, fn: () => Promise<void>) => unknown;
  /** The large round trip's size; default 50 MiB. */
  largeBytes?: number;
  /** Concurrent saves and loads; default 200. */
  concurrency?: number;
  /** Runs only the cases of these names. */
  only?: string[];
}

/**
 * The store suite: round trips of 0 bytes, 1 byte and 50 MiB, hostile keys, prefix semantics,
 * concurrency, overwrite, removal of missing keys, persistence across a reopen. With `test`,
 * registers the cases and returns undefined; without, runs them and resolves with a report.
 */
export function runStoreTests(setup: () => Promise<StoreTestContext>, options: StoreTestOptions & { test: NonNullable<StoreTestOptions["test"]> }): undefined;
export function runStoreTests(setup: () => Promise<StoreTestContext>, options?: StoreTestOptions): Promise<StoreTestReport>;

export type Fault = "throw" | "reject" | "hang" | "quota" | "half" | "missing" | "garbage" | "delay";
export type StoreOp = "load" | "save" | "remove" | "loadRange" | "removeRange";

export interface FaultRule {
  /** The operation, or "*" (default) for every one. */
  op?: StoreOp | "*";
  fault: Fault;
  /** The n-th call of the operation (from 1), or a list of them. */
  nth?: number | number[];
  /** A prefix the key must start with. */
  key?: StorageKey;
  /** How many times the rule fires; default every time it matches. */
  times?: number;
  /** For "delay": how long, default 10 ms. */
  ms?: number;
}

export type FaultSchedule = FaultRule[] | ((op: StoreOp, key: StorageKey, n: number) => Fault | { fault: Fault; ms?: number } | undefined);

/**
 * A store that forwards to `inner` and fails on a schedule: "throw" (synchronously), "reject",
 * "hang" (never settles), "quota" (StoreQuotaError), "half" (a save writes half the value and
 * rejects), "missing" (a load finds nothing), "garbage" (a load returns other bytes), "delay".
 */
export class FaultyStore implements Store {
  constructor(inner: Store, schedule?: FaultSchedule);
  readonly inner: Store;
  /** Calls of each operation so far. */
  readonly counts: Record<StoreOp, number>;
  /** Every call, with the fault injected into it. */
  log: Array<{ op: StoreOp; key: StorageKey; n: number; fault: Fault | undefined }>;
  load(key: StorageKey): Promise<Uint8Array | undefined>;
  save(key: StorageKey, data: Uint8Array): Promise<void>;
  remove(key: StorageKey): Promise<void>;
  loadRange(prefix: StorageKey): Promise<Array<{ key: StorageKey; data: Uint8Array | undefined }>>;
  removeRange(prefix: StorageKey): Promise<void>;
  close(): Promise<void>;
}

/** A seeded schedule: each call fails with probability `rate` (default 0.2), a fault drawn from `faults`. */
export function randomFaults(options?: { seed?: number; rate?: number; faults?: Fault[] }): (op: StoreOp, key: StorageKey, n: number) => Fault | undefined;
