'use strict';
/**
 * Leases that carry a run: `withLease`/`acquireLease` with `context` (job `run`), `destroy` (job
 * `destroy`) and the parent-object leases (job `object`), all driven by the core's run machine through
 * run-loop.cjs. This file is what the machine's actions mean for a Node caller: `start-work` calls the
 * callback (or, in manual mode, resolves the acquire), a `signal` aborts `lease.signal`, `kill` gives the
 * callback up (it cannot be killed: the machine is told it ended with signal 9), `done` settles with the
 * verdict. The fenced writes and ledger operations the work uses are fenced-run.cjs's.
 */
const { fromErrorJson } = require('./errors.cjs');
const { hostError } = require('./core.cjs');
const { asBatonError, notify, deferred, AcquirePromise } = require('./loop.cjs');
const { RunLoop } = require('./run-loop.cjs');
const { FencedRun, held, open, stop, warn, stopped, deadline } = require('./fenced-run.cjs');

/** A lease on a cell's lock carrying a run (or a parent object's lock). Obtain one from `acquireLease`, `withLease`, ... */
class RunLease extends FencedRun {
  #loop;
  #options;
  /** @type {'acquiring' | 'held' | 'ending' | 'done'} */
  #phase = 'acquiring';
  #observed = false;
  #manual;
  /** Whether a cancel signal came (the timer then keeps Node alive until the run is done). */
  #cancelling = false;
  /** The run's state for the ledger operations: `open`, `finishing` or `finished`. */
  #state = 'open';
  /** The pending finish: its promise and settle functions. */
  #finish = null;
  #released = deferred();
  #releaseResult = { released: false };
  /** Why the acquire was given up (onWait threw), to reject with. */
  #cancelled = null;
  /** Settles the acquire (manual) or the whole call (callback mode). */
  #settle;
  #work;
  /** The callback's outcome: `{value}` or `{thrown}`, once it settled. */
  #outcome = null;
  #givenUp = false;
  #result;

  /**
   * @param {object} store @param {object} config the run machine's configuration @param {object} options
   * @param {((start: object, lease: RunLease) => unknown) | undefined} work the callback; none: manual mode
   * @param {(value: unknown, lease: RunLease) => unknown} [result] what a successful run resolves with
   */
  constructor(store, config, options, work, result = (value) => value) {
    const loop = new RunLoop(store, config, {
      startWork: (action) => this.#started(action),
      signal: (signal) => this.#signalled(signal),
      note: (text) => notify(options.onNote, text),
      warning: (text) => this[warn](text),
      lease: (event) => this.#onLease(event),
      finished: (outcome) => this.#finished(outcome),
      answer: (answer) => {
        // A batch (`cell-steps`) answers each of its steps: the receipt is the last one written.
        for (const a of answer?.answers ?? [answer]) if (a && a.receipt) this.receipt = a.receipt;
      },
      refused: (error) => {
        if (error.code === 'LOCK_LOST') this[stop](fromErrorJson(error));
      },
      read: (cell) => {
        this.predecessor = cell.scope;
      },
      done: (verdict) => this.#done(verdict),
    });
    const context = config.job === 'object' ? null : config.context;
    super(store, { env: loop.env, scope: loop.scope, holder: loop.holder, context }, options.onWarning);
    this.#loop = loop;
    this.#result = result;
    this.#options = options;
    this.#work = work;
    this.#manual = work === undefined;
    /** The run's verdict (`{exit, ok, error?, fields}`, as the CLI's), once it is over. */
    this.verdict = null;
  }

  /** Starts the run; the promise of `acquireLease` (manual) or of `withLease`/`destroy` (callback). */
  start() {
    const pending = AcquirePromise.withObserver(() => {
      this.#observed = true;
      this.#keepAliveAsNeeded();
    });
    this.#settle = pending;
    this.#keepAliveAsNeeded();
    this.#loop.start(!this.#manual && this.#options.handleSignals !== false);
    // A call with a callback is awaited for its outcome: a plain promise (observed, so its waits keep Node alive).
    return this.#manual ? pending.promise : pending.promise.then((v) => v);
  }

