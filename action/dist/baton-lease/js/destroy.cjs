'use strict';
/**
 * Destroy runs and parent-object leases: runs of the core's run machine with jobs `destroy` and `object`
 * (run-lease.cjs). The machine decides as it does for `baton destroy` and `baton lock-object`.
 */
const { BatonError } = require('./errors.cjs');
const { hostError } = require('./core.cjs');
const { checkOptions } = require('./options.cjs');
const { startRun } = require('./run-lease.cjs');

/**
 * Destroys what the scope of `options.context` owns. The run machine checks the approval (ENV_NOT_APPROVED
 * before any lock), takes the scope's lease (holder `destroy-<8 hex>`), starts a destroy run and asks the
 * core for the plan: what the scope owns and its intents, newest first (adopted resources are only
 * forgotten, at once). Calls `fn(resources, lease)`, which deletes each resource that exists and calls
 * `lease.forget(resource)` for each one deleted (or found absent). Then the final receipt (`complete` only
 * when nothing owned is left) and the release. Resolves `{status, unresolved, receipt, warnings}` when the
 * verdict is a success; rejects with what `fn` threw (the receipt says `failed`), or with the verdict's
 * error, as `baton destroy` fails: INTENT_UNRESOLVED when intents were left (an interrupted run may have
 * created them, and nothing is deleted on a guess), COMMAND_FAILED when owned resources were left.
 * @param {object} store
 * @param {object} options lease options with `context` (required) and `approvedBy`
 * @param {(resources: object[], lease: object) => unknown} fn
 */
async function destroy(store, options, fn) {
  if (typeof fn !== 'function') {
    throw hostError('USAGE', 'destroy needs the deletion to do: destroy(store, {context}, async (resources, lease) => { ... })');
  }
  if (options === null || typeof options !== 'object' || options.context === undefined) {
    throw hostError('USAGE', 'destroy needs the run context: destroy(store, {context: detectContext()}, fn)');
  }
  if (options.ownership === false) throw hostError('USAGE', 'a destroy is a run: `ownership: false` does not apply');
  checkOptions(options);
  return startRun(store, options, 'destroy', {
    work: (start, lease) => fn(start.delete ?? [], lease),
    result: (_value, lease) => ({
      status: lease.verdict.fields.receipt.status,
      // A success left none (INTENT_UNRESOLVED otherwise).
      unresolved: [],
      receipt: lease.receipt,
      warnings: [...lease.warnings],
    }),
  });
}

/** The parent object of a parent-object lease, and the lease options without it (USAGE for what does not apply). */
function objectOf(identity, options) {
  if (typeof identity !== 'string') {
    throw hostError('USAGE', 'a parent-object lease needs the identity of the object (a string, e.g. auth0:tenant:client:abc)');
  }
  const { secrets = [], ...rest } = options ?? {};
  if (!Array.isArray(secrets) || secrets.some((s) => typeof s !== 'string')) {
    throw hostError('USAGE', 'the option `secrets` must be an array of strings (the secret values of the run)');
  }
  for (const key of ['env', 'scope', 'context', 'ownership', 'approvedBy', 'label']) {
    if (rest[key] !== undefined) throw hostError('USAGE', `a parent-object lease is not a run on a scope: the option \`${key}\` does not apply`);
  }
  checkOptions(rest);
  return { object: { identity, secrets: [...secrets] }, rest };
}

/** LOCK_HELD of a parent-object lease, naming the object (the lock itself only knows its hash). */
function naming(identity) {
  return (e) => {
    if (e instanceof BatonError && e.code === 'LOCK_HELD' && e.details.parent === undefined) {
      e.message = `${e.message} (the lock of parent object ${identity})`;
      e.details.parent = identity;
    }
    throw e;
  };
}

/** A parent-object lease in manual mode (`run` given) or around `work`. */
function objectRun(store, identity, options, work) {
  let parts;
  try {
    parts = objectOf(identity, options);
  } catch (e) {
    return Promise.reject(e);
  }
  return startRun(store, parts.rest, 'object', { object: parts.object, work }).catch(naming(identity));
}

/**
 * A lease on a shared provider object (a list of callback URLs, an allow list, ...) across every scope and
 * environment: the lock of cell `_locks/<first 32 hex digits of sha256(identity)>`, as the original tool
 * lays it out. An identity that contains one of `secrets` is refused (USAGE): it is written to the lock.
 * Other options as for acquireLease (`holder`, `wait`, `ttlMs`, ...).
 * @param {object} store
 * @param {string} identity
 * @param {object} [options]
 */
function acquireObjectLease(store, identity, options = {}) {
  return objectRun(store, identity, options, undefined);
}

/**
 * withLease on a parent object: acquires it (as acquireObjectLease), awaits `fn(lease)`, always releases;
 * the verdict is the run machine's, as for `baton lock-object`.
 */
async function withObjectLease(store, identity, options, fn) {
  if (typeof fn !== 'function') {
    throw hostError('USAGE', 'withObjectLease needs the work to do: withObjectLease(store, identity, options, async (lease) => { ... })');
  }
  return objectRun(store, identity, options, (_start, lease) => fn(lease));
}

module.exports = { destroy, acquireObjectLease, withObjectLease };
