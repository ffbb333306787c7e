'use strict';
/**
 * The cell mutex of the dir store (`lock.mutex`), exactly as docs/dir-store.md specifies, so that the
 * native CLI, this package and the original tool exclude each other on the same files: taken with link(2)
 * of a complete temp file, naming its owner by pid and /proc start time and saying when it was last known
 * held (`at`, refreshed while held: the original breaks a mutex whose `at` is over 10 s old). The core's
 * `mutex-verdict` judges a mutex in the way from the facts gathered here; a stale one is removed only by
 * the one contender that created its break claim exclusively, and only if it still holds the content
 * judged stale, so no number of contenders can drop a fresh owner's mutex. Never broken by age.
 */
const fs = require('node:fs/promises');
const { readFileSync, existsSync, writeFileSync, linkSync, unlinkSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomFillSync } = require('node:crypto');
const { setTimeout: sleep } = require('node:timers/promises');
const { call, hostError } = require('./core.cjs');

const MUTEX_FILE = 'lock.mutex';
/** How long a transaction waits for a live owner before failing with STORE_CONTENDED. */
const DEFAULT_WAIT_MS = 30_000;
/** How deep a breaker follows break claims left by breakers that died while breaking. */
const MAX_CLAIM_DEPTH = 8;
const HAS_PROC = existsSync('/proc/self/stat');

/** The text of /proc/<pid>/stat, or null. */
function readStat(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
}

let ownStatText;
/**
 * The text of our own /proc/<pid>/stat (or null), read once: the core takes only the start time from it
 * (field 22), which does not change while this process runs, and /proc is slow to read.
 */
function ownStat() {
  if (ownStatText === undefined) ownStatText = readStat(process.pid);
  return ownStatText;
}

/** Random bytes for tokens, drawn from the system's CSPRNG 4 KiB at a time; each byte is used once. */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** `bytes` fresh random bytes as hex (a mutex token, a temp file's name). */
function randomHex(bytes) {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += bytes;
  return pool.toString('hex', poolAt - bytes, poolAt);
}

/**
 * Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or undefined if there is none or the
 * process has exited (state Z or X). For other users of the same liveness rule (temporary clones).
 */
function procStart(pid) {
  const stat = readStat(pid);
  if (stat === null) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/);
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  return fields[22 - 3];
}

/** Whether kill(pid, 0) says the process exists (anything but ESRCH). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code !== 'ESRCH';
  }
}

/** The core's verdict on mutex (or claim) content `text`, from the facts about the pid it names. */
function judge(text) {
  let pid;
  try {
    pid = JSON.parse(text)?.pid;
  } catch {
    pid = undefined;
  }
  const owner = Number.isSafeInteger(pid) && pid > 0 && pid <= 0xffffffff ? { pid, stat: readStat(pid), alive: alive(pid) } : null;
  return call('mutex-verdict', { content: text, host: os.hostname(), proc: HAS_PROC, owner });
}

/**
 * The text of `file`, or null when it does not exist; synchronous, for the transaction's own steps (a local
 * read from the page cache costs less than the thread-pool round trip of fs/promises).
 */