  #started(action) {
    this.#phase = 'held';
    this.#keepAliveAsNeeded();
    if (this.#manual) return this.#settle.resolve(this);
    Promise.resolve()
      .then(() => this.#work(action, this))
      .then(
        (value) => ({ value }),
        (thrown) => ({ thrown }),
      )
      .then((outcome) => this.#workSettled(outcome));
  }

  async #workSettled(outcome) {
    if (this.#givenUp) return;
    this.#outcome = outcome;
    this.#phase = 'ending';
    this.#keepAliveAsNeeded();
    if (this.#finish !== null) {
      // The work finished the run itself: end it once that finish settled.
      const finished = await this.#finish.promise.then(() => true, () => false);
      if (finished) return this.#loop.command((r, now) => r.release(now));
    }
    const code = 'thrown' in outcome ? 1 : 0;
    try {
      this.#loop.command((r, now) => r.workEnded({ kind: 'exited', code }, now));
    } catch {
      // Refused: the work ended the run its own way (a finish that did not land, kept open): end it.
      this.#loop.command((r, now) => r.release(now));
    }
  }

  #signalled(signal) {
    if (signal !== 'kill') {
      this.#cancelling = true;
      this.#keepAliveAsNeeded();
      return this[stop](hostError('INTERRUPTED', `The run on ${this.env}/${this.scope} is being cancelled; stop the work now.`));
    }
    // A callback cannot be killed: it is given up, and the machine told it ended as killed.
    if (this.#outcome !== null) return;
    this.#givenUp = true;
    this.#phase = 'ending';
    this.#keepAliveAsNeeded();
    this.#loop.command((r, now) => r.workEnded({ kind: 'signalled', signal: 9 }, now));
  }

  #onLease(event) {
    switch (event.kind) {
      case 'acquired':
        this.epoch = event.epoch;
        this.lock = event.lock;
        this.preempted = event.preempted;
        break;
      case 'waiting':
        if (this.#cancelled === null && typeof this.#options.onWait === 'function') {
          const { holder, expiresAt, waitedMs, remainingMs } = event;
          try {
            this.#options.onWait({ holder, expiresAt, waitedMs, remainingMs });
          } catch (e) {
            // Giving up: the acquire rejects with what onWait threw.
            this.#cancelled = e;
            queueMicrotask(() => this.#loop.command((r, now) => r.release(now)));
          }
        }
        break;
      case 'renewed':
        this.lock = event.lock;
        break;
      case 'lost':
      case 'must-stop':
        this[stop](fromErrorJson({ ...event.error, graceMs: event.graceMs }));
        break;
      case 'released':
        this.#releaseResult = { released: event.released };
        break;
      case 'release-failed':
        this.#releaseResult = { released: false, warning: event.warning };
        break;
      default:
        break;
    }
    notify(this.#options.onEvent, event);
  }

  #finished(outcome) {
    const pending = this.#finish;
    if (outcome.error) {
      // The final receipt did not land: refused (the run is still open, a retry may finish it), or the lease
      // is lost (LOCK_LOST: every further write fails the same way).
      this.#state = 'open';
      this.#finish = null;
      return pending?.reject(fromErrorJson(outcome.error));
    }
    this.#state = 'finished';
    pending?.resolve(outcome);
  }

  #done(verdict) {
    const wasAcquiring = this.#phase === 'acquiring';
    this.verdict = verdict;
    this.#phase = 'done';
    this.#keepAliveAsNeeded();
    this.#finish?.reject(this.#lostError());
    this.#released.resolve(this.#releaseResult);
    const error = () => (verdict.error ? fromErrorJson(verdict.error) : hostError('INTERNAL', 'the run ended without a verdict'));
    if (this.#manual) {
      if (wasAcquiring) this.#settle.reject(this.#cancelled ?? error());
    } else if (verdict.ok) {
      this.#settle.resolve(this.#result(this.#outcome?.value, this));
    } else if (this.#cancelled) {
      this.#settle.reject(this.#cancelled);
    } else if (this.#outcome && 'thrown' in this.#outcome && verdict.error?.code === 'COMMAND_FAILED') {
      this.#settle.reject(this.#outcome.thrown);
    } else {
      this.#settle.reject(error());
    }
  }

  #keepAliveAsNeeded() {
    const waiting = this.#phase === 'acquiring' && (this.#observed || !this.#manual);
    this.#loop.keepAlive(waiting || this.#phase === 'ending' || this.#cancelling);
  }

