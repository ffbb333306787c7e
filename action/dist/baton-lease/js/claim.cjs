'use strict';
/**
 * Carrying out an ownership change (a ledger change with its claim): the core's machine
 * (core/src/claims/machine.rs, the wasm `Ownership` class) decides every step of the protocol (the claim
 * with its needs, the fenced write, the give-back, the free after a forget); this loop only runs the store
 * operations it asks for, as the CLI's (host-native/src/commands/claim.rs). A load comes with the core
 * operation that decides it, so any store with `transact(cell, op, request)` (and `list`) serves.
 */
const wasm = require('../pkg/baton_node.js');
const { fromErrorJson, fromThrown } = require('./errors.cjs');
const { hostError } = require('./core.cjs');
const { errorObject } = require('./loop.cjs');

/** A read-only transaction (the store's `read` when it has one). */
function readCell(store, cell, op, request, options) {
  return typeof store.read === 'function' ? store.read(cell, op, request, options) : store.transact(cell, op, request, options);
}

/**
 * Runs the ownership change `config` (`{env, scope, holder?, epoch?, predecessor?, resource, op: {type:
 * 'intend'} | {type: 'record', id} | {type: 'forget'} | {type: 'check', change}, ownedMarker?}`) on
 * `store`. Resolves its answer (`{claim?, receipt?, forgotten?, relation?, owner?, createdBy?, adopted,
 * warnings}`); rejects with its refusal (OWNED_BY_OTHER_SCOPE, LOCK_LOST, STORE_CONTENDED, or what the
 * store threw, as it threw it).
 */
async function runChange(store, config, { deadline } = {}) {
  let machine;
  try {
    machine = new wasm.Ownership(config);
  } catch (e) {
    throw fromThrown(e);
  }
  // What the store threw last: rethrown as it is when the change fails with it.
  let thrown = null;
  const report = (e) => {
    thrown = e;
    return { error: errorObject(e) };
  };
  try {
    for (;;) {
      let action;
      try {
        action = machine.pollAction();
      } catch (e) {
        throw fromThrown(e);
      }
      if (action === undefined) throw hostError('INTERNAL', 'the ownership change stopped without an answer');
      if (action.type === 'done') return action.answer;
      if (action.type === 'failed') {
        const same = thrown !== null && errorObject(thrown).code === action.error.code && errorObject(thrown).message === action.error.message;
        throw same ? thrown : fromErrorJson(action.error);
      }
      let outcome;
      if (action.type === 'list') {
        outcome = await (async () => store.list(action.env))().then((ok) => ({ ok }), report);
      } else {
        const cell = { env: action.env, scope: action.scope };
        const run = async () => (action.write ? store.transact(cell, action.op, action.request, { deadline }) : readCell(store, cell, action.op, action.request, { deadline }));
        outcome = await run().then((ok) => ({ ok }), report);
      }
      try {
        if (action.type === 'list') machine.handleListing(action.id, outcome);
        else machine.handleAnswer(action.id, outcome);
      } catch (e) {
        throw fromThrown(e);
      }
    }
  } finally {
    machine.free();
  }
}

/** The change's `op` for a ledger operation name (`ledger-intend`, `ledger-record` with `id`, `ledger-forget`). */
function changeOp(op, id) {
  if (op === 'ledger-record') return { type: 'record', id: id ?? '' };
  return { type: op === 'ledger-forget' ? 'forget' : 'intend' };
}

module.exports = { runChange, changeOp };
