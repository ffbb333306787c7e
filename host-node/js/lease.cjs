'use strict';
/**
 * Leases: a cell's lock held for the duration of some work, renewed in the background, released at the end,
 * with an AbortSignal that fires when the work must stop.
 *
 * Every scheduling decision is made by the core's lease machine (core/src/lease): when to renew, how long
 * and how often to wait for a held lock, when the holder must stop on its own, how a failing release is
 * retried. This file is only the host loop that the machine's contract specifies:
 *
 *   wake up (the timer, a store completion, or a command) -> read the monotonic clock -> make ONE call into
 *   the machine -> drain pollAction() until undefined -> read pollTimeout() and arm ONE timer for it ->
 *   perform the drained store actions (one store transaction each) and act on the drained events.
 *
 * The machine never has more than one store request in flight (a renewal is scheduled after the previous
 * one settled, a release waits for a renewal in flight), so the loop keeps no queue of its own. Fenced
 * writes are not the machine's business: each is its own transaction, straight to the store, never queued
 * behind a renewal.
 */
const { randomBytes } = require('node:crypto');
const wasm = require('../pkg/baton_node.js');
const { BatonError, fromErrorJson, fromThrown } = require('./errors.cjs');
const { call, hostError } = require('./core.cjs');
const { runContext, predecessorOf, resourceOf } = require('./ownership.cjs');

/** The host's monotonic clock in whole milliseconds, as the machine takes it. */
const monotonicNow = () => Math.floor(performance.now());

/** The longest delay setTimeout honours; a later deadline is reached in several (spurious) wake-ups. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** `e` as a BatonError: itself, or INTERNAL saying what failed (a custom store broke its contract). */
function asBatonError(e, what) {
  if (e instanceof BatonError) return e;
  if (e && typeof e.json === 'string') return fromThrown(e); // a refusal of the wasm machine
  return hostError('INTERNAL', `${what}: ${e && e.message ? e.message : String(e)}`, {}, e);
}

/** A failed store transaction as the machine takes it: the core's error object `{code, message, ...}`. */
function errorObject(e) {
  const err = asBatonError(e, 'the store failed');
  const object = { ...err.details, code: err.code, message: err.message };
  if (err.hint !== undefined) object.hint = err.hint;
  return object;
}

/** Throws `e` outside the current call stack, like a throwing EventEmitter listener: a bug of the caller. */
function rethrowLater(e) {
  process.nextTick(() => {
    throw e;
  });
}

/** The host loop of one lease machine (see the file comment). */
class HostLoop {
  /** @type {import('../pkg/baton_node.js').Lease | null} */
  #machine;
  /** @type {ReturnType<typeof setTimeout> | null} */
  #timer = null;
  #keepAlive = false;
  #perform;
  #onEvents;
  #onFailure;

  /**
   * @param {import('../pkg/baton_node.js').Lease} machine
   * @param {(op: string, request: object) => Promise<object>} perform one store transaction
   * @param {(events: object[]) => void} onEvents the events one call produced, in order
   * @param {(error: BatonError) => void} onFailure the machine refused a call (a bug): the loop has stopped
   */
  constructor(machine, perform, onEvents, onFailure) {
    this.#machine = machine;
    this.#perform = perform;
    this.#onEvents = onEvents;
    this.#onFailure = onFailure;
  }

