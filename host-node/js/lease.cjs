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
const { hostError } = require('./core.cjs');

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

  /** Performs store action `id` as one transaction and feeds its outcome back (a turn of its own). */
  #send({ id, op, request }) {
    Promise.resolve()
      .then(() => this.#perform(op, request))
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
const STRING_OPTIONS = ['env', 'scope', 'holder', 'label'];
const CALLBACK_OPTIONS = ['onWait', 'onEvent', 'onWarning'];
const KNOWN_OPTIONS = [...STRING_OPTIONS, ...NUMBER_OPTIONS, 'wait', ...CALLBACK_OPTIONS];

/**
 * The machine's configuration from the options. Only the types are checked here (USAGE); names and timing
 * are the core's to judge (it answers USAGE too).
 */
function leaseConfig(options) {
  const usage = (message) => hostError('USAGE', message);
  if (options === null || typeof options !== 'object') throw usage('a lease needs its options: {env, scope, ...}');
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (!KNOWN_OPTIONS.includes(key)) throw usage(`unknown lease option \`${key}\`; known: ${KNOWN_OPTIONS.join(', ')}`);
    if (STRING_OPTIONS.includes(key) && typeof value !== 'string') throw usage(`the lease option \`${key}\` must be a string`);
    if (NUMBER_OPTIONS.includes(key) && !(Number.isSafeInteger(value) && value >= 0)) {
      throw usage(`the lease option \`${key}\` must be a whole number of milliseconds >= 0, got ${String(value)}`);
    }
    if (key === 'wait' && typeof value !== 'boolean') throw usage('the lease option `wait` must be a boolean');
    if (CALLBACK_OPTIONS.includes(key) && typeof value !== 'function') throw usage(`the lease option \`${key}\` must be a function`);
  }
  if (options.env === undefined || options.scope === undefined) {
    throw usage('a lease needs `env` and `scope` (for example those detectContext() found)');
  }
  const config = { env: options.env, scope: options.scope, holder: options.holder ?? `run-${randomBytes(4).toString('hex')}` };
  for (const key of ['label', ...NUMBER_OPTIONS, 'wait']) if (options[key] !== undefined) config[key] = options[key];
  return config;
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

  /** @param {object} store @param {ReturnType<typeof leaseConfig>} config @param {object} callbacks */
  constructor(store, config, callbacks) {
    let machine;
    try {
      machine = new wasm.Lease(JSON.stringify(config));
    } catch (e) {
      throw asBatonError(e, 'the lease machine failed');
    }
    this.#store = store;
    this.#cell = { env: config.env, scope: config.scope };
    this.#callbacks = callbacks;
    this.#loop = new HostLoop(
      machine,
      (op, request) => store.transact(this.#cell, op, request),
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
      const answer = await this.#store.transact(this.#cell, 'fenced-write', { holder: this.holder, epoch, file, content });
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
  let lease;
  try {
    if (store === null || typeof store !== 'object' || typeof store.transact !== 'function') {
      throw hostError('USAGE', 'acquireLease needs a store (from openStore()) as its first argument');
    }
    const config = leaseConfig(options);
    const { onWait, onEvent, onWarning } = options;
    lease = new Lease(store, config, { onWait, onEvent, onWarning });
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
  const lease = await acquireLease(store, options);
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
