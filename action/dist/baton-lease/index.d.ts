// Type declarations of the JS surface of baton-lease (hand-written; keep in step with js/).

// What the core returns to JS is declared in ./types.d.ts, generated from the Rust types (ts-rs; see
// tests/ts_types.rs): error codes and error objects, locks, cells and changes, lock transactions and their
// answers, lease actions and events.
import type { Change, CoreError, LockRecord, LockView } from './types';
export type {
  Cell,
  Change,
  CoreError,
  ErrorCode,
  Grant as CoreGrant,
  JsonValue,
  LeaseAction,
  LeaseEvent,
  LockAnswer,
  LockOp,
  LockRecord,
  LockView,
  Release as CoreRelease,
  StoreRequest,
} from './types';
import type { ErrorCode, LeaseEvent } from './types';

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
  | 'scope-names'
  | 'succession'
  | 'parent-cell'
  | 'approval'
  | 'run-begin'
  | 'run-finish'
  | 'ledger-intend'
  | 'ledger-record'
  | 'ledger-forget'
  | 'ledger-check'
  | 'handover'
  | 'destroy-plan'
  | 'scope-status'
  | 'receipt-parse'
  | 'git-push-outcome'
  | 'git-retry'
  | 'git-readme'
  | 'redact'
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
  /**
   * For work on a whole environment (listing its receipts): no branch is no error, and the context then
   * has `scope` and `branch` null (an {@link EnvironmentContext}).
   */
  envOnly?: boolean;
}

/** The context of work on a whole environment when no branch is known (`detectContext({envOnly: true})`). */
export interface EnvironmentContext {
  env: string;
  branch: null;
  sha: string | null;
  pr: number | null;
  defaultBranch: string | null;
  scope: null;
}

/** A lock record (`lock.json`, the core's `LockRecord`); `breakLock` records who broke what, when and why. */
export type Lock = LockRecord & { broke?: { at: string; reason: string; previous: Lock | null; corrupt?: string } };

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
  | 'fenced-write'
  | 'run-begin'
  | 'run-finish'
  | 'ledger-intend'
  | 'ledger-record'
  | 'ledger-forget'
  | 'ledger-check'
  | 'handover'
  | 'destroy-plan'
  | 'scope-status';

export interface FencedWriteRequest extends CellRef {
  holder: string;
  epoch: number;
  /** A data file of the cell: 1-100 of `A-Za-z0-9._-`, not hidden, not one of baton's own files. */
  file: string;
  content: string;
}

/** One change of a cell file, as the core answers it. */
export type CellChange = Change;

/** A cell as a store loaded it: its state files (`lock.json`, `epoch.json`, `latest.json`) that exist. */
export interface CellSnapshot {
  env: string;
  scope: string;
  files: Record<string, string>;
}

/** What a lease needs of a store: its generic transaction. A wrapper overriding only this is a valid store. */
export interface TransactionalStore {
  /**
   * One atomic transaction on the cell: calls core operation `op` with `request` plus `cell` and `nowMs`
   * (the wall clock, read inside the transaction), commits the answer's changes, and resolves with the
   * core's answer. Rejects with the core's refusal or the store's failure, as a BatonError. A lease passes
   * `opts.deadline` (monotonic ms, `performance.now()`): the store must have given up by then (the git store
   * kills what still runs and rejects with STORE_CONTENDED); a store without time limits may ignore it.
   */
  transact(
    cell: CellRef,
    op: CellOperation,
    request: Record<string, unknown>,
    opts?: { deadline?: number },
  ): Promise<Record<string, any>>;
}

/** A scope of an environment as `list` gives it: its name and the text of its `latest.json` (or null). */
export interface ListedScope {
  scope: string;
  text: string | null;
}

/**
 * What a run (a lease with `context`), `destroy` and `scopeStatus` need of a store: its transaction, and
 * the scopes of an environment with their receipts (what other scopes own, what a pull request inherits).
 */
