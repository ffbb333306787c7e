'use strict';
/**
 * The cell mutex of the dir store (`lock.mutex`), exactly as docs/dir-store.md specifies, so that the
 * native CLI and this package exclude each other on the same files: taken with link(2) of a complete temp
 * file, naming its owner by pid and /proc start time, broken only when that owner no longer exists (never
 * by age), broken through a tomb so a new owner's mutex is never lost, waited for with jittered backoff.
 */
const fs = require('node:fs/promises');
const { readFileSync, existsSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { setTimeout: sleep } = require('node:timers/promises');
const { hostError } = require('./core.cjs');

const MUTEX_FILE = 'lock.mutex';
/** How long a transaction waits for a live owner before failing with STORE_CONTENDED. */
const DEFAULT_WAIT_MS = 30_000;
const HAS_PROC = existsSync('/proc/self/stat');

/**
 * Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or undefined if there is none or the
 * process has exited: a zombie (state Z or X) stays listed until its parent reaps it, and forever where PID 1
 * does not reap orphans (many containers), but holds nothing any more.
 */
function procStart(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields 3.. follow the last ')' (the command name may contain spaces and parentheses); field 3 is the state.
  const fields = stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/);
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  return fields[22 - 3];
}

let ownStart;
/** This process's `start`: its /proc start time, or null where /proc does not exist. */
function selfStart() {
  if (ownStart === undefined) ownStart = HAS_PROC ? (procStart(process.pid) ?? null) : null;
  return ownStart;
}

/**
 * Whether the process named by a mutex is gone: with a `start`, no /proc entry or another start time (the
 * pid was reused); without one (written where /proc does not exist), kill(pid, 0) fails with ESRCH.
 */
function ownerGone(pid, start) {
  if (typeof start === 'string' && HAS_PROC) return procStart(pid) !== start;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return e.code === 'ESRCH';
  }
}

/**
 * What to do about the mutex content `buf` that is in our way: `{stale: true}` to break it, or
 * `{stale: false, pid}` to wait for its owner.
 */
function judge(buf) {
  let owner;
  try {
    owner = JSON.parse(buf.toString('utf8'));
  } catch {
    return { stale: true };
  }
  const pid = owner && typeof owner === 'object' ? owner.pid : undefined;
  if (!Number.isSafeInteger(pid) || pid <= 0) return { stale: true };
  if (typeof owner.host === 'string' && owner.host !== os.hostname()) return { stale: false, pid };
  return ownerGone(pid, owner.start) ? { stale: true } : { stale: false, pid };
}

/** The bytes of `file`, or null when it does not exist. */
async function readOrNull(file) {
  try {
    return await fs.readFile(file);
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * Breaks the stale mutex whose content was `stale`: moves it to a tomb, and unlinks the tomb only if it
 * holds that content; a new owner's mutex moved by mistake is linked back.
 */
async function breakMutex(mutexPath, stale, token) {
  const tomb = `${mutexPath}.${token}.tomb`;
  try {
    await fs.rename(mutexPath, tomb);
  } catch (e) {
    if (e.code === 'ENOENT') return;
    throw e;
  }
  const moved = await readOrNull(tomb);
  if (moved !== null && !moved.equals(stale)) {
    try {
      await fs.link(tomb, mutexPath);
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
  }
  await fs.unlink(tomb).catch(() => {});
}

/**
 * Takes the mutex of the cell directory `cellDir` (which must exist), waiting at most `waitMs` for a live
 * owner. Returns the handle to pass to `releaseMutex`. Throws BatonError STORE_CONTENDED on timeout.
 * @param {string} cellDir
 * @param {{env: string, scope: string, waitMs?: number}} cell
 */
async function takeMutex(cellDir, { env, scope, waitMs = DEFAULT_WAIT_MS }) {
  const mutexPath = path.join(cellDir, MUTEX_FILE);
  const token = randomBytes(8).toString('hex');
  const content = Buffer.from(
    `${JSON.stringify({ pid: process.pid, start: selfStart(), host: os.hostname(), token })}\n`,
  );
  const tmp = path.join(cellDir, `${MUTEX_FILE}.${process.pid}.${token}.tmp`);
  await fs.writeFile(tmp, content, { flag: 'wx', mode: 0o600 });
  try {
    const deadline = performance.now() + waitMs;
    for (let spins = 0; ; ) {
      try {
        await fs.link(tmp, mutexPath);
        return { path: mutexPath, content };
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
      }
      const seen = await readOrNull(mutexPath);
      if (seen === null) continue; // released in between: retry at once
      const verdict = judge(seen);
      if (verdict.stale) {
        await breakMutex(mutexPath, seen, token);
        continue;
      }
      if (performance.now() >= deadline) {
        throw hostError(
          'STORE_CONTENDED',
          `Timed out after ${waitMs / 1000} s waiting for the mutex of ${env}/${scope} (${mutexPath}), held by pid ${verdict.pid}.`,
          { environment: env, scope, path: mutexPath, holderPid: verdict.pid },
        );
      }
      await sleep(Math.min(2 + spins, 25) * (0.5 + Math.random()));
      spins += 1;
    }
  } finally {
    await fs.unlink(tmp).catch(() => {});
  }
}

/** Releases a mutex taken by `takeMutex`: unlinks `lock.mutex` only if its content is still ours. */
async function releaseMutex(handle) {
  const seen = await readOrNull(handle.path);
  if (seen !== null && seen.equals(handle.content)) await fs.unlink(handle.path);
}

module.exports = { takeMutex, releaseMutex, procStart, DEFAULT_WAIT_MS, MUTEX_FILE };
