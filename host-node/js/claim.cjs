'use strict';
/**
 * Carrying out a claim (core/src/claims): the transaction on the resource's claim cell, with the needs the
 * core answers (the environment's listing, the claiming scope's facts) satisfied until it decides. The
 * same steps as the CLI's (host-native/src/commands/claim.rs); the rule is the core's.
 */
const { call, hostError } = require('./core.cjs');

/** More rounds than this means the claim kept changing under us (each round is one store read at most). */
const MAX_ROUNDS = 8;

function claimCell(env, resource) {
  const { env: claimsEnv, scope } = call('claim-cell', { env, resource });
  return { env: claimsEnv, scope };
}

/** A read-only transaction (the store's `read` when it has one). */
function readCell(store, cell, op, request, options) {
  return typeof store.read === 'function' ? store.read(cell, op, request, options) : store.transact(cell, op, request, options);
}

/**
 * `claim-take` for `resource` by the run `{env, scope, holder, epoch, predecessor}`: resolves the decision
 * (`{outcome, claim}`), rejects with OWNED_BY_OTHER_SCOPE. With `dry`, a read that writes nothing;
 * `listed`: the environment's listing when the caller already has it.
 */
async function takeClaim(store, run, resource, { dry = false, deadline, listed = null } = {}) {
  const cell = claimCell(run.env, resource);
  let others = listed;
  let facts = null;
  // The claim cell's generation the listing was read after (`need.generation`, see the core's claims::take).
  let listedAt = null;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const request = {
      env: run.env,
      scope: run.scope,
      holder: run.holder,
      epoch: run.epoch,
      resource,
      predecessor: run.predecessor ?? null,
      others,
      listedAt,
      facts,
      dryRun: dry,
    };
    const answer = dry ? await readCell(store, cell, 'claim-take', request, { deadline }) : await store.transact(cell, 'claim-take', request, { deadline });
    const need = answer.need;
    if (need?.type === 'others') {
      others = await store.list(run.env);
      listedAt = need.generation;
    } else if (need?.type === 'facts') {
      const { changes: _changes, ...read } = await readCell(store, need.cell, 'claim-facts', need.request, { deadline });
      facts = read;
      // Listed again after the facts: a stale claim is judged on a listing at least as new as the claimer's
      // cell (one read before could miss a pull request's inherited copy written since).
      others = null;
      listedAt = null;
    } else return answer;
  }
  throw hostError('STORE_CONTENDED', `the ownership claim of ${resource.adapter} \`${resource.key}\` kept changing while it was read; try again`);
}

/**
 * `claim-free` after a forget landed; `giveBack`: this call took the claim and its write was refused (a
 * first claim is deleted, leaving the store as it was: the core's claims::free).
 */
async function freeClaim(store, run, resource, { deadline, giveBack = false } = {}) {
  const cell = claimCell(run.env, resource);
  return store.transact(cell, 'claim-free', { env: run.env, scope: run.scope, epoch: run.epoch, resource, giveBack }, { deadline });
}

/**
 * One ledger change as `baton ledger` makes it (`op`: `ledger-intend`, `ledger-record` or `ledger-forget`;
 * `write` makes the fenced write on the run's cell): the claim first for intend and record, the claim freed
 * after a forget landed. A claim this call took is given back when the write is refused (LOCK_LOST,
 * RECEIPT_CORRUPT, ...), so a run that no longer holds its lease leaves nothing behind (best effort: a claim
 * left is stale once the lock moves on; never when the write landed after all). A claim that cannot be freed
 * after a forget is a warning (`onWarning`). Resolves what `write` resolved.
 */
async function ledgerChange(store, run, op, resource, write, { deadline, onWarning } = {}) {
  if (op === 'ledger-forget') {
    const answer = await write();
    // The entry is gone; a claim that cannot be freed now goes stale by itself once the lock moves on.
    await freeClaim(store, run, resource, { deadline }).catch((e) => {
      onWarning?.(`could not free the ownership claim of ${resource.adapter}:${resource.key}: ${e.message}`);
    });
    return answer;
  }
  const taken = await takeClaim(store, run, resource, { deadline });
  try {
    return await write();
  } catch (e) {
    if (taken.outcome === 'taken') await giveBack(store, run, resource, e?.code, { deadline }).catch(() => {});
    throw e;
  }
}

/**
 * Gives back a claim whose fenced write failed, unless that write landed after all (a reply lost after the
 * commit, then a retry refused): the run's own receipt is read first and the claim stays when it lists it.
 */
async function giveBack(store, run, resource, code, { deadline } = {}) {
  // A refusal decided on an unreadable receipt (or a bad request) proves nothing landed.
  if (code === 'RECEIPT_CORRUPT' || code === 'RECEIPT_VERSION' || code === 'USAGE') return freeClaim(store, run, resource, { deadline, giveBack: true });
  const facts = await readCell(store, { env: run.env, scope: run.scope }, 'claim-facts', { resource, claimEpoch: run.epoch }, { deadline });
  if (facts.lists === false) await freeClaim(store, run, resource, { deadline, giveBack: true });
}

module.exports = { takeClaim, freeClaim, ledgerChange };