export interface OwnershipStore extends TransactionalStore {
  /** The scopes of environment `env`, sorted by scope, with their `latest.json` text. */
  list(env: string): Promise<ListedScope[]>;
  /** A read-only operation on the cell (no mutex, nothing created); `transact` is used where absent. */
  read?(cell: CellRef, op: CellOperation, request: Record<string, unknown>): Promise<Record<string, any>>;
}

/**
 * What every store `openStore` gives offers. Every method is one atomic transaction on one cell, made
 * through `transact`.
 */
export interface CellStore extends OwnershipStore {
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
  /**
   * The scopes of environment `env` that have a cell here, sorted by scope, each with its `latest.json`
   * text or null. The core says which entries are cells (`list-cells`): `=hex` names decoded, names that
   * are not scopes, second spellings of a scope and `_locks` skipped.
   */
  list(env: string): Promise<ListedScope[]>;
  /** A read-only operation on the cell: nothing is written (an answer with changes is refused). */
  read(cell: CellRef, op: CellOperation, request: Record<string, unknown>): Promise<Record<string, any>>;
  /**
   * The primitive under `transact`: one transaction whose decision is `decide(cell, nowMs)` (an answer with
   * optional `changes`, or a thrown refusal), committed only on the snapshot it was made on. For the store
   * corpus and operations of one's own; the lock methods and `transact` cover everything else.
   */
  transactWith<T extends { changes?: CellChange[] }>(cell: CellRef, decide: (snapshot: CellSnapshot, nowMs: number) => T): Promise<T>;
  /** `read` with the decision `decide(cell, nowMs)`; an answer with changes is refused. */
  readWith<T>(cell: CellRef, decide: (snapshot: CellSnapshot, nowMs: number) => T): Promise<T>;
  /** Frees what the store holds (a git store's working clone); the store stays usable. */
  close(): Promise<void>;
}

/** The dir store (`dir:<path>`): one directory per cell on this machine, a mutex per transaction. */
export interface DirStore extends CellStore {
  readonly kind: 'dir';
  /** The store's root directory. */
  readonly path: string;
  /** How long a transaction waits for a cell mutex held by a live process. */
  readonly mutexWaitMs: number;
  /** Does nothing: a dir store holds nothing open. */
  close(): Promise<void>;
}

/**
 * The git store (`git:<remote>`): one orphan ref per cell on a remote every runner can push to
 * (`refs/heads/<prefix>/<env>/<scope>`, with a README and the cell's files), the push as compare-and-swap.
 * Its operations run one at a time in a private working clone (a temp directory); errors never name the
 * credentials of the remote URL. A refused receipt push keeps the receipt in `.baton/unpushed/` at the
 * repository root (`details.keptAt`).
 */
export interface GitStore extends CellStore {
  readonly kind: 'git';
  /** The remote, credentials redacted (`https://[REDACTED]@host/...`). */
  readonly path: string;
  /** The ref prefix (BATON_GIT_PREFIX, default `baton-receipts`). */
  readonly prefix: string;
  /**
   * The time limit of one operation in milliseconds, retries included (BATON_STORE_BUDGET_MS, default
   * 60 000): each git process gets what is left and is killed with its process group when it runs out; the
   * operation then rejects with STORE_CONTENDED (`details.timedOut`).
   */
  readonly budgetMs: number;
  /** The working clone's directory: null before the first operation and after `close()`. */
  readonly workdir: string | null;
  /** Removes the working clone (after the operations already queued); the next operation makes a new one. */
  close(): Promise<void>;
}

/**
 * The etcd store (`etcd:<endpoint>[,<endpoint>...]`): the file `f` of a cell is the key
 * `<prefix><env>/<scope>/f`; a commit is one etcd transaction comparing every state file's `mod_revision`.
 * A user from BATON_ETCD_USER / BATON_ETCD_PASSWORD or `user:password@` in an endpoint, TLS files from
 * BATON_ETCD_CA, BATON_ETCD_CERT, BATON_ETCD_KEY; errors never name the password. Holds gRPC connections:
 * `close()` it when done, or the process stays alive.
 */