  /**
   * One turn of the loop: `call(machine, now)` (acquire, release, handleTimeout or handleStoreResult), then
   * drain, re-arm the timer, start the store actions, report the events. Events are reported after the
   * machine is drained, so whatever a listener does (release, assertHeld) is a turn of its own.
   */
  step(call) {
    const machine = this.#machine;
    if (machine === null) return;
    const stores = [];
    const events = [];
    try {
      call(machine, monotonicNow());
      for (let text = machine.pollAction(); text !== undefined; text = machine.pollAction()) {
        const action = JSON.parse(text);
        if (action.type === 'store') stores.push(action);
        else events.push(action.event);
      }
      this.#arm(machine.pollTimeout());
    } catch (e) {
      this.#stop();
      this.#onFailure(asBatonError(e, 'the lease machine failed'));
      return;
    }
    for (const action of stores) this.#send(action);
    if (events.length > 0) this.#onEvents(events);
    if (this.#machine === machine && machine.isFinished()) this.#stop();
  }

  /** The fencing token now, or undefined (also once the machine is gone). */
  token() {
    return this.#machine?.fencingToken(monotonicNow());
  }

  /** Whether the timer keeps Node alive (see `AcquirePromise`). */
  keepAlive(on) {
    this.#keepAlive = on;
    if (on) this.#timer?.ref();
    else this.#timer?.unref();
  }

  /** The latest instant a store operation started now may run until (the core's `storeDeadline`). */
  storeDeadline() {
    return this.#machine?.storeDeadline(monotonicNow());
  }

  /**
   * Performs store action `id` as one transaction, ended by its `deadlineMs`, and feeds its outcome back
   * (a turn of its own).
   */
  #send({ id, op, request, deadlineMs }) {
    Promise.resolve()
      .then(() => this.#perform(op, request, deadlineMs))
      .then(
        (answer) => ({ ok: answer }),
        (e) => ({ error: errorObject(e) }),
      )
      .then((result) => this.step((m, now) => m.handleStoreResult(id, JSON.stringify(result), now)));
  }

  /** Replaces the timer with one for `at` (monotonic ms), or none. */
  #arm(at) {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (at === undefined) return;
    const delay = Math.min(Math.max(0, at - monotonicNow()), MAX_DELAY_MS);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      // Timers may fire a millisecond early by this clock; the machine treats that as a spurious wake-up and
      // pollTimeout gives the same deadline again.
      this.step((m, now) => m.handleTimeout(now));
    }, delay);
    if (!this.#keepAlive) this.#timer.unref();
  }

  /** Stops for good: no timer, the machine's memory freed. */
  #stop() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#machine?.free();
    this.#machine = null;
  }
}

/**
 * The promise `acquireLease` returns, and why it is special.
 *
 * Node exits when nothing ref'd is pending, pending promises notwithstanding. While waiting for a held lock
 * the only thing pending between two attempts is the machine's poll timer. Were it unref'd, a script doing
 * `await acquireLease(...)` with nothing else to do would end in the middle of the wait (silently with exit
 * code 0 in CommonJS, with 13 after a top-level await), and its work would never run. Were it always ref'd,
 * an acquireLease call that nobody waits for would hold the process open for up to the wait timeout, and
 * then take a lock nobody uses.
 *
 * So the timer is ref'd exactly while somebody waits for the outcome. This subclass's `then` marks the
 * promise observed: `await`, `.then/.catch/.finally` and `Promise.all/race/...` all call it. From then
 * until the lease is acquired (or not), the poll timer keeps Node alive. Once acquired, the timers are
 * unref'd again: a held lease never keeps Node alive by itself (the work done under it does), so a
 * forgotten lease cannot hang a CI step. A release keeps Node alive until it is over, awaited or not: once
 * begun it should land, or the scope stays blocked until the TTL runs out.
 */
class AcquirePromise extends Promise {
  /** @type {(() => void) | null} */
  #onObserved = null;

  // Promises derived with then/catch/finally are plain ones.
  static get [Symbol.species]() {
    return Promise;
  }

  /** A pending AcquirePromise with its resolve/reject; `onObserved` runs at the first `then`. */
  static withObserver(onObserved) {
    let resolve;
    let reject;
    const promise = new AcquirePromise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.#onObserved = onObserved;
    return { promise, resolve, reject };
  }

  then(onFulfilled, onRejected) {
    const observed = this.#onObserved;
    this.#onObserved = null;
    observed?.();
    return super.then(onFulfilled, onRejected);
  }
}

const NUMBER_OPTIONS = ['ttlMs', 'marginMs', 'renewEveryMs', 'waitTimeoutMs', 'pollMs'];
const STRING_OPTIONS = ['env', 'scope', 'holder', 'label', 'approvedBy'];
const BOOLEAN_OPTIONS = ['wait', 'ownership'];
const CALLBACK_OPTIONS = ['onWait', 'onEvent', 'onWarning'];
const KNOWN_OPTIONS = [...STRING_OPTIONS, ...NUMBER_OPTIONS, ...BOOLEAN_OPTIONS, 'context', ...CALLBACK_OPTIONS];

