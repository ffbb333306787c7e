'use strict';
/**
 * Running `git` for the git store: asynchronously (execFile), never through a shell, never prompting, with
 * baton's committer identity and no signing, and without the caller's repository variables (a script run
 * from a git hook has GIT_DIR set). A failed command resolves with its exit code and stderr; only a git that
 * cannot be started rejects.
 */
const { execFile } = require('node:child_process');
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

/**
 * Runs `git <CONFIG> <args>` in `cwd`. Resolves `{code, stdout (Buffer), stderr (string)}` whatever the
 * exit code; rejects only when git cannot be run at all (not installed: an error with `code` ENOENT).
 * @param {string} cwd
 * @param {string[]} args
 * @param {{input?: string | Buffer, env?: Record<string, string>}} [opts]
 * @returns {Promise<{code: number, stdout: Buffer, stderr: string}>}
 */
function git(cwd, args, { input, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...CONFIG, ...args],
      { cwd, env: gitEnv(env), encoding: 'buffer', maxBuffer: 256 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          // Not an exit status: git could not be started (ENOENT), or maxBuffer was exceeded.
          if (error.code === 'ENOENT' || error.code === 'EACCES') {
            reject(Object.assign(new Error(`git could not be run (${error.code}): is git installed and on PATH?`), { code: error.code }));
            return;
          }
          resolve({ code: -1, stdout, stderr: `${stderr.toString('utf8')}\n${error.code ?? error.message}` });
          return;
        }
        resolve({ code: error ? error.code : 0, stdout, stderr: stderr.toString('utf8') });
      },
    );
    child.stdin.on('error', () => {}); // git may exit before reading all of its input (EPIPE)
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/**
 * Parses the output of `git cat-file --batch`: one entry per request line, `null` for a missing object,
 * else `{oid, type, content (Buffer)}`.
 * @param {Buffer} out
 * @param {number} count
 */
function parseBatch(out, count) {
  const entries = [];
  let at = 0;
  for (let i = 0; i < count; i += 1) {
    const nl = out.indexOf(0x0a, at);
    if (nl < 0) throw new Error('git cat-file --batch ended early');
    const header = out.subarray(at, nl).toString('utf8');
    at = nl + 1;
    const m = /^([0-9a-f]{40,64}) (\S+) (\d+)$/.exec(header);
    if (!m) {
      entries.push(null); // `<name> missing` or `<name> ambiguous`
      continue;
    }
    const size = Number(m[3]);
    entries.push({ oid: m[1], type: m[2], content: out.subarray(at, at + size) });
    at += size + 1;
  }
  return entries;
}

module.exports = { git, gitEnv, parseBatch, CONFIG };
