'use strict';
/**
 * The host loop of one run (the core's run machine, core/src/run, as the wasm-bindgen class `Run`). Every
 * decision of the run is the machine's: approval, the holder's name, the lease, the checkpoint receipt with
 * the predecessor's read first, when the work starts, when it must stop and when it is given up, the final
 * receipt, the handover, the release, and the verdict. This file only carries its actions out:
 *
 *   wake up (the timer, a store completion, the work ending, a signal, a call of the caller) -> read the
 *   monotonic clock -> make ONE call into the machine -> drain pollAction() -> arm ONE timer for
 *   pollTimeout() -> carry out the drained actions.
 *
 * Actions: `store` (one `store.transact` on the run's own cell or the one named), `read` (one
 * `store.read`, a transaction for a store without one), `start-work`, `signal` (for the work), `note`,
 * `warning`, `lease` (events), `finished` (manual mode) and `done` (the verdict). The host's hooks say what
 * starting, signalling and ending mean for its caller (see run-lease.cjs); none of them decides anything.
 */
const wasm = require('../pkg/baton_node.js');
const { monotonicNow, MAX_DELAY_MS, asBatonError, errorObject } = require('./loop.cjs');
const { enlist } = require('./cancel.cjs');

/**
 * What the loop calls, each with the action's payload. All optional but `done`.
 * @typedef {object} RunHooks
 * @property {(action: {env: Record<string, string>, epoch: number, delete?: object[], label: string}) => void} [startWork]
 * @property {(signal: 'interrupt' | 'terminate' | 'kill') => void} [signal]
 * @property {(text: string) => void} [note]
 * @property {(text: string) => void} [warning]
 * @property {(event: any) => void} [lease]
 * @property {(outcome: any) => void} [finished]
 * @property {(answer: any) => void} [answer] an answer of a transaction on the run's own cell
 * @property {(error: any) => void} [refused] a refusal of a transaction on the run's own cell
 * @property {(cell: {env: string, scope: string}) => void} [read] a read of another cell (the predecessor)
 * @property {(verdict: {exit: number, ok: boolean, error?: any, fields: any}) => void} done
 */

class RunLoop {
  /** @type {import('../pkg/baton_node.js').Run | null} */
  #run;
  #store;
  /** @type {RunHooks} */
  #hooks;
  /** @type {ReturnType<typeof setTimeout> | null} */
  #timer = null;
  #keepAlive = true;
  /** Ends the hand-over of the process's signals, when handled. */
  #discharge = null;

  /**
   * Creates the machine: throws (BatonError) ENV_NOT_APPROVED, USAGE or INTERNAL before anything is locked.
   * @param {{transact: Function, read?: Function}} store
   * @param {object} config the machine's configuration (core RunConfig, camelCase)
   * @param {RunHooks} hooks
   */
  constructor(store, config, hooks) {
    try {
      this.#run = new wasm.Run(config);
    } catch (e) {
      throw asBatonError(e, 'the run machine failed');
    }
    this.#store = store;
    this.#hooks = hooks;
    /** The holder name of the run's lock (the machine's choice unless people named one). */
    this.holder = this.#run.holder;
    /** The run's own cell. */
    this.env = this.#run.env;
    this.scope = this.#run.scope;
  }

  /**
   * Starts the run; with `handleSignals`, the process's SIGINT/SIGTERM go to the machine until it is done
   * (then the process exits 128 + n, see cancel.cjs).
   */
  start(handleSignals) {
    if (handleSignals) this.#discharge = enlist((signal) => this.command((r, now) => r.signal(signal, now)));
    this.#step((r, now) => r.start(now));
  }

  /**
   * One command of the caller (finish, release, work-ended, signal): the machine's refusal (USAGE for a
   * finish of a run that is not open) is thrown to the caller, the run goes on.
   * @param {(run: import('../pkg/baton_node.js').Run, now: number) => void} call
   */
  command(call) {
    this.#step(call, true);
  }

