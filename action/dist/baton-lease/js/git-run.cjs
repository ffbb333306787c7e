'use strict';
/**
 * Running `git` for the git store: asynchronously (spawn), never through a shell, never prompting, with
 * baton's committer identity and no signing, and without the caller's repository variables (a script run
 * from a git hook has GIT_DIR set). A failed command resolves with its exit code and stderr; only a git that
 * cannot be started rejects. Every git runs in its own process group and, given `timeoutMs`, is killed
 * with the whole group (its `git-remote-*` helper, ssh) when that runs out: it resolves with `timedOut`.
 */
const { spawn } = require('node:child_process');
const { call } = require('./core.cjs');

/** The `-c` options of every git invocation. */
const CONFIG = ['-c', 'user.name=baton', '-c', 'user.email=baton@localhost', '-c', 'commit.gpgsign=false'];

/**
 * The environment of every git invocation: the process's, minus the variables of the caller's repository
 * and plus the settings (no prompt, LC_ALL=C: the core classifies git's words) the core's `git-env` names.
 */
let scrubbed = null;
function gitEnv(extra = {}) {
  scrubbed ??= call('git-env', {});
  const { remove, set } = scrubbed;
  const env = { ...process.env };
  for (const name of remove) delete env[name];
  return { ...env, ...set, ...extra };
}

/** How long to wait for git's pipes after its process group was killed (a helper may have left it). */
const PIPE_GRACE_MS = 200;

/**
 * Runs `git <CONFIG> <args>` in `cwd`. Resolves `{code, stdout (Buffer), stderr (string), timedOut}` whatever
 * the exit code; rejects only when git cannot be run at all (not installed: an error with `code` ENOENT).
 * With `timeoutMs`, git and its process group are killed (SIGKILL) when it runs out (at once when it is not
 * positive: nothing is started), and the result has `timedOut: true` and code -1.
 * @param {string} cwd
 * @param {string[]} args
 * @param {{input?: string | Buffer, env?: Record<string, string>, timeoutMs?: number}} [opts]
 * @returns {Promise<{code: number, stdout: Buffer, stderr: string, timedOut: boolean}>}
 */
function git(cwd, args, { input, env, timeoutMs } = {}) {
  if (timeoutMs !== undefined && !(timeoutMs > 0)) {
    return Promise.resolve({ code: -1, stdout: Buffer.alloc(0), stderr: 'the deadline had passed', timedOut: true });
  }
  return new Promise((resolve, reject) => {
    let child;
    try {
      // detached: a process group of its own (setsid), so that a kill reaches git's helpers too.
      child = spawn('git', [...CONFIG, ...args], { cwd, env: gitEnv(env), detached: true, windowsHide: true });
    } catch (e) {
      reject(Object.assign(new Error(`git could not be run (${e.code}): is git installed and on PATH?`), { code: e.code }));
      return;
    }
    const out = [];
    const err = [];
    let timedOut = false;
    let settled = false;
    let exitCode = null;
    let timer = null;
    let grace = null;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      const stdout = Buffer.concat(out);
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({ code: timedOut ? -1 : (exitCode ?? -1), stdout, stderr, timedOut });
    };
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (e.code === 'ENOENT' || e.code === 'EACCES') {
        reject(Object.assign(new Error(`git could not be run (${e.code}): is git installed and on PATH?`), { code: e.code }));
      } else {
        resolve({ code: -1, stdout: Buffer.concat(out), stderr: `${Buffer.concat(err).toString('utf8')}\n${e.code ?? e.message}`, timedOut });
      }
    });
    child.on('exit', (code) => {
      exitCode = code;
      // After a kill, a helper that left the group may hold the pipes: do not wait for them long.
      if (timedOut) grace = setTimeout(finish, PIPE_GRACE_MS);
    });
    child.on('close', finish);
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
        grace = setTimeout(finish, PIPE_GRACE_MS * 5);
      }, timeoutMs);
    }
    child.stdin.on('error', () => {}); // git may exit before reading all of its input (EPIPE)
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/** The name of a git store's remote in its working clone's config (not `origin`, which a user's global config
 * may already name). */
const REMOTE = 'baton';

module.exports = { git, gitEnv, CONFIG, REMOTE };
