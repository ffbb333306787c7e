'use strict';
/**
 * What the two host loops (the lease's in lease.cjs, the run's in run-loop.cjs) share: the monotonic clock
 * the machines take, the longest timer, and how a failure becomes the core's error object.
 */
const { BatonError, fromThrown } = require('./errors.cjs');
const { hostError } = require('./core.cjs');

/** The host's monotonic clock in whole milliseconds, as the machines take it. */
const monotonicNow = () => Math.floor(performance.now());

/** The longest delay setTimeout honours; a later deadline is reached in several (spurious) wake-ups. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** `e` as a BatonError: itself, or INTERNAL saying what failed (a custom store broke its contract). */
function asBatonError(e, what) {
  if (e instanceof BatonError) return e;
  if (e && typeof e.json === 'string') return fromThrown(e); // a refusal of the wasm machine
  return hostError('INTERNAL', `${what}: ${e && e.message ? e.message : String(e)}`, {}, e);
}

/** A failed store transaction as the machines take it: the core's error object `{code, message, ...}`. */
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

/** Calls a caller's callback; a throw is the caller's bug, rethrown asynchronously. */
function notify(callback, ...args) {
  if (typeof callback !== 'function') return;
  try {
    callback(...args);
  } catch (e) {
    rethrowLater(e);
  }
}

/** A resolvable promise. */
function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
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

module.exports = { monotonicNow, MAX_DELAY_MS, asBatonError, errorObject, rethrowLater, notify, deferred, AcquirePromise };