  #lostError() {
    return this[stopped] ?? hostError('LOCK_LOST', `The lease on ${this.env}/${this.scope} is no longer held; nothing may be written under it.`);
  }

  /** When a store operation of the work started now must have ended (the core's `storeDeadline`). */
  [deadline]() {
    return this.#loop.storeDeadline();
  }

  /** The fencing token now; past the deadline before the timer fired (a busy loop), the machine sees the time first. */
  [held]() {
    const token = this.#loop.token();
    if (token !== undefined || this.#phase !== 'held') return token;
    this.#loop.command((r, now) => r.handleTimeout(now));
    return this.#loop.token();
  }

  /** The run, refused (USAGE) when there is none or it has finished. */
  [open](what) {
    if (this.context === null) {
      throw hostError('USAGE', `lease.${what} records ownership in the run's receipt: acquire the lease with \`context\` (or \`ownership: true\`)`);
    }
    if (this.#state !== 'open') {
      throw hostError('USAGE', `lease.${what}: the run on ${this.env}/${this.scope} has finished; its receipt is final`);
    }
  }

  /**
   * Ends the run (the machine writes the final receipt and hands over after a complete one), keeping the
   * lease until `release()`. Resolves `{status, unresolved, receipt, handedOver, warnings}`; again: the same.
   * @param {'complete' | 'failed'} status
   */
  finish(status) {
    if (this.#finish !== null) return this.#finish.promise;
    try {
      if (this.context === null) this[open]('finish');
      if (status !== 'complete' && status !== 'failed') {
        throw hostError('USAGE', `lease.finish takes 'complete' or 'failed', got ${String(status)}`);
      }
      if (this.#state === 'open') this.assertHeld();
      this.#finish = deferred();
      this.#loop.command((r, now) => r.finish(status === 'complete', now));
    } catch (e) {
      this.#finish = null;
      return Promise.reject(e);
    }
    this.#state = 'finishing';
    return this.#finish.promise;
  }

  /** Ends the lease: the machine releases the lock. Never rejects; the same promise every time. */
  release() {
    if (this.#phase === 'held') {
      this.#phase = 'ending';
      this.#keepAliveAsNeeded();
    }
    const release = () => this.#loop.command((r, now) => r.release(now));
    // A finish in flight lands first (the machine then holds the lease until this release).
    if (this.#state === 'finishing') this.#finish?.promise.then(release, release);
    else release();
    return this.#released.promise;
  }
}

/**
 * Starts a run of `job` under the options: manual mode without `work` (resolves with the lease once the
 * work may start), else resolves or rejects with the verdict.
 */
function startRun(store, options, job, { object, work, result } = {}) {
  let lease;
  try {
    if (store === null || typeof store !== 'object' || typeof store.transact !== 'function') {
      throw hostError('USAGE', 'a lease needs a store (from openStore()) as its first argument');
    }
    if (job !== 'object' && typeof store.list !== 'function') {
      throw hostError('USAGE', 'a lease with ownership needs a store that can list scopes (`list(env)`), as openStore() gives');
    }
    const { runConfig } = require('./options.cjs');
    lease = new RunLease(store, runConfig(options, job, object), options, work, result);
  } catch (e) {
    return Promise.reject(asBatonError(e, 'the lease could not start'));
  }
  return lease.start();
}

module.exports = { RunLease, startRun };
