'use strict';
/**
 * Destroy runs and parent-object leases: both are leases with a purpose, built on `acquireLease`.
 */
const { BatonError } = require('./errors.cjs');
const { call, hostError } = require('./core.cjs');
const { startLease, acquireLease, runUnder, fenced } = require('./lease.cjs');
const { unresolvedError } = require('./ownership.cjs');

/**
 * Destroys what the scope of `options.context` owns. Checks the approval (ENV_NOT_APPROVED before any
 * lock), takes the scope's lease (holder `destroy-<8 hex>`), starts a destroy run, and asks the core for
 * the plan: what the scope owns and its intents, newest first (adopted resources are only forgotten, at
 * once). Calls `fn(resources, lease)`, which deletes each resource that exists and calls
 * `lease.forget(resource)` for each one deleted (or found absent). Then writes the final receipt
 * (`complete` only when nothing owned is left) and releases. Resolves `{status, unresolved, receipt,
 * warnings}`; rejects with what `fn` threw (the receipt says `failed`), or with INTENT_UNRESOLVED, after
 * the receipt landed, when intents were left: an interrupted run may have created them, and nothing is
 * deleted on a guess.
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
  const lease = await startLease(store, options, true);
  let outcome;
  try {
    const plan = await lease[fenced]('destroy-plan', {});
    let failure = null;
    try {
      await fn(plan.delete, lease);
    } catch (e) {
      failure = { error: e };
    }
    if (failure) {
      await lease.finish('failed').catch(() => {});
      throw failure.error;
    }
    outcome = await lease.finish('complete');
  } finally {
    await lease.release();
  }
  if (lease.signal.aborted) throw lease.signal.reason;
  if (outcome.unresolved.length > 0) throw unresolvedError(lease.env, lease.scope, outcome.unresolved);
  return { status: outcome.status, unresolved: outcome.unresolved, receipt: outcome.receipt, warnings: [...lease.warnings] };
}

/** The lease options of a parent-object lease: the cell (`parent-cell`) and label from the identity. */
function objectOptions(identity, options) {
  if (typeof identity !== 'string') {
    throw hostError('USAGE', 'a parent-object lease needs the identity of the object (a string, e.g. auth0:tenant:client:abc)');
  }
  const { secrets = [], ...rest } = options ?? {};
  if (!Array.isArray(secrets) || secrets.some((s) => typeof s !== 'string')) {
    throw hostError('USAGE', 'the option `secrets` must be an array of strings (the secret values of the run)');
  }
  for (const key of ['env', 'scope', 'context', 'ownership', 'approvedBy']) {
    if (rest[key] !== undefined) throw hostError('USAGE', `a parent-object lease is not a run on a scope: the option \`${key}\` does not apply`);
  }
  const cell = call('parent-cell', { identity, secrets });
  return { label: cell.label, ...rest, env: cell.env, scope: cell.scope };
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
  let leaseOptions;
  try {
    leaseOptions = objectOptions(identity, options);
  } catch (e) {
    return Promise.reject(e);
  }
  return acquireLease(store, leaseOptions).catch(naming(identity));
}

/** withLease on a parent object: acquires it (as acquireObjectLease), awaits `fn(lease)`, always releases. */
async function withObjectLease(store, identity, options, fn) {
  if (typeof fn !== 'function') {
    throw hostError('USAGE', 'withObjectLease needs the work to do: withObjectLease(store, identity, options, async (lease) => { ... })');
  }
  return runUnder(await acquireObjectLease(store, identity, options), fn);
}

module.exports = { destroy, acquireObjectLease, withObjectLease };