/**
 * The machine's configuration from the options. Only the types are checked here (USAGE); names and timing
 * are the core's to judge (it answers USAGE too). Without a `holder`, one is made up: `<prefix>-` and random
 * hex, this lease's alone (`uniqueHolder`).
 */
function leaseConfig(options, prefix = 'run') {
  const usage = (message) => hostError('USAGE', message);
  if (options === null || typeof options !== 'object') throw usage('a lease needs its options: {env, scope, ...}');
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (!KNOWN_OPTIONS.includes(key)) throw usage(`unknown lease option \`${key}\`; known: ${KNOWN_OPTIONS.join(', ')}`);
    if (STRING_OPTIONS.includes(key) && typeof value !== 'string') throw usage(`the lease option \`${key}\` must be a string`);
    if (NUMBER_OPTIONS.includes(key) && !(Number.isSafeInteger(value) && value >= 0)) {
      throw usage(`the lease option \`${key}\` must be a whole number of milliseconds >= 0, got ${String(value)}`);
    }
    if (BOOLEAN_OPTIONS.includes(key) && typeof value !== 'boolean') throw usage(`the lease option \`${key}\` must be a boolean`);
    if (CALLBACK_OPTIONS.includes(key) && typeof value !== 'function') throw usage(`the lease option \`${key}\` must be a function`);
  }
  const context = options.context === undefined ? undefined : runContext(options.context);
  for (const key of ['env', 'scope']) {
    if (context !== undefined && options[key] !== undefined && options[key] !== context[key]) {
      throw usage(`the lease option \`${key}\` (${options[key]}) differs from the context's (${context[key]}); pass one of them`);
    }
  }
  const env = options.env ?? context?.env;
  const scope = options.scope ?? context?.scope;
  if (env === undefined || scope === undefined) {
    throw usage('a lease needs `env` and `scope` (for example those detectContext() found), or the `context` itself');
  }
  // A holder we make up is this lease's alone: the core may then release by name after a lost reply.
  const named = options.holder !== undefined && options.holder !== null;
  const holder = named ? options.holder : `${prefix}-${randomBytes(4).toString('hex')}`;
  const config = { env, scope, holder, uniqueHolder: !named };
  for (const key of ['label', ...NUMBER_OPTIONS, 'wait']) if (options[key] !== undefined) config[key] = options[key];
  return config;
}

/**
 * The run a lease carries when ownership is on (`context`, or `ownership: true`): its context, the approver
 * to record, whether it is a destroy. The approval is checked here, before anything is locked
 * (ENV_NOT_APPROVED), for plain leases too (production needs `approvedBy`, not recorded). Null for a plain
 * lease.
 */
function runSettings(store, options, config, destroy) {
  const ownership = options.ownership ?? options.context !== undefined;
  if (!ownership) {
    // No production lock without a named approver, plain leases included (as `baton lock acquire`).
    const { required } = call('approval', { env: config.env, approvedBy: options.approvedBy ?? null });
    if (options.approvedBy !== undefined && !required) {
      throw hostError('USAGE', 'the lease option `approvedBy` is recorded in the run\'s receipt: pass `context` (or `ownership: true`) too');
    }
    return null;
  }
  if (typeof store.list !== 'function') {
    throw hostError('USAGE', 'a lease with ownership needs a store that can list scopes (`list(env)`), as openStore() gives');
  }
  const context = options.context === undefined ? runContext({ env: config.env, scope: config.scope }) : runContext(options.context);
  const { approvedBy } = call('approval', { env: context.env, approvedBy: options.approvedBy ?? null });
  return { context, approvedBy, destroy, predecessor: null, predecessorText: null, state: 'open' };
}

