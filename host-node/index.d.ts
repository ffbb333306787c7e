// Type declarations of baton-lease (hand-written; keep in step with js/).

/** Every stable error code, spelled the same in every baton host. */
export type ErrorCode =
  | 'LOCK_HELD'
  | 'LOCK_LOST'
  | 'LOCK_CORRUPT'
  | 'OWNED_BY_OTHER_SCOPE'
  | 'ENV_NOT_APPROVED'
  | 'CTX_NULL'
  | 'USAGE'
  | 'STORE_CONTENDED'
  | 'STORE_REJECTED'
  | 'STORE_PERMISSION'
  | 'RECEIPT_CORRUPT'
  | 'RECEIPT_VERSION'
  | 'INTENT_UNRESOLVED'
  | 'COMMAND_FAILED'
  | 'INTERRUPTED'
  | 'INTERNAL';

/** Every operation of the core, for the raw `invoke`. */
export type Operation =
  | 'scope-for'
  | 'store-spec'
  | 'cell-path'
  | 'detect-context'
  | 'lock-acquire'
  | 'lock-renew'
  | 'lock-release'
  | 'lock-read'
  | 'lock-break'
  | 'fence-check'
  | 'fenced-write'
  | 'render'
  | 'error-codes'
  | 'cell-files';

/** The one error type of the package: core refusals and host failures alike. */
export declare class BatonError extends Error {
  constructor(code: ErrorCode, message: string, extra?: { hint?: string; details?: Record<string, unknown>; cause?: unknown });
  readonly name: 'BatonError';
  /** The stable code, e.g. `LOCK_HELD`. */
  code: ErrorCode;
  /** The standing advice for the code, where there is one. */
  hint: string | undefined;
  /** Every field of the core's error object except code, message and hint (e.g. `lock` for LOCK_HELD). */
  details: Record<string, unknown>;
}

/** One error code as `errorCodes()` lists it. */
export interface ErrorCodeInfo {
  code: ErrorCode;
  /** The CLI exit code: 1 failed, 2 refused before doing anything, 3 lock held or lost. */
  exit: number;
  /** The standing hint, or null. */
  hint: string | null;
}

/** The context of a CI run. */
export interface Context {
  /** The environment (`preview` unless named). */
  env: string;
  /** The branch; null only when the scope was named (`overrides.scope`, BATON_SCOPE) and no source knew it. */
  branch: string | null;
  sha: string | null;
  /** The pull request number, or null for none. */
  pr: number | null;
  defaultBranch: string | null;
  scope: string;
}

/** Values given explicitly; they beat every variable. */
export interface ContextOverrides {
  env?: string | null;
  branch?: string | null;
  sha?: string | null;
  /** Absent: unknown (detect it); null or "": no pull request; else a positive integer. */
  pr?: number | string | null;
  defaultBranch?: string | null;
  /** The scope itself, instead of deriving it; then no branch is needed and git is never asked. */
  scope?: string | null;
}

export interface DetectOptions {
  /** The environment variables (default `process.env`). */
  env?: Record<string, string | undefined>;
  overrides?: ContextOverrides;
  /** Where local git runs, when it must (default `process.cwd()`). */
  cwd?: string;
}

/** A lock record (`lock.json`). Fields baton does not know are kept. */
export interface Lock {
  holder: string;
  acquiredAt?: string;
  expiresAt: string;
  /** The fencing token: strictly increasing per cell. */
  epoch: number;
  /** Set by `breakLock`: who broke what, when and why. */
  broke?: { at: string; reason: string; previous: Lock | null; corrupt?: string };
  [field: string]: unknown;
}

/** A lock as `readLock` reports it. */
export interface LockView extends Lock {
  /** Whether it had expired when it was read. */
  expired: boolean;
  /** Milliseconds from the read until `expiresAt` (negative once expired). */
  expiresInMs: number;
}

/** A cell: one environment and scope. */
export interface CellRef {
  env: string;
  scope: string;
}

export interface AcquireRequest extends CellRef {
  holder: string;
  ttlMs: number;
}

export interface RenewRequest extends CellRef {
  holder: string;
  epoch: number;
  ttlMs: number;
}

export interface ReleaseRequest extends CellRef {
  holder: string;
  /** Release only the lock granted at this epoch. */
  epoch?: number | null;
}

export interface BreakRequest extends CellRef {
  holder: string;
  ttlMs: number;
  /** Why; recorded in the new lock for whoever held it. */
  reason: string;
}

/** A granted lock; `preempted` is the lock it replaced (an expired one, or anything for a break). */
export interface Grant {
  lock: Lock;
  preempted: Lock | null;
}

export interface Release {
  /** Whether the lock was ours and was removed. */
  released: boolean;
  /** The lock found when it was not ours (or null). */
  current: Lock | null;
}

/** The cell operations a store transaction can run (`Store.transact`). */
export type CellOperation =
  | 'lock-acquire'
  | 'lock-renew'
  | 'lock-release'
  | 'lock-read'
  | 'lock-break'
  | 'fence-check'
  | 'fenced-write';

