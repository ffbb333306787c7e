'use strict';
/**
 * `gc(store, options)`: the scopes of an environment whose reason to exist is gone, as `baton gc` lists
 * them, and with `destroy`, their destroy runs. The core decides which scopes are abandoned (`gc-plan`:
 * a `pr-<n>` whose pull request is not open, a `branch-<name>` whose branch is gone from the remote and
 * that no pull request succeeded); this file gathers the facts (the store's list, the open pull requests,
 * `git ls-remote --heads`) and runs `destroy` for each, under each scope's own lease.
 */
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const { call, hostError } = require('./core.cjs');
const { asBatonError, errorObject } = require('./loop.cjs');
const { destroy } = require('./destroy.cjs');

/** How long `gh pr list` and `git ls-remote` may take (every wait has a bound). */
const ASK_TIMEOUT_MS = 60_000;

/** Runs `program args` in `cwd` (at most ASK_TIMEOUT_MS); resolves with stdout, rejects saying `what` failed. */
function ask(program, args, what, cwd) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, GIT_TERMINAL_PROMPT: '0' };
    execFile(program, args, { cwd, env, timeout: ASK_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (e, stdout, stderr) => {
      if (!e) return resolve(stdout);
      const why = e.killed ? 'did not answer within 60 s' : String(stderr || e.message).trim();
      const text = call('redact', { text: `\`${program} ${args[0]}\` could not ${what}: ${why}` }).text;
      reject(hostError(e.code === 'ENOENT' ? 'USAGE' : 'INTERNAL', text));
    });
  });
}

/**
 * The text of the open pull requests: `source` is a file, `-` (stdin, read by `readStdin`), or undefined
 * (ask `gh pr list`; USAGE saying what to pass when that fails).
 */
async function openPrsText(source, readStdin, cwd = process.cwd()) {
  if (source === '-') return readStdin();
  if (source !== undefined) {
    try {
      return fs.readFileSync(source, 'utf8');
    } catch (e) {
      throw hostError('USAGE', `cannot read the open pull requests from ${source}: ${e.message}`);
    }
  }
  try {
    return await ask('gh', ['pr', 'list', '--state', 'open', '--json', 'number', '--limit', '1000'], 'list the open pull requests', cwd);
  } catch (e) {
    throw hostError('USAGE', `${e.message} Pass --open-prs FILE (a JSON list of numbers), or \`--open-prs -\` with them on stdin.`);
  }
}

/** What `git ls-remote --heads <remote>` prints in `cwd`. */
function lsRemote(remote, cwd = process.cwd()) {
  return ask('git', ['ls-remote', '--heads', remote], "list the remote's branches", cwd);
}

/** The core's plan (`gc-plan`) for the listed `scopes`. */
function gcPlan(scopes, openPrs, lsRemoteText, defaultBranch) {
  const listed = scopes.map(({ scope, text }) => ({ scope, text: text ?? null }));
  return call('gc-plan', { scopes: listed, openPrs, lsRemote: lsRemoteText, defaultBranch: defaultBranch ?? null });
}

/**
 * Sorts destroy results `{scope, error?}` as the core does (`gc-outcome`): `destroyed`, `skipped` (the lease
 * is live: LOCK_HELD), `failed`, and `error` (`{code, message}`) when one failed.
 */
function sortOut(results) {
  return call('gc-outcome', { results: results.map(({ scope, error }) => (error ? { scope, error } : { scope })) });
}

/**
 * The abandoned scopes of `options.env` in `store`, and with `options.destroy` their destroy runs.
 * `openPrs`: the open pull request numbers (an array, or the JSON text `gh pr list --state open --json
 * number` prints); without it `gh` is asked. Branches come from `git ls-remote --heads <remote>` (default
 * `origin`, in `cwd`), or `lsRemote` (that command's output). `destroy(resources, lease)` is the deletion
 * of one scope (as for `destroy()`); each abandoned scope is destroyed under its own lease without
 * waiting (a live lease is skipped), with the other options (`approvedBy`, `ttlMs`, ...) as destroy's.
 * Resolves `{abandoned, kept, openPrs, dryRun, destroyed?, skipped?, failed?}`; never rejects for one
 * scope's failure (see `failed`).
 * @param {object} store
 * @param {{env: string, openPrs?: number[] | string, remote?: string, lsRemote?: string, cwd?: string,
 *   defaultBranch?: string, destroy?: Function, [option: string]: unknown}} options
 */
async function gc(store, options) {
  if (options === null || typeof options !== 'object' || typeof options.env !== 'string') {
    throw hostError('USAGE', 'gc needs the environment: gc(store, {env: "preview", openPrs: [12, 15]})');
  }
  const { env, openPrs, remote = 'origin', lsRemote: listed, cwd, defaultBranch, destroy: deletion, ...rest } = options;
  if (deletion !== undefined && typeof deletion !== 'function') throw hostError('USAGE', 'gc: `destroy` must be a function');
  const prsText = Array.isArray(openPrs) ? JSON.stringify(openPrs) : await openPrsText(openPrs, () => fs.readFileSync(0, 'utf8'), cwd);
  const branches = typeof listed === 'string' ? listed : await lsRemote(remote, cwd);
  const plan = gcPlan(await store.list(env), prsText, branches, defaultBranch);
  const answer = { abandoned: plan.abandoned, kept: plan.kept, openPrs: plan.openPrs, dryRun: deletion === undefined };
  if (deletion === undefined) return answer;
  const results = [];
  for (const { scope } of plan.abandoned) {
    try {
      await destroy(store, { ...rest, wait: false, context: { env, scope } }, deletion);
      results.push({ scope });
    } catch (e) {
      results.push({ scope, error: errorObject(asBatonError(e, `the destroy of ${scope} failed`)) });
    }
  }
  const { destroyed, skipped, failed } = sortOut(results);
  return { ...answer, destroyed, skipped, failed };
}

module.exports = { gc, gcPlan, openPrsText, lsRemote, sortOut };