/** A resolvable promise. */
function deferred() {
  let resolve;
  const promise = new Promise((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

const begin = Symbol('begin');
/** Internal: a fenced ownership transaction of the lease's run (`destroy` uses it for `destroy-plan`). */
const fenced = Symbol('fenced');
/** Internal: whether the lease carries a run that was not finished yet (`withLease` finishes it). */
const unfinished = Symbol('unfinished');

/** A lease on one cell's lock. Obtain one with `acquireLease` (or `withLease`). */
class Lease {
  #store;
  #cell;
  #callbacks;
  #loop;
  #abort = new AbortController();
  /** The LOCK_LOST error once the lease must no longer be used for writing. */
  #stopped = null;
  /** @type {'acquiring' | 'held' | 'releasing' | 'done'} */
  #phase = 'acquiring';
  #epoch = 0;
  #observed = false;
  /** The acquire promise's resolve/reject while it is pending. */
  #acquiring = null;
  /** Why the acquire was given up (onWait threw), to reject it with. */
  #cancelled = null;
  /** The release's result, once asked for. */
  #released = null;
  /** The run (ownership), or null: see `runSettings`. */
  #run = null;

  /** The TTL given in the options (null: the core's default). */
  #ttlMs = null;

  /**
   * @param {object} store @param {ReturnType<typeof leaseConfig>} config @param {object} callbacks
   * @param {ReturnType<typeof runSettings>} [run]
   */
  constructor(store, config, callbacks, run = null) {
    let machine;
    try {
      // The store's budget bounds every store request of the lease (the git store has one).
      const budget = Number.isSafeInteger(store.budgetMs) && store.budgetMs > 0 ? { storeBudgetMs: store.budgetMs } : {};
      machine = new wasm.Lease(JSON.stringify({ ...config, ...budget }));
    } catch (e) {
      throw asBatonError(e, 'the lease machine failed');
    }
    this.#store = store;
    this.#cell = { env: config.env, scope: config.scope };
    this.#ttlMs = config.ttlMs ?? null;
    this.#callbacks = callbacks;
    this.#loop = new HostLoop(
      machine,
      (op, request, deadline) => store.transact(this.#cell, op, request, { deadline }),
      (events) => {
        for (const event of events) this.#onEvent(event);
      },
      (error) => this.#fail(error),
    );
    /** The environment of the cell. */
    this.env = config.env;
    /** The scope of the cell. */
    this.scope = config.scope;
    /** The holder name written into the lock. */
    this.holder = config.holder;
    /** The epoch (fencing token) of the grant. */
    this.epoch = 0;
    /** The lock as last stored (by the acquire or the latest renewal). */
    this.lock = null;
    /** The expired lock the grant replaced, or null. */
    this.preempted = null;
    /** Warnings: an expired lock taken over, a release that failed. */
    this.warnings = [];
    /** Aborted (reason: a BatonError LOCK_LOST) when the lease is lost or must stop; not on release. */
    this.signal = this.#abort.signal;
    this.#run = run;
    /** The run's context (ownership), or null. */
    this.context = run ? run.context : null;
    /** The scope this run inherits from (a pull request's head branch scope), or null. */
    this.predecessor = null;
    /** This run's receipt as it last wrote it (ownership), or null. */
    this.receipt = null;
  }

  /** Starts acquiring; the promise `acquireLease` returns. */
  [begin]() {
    const pending = AcquirePromise.withObserver(() => {
      this.#observed = true;
      this.#keepAliveAsNeeded();
    });
    this.#acquiring = pending;
    this.#loop.step((m, now) => m.acquire(now));
    return pending.promise;
  }

  /**
   * The epoch to fence with, while the lease is safely held: acquired, neither lost nor past the holder's
   * deadline (the core's `fencingToken`), nor refused by the store. Throws BatonError LOCK_LOST otherwise.
   * @returns {number}
   */
  assertHeld() {
    if (this.#stopped) throw this.#stopped;
    const token = this.#loop.token();
    if (token !== undefined) return token;
    if (this.#phase === 'held') {
      // Past the deadline before the timer fired (a busy event loop): let the machine see the time now, so
      // it emits must-stop and the signal aborts with the machine's own reason.
      this.#loop.step((m, now) => m.handleTimeout(now));
      if (this.#stopped) throw this.#stopped;
    }
    throw hostError(
      'LOCK_LOST',
      `The lease on ${this.env}/${this.scope} is no longer held (${this.#phase === 'held' ? 'past its deadline' : 'released'}); nothing may be written under it.`,
      { holder: this.holder, epoch: this.#epoch },
    );
  }

  /**
   * Writes data file `file` of the cell, fenced: one store transaction that checks the lock is still ours
   * at our epoch and writes only then. Checks `assertHeld()` first; the store's check is authoritative
   * (LOCK_LOST from it rejects, and aborts the signal). Not queued behind renewals.
   * @param {string} file
   * @param {string} content
   * @returns {Promise<{lock: object}>}
   */
  async write(file, content) {
    const epoch = this.assertHeld();
    if (typeof content !== 'string') throw hostError('USAGE', `the content of ${String(file)} must be a string`);
    try {
      const answer = await this.#store.transact(
        this.#cell,
        'fenced-write',
        { holder: this.holder, epoch, file, content },
        { deadline: this.#loop.storeDeadline() },
      );
      return { lock: answer.lock };
    } catch (e) {
      const error = asBatonError(e, 'the store failed');
      if (error.code === 'LOCK_LOST') this.#stop(error);
      throw error;
    }
  }

  /**
   * Ends the lease: releases the lock (after a renewal in flight settles; failures are retried after 200,
   * 400 and 800 ms). Resolves with `{released}` (whether a lock of ours was removed), plus `warning` when the
   * release failed and the lock stays until it expires. Never rejects; calling it again gives the same result.
   * @returns {Promise<{released: boolean, warning?: string}>}
   */
  release() {
    if (this.#released === null) {
      this.#released = deferred();
      if (this.#phase === 'done') {
        this.#released.resolve({ released: false });
      } else {
        this.#phase = 'releasing';
        this.#keepAliveAsNeeded();
        this.#loop.step((m, now) => m.release(now));
      }
    }
    return this.#released.promise;
  }

  /** run-begin: the run's receipt starts (fenced), carrying the ledger and inheriting the predecessor's. */
  async #beginRun() {
    const run = this.#run;
    // A destroy inherits nothing and hands nothing over.
    const { predecessor, handoverTtlMs } = run.destroy ? { predecessor: null, handoverTtlMs: 0 } : predecessorOf(run.context, this.#ttlMs);
    run.handoverTtlMs = handoverTtlMs;
    let listed = null;
    if (predecessor !== null) {
      const found = (await this.#store.list(run.context.env)).find((o) => o.scope === predecessor);
      listed = { scope: predecessor, text: found ? found.text : null };
    }
    run.predecessor = predecessor;
    run.predecessorText = listed ? listed.text : null;
    this.predecessor = predecessor;
    await this[fenced]('run-begin', {
      context: run.context,
      hashKey: randomBytes(16).toString('hex'),
      lockPreempted: this.preempted && typeof this.preempted.holder === 'string' ? this.preempted.holder : null,
      approvedBy: run.approvedBy,
      destroy: run.destroy,
      predecessor: listed,
    });
  }

  /**
   * One fenced transaction of the run on this lease's cell: `holder` and `epoch` added, `assertHeld()`
   * first; the receipt and warnings of the answer taken in; LOCK_LOST from the store stops the lease.
   */
  async [fenced](op, request) {
    const epoch = this.assertHeld();
    let answer;
    try {
      answer = await this.#store.transact(this.#cell, op, { ...request, holder: this.holder, epoch }, { deadline: this.#loop.storeDeadline() });
    } catch (e) {
      const error = asBatonError(e, 'the store failed');
      if (error.code === 'LOCK_LOST') this.#stop(error);
      throw error;
    }
    if (answer.receipt) this.receipt = answer.receipt;
    for (const warning of answer.warnings ?? []) this.#warn(warning);
    return answer;
  }

  [unfinished]() {
    return this.#run !== null && this.#run.state !== 'finished';
  }

  /** The run, refused (USAGE) when there is none or it has finished. */
  #openRun(what) {
    if (this.#run === null) {
      throw hostError('USAGE', `lease.${what} records ownership in the run's receipt: acquire the lease with \`context\` (or \`ownership: true\`)`);
    }
    if (this.#run.state !== 'open') {
      throw hostError('USAGE', `lease.${what}: the run on ${this.env}/${this.scope} has finished; its receipt is final`);
    }
    return this.#run;
  }

  /**
   * Records a write-ahead intent for `resource` before creating it (a fenced checkpoint of the receipt):
   * if the run dies during the create, the next run finds the intent and claims (`record`) or re-creates it.
   * @param {object} resource {adapter, key, provider?, op?, label?, parent?}
   */
  async intend(resource) {
    this.#openRun('intend');
    await this[fenced]('ledger-intend', { resource: resourceOf(resource) });
  }

  /**
   * Records that `resource` exists with provider id `id` and this scope owns it (an intent becomes owned).
   * @param {object} resource
   * @param {string} id
   */
  async record(resource, id) {
    this.#openRun('record');
    if (typeof id !== 'string') throw hostError('USAGE', 'lease.record needs the provider id of the resource (a string)');
    await this[fenced]('ledger-record', { resource: resourceOf(resource), id });
  }

  /**
   * Removes `resource` from the ledger (it was deleted, or never created). Resolves `{forgotten}`: whether
   * it was there.
   * @param {object} resource
   */
  async forget(resource) {
    this.#openRun('forget');
    const answer = await this[fenced]('ledger-forget', { resource: resourceOf(resource) });
    return { forgotten: answer.forgotten === true };
  }

  /**
   * May this run create or change (`change: true`) `resource`, or rely on it? Throws OWNED_BY_OTHER_SCOPE
   * when another scope of the environment owns it and `change`; relying on such a foreign resource records
   * it as `adopted` (destroy only forgets it). Resolves `{relation: 'own'|'inherited'|'foreign'|'none',
   * owner?, createdBy?, adopted}`.
   * @param {object} resource
   * @param {{change?: boolean}} [options]
   */
  async check(resource, options = {}) {
    const run = this.#openRun('check');
    const change = options?.change ?? false;
    if (typeof change !== 'boolean') throw hostError('USAGE', 'lease.check: `change` must be a boolean');
    const res = resourceOf(resource);
    const others = await this.#store.list(this.env);
    const answer = await this[fenced]('ledger-check', { resource: res, change, others, predecessor: run.predecessor });
    const result = { relation: answer.relation, adopted: answer.adopted === true };
    if (answer.owner !== undefined) result.owner = answer.owner;
    if (answer.createdBy !== undefined) result.createdBy = answer.createdBy;
    return result;
  }

  /**
   * Ends the run: writes its final receipt (`complete` or `failed`; the commit goes to its history). After
   * a complete run that inherited from a predecessor, hands the predecessor's resources over (under the
   * predecessor's lock for 60 s, without waiting): a busy predecessor or a failed handover is a warning,
   * retried by the next run. Resolves `{status, unresolved, receipt, handedOver, warnings}`; the lease stays
   * held until `release()`. Calling it again resolves the same.
   * @param {'complete' | 'failed'} status
   */
  finish(status) {
    let run;
    try {
      if (this.#run === null) this.#openRun('finish');
      run = this.#run;
      if (status !== 'complete' && status !== 'failed') {
        throw hostError('USAGE', `lease.finish takes 'complete' or 'failed', got ${String(status)}`);
      }
    } catch (e) {
      return Promise.reject(e);
    }
    if (run.finished) return run.finished;
    run.state = 'finishing';
    run.finished = this.#finish(run, status === 'complete').then(
      (result) => {
        run.state = 'finished';
        return result;
      },
      (e) => {
        // Nothing landed: the run is still open (a retry may finish it).
        run.state = 'open';
        run.finished = null;
        throw e;
      },
    );
    return run.finished;
  }

  async #finish(run, succeeded) {
    const answer = await this[fenced]('run-finish', { succeeded, sha: run.context.sha });
    const warnings = [];
    let handedOver = 0;
    if (answer.status === 'complete' && !run.destroy && run.predecessor !== null && run.predecessorText !== null) {
      const outcome = await this.#handover(run.predecessor, answer.receipt);
      handedOver = outcome.moved;
      if (outcome.warning) {
        warnings.push(outcome.warning);
        this.#warn(outcome.warning);
      }
    }
    return { status: answer.status, unresolved: answer.unresolved ?? [], receipt: answer.receipt, handedOver, warnings };
  }

  /**
   * The handover: the predecessor's receipt rewritten without what this run owns, with `supersededBy`,
   * under the predecessor's lock (holder `handover-<runId>`, for the core's `handoverTtlMs`: 60 s or the
   * run's TTL when shorter; no wait, released at once). Never
   * throws: this run's receipt has landed, so a failure is a warning and the next run tries again.
   */
  async #handover(predecessor, receipt) {
    const cell = { env: this.env, scope: predecessor };
    const holder = `handover-${this.holder}`;
    let epoch;
    try {
      epoch = (await this.#store.transact(cell, 'lock-acquire', { holder, ttlMs: this.#run.handoverTtlMs })).lock.epoch;
    } catch (e) {
      const error = asBatonError(e, 'the store failed');
      if (error.code === 'LOCK_HELD') {
        return { moved: 0, warning: `Scope \`${predecessor}\` is busy; its resources will be handed over to \`${this.scope}\` on the next run.` };
      }
      return { moved: 0, warning: `Could not hand over the resources of scope \`${predecessor}\`: ${error.message}` };
    }
    try {
      const answer = await this.#store.transact(cell, 'handover', {
        holder,
        epoch,
        successor: this.scope,
        successorLedger: (receipt && receipt.ledger) || [],
      });
      return { moved: answer.moved ?? 0, warning: null };
    } catch (e) {
      const error = asBatonError(e, 'the store failed');
      return { moved: 0, warning: `Could not hand over the resources of scope \`${predecessor}\`: ${error.message}` };
    } finally {
      await Promise.resolve()
        .then(() => this.#store.transact(cell, 'lock-release', { holder, epoch }))
        .catch(() => {});
    }
  }

  #keepAliveAsNeeded() {
    this.#loop.keepAlive(this.#phase === 'releasing' || (this.#phase === 'acquiring' && this.#observed));
  }

  /** Acts on one event of the machine, then tells `onEvent` (which then sees the lease up to date). */
  #onEvent(event) {
    this.#apply(event);
    if (this.#callbacks.onEvent) {
      try {
        this.#callbacks.onEvent(event);
      } catch (e) {
        rethrowLater(e);
      }
    }
  }

  #apply(event) {
    switch (event.kind) {
      case 'acquired':
        this.#epoch = event.epoch;
        this.epoch = event.epoch;
        this.lock = event.lock;
        this.preempted = event.preempted;
        if (event.warning) this.#warn(event.warning);
        // Given up while the attempt was in flight: the machine releases the lock next.
        if (this.#cancelled) break;
        this.#phase = 'held';
        this.#keepAliveAsNeeded();
        if (this.#run === null) {
          this.#acquiring?.resolve(this);
          this.#acquiring = null;
        } else {
          // The run starts (run-begin) before anybody gets the lease; if it cannot, the lock is released and
          // the acquire rejects with why.
          const pending = this.#acquiring;
          this.#acquiring = null;
          this.#beginRun().then(
            () => pending?.resolve(this),
            (e) => this.release().then(() => pending?.reject(asBatonError(e, 'the run could not start'))),
          );
        }
        break;
      case 'waiting':
        if (this.#callbacks.onWait && !this.#cancelled) {
          const { holder, expiresAt, waitedMs, remainingMs } = event;
          try {
            this.#callbacks.onWait({ holder, expiresAt, waitedMs, remainingMs });
          } catch (e) {
            // Giving up: the acquire rejects with what onWait threw.
            this.#cancelled = e;
            this.#loop.step((m, now) => m.release(now));
          }
        }
        break;
      case 'renewed':
        this.lock = event.lock;
        break;
      case 'lost':
      case 'must-stop':
        this.#stop(fromErrorJson({ ...event.error, graceMs: event.graceMs }));
        break;
      case 'acquire-failed':
        this.#phase = 'done';
        this.#acquiring?.reject(this.#cancelled ?? fromErrorJson(event.error));
        this.#acquiring = null;
        break;
      case 'released':
        this.#end({ released: event.released });
        break;
      case 'release-failed':
        this.#warn(event.warning);
        this.#end({ released: false, warning: event.warning });
        break;
      default:
        // renew-failed: the next renewal is already scheduled; onEvent has seen it.
        break;
    }
  }

  /** The lease is over; an acquire still pending rejects with `acquireError` unless it was given up. */
  #end(result, acquireError = hostError('INTERNAL', 'the lease ended before it was acquired')) {
    this.#phase = 'done';
    this.#acquiring?.reject(this.#cancelled ?? acquireError);
    this.#acquiring = null;
    this.#released?.resolve(result);
  }

  /** The work must stop: `error` (LOCK_LOST) becomes the abort reason and what assertHeld throws. */
  #stop(error) {
    if (this.#stopped) return;
    this.#stopped = error;
    this.#abort.abort(error);
  }

  /** The machine refused a call (a bug): nothing more can be done with this lease. */
  #fail(error) {
    this.#stop(error);
    this.#end({ released: false, warning: `The lease on ${this.env}/${this.scope} failed: ${error.message}` }, error);
  }

  #warn(message) {
    this.warnings.push(message);
    try {
      if (this.#callbacks.onWarning) this.#callbacks.onWarning(message);
      else process.emitWarning(message, { type: 'BatonWarning' });
    } catch (e) {
      rethrowLater(e);
    }
  }
}

