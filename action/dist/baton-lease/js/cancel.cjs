'use strict';
/**
 * The process's cancel signals (SIGINT, SIGTERM) while runs are going on: each is handed to every run
 * in progress (the run machine decides what follows: abort, grace, give the work up, the final receipt,
 * the release). Once the last of them is done, the signal's default behaviour is restored and carried
 * out: the process exits with 128 + the first signal's number (130, 143), as it would have without baton.
 *
 * Handlers are installed only while at least one run asked for them (`handleSignals`, default on), and
 * removed when the last one ends; with no run in progress a signal behaves as Node's default.
 */
const { constants } = require('node:os');

const NAMES = { SIGINT: 'interrupt', SIGTERM: 'terminate' };

/** The runs to tell, each a function taking `interrupt` or `terminate`. */
const runs = new Set();
/** The first signal received while runs were going on, or null. */
let received = null;

/** The exit code of a process cancelled by `received`. */
const exitCode = () => 128 + constants.signals[received];

/**
 * Once cancelled, an unhandled rejection (the run's own INTERRUPTED nobody awaited, or work that rejected
 * when its signal aborted) must neither end the process with 1 while a run still winds down, nor change
 * the exit code: it ends the process with the signal's code once no run is left.
 */
function onUnhandled() {
  if (runs.size === 0) process.exit(exitCode());
}

function onSignal(signal) {
  if (received === null) {
    received = signal;
    process.on('unhandledRejection', onUnhandled);
  }
  for (const tell of [...runs]) tell(NAMES[signal]);
}

function install(on) {
  for (const signal of Object.keys(NAMES)) {
    if (on) process.on(signal, onSignal);
    else process.removeListener(signal, onSignal);
  }
}

/**
 * Hands the process's SIGINT/SIGTERM to `tell` until the returned function is called (when the run is
 * done). The last run to end exits the process with 128 + n if a signal came meanwhile.
 * @param {(signal: 'interrupt' | 'terminate') => void} tell
 * @returns {() => void}
 */
function enlist(tell) {
  if (runs.size === 0) install(true);
  runs.add(tell);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    runs.delete(tell);
    if (runs.size > 0) return;
    install(false);
    if (received !== null) {
      const code = exitCode();
      // After the caller's settle callbacks of this turn ran (they may log what happened).
      setImmediate(() => process.exit(code));
    }
  };
}

module.exports = { enlist };