function readOrNullSync(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

/** Removes `file` if it is there (a temp file that may or may not have been renamed or linked away). */
function unlinkQuietly(file) {
  try {
    unlinkSync(file);
  } catch {
    // Already gone, or never made.
  }
}

/** The text of `file`, or null when it does not exist. */
async function readOrNull(file) {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * Removes `target` only if it still holds `judged` (judged stale in `verdict`), and only as the one
 * breaker that created the claim the verdict names (linked from our complete temp file `tmp`); a claim
 * left by a breaker that died is broken the same way. A live breaker's claim: someone else is at it.
 */
async function breakStale(target, judged, verdict, tmp, depth = 0) {
  if (typeof verdict.claim !== 'string' || verdict.claim.includes('/')) throw new Error(`mutex-verdict answered ${JSON.stringify(verdict)}`);
  const claim = path.join(path.dirname(target), verdict.claim);
  try {
    await fs.link(tmp, claim);
  } catch (e) {
    if (e.code !== 'EEXIST') throw e;
    const other = await readOrNull(claim);
    if (other === null) return;
    const theirs = judge(other);
    if (theirs.verdict !== 'live' && depth < MAX_CLAIM_DEPTH) await breakStale(claim, other, theirs, tmp, depth + 1);
    return;
  }
  if ((await readOrNull(target)) === judged) await fs.unlink(target).catch(() => {});
  const mine = await readOrNull(tmp);
  if (mine !== null && (await readOrNull(claim)) === mine) await fs.unlink(claim).catch(() => {});
}

/** Rewrites `at` of a held mutex if the file still holds our content (never overlapping itself). */
async function refresh(handle) {
  if ((await readOrNull(handle.path)) !== handle.content) return;
  const v = JSON.parse(handle.content);
  v.at = Date.now();
  const fresh = `${JSON.stringify(v)}\n`;
  const tmp = `${handle.path}.${process.pid}.${handle.token}.at.tmp`;
  await fs.unlink(tmp).catch(() => {});
  try {
    await fs.writeFile(tmp, fresh, { flag: 'wx', mode: 0o600 });
    await fs.rename(tmp, handle.path);
    handle.content = fresh;
  } catch {
    await fs.unlink(tmp).catch(() => {});
  }
}

/**
 * Takes the mutex of the cell directory `cellDir` (which must exist), waiting at most `waitMs` for a live
 * owner. Returns the handle to pass to `releaseMutex`; until then `at` is refreshed every `refreshMs`.
 * Throws BatonError STORE_CONTENDED on timeout.
 * @param {string} cellDir
 * @param {{env: string, scope: string, waitMs?: number}} cell
 */
async function takeMutex(cellDir, { env, scope, waitMs = DEFAULT_WAIT_MS }) {
  const mutexPath = path.join(cellDir, MUTEX_FILE);
  const token = randomHex(8);
  const own = call('mutex-content', { pid: process.pid, stat: ownStat(), host: os.hostname(), token, nowMs: Date.now() });
  const tmp = path.join(cellDir, `${MUTEX_FILE}.${process.pid}.${token}.tmp`);
  // The mutex's own steps are synchronous (link(2), unlink(2), small files: see `readOrNullSync`); only the
  // wait for a live owner yields.
  writeFileSync(tmp, own.content, { flag: 'wx', mode: 0o600 });
  try {
    const deadline = performance.now() + waitMs;
    for (let spins = 0; ; ) {
      try {
        linkSync(tmp, mutexPath);
        const handle = { path: mutexPath, content: own.content, token, refreshing: Promise.resolve() };
        handle.timer = setInterval(() => {
          handle.refreshing = handle.refreshing.then(() => refresh(handle)).catch(() => {});
        }, own.refreshMs);
        handle.timer.unref();
        return handle;
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
      }
      const seen = await readOrNull(mutexPath);
      if (seen === null) continue; // released in between: retry at once
      const verdict = judge(seen);
      if (verdict.verdict !== 'live') {
        await breakStale(mutexPath, seen, verdict, tmp);
        continue;
      }
      if (performance.now() >= deadline) {
        throw hostError(
          'STORE_CONTENDED',
          `Timed out after ${waitMs / 1000} s waiting for the mutex of ${env}/${scope} (${mutexPath}), held by pid ${verdict.pid ?? '?'}.`,
          { environment: env, scope, path: mutexPath, holderPid: verdict.pid },
        );
      }
      await sleep(Math.min(2 + spins, 25) * (0.5 + Math.random()));
      spins += 1;
    }
  } finally {
    unlinkQuietly(tmp);
  }
}

/** Releases a mutex taken by `takeMutex`: stops the refresh, unlinks `lock.mutex` only if it is still ours. */
async function releaseMutex(handle) {
  clearInterval(handle.timer);
  await handle.refreshing;
  if (readOrNullSync(handle.path) === handle.content) unlinkSync(handle.path);
}

module.exports = { takeMutex, releaseMutex, procStart, unlinkQuietly, randomHex, DEFAULT_WAIT_MS, MUTEX_FILE };
