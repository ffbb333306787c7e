// Generated from the Rust types of baton-core by host-node/tests/ts_types.rs (ts-rs). Do not edit:
// BATON_WRITE_TYPES=1 cargo test -p baton-node --test ts_types

/** A stable error code. */
export type ErrorCode = "LOCK_HELD" | "LOCK_LOST" | "LOCK_CORRUPT" | "OWNED_BY_OTHER_SCOPE" | "ENV_NOT_APPROVED" | "CTX_NULL" | "USAGE" | "STORE_CONTENDED" | "STORE_REJECTED" | "STORE_PERMISSION" | "RECEIPT_CORRUPT" | "RECEIPT_VERSION" | "INTENT_UNRESOLVED" | "COMMAND_FAILED" | "INTERRUPTED" | "INTERNAL" | "RANDOM_UNAVAILABLE";

/** A refusal or failure of the core, as its JSON: the code, what happened and what to do, and the
 * details of the failure beside them. */
export type CoreError = { code: ErrorCode; message: string; hint?: string; [detail: string]: unknown };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type Cell = { 
/**
 * The environment (`preview`, `production`, `_locks` for parent objects).
 */
env: string, 
/**
 * The scope within the environment.
 */
scope: string, 
/**
 * File name -> UTF-8 content, for the files that exist. A file that is not valid UTF-8 is passed
 * lossily converted; it then fails to parse and is reported as corrupt.
 */
files: { [key in string]: string }, 
/**
 * How messages name the cell instead of `env/scope` (e.g. `parent object <identity>`).
 */
label?: string, };

export type Change = { "op": "write", 
/**
 * File name within the cell.
 */
file: string, 
/**
 * New content.
 */
content: string, } | { "op": "delete", 
/**
 * File name within the cell.
 */
file: string, };

export type LockRecord = { 
/**
 * Who holds the lock (`run-xxxxxxxx`, ...).
 */
holder: string, 
/**
 * When the current holder acquired it (ISO-8601 UTC); kept on renewal.
 */
acquiredAt?: string, 
/**
 * When it expires unless renewed (ISO-8601 UTC), judged by other runs on their wall clocks.
 */
expiresAt: string, 
/**
 * The fencing token: strictly increasing per cell. 0 for locks written by the original tool.
 */
epoch: number, } & ({ [key in string]: number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null });

export type LockView = { 
/**
 * Whether it had expired at the `now` of the read.
 */
expired: boolean, 
/**
 * Milliseconds from the `now` of the read until `expiresAt` (negative once expired).
 */
expiresInMs: number, 
/**
 * `expiresInMs` for people (`14m 59s`, `0ms` once expired), as every host prints it.
 */
expiresIn: string, 
/**
 * Who holds the lock (`run-xxxxxxxx`, ...).
 */
holder: string, 
/**
 * When the current holder acquired it (ISO-8601 UTC); kept on renewal.
 */
acquiredAt?: string, 
/**
 * When it expires unless renewed (ISO-8601 UTC), judged by other runs on their wall clocks.
 */
expiresAt: string, 
/**
 * The fencing token: strictly increasing per cell. 0 for locks written by the original tool.
 */
epoch: number, } & ({ [key in string]: number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null });

export type Grant = { 
/**
 * The changes to commit.
 */
changes: Array<Change>, 
/**
 * The lock as it will be stored.
 */
lock: LockRecord, 
/**
 * The lock this grant replaced: an expired one (takeover) or, for `break`, whatever was there.
 */
preempted: LockRecord | null, };

export type Release = { 
/**
 * The changes to commit (empty when there was nothing of ours to release).
 */
changes: Array<Change>, 
/**
 * Whether the lock was ours and is being removed.
 */
released: boolean, 
/**
 * The lock found when it was not ours (or `null`).
 */
current: LockRecord | null, };

export type LockOp = { "op": "lock-acquire", "request": { 
/**
 * Who takes it.
 */
holder: string, 
/**
 * How long it lasts unless renewed.
 */
ttlMs: number, 
/**
 * How a refusal names the lock (default `env/scope`).
 */
label?: string, } } | { "op": "lock-renew", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch it was granted at.
 */
epoch: number, 
/**
 * The new TTL from now.
 */
ttlMs: number, } } | { "op": "lock-release", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch it was granted at; absent: whatever lock `holder` has.
 */
epoch: number | null, } } | { "op": "lock-read", "request": Record<symbol, never> } | { "op": "lock-break", "request": { 
/**
 * Who takes it.
 */
holder: string, 
/**
 * How long it lasts unless renewed.
 */
ttlMs: number, 
/**
 * Why, recorded in the lock.
 */
reason: string, } } | { "op": "fence-check", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch its writes are fenced with.
 */
epoch: number, } } | { "op": "fenced-write", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch its writes are fenced with.
 */
epoch: number, 
/**
 * The data file (see `cell::validate_data_file`).
 */
file: string, 
/**
 * Its new content.
 */
content: string, } };

