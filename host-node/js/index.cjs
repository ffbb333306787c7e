'use strict';
/**
 * baton-lease: CI scopes, leases and fencing for Node scripts. Every decision is made by the baton core
 * (WebAssembly); this package reads the environment, runs git when asked, and does the file I/O.
 *
 * Typical use in a CI step:
 *   const ctx = detectContext();
 *   const store = openStore();
 *   const { lock } = await store.acquireLock({ env: ctx.env, scope: ctx.scope, holder, ttlMs });
 *   ... renewLock every ttl/3 ...
 *   await store.releaseLock({ env: ctx.env, scope: ctx.scope, holder, epoch: lock.epoch });
 */
const { BatonError } = require('./errors.cjs');
const { invoke, errorCodes } = require('./core.cjs');
const { scopeFor, detectContext } = require('./context.cjs');
const { openStore } = require('./dir-store.cjs');

module.exports = { BatonError, invoke, errorCodes, scopeFor, detectContext, openStore };