  /** The fencing token now, or undefined (also once the run is over). */
  token() {
    return this.#run?.fencingToken(monotonicNow());
  }

  /** The latest instant (monotonic ms) a store operation of the run started now may run until. */
  storeDeadline() {
    return this.#run?.storeDeadline(monotonicNow());
  }

  /** Whether the timer keeps Node alive. */
  keepAlive(on) {
    this.#keepAlive = on;
    if (on) this.#timer?.ref();
    else this.#timer?.unref();
  }

  /** One turn (see the file comment). A refusal of an input (a bug) ends the run with INTERNAL. */
  #step(call, rethrow = false) {
    const run = this.#run;
    if (run === null) return;
    const actions = [];
    try {
      call(run, monotonicNow());
    } catch (e) {
      if (rethrow) throw asBatonError(e, 'the run machine failed');
      return this.#fail(e);
    }
    try {
      for (let action = run.pollAction(); action !== undefined; action = run.pollAction()) actions.push(action);
      this.#arm(run.pollTimeout());
    } catch (e) {
      return this.#fail(e);
    }
    for (const action of actions) this.#carryOut(action);
  }

  #carryOut(action) {
    const hooks = this.#hooks;
    switch (action.type) {
      case 'store': {
        const own = action.cell === undefined;
        const cell = action.cell ?? { env: this.env, scope: this.scope };
        this.#perform(action.id, own, () => this.#store.transact(cell, action.op, action.request, { deadline: action.deadlineMs }));
        break;
      }
      case 'read': {
        const store = this.#store;
        hooks.read?.(action.cell);
        const read = typeof store.read === 'function' ? store.read.bind(store) : store.transact.bind(store);
        this.#perform(action.id, false, () => read(action.cell, action.op, action.request, { deadline: action.deadlineMs }));
        break;
      }
      case 'start-work':
        hooks.startWork?.(action);
        break;
      case 'signal':
        hooks.signal?.(action.signal);
        break;
      case 'note':
        hooks.note?.(action.text);
        break;
      case 'warning':
        hooks.warning?.(action.text);
        break;
      case 'lease':
        hooks.lease?.(action.event);
        break;
      case 'finished':
        hooks.finished?.(action.outcome);
        break;
      case 'done':
        this.#stop();
        hooks.done(action.verdict);
        break;
      default:
        this.#fail(new Error(`unknown action ${JSON.stringify(action)}`));
    }
  }

  /** One store operation, its outcome fed back to the machine (a turn of its own). */
  #perform(id, own, operation) {
    Promise.resolve()
      .then(operation)
      .then(
        (answer) => {
          if (own) this.#hooks.answer?.(answer);
          return { ok: answer };
        },
        (e) => {
          const error = errorObject(e);
          if (own) this.#hooks.refused?.(error);
          return { error };
        },
      )
      .then((result) => this.#step((r, now) => r.handleStoreResult(id, result, now)));
  }

  /** Replaces the timer with one for `at` (monotonic ms), or none. */
  #arm(at) {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (at === undefined) return;
    const delay = Math.min(Math.max(0, at - monotonicNow()), MAX_DELAY_MS);
    // A timer may fire a millisecond early by this clock: a spurious wake-up, the deadline comes again.
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#step((r, now) => r.handleTimeout(now));
    }, delay);
    if (!this.#keepAlive) this.#timer.unref();
  }

  /** The machine refused an input or broke its contract (a bug): the run ends with INTERNAL. */
  #fail(e) {
    this.#stop();
    const error = errorObject(asBatonError(e, 'the run machine failed'));
    this.#hooks.done({ exit: 1, ok: false, error, fields: {} });
  }

  /** Stops for good: no timer, no signal handlers, the machine's memory freed. */
  #stop() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#run?.free();
    this.#run = null;
    this.#discharge?.();
  }
}

module.exports = { RunLoop };
