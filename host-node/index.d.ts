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

/** A store of cells. Every method is one atomic transaction on one cell. */
export interface Store {
  readonly kind: 'dir';
  /** The store's root directory. */
  readonly path: string;
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