export interface FencedWriteRequest extends CellRef {
  holder: string;
  epoch: number;
  /** A data file of the cell: 1-100 of `A-Za-z0-9._-`, not hidden, not one of baton's own files. */
  file: string;
  content: string;
}

/** What a lease needs of a store: its generic transaction. A wrapper overriding only this is a valid store. */
export interface TransactionalStore {
  /**
   * One atomic transaction on the cell: calls core operation `op` with `request` plus `cell` and `nowMs`
   * (the wall clock, read inside the transaction), commits the answer's changes, and resolves with the
   * core's answer. Rejects with the core's refusal or the store's failure, as a BatonError.
   */
  transact(cell: CellRef, op: CellOperation, request: Record<string, unknown>): Promise<Record<string, any>>;
}

/** A store of cells. Every method is one atomic transaction on one cell, made through `transact`. */
export interface Store extends TransactionalStore {
  readonly kind: 'dir';
  /** The store's root directory. */
  readonly path: string;
  /** How long a transaction waits for a cell mutex held by a live process. */
  readonly mutexWaitMs: number;
  /** Acquires the lock; takes over an expired one. Throws LOCK_HELD, LOCK_CORRUPT, USAGE. */
  acquireLock(request: AcquireRequest): Promise<Grant>;
  /** Extends the lease to now + ttlMs. Throws LOCK_LOST when not held by holder at epoch. */
  renewLock(request: RenewRequest): Promise<{ lock: Lock }>;
  /** Releases the lock if holder holds it; otherwise a no-op reporting what is there. */
  releaseLock(request: ReleaseRequest): Promise<Release>;
  /** The lock, or null. Throws LOCK_CORRUPT. */
  readLock(request: CellRef): Promise<LockView | null>;
  /** Takes the lock over on purpose, whatever is there. */
  breakLock(request: BreakRequest): Promise<Grant>;
  /** Writes a data file of the cell only if holder holds the lock at epoch (same transaction); else LOCK_LOST. */
  fencedWrite(request: FencedWriteRequest): Promise<{ lock: Lock }>;
}

export interface StoreOptions {
  /** Relative store paths and the default store resolve against it (default `process.cwd()`). */
  cwd?: string;
  /** How long to wait for a cell mutex held by a live process (default BATON_MUTEX_WAIT_MS, else 30 000). */
  mutexWaitMs?: number;
}

/** The scope of a run on `branch`: `pr-<n>`, `main`, or `branch-<name>`. */
export declare function scopeFor(branch: string, pr?: number | null, defaultBranch?: string | null): string;

/** Detects the run's context from overrides, CI variables, the GitHub event, and git only when needed. */
export declare function detectContext(opts?: DetectOptions): Context;

/** Opens the store named by `spec` (`dir:<path>`), else BATON_STORE, else `.baton/` at the git root. */
export declare function openStore(spec?: string, opts?: StoreOptions): Store;

/** Runs a core operation on JSON text and returns the JSON answer; throws BatonError. */
export declare function invoke(op: Operation, requestJson: string): string;

/** Every stable error code with its exit code and hint. */
export declare function errorCodes(): ErrorCodeInfo[];

/** A LOCK_LOST core error object, as `lost` and `must-stop` events carry it. */
export interface LeaseErrorObject {
  code: ErrorCode;
  message: string;
  hint?: string;
  [detail: string]: unknown;
}

/** What the lease machine reports (core `LeaseEvent`), in the order it happens; see `LeaseOptions.onEvent`. */
export type LeaseEvent =
  /** The lock is ours; `warning` when an expired lock was taken over. */
  | { kind: 'acquired'; lock: Lock; epoch: number; preempted: Lock | null; warning?: string }
  /** Another holder has the lock; emitted after every attempt that found it held. */
  | { kind: 'waiting'; holder: string; expiresAt: string; waitedMs: number; remainingMs: number }
  /** A renewal landed. */
  | { kind: 'renewed'; lock: Lock }
  /** A renewal failed for another reason than loss; the next one is scheduled as usual. */
  | { kind: 'renew-failed'; error: LeaseErrorObject }
  /** The store says the lock is no longer ours: stop at once. */
  | { kind: 'lost'; error: LeaseErrorObject; graceMs: number }
  /** The holder's own deadline was reached (renewals not getting through): stop before anyone could take over. */
  | { kind: 'must-stop'; error: LeaseErrorObject; graceMs: number }
  /** The lease is over; `released` says whether a lock of ours was removed. */
  | { kind: 'released'; released: boolean }
  /** The release failed after every retry; the lock stays until it expires. */
  | { kind: 'release-failed'; warning: string; error: LeaseErrorObject }
  /** The lease could not be acquired. */
  | { kind: 'acquire-failed'; error: LeaseErrorObject };

/** The kinds of lease events. */
export type LeaseEventKind = LeaseEvent['kind'];

