'use strict';
/**
 * baton-lease: CI scopes, leases and fencing for Node scripts. Every decision is made by the baton core
 * (WebAssembly); this package reads the environment, runs git when asked, and does the file I/O.
 *
 * Typical use in a CI step:
 *   const ctx = detectContext();
 *   const store = openStore();
 *   await withLease(store, { env: ctx.env, scope: ctx.scope, wait: true }, async (lease) => {
 *     ... work, passing lease.signal to what can be aborted ...
 *     await lease.write('deployed.json', JSON.stringify(result));
 *   });
 *
 * With `context` the lease carries a run: what it creates is recorded in the scope's receipt
 * (lease.intend / record / forget / check, finished by withLease), a pull request inherits its head
 * branch's resources, and destroy(store, {context}, fn) deletes what the scope owns.
 */
const { BatonError } = require('./errors.cjs');
const { invoke, errorCodes } = require('./core.cjs');
const { scopeFor, detectContext } = require('./context.cjs');
const { openStore } = require('./dir-store.cjs');
const { acquireLease, withLease } = require('./lease.cjs');
const { destroy, acquireObjectLease, withObjectLease } = require('./destroy.cjs');
const { scopeStatus } = require('./ownership.cjs');
const { gc } = require('./gc.cjs');

module.exports = {
  BatonError,
  invoke,
  errorCodes,
  scopeFor,
  detectContext,
  openStore,
  acquireLease,
  withLease,
  destroy,
  acquireObjectLease,
  withObjectLease,
  scopeStatus,
  gc,
};
