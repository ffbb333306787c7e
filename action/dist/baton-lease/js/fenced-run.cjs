'use strict';
/**
 * What a lease that carries a run offers its work besides the run machine (run-lease.cjs extends it):
 * `assertHeld`, fenced writes and the ledger operations (`intend`, `record`, `forget`, `check`), each one
 * store transaction of its own fenced by the lease's epoch, as `baton ledger` is for a command under
 * `baton run`. The subclass supplies the fencing token and whether the run is open (`held`, `open`).
 */
const { hostError } = require('./core.cjs');
const { resourceOf } = require('./ownership.cjs');
const { runChange } = require('./claim.cjs');
const { asBatonError, notify } = require('./loop.cjs');

/** Internal methods the subclass provides or uses. */
const held = Symbol('held');
const open = Symbol('open');
const stop = Symbol('stop');
const warn = Symbol('warn');
const stopped = Symbol('stopped');
const deadline = Symbol('deadline');

class FencedRun {
  #store;
  #onWarning;
  #abort = new AbortController();
  /** The error (LOCK_LOST, INTERRUPTED) once the lease must no longer be used for writing. */
  #stopped = null;

  /**
   * @param {object} store
   * @param {{env: string, scope: string, holder: string, context: object | null}} cell what the run machine named
   * @param {Function} [onWarning]
   */
  constructor(store, { env, scope, holder, context }, onWarning) {
    this.#store = store;
    this.#onWarning = onWarning;
    this.env = env;
    this.scope = scope;
    this.holder = holder;
    /** The epoch (fencing token) of the grant. */
    this.epoch = 0;
    /** The lock as last stored (by the acquire or the latest renewal). */
    this.lock = null;
    /** The expired lock the grant replaced, or null. */
    this.preempted = null;
    /** Warnings: an expired lock taken over, an inheritance, a handover put off, a release that failed. */
    this.warnings = [];
    /** Aborted (reason: a BatonError LOCK_LOST or INTERRUPTED) when the work must stop. */
    this.signal = this.#abort.signal;
    /** The run's context, or null for a parent-object lease. */
    this.context = context;
    /** The scope this run inherits from (the cell the run machine read the predecessor's receipt from), or null. */
    this.predecessor = null;
    /** The run's receipt as it last wrote it, or null. */
    this.receipt = null;
  }

  /** The work must stop: `error` becomes the abort reason and what assertHeld throws. */
  [stop](error) {
    if (this.#stopped) return;
    this.#stopped = error;
    this.#abort.abort(error);
  }

  /** Why the lease must no longer be used for writing, or null. */
  get [stopped]() {
    return this.#stopped;
  }

  /** The fencing token now, or undefined, letting the machine see the time first (the subclass's). */
  [held]() {
    return undefined;
  }

  /** When a store operation started now must have ended (monotonic ms; the subclass's, from the core). */
  [deadline]() {
    return undefined;
  }

  /** Throws USAGE when the run is not open for `what` (the subclass's). */
  [open](_what) {}

  [warn](message) {
    this.warnings.push(message);
    if (typeof this.#onWarning === 'function') notify(this.#onWarning, message);
    else process.emitWarning(message, { type: 'BatonWarning' });
  }

  /**
   * The epoch to fence with while the lease is safely held (the machine's `fencingToken`), else throws
   * BatonError LOCK_LOST (or the reason the work must stop).
   * @returns {number}
   */
  assertHeld() {
    if (this.#stopped) throw this.#stopped;
    const token = this[held]();
    if (token !== undefined) return token;
    if (this.#stopped) throw this.#stopped;
    throw hostError('LOCK_LOST', `The lease on ${this.env}/${this.scope} is no longer held; nothing may be written under it.`, {
      holder: this.holder,
      epoch: this.epoch,
    });
  }

  /** One fenced transaction on the run's cell (holder and epoch added); LOCK_LOST stops the lease. */
  async #fenced(op, request) {
    const epoch = this.assertHeld();
    let answer;
    try {
      answer = await this.#store.transact({ env: this.env, scope: this.scope }, op, { ...request, holder: this.holder, epoch }, { deadline: this[deadline]() });
    } catch (e) {
      const error = asBatonError(e, 'the store failed');
      if (error.code === 'LOCK_LOST') this[stop](error);
      throw error;
    }
    if (answer.receipt) this.receipt = answer.receipt;
    for (const warning of answer.warnings ?? []) this[warn](warning);
    return answer;
  }

  /**
   * One ownership change of `res` by this run (js/claim.cjs `runChange`: the core's machine, the claim
   * first for intend and record, freed after a forget; a check with `change` asks the claim read-only).
   * OWNED_BY_OTHER_SCOPE when another scope owns it; LOCK_LOST stops the lease.
   */
  async #change(op, res, extra = {}) {
    const epoch = this.assertHeld();
    const config = { env: this.env, scope: this.scope, holder: this.holder, epoch, predecessor: this.predecessor ?? null, resource: res, op, ...extra };
    let answer;
    try {
      answer = await runChange(this.#store, config, { deadline: this[deadline]() });
    } catch (e) {
      const error = asBatonError(e, 'the store failed');
      // The write was fenced out, or a newer run of this scope holds the claim: the lease was taken over.
      if (error.code === 'LOCK_LOST') this[stop](error);
      throw error;
    }
    if (answer.receipt) this.receipt = answer.receipt;
    for (const warning of answer.warnings ?? []) this[warn](warning);
    return answer;
  }

  /** A fenced write of data file `file` of the cell (see Lease.write). */
  async write(file, content) {
    if (typeof content !== 'string') throw hostError('USAGE', `the content of ${String(file)} must be a string`);
    const answer = await this.#fenced('fenced-write', { file, content });
    return { lock: answer.lock };
  }

  /** Records a write-ahead intent for `resource` before creating it (a fenced checkpoint). */
  async intend(resource) {
    this[open]('intend');
    await this.#change({ type: 'intend' }, resourceOf(resource));
  }

  /** Records that `resource` exists with provider id `id` and this scope owns it. */
  async record(resource, id) {
    this[open]('record');
    if (typeof id !== 'string') throw hostError('USAGE', 'lease.record needs the provider id of the resource (a string)');
    // The marker an entry that becomes owned is written with (BATON_CREATED_BY; the core judges it).
    await this.#change({ type: 'record', id }, resourceOf(resource), { ownedMarker: process.env.BATON_CREATED_BY ?? null });
  }

  /** Removes `resource` from the ledger; resolves `{forgotten}`. */
  async forget(resource) {
    this[open]('forget');
    const answer = await this.#change({ type: 'forget' }, resourceOf(resource));
    return { forgotten: answer.forgotten === true };
  }

  /** May this run create or change (`change: true`) `resource`, or rely on it? (see index.d.ts) */
  async check(resource, options = {}) {
    this[open]('check');
    const change = options?.change ?? false;
    if (typeof change !== 'boolean') throw hostError('USAGE', 'lease.check: `change` must be a boolean');
    // The listing, the fenced check, and with `change` the claim asked read-only (`intend` takes it).
    const answer = await this.#change({ type: 'check', change }, resourceOf(resource));
    const result = { relation: answer.relation, adopted: answer.adopted === true };
    if (answer.owner != null) result.owner = answer.owner;
    if (answer.createdBy != null) result.createdBy = answer.createdBy;
    return result;
  }
}

module.exports = { FencedRun, held, open, stop, warn, stopped, deadline };