export interface EtcdStore extends CellStore {
  readonly kind: 'etcd';
  /** The endpoints, credentials removed (`etcd:http://host:2379,...`). */
  readonly path: string;
  /** The key prefix (BATON_ETCD_PREFIX, default `/baton/`). */
  readonly prefix: string;
  /**
   * The time limit of one operation in milliseconds, retries and endpoints included (BATON_STORE_BUDGET_MS,
   * default 60 000); then it rejects with STORE_CONTENDED naming the endpoint.
   */
  readonly budgetMs: number;
  /** The spec a child process opens the same store with (credentials of the URL included). */
  readonly exportSpec: string;
  /** Closes the connections (after the operations already queued); the next operation connects again. */
  close(): Promise<void>;
}

/** A store `openStore` gives. */
export type Store = DirStore | GitStore | EtcdStore;

export interface StoreOptions {
  /** Relative store paths and the default store resolve against it (default `process.cwd()`). */
  cwd?: string;
  /** How long to wait for a cell mutex held by a live process (default BATON_MUTEX_WAIT_MS, else 30 000). */
  mutexWaitMs?: number;
}

/** The scope of a run on `branch`: `pr-<n>`, `main`, or `branch-<name>`. */
export declare function scopeFor(branch: string, pr?: number | null, defaultBranch?: string | null): string;

/** Detects the run's context from overrides, CI variables, the GitHub event, and git only when needed. */
export declare function detectContext(opts: DetectOptions & { envOnly: true }): Context | EnvironmentContext;
export declare function detectContext(opts?: DetectOptions): Context;

/**
 * Opens the store named by `spec` (`dir:<path>`, `git:<remote>` or `etcd:<endpoint>[,...]`), else
 * BATON_STORE, else `.baton/` at the git root. A git store reads BATON_GIT_PREFIX and BATON_STORE_BUDGET_MS;
 * an etcd store BATON_ETCD_PREFIX, BATON_ETCD_USER, BATON_ETCD_PASSWORD, BATON_ETCD_CA, BATON_ETCD_CERT,
 * BATON_ETCD_KEY and BATON_STORE_BUDGET_MS. Throws USAGE for an unknown store.
 */
export declare function openStore(spec: `dir:${string}`, opts?: StoreOptions): DirStore;
export declare function openStore(spec: `git:${string}`, opts?: StoreOptions): GitStore;
export declare function openStore(spec: `etcd:${string}`, opts?: StoreOptions): EtcdStore;
export declare function openStore(spec?: string, opts?: StoreOptions): Store;

/** Runs a core operation on JSON text and returns the JSON answer; throws BatonError. */
export declare function invoke(op: Operation, requestJson: string): string;

/** Every stable error code with its exit code and hint. */
export declare function errorCodes(): ErrorCodeInfo[];

/** A core error object, as lease events carry it. */
export type LeaseErrorObject = CoreError;

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

/** How to hold a lease, whatever it is on: holder, timing, waiting, callbacks. */
export interface LeaseTiming {
  /** The holder name written into the lock (default: the core names it, `run-` and 8 random hex digits; `destroy-` for a destroy). */
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
  /** Called with each warning (a takeover, a failed release, an inheritance, a handover put off), which also lands in `lease.warnings`. Default: `process.emitWarning(message, {type: 'BatonWarning'})`. */
  onWarning?: (message: string) => void;
}

/** What a run's callback and its cancellation may be given (runs, destroys, parent-object leases). */
export interface RunControl {
  /** A progress line of the run, as `baton run` prints them (default: dropped). */
  onNote?: (text: string) => void;
  /**
   * With a callback (`withLease`, `destroy`, `withObjectLease`): the process's SIGINT/SIGTERM cancel the run
   * (`lease.signal` aborts with INTERRUPTED, the callback is given up after `cancelGraceMs`, the receipt says
   * `cancelled`, the lock is released), and once every run in progress is done the process exits 128 + n.
   * `false`: no handlers are installed. Default true.
   */
  handleSignals?: boolean;
  /** Time from the first cancel signal (or a lost lease) until the callback is given up. Default 5 s. */
  cancelGraceMs?: number;
}