/** What `onWait` is told after each attempt that found the lock held. */
export interface WaitInfo {
  /** Who holds the lock. */
  holder: string;
  /** Until when, unless renewed. */
  expiresAt: string;
  /** How long this lease has waited so far. */
  waitedMs: number;
  /** How long it will still wait at most. */
  remainingMs: number;
}

/**
 * How to hold a lease. Timing is judged by the core (USAGE when inconsistent): margin < TTL, renewal period
 * < TTL - margin. Unknown options are USAGE.
 */
export interface LeaseOptions extends CellRef {
  /** The holder name written into the lock (default `run-` and 8 random hex digits). */
  holder?: string;
  /** How to name the lock in messages (default `env/scope`). */
  label?: string;
  /** Lifetime of the lock unless renewed (default 15 min). */
  ttlMs?: number;
  /**
   * How long before the lock could expire the holder stops on its own (default TTL/5): the signal aborts
   * at send time of the last successful renewal + TTL - margin. It bounds the clock skew tolerated.
   */
  marginMs?: number;
  /** Time between one renewal settling and the next being sent (default TTL/3). */
  renewEveryMs?: number;
  /** Wait for a held lock instead of failing with LOCK_HELD (default false). */
  wait?: boolean;
  /** How long to wait at most (default 10 min). */
  waitTimeoutMs?: number;
  /** Time between two attempts while waiting (default 2 s). */
  pollMs?: number;
  /** Called after each attempt that found the lock held (with `wait`). Throwing gives the wait up: the acquire rejects with what was thrown. */
  onWait?: (info: WaitInfo) => void;
  /** Called with every event of the lease machine (renewals, failures, ...). A throw is rethrown asynchronously, as an uncaught exception. */
  onEvent?: (event: LeaseEvent) => void;
  /** Called with each warning (a takeover, a failed release), which also lands in `lease.warnings`. Default: `process.emitWarning(message, {type: 'BatonWarning'})`. */
  onWarning?: (message: string) => void;
}

/** What `release()` resolves with. */
export interface LeaseRelease {
  /** Whether a lock of ours was removed from the store (false when it was lost, or the release failed). */
  released: boolean;
  /** Set when the release failed after its retries: the lock stays until about its expiry. */
  warning?: string;
}

/**
 * A held lease. Renewals run in the background, as the core's lease machine schedules them (one store
 * transaction at a time, the next one a renewal period after the previous settled). Its timers are unref'd:
 * a held lease never keeps Node alive by itself.
 */
export interface Lease {
  readonly env: string;
  readonly scope: string;
  readonly holder: string;
  /** The epoch of the grant: the fencing token. */
  readonly epoch: number;
  /** The lock as last stored (by the acquire or the latest renewal). */
  readonly lock: Lock;
  /** The expired lock the grant took over, or null. */
  readonly preempted: Lock | null;
  /** Warnings so far: an expired lock taken over, a release that failed. */
  readonly warnings: readonly string[];
  /**
   * Aborted, with a BatonError LOCK_LOST as `reason`, when the lease is lost (the store refused a renewal
   * or a write) or must stop (its deadline came before a renewal got through); `reason.details.graceMs`
   * is how long the work may take to shut down. Not aborted by `release()`. Pass it to what can be
   * aborted (fetch, child processes, ...).
   */
  readonly signal: AbortSignal;
  /** Returns the epoch while the lease is safely held; throws BatonError LOCK_LOST (the abort reason if any) otherwise. */
  assertHeld(): number;
  /**
   * A fenced write of data file `file` of the cell, as one store transaction (not queued behind renewals).
   * Checks `assertHeld()` first; the store's check is authoritative: its LOCK_LOST rejects and aborts `signal`.
   */
  write(file: string, content: string): Promise<{ lock: Lock }>;
  /**
   * Ends the lease: releases the lock (after a renewal in flight settles; retried after 200, 400 and 800 ms).
   * Never rejects; idempotent (the same promise every time). Keeps Node alive until it is over.
   */
  release(): Promise<LeaseRelease>;
}

/**
 * Acquires a lease on the lock of cell `env/scope` and keeps it renewed until `release()`. Resolves once
 * acquired; rejects with BatonError LOCK_HELD (after the wait, with `wait`), LOCK_CORRUPT, a store failure,
 * or USAGE for bad options. While somebody awaits it, its wait keeps Node alive; a call nobody awaits does not.
 */
export declare function acquireLease(store: TransactionalStore, options: LeaseOptions): Promise<Lease>;

/**
 * Runs `fn` under a lease: acquires it (as `acquireLease`), awaits `fn(lease)`, always releases, and
 * resolves with what `fn` returned. Rejects with what `fn` threw; or, when the lease was lost or had to stop
 * meanwhile, with that LOCK_LOST even though `fn` succeeded.
 */
export declare function withLease<T>(store: TransactionalStore, options: LeaseOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<T>;
