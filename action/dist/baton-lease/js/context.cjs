'use strict';
/**
 * Scopes and CI context detection. The core decides everything (sources, precedence, the scope rule); this
 * file only gathers the inputs: the environment map, the GitHub event file, and local git when asked.
 */
const fs = require('node:fs');
const path = require('node:path');
const { call } = require('./core.cjs');
const wasm = require('../pkg/baton_node.js');
const { fromThrown } = require('./errors.cjs');
const { gitFacts } = require('./git.cjs');

/**
 * The scope of a run on `branch`, in pull request `pr` if any: `pr-<n>`, `main`, or `branch-<name>`.
 * @param {string} branch
 * @param {number | null} [pr]
 * @param {string | null} [defaultBranch]
 * @returns {string}
 */
function scopeFor(branch, pr = null, defaultBranch = null) {
  const typed = typeof branch === 'string' && (pr == null || typeof pr === 'number') &&
    (defaultBranch == null || typeof defaultBranch === 'string');
  // Anything else gets the operation's own refusal (INTERNAL, naming the field).
  if (!typed) return call('scope-for', { branch, pr, defaultBranch }).scope;
  try {
    return wasm.scopeFor(branch, pr ?? undefined, defaultBranch ?? undefined);
  } catch (e) {
    throw fromThrown(e);
  }
}

/** The string-valued entries of an environment map (undefined values dropped). */
function stringVars(env) {
  const vars = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') vars[k] = v;
  return vars;
}

/** The parsed JSON of `GITHUB_EVENT_PATH`, or undefined when unset, unreadable or not JSON. */
function readEvent(vars, cwd) {
  const file = vars.GITHUB_EVENT_PATH;
  if (!file || !file.trim()) return undefined;
  try {
    return JSON.parse(fs.readFileSync(path.resolve(cwd, file.trim()), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Detects the context of this run (env, branch, sha, pr, defaultBranch, scope). Call it once at the start
 * of a CI step; pass `overrides` for values given explicitly (they beat every variable). Local git (and
 * `gh`) are asked only when the variables leave the branch or commit unknown. Throws BatonError `CTX_NULL`
 * when no branch can be found and `USAGE` for a bad override. With `envOnly` (for work on a whole
 * environment, like listing its receipts) a missing branch is no error: the context has `scope` and
 * `branch` null.
 * @param {{env?: Record<string, string | undefined>, overrides?: object, cwd?: string, envOnly?: boolean}} [opts]
 */
function detectContext(opts = {}) {
  const cwd = opts.cwd ?? process.cwd();
  const vars = stringVars(opts.env ?? process.env);
  const request = { overrides: { ...(opts.overrides ?? {}) }, vars, envOnly: opts.envOnly === true };
  // `pr: undefined` is "not given", which JSON.stringify already expresses by dropping the key.
  const event = readEvent(vars, cwd);
  if (event !== undefined) request.event = event;
  let answer = call('detect-context', request);
  if (answer.status === 'needs-git') {
    answer = call('detect-context', { ...request, git: gitFacts(cwd, answer.askPr) });
  }
  return answer.context;
}

module.exports = { scopeFor, detectContext };