/** The verdict of a run, as the CLI reports it (`lease.verdict`, once the run is over). */
export interface RunVerdict {
  /** The exit code `baton run` would exit with. */
  exit: number;
  ok: boolean;
  /** The error (`{code, message, hint?, ...details}`) when not ok. */
  error?: { code: string; message: string; hint?: string; [detail: string]: unknown };
  /** The run's facts: `context`, `holder`, `lock`, `preempted`, `exitCode`, `released`, `receipt`, `handedOver`, `warnings`. */
  fields: Record<string, unknown>;
}

/**
 * How to hold a plain lease on a cell's lock. Timing is judged by the core (USAGE when inconsistent):
 * margin < TTL, renewal period < TTL - margin. Unknown options are USAGE.
 */
export interface LeaseOptions extends CellRef, LeaseTiming {
  /** A plain lease records nothing in receipts (the default without `context`). */
  ownership?: false;
  /** Who approved a lease on production (any letter case): required, non-blank, there (ENV_NOT_APPROVED before any lock); USAGE elsewhere. */
  approvedBy?: string;
}

/** The context of a run as receipts record it; a detected `Context` is one. */
export interface RunContext {
  env: string;
  scope: string;
  /** The head branch: a pull request inherits from its `branch-` scope. */
  branch?: string | null;
  /** The commit, recorded in the receipt's history. */
  sha?: string | null;
  pr?: number | null;
}

/** The run context of a lease (`lease.context`), every field present. */
export interface RecordedContext {
  env: string;
  scope: string;
  branch: string | null;
  sha: string | null;
  pr: number | null;
}

/** A lease that carries a run: the context (env and scope come from it), or a cell with `ownership: true`. */
export type RunLeaseOptions = LeaseTiming & RunControl & {
  /** Who approved a production run (trimmed; required, non-blank, when env is `production`: ENV_NOT_APPROVED before any lock). */
  approvedBy?: string;
} & (
    | { context: RunContext; env?: string; scope?: string; ownership?: true }
    | { context?: undefined; env: string; scope: string; ownership: true }
  );

/** A resource as the ledger operations take it. Extra fields (a plan entry's `id`, `createdBy`) are ignored. */
export interface Resource {
  /** The provider kind, e.g. `vercel`. */
  adapter: string;
  /** The resource's key within the adapter. */
  key: string;
  /** The provider block (team, project, ...): part of the identity (default `{}`). */
  provider?: Record<string, unknown>;
  /** The operation that manages it (informational). */
  op?: string;
  label?: string;
  /** The parent object whose lock guards writes to it. */
  parent?: string;
}

/** How an entry came into a ledger: owned (`baton`; the original's `sponson` reads the same), relied on, or a create in flight. */
export type CreatedBy = 'baton' | 'adopted' | 'intent';

/** A resource as the core names it (destroy plans, status, unresolved intents). */
export interface ResourceRef {
  adapter: string;
  key: string;
  provider: Record<string, unknown>;
  /** The provider id; `""` for an intent. */
  id: string;
  createdBy: CreatedBy;
}

/** One entry of a receipt's ledger (the original's field names; unknown fields kept). */
export interface LedgerEntry {
  adapter: string;
  op: string;
  provider: Record<string, unknown>;
  key: string;
  id: string;
  hash: string;
  label?: string;
  /** `baton`, `adopted`, `intent` (or the original's `sponson`). */
  createdBy: string;
  line: string;
  parent?: string;
  /** The scope it was inherited from (a pull request's head branch). */
  inheritedFrom?: string;
  [field: string]: unknown;
}

