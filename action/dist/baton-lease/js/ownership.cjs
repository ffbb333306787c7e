'use strict';
/**
 * Helpers of the ownership feature (what a scope owns, inherits and relies on): argument checks and the
 * shapes the core's operations take. The rules themselves (succession, inheritance, foreign resources,
 * handover, destroy plans, approval) are the core's; see core/src/ownership.
 */
const { call, hostError } = require('./core.cjs');

const usage = (message, details) => hostError('USAGE', message, details);

/**
 * The run context as the core records it (`{env, scope, branch, sha, pr}`) from a detected context (extra
 * fields such as `defaultBranch` are dropped). Only the types are checked here.
 * @param {unknown} context
 */
function runContext(context) {
  if (context === null || typeof context !== 'object') {
    throw usage('`context` must be the run context (detectContext()): {env, scope, branch?, sha?, pr?}');
  }
  const { env, scope, branch = null, sha = null, pr = null } = /** @type {any} */ (context);
  if (typeof env !== 'string' || typeof scope !== 'string') throw usage('the run context needs string `env` and `scope`');
  for (const [key, value] of Object.entries({ branch, sha })) {
    if (value !== null && typeof value !== 'string') throw usage(`the run context's \`${key}\` must be a string or null`);
  }
  if (pr !== null && !(Number.isSafeInteger(pr) && pr > 0)) {
    throw usage(`the run context's \`pr\` must be a positive whole number or null, got ${String(pr)}`);
  }
  return { env, scope, branch, sha, pr };
}

/** The scope `context` inherits from, as the core's `succession` names it (for `scopeStatus`): `{predecessor}`. */
function predecessorOf(context) {
  return call('succession', { scope: context.scope, branch: context.branch, pr: context.pr, ttlMs: null });
}

const RESOURCE_FIELDS = ['adapter', 'key', 'provider', 'op', 'label', 'parent'];

/**
 * A resource as the ledger operations take it: `{adapter, key, provider?, op?, label?, parent?}`. Other
 * fields are dropped, so an entry of a destroy plan (which also has `id` and `createdBy`) can be passed as
 * it is. The core judges the values (USAGE for an empty adapter or key, a provider that is not an object).
 * @param {unknown} resource
 */
function resourceOf(resource) {
  if (resource === null || typeof resource !== 'object') {
    throw usage('a resource is an object: {adapter, key, provider?, op?, label?, parent?}');
  }
  const out = {};
  for (const field of RESOURCE_FIELDS) {
    const value = /** @type {any} */ (resource)[field];
    if (value === undefined || value === null) continue;
    if (field === 'provider' ? typeof value !== 'object' || Array.isArray(value) : typeof value !== 'string') {
      throw usage(`the resource's \`${field}\` must be ${field === 'provider' ? 'an object' : 'a string'}`);
    }
    out[field] = value;
  }
  if (out.adapter === undefined || out.key === undefined) throw usage('a resource needs `adapter` and `key`');
  return out;
}

/**
 * What a scope owns and inherits, its lock, how many resources of its environment belong to other scopes,
 * and whether a handover is pending (core `scope-status`). Read-only: no mutex, nothing created.
 * @param {{transact: Function, list: Function, read?: Function}} store
 * @param {object} context the run context ({env, scope, branch?, pr?}; detectContext())
 */
async function scopeStatus(store, context) {
  if (store === null || typeof store !== 'object' || typeof store.list !== 'function' || typeof store.transact !== 'function') {
    throw usage('scopeStatus needs a store that can list scopes (from openStore()) as its first argument');
  }
  const ctx = runContext(context);
  const { predecessor } = predecessorOf(ctx);
  const others = await store.list(ctx.env);
  const cell = { env: ctx.env, scope: ctx.scope };
  const request = { others, predecessor };
  const answer = typeof store.read === 'function' ? await store.read(cell, 'scope-status', request) : await store.transact(cell, 'scope-status', request);
  const { changes: _changes, ...status } = answer;
  return status;
}

module.exports = { runContext, predecessorOf, resourceOf, scopeStatus };