/**
 * Acquires a lease on the lock of cell `env/scope` of `store` and keeps it renewed until `release()`.
 * Resolves with the Lease once acquired; rejects with BatonError LOCK_HELD (after the wait, with `wait`),
 * LOCK_CORRUPT, a store failure, or USAGE for bad options.
 * @param {{transact: Function}} store a store from openStore()
 * @param {object} options
 */
function acquireLease(store, options) {
  return startLease(store, options, false);
}

/** acquireLease, for a destroy run when `destroy` (run-begin with `destroy: true`). */
function startLease(store, options, destroy) {
  let lease;
  try {
    if (store === null || typeof store !== 'object' || typeof store.transact !== 'function') {
      throw hostError('USAGE', 'acquireLease needs a store (from openStore()) as its first argument');
    }
    const config = leaseConfig(options, destroy ? 'destroy' : 'run');
    const run = runSettings(store, options, config, destroy);
    const { onWait, onEvent, onWarning } = options;
    lease = new Lease(store, config, { onWait, onEvent, onWarning }, run);
  } catch (e) {
    return Promise.reject(asBatonError(e, 'acquireLease failed'));
  }
  return lease[begin]();
}

/**
 * Runs `fn(lease)` under a lease: acquires it, awaits `fn`, always releases, and returns what `fn` returned.
 * If the lease was lost or had to stop meanwhile, rejects with that LOCK_LOST even when `fn` succeeded;
 * if `fn` threw, rejects with what it threw.
 * @template T
 * @param {{transact: Function}} store
 * @param {object} options as for acquireLease
 * @param {(lease: Lease) => T | Promise<T>} fn
 * @returns {Promise<T>}
 */
async function withLease(store, options, fn) {
  if (typeof fn !== 'function') {
    throw hostError('USAGE', 'withLease needs the work to do: withLease(store, options, async (lease) => { ... })');
  }
  return runUnder(await acquireLease(store, options), fn);
}

/** The rest of withLease, once the lease is acquired: fn, the run's finish (if any), the release. */
async function runUnder(lease, fn) {
  let result;
  let finishError = null;
  try {
    try {
      result = await fn(lease);
    } catch (e) {
      // The run's receipt says it failed; what fn threw is the error either way.
      if (lease[unfinished]()) await lease.finish('failed').catch(() => {});
      throw e;
    }
    if (lease[unfinished]()) {
      try {
        await lease.finish('complete');
      } catch (e) {
        finishError = e;
      }
    }
  } finally {
    await lease.release();
  }
  if (lease.signal.aborted) throw lease.signal.reason;
  if (finishError) throw finishError;
  return result;
}

module.exports = { acquireLease, withLease, runUnder, startLease, Lease, fenced };