/** A receipt (`latest.json`): the original's version-2 format plus `epoch`. Unknown fields are kept. */
export interface Receipt {
  version: 2;
  /** The holder of the run that wrote it (`run-…`, `destroy-…`, `handover-run-…`). */
  runId: string;
  environment: string;
  scope: string;
  /** A checkpoint says `failed` until the run finishes. */
  status: 'complete' | 'failed' | 'partial';
  /** Present (true) on a checkpoint of a run that has not finished. */
  inProgress?: true;
  startedAt: string;
  finishedAt: string;
  ledger: LedgerEntry[];
  history: { sha: string; at: string }[];
  hashKey: string;
  epoch?: number;
  approvedBy?: string;
  destroy?: true;
  /** The holder of the expired lock this run took over. */
  lockPreempted?: string;
  /** On a branch scope whose resources a pull request took over: that scope. */
  supersededBy?: string;
  /** The scope this run inherited from. */
  predecessor?: string;
  [field: string]: unknown;
}

/** What `lease.check` found. */
export interface CheckResult {
  /** own: in this scope's ledger; inherited: from the predecessor; foreign: another scope's; none: nobody's. */
  relation: 'own' | 'inherited' | 'foreign' | 'none';
  /** The scope that owns a foreign resource. */
  owner?: string;
  /** For own and inherited: how it is in the ledger. */
  createdBy?: CreatedBy;
  /** Whether this check recorded the foreign resource as adopted (relied on, not owned). */
  adopted: boolean;
}

/** What `lease.finish` resolves with. */
export interface FinishResult {
  /** `complete` only for a succeeded run (and, for a destroy, one that left nothing owned). */
  status: 'complete' | 'failed';
  /** Intents left over (a destroy reports them as INTENT_UNRESOLVED). */
  unresolved: ResourceRef[];
  /** The final receipt, as stored. */
  receipt: Receipt;
  /** How many resources the predecessor handed over to this scope. */
  handedOver: number;
  /** The run's warnings so far (an inheritance, a busy predecessor, a handover that failed: retried by the next run). */
  warnings: string[];
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
 *
 * A lease acquired with `context` (or `ownership: true`) carries a run: its receipt was started when the
 * lease was acquired, and `intend`, `record`, `forget`, `check` and `finish` write to it, fenced by the
 * lease's epoch. On a plain lease they reject with USAGE.
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
   * is how long the work may take to shut down. For a run with a callback, also aborted with INTERRUPTED
   * when the process is cancelled (SIGINT/SIGTERM). Not aborted by `release()`. Pass it to what can be
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
  /** The run's context, or null for a plain lease. */
  readonly context: RecordedContext | null;
  /** The scope this run inherits from (a pull request's head branch scope), or null. */
  readonly predecessor: string | null;
  /** The run's receipt as it last wrote it, or null for a plain lease. */
  readonly receipt: Receipt | null;
  /** The run's verdict once it is over (a lease that carries a run or a parent object); else null or absent. */
  readonly verdict?: RunVerdict | null;
  /**
   * Takes the resource's ownership claim, then records a write-ahead intent before creating it (a fenced
   * checkpoint): a crash leaves it for the next run to claim or re-create. Rejects with OWNED_BY_OTHER_SCOPE
   * (`details.owner`) when another scope owns it, even one creating it at this very instant (docs/claims.md).
   */
  intend(resource: Resource): Promise<void>;
  /** Takes the claim (as `intend`), then records that `resource` exists with provider id `id` and this scope owns it. */
  record(resource: Resource, id: string): Promise<void>;
  /** Removes `resource` from the ledger (deleted, or never created) and frees its claim; `forgotten` says whether it was there. */
  forget(resource: Resource): Promise<{ forgotten: boolean }>;
  /**
   * May this run create or change (`change: true`) the resource, or rely on it? Rejects with
   * OWNED_BY_OTHER_SCOPE (`details.owner`) when another scope of the environment owns it and `change`;
   * relying on a foreign resource records it as `adopted` (destroy only forgets it).
   */
  check(resource: Resource, options?: { change?: boolean }): Promise<CheckResult>;
  /**
   * Writes the run's final receipt; after a complete run with a predecessor, hands its resources over
   * (a busy predecessor is a warning, retried by the next run). The lease stays held until `release()`;
   * calling it again resolves the same. `withLease` calls it for you.
   */
  finish(status: 'complete' | 'failed'): Promise<FinishResult>;
}

