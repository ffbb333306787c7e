'use strict';
/**
 * The options of the lease functions, checked for their types (USAGE) and turned into the machines'
 * configurations. Names, timing and approval are the core's to judge (it answers USAGE or ENV_NOT_APPROVED
 * too), and so is the holder's name when none is given: the host passes randomness, the core names.
 */
const { randomBytes } = require('node:crypto');
const wasm = require('../pkg/baton_node.js');
const { call, hostError } = require('./core.cjs');
const { asBatonError } = require('./loop.cjs');
const { runContext } = require('./ownership.cjs');

const NUMBER_OPTIONS = ['ttlMs', 'marginMs', 'renewEveryMs', 'waitTimeoutMs', 'pollMs', 'cancelGraceMs'];
const STRING_OPTIONS = ['env', 'scope', 'holder', 'label', 'approvedBy'];
const BOOLEAN_OPTIONS = ['wait', 'ownership', 'handleSignals'];
const CALLBACK_OPTIONS = ['onWait', 'onEvent', 'onWarning', 'onNote'];
const KNOWN_OPTIONS = [...STRING_OPTIONS, ...NUMBER_OPTIONS, ...BOOLEAN_OPTIONS, 'context', ...CALLBACK_OPTIONS];
/** What only a run has (a plain lease refuses them). */
const RUN_OPTIONS = ['onNote', 'handleSignals', 'cancelGraceMs'];
/** The timing options the machines take as they are. */
const TIMING = ['ttlMs', 'marginMs', 'renewEveryMs', 'waitTimeoutMs', 'pollMs', 'wait'];

const usage = (message) => hostError('USAGE', message);

/** Fresh randomness for the core, as it takes it: 40 hex digits (8 name a holder, 32 key a receipt). */
const fresh = () => randomBytes(20).toString('hex');

/** Checks the types of `options` (USAGE); unknown options are refused. */
function checkOptions(options) {
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
}

/** Whether the options ask for a run (a receipt): `context`, or `ownership: true`. Checks the types first. */
function isRun(options) {
  checkOptions(options);
  return options.ownership ?? options.context !== undefined;
}

/** The run context of the options: `context`, or `{env, scope}` (USAGE when they disagree or are missing). */
function contextOf(options) {
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
  return context ?? runContext({ env, scope });
}

/**
 * The run machine's configuration (core RunConfig) for `job` (`run`, `destroy`, `object`, `acquire`).
 * @param {object} options checked lease options
 * @param {string} job
 * @param {{identity: string, secrets: string[]}} [object] the parent object, for `object`
 */
function runConfig(options, job, object = undefined) {
  const config = { job, random: fresh() };
  if (object === undefined) config.context = contextOf(options);
  else config.object = object;
  for (const key of ['holder', 'approvedBy', 'cancelGraceMs', ...TIMING]) {
    if (options[key] !== undefined) config[key] = options[key];
  }
  return config;
}

/**
 * The lease machine's configuration of a plain lease (no run, no receipt). The core checks it as it checks
 * `baton lock acquire` (the run machine's `acquire` job: names, timing, approval for production) and
 * names the holder when none is given; that name is this lease's alone (`uniqueHolder`).
 */
function leaseConfig(options) {
  for (const key of RUN_OPTIONS) {
    if (options[key] !== undefined) throw usage(`the lease option \`${key}\` applies to runs: pass \`context\` (or \`ownership: true\`) too`);
  }
  const acquire = runConfig(options, 'acquire');
  if (options.approvedBy !== undefined && !call('approval', { env: acquire.context.env, approvedBy: options.approvedBy }).required) {
    throw usage("the lease option `approvedBy` is recorded in the run's receipt: pass `context` (or `ownership: true`) too");
  }
  let holder;
  try {
    const probe = new wasm.Run(acquire);
    holder = probe.holder;
    probe.free();
  } catch (e) {
    throw asBatonError(e, 'the lease configuration failed');
  }
  const named = options.holder !== undefined && options.holder !== null;
  const { env, scope } = acquire.context;
  const config = { env, scope, holder: named ? options.holder : holder, uniqueHolder: !named };
  for (const key of ['label', ...TIMING]) if (options[key] !== undefined) config[key] = options[key];
  return config;
}

module.exports = { checkOptions, isRun, runConfig, leaseConfig, contextOf };