export type LockAnswer = Grant | Release | { 
/**
 * The lock with its expiry judged at the read's `now`, or `null`.
 */
lock: LockView | null, } | { 
/**
 * The lock.
 */
lock: LockRecord, };

export type StoreRequest = { 
/**
 * Correlates the result.
 */
id: number, 
/**
 * The instant (host monotonic ms) by which the host must have given up: it kills what still runs and
 * reports `STORE_CONTENDED`.
 */
deadlineMs: number, } & ({ "op": "lock-acquire", "request": { 
/**
 * Who takes it.
 */
holder: string, 
/**
 * How long it lasts unless renewed.
 */
ttlMs: number, 
/**
 * How a refusal names the lock (default `env/scope`).
 */
label?: string, } } | { "op": "lock-renew", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch it was granted at.
 */
epoch: number, 
/**
 * The new TTL from now.
 */
ttlMs: number, } } | { "op": "lock-release", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch it was granted at; absent: whatever lock `holder` has.
 */
epoch: number | null, } } | { "op": "lock-read", "request": Record<symbol, never> } | { "op": "lock-break", "request": { 
/**
 * Who takes it.
 */
holder: string, 
/**
 * How long it lasts unless renewed.
 */
ttlMs: number, 
/**
 * Why, recorded in the lock.
 */
reason: string, } } | { "op": "fence-check", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch its writes are fenced with.
 */
epoch: number, } } | { "op": "fenced-write", "request": { 
/**
 * The holder.
 */
holder: string, 
/**
 * The epoch its writes are fenced with.
 */
epoch: number, 
/**
 * The data file (see `cell::validate_data_file`).
 */
file: string, 
/**
 * Its new content.
 */
content: string, } });

export type LeaseEvent = { "kind": "acquired", 
/**
 * The lock as stored.
 */
lock: LockRecord, 
/**
 * The epoch (fencing token).
 */
epoch: number, 
/**
 * The expired lock this grant replaced.
 */
preempted: LockRecord | null, 
/**
 * "Took over an expired lock held by H since T." when `preempted` is set.
 */
warning?: string, } | { "kind": "waiting", 
/**
 * Who holds it.
 */
holder: string, 
/**
 * Until when (their `expiresAt`).
 */
expiresAt: string, 
/**
 * How long this holder has waited so far.
 */
waitedMs: number, 
/**
 * How long it will still wait at most.
 */
remainingMs: number, } | { "kind": "renewed", 
/**
 * The lock as stored.
 */
lock: LockRecord, } | { "kind": "renew-failed", 
/**
 * The store's error.
 */
error: CoreError, } | { "kind": "lost", 
/**
 * The `LOCK_LOST` error.
 */
error: CoreError, 
/**
 * How long the host may let its work shut down before killing it.
 */
graceMs: number, } | { "kind": "must-stop", 
/**
 * The `LOCK_LOST` error explaining why.
 */
error: CoreError, 
/**
 * How long the host may let its work shut down before killing it.
 */
graceMs: number, } | { "kind": "released", 
/**
 * Whether the store removed our lock.
 */
released: boolean, } | { "kind": "release-failed", 
/**
 * What to tell people.
 */
warning: string, 
/**
 * The last error.
 */
error: CoreError, } | { "kind": "acquire-failed", 
/**
 * The error, to print with its code.
 */
error: CoreError, };

export type LeaseAction = { "type": "store" } & StoreRequest | { "type": "event", 
/**
 * The event.
 */
event: LeaseEvent, };

export type CellPath = { 
/**
 * Its directory in a dir store (`env/scope`, segments encoded by [`path_segment`]).
 */
dir: string, 
/**
 * Its ref suffix in a git store (segments encoded by [`ref_segment`]).
 */
ref: string, };

export type ScopeNames = { 
/**
 * One entry per directory, in order.
 */
scopes: Array<string | null>, };

export type Text = { 
/**
 * The text.
 */
text: string | null, };

export type IoFailure = { 
/**
 * `STORE_PERMISSION`, `STORE_REJECTED`, `USAGE` or `INTERNAL`.
 */
code: ErrorCode, 
/**
 * What happened and what to do.
 */
message: string, 
/**
 * The errno asked about.
 */
errno: string | null, };

export type GitEnv = { 
/**
 * The variables removed from it.
 */
remove: Array<string>, 
/**
 * The variables set in it.
 */
set: { [key in string]: string }, };

export type Remaining = { 
/**
 * How long the next git process may run (0: stop now).
 */
remainingMs: number, };

export type Name = { 
/**
 * The name.
 */
name: string, };

export type CatObjects = { 
/**
 * The blobs' texts.
 */
objects: Array<string | null>, };