/**
 * Acquires a lease on the lock of cell `env/scope` and keeps it renewed until `release()`. Resolves once
 * acquired; rejects with BatonError LOCK_HELD (after the wait, with `wait`), LOCK_CORRUPT, a store failure,
 * or USAGE for bad options. While somebody awaits it, its wait keeps Node alive; a call nobody awaits does not.
 */
export declare function acquireLease(store: TransactionalStore, options: LeaseOptions): Promise<Lease>;
/**
 * Acquires a lease that carries a run. Checks the approval first (ENV_NOT_APPROVED, nothing locked), then
 * acquires and starts the run's receipt (inheriting from the predecessor: the warning lands in
 * `lease.warnings`). Rejects, with the lock released, when the run cannot start (RECEIPT_CORRUPT, ...).
 */
export declare function acquireLease(store: OwnershipStore, options: RunLeaseOptions): Promise<Lease>;

/**
 * Runs `fn` under a lease: acquires it (as `acquireLease`), awaits `fn(lease)`, always releases, and
 * resolves with what `fn` returned. Rejects with what `fn` threw; or, when the lease was lost or had to stop
 * meanwhile, with that LOCK_LOST even though `fn` succeeded.
 */
export declare function withLease<T>(store: TransactionalStore, options: LeaseOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<T>;
/**
 * `withLease` for a run, driven by the core's run machine as `baton run` is: finishes it `complete` when
 * `fn` resolves (then hands over from the predecessor) and `failed` when it throws, before releasing.
 * Resolves with what `fn` returned when the verdict is a success; rejects with what `fn` threw (verdict
 * COMMAND_FAILED), else with a BatonError of the verdict's error (LOCK_LOST, INTERRUPTED, a final receipt
 * that did not land, ...) whose `details` carry the verdict's fields. SIGINT/SIGTERM cancel it (see
 * `RunControl.handleSignals`).
 */
export declare function withLease<T>(store: OwnershipStore, options: RunLeaseOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<T>;

/** How to destroy a scope: its run context (env and scope come from it), the approver, lease timing. */
export type DestroyOptions = LeaseTiming & RunControl & {
  context: RunContext;
  env?: string;
  scope?: string;
  approvedBy?: string;
  ownership?: true;
};

/** What `destroy` resolves with. */
export interface DestroyResult {
  /** Always `complete` when it resolves: nothing the scope owns is left. */
  status: 'complete';
  /** Always empty when it resolves: leftover intents reject with INTENT_UNRESOLVED, leftover resources with COMMAND_FAILED. */
  unresolved: ResourceRef[];
  /** The destroy receipt, as stored. */
  receipt: Receipt;
  warnings: string[];
}

/**
 * Destroys what the scope of `options.context` owns: approval (ENV_NOT_APPROVED before any lock), the
 * scope's lease (holder `destroy-<8 hex>`), then `fn(resources, lease)` with what to delete, newest first
 * (owned resources and intents; adopted ones are only forgotten). `fn` deletes each one that exists and
 * calls `lease.forget(resource)` for it. The verdict is the core run machine's, as for `baton destroy`:
 * rejects with what `fn` threw, with INTENT_UNRESOLVED when intents were left (nothing is deleted on a
 * guess), or with COMMAND_FAILED when owned resources were left (each after the `failed` receipt landed and
 * the lock was released).
 */
export declare function destroy(
  store: OwnershipStore,
  options: DestroyOptions,
  fn: (resources: ResourceRef[], lease: Lease) => unknown,
): Promise<DestroyResult>;

/** A parent-object lease: lease timing, and the run's secret values (an identity containing one is refused). */
export interface ObjectLeaseOptions extends LeaseTiming, RunControl {
  secrets?: readonly string[];
}

/**
 * A lease on a shared provider object (a list of callback URLs, an allow list, ...) across every scope and
 * environment: cell `_locks/<first 32 hex of sha256(identity)>`, labelled `parent object <identity>`.
 * LOCK_HELD names the object in its message and `details.parent`. USAGE for an identity that is blank or
 * contains a secret.
 */
export declare function acquireObjectLease(store: TransactionalStore, identity: string, options?: ObjectLeaseOptions): Promise<Lease>;

/** `withLease` on a parent object: acquires it (as acquireObjectLease), awaits `fn(lease)`, always releases; the run machine's verdict, as for `baton lock-object`. */
export declare function withObjectLease<T>(
  store: TransactionalStore,
  identity: string,
  options: ObjectLeaseOptions,
  fn: (lease: Lease) => T | PromiseLike<T>,
): Promise<T>;

/** A scope's state as `scopeStatus` reports it. */
export interface ScopeStatus {
  lock: (Lock & { expired: boolean }) | null;
  /** `live` means a run is active (with a warning). */
  lockState: 'none' | 'expired' | 'live';
  receipt: {
    runId: string;
    status: string;
    finishedAt: string;
    epoch: number | null;
    supersededBy: string | null;
    inProgress: boolean | null;
  } | null;
  /** What the scope owns (and relies on: `createdBy: adopted`). */
  owns: ResourceRef[];
  /** Inherited entries whose handover is still pending. */
  inherited: ResourceRef[];
  predecessor: string | null;
  /** Whether the predecessor still lists resources this scope inherits. */
  handoverPending: boolean;
  /** How many resources of the environment belong to other scopes. */
  foreignCount: number;
  /**
   * Resources this scope lists as owned that other scopes' ledgers list too (stores written before ownership
   * claims, or by the original tool): for a person to resolve; neither scope may change them meanwhile.
   */
  conflicts: { resource: ResourceRef; scopes: string[] }[];
  warnings: string[];
}

/** The lock, ownership and inheritance of the scope of `context` (read-only: no mutex, nothing created). */
export declare function scopeStatus(store: OwnershipStore, context: RunContext): Promise<ScopeStatus>;

/** A scope as `gc` judged it: why it is abandoned or kept. */
export interface GcScope {
  scope: string;
  reason: string;
  /** The pull request of a `pr-<n>` scope. */
  pr?: number;
}

/** What `gc` found (and, with `destroy`, did). */
export interface GcResult {
  /** Scopes whose pull request is not open, or whose branch is gone and was not succeeded. */
  abandoned: GcScope[];
  kept: GcScope[];
  /** The open pull requests understood, ascending. */
  openPrs: number[];
  /** True without `destroy`. */
  dryRun: boolean;
  /** With `destroy`: the scopes destroyed. */
  destroyed?: string[];
  /** With `destroy`: scopes whose lease was live (LOCK_HELD), left alone. */
  skipped?: { scope: string; error: LeaseErrorObject }[];
  /** With `destroy`: scopes whose destroy failed, with the error. */
  failed?: { scope: string; error: LeaseErrorObject }[];
}

/** The options of `gc`. */
export type GcOptions = LeaseTiming &
  RunControl & {
    env: string;
    /** The open pull requests: numbers, or the JSON `gh pr list --state open --json number` prints [default: ask `gh`]. */
    openPrs?: readonly number[] | string;
    /** Where branches are listed with `git ls-remote --heads` [default: origin]. */
    remote?: string;
    /** The output of `git ls-remote --heads`, instead of running it. */
    lsRemote?: string;
    /** The directory git and gh run in [default: process.cwd()]. */
    cwd?: string;
    /** The repository's default branch (its scope is `main`, never collected). */
    defaultBranch?: string;
    approvedBy?: string;
    /** The deletion of one scope, as for `destroy`; without it, a dry run. */
    destroy?: (resources: ResourceRef[], lease: Lease) => unknown;
  };

/**
 * The scopes of an environment whose reason to exist is gone (as `baton gc`): a `pr-<n>` whose pull request
 * is not open, a `branch-<name>` whose branch is gone from the remote and that no pull request succeeded.
 * With `destroy`, each is destroyed under its own lease (a live lease is skipped). Rejects only before any
 * destroy (USAGE when the open pull requests cannot be known).
 */
export declare function gc(store: OwnershipStore, options: GcOptions): Promise<GcResult>;
