'use strict';
/**
 * Plain leases (no run, no receipt): a cell's lock held for the duration of some work, renewed in the
 * background, released at the end, with an AbortSignal that fires when the work must stop. A lease that
 * carries a run (`context`) is the run machine's (run-lease.cjs, run-loop.cjs).
 *
 * A plain lease stays on the lease machine: it has no receipt and no work the core would start, stop or
 * judge, so the run machine's job for it (`acquire`) would end with the lock held and leave the renewals
 * to the host; the lease machine already decides them. The core still names its holder and judges its
 * options as for `baton lock acquire` (options.cjs).
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
const wasm = require('../pkg/baton_node.js');
const { fromErrorJson } = require('./errors.cjs');
const { hostError } = require('./core.cjs');
const { monotonicNow, MAX_DELAY_MS, asBatonError, errorObject, rethrowLater, deferred, AcquirePromise } = require('./loop.cjs');
const { isRun, leaseConfig } = require('./options.cjs');
const { startRun } = require('./run-lease.cjs');

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
      for (let action = machine.pollAction(); action !== undefined; action = machine.pollAction()) {
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
      .then((result) => this.step((m, now) => m.handleStoreResult(id, result, now)));
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

const begin = Symbol('begin');

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

  /**
   * @param {object} store @param {ReturnType<typeof leaseConfig>} config @param {object} callbacks
   */
  constructor(store, config, callbacks) {
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
    /** The run's context (ownership), or null. */
    /** A plain lease has no run: null. */
    this.context = null;
    this.predecessor = null;
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

  /** Refuses (USAGE) what only a lease that carries a run can do. */
  #noRun(what) {
    return Promise.reject(
      hostError('USAGE', `lease.${what} records ownership in the run's receipt: acquire the lease with \`context\` (or \`ownership: true\`)`),
    );
  }

  intend() {
    return this.#noRun('intend');
  }

  record() {
    return this.#noRun('record');
  }

  forget() {
    return this.#noRun('forget');
  }

  check() {
    return this.#noRun('check');
  }

  finish() {
    return this.#noRun('finish');
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
        this.#acquiring?.resolve(this);
        this.#acquiring = null;
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
  #end(result, acquireError = undefined) {
    this.#phase = 'done';
    // The error is built only for an acquire still pending (not on every release: an Error costs its stack).
    this.#acquiring?.reject(this.#cancelled ?? acquireError ?? hostError('INTERNAL', 'the lease ended before it was acquired'));
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
 * LOCK_CORRUPT, a store failure, or USAGE for bad options. With `context` (or `ownership: true`) the lease
 * carries a run (run-lease.cjs): resolves once its checkpoint receipt landed.
 * @param {{transact: Function}} store a store from openStore()
 * @param {object} options
 */
function acquireLease(store, options) {
  let lease;
  try {
    if (isRun(options)) return startRun(store, options, 'run');
    if (store === null || typeof store !== 'object' || typeof store.transact !== 'function') {
      throw hostError('USAGE', 'acquireLease needs a store (from openStore()) as its first argument');
    }
    const { onWait, onEvent, onWarning } = options;
    lease = new Lease(store, leaseConfig(options), { onWait, onEvent, onWarning });
  } catch (e) {
    return Promise.reject(asBatonError(e, 'acquireLease failed'));
  }
  return lease[begin]();
}

/**
 * Runs `fn(lease)` under a lease: acquires it, awaits `fn`, always releases, and returns what `fn` returned.
 * A plain lease: if it was lost or had to stop meanwhile, rejects with that LOCK_LOST even when `fn`
 * succeeded; if `fn` threw, rejects with what it threw. A run (`context`): the core's run machine decides
 * the verdict, as for `baton run` (see run-lease.cjs), and the process's SIGINT/SIGTERM cancel it.
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
  let run;
  try {
    run = isRun(options);
  } catch (e) {
    throw asBatonError(e, 'withLease failed');
  }
  if (run) return startRun(store, options, 'run', { work: (_start, lease) => fn(lease) });
  return runUnder(await acquireLease(store, options), fn);
}

/** The rest of a plain withLease, once the lease is acquired: fn, then the release. */
async function runUnder(lease, fn) {
  let result;
  try {
    result = await fn(lease);
  } finally {
    await lease.release();
  }
  if (lease.signal.aborted) throw lease.signal.reason;
  return result;
}

module.exports = { acquireLease, withLease, Lease };
