'use strict';
/**
 * Facts from local git and the `gh` CLI, gathered only when the core asks for them. These functions run
 * commands and report what they said; they decide nothing.
 */
const { execFileSync } = require('node:child_process');

/** Runs a command in `cwd` and returns its trimmed stdout; throws with the command's stderr as message. */
function run(cmd, args, cwd, timeout) {
  try {
    return execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', timeout }).trim();
  } catch (e) {
    const stderr = typeof e.stderr === 'string' ? e.stderr.trim() : '';
    throw new Error(stderr || e.message);
  }
}

/**
 * The `git` facts of `detect-context`: `{branch, sha}` from `git rev-parse`, `pr` from `gh pr view` when
 * `askPr` (5 s timeout; any failure or non-positive answer leaves it out), `error` when git failed.
 * @param {string} cwd
 * @param {boolean} askPr
 */
function gitFacts(cwd, askPr) {
  const facts = {};
  try {
    facts.branch = run('git', ['rev-parse', '--abbrev-ref', 'HEAD'], cwd);
    facts.sha = run('git', ['rev-parse', 'HEAD'], cwd);
  } catch (e) {
    facts.error = e.message;
  }
  if (askPr && facts.branch !== undefined) {
    try {
      const pr = Number(run('gh', ['pr', 'view', '--json', 'number', '-q', '.number'], cwd, 5000));
      if (Number.isSafeInteger(pr) && pr > 0) facts.pr = pr;
    } catch {
      // no gh, no PR for this branch, no network: the pull request stays unknown
    }
  }
  return facts;
}

/** `git rev-parse --show-toplevel` in `cwd`, or null outside a repository (or without git). */
function repoRoot(cwd) {
  try {
    return run('git', ['rev-parse', '--show-toplevel'], cwd) || null;
  } catch {
    return null;
  }
}

/** `git remote get-url origin` in `cwd`, or null without one. */
function originUrl(cwd) {
  try {
    return run('git', ['remote', 'get-url', 'origin'], cwd, 5000) || null;
  } catch {
    return null;
  }
}

module.exports = { gitFacts, repoRoot, originUrl };
